//! What a [`GrpcRetryLayer`](super::GrpcRetryLayer) does for each method: the table a service
//! config compiles to (or the one rule of [`GrpcRetryLayer::new`](super::GrpcRetryLayer::new)),
//! looked up by the request's path with gRPC's precedence: the method's own entry, then its
//! service's, then the default.

use crate::policy::RetryPolicy;
use crate::policy_cell::PolicySource;
use ::tonic::Code;
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::time::Duration;

/// A set of gRPC status codes, one bit per code (there are 17).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Codes(u32);

impl Codes {
    pub(crate) fn insert(&mut self, code: Code) {
        self.0 |= Self::bit(code);
    }

    pub(crate) fn contains(self, code: Code) -> bool {
        self.0 & Self::bit(code) != 0
    }

    fn bit(code: Code) -> u32 {
        // `Code` is 0..=16; anything else (there is nothing else) maps to no bit.
        1u32.checked_shl(i32::from(code) as u32).unwrap_or(0)
    }
}

/// Which failed answers may be tried again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rule {
    /// The crate's table ([`Classify for Status`](crate::Classify), pushback included):
    /// [`GrpcRetryLayer::new`](super::GrpcRetryLayer::new).
    Table,
    /// A service config's `retryableStatusCodes` or `nonFatalStatusCodes`: these codes may be
    /// tried again, every other code ends the call.
    Listed(Codes),
}

/// How the calls of one method are made.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Plan {
    /// One attempt: neither `retryPolicy` nor `hedgingPolicy` (the `timeout` still applies).
    Once,
    /// One attempt after another, by `policy` (the layer's own, or what a cell holds when the
    /// call starts); `recv_timeout` is the `retryPolicy`'s `perAttemptRecvTimeout`.
    Retry {
        policy: PolicySource,
        rule: Rule,
        recv_timeout: Option<Duration>,
    },
    /// A new attempt beside the running ones every `delay`, up to the policy's attempts.
    Hedge {
        policy: RetryPolicy,
        delay: Duration,
        rule: Rule,
    },
}

/// One `methodConfig` entry, compiled.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Method {
    pub(crate) plan: Plan,
    /// The config's `timeout`: the call's deadline unless the caller's is sooner.
    pub(crate) timeout: Option<Duration>,
}

/// What a method without an entry gets: one attempt, no timeout.
const UNLISTED: Method = Method {
    plan: Plan::Once,
    timeout: None,
};

/// The methods of a layer, and its `retryThrottling`.
#[derive(Debug, Default)]
pub(crate) struct Rules {
    /// By service name: the service's own entry and its methods' entries.
    services: HashMap<Box<str>, Service>,
    /// The entry with the empty name.
    default: Option<usize>,
    entries: Vec<Method>,
    /// `retryThrottling`: `(maxTokens, tokenRatio)`.
    pub(crate) throttling: Option<(u32, f64)>,
}

/// The entries naming one service.
#[derive(Debug, Default)]
struct Service {
    whole: Option<usize>,
    methods: HashMap<Box<str>, usize>,
}

impl Rules {
    /// Every method by one entry (what [`GrpcRetryLayer::new`](super::GrpcRetryLayer::new)
    /// builds).
    pub(crate) fn every_method(method: Method) -> Self {
        Rules {
            default: Some(0),
            entries: vec![method],
            ..Rules::default()
        }
    }

    /// Add an entry; the names are added with [`name`](Self::name).
    pub(crate) fn push(&mut self, method: Method) -> usize {
        self.entries.push(method);
        self.entries.len() - 1
    }

    /// Give entry `index` the name `service`/`method` (`None` for a whole service, an empty
    /// service for the default). False if another entry has the name already.
    pub(crate) fn name(&mut self, service: &str, method: Option<&str>, index: usize) -> bool {
        if service.is_empty() {
            return self.default.replace(index).is_none();
        }
        let entry = self.services.entry(service.into()).or_default();
        match method {
            None => entry.whole.replace(index).is_none(),
            Some(method) => match entry.methods.entry(method.into()) {
                Entry::Occupied(_) => false,
                Entry::Vacant(slot) => {
                    slot.insert(index);
                    true
                }
            },
        }
    }

    /// The entry for a request to `path` (`/package.Service/Method`, after the origin's own
    /// path if the client has one): the method's, else its service's, else the default, else
    /// one attempt. Looked up by the last two segments, without allocating.
    pub(crate) fn for_path(&self, path: &str) -> &Method {
        let named = path.rsplit_once('/').and_then(|(rest, method)| {
            let service = rest.rsplit('/').next().unwrap_or(rest);
            let entry = self.services.get(service)?;
            entry.methods.get(method).copied().or(entry.whole)
        });
        named
            .or(self.default)
            .and_then(|i| self.entries.get(i))
            .unwrap_or(&UNLISTED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn retry(attempts: u32) -> Method {
        Method {
            plan: Plan::Retry {
                policy: PolicySource::Own(RetryPolicy::new().attempts(attempts)),
                rule: Rule::Table,
                recv_timeout: None,
            },
            timeout: None,
        }
    }

    #[test]
    fn a_method_entry_wins_over_its_service_and_the_default() {
        let mut rules = Rules::default();
        let method = rules.push(retry(2));
        let service = rules.push(retry(3));
        let default = rules.push(retry(4));
        assert!(rules.name("pkg.Svc", Some("Get"), method));
        assert!(rules.name("pkg.Svc", None, service));
        assert!(rules.name("", None, default));
        assert_eq!(rules.for_path("/pkg.Svc/Get"), &retry(2));
        assert_eq!(rules.for_path("/pkg.Svc/Put"), &retry(3));
        assert_eq!(rules.for_path("/other.Svc/Get"), &retry(4));
    }

    #[test]
    fn without_a_default_an_unlisted_method_is_called_once() {
        let mut rules = Rules::default();
        let index = rules.push(retry(2));
        assert!(rules.name("pkg.Svc", None, index));
        assert_eq!(rules.for_path("/pkg.Other/Get"), &UNLISTED);
        assert_eq!(rules.for_path("not a path"), &UNLISTED);
        assert_eq!(rules.for_path("/prefix/pkg.Svc/Get"), &retry(2));
    }

    #[test]
    fn a_name_given_twice_is_refused() {
        let mut rules = Rules::default();
        let index = rules.push(retry(2));
        assert!(rules.name("pkg.Svc", Some("Get"), index));
        assert!(!rules.name("pkg.Svc", Some("Get"), index));
        assert!(rules.name("pkg.Svc", None, index));
        assert!(!rules.name("pkg.Svc", None, index));
        assert!(rules.name("", None, index));
        assert!(!rules.name("", None, index));
    }

    #[test]
    fn codes_are_a_set() {
        let mut codes = Codes::default();
        codes.insert(Code::Unavailable);
        codes.insert(Code::Ok);
        codes.insert(Code::Unauthenticated);
        assert!(codes.contains(Code::Unavailable));
        assert!(codes.contains(Code::Ok));
        assert!(codes.contains(Code::Unauthenticated));
        assert!(!codes.contains(Code::Internal));
    }
}
