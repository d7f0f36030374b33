#!/usr/bin/env bash
# The proxy's stream and session faults on a real server's stream: `faultlab proxy` over HTTP in front of the Node
# reference server @modelcontextprotocol/server-everything (streamableHttp mode), with three rules on its `echo`
# tool, checked with curl on the wire:
#   1. stream_cut: the first call's response is primed (`id: 0-0`, `retry: 3000`) and ends before the reply; a GET
#      with `Last-Event-ID: 0-0` replays the reply (`id: 0-1`) from the proxy's log;
#   2. stream_replay foreign: the second call is cut after its priming event; its resume first sends the first
#      stream's last message (`id: 0-1`, the reply to call 1), then its own reply (`id: 1-1`);
#   3. resume_refused 405: the resume of the cut stream is answered 405;
#   4. stream_retry retry_ms 0: the priming event says `retry: 0`, the stream ends before the reply, a resume has it;
#   5. stream_cut ids false: the stream ends before the reply with no event id, so nothing can be resumed;
#   6. stream_cut_again: the first resume is answered 200 and closed before any event, the second has the reply;
#   7. session_lifecycle get_404: the call gets its result; a GET stream for the session then gets 404 -32001;
#   8. session_lifecycle unknown_400: the call gets its result; the session's next request gets 400 -32600.
# Not here (echo sends one message, so they have nothing to act on): stream_replay duplicate and empty_event_id,
# which the proxy's wire tests (crates/faultlab-proxy/tests/it/stream_faults.rs) check byte for byte.
# server-everything and Node are installed, pinned, under git-ignored .cache/ by scripts/lib/everything-tools.sh.
# Everything started is stopped on exit.
#
# Environment: FAULTLAB_BIN (default: the debug build), STARTUP_TIMEOUT (seconds, default 30).
# Prints one line per check, then `N passed, M failed`. Exits 0 when every check passed, 1 when one failed, 2 when
# the run could not be set up.
set -euo pipefail

# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# shellcheck source=scripts/lib/everything-tools.sh
source "$ROOT/scripts/lib/everything-tools.sh"
# shellcheck source=scripts/lib/process-wait.sh
source "$ROOT/scripts/lib/process-wait.sh"
STARTUP_TIMEOUT="${STARTUP_TIMEOUT:-30}"
export NO_PROXY="127.0.0.1,localhost,::1" no_proxy="127.0.0.1,localhost,::1"
CHECKS=14

EVERYTHING_PID=""
PROXY_PID=""
passed=0
failed=0
DIR="$(mktemp -d)"
# shellcheck disable=SC2317 # run by the EXIT trap
on_exit() {
    local status=$?
    [[ -z "$PROXY_PID" ]] || stop_job "$PROXY_PID" "faultlab proxy"
    [[ -z "$EVERYTHING_PID" ]] || stop_job "$EVERYTHING_PID" "server-everything"
    rm -rf "$DIR"
    summary_on_exit "$status" "$CHECKS" "$passed"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

install_everything
verify_everything
resolve_faultlab_bin

port="$("$EVERYTHING_NODE_BIN" -e '
    const s = require("net").createServer();
    s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });' </dev/null)"
PORT="$port" "$EVERYTHING_NODE_BIN" "$EVERYTHING_JS" streamableHttp </dev/null >"$DIR/everything.out" 2>"$DIR/everything.err" &
EVERYTHING_PID=$!
wait_for_line "$EVERYTHING_PID" "$DIR/everything.err" "s/^MCP Streamable HTTP Server listening on port \\($port\\)\$/\\1/p" \
    "$STARTUP_TIMEOUT" >/dev/null || { cat "$DIR/everything.err" >&2; die "server-everything did not start"; }

cat >"$DIR/rules.yaml" <<'YAML'
seed: 1
rules:
  - {name: cut, match: {tool: echo, nth: 1}, fault: {type: stream_cut}}
  - {name: foreign, match: {tool: echo, nth: 2}, fault: {type: stream_replay, variant: foreign}}
  - {name: refused, match: {tool: echo, nth: 3}, fault: {type: resume_refused, status: 405}}
  - {name: retry0, match: {tool: echo, nth: 4}, fault: {type: stream_retry, retry_ms: 0}}
  - {name: noids, match: {tool: echo, nth: 5}, fault: {type: stream_cut, ids: false}}
  - {name: again, match: {tool: echo, nth: 6}, fault: {type: stream_cut_again}}
  - {name: get404, match: {tool: echo, nth: 7}, fault: {type: session_lifecycle, variant: get_404}}
  - {name: lifecycle, match: {tool: echo, nth: 8}, fault: {type: session_lifecycle, variant: unknown_400}}
YAML
"$FAULTLAB_BIN" proxy --listen 127.0.0.1:0 --upstream "http://127.0.0.1:$port/mcp" --rules "$DIR/rules.yaml" \
    </dev/null >"$DIR/proxy.out" 2>"$DIR/proxy.err" &
PROXY_PID=$!
URL="$(wait_for_line "$PROXY_PID" "$DIR/proxy.err" 's#^faultlab: proxy listening at \(http://[^[:space:]]*\) for .*#\1#p' \
    "$STARTUP_TIMEOUT")" || { cat "$DIR/proxy.err" >&2; die "faultlab proxy did not start"; }
log "proxy at $URL in front of server-everything on port $port"

VERSION=2025-11-25
# post BODY [SESSION]: the response's headers in $DIR/h, its body on stdout.
post() {
    local session=()
    [[ -z "${2:-}" ]] || session=(-H "mcp-session-id: $2" -H "mcp-protocol-version: $VERSION")
    curl -sS --max-time 10 -D "$DIR/h" -H 'content-type: application/json' \
        -H 'accept: application/json, text/event-stream' "${session[@]}" --data "$1" "$URL" || true
}
# resume SESSION LAST_EVENT_ID: the GET's body on stdout, its headers in $DIR/h.
resume() {
    curl -sS --max-time 10 -D "$DIR/h" -H 'accept: text/event-stream' -H "mcp-session-id: $1" \
        -H "mcp-protocol-version: $VERSION" -H "last-event-id: $2" "$URL" || true
}
call() {
    printf '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"echo","arguments":{"message":"%s"}}}' "$1" "$2"
}
# check NAME CONDITION_STATUS DETAIL
check() {
    if [[ "$2" == 0 ]]; then
        passed=$((passed + 1))
        echo "ok      $1"
    else
        failed=$((failed + 1))
        echo "FAILED  $1: $3"
    fi
}
# An event with id ID whose data contains TEXT, in BODY (events separated by blank lines).
has_event() { awk -v RS='' -v id="id: $2" -v text="$3" 'index($0, id "\n") && index($0, text) { found = 1 } END { exit !found }' <<<"$1"; }

init='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"proxy-streams","version":"1"}}}'
post "$init" >/dev/null
SESSION="$(sed -n 's/^mcp-session-id: *\([^[:space:]]*\).*/\1/ip' "$DIR/h")"
[[ -n "$SESSION" ]] || die "server-everything gave no session id"
post '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$SESSION" >/dev/null

cut="$(post "$(call 1 one)" "$SESSION")"
[[ "$cut" == $'id: 0-0\nretry: 3000\ndata: '* && "$cut" != *"Echo: one"* ]] && rc=0 || rc=1
check "stream_cut: primed, ended before the reply" "$rc" "$cut"
replayed="$(resume "$SESSION" 0-0)"
has_event "$replayed" 0-1 "Echo: one" && rc=0 || rc=1
check "stream_cut: Last-Event-ID 0-0 replays the reply as 0-1" "$rc" "$replayed"

foreign_cut="$(post "$(call 2 two)" "$SESSION")"
[[ "$foreign_cut" == $'id: 1-0\nretry: 3000\ndata: '* && "$foreign_cut" != *"Echo: two"* ]] && rc=0 || rc=1
check "stream_replay foreign: cut after priming" "$rc" "$foreign_cut"
foreign="$(resume "$SESSION" 1-0)"
first="$(awk -v RS='' 'NR == 1' <<<"$foreign")"
has_event "$first" 0-1 "Echo: one" && has_event "$foreign" 1-1 "Echo: two" && rc=0 || rc=1
check "stream_replay foreign: the other stream's reply first, then its own" "$rc" "$foreign"

status_line() { sed -n '1s/^HTTP\/[0-9.]* \([0-9]*\).*/\1/p' "$DIR/h"; }

refused_cut="$(post "$(call 3 three)" "$SESSION")"
refused="$(resume "$SESSION" 2-0)"
status="$(status_line)"
[[ "$refused_cut" == $'id: 2-0\n'* && "$refused_cut" != *"Echo: three"* && "$status" == 405 ]] && rc=0 || rc=1
check "resume_refused 405: cut, and its resume answered 405" "$rc" "$refused_cut / $status $refused"

retry0="$(post "$(call 4 four)" "$SESSION")"
[[ "$retry0" == $'id: 3-0\nretry: 0\ndata: '* && "$retry0" != *"Echo: four"* ]] && rc=0 || rc=1
check "stream_retry 0: primed with retry: 0, ended before the reply" "$rc" "$retry0"
retry0_resumed="$(resume "$SESSION" 3-0)"
has_event "$retry0_resumed" 3-1 "Echo: four" && rc=0 || rc=1
check "stream_retry 0: the resume has the reply" "$rc" "$retry0_resumed"

noids="$(post "$(call 5 five)" "$SESSION")"
status="$(status_line)"
[[ "$status" == 200 && "$noids" != *"id:"* && "$noids" != *"Echo: five"* ]] && rc=0 || rc=1
check "stream_cut ids false: ended before the reply with no event id" "$rc" "$status $noids"

again_cut="$(post "$(call 6 six)" "$SESSION")"
again_first="$(resume "$SESSION" 5-0)"
status="$(status_line)"
[[ "$again_cut" == $'id: 5-0\n'* && "$status" == 200 && "$again_first" != *"data:"* ]] && rc=0 || rc=1
check "stream_cut_again: the first resume closes before any event" "$rc" "$again_cut / $status $again_first"
again_second="$(resume "$SESSION" 5-0)"
has_event "$again_second" 5-1 "Echo: six" && rc=0 || rc=1
check "stream_cut_again: the second resume has the reply" "$rc" "$again_second"

get404_call="$(post "$(call 7 seven)" "$SESSION")"
get404="$(curl -sS --max-time 10 -D "$DIR/h" -H 'accept: text/event-stream' -H "mcp-session-id: $SESSION" \
    -H "mcp-protocol-version: $VERSION" "$URL" || true)"
status="$(status_line)"
[[ "$get404_call" == *"Echo: seven"* && "$status" == 404 && "$(jq -r .error.code <<<"$get404")" == -32001 ]] && rc=0 || rc=1
check "session_lifecycle get_404: the call answered, the session's GET stream 404 -32001" "$rc" "$get404_call / $status $get404"

result="$(post "$(call 8 eight)" "$SESSION")"
[[ "$result" == *"Echo: eight"* ]] && rc=0 || rc=1
check "session_lifecycle unknown_400: the call gets its result" "$rc" "$result"
after="$(post '{"jsonrpc":"2.0","id":9,"method":"tools/list"}' "$SESSION")"
status="$(sed -n '1s/^HTTP\/[0-9.]* \([0-9]*\).*/\1/p' "$DIR/h")"
[[ "$status" == 400 && "$(jq -r .error.code <<<"$after")" == -32600 ]] && rc=0 || rc=1
check "session_lifecycle unknown_400: the session's next request gets 400 -32600" "$rc" "$status $after"
fresh="$(post "$init")"
[[ "$fresh" == *'"protocolVersion"'* ]] && rc=0 || rc=1
check "a new session after it" "$rc" "$fresh"

print_summary "$passed" "$failed"
[[ "$failed" == 0 ]]
