#!/usr/bin/env bash
# One command for every benchmark: the faulty server beside Node's reference server (scripts/bench-serve.sh),
# the proxy against the direct path and mcp-drill (scripts/bench-proxy.sh), and graded eval runs per second
# (scripts/bench-eval.sh), explore's search against --exhaustive (scripts/bench-explore.sh). Release builds; figures are ratios measured in one run. Writes docs/performance.md
# from the JSON they leave in target/bench/.
#
#   scripts/bench.sh           full run, then docs/performance.md
#   scripts/bench.sh --quick   tiny counts, only to prove the benchmarks run (no report written)
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--quick" ]; then
  export FAULTLAB_BENCH_QUICK=1
fi
scripts/bench-serve.sh
scripts/bench-proxy.sh
scripts/bench-eval.sh
scripts/bench-explore.sh
if [ -z "${FAULTLAB_BENCH_QUICK:-}" ]; then
  python3 scripts/perf_report.py target/bench docs/performance.md
fi
