//! The task's [`RetryState`] in its apalis metadata, under [`STATE_KEY`], as the JSON of the
//! `serde` feature (stable field names, RFC 3339 times).

use crate::durable::RetryState;
use apalis_core::task::metadata::{Metadata, MetadataStore};

/// The metadata key under which a task carries its [`RetryState`] from run to run (SQLite keeps
/// it in the `metadata` JSON column, PostgreSQL in the `metadata` hstore).
pub const STATE_KEY: &str = "retry_kit.state";

/// A handler can take the state as an argument, `Meta<RetryState>` (the state before this run:
/// the attempts of earlier runs and their run log):
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use apalis_core::task::metadata::Meta;
/// use retry_kit::durable::RetryState;
///
/// async fn export(date: String, Meta(state): Meta<RetryState>) -> Result<(), std::io::Error> {
///     println!("{date}: {} attempts before this run", state.attempts());
///     Ok(())
/// }
/// # let _ = export;
/// ```
///
/// A task without the key (never run through the layer) has the state of a task not yet
/// started, `RetryState::default()`.
#[cfg_attr(docsrs, doc(cfg(feature = "apalis")))]
impl Metadata for RetryState {
    type Error = serde_json::Error;

    fn extract(store: &MetadataStore) -> Result<Self, Self::Error> {
        match store.get(STATE_KEY) {
            Some(json) => serde_json::from_str(json),
            None => Ok(RetryState::default()),
        }
    }

    fn inject(&self, store: &mut MetadataStore) -> Result<(), Self::Error> {
        store.replace(STATE_KEY, serde_json::to_string(self)?);
        Ok(())
    }
}

/// `store` with the state written in, every other entry kept (a producer's own metadata, a
/// trace context, travels with the task too).
pub(crate) fn with_state(
    store: &MetadataStore,
    state: &RetryState,
) -> Result<MetadataStore, serde_json::Error> {
    let mut next = store.clone();
    state.inject(&mut next)?;
    Ok(next)
}
