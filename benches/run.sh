#!/usr/bin/env bash
# Every benchmark table: the timing matrix (run RUNS times, 2 by default, each saved as a
# criterion baseline run1, run2, ...), then allocations per call, future sizes, and the medians
# of the timing runs with their ratios to the hand loop. Markdown on stdout.
#
#   bash benches/run.sh            # everything, about 10 minutes on 2 cores
#   RUNS=3 bash benches/run.sh     # more runs for the medians
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-2}
# Where criterion saves its baselines and `tables` reads them: the workspace's target directory
# (CARGO_TARGET_DIR honoured), whichever directory the bench binaries run in.
target=$(cargo metadata --format-version 1 --no-deps |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
export CRITERION_HOME="$target/criterion"
# Old baselines would mix into the medians.
rm -rf "$CRITERION_HOME"
for i in $(seq 1 "$runs"); do
  echo "== timing run $i of $runs" >&2
  cargo bench -p retry-kit-benches --bench overhead -- --save-baseline "run$i" --noplot >&2
done
echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(uname -sr); rustc $(rustc --version | cut -d' ' -f2); $(date -u '+%Y-%m-%d %H:%M UTC')"
echo
cargo bench -p retry-kit-benches --bench tables 2>/dev/null
