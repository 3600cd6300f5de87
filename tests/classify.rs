//! `#[derive(Classify)]` and the runtime's own `Classify` impls: every tag on every variant
//! shape, the enum default, `retry_after` fields, `delegate`, `with`, structs, the `crate`
//! override, generics and lifetimes, beside thiserror and serde, and the derived impls driving
//! `#[retryable]`.
#![deny(warnings, unused_qualifications)]

use retry_kit::{CircuitOpen, Classify, ErrorClass, TimedOut, retryable, testing};
use std::io;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

const SECOND: Duration = Duration::from_secs(1);

// ---------------------------------------------------------------------------------------------
// Class tags on each variant shape.

#[derive(Debug, Classify)]
enum Tagged {
    #[classify(transient)]
    Reset,
    #[classify(permanent)]
    BadInput(#[allow(dead_code)] String),
    #[classify(idempotent_only)]
    WriteTimedOut {
        #[allow(dead_code)]
        after: Duration,
    },
}

#[test]
fn transient_tag_on_a_unit_variant_is_transient() {
    assert_eq!(Tagged::Reset.class(), ErrorClass::Transient);
}

#[test]
fn permanent_tag_on_a_tuple_variant_is_permanent() {
    assert_eq!(Tagged::BadInput("x".into()).class(), ErrorClass::Permanent);
}

#[test]
fn idempotent_only_tag_on_a_named_variant_is_idempotent_only() {
    let error = Tagged::WriteTimedOut { after: SECOND };
    assert_eq!(error.class(), ErrorClass::IdempotentOnly);
}

#[test]
fn a_duration_field_without_retry_after_is_not_a_wait() {
    assert_eq!(Tagged::WriteTimedOut { after: SECOND }.retry_after(), None);
    assert_eq!(Tagged::Reset.retry_after(), None);
}

// ---------------------------------------------------------------------------------------------
// The enum default.

#[derive(Debug, Classify)]
#[classify(default = transient)]
enum DefaultTransient {
    Unit,
    Tuple(#[allow(dead_code)] u8),
    Named {
        #[allow(dead_code)]
        code: u8,
    },
    #[classify(permanent)]
    Tagged,
}

#[test]
fn enum_default_classifies_every_untagged_variant_shape() {
    assert_eq!(DefaultTransient::Unit.class(), ErrorClass::Transient);
    assert_eq!(DefaultTransient::Tuple(1).class(), ErrorClass::Transient);
    assert_eq!(
        DefaultTransient::Named { code: 1 }.class(),
        ErrorClass::Transient
    );
}

#[test]
fn a_variant_tag_overrides_the_enum_default() {
    assert_eq!(DefaultTransient::Tagged.class(), ErrorClass::Permanent);
}

#[derive(Debug, Classify)]
#[classify(default = idempotent_only)]
enum DefaultIdempotentOnly {
    Untagged,
    #[classify(transient)]
    Tagged,
}

#[derive(Debug, Classify)]
#[classify(default = permanent)]
enum DefaultPermanent {
    Untagged,
    #[classify(idempotent_only)]
    Tagged,
}

#[test]
fn enum_default_can_be_each_class() {
    assert_eq!(
        DefaultIdempotentOnly::Untagged.class(),
        ErrorClass::IdempotentOnly
    );
    assert_eq!(DefaultIdempotentOnly::Tagged.class(), ErrorClass::Transient);
    assert_eq!(DefaultPermanent::Untagged.class(), ErrorClass::Permanent);
    assert_eq!(DefaultPermanent::Tagged.class(), ErrorClass::IdempotentOnly);
}

// ---------------------------------------------------------------------------------------------
// `retry_after` fields.

#[derive(Debug, Classify)]
#[classify(default = transient)]
enum Waits {
    #[classify(transient)]
    Throttled {
        #[allow(dead_code)]
        limit: u32,
        #[classify(retry_after)]
        wait: Duration,
    },
    #[classify(transient)]
    Busy(
        #[allow(dead_code)] u32,
        #[classify(retry_after)] Option<Duration>,
    ),
    Untagged(#[classify(retry_after)] Duration),
    #[classify(with = shed_class)]
    Shed {
        #[classify(retry_after)]
        retry_in: Wait,
        hard: bool,
    },
    #[classify(permanent)]
    Gone,
}

/// An alias the derive cannot see through: the `IntoRetryAfter` bound checks it instead.
type Wait = Duration;

fn shed_class(error: &Waits) -> ErrorClass {
    match error {
        Waits::Shed { hard: true, .. } => ErrorClass::Permanent,
        _ => ErrorClass::Transient,
    }
}

#[test]
fn retry_after_on_a_named_duration_field_is_the_wait() {
    let error = Waits::Throttled {
        limit: 10,
        wait: 3 * SECOND,
    };
    assert_eq!(error.retry_after(), Some(3 * SECOND));
    assert_eq!(error.class(), ErrorClass::Transient);
}

#[test]
fn retry_after_on_a_tuple_option_field_is_the_wait_or_none() {
    assert_eq!(Waits::Busy(1, Some(SECOND)).retry_after(), Some(SECOND));
    assert_eq!(Waits::Busy(1, None).retry_after(), None);
}

#[test]
fn retry_after_works_on_a_variant_classified_by_the_default() {
    let error = Waits::Untagged(2 * SECOND);
    assert_eq!(error.class(), ErrorClass::Transient);
    assert_eq!(error.retry_after(), Some(2 * SECOND));
}

#[test]
fn retry_after_works_beside_with_and_through_a_type_alias() {
    let soft = Waits::Shed {
        retry_in: 5 * SECOND,
        hard: false,
    };
    let hard = Waits::Shed {
        retry_in: 7 * SECOND,
        hard: true,
    };
    assert_eq!(
        (soft.class(), soft.retry_after()),
        (ErrorClass::Transient, Some(5 * SECOND))
    );
    assert_eq!(
        (hard.class(), hard.retry_after()),
        (ErrorClass::Permanent, Some(7 * SECOND))
    );
}

#[test]
fn variants_without_a_retry_after_field_have_no_wait() {
    assert_eq!(Waits::Gone.retry_after(), None);
}

// ---------------------------------------------------------------------------------------------
// `delegate`.

#[derive(Debug, Classify)]
enum Delegating {
    #[classify(delegate)]
    Io(io::Error),
    #[classify(delegate)]
    Breaker { source: CircuitOpen },
    #[classify(delegate)]
    Boxed(Box<Tagged>),
    #[classify(delegate)]
    Nested(Waits),
}

#[test]
fn delegate_takes_the_class_from_the_single_tuple_field() {
    let reset = Delegating::Io(io::ErrorKind::ConnectionReset.into());
    let missing = Delegating::Io(io::ErrorKind::NotFound.into());
    assert_eq!(reset.class(), ErrorClass::Transient);
    assert_eq!(missing.class(), ErrorClass::Permanent);
}

#[test]
fn delegate_takes_class_and_retry_after_from_a_named_field() {
    let error = Delegating::Breaker {
        source: CircuitOpen::new(4 * SECOND),
    };
    assert_eq!(error.class(), ErrorClass::Transient);
    assert_eq!(error.retry_after(), Some(4 * SECOND));
}

#[test]
fn delegate_through_a_box_forwards_the_inner_class() {
    let error = Delegating::Boxed(Box::new(Tagged::WriteTimedOut { after: SECOND }));
    assert_eq!(error.class(), ErrorClass::IdempotentOnly);
    assert_eq!(error.retry_after(), None);
}

#[test]
fn delegate_to_a_derived_enum_forwards_its_retry_after_field() {
    let error = Delegating::Nested(Waits::Busy(0, Some(9 * SECOND)));
    assert_eq!(error.class(), ErrorClass::Transient);
    assert_eq!(error.retry_after(), Some(9 * SECOND));
}

// ---------------------------------------------------------------------------------------------
// `with = path`: classes that depend on a field's value.

const MEMORY_LIMIT: u32 = 1;
const CONCURRENCY_LIMIT: u32 = 2;

#[derive(Debug, Classify)]
enum Warehouse {
    #[classify(with = resource_class)]
    ResourceExceeded { code: u32 },
    #[classify(with = Self::by_status)]
    Http(u16),
    #[classify(permanent)]
    Syntax,
}

fn resource_class(error: &Warehouse) -> ErrorClass {
    match error {
        Warehouse::ResourceExceeded {
            code: CONCURRENCY_LIMIT,
        } => ErrorClass::Transient,
        _ => ErrorClass::Permanent,
    }
}

impl Warehouse {
    fn by_status(&self) -> ErrorClass {
        match self {
            Warehouse::Http(503) => ErrorClass::Transient,
            _ => ErrorClass::Permanent,
        }
    }
}

#[test]
fn with_function_reads_the_code_to_tell_memory_from_concurrency_limits() {
    let memory = Warehouse::ResourceExceeded { code: MEMORY_LIMIT };
    let concurrency = Warehouse::ResourceExceeded {
        code: CONCURRENCY_LIMIT,
    };
    assert_eq!(memory.class(), ErrorClass::Permanent);
    assert_eq!(concurrency.class(), ErrorClass::Transient);
    assert_eq!(Warehouse::Syntax.class(), ErrorClass::Permanent);
}

#[test]
fn with_accepts_an_associated_function_path() {
    assert_eq!(Warehouse::Http(503).class(), ErrorClass::Transient);
    assert_eq!(Warehouse::Http(400).class(), ErrorClass::Permanent);
}

// ---------------------------------------------------------------------------------------------
// Structs.

#[derive(Debug, Classify)]
#[classify(transient)]
struct UnitReset;

#[derive(Debug, Classify)]
#[classify(delegate)]
struct Wrapped(io::Error);

#[derive(Debug, Classify)]
#[classify(idempotent_only)]
struct CommitUnknown {
    #[classify(retry_after)]
    retry_in: Option<Duration>,
}

#[derive(Debug, Classify)]
#[classify(with = status_class)]
struct Status(u16, #[classify(retry_after)] Duration);

fn status_class(status: &Status) -> ErrorClass {
    if status.0 == 429 {
        ErrorClass::Transient
    } else {
        ErrorClass::Permanent
    }
}

#[derive(Debug, Classify)]
#[classify(delegate)]
struct WrappedBreaker {
    inner: CircuitOpen,
}

#[test]
fn struct_tags_classify_the_struct() {
    assert_eq!(UnitReset.class(), ErrorClass::Transient);
    assert_eq!(UnitReset.retry_after(), None);
    let unknown = CommitUnknown {
        retry_in: Some(SECOND),
    };
    assert_eq!(unknown.class(), ErrorClass::IdempotentOnly);
    assert_eq!(unknown.retry_after(), Some(SECOND));
}

#[test]
fn struct_delegate_forwards_to_its_single_field() {
    let refused = Wrapped(io::ErrorKind::ConnectionRefused.into());
    assert_eq!(refused.class(), ErrorClass::Transient);
    let wrapped = WrappedBreaker {
        inner: CircuitOpen::new(2 * SECOND),
    };
    assert_eq!(wrapped.retry_after(), Some(2 * SECOND));
}

#[test]
fn struct_with_function_and_tuple_retry_after_field() {
    assert_eq!(Status(429, SECOND).class(), ErrorClass::Transient);
    assert_eq!(Status(404, SECOND).class(), ErrorClass::Permanent);
    assert_eq!(Status(429, 3 * SECOND).retry_after(), Some(3 * SECOND));
}

// ---------------------------------------------------------------------------------------------
// Generics, lifetimes and where clauses.

#[derive(Debug, Classify)]
enum Layered<'a, E, W = Duration>
where
    E: std::fmt::Debug,
{
    #[classify(delegate)]
    Inner(E),
    #[classify(permanent)]
    Parse { input: &'a str },
    #[classify(transient)]
    Wait(#[classify(retry_after)] W),
    #[classify(idempotent_only)]
    Marker(PhantomData<fn() -> E>),
}

#[test]
fn generic_delegate_uses_the_type_arguments_classify_impl() {
    let io: Layered<'_, io::Error> = Layered::Inner(io::ErrorKind::BrokenPipe.into());
    assert_eq!(io.class(), ErrorClass::Transient);
    let open: Layered<'_, CircuitOpen> = Layered::Inner(CircuitOpen::new(SECOND));
    assert_eq!(open.retry_after(), Some(SECOND));
}

#[test]
fn generic_enum_with_lifetime_classifies_its_other_variants() {
    let parse: Layered<'_, TimedOut> = Layered::Parse { input: "{" };
    assert_eq!(parse.class(), ErrorClass::Permanent);
    if let Layered::Parse { input } = parse {
        assert_eq!(input, "{");
    }
    let marker: Layered<'_, TimedOut> = Layered::Marker(PhantomData);
    assert_eq!(marker.class(), ErrorClass::IdempotentOnly);
}

#[test]
fn generic_retry_after_field_accepts_duration_and_option() {
    let fixed: Layered<'_, TimedOut> = Layered::Wait(SECOND);
    assert_eq!(fixed.retry_after(), Some(SECOND));
    let maybe: Layered<'_, TimedOut, Option<Duration>> = Layered::Wait(None);
    assert_eq!(maybe.retry_after(), None);
}

#[derive(Debug, Classify)]
#[classify(delegate)]
struct Borrowing<'a, E: Classify + ?Sized>(&'a E);

#[test]
fn struct_delegating_to_a_borrowed_unsized_error() {
    let open = CircuitOpen::new(SECOND);
    let erased: &dyn Classify = &open;
    assert_eq!(Borrowing(erased).class(), ErrorClass::Transient);
    assert_eq!(Borrowing(erased).retry_after(), Some(SECOND));
}

// ---------------------------------------------------------------------------------------------
// Beside thiserror and serde.

#[derive(Debug, thiserror::Error, Classify)]
enum FetchError {
    #[error("I/O failed")]
    #[classify(delegate)]
    Io(#[from] io::Error),
    #[error("rate limited; retry in {wait:?}")]
    #[classify(transient)]
    RateLimited {
        #[classify(retry_after)]
        wait: Duration,
    },
    #[error("upstream refused the call")]
    #[classify(delegate)]
    Upstream {
        #[source]
        source: CircuitOpen,
    },
    #[error("bad request: {0}")]
    #[classify(permanent)]
    BadRequest(String),
}

fn read_config() -> Result<(), FetchError> {
    Err(io::Error::from(io::ErrorKind::ConnectionAborted))?;
    Ok(())
}

#[test]
fn thiserror_from_field_converts_with_question_mark_and_delegates() {
    let error = read_config().unwrap_err();
    assert_eq!(error.class(), ErrorClass::Transient);
    assert_eq!(error.to_string(), "I/O failed");
}

#[test]
fn thiserror_display_and_source_are_unchanged_beside_classify() {
    use std::error::Error as _;
    let upstream = FetchError::Upstream {
        source: CircuitOpen::new(SECOND),
    };
    assert_eq!(upstream.retry_after(), Some(SECOND));
    assert!(upstream.source().is_some());
    let limited = FetchError::RateLimited { wait: SECOND };
    assert_eq!(limited.to_string(), "rate limited; retry in 1s");
    assert_eq!(limited.retry_after(), Some(SECOND));
    assert_eq!(
        FetchError::BadRequest("no".into()).class(),
        ErrorClass::Permanent
    );
}

#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize, Classify)]
#[serde(rename_all = "snake_case")]
#[classify(default = permanent)]
enum RemoteCode {
    #[classify(transient)]
    Unavailable,
    #[serde(alias = "too_many")]
    #[classify(transient)]
    RateLimited,
    Forbidden,
}

#[test]
fn serde_deserialized_variants_keep_their_class() {
    use serde::Deserialize as _;
    use serde::de::IntoDeserializer as _;
    use serde::de::value::Error;
    let decode =
        |text: &str| RemoteCode::deserialize(text.into_deserializer()).map_err(|e: Error| e);
    assert_eq!(
        decode("unavailable").unwrap().class(),
        ErrorClass::Transient
    );
    assert_eq!(decode("too_many").unwrap().class(), ErrorClass::Transient);
    assert_eq!(decode("forbidden").unwrap().class(), ErrorClass::Permanent);
}

// ---------------------------------------------------------------------------------------------
// `crate = path`.

/// A stand-in runtime with its own `Classify` trait: an impl of *this* trait can only come from
/// code that followed the `crate = ...` path.
mod shim {
    pub use retry_kit::ErrorClass;
    pub use retry_kit::class;
    use std::time::Duration;

    pub trait Classify {
        fn class(&self) -> ErrorClass;
        fn retry_after(&self) -> Option<Duration> {
            None
        }
    }
}

#[derive(retry_kit::Classify)]
#[classify(crate = shim, transient)]
struct ViaShim {
    #[classify(retry_after)]
    wait: Duration,
}

#[derive(retry_kit::Classify)]
#[classify(crate = self::shim, default = idempotent_only)]
enum ViaShimEnum {
    Untagged,
}

mod renamed {
    pub use retry_kit as rk;
}

#[derive(Debug, Classify)]
#[classify(crate = renamed::rk)]
enum ViaRename {
    #[classify(transient)]
    Busy,
}

#[test]
fn crate_override_is_the_path_generated_code_uses() {
    let error = ViaShim { wait: SECOND };
    assert_eq!(shim::Classify::class(&error), ErrorClass::Transient);
    assert_eq!(shim::Classify::retry_after(&error), Some(SECOND));
    assert_eq!(
        shim::Classify::class(&ViaShimEnum::Untagged),
        ErrorClass::IdempotentOnly
    );
}

#[test]
fn crate_override_through_a_renamed_facade_implements_the_real_trait() {
    assert_eq!(ViaRename::Busy.class(), ErrorClass::Transient);
}

// ---------------------------------------------------------------------------------------------
// The runtime's own impls.

#[test]
fn timed_out_is_idempotent_only_without_a_wait() {
    let error = TimedOut::after(SECOND);
    assert_eq!(error.class(), ErrorClass::IdempotentOnly);
    assert_eq!(error.retry_after(), None);
}

#[test]
fn circuit_open_is_transient_and_asks_for_its_remaining_open_time() {
    let error = CircuitOpen::new(3 * SECOND);
    assert_eq!(error.class(), ErrorClass::Transient);
    assert_eq!(Classify::retry_after(&error), Some(3 * SECOND));
    // The inherent accessor gives the same wait, unwrapped.
    assert_eq!(error.retry_after(), 3 * SECOND);
}

#[test]
fn io_errors_follow_the_spec_table() {
    use io::ErrorKind as K;
    let class = |kind: K| io::Error::from(kind).class();
    for kind in [
        K::ConnectionReset,
        K::ConnectionAborted,
        K::ConnectionRefused,
        K::Interrupted,
        K::WouldBlock,
        K::BrokenPipe,
        K::HostUnreachable,
        K::NetworkUnreachable,
    ] {
        assert_eq!(class(kind), ErrorClass::Transient, "{kind:?}");
    }
    assert_eq!(class(K::TimedOut), ErrorClass::IdempotentOnly);
    for kind in [
        K::NotFound,
        K::PermissionDenied,
        K::InvalidInput,
        K::InvalidData,
        K::Unsupported,
        K::UnexpectedEof,
        K::AlreadyExists,
        K::Other,
    ] {
        assert_eq!(class(kind), ErrorClass::Permanent, "{kind:?}");
    }
    assert_eq!(io::Error::other("boom").class(), ErrorClass::Permanent);
    assert_eq!(io::Error::from(K::ConnectionReset).retry_after(), None);
}

#[test]
fn box_arc_and_reference_forward_class_and_retry_after() {
    let open = CircuitOpen::new(2 * SECOND);
    let boxed = Box::new(open.clone());
    let shared = Arc::new(open.clone());
    let borrowed = &open;
    for (class, wait) in [
        (boxed.class(), boxed.retry_after()),
        (shared.class(), shared.retry_after()),
        (Classify::class(&borrowed), Classify::retry_after(&borrowed)),
    ] {
        assert_eq!((class, wait), (ErrorClass::Transient, Some(2 * SECOND)));
    }
}

#[test]
fn boxed_and_shared_trait_objects_forward_too() {
    let boxed: Box<dyn Classify> = Box::new(TimedOut::after(SECOND));
    assert_eq!(boxed.class(), ErrorClass::IdempotentOnly);
    let shared: Arc<dyn Classify + Send + Sync> = Arc::new(CircuitOpen::new(SECOND));
    assert_eq!(shared.retry_after(), Some(SECOND));
}

/// An error with a message of its own and a cause, as `anyhow::Context` and most clients'
/// errors are.
#[derive(Debug)]
struct Context(&'static str, Box<dyn std::error::Error + Send + Sync>);

impl std::fmt::Display for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for Context {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.1)
    }
}

fn boxed(
    message: &'static str,
    cause: impl Into<Box<dyn std::error::Error + Send + Sync>>,
) -> Box<dyn std::error::Error + Send + Sync> {
    Box::new(Context(message, cause.into()))
}

#[test]
fn a_boxed_error_is_classified_through_its_chain_by_a_public_function() {
    // There was no public way: users of boxed and anyhow errors wrote their own walk.
    use retry_kit::{chain_retry_after, classify_chain};
    let reset = boxed(
        "loading the ledger",
        io::Error::from(io::ErrorKind::ConnectionReset),
    );
    assert_eq!(classify_chain(&*reset), ErrorClass::Transient);
    let missing = boxed(
        "loading the ledger",
        io::Error::from(io::ErrorKind::NotFound),
    );
    assert_eq!(classify_chain(&*missing), ErrorClass::Permanent);
    let slow = boxed("loading the ledger", TimedOut::after(SECOND));
    assert_eq!(classify_chain(&*slow), ErrorClass::IdempotentOnly);
    let open = boxed(
        "loading the ledger",
        boxed("the ledger", CircuitOpen::new(3 * SECOND)),
    );
    assert_eq!(classify_chain(&*open), ErrorClass::Transient);
    assert_eq!(chain_retry_after(&*open), Some(3 * SECOND));
    // The breaker's error carried through an `io::Error`, as `io::Result` functions return it.
    let carried = boxed("loading", io::Error::from(CircuitOpen::new(SECOND)));
    assert_eq!(chain_retry_after(&*carried), Some(SECOND));
    // hyper-util's errors, known by their messages: a connect error sent nothing.
    let refused = boxed(
        "client error (Connect)",
        io::Error::other("tcp connect error"),
    );
    assert_eq!(classify_chain(&*refused), ErrorClass::Transient);
    let unknown = boxed("something else", "no cause the crate knows");
    assert_eq!(classify_chain(&*unknown), ErrorClass::Permanent);
    assert_eq!(chain_retry_after(&*unknown), None);
}

// ---------------------------------------------------------------------------------------------
// Derived impls drive the retry loop.

#[retryable(attempts = 3, base = "100ms", jitter = "none")]
fn throttled(calls: &mut u32) -> Result<(), Waits> {
    *calls += 1;
    Err(Waits::Throttled {
        limit: 1,
        wait: 2 * SECOND,
    })
}

#[test]
fn derived_retry_after_field_lengthens_the_sleep_between_attempts() {
    let mut calls = 0;
    let (result, slept) = testing::record_sleeps(|| throttled(&mut calls));
    assert!(result.is_err());
    assert_eq!(calls, 3);
    assert_eq!(slept, [2 * SECOND, 2 * SECOND]);
}

#[retryable(attempts = 5, base = "0ms")]
fn permanent_failure(calls: &mut u32) -> Result<(), Tagged> {
    *calls += 1;
    Err(Tagged::BadInput("schema".into()))
}

#[test]
fn permanent_tag_stops_the_loop_after_one_attempt() {
    let mut calls = 0;
    assert!(permanent_failure(&mut calls).is_err());
    assert_eq!(calls, 1);
}

#[retryable(attempts = 3, base = "0ms")]
fn write(calls: &mut u32) -> Result<(), Tagged> {
    *calls += 1;
    Err(Tagged::WriteTimedOut { after: SECOND })
}

#[retryable(attempts = 3, base = "0ms", idempotent)]
fn idempotent_write(calls: &mut u32) -> Result<(), Tagged> {
    *calls += 1;
    Err(Tagged::WriteTimedOut { after: SECOND })
}

#[test]
fn idempotent_only_tag_is_retried_only_by_idempotent_functions() {
    let (mut once, mut thrice) = (0, 0);
    assert!(write(&mut once).is_err());
    assert!(idempotent_write(&mut thrice).is_err());
    assert_eq!((once, thrice), (1, 3));
}

#[retryable(attempts = 2, base = "10ms", jitter = "none")]
fn behind_breaker() -> Result<(), Delegating> {
    Err(Delegating::Breaker {
        source: CircuitOpen::new(5 * SECOND),
    })
}

#[test]
fn delegated_circuit_open_wait_is_honoured_by_the_loop() {
    let (result, slept) = testing::record_sleeps(behind_breaker);
    assert!(result.is_err());
    assert_eq!(slept, [5 * SECOND]);
}
