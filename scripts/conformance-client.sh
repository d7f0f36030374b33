#!/usr/bin/env bash
# Runs the official MCP conformance suite's client scenarios against our reference client
# (crates/faultlab-client, driven by its example `conformance_client`).
#
# For each scenario the suite starts its own test server, then runs the client command with the server's URL
# appended as the last argument and MCP_CONFORMANCE_SCENARIO set to the scenario's name; it judges the scenario by
# the checks its server recorded, the client's exit status and whether the client finished within --timeout.
#
# Tools are installed, pinned, under .cache/node (git-ignored) on first use, by
# scripts/lib/conformance-tools.sh (shared with scripts/conformance.sh).
#
# Environment:
#   CONFORMANCE_CLIENT_BIN  client binary to test, taken as is; when unset, the script runs
#                           `cargo build --workspace --example conformance_client` and uses what it built
#   CLIENT_TIMEOUT          milliseconds the suite allows the client per scenario (default 30000)
#   SCENARIO_TIMEOUT        seconds allowed per scenario, suite included (default 120)
#
# Prints one line per scenario, then `N passed, M failed` alone on a line.
# Exits non-zero if any scenario fails (or the tools or the client cannot be set up).
set -euo pipefail

SCENARIOS=(initialize tools_call)

# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

# shellcheck source=scripts/lib/conformance-tools.sh
source "$ROOT/scripts/lib/conformance-tools.sh"
CLIENT_TIMEOUT="${CLIENT_TIMEOUT:-30000}"
SCENARIO_TIMEOUT="${SCENARIO_TIMEOUT:-120}"

[[ "$CLIENT_TIMEOUT" =~ ^[1-9][0-9]*$ ]] || die "CLIENT_TIMEOUT must be a positive number of milliseconds"
[[ "$SCENARIO_TIMEOUT" =~ ^[1-9][0-9]*$ ]] || die "SCENARIO_TIMEOUT must be a positive number of seconds"

# ---------------------------------------------------------------- summary on any exit
passed=0
on_exit() {
    summary_on_exit "$?" "${#SCENARIOS[@]}" "$passed"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- tools
install_tools
verify_tools

# ---------------------------------------------------------------- client
RUN_DIR="$ROOT/.cache/conformance-client/run-$(date -u +%Y%m%dT%H%M%SZ)-$$"
mkdir -p "$RUN_DIR"

if [[ -n "${CONFORMANCE_CLIENT_BIN:-}" ]]; then
    # Taken as given (relative paths are relative to the caller's directory).
    CLIENT_BIN="$CONFORMANCE_CLIENT_BIN"
    if [[ "$CLIENT_BIN" != */* ]]; then
        CLIENT_BIN="$(command -v "$CLIENT_BIN" || true)"
        [[ -n "$CLIENT_BIN" ]] || die "CONFORMANCE_CLIENT_BIN is not on PATH"
    fi
    [[ "$CLIENT_BIN" == /* ]] || CLIENT_BIN="$CALLER_PWD/$CLIENT_BIN"
else
    # Default: the example's debug build, brought up to date (a no-op when fresh). Cargo names the executable it
    # built (wherever the target directory is) in its JSON messages.
    # --workspace: the features the whole workspace resolves, as the test build has them (with -p faultlab-client
    # alone, cargo would resolve fewer features and build every dependency again).
    log "building the client (cargo build --workspace --example conformance_client)"
    cargo build --workspace --example conformance_client --message-format=json-render-diagnostics \
        </dev/null >"$RUN_DIR/cargo-build.json"
    CLIENT_BIN="$("$NODE_BIN" -e '
        const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\n");
        for (const line of lines) {
            if (!line.startsWith("{")) continue;
            const m = JSON.parse(line);
            if (m.reason === "compiler-artifact" && m.target && m.target.name === "conformance_client"
                && m.target.kind.includes("example") && m.executable) console.log(m.executable);
        }
    ' "$RUN_DIR/cargo-build.json" </dev/null | tail -n 1)"
    [[ -n "$CLIENT_BIN" ]] || die "cargo reported no executable for the example conformance_client"
fi
[[ -x "$CLIENT_BIN" ]] || die "client binary not found or not executable: $CLIENT_BIN"
# The suite runs the command through a shell, with the URL appended: quote the path for that shell.
CLIENT_COMMAND="$(printf '%q' "$CLIENT_BIN")"
log "client: $CLIENT_BIN"

# ---------------------------------------------------------------- scenarios
# The suite's test servers listen on localhost; keep any proxy out of it.
export NO_PROXY="127.0.0.1,localhost,::1" no_proxy="127.0.0.1,localhost,::1"
export CI=true
declare -A RESULT
failed=0
for scenario in "${SCENARIOS[@]}"; do
    out_dir="$RUN_DIR/$scenario"
    run_conformance client "$scenario" "$out_dir" --command "$CLIENT_COMMAND" --timeout "$CLIENT_TIMEOUT"
    rc=$RC

    # The checks the suite's server recorded: every SUCCESS/FAILURE/WARNING check, by id. A pass needs the suite's
    # own pass (exit 0) and at least one successful check: a client that never reached the server would otherwise
    # leave a scenario like `initialize` with no checks at all, and no failure either.
    checks="$(find "$out_dir" -name checks.json -print -quit)"
    verdict="no checks.json"
    successes=0
    if [[ -n "$checks" ]]; then
        verdict="$("$NODE_BIN" -e '
            const checks = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
            const judged = checks.filter(c => c.status !== "INFO");
            const ok = judged.filter(c => c.status === "SUCCESS").length;
            console.log(ok + " " + (judged.map(c => c.id + "=" + c.status).join(", ") || "no judged checks"));
        ' "$checks" </dev/null)" || verdict="0 unreadable checks.json"
        successes="${verdict%% *}"
        verdict="${verdict#* }"
    fi
    if [[ $rc -eq 0 && $successes -gt 0 ]]; then
        RESULT[$scenario]="PASS ($verdict)"
        passed=$((passed + 1))
    else
        if [[ $rc -eq 124 || $rc -eq 137 ]]; then
            RESULT[$scenario]="FAIL (timed out after ${SCENARIO_TIMEOUT}s; $verdict)"
        elif [[ $rc -ne 0 ]]; then
            RESULT[$scenario]="FAIL (exit $rc; $verdict)"
        else
            RESULT[$scenario]="FAIL (suite passed, but no successful check: $verdict)"
        fi
        failed=$((failed + 1))
        if [[ -n "$checks" ]]; then
            echo "--- failing checks of $scenario (from $checks) ---"
            "$NODE_BIN" -e '
                const checks = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
                for (const c of checks.filter(c => c.status === "FAILURE" || c.status === "WARNING"))
                    console.log(JSON.stringify(c, null, 2));
            ' "$checks" </dev/null || true
        fi
    fi
done

echo
echo "=== summary (client $CLIENT_BIN, logs in ${RUN_DIR#"$ROOT"/}) ==="
for scenario in "${SCENARIOS[@]}"; do
    printf '%-28s %s\n' "$scenario" "${RESULT[$scenario]}"
done
print_summary "$passed" "$failed"
[[ $failed -eq 0 ]]
