#!/usr/bin/env bash
# Benchmarks `faultlab proxy` on stdio in front of the Node reference server @modelcontextprotocol/server-everything
# (crates/faultlab/benches/proxy.rs), against the same server direct, in one run: sequential tools/call round trips,
# pipelined throughput, latency-fault precision, and the delay a latency fault adds to unrelated concurrent calls.
# A benchmark, not a test: it prints figures and never fails on them.
#
# Installs, pinned, on first use (all under the git-ignored .cache/):
#   - Node.js and @modelcontextprotocol/server-everything, by scripts/lib/everything-tools.sh (.cache/bench-node)
#   - for scale, the Python relay mcp-drill (PyPI, `mcp-drill wrap`), pinned by version and wheel hash in a venv at
#     .cache/bench-proxy/drill-venv. If it cannot be installed or run, the bench says why and goes on without it.
#
# Then builds faultlab in release, copies the binary (so the bench measures exactly what
# `cargo build --release` produced, not a rebuild with dev-dependency features) and runs
# `cargo bench -p faultlab --bench proxy`.
#
# Environment:
#   FAULTLAB_BENCH_QUICK=1     tiny counts (seconds; proves the bench runs, figures mean nothing)
#   FAULTLAB_BENCH_JSON        where the JSON report goes (default target/bench/proxy.json)
#   FAULTLAB_BENCH_NO_DRILL=1  leave mcp-drill out
#   PYTHON                     the Python that creates mcp-drill's venv (default python3; 3.10 or newer)
set -euo pipefail

DRILL_VERSION=0.0.1
DRILL_SHA256=5fed478e5ecd6d4090573d9bcee6f9f7088e94fdf161a0a5aeb5811b93b27631 # mcp_drill-0.0.1-py3-none-any.whl

CALLER_PWD="$PWD"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

log() { printf 'bench-proxy: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 2; }

# shellcheck source=scripts/lib/everything-tools.sh
source "$ROOT/scripts/lib/everything-tools.sh"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
[[ "$TARGET_DIR" == /* ]] || TARGET_DIR="$CALLER_PWD/$TARGET_DIR"
[[ -z "${CARGO_TARGET_DIR:-}" ]] || export CARGO_TARGET_DIR="$TARGET_DIR"
JSON_OUT="${FAULTLAB_BENCH_JSON:-$TARGET_DIR/bench/proxy.json}"
[[ "$JSON_OUT" == /* ]] || JSON_OUT="$CALLER_PWD/$JSON_OUT" # the bench runs in crates/faultlab

DRILL_CACHE="$ROOT/.cache/bench-proxy"
DRILL_VENV="$DRILL_CACHE/drill-venv"
DRILL_BIN="$DRILL_VENV/bin/mcp-drill"
DRILL_STAMP="$DRILL_VENV/.bench-stamp"

# Installs mcp-drill into its venv unless the same pin and Python are there; prints nothing on success, or the reason
# it could not be had on stdout (then the bench runs without it).
install_drill() {
    local python="${PYTHON:-python3}" want lock_fd out
    command -v "$python" >/dev/null 2>&1 || { echo "no $python to create its venv"; return 0; }
    want="mcp-drill==$DRILL_VERSION sha256=$DRILL_SHA256 $("$python" -c 'import sys; print(sys.version.split()[0])' </dev/null)"
    if [[ -x "$DRILL_BIN" && -f "$DRILL_STAMP" && "$(cat "$DRILL_STAMP")" == "$want" ]]; then
        log "using $DRILL_VENV (mcp-drill $DRILL_VERSION already installed)"
        return 0
    fi
    mkdir -p "$DRILL_CACHE"
    exec {lock_fd}>"$ROOT/.cache/bench-proxy.lock"
    flock -w 900 "$lock_fd" || { echo "could not lock .cache/bench-proxy.lock within 900 s"; return 0; }
    if ! [[ -x "$DRILL_BIN" && -f "$DRILL_STAMP" && "$(cat "$DRILL_STAMP")" == "$want" ]]; then
        log "installing mcp-drill==$DRILL_VERSION (hash-pinned, no dependencies needed by 'wrap') into $DRILL_VENV"
        rm -rf "$DRILL_VENV"
        if ! out="$("$python" -m venv "$DRILL_VENV" 2>&1 </dev/null)"; then
            exec {lock_fd}>&-
            echo "python -m venv failed: ${out//$'\n'/ }"
            return 0
        fi
        # 'wrap' uses the standard library only; the package's one dependency (jsonschema) is for its 'scan' extra.
        printf 'mcp-drill==%s --hash=sha256:%s\n' "$DRILL_VERSION" "$DRILL_SHA256" >"$DRILL_CACHE/requirements.txt"
        if ! out="$(PIP_CACHE_DIR="$DRILL_CACHE/pip-cache" PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 \
            "$DRILL_VENV/bin/python" -m pip install --quiet --require-hashes --no-deps \
            -r "$DRILL_CACHE/requirements.txt" 2>&1 </dev/null)"; then
            exec {lock_fd}>&-
            echo "pip install mcp-drill==$DRILL_VERSION failed: $(tail -n 3 <<<"$out" | tr '\n' ' ')"
            return 0
        fi
        printf '%s\n' "$want" >"$DRILL_STAMP"
    fi
    exec {lock_fd}>&-
    local version
    if ! version="$("$DRILL_BIN" version </dev/null 2>&1)" || [[ "$version" != "$DRILL_VERSION" ]]; then
        echo "installed mcp-drill does not run (mcp-drill version said: ${version//$'\n'/ })"
        return 0
    fi
    log "mcp-drill $version ($("$DRILL_VENV/bin/python" --version </dev/null 2>&1))"
}

# ---------------------------------------------------------------- tools
install_everything
verify_everything
DRILL_SKIP=""
if [[ "${FAULTLAB_BENCH_NO_DRILL:-}" == 1 ]]; then
    DRILL_SKIP="left out (FAULTLAB_BENCH_NO_DRILL=1)"
else
    DRILL_SKIP="$(install_drill)"
fi
if [[ -n "$DRILL_SKIP" ]]; then
    log "mcp-drill skipped: $DRILL_SKIP"
    DRILL_ARG=""
else
    DRILL_ARG="$DRILL_BIN"
fi

# ---------------------------------------------------------------- build
log "building faultlab (cargo build --release -p faultlab)"
build_start=$SECONDS
cargo build --release -p faultlab </dev/null >&2
log "release build took $((SECONDS - build_start)) s"
mkdir -p "$TARGET_DIR/bench"
cp "$TARGET_DIR/release/faultlab" "$TARGET_DIR/bench/faultlab-proxy-bench"

# ---------------------------------------------------------------- run
log "running cargo bench -p faultlab --bench proxy${FAULTLAB_BENCH_QUICK:+ (FAULTLAB_BENCH_QUICK=$FAULTLAB_BENCH_QUICK)}"
bench_start=$SECONDS
FAULTLAB_BENCH_BIN="$TARGET_DIR/bench/faultlab-proxy-bench" \
    FAULTLAB_BENCH_NODE="$EVERYTHING_NODE_BIN" \
    FAULTLAB_BENCH_EVERYTHING="$EVERYTHING_JS" \
    FAULTLAB_BENCH_DRILL="$DRILL_ARG" \
    FAULTLAB_BENCH_DRILL_SKIP="$DRILL_SKIP" \
    FAULTLAB_BENCH_JSON="$JSON_OUT" \
    cargo bench -p faultlab --bench proxy </dev/null
log "cargo bench (including its build) took $((SECONDS - bench_start)) s"
