#!/usr/bin/env bash
# The peer tables of issue 26, items 4 and 5, as markdown on stdout: runs the `protection` and
# `middleware` benches (criterion's own report goes to stderr) and prints each case's median
# with the ratio the results read. Take the figures on an idle machine.
#
#   bash benches/peers.sh                          # both benches
#   bash benches/peers.sh protection               # one of them
#   FEATURES=metrics bash benches/peers.sh protection   # with the metrics rows (FEATURES is for
#                                                       # protection only: the middleware is
#                                                       # measured with default features)
#   ARGS='--warm-up-time 1 --measurement-time 3' bash benches/peers.sh   # criterion's options
#
# protection: per call alone, beside a second thread, and with every core where there are more
# than 2; a ratio near 1 means the other threads cost the measured one nothing.
# middleware: per request, and each client as a ratio to the bare one in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
features=(${FEATURES:+--features "$FEATURES"})
target=$(cargo metadata --format-version 1 --no-deps |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
export CRITERION_HOME="$target/criterion"
benches=("$@")
[[ ${#benches[@]} -eq 0 ]] && benches=(protection middleware)
echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(uname -sr); rustc $(rustc --version | cut -d' ' -f2); $(git rev-parse --short HEAD); load average $(cut -d' ' -f1-3 /proc/loadavg); $(date -u '+%Y-%m-%d %H:%M UTC')"
for bench in "${benches[@]}"; do
  # Old results of cases no longer run would mix in.
  case $bench in
  protection) rm -rf "$CRITERION_HOME"/uncontended "$CRITERION_HOME"/*_threads ;;
  middleware) rm -rf "$CRITERION_HOME"/answered "$CRITERION_HOME"/503_then_200 ;;
  *) echo "no bench named $bench (protection, middleware)" >&2; exit 1 ;;
  esac
  with=()
  [[ $bench == protection ]] && with=("${features[@]}")
  # shellcheck disable=SC2086 # ARGS is criterion's options, split on purpose.
  cargo bench -p retry-kit-benches --bench "$bench" "${with[@]}" -- ${ARGS:-} >&2
  echo
  python3 - "$CRITERION_HOME" "$bench" <<'EOF'
import json, os, sys

home, bench = sys.argv[1], sys.argv[2]

def median(group, case):
    path = os.path.join(home, group, case, "new", "estimates.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)["median"]["point_estimate"]

def show(ns):
    if ns is None:
        return "-"
    if ns >= 1e6:
        return f"{ns / 1e6:.3f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.2f} µs"
    return f"{ns:.2f} ns"

def cases(group):
    d = os.path.join(home, group)
    return [c for c in os.listdir(d) if os.path.isdir(os.path.join(d, c)) and c != "report"]

if bench == "protection":
    many = sorted(g for g in os.listdir(home) if g.endswith("_threads") and g != "two_threads")
    head = ["case", "1 thread", "2 threads", "2 / 1"]
    for g in many:
        head += [g.replace("_", " "), f"{g.split('_')[0]} / 1"]
    print("| " + " | ".join(head) + " |")
    print("| --- |" + " ---: |" * (len(head) - 1))
    # The order protection.rs runs them in: retry-kit's, then the peers', then metrics.
    order = sorted(cases("uncontended"), key=lambda c: (
        c.startswith("metrics"), c.startswith(("failsafe", "tower_resilience")), c))
    for case in order:
        alone = median("uncontended", case)
        row = [case, show(alone)]
        for g in ["two_threads"] + many:
            t = median(g, case)
            row += [show(t), f"{t / alone:.2f}×" if t and alone else "-"]
        print("| " + " | ".join(row) + " |")
else:
    clients = ["bare", "retry_kit", "reqwest_retry"]
    print("| case | " + " | ".join(clients) + " |")
    print("| --- |" + " ---: |" * len(clients))
    for group in ["answered", "503_then_200"]:
        bare = median(group, "bare")
        row = [group]
        for client in clients:
            t = median(group, client)
            row.append(f"{show(t)} ({t / bare:.3f}×)" if t and bare else show(t))
        print("| " + " | ".join(row) + " |")
EOF
done
