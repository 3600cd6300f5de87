#!/usr/bin/env bash
# Instructions per call of each case, counted by callgrind: repeatable on a busy machine, where
# wall-clock medians are not. Each case runs twice in the `tables` bench binary, with 1 000 and
# 11 000 calls; the difference over 10 000 is the cost of one call, start-up excluded.
#
#   bash benches/instructions.sh                 # every case
#   bash benches/instructions.sh sync_success    # the cases whose name contains this
#   FEATURES=metrics bash benches/instructions.sh       # with the `metrics` feature (no recorder)
#   FEATURES=metrics RECORDER=1 bash benches/instructions.sh   # ... and a Prometheus recorder
#   bash benches/instructions.sh middleware     # the reqwest middlewares, per request
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)" >&2; exit 1; }
features=(${FEATURES:+--features "$FEATURES"})
recorder=(${RECORDER:+--recorder})
cargo bench -p retry-kit-benches --bench tables --no-run "${features[@]}" 2>/dev/null
bin=$(cargo bench -p retry-kit-benches --bench tables --no-run "${features[@]}" --message-format=json 2>/dev/null |
  grep -o '"executable":"[^"]*tables[^"]*"' | tail -1 | cut -d'"' -f4)
count() { # case iters -> instructions
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "${recorder[@]}" --only "$1" --iters "$2" 2>&1 |
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
printf '| case | instructions per call |\n| --- | ---: |\n'
for group in sync_success async_success sync_retry3 async_retry3; do
  for option in "" _deadline _hook _breaker; do
    for contender in hand hand+ctx macro fn backon tokio-retry2 retry backoff; do
      name="$group$option/$contender"
      [[ -n "${1:-}" && "$name" != *"$1"* ]] && continue
      # Cases that do not exist (peers in option groups, sync-only or async-only crates) fail.
      a=$(count "$name" 1000 2>/dev/null) || continue
      [[ -z "$a" ]] && continue
      b=$(count "$name" 11000)
      printf '| %s | %s |\n' "$name" "$(( (b - a) / 10000 ))"
    done
  done
done
# A hedged call whose hedge never fires (issue 26, item 2): the macro form only; and a call
# through a static breaker and through a `PerKey` entry of a full table (item 1).
# And an HTTP request answered at once: bare, through HttpRetryLayer, through tower's retry with a
# policy that clones the request (item 4).
# The peers' closed breakers beside the static one (item 5), and with FEATURES=metrics the floor
# of a measured call: a kept `metrics::Counter` incremented (absent without the feature).
for name in async_success_hedged/macro protection/breaker protection/budget protection/fleet_budget protection/per_key protection/per_key_churned protection/per_key_hashed protection/failsafe \
  protection/tower_resilience protection/metrics_floor layer/bare layer/tower_retry layer/http_retry; do
  [[ -n "${1:-}" && "$name" != *"$1"* ]] && continue
  [[ "$name" == protection/metrics_floor && "${FEATURES:-}" != *metrics* ]] && continue
  [[ "$name" == protection/fleet_budget && "${FEATURES:-}" != *redis* ]] && continue
  a=$(count "$name" 1000)
  b=$(count "$name" 11000)
  printf '| %s | %s |\n' "$name" "$(( (b - a) / 10000 ))"
done
# A GET answered 200 at once through reqwest-middleware's client: bare, through RetryMiddleware,
# through reqwest-retry's middleware (item 4), on a loopback server in the same process. Loopback
# makes these vary by some tens of instructions per request; 200 and 1 200 requests.
middleware=$(cargo bench -p retry-kit-benches --bench middleware --no-run --message-format=json 2>/dev/null |
  grep -o '"executable":"[^"]*middleware[^"]*"' | tail -1 | cut -d'"' -f4)
for name in answered/bare answered/retry_kit answered/reqwest_retry; do
  [[ -n "${1:-}" && "middleware/$name" != *"$1"* ]] && continue
  counted() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$middleware" --only "$name" --iters "$1" 2>&1 |
      sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
  }
  a=$(counted 200)
  b=$(counted 1200)
  printf '| middleware/%s | %s |\n' "$name" "$(( (b - a) / 1000 ))"
done
