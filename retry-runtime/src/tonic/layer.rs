//! [`GrpcRetryLayer`]: the builder of the gRPC front end, from a policy or a service config.

use super::rules::{Method, Plan, Rule, Rules};
use super::service_config::{self, ServiceConfigError};
use crate::authority::Authority;
use crate::builder::Retry;
use crate::per_request::{BudgetChoice, BudgetForEachRequest, Chosen, ForEachRequest};
use crate::policy::RetryPolicy;
use crate::policy_cell::{PolicySource, SharedCell};
use crate::run::NoHook;
use crate::{CircuitBreaker, RetryBudget};
use std::sync::Arc;
use std::time::Duration;

/// How many bytes of a call's request messages are kept for replay unless
/// [`buffer_limit`](GrpcRetryLayer::buffer_limit) says otherwise: 256 KiB.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// assert_eq!(retry_kit::tonic::DEFAULT_BUFFER_LIMIT, 256 * 1024);
/// ```
pub const DEFAULT_BUFFER_LIMIT: usize = 256 * 1024;

/// The longest `grpc-retry-pushback-ms` a service config's method waits unless
/// [`max_pushback`](GrpcRetryLayer::max_pushback) says otherwise: 30 s.
const DEFAULT_MAX_PUSHBACK: Duration = Duration::from_secs(30);

/// What the layer's `Retry` starts from before a call gives it the method's policy.
static NO_POLICY: RetryPolicy = RetryPolicy::new();

/// A tower [`Layer`](tower_layer::Layer) that retries (or hedges) the calls of a tonic client with gRPC's own
/// semantics (gRFC A6), over the crate's engine: the same policy arithmetic, classification,
/// breaker, budget, hooks, `tracing` events and metrics as every other front end. See the
/// [module docs](super) for what is retried and what is not.
///
/// Put it between a generated client and its channel:
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::tonic::GrpcRetryLayer;
///
/// let layer = GrpcRetryLayer::from_service_config(r#"{
///     "methodConfig": [{
///         "name": [{"service": "grpc.health.v1.Health"}],
///         "retryPolicy": {
///             "maxAttempts": 4,
///             "initialBackoff": "0.1s",
///             "maxBackoff": "1s",
///             "backoffMultiplier": 2,
///             "retryableStatusCodes": ["UNAVAILABLE"]
///         },
///         "timeout": "5s"
///     }],
///     "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}
/// }"#)
/// .expect("a valid service config");
/// // let channel = tonic::transport::Endpoint::from_static("http://[::1]:50051").connect_lazy();
/// // let client = HealthClient::new(tower::ServiceBuilder::new().layer(layer).service(channel));
/// # let _ = layer;
/// ```
///
/// The service it makes takes `http::Request<tonic::body::Body>` (what generated clients send)
/// from any `Service<http::Request<tonic::body::Body>, Response = http::Response<B>>` whose
/// error converts into a boxed error, a `tonic::transport::Channel` among them.
#[derive(Clone, Debug)]
pub struct GrpcRetryLayer<H = NoHook> {
    pub(crate) rules: Arc<Rules>,
    /// The hook and the name of every call; its policy is a placeholder until the call.
    pub(crate) retry: Retry<'static, crate::run::ByTrait, H>,
    pub(crate) circuit: Option<Chosen<CircuitBreaker>>,
    pub(crate) budget: Option<BudgetChoice>,
    /// The service config's `retryThrottling`, unless `.budget(..)` replaced it.
    pub(crate) throttling: Option<Arc<RetryBudget>>,
    pub(crate) buffer_limit: usize,
    /// The longest pushback a service config's method waits exactly; a longer one stops it.
    pub(crate) max_pushback: Duration,
    /// Each attempt's limit until its response headers, from
    /// [`attempt_timeout`](GrpcRetryLayer::attempt_timeout).
    pub(crate) attempt_timeout: Option<Duration>,
    /// The `PerKey` key of requests whose URI names no host (`host:port`), from
    /// [`origin`](GrpcRetryLayer::origin).
    pub(crate) origin: Option<Arc<str>>,
    /// The `fn` of every call's reports, from [`named`](GrpcRetryLayer::named); without it,
    /// each call's method path.
    pub(crate) name: Option<&'static str>,
}

impl GrpcRetryLayer {
    /// Retry every method by `policy`, with the status codes the crate's table calls
    /// retryable ([`code_class`](super::code_class): `UNAVAILABLE`, `RESOURCE_EXHAUSTED` and
    /// `ABORTED`, and `DEADLINE_EXCEEDED` and `UNKNOWN` when the policy is
    /// [`idempotent`](RetryPolicy::idempotent)), the server's pushback honoured. The policy's
    /// `deadline`, if any, bounds each call as a `grpc-timeout` does.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::RetryPolicy;
    /// use retry_kit::tonic::GrpcRetryLayer;
    /// use std::time::Duration;
    ///
    /// let layer = GrpcRetryLayer::new(RetryPolicy::exponential(Duration::from_millis(50)).attempts(3));
    /// # let _ = layer;
    /// ```
    pub fn new(policy: RetryPolicy) -> Self {
        GrpcRetryLayer::by(PolicySource::Own(policy))
    }

    /// As [`new`](Self::new), by the policy `cell` holds when each call starts: a
    /// [`PolicyCell::set`](crate::PolicyCell::set) reaches every channel the layer wraps from its next call on.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::tonic::GrpcRetryLayer;
    /// use retry_kit::{PolicyCell, RetryPolicy};
    ///
    /// static POLICY: PolicyCell = PolicyCell::new(RetryPolicy::new().attempts(3));
    /// let layer = GrpcRetryLayer::from_cell(&POLICY);
    /// POLICY.set(RetryPolicy::new().attempts(5));
    /// # let _ = layer;
    /// ```
    pub fn from_cell(cell: impl Into<SharedCell>) -> Self {
        GrpcRetryLayer::by(PolicySource::Cell(cell.into()))
    }

    fn by(policy: PolicySource) -> Self {
        let method = Method {
            plan: Plan::Retry {
                policy,
                rule: Rule::Table,
                recv_timeout: None,
            },
            timeout: None,
        };
        GrpcRetryLayer::with_rules(Rules::every_method(method))
    }

    /// Retry by a gRPC service config (its JSON form): each method by its `methodConfig`
    /// entry (its own name, else its service's, else the empty default name; a method that no
    /// entry names is called once), its `retryPolicy` (with gRPC's C core's
    /// `perAttemptRecvTimeout`, see [`attempt_timeout`](Self::attempt_timeout)) or
    /// `hedgingPolicy` and its `timeout`,
    /// throttled by `retryThrottling` (one [`RetryBudget`] for the layer, see
    /// [`retry_throttling`](Self::retry_throttling)). A config that breaks one of gRFC A6's
    /// rules is an error naming the field; `maxAttempts` above 5 is taken as 5, as A6 says.
    /// A key that gRPC's service config does not define is an error too, naming the nearest
    /// key it does (gRPC itself would ignore it, and a misspelt `methodConfig` would leave a
    /// layer that retries nothing); keys gRPC defines that the layer has no use for
    /// (`loadBalancingConfig`, `waitForReady`, ...) are ignored.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::tonic::GrpcRetryLayer;
    ///
    /// let hedged = GrpcRetryLayer::from_service_config(r#"{"methodConfig": [{
    ///     "name": [{"service": "pkg.Search", "method": "Query"}],
    ///     "hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "0.05s",
    ///                       "nonFatalStatusCodes": ["UNAVAILABLE"]}}]}"#);
    /// assert!(hedged.is_ok());
    ///
    /// let error = GrpcRetryLayer::from_service_config(r#"{"retryThrottling": {"maxTokens": 0,
    ///     "tokenRatio": 0.1}}"#).unwrap_err();
    /// assert_eq!(error.field(), "retryThrottling.maxTokens");
    ///
    /// let error = GrpcRetryLayer::from_service_config(r#"{"methodConfigs": []}"#).unwrap_err();
    /// assert_eq!(error.field(), "methodConfigs");
    /// assert!(error.rule().ends_with("did you mean `methodConfig`?"));
    /// ```
    pub fn from_service_config(json: &str) -> Result<Self, ServiceConfigError> {
        service_config::parse(json).map(GrpcRetryLayer::with_rules)
    }

    fn with_rules(rules: Rules) -> Self {
        let throttling = rules
            .throttling
            .map(|(tokens, ratio)| Arc::new(RetryBudget::new(tokens, ratio)));
        GrpcRetryLayer {
            rules: Arc::new(rules),
            retry: Retry::new(&NO_POLICY),
            circuit: None,
            budget: None,
            throttling,
            buffer_limit: DEFAULT_BUFFER_LIMIT,
            max_pushback: DEFAULT_MAX_PUSHBACK,
            attempt_timeout: None,
            origin: None,
            name: None,
        }
    }
}

impl<H> GrpcRetryLayer<H> {
    /// Call `hook` with every failed attempt's [`Failure`](crate::Failure) record, whose
    /// error is a [`GrpcFailure`](super::GrpcFailure).
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::tonic::{GrpcFailure, GrpcRetryLayer};
    /// use retry_kit::{Failure, RetryPolicy};
    ///
    /// fn log(failure: &Failure<'_, GrpcFailure>) {
    ///     eprintln!("attempt {}: {} ({:?})", failure.attempt, failure.error, failure.next);
    /// }
    ///
    /// let layer = GrpcRetryLayer::new(RetryPolicy::new()).on_failure(log);
    /// # let _ = layer;
    /// ```
    pub fn on_failure<H2>(self, hook: H2) -> GrpcRetryLayer<H2> {
        GrpcRetryLayer {
            rules: self.rules,
            retry: self.retry.on_failure(hook),
            circuit: self.circuit,
            budget: self.budget,
            throttling: self.throttling,
            buffer_limit: self.buffer_limit,
            max_pushback: self.max_pushback,
            attempt_timeout: self.attempt_timeout,
            origin: self.origin,
            name: self.name,
        }
    }

    /// Consult `breaker` (a `&'static CircuitBreaker`, or a `&'static PerKey<CircuitBreaker>`
    /// keyed by each request's authority written `host:port`) before every attempt; a
    /// refused first attempt fails with `UNAVAILABLE` without sending anything.
    ///
    /// Generated clients send requests whose URI is the path alone (the channel adds the
    /// authority below this layer): give the layer its server ([`origin`](Self::origin)), or
    /// the client its origin (`HealthClient::with_origin(service, "http://host:50051".parse()?)`),
    /// for a `PerKey` to tell servers apart; without either every request has the key `""`.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::tonic::GrpcRetryLayer;
    /// use retry_kit::{CircuitBreaker, PerKey, RetryPolicy};
    /// use std::time::Duration;
    ///
    /// static PER_SERVER: PerKey<CircuitBreaker> =
    ///     PerKey::new(CircuitBreaker::new(5, Duration::from_secs(10)));
    ///
    /// let layer = GrpcRetryLayer::new(RetryPolicy::new()).circuit(&PER_SERVER);
    /// # let _ = layer;
    /// ```
    pub fn circuit(mut self, breaker: impl ForEachRequest<CircuitBreaker>) -> Self {
        self.circuit = Some(breaker.chosen());
        self
    }

    /// The server this layer's channel talks to, for the `PerKey` key of requests whose URI
    /// names no host, as a generated client built with `new` sends them (the channel adds the
    /// authority below this layer): without it, all such requests share the key `""`, and one
    /// failing server would open the breaker of every server behind the same table. A request
    /// that names its host (a client built `with_origin`) is keyed by its own.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::tonic::GrpcRetryLayer;
    /// use retry_kit::{CircuitBreaker, PerKey, RetryPolicy};
    /// use std::time::Duration;
    ///
    /// static PER_SERVER: PerKey<CircuitBreaker> =
    ///     PerKey::new(CircuitBreaker::new(5, Duration::from_secs(10)));
    ///
    /// let layer = GrpcRetryLayer::new(RetryPolicy::new())
    ///     .circuit(&PER_SERVER)
    ///     .origin("http://10.0.0.7:50051".parse().unwrap());
    /// # let _ = layer;
    /// ```
    pub fn origin(mut self, origin: ::http::Uri) -> Self {
        self.origin = origin
            .host()
            .is_some()
            .then(|| Arc::from(Authority::of_uri(&origin).as_str()));
        self
    }

    /// Charge failures to `budget` (a `&'static RetryBudget`, or a `&'static
    /// PerKey<RetryBudget>` keyed by authority, as for [`circuit`](Self::circuit)) and ask it
    /// before every retry and hedge, in place of the service config's `retryThrottling`. A
    /// fleet budget (feature `redis`) or a `&'static AdaptiveThrottle` (which refuses first
    /// attempts too) is taken as well.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::tonic::GrpcRetryLayer;
    /// use retry_kit::{RetryBudget, RetryPolicy};
    ///
    /// // One budget for every client of the process, named for its metrics.
    /// static RETRIES: RetryBudget = RetryBudget::new(100, 0.1).name("grpc");
    ///
    /// let layer = GrpcRetryLayer::new(RetryPolicy::new()).budget(&RETRIES);
    /// assert!(layer.retry_throttling().is_none());
    /// ```
    pub fn budget(mut self, budget: impl BudgetForEachRequest) -> Self {
        self.budget = Some(budget.budget_choice());
        self.throttling = None;
        self
    }

    /// Keep at most `bytes` of each call's request messages for replay (default
    /// [`DEFAULT_BUFFER_LIMIT`]): a call whose messages outgrow it is committed to the attempt
    /// that sent them, and never repeated.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::RetryPolicy;
    /// use retry_kit::tonic::GrpcRetryLayer;
    ///
    /// // Uploads stream large messages: keep up to 4 MiB of each call for a retry.
    /// let layer = GrpcRetryLayer::new(RetryPolicy::new()).buffer_limit(4 << 20);
    /// # let _ = layer;
    /// ```
    pub const fn buffer_limit(mut self, bytes: usize) -> Self {
        self.buffer_limit = bytes;
        self
    }

    /// Under a service config, wait a server's `grpc-retry-pushback-ms` exactly (as gRFC A6
    /// asks) only up to `limit` (default 30 s): a longer pushback stops the call with
    /// [`StopReason::RetryAfterTooLong`](crate::StopReason::RetryAfterTooLong) and the
    /// server's status, instead of holding it for as long as the server says. Without a
    /// deadline nothing else bounds such a wait. (Under [`new`](GrpcRetryLayer::new) a
    /// pushback is bounded by the policy's `max_delay`, as every retry-after in the crate is;
    /// this setting does not apply there.)
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::tonic::GrpcRetryLayer;
    /// use std::time::Duration;
    ///
    /// let layer = GrpcRetryLayer::from_service_config(r#"{"methodConfig": [{
    ///     "name": [{}],
    ///     "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s",
    ///                     "backoffMultiplier": 2, "retryableStatusCodes": ["RESOURCE_EXHAUSTED"]}
    /// }]}"#)
    /// .unwrap()
    /// // A quota that refills within five seconds is worth waiting for; a longer one is not.
    /// .max_pushback(Duration::from_secs(5));
    /// # let _ = layer;
    /// ```
    pub const fn max_pushback(mut self, limit: Duration) -> Self {
        self.max_pushback = limit;
        self
    }

    /// Cancel each attempt that has no response headers after `limit` (the smaller of this
    /// and a method's `perAttemptRecvTimeout` applies; the deadline still bounds every
    /// attempt), as the HTTP layers' `attempt_timeout` cancels an attempt. An answer that has
    /// begun is the call's and is never cut: like gRPC's `perAttemptRecvTimeout`, the limit
    /// runs until the call is committed.
    ///
    /// A cut attempt is `CANCELLED` (as gRPC's C core reports one cut by
    /// `perAttemptRecvTimeout`). Under a service config it is retried whatever
    /// `retryableStatusCodes` lists, within `maxAttempts` and the throttling, as the C core
    /// retries it; under [`new`](GrpcRetryLayer::new) it is idempotent-only, as every attempt
    /// timeout in the crate (the handler may have run): retried only when the policy is
    /// [`idempotent`](RetryPolicy::idempotent). A tower timeout below the layer is no
    /// substitute: its error reaches the layer as a transport failure that may have been
    /// processed, which a service config never retries.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::RetryPolicy;
    /// use retry_kit::tonic::GrpcRetryLayer;
    /// use std::time::Duration;
    ///
    /// // A replica that has not answered within 200 ms is stuck: try another.
    /// let policy = RetryPolicy::exponential(Duration::from_millis(20))
    ///     .attempts(3)
    ///     .idempotent(true);
    /// let layer = GrpcRetryLayer::new(policy).attempt_timeout(Duration::from_millis(200));
    /// # let _ = layer;
    /// ```
    pub const fn attempt_timeout(mut self, limit: Duration) -> Self {
        self.attempt_timeout = Some(limit);
        self
    }

    /// The name `tracing` events and measurements give every call through the layer (their
    /// `fn`), instead of each call's method path (`/pkg.Service/Method`, what a dashboard
    /// usually wants: one layer serves every method of a channel).
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::RetryPolicy;
    /// use retry_kit::tonic::GrpcRetryLayer;
    ///
    /// let layer = GrpcRetryLayer::new(RetryPolicy::new()).named("inventory_grpc");
    /// # let _ = layer;
    /// ```
    pub fn named(mut self, name: &'static str) -> Self {
        self.name = Some(name);
        self
    }

    /// Record gRFC A96's per-call histograms under OpenTelemetry's gRPC names
    /// (`grpc.client.call.retries`, `grpc.client.call.transparent_retries`,
    /// `grpc.client.call.hedges`, `grpc.client.call.retry_delay`, labels `grpc.method` and
    /// `grpc.target`; the table is in [`crate::meter`]'s docs) beside the crate's own
    /// `retry_kit_*` families. The gRPC layer does so by default, as gRPC's own clients do: this
    /// says so where the layer is built, and changes nothing else. The HTTP layers have no such
    /// names to follow (OpenTelemetry defines no retry metrics for HTTP) and only the crate's own.
    ///
    /// They are recorded with the `metrics` feature and an installed recorder, once per call that
    /// made more than one attempt.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::RetryPolicy;
    /// use retry_kit::tonic::GrpcRetryLayer;
    ///
    /// let layer = GrpcRetryLayer::new(RetryPolicy::new()).otel_names();
    /// # let _ = layer;
    /// ```
    pub fn otel_names(self) -> Self {
        self
    }

    /// The budget the service config's `retryThrottling` made (`None` without one, or after
    /// [`budget`](Self::budget)), shared by every service this layer makes: its tokens say
    /// whether retries and hedges are being throttled.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::tonic::GrpcRetryLayer;
    ///
    /// let layer = GrpcRetryLayer::from_service_config(
    ///     r#"{"retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}}"#,
    /// )
    /// .unwrap();
    /// let tokens = layer.retry_throttling().map(|budget| budget.tokens());
    /// assert_eq!(tokens, Some(10.0));
    /// ```
    pub fn retry_throttling(&self) -> Option<&RetryBudget> {
        self.throttling.as_deref()
    }
}
