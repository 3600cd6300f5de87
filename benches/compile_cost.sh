#!/usr/bin/env bash
# What #[retryable] costs at compile time, as a markdown table:
#
# 1. a cold build of retry-macros next to syn's own build, both from one `cargo build
#    --timings -j1` in a fresh target directory (one job, so the two do not share the cores);
# 2. `cargo check` and `cargo build` of a generated crate with 200 annotated functions (100 sync,
#    100 async, with a spread of keys) against the same crate without the attribute, with every
#    dependency already built: the median of REPS (3) rebuilds after touching its source.
#
# A crate with a build script (proc-macro2) counts its script's build and run too.
# Everything happens in a temporary directory; the repository's target/ is left alone.
#
#   bash benches/compile_cost.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
reps=${REPS:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# --- 1. cold build of the macro crate against syn --------------------------------------------
(cd "$repo" && CARGO_TARGET_DIR="$tmp/cold" cargo build -q -p retry-macros -j1 --timings 2>/dev/null)
unit_secs() { # crate name -> seconds, summed over its units, from cargo's timing report
  python3 - "$tmp/cold/cargo-timings/cargo-timing.html" "$1" <<'PY'
import json, re, sys
html = open(sys.argv[1]).read()
units = json.loads(re.search(r"const UNIT_DATA = (\[.*?\n\]);", html, re.S).group(1))
print("%.2f" % sum(u["duration"] for u in units if u["name"] == sys.argv[2]))
PY
}
syn_s=$(unit_secs syn)
pm2_s=$(unit_secs proc-macro2)
quote_s=$(unit_secs quote)
macros_s=$(unit_secs retry-macros)

# --- 2. a crate with 200 annotated functions, and the same without ---------------------------
gen() { # dir, "attr" or "plain"
  mkdir -p "$1/src"
  cat >"$1/Cargo.toml" <<TOML
[package]
name = "gen-$2"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
retry-kit = { path = "$repo" }
tokio = { version = "1", features = ["rt", "time"] }

[workspace]
TOML
  cp "$repo/Cargo.lock" "$1/Cargo.lock"
  {
    echo '#![allow(clippy::all, unused_imports)]'
    echo 'use retry_kit::{retryable, Classify};'
    echo '#[derive(Debug, Classify)]'
    echo 'pub enum E { #[classify(transient)] Reset, #[classify(permanent)] Bad }'
    for i in $(seq 1 100); do
      if [[ $2 == attr ]]; then
        case $((i % 4)) in
          0) echo '#[retryable]' ;;
          1) echo '#[retryable(attempts = 5, backoff = "linear", base = "10ms", jitter = "none")]' ;;
          2) echo '#[retryable(attempts = 4, base = "250ms", max_delay = "10s", jitter = "equal", deadline = "30s")]' ;;
          3) echo '#[retryable(attempts = 3, backoff = "fixed", base = "1s", idempotent)]' ;;
        esac
      fi
      echo "pub fn sync_$i(x: &mut u64) -> Result<u64, E> { *x += $i; if *x % 7 == 0 { Err(E::Reset) } else if *x % 11 == 0 { Err(E::Bad) } else { Ok(*x) } }"
      if [[ $2 == attr ]]; then
        case $((i % 4)) in
          0) echo '#[retryable]' ;;
          1) echo '#[retryable(attempts = 5, backoff = "exponential", base = "100ms", jitter = "full")]' ;;
          2) echo '#[retryable(attempts = 4, base = "250ms", jitter = "decorrelated", deadline = "30s")]' ;;
          3) echo '#[retryable(attempts = 2, backoff = "fixed", base = "1s", nested = "once")]' ;;
        esac
      fi
      echo "pub async fn async_$i(name: &str, n: u64) -> Result<usize, E> { tokio::task::yield_now().await; if n == $i { Err(E::Reset) } else { Ok(name.len() + $i) } }"
    done
  } >"$1/src/lib.rs"
}
gen "$tmp/attr" attr
gen "$tmp/plain" plain
export CARGO_TARGET_DIR="$tmp/gen-target"
median_secs() { # dir, cargo subcommand
  (cd "$1" && cargo "$2" -q) >&2 # dependencies, once; fails loudly if the crate does not build
  for _ in $(seq 1 "$reps"); do
    touch "$1/src/lib.rs"
    local t0 t1
    t0=$(date +%s.%N)
    (cd "$1" && cargo "$2" -q) >&2 || exit 1
    t1=$(date +%s.%N)
    printf '%.3f\n' "$(echo "$t1 - $t0" | bc)"
  done | sort -n | sed -n "$(((reps + 1) / 2))p"
}
check_attr=$(median_secs "$tmp/attr" check)
check_plain=$(median_secs "$tmp/plain" check)
build_attr=$(median_secs "$tmp/attr" build)
build_plain=$(median_secs "$tmp/plain" build)

ratio() { printf '%.2f' "$(echo "scale=4; $1 / $2" | bc)"; }
diff() { printf '%.3f' "$(echo "$1 - $2" | bc)"; }
cat <<EOF
| what | seconds |
| --- | ---: |
| cold build, \`-j1\`, dev profile: syn 3 (features: $(grep -o 'features = \[[^]]*\]' "$repo/retry-macros/Cargo.toml" | head -1 | tr -d '"' | sed 's/features = //')) | $syn_s |
| the same build: proc-macro2 + quote | $(printf '%.2f' "$(echo "$pm2_s + $quote_s" | bc)") |
| the same build: retry-macros | $macros_s ($(ratio "$macros_s" "$syn_s")× syn) |
| \`cargo check\`, 200 fns with \`#[retryable]\` | $check_attr |
| \`cargo check\`, the same 200 fns without it | $check_plain |
| \`cargo build\` (dev), 200 fns with \`#[retryable]\` | $build_attr |
| \`cargo build\` (dev), the same 200 fns without it | $build_plain |

Expansion and type-checking cost of the attribute: $(diff "$check_attr" "$check_plain") s per 200 functions in \`cargo check\` ($(ratio "$check_attr" "$check_plain")×), $(diff "$build_attr" "$build_plain") s in \`cargo build\` ($(ratio "$build_attr" "$build_plain")×). Median of $reps rebuilds each, dependencies prebuilt.
EOF
