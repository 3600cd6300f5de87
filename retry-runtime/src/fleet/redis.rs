//! [`RedisStore`]: the fleet's state in Redis, one Lua script per exchange.

use super::store::{Exchanging, FleetPhase, Pull, Push, Report, Store, StoreError};
use crate::CircuitState;
use redis::aio::MultiplexedConnection;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// The exchange, run by Redis atomically: `KEYS[i]` is the i-th value's key, `ARGV` holds eight
/// words per value. It does what `store::budget_rule` and `store::breaker_rule` do, line by
/// line, with Redis's clock (`TIME`) as the only clock a breaker's times are measured on.
const SCRIPT: &str = r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {}
for i, key in ipairs(KEYS) do
  local at = (i - 1) * 8
  local kind = ARGV[at + 1]
  if kind == 'b' then
    local delta = tonumber(ARGV[at + 2])
    local max = tonumber(ARGV[at + 3])
    local ttl = tonumber(ARGV[at + 4])
    local tokens = tonumber(redis.call('GET', key)) or max
    if tokens > max then tokens = max end
    tokens = tokens + delta
    if tokens < 0 then tokens = 0 elseif tokens > max then tokens = max end
    redis.call('SET', key, string.format('%.0f', tokens), 'PX', ttl)
    out[#out + 1] = tokens
    out[#out + 1] = 0
    out[#out + 1] = 0
    out[#out + 1] = 0
  else
    local epoch = tonumber(ARGV[at + 2])
    local code = tonumber(ARGV[at + 3])
    local lease_in = tonumber(ARGV[at + 4])
    local open_ms = tonumber(ARGV[at + 5])
    local half_open_max = tonumber(ARGV[at + 6])
    local lease_ms = tonumber(ARGV[at + 7])
    local ttl = tonumber(ARGV[at + 8])
    local h = redis.call('HMGET', key, 'state', 'epoch', 'open_until', 'last_lease', 'leases')
    local state = tonumber(h[1]) or 0
    local ep = tonumber(h[2]) or 0
    local open_until = tonumber(h[3]) or 0
    local last = tonumber(h[4]) or 0
    local leases = {}
    if h[5] then
      for id, exp in string.gmatch(h[5], '(%d+):(%d+)') do
        leases[#leases + 1] = {tonumber(id), tonumber(exp)}
      end
    end
    if state == 1 and now >= open_until then
      state = 2; ep = ep + 1; leases = {}
    end
    local live = {}
    for _, l in ipairs(leases) do
      if l[2] > now then live[#live + 1] = l end
    end
    leases = live
    local function holds(id)
      for _, l in ipairs(leases) do
        if l[1] == id then return true end
      end
      return false
    end
    local function open()
      state = 1; ep = ep + 1; open_until = now + open_ms; leases = {}
    end
    local granted = 0
    if code == 2 then
      if state == 0 and epoch == ep then open() end
    elseif code == 4 then
      if state == 2 and epoch == ep and holds(lease_in) then open() end
    elseif code == 3 then
      if state == 2 and epoch == ep and holds(lease_in) then
        state = 0; ep = ep + 1; leases = {}
      end
    elseif code == 1 then
      if state == 2 and #leases < half_open_max then
        last = last + 1; granted = last
        leases[#leases + 1] = {last, now + lease_ms}
      end
    end
    local enc = {}
    for _, l in ipairs(leases) do
      enc[#enc + 1] = string.format('%d:%d', l[1], l[2])
    end
    redis.call('HSET', key, 'state', state, 'epoch', string.format('%d', ep),
      'open_until', string.format('%d', open_until), 'last_lease', string.format('%d', last),
      'leases', table.concat(enc, ' '))
    redis.call('PEXPIRE', key, ttl)
    local left = 0
    if state == 1 then left = open_until - now end
    out[#out + 1] = state
    out[#out + 1] = ep
    out[#out + 1] = left
    out[#out + 1] = granted
  end
end
return out
"#;

/// How long a fleet value nobody exchanges stays in Redis: a day.
const IDLE_TTL_MS: u64 = 24 * 60 * 60 * 1000;

/// The fleet's state in Redis: each exchange is one `EVALSHA` of a Lua script that applies
/// every push of the process atomically and answers the fleet's state (one round trip per
/// process per exchange, whatever the call rate). Keys are `{prefix}:budget:{name}` (a
/// string: the tokens in millionths) and `{prefix}:breaker:{name}` (a hash), both expiring
/// after a day without exchanges.
///
/// An exchange that gets no answer within the store's timeout fails (the process falls back
/// to its local rules) and the connection is dropped, to be made again by the next exchange.
///
/// ```no_run
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::fleet::{FleetBudget, Node, RedisStore};
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let store = RedisStore::open("redis://127.0.0.1:6379", "my-app").unwrap()
///     .timeout(Duration::from_millis(100));
/// let node = Node::new();
/// let budget = FleetBudget::new("search", 20, 0.1);
/// node.join(&budget);
/// node.exchange(&store).await.unwrap();
/// # }
/// ```
pub struct RedisStore {
    client: redis::Client,
    prefix: String,
    timeout: Duration,
    script: redis::Script,
    connection: Mutex<Option<MultiplexedConnection>>,
}

impl RedisStore {
    /// A store at `url` (`redis://host:port/db`), its keys under `prefix`. Nothing is
    /// connected until the first exchange; an invalid URL is an error here.
    pub fn open(url: &str, prefix: &str) -> Result<Self, StoreError> {
        let client = redis::Client::open(url)
            .map_err(|e| StoreError::new(format!("`{url}` is not a Redis URL: {e}")))?;
        Ok(RedisStore {
            client,
            prefix: prefix.to_owned(),
            timeout: Duration::from_millis(250),
            script: redis::Script::new(SCRIPT),
            connection: Mutex::new(None),
        })
    }

    /// Fail an exchange (connecting included) that has no answer after `d` (default 250 ms).
    pub fn timeout(mut self, d: Duration) -> Self {
        self.timeout = d;
        self
    }

    /// The keys' prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    fn cached(&self) -> Option<MultiplexedConnection> {
        let cached = self
            .connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        cached.clone()
    }

    fn forget(&self) {
        *self
            .connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = None;
    }

    async fn run(&self, pushes: &[Push]) -> Result<Vec<Pull>, StoreError> {
        let mut connection = match self.cached() {
            Some(c) => c,
            None => {
                let c = self
                    .client
                    .get_multiplexed_async_connection()
                    .await
                    .map_err(|e| StoreError::new(format!("cannot connect to Redis: {e}")))?;
                *self
                    .connection
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = Some(c.clone());
                c
            }
        };
        let mut invocation = self.script.prepare_invoke();
        for push in pushes {
            match *push {
                Push::Budget { name, delta, max } => {
                    invocation
                        .key(format!("{}:budget:{name}", self.prefix))
                        .arg("b")
                        .arg(delta)
                        .arg(max)
                        .arg(IDLE_TTL_MS)
                        .arg(0)
                        .arg(0)
                        .arg(0)
                        .arg(0);
                }
                Push::Breaker {
                    name,
                    epoch,
                    report,
                    rules,
                } => {
                    let (code, lease) = match report {
                        Report::Quiet { wants_probe } => (u64::from(wants_probe), 0),
                        Report::Tripped => (2, 0),
                        Report::ProbeSucceeded { lease } => (3, lease),
                        Report::ProbeFailed { lease } => (4, lease),
                    };
                    invocation
                        .key(format!("{}:breaker:{name}", self.prefix))
                        .arg("k")
                        .arg(epoch)
                        .arg(code)
                        .arg(lease)
                        .arg(rules.open_ms)
                        .arg(rules.half_open_max)
                        .arg(rules.lease_ms)
                        .arg(IDLE_TTL_MS);
                }
            }
        }
        let words: Vec<i64> = invocation
            .invoke_async(&mut connection)
            .await
            .map_err(|e| StoreError::new(format!("the fleet's script failed: {e}")))?;
        if words.len() != pushes.len() * 4 {
            return Err(StoreError::new(format!(
                "the fleet's script answered {} words for {} values",
                words.len(),
                pushes.len()
            )));
        }
        let word = |w: i64| u64::try_from(w).unwrap_or(0);
        Ok(pushes
            .iter()
            .zip(words.chunks_exact(4))
            .map(|(push, w)| match push {
                Push::Budget { .. } => Pull::Budget { tokens: word(w[0]) },
                Push::Breaker { .. } => Pull::Breaker(FleetPhase {
                    state: match w[0] {
                        1 => CircuitState::Open,
                        2 => CircuitState::HalfOpen,
                        _ => CircuitState::Closed,
                    },
                    epoch: word(w[1]),
                    open_left_ms: word(w[2]),
                    lease: word(w[3]),
                }),
            })
            .collect())
    }
}

impl Store for RedisStore {
    fn exchange<'a>(&'a self, pushes: &'a [Push]) -> Exchanging<'a> {
        Box::pin(async move {
            let result = match tokio::time::timeout(self.timeout, self.run(pushes)).await {
                Ok(result) => result,
                Err(_) => Err(StoreError::new(format!(
                    "Redis did not answer within {:?}",
                    self.timeout
                ))),
            };
            if result.is_err() {
                // A connection that failed or went silent is made again next time (a restarted
                // server, a half-open socket).
                self.forget();
            }
            result
        })
    }
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("prefix", &self.prefix)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}
