#!/usr/bin/env bash
# Proves both benchmarks (crates/faultlab-bench) still run, in seconds, on the debug build the test suite already
# made: the serve bench (faultlab serve beside Node's server-everything) and the proxy bench (direct, faultlab
# proxy, the floor relay) with FAULTLAB_BENCH_QUICK=1 (tiny counts). Figures from this run mean nothing and are not
# checked; a bench that panics, hangs past its stall limit or leaves no JSON report fails the run. mcp-drill and
# AgentBreak are left out here (the full run, scripts/bench.sh, installs them).
#
# The benches measure the faultlab binary at the absolute path FAULTLAB_BIN (scripts/test.sh sets it), else
# target/debug/faultlab (built here when missing). They are built with --workspace so that cargo resolves features as `cargo test
# --workspace` did and reuses its dependencies instead of building them again for this one crate.
set -euo pipefail
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

# shellcheck source=scripts/lib/everything-tools.sh
source "$ROOT/scripts/lib/everything-tools.sh"
install_everything
verify_everything

BIN="${FAULTLAB_BIN:-}"
if [[ -z "$BIN" ]]; then
    BIN="$(cargo metadata --locked --format-version 1 --no-deps </dev/null \
        | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')/debug/faultlab"
    [[ -x "$BIN" ]] || cargo build --locked -q -p faultlab </dev/null
fi
[[ "$BIN" == /* && -x "$BIN" ]] || die "FAULTLAB_BIN must be the absolute path of a faultlab binary (got $BIN)"

OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
for bench in serve proxy; do
    log "$bench (FAULTLAB_BENCH_QUICK=1, debug build)"
    FAULTLAB_BENCH_QUICK=1 \
        FAULTLAB_BENCH_BIN="$BIN" \
        FAULTLAB_BENCH_DRILL_SKIP="left out of the quick run" \
        FAULTLAB_BENCH_NODE="$EVERYTHING_NODE_BIN" \
        FAULTLAB_BENCH_EVERYTHING="$EVERYTHING_JS" \
        FAULTLAB_BENCH_JSON="$OUT/$bench.json" \
        cargo test --locked -q --workspace --bench "$bench" </dev/null >"$OUT/$bench.md"
    python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$OUT/$bench.json" \
        || die "the $bench bench wrote no valid JSON report"
    log "$bench ran ($(wc -l <"$OUT/$bench.md") lines of report)"
done
