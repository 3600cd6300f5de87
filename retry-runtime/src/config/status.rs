//! `Serialize` for what [`registry::snapshot`](crate::registry::snapshot) returns: the JSON of
//! a health or admin endpoint.
//!
//! ```json
//! {"breakers": [{"name": "payments", "state": "open", "retry_after": "29874ms",
//!   "settings": {"failure_threshold": 5, "open_for": "30s", "success_threshold": 1, "half_open_max": 1}}],
//!  "budgets": [{"name": "search", "tokens": 93.5, "allows_retry": true,
//!   "settings": {"max_tokens": 100, "token_ratio": 0.1}}]}
//! ```
//!
//! Names and keys are left out where there are none; `retry_after` (while open) is rounded up
//! to the millisecond.

use super::value::duration_text_ms;
use crate::CircuitState;
use crate::registry::{BreakerStatus, BudgetStatus, Snapshot};
use serde::ser::{Serialize, SerializeMap, Serializer};

/// `"closed"`, `"open"` or `"half_open"`, as [`CircuitState::as_str`] writes it.
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl Serialize for CircuitState {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl Serialize for Snapshot {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("breakers", &self.breakers)?;
        map.serialize_entry("budgets", &self.budgets)?;
        map.end()
    }
}

#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl Serialize for BreakerStatus {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        identity(&mut map, self.name, self.key.as_deref())?;
        map.serialize_entry("state", &self.state)?;
        if let Some(left) = self.retry_after {
            map.serialize_entry("retry_after", &duration_text_ms(left))?;
        }
        map.serialize_entry("settings", &self.settings)?;
        map.end()
    }
}

#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl Serialize for BudgetStatus {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        identity(&mut map, self.name, self.key.as_deref())?;
        map.serialize_entry("tokens", &self.tokens)?;
        map.serialize_entry("allows_retry", &self.allows_retry)?;
        map.serialize_entry("settings", &self.settings)?;
        map.end()
    }
}

/// The name and the key, where there are any.
fn identity<M: SerializeMap>(
    map: &mut M,
    name: Option<&str>,
    key: Option<&str>,
) -> Result<(), M::Error> {
    if let Some(name) = name {
        map.serialize_entry("name", name)?;
    }
    if let Some(key) = key {
        map.serialize_entry("key", key)?;
    }
    Ok(())
}
