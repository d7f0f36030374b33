#!/usr/bin/env bash
# Transparency check of `faultlab proxy` over HTTP: runs every server scenario of the official MCP conformance
# suite against the Node reference server @modelcontextprotocol/server-everything (streamableHttp mode), once
# directly and once through `faultlab proxy --listen 127.0.0.1:0 --upstream <server>` without rules, and compares
# the two runs scenario by scenario: the outcome (pass/fail/timeout) and, for every check that is not INFO, its
# status and its error message (ports, UUIDs and durations masked).
#
# Tools are installed, pinned, under git-ignored .cache/ on first use (idempotent):
#   - Node.js and @modelcontextprotocol/conformance under .cache/node, by scripts/lib/conformance-tools.sh
#   - Node.js and @modelcontextprotocol/server-everything under .cache/node, by
#     scripts/lib/everything-tools.sh (shared with scripts/bench-serve.sh)
#
# Each mode gets a fresh server-everything on a free loopback port (sessions and subscriptions live in it); the
# proxied mode puts a fresh proxy in front of it. Everything started is stopped on exit.
#
# Environment:
#   FAULTLAB_BIN        faultlab binary to test, taken as is; when unset, target/debug/faultlab (built with
#                       `cargo build -p faultlab` if it does not exist yet)
#   SCENARIOS           space-separated scenario names to run (default: every scenario of `conformance list --server`)
#   SUITE_TIMEOUT       seconds allowed for the whole suite's run in one mode (default 300)
#   STARTUP_TIMEOUT     seconds to wait for a server's or the proxy's listening line (default 30)
#
# Prints a table `scenario  direct  proxied  same?`, then `N passed, M failed` alone on a line, where a pass is a
# scenario whose result is the same both ways. Scenarios listed in EXCLUDED below differ by design when the
# difference is exactly the documented one (checked, not assumed); they are named with their reason and counted
# in neither number. An excluded scenario that differs in any other way fails like any other.
# Exits 0 when every other scenario is the same both ways, 1 when one differs, 2 when the run could not be set up.
set -euo pipefail

# Scenarios whose proxied result may differ from the direct one by design, with the reason, and a check (the
# function expected_difference_<name with - as _>) that the difference is exactly the documented one.
declare -A EXCLUDED=(
    [dns-rebinding-protection]="server-everything accepts any Host/Origin (plain express + StreamableHTTPServerTransport, enableDnsRebindingProtection off); faultlab proxy refuses a non-loopback Host/Origin itself with 403 before forwarding, so the proxied run passes where the direct one fails: the proxy is more protective than its upstream, not less transparent"
)

# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

# shellcheck source=scripts/lib/conformance-tools.sh
source "$ROOT/scripts/lib/conformance-tools.sh"
# shellcheck source=scripts/lib/everything-tools.sh
source "$ROOT/scripts/lib/everything-tools.sh"
SUITE_TIMEOUT="${SUITE_TIMEOUT:-300}"
STARTUP_TIMEOUT="${STARTUP_TIMEOUT:-30}"
export CI="${CI:-true}"
# Loopback only, never through a proxy from the environment (reqwest in faultlab honours these variables too).
export NO_PROXY="127.0.0.1,localhost,::1" no_proxy="127.0.0.1,localhost,::1"
START_SECONDS=$SECONDS

# ---------------------------------------------------------------- processes and cleanup
EVERYTHING_PID=""
PROXY_PID=""

# shellcheck source=scripts/lib/process-wait.sh
source "$ROOT/scripts/lib/process-wait.sh"

# stop_pid PID NAME: SIGTERM, up to 10 s, then SIGKILL; sets STOP_STATUS to the exit status.
stop_pid() {
    local pid="$1" name="$2" started
    [[ -n "$pid" ]] || { STOP_STATUS=""; return 0; }
    started=$(date +%s%N)
    stop_job "$pid" "$name"
    log "$name (pid $pid) stopped with status $STOP_STATUS in $((($(date +%s%N) - started) / 1000000)) ms"
}

stop_proxy() {
    stop_pid "$PROXY_PID" "faultlab proxy"
    PROXY_STATUS="$STOP_STATUS"
    PROXY_PID=""
}

stop_everything() {
    stop_pid "$EVERYTHING_PID" "server-everything"
    EVERYTHING_PID=""
}

passed=0
SCENARIO_LIST=()
# shellcheck disable=SC2317 # run by the EXIT trap
on_exit() {
    local status=$?
    stop_proxy
    stop_everything
    summary_on_exit "$status" "${#SCENARIO_LIST[@]}" "$passed"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# wait_for_line_of PID LOGFILE SED_EXPR WHAT: echoes the first capture of SED_EXPR in LOGFILE once it appears.
wait_for_line_of() {
    local pid="$1" file="$2" expr="$3" what="$4"
    if ! wait_for_line "$pid" "$file" "$expr" "$STARTUP_TIMEOUT"; then
        if kill -0 "$pid" 2>/dev/null; then
            log "no listening line from $what within ${STARTUP_TIMEOUT}s:"
        else
            log "$what exited before printing its listening line:"
        fi
        sed 's/^/    /' "$file" >&2 || true
        return 1
    fi
}

# A free TCP port on 127.0.0.1 (server-everything takes its port from PORT and cannot report one it chose).
free_port() {
    "$NODE_BIN" -e '
        const s = require("net").createServer();
        s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });
    ' </dev/null
}

# start_everything DIR: a fresh server-everything; sets EVERYTHING_PID and EVERYTHING_URL. Retries on a lost
# port race.
start_everything() {
    local dir="$1" attempt port
    for attempt in 1 2 3; do
        port="$(free_port)"
        : >"$dir/everything.stderr"
        PORT="$port" "$EVERYTHING_NODE_BIN" "$EVERYTHING_JS" streamableHttp \
            </dev/null >"$dir/everything.stdout" 2>"$dir/everything.stderr" &
        EVERYTHING_PID=$!
        if wait_for_line_of "$EVERYTHING_PID" "$dir/everything.stderr" \
            "s/^MCP Streamable HTTP Server listening on port \\($port\\)\$/\\1/p" "server-everything" >/dev/null; then
            EVERYTHING_URL="http://127.0.0.1:$port/mcp"
            log "server-everything listening at $EVERYTHING_URL (pid $EVERYTHING_PID)"
            return 0
        fi
        stop_everything
        log "server-everything did not start on port $port (attempt $attempt of 3)"
    done
    die "could not start server-everything"
}

# start_proxy DIR UPSTREAM: sets PROXY_PID and PROXY_URL.
start_proxy() {
    local dir="$1" upstream="$2"
    : >"$dir/proxy.stderr"
    "$FAULTLAB_BIN" proxy --listen 127.0.0.1:0 --upstream "$upstream" --record "$dir/proxy.trajectory.jsonl" \
        </dev/null >"$dir/proxy.stdout" 2>"$dir/proxy.stderr" &
    PROXY_PID=$!
    PROXY_URL="$(wait_for_line_of "$PROXY_PID" "$dir/proxy.stderr" \
        's#^faultlab: proxy listening at \(http://[^[:space:]]*\) for .*#\1#p' "faultlab proxy")" \
        || die "could not start faultlab proxy"
    log "faultlab proxy listening at $PROXY_URL for $upstream (pid $PROXY_PID)"
}

# ---------------------------------------------------------------- tools
install_tools
verify_tools
install_everything
verify_everything

# ---------------------------------------------------------------- binary
resolve_faultlab_bin

# ---------------------------------------------------------------- scenarios
if [[ -n "${SCENARIOS:-}" ]]; then
    read -r -a SCENARIO_LIST <<<"$SCENARIOS"
else
    # Every server scenario the suite knows (the active suite and the pending ones alike).
    mapfile -t SCENARIO_LIST < <("$NODE_BIN" "$CONFORMANCE_JS" list --server </dev/null \
        | sed -n 's/^  - \([A-Za-z0-9._-]*\).*/\1/p')
fi
[[ ${#SCENARIO_LIST[@]} -gt 0 ]] || die "no server scenarios listed by the conformance suite"
log "${#SCENARIO_LIST[@]} server scenarios: ${SCENARIO_LIST[*]}"

RUN_DIR="$ROOT/.cache/conformance-proxy/run-$(date -u +%Y%m%dT%H%M%SZ)-$$"
mkdir -p "$RUN_DIR/direct" "$RUN_DIR/proxied"

# checks_file DIR: the checks.json the suite wrote under DIR (empty when none).
checks_file() { find "$1" -name checks.json -print -quit 2>/dev/null; }

# signature CHECKS_JSON: the checks that carry a verdict (not INFO), as sorted `id=STATUS`, one line.
# signature CHECKS_JSON messages: the same with each check's error message, normalised (ports, UUIDs and
# durations vary from run to run), as sorted `id=STATUS:"message"`.
# shellcheck disable=SC2016 # JavaScript in single quotes
signature() {
    local file="$1" with="${2:-}"
    if [[ -z "$file" ]]; then
        echo "(no checks.json)"
        return 0
    fi
    "$NODE_BIN" -e '
        const checks = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
        const norm = m => String(m)
            .replace(/(localhost|127\.0\.0\.1|\[::1\]):\d+/g, "$1:PORT")
            .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, "UUID")
            .replace(/\d+(\.\d+)?\s*ms\b/g, "Nms");
        const key = c => `${c.id}=${c.status}` + (process.argv[2] && c.errorMessage ? `:${JSON.stringify(norm(c.errorMessage))}` : "");
        console.log(checks.filter(c => c.status !== "INFO").map(key).sort().join(" ") || "(no verdict checks)");
    ' "$file" "$with" </dev/null || echo "(unreadable checks.json)"
}

declare -A OUTCOME SIG MSIG CHECKS
# run_mode MODE URL: runs the whole suite (active and pending scenarios) against URL in one run of the CLI (one Node
# start, not one per scenario), then fills OUTCOME, SIG and CHECKS for MODE from each scenario's checks.json: a
# scenario fails when one of its checks is a FAILURE; one without a checks.json timed out (the run did) or erred.
run_mode() {
    local mode="$1" url="$2" scenario rc=0 checks
    local out_dir="$RUN_DIR/$mode"
    timeout --kill-after=5 "$SUITE_TIMEOUT" \
        "$NODE_BIN" "$CONFORMANCE_JS" server --url "$url" --suite all -o "$out_dir" \
        </dev/null >"$out_dir/output.txt" 2>&1 || rc=$?
    for scenario in "${SCENARIO_LIST[@]}"; do
        # The CLI names each scenario's folder server-<scenario>-<timestamp>.
        checks="$(find "$out_dir" -maxdepth 2 -path "$out_dir/server-$scenario-20*/checks.json" -print -quit)"
        if [[ -z "$checks" ]]; then
            case $rc in
                124 | 137) OUTCOME[$mode,$scenario]="timeout" ;;
                *) OUTCOME[$mode,$scenario]="error($rc)" ;;
            esac
        elif grep -q '"status": *"FAILURE"' "$checks"; then
            OUTCOME[$mode,$scenario]="fail"
        else
            OUTCOME[$mode,$scenario]="pass"
        fi
        CHECKS[$mode,$scenario]="$checks"
        SIG[$mode,$scenario]="$(signature "$checks")"
        MSIG[$mode,$scenario]="$(signature "$checks" messages)"
        log "$mode $scenario: ${OUTCOME[$mode,$scenario]} [${SIG[$mode,$scenario]}]"
    done
}

# diff_checks DIRECT_JSON PROXIED_JSON: the full detail of every verdict check whose id=status is not found the
# other way.
# shellcheck disable=SC2016 # JavaScript in single quotes
diff_checks() {
    "$NODE_BIN" -e '
        const fs = require("fs");
        const load = f => { try { return JSON.parse(fs.readFileSync(f, "utf8")); } catch { return []; } };
        const [d, p] = [load(process.argv[1]), load(process.argv[2])];
        const key = c => `${c.id}=${c.status}:${c.errorMessage ?? ""}`;
        const only = (a, b, name) => a.filter(c => c.status !== "INFO" && !b.some(o => key(o) === key(c)))
            .forEach(c => console.log(`    only ${name}: ${JSON.stringify({id: c.id, status: c.status, errorMessage: c.errorMessage, details: c.details})}`));
        only(d, p, "direct"); only(p, d, "proxied");
    ' "${1:-/dev/null}" "${2:-/dev/null}" </dev/null || true
}

# Documented difference of dns-rebinding-protection: every check the same both ways except
# localhost-host-rebinding-rejected, which the upstream fails with a 2xx and the proxy passes with its own 403.
# shellcheck disable=SC2016,SC2317 # JavaScript in single quotes; called by name from the comparison below
expected_difference_dns_rebinding_protection() {
    local direct="$1" proxied="$2"
    [[ -n "$direct" && -n "$proxied" ]] || { echo "a checks.json is missing"; return 1; }
    "$NODE_BIN" -e '
        const fs = require("fs");
        const [direct, proxied] = process.argv.slice(1).map(f => JSON.parse(fs.readFileSync(f, "utf8")));
        const id = "localhost-host-rebinding-rejected";
        const rest = cs => cs.filter(c => c.status !== "INFO" && c.id !== id).map(c => `${c.id}=${c.status}`).sort().join(" ");
        const d = direct.find(c => c.id === id), p = proxied.find(c => c.id === id);
        const problems = [];
        if (rest(direct) !== rest(proxied)) problems.push(`other checks differ: direct [${rest(direct)}] proxied [${rest(proxied)}]`);
        if (!d || d.status !== "FAILURE" || !(d.details?.statusCode >= 200 && d.details?.statusCode < 300))
            problems.push(`direct ${id} is not a FAILURE with a 2xx: ${JSON.stringify(d)}`);
        const msg = p?.details?.body?.error?.message ?? "";
        if (!p || p.status !== "SUCCESS" || p.details?.statusCode !== 403 || !msg.startsWith("Forbidden: Host header is not an allowed loopback host"))
            problems.push(`proxied ${id} is not the 403 the proxy gives itself: ${JSON.stringify(p)}`);
        if (problems.length) { console.log(problems.join("; ")); process.exit(1); }
        console.log(`direct: upstream answered ${d.details.statusCode} to Host ${d.details.hostHeader}; proxied: the proxy answered 403 "${msg}"`);
    ' "$direct" "$proxied" </dev/null
}

# ---------------------------------------------------------------- direct
log "mode direct: a fresh server-everything, the suite talks to it"
start_everything "$RUN_DIR/direct"
DIRECT_URL="$EVERYTHING_URL"
run_mode direct "$DIRECT_URL"
stop_everything

# ---------------------------------------------------------------- proxied
log "mode proxied: a fresh server-everything behind a fresh faultlab proxy without rules"
start_everything "$RUN_DIR/proxied"
UPSTREAM_URL="$EVERYTHING_URL"
start_proxy "$RUN_DIR/proxied" "$UPSTREAM_URL"
run_mode proxied "$PROXY_URL"
stop_proxy
proxy_ok=1
[[ "$PROXY_STATUS" == "0" ]] || proxy_ok=0
stop_everything

# ---------------------------------------------------------------- compare
failed=0
excluded=()
declare -A SAME
details=""
for scenario in "${SCENARIO_LIST[@]}"; do
    d_out="${OUTCOME[direct,$scenario]}" p_out="${OUTCOME[proxied,$scenario]}"
    d_sig="${SIG[direct,$scenario]}" p_sig="${SIG[proxied,$scenario]}"
    d_msig="${MSIG[direct,$scenario]}" p_msig="${MSIG[proxied,$scenario]}"
    if [[ "$d_out" == "$p_out" && "$d_sig" == "$p_sig" && "$d_msig" == "$p_msig" ]]; then
        SAME[$scenario]="yes"
        passed=$((passed + 1))
        continue
    fi
    if [[ "$d_out" != "$p_out" ]]; then
        why="outcome"
    elif [[ "$d_sig" != "$p_sig" ]]; then
        why="checks"
    else
        why="messages"
    fi
    if [[ -n "${EXCLUDED[$scenario]:-}" ]]; then
        fn="expected_difference_${scenario//-/_}"
        if evidence="$($fn "${CHECKS[direct,$scenario]}" "${CHECKS[proxied,$scenario]}")"; then
            SAME[$scenario]="excluded"
            excluded+=("$scenario")
            details+="--- $scenario differs as documented ($evidence)"$'\n'
            continue
        fi
        details+="--- $scenario is excluded, but it does not differ as documented: $evidence"$'\n'
    fi
    SAME[$scenario]="NO ($why)"
    failed=$((failed + 1))
    details+="--- $scenario differs ($why)"$'\n'
    details+="    direct:  $d_out [$d_msig]"$'\n'
    details+="    proxied: $p_out [$p_msig]"$'\n'
    # The full detail of every check whose id=status is not found the other way.
    details+="$(diff_checks "${CHECKS[direct,$scenario]}" "${CHECKS[proxied,$scenario]}")"$'\n'
done

echo "=== conformance server scenarios: direct ($DIRECT_URL) vs proxied ($PROXY_URL -> $UPSTREAM_URL) ==="
echo "(logs and checks.json in ${RUN_DIR#"$ROOT"/})"
if [[ -n "$details" ]]; then
    printf '%s' "$details"
fi
echo
printf '%-32s %-10s %-10s %s\n' "scenario" "direct" "proxied" "same?"
for scenario in "${SCENARIO_LIST[@]}"; do
    printf '%-32s %-10s %-10s %s\n' "$scenario" "${OUTCOME[direct,$scenario]}" "${OUTCOME[proxied,$scenario]}" \
        "${SAME[$scenario]}"
done
echo
for scenario in "${excluded[@]}"; do
    echo "excluded: $scenario: ${EXCLUDED[$scenario]}"
done
if [[ $proxy_ok -eq 1 ]]; then
    echo "faultlab proxy: exited 0 after SIGTERM"
else
    echo "faultlab proxy: exit status $PROXY_STATUS after SIGTERM (expected 0)"
fi
echo "time: $((SECONDS - START_SECONDS)) s"
print_summary "$passed" "$failed"
[[ $failed -eq 0 && $proxy_ok -eq 1 ]]
