#!/usr/bin/env bash
# The proxy's stream and session faults on a real server's stream: `faultlab proxy` over HTTP in front of the Node
# reference server @modelcontextprotocol/server-everything (streamableHttp mode), checked with curl on the wire.
# Rules on its `echo` tool (one message, the reply; a table of rows below):
#   1. stream_cut: the first call's response is primed (`id: 0-0`, `retry: 3000`) and ends before the reply; a GET
#      with `Last-Event-ID: 0-0` replays the reply (`id: 0-1`) from the proxy's log;
#   2. stream_replay foreign: the second call is cut after its priming event; its resume first sends the first
#      stream's last message (`id: 0-1`, the reply to call 1), then its own reply (`id: 1-1`);
#   3. resume_refused 405: the resume of the cut stream is answered 405;
#   4. stream_retry retry_ms 0: the priming event says `retry: 0`, the stream ends before the reply, a resume has it;
#   5. stream_cut ids false: the stream ends before the reply with no event id, so nothing can be resumed;
#   6. stream_cut_again: the first resume is answered 200 and closed before any event, the second has the reply.
# Rules on `trigger-long-running-operation` with a progressToken (progress notifications, then the result, on the
# call's own stream):
#   7. stream_replay duplicate: cut after the first notification; the resume sends that event again (same id, same
#      data) before the others and the result;
#   8. empty_event_id: the first notification carries an explicit empty `id:` line, then the stream is cut.
# And on `echo` again:
#   9. session_lifecycle get_404: the call gets its result; a GET stream for the session then gets 404 -32001;
#  10. session_lifecycle unknown_400: the call gets its result; the session's next request gets 400 -32600.
# Then, each on a new session: stream_lost on the long-running tool (progress, the stream breaks before the result,
# its resume 404); resume_refused 404; session_expired_in_flight (the call 404 -32001, the session gone);
# session_lifecycle restart (this session and another forgotten) and reinit_404 (3 initializes refused, then one
# served).
# The proxy's trajectory (stderr) is checked too: a cut reply's `delivery` names the resume that carried it.
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
CHECKS=21

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
  - {name: duplicate, match: {tool: trigger-long-running-operation, nth: 1}, fault: {type: stream_replay, variant: duplicate}}
  - {name: emptyid, match: {tool: trigger-long-running-operation, nth: 2}, fault: {type: empty_event_id}}
  - {name: lost, match: {tool: trigger-long-running-operation, nth: 3}, fault: {type: stream_lost}}
  - {name: refused404, match: {tool: echo, nth: 9}, fault: {type: resume_refused, status: 404}}
  - {name: inflight, match: {tool: echo, nth: 10}, fault: {type: session_expired_in_flight}}
  - {name: restart, match: {tool: echo, nth: 11}, fault: {type: session_lifecycle, variant: restart}}
  - {name: reinit, match: {tool: echo, nth: 12}, fault: {type: session_lifecycle, variant: reinit_404}}
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

# The echo calls' stream faults, one row per step, in the order the rules fire (each numbers its stream, 0 up):
#   fault | echo call (id and message; - for none) | how its stream begins (printf %b; - for: no id line at
#   all) | resume Last-Event-ID (-
#   for none) | what the resume answers: `event ID TEXT` (an event with that id and text), `first ID TEXT, event
#   ID TEXT` (that event first, the other after), `status N` (no stream), `empty` (200, closed before any event)
# A row with a call adds the check that its stream begins as shown and ends before the reply `Echo: <message>`; a
# row with a resume adds the check of what it answers.
ECHO_STEPS=(
    "stream_cut|1 one|id: 0-0\nretry: 3000\ndata: |0-0|event 0-1 Echo: one"
    "stream_replay foreign|2 two|id: 1-0\nretry: 3000\ndata: |1-0|first 0-1 Echo: one, event 1-1 Echo: two"
    "resume_refused 405|3 three|id: 2-0\n|2-0|status 405"
    "stream_retry 0|4 four|id: 3-0\nretry: 0\ndata: |3-0|event 3-1 Echo: four"
    "stream_cut ids false|5 five|-|-|-"
    "stream_cut_again|6 six|id: 5-0\n|5-0|empty"
    "stream_cut_again (second resume)|-|-|5-0|event 5-1 Echo: six"
)
status_line() { sed -n '1s/^HTTP\/[0-9.]* \([0-9]*\).*/\1/p' "$DIR/h"; }
# expect_resume ANSWER STATUS EXPECTATION: whether a resume's answer is as the row's last column says.
expect_resume() {
    local answer="$1" status="$2" id text
    case "$3" in
        event\ *)
            read -r _ id text <<<"$3"
            has_event "$answer" "$id" "$text"
            ;;
        first\ *)
            local first second
            first="${3#first }" && second="${first#*, event }" && first="${first%%, event *}"
            read -r id text <<<"$first"
            has_event "$(awk -v RS='' 'NR == 1' <<<"$answer")" "$id" "$text" || return 1
            read -r id text <<<"$second"
            has_event "$answer" "$id" "$text"
            ;;
        status\ *) [[ "$status" == "${3#status }" ]] ;;
        empty) [[ "$status" == 200 && "$answer" != *"data:"* ]] ;;
        *) return 1 ;;
    esac
}
for row in "${ECHO_STEPS[@]}"; do
    IFS='|' read -r fault call begins from expect <<<"$row"
    if [[ "$call" != - ]]; then
        read -r call_id message <<<"$call"
        body="$(post "$(call "$call_id" "$message")" "$SESSION")"
        status="$(status_line)"
        [[ "$begins" == - ]] && head="" || head="$(printf '%b' "$begins")"
        [[ "$status" == 200 && "$body" == "$head"* && "$body" != *"Echo: $message"* ]] && rc=0 || rc=1
        [[ "$begins" != - || "$body" != *"id:"* ]] || rc=1
        shown="begins ${begins//\\n/ }..."
        [[ "$begins" != - ]] || shown="no event id"
        check "$fault: $shown, ends before the reply" "$rc" "$status $body"
    fi
    if [[ "$from" != - ]]; then
        answer="$(resume "$SESSION" "$from")"
        status="$(status_line)"
        expect_resume "$answer" "$status" "$expect" && rc=0 || rc=1
        check "$fault: Last-Event-ID $from answered: $expect" "$rc" "$status $answer"
    fi
done

# The stream faults that need several messages on the call's stream: server-everything's
# trigger-long-running-operation sends a notifications/progress per step when the call has a progressToken, then
# its result (3 steps in 0.3 s here).
long_call() {
    printf '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"trigger-long-running-operation","arguments":{"duration":0.3,"steps":3},"_meta":{"progressToken":"p%s"}}}' "$1" "$1"
}
DONE_TEXT="Long running operation completed"
# event_block BODY ID: the event with id ID in BODY, as written (its lines, without the blank line after it).
event_block() { awk -v RS='' -v id="id: $2" 'index($0 "\n", id "\n") { print; exit }' <<<"$1"; }

# stream_replay duplicate: cut after the priming event and the first progress notification (6-1); the resume
# from 6-1 sends 6-1 again, the same event byte for byte, before 6-2, 6-3 and the result.
dup_cut="$(post "$(long_call 10)" "$SESSION")"
dup_first="$(event_block "$dup_cut" 6-1)"
[[ "$dup_cut" == $'id: 6-0\nretry: 3000\ndata: '* && "$dup_first" == *'"notifications/progress"'* &&
    "$dup_first" == *'"progress":1'* && "$dup_cut" != *"$DONE_TEXT"* ]] && rc=0 || rc=1
check "stream_replay duplicate: cut after its first progress notification (6-1)" "$rc" "$dup_cut"
dup_resumed="$(resume "$SESSION" 6-1)"
[[ -n "$dup_first" && "$(event_block "$dup_resumed" 6-1)" == "$dup_first" ]] &&
    has_event "$dup_resumed" 6-2 '"progress":2' && has_event "$dup_resumed" 6-4 "$DONE_TEXT" && rc=0 || rc=1
check "stream_replay duplicate: the resume from 6-1 sends 6-1 again (same data), then 6-2 .. the result 6-4" \
    "$rc" "$dup_resumed"

# empty_event_id: the first progress notification is sent with an explicit empty `id:` line, then the stream is
# cut; the result is still in the proxy's log for a resume from the priming event.
empty_cut="$(post "$(long_call 11)" "$SESSION")"
empty_event="$(awk -v RS='' 'NR == 2' <<<"$empty_cut")"
[[ "$empty_cut" == $'id: 7-0\nretry: 3000\ndata: '* && $'\n'"$empty_event"$'\n' == *$'\nid:\n'* &&
    "$empty_event" == *'"progress":1'* && "$empty_cut" != *"$DONE_TEXT"* ]] && rc=0 || rc=1
check "empty_event_id: the progress notification carries an empty id: line, then the cut" "$rc" "$empty_cut"
empty_resumed="$(resume "$SESSION" 7-0)"
has_event "$empty_resumed" 7-4 "$DONE_TEXT" && rc=0 || rc=1
check "empty_event_id: the result is kept for a resume (7-4)" "$rc" "$empty_resumed"

# The proxy's trajectory (its stderr) says which resume carried each cut stream's reply: call 1 on the first
# resume from 0-0, call 6 on the second (the first was cut again), the long call 10 on the resume from 6-1.
delivery() {
    grep '^{' "$DIR/proxy.err" | jq -c --argjson id "$1" \
        'select(.event == "frame" and .direction == "server_to_client" and .id == $id) | .delivery' | head -n 1
}
deliveries="$(delivery 1) $(delivery 6) $(delivery 10)"
want='{"on":"resume","resume":1,"lastEventId":"0-0"} {"on":"resume","resume":2,"lastEventId":"5-0"} {"on":"resume","resume":1,"lastEventId":"6-1"}'
[[ "$deliveries" == "$want" ]] && rc=0 || rc=1
check "trajectory: each cut reply's delivery names the resume that carried it" "$rc" "$deliveries"

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

# The faults that end a stream or a session for good, each in a session of its own (unknown_400 forgot the last).
# new_session: initialises one and sets SESSION; empty when the initialize was refused (its status in $DIR/h).
new_session() {
    post "$init" >/dev/null
    SESSION="$(sed -n 's/^mcp-session-id: *\([^[:space:]]*\).*/\1/ip' "$DIR/h")"
    [[ -z "$SESSION" ]] || post '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$SESSION" >/dev/null
}
# first_id BODY: the id of the first event of an SSE body.
first_id() { sed -n 's/^id: \(.*\)$/\1/p' <<<"$1" | head -n 1; }
new_session

# stream_lost: the progress notifications go out, then the stream breaks where the result would be (no clean end),
# and nothing can be resumed: the resume from its last event is 404.
lost_body="$(curl -sS --max-time 10 -D "$DIR/h" -H 'content-type: application/json' \
    -H 'accept: application/json, text/event-stream' -H "mcp-session-id: $SESSION" -H "mcp-protocol-version: $VERSION" \
    --data "$(long_call 20)" "$URL" 2>"$DIR/lost.curl")" && lost_rc=0 || lost_rc=$?
lost_last="$(sed -n 's/^id: \(.*\)$/\1/p' <<<"$lost_body" | tail -n 1)"
[[ "$lost_rc" != 0 && "$lost_body" == *'"notifications/progress"'* && "$lost_body" != *"$DONE_TEXT"* ]] && rc=0 || rc=1
check "stream_lost: progress, then the stream breaks before the result (curl exit $lost_rc)" "$rc" "$lost_body"
lost_resumed="$(resume "$SESSION" "$lost_last")"
[[ -n "$lost_last" && "$(status_line)" == 404 ]] && rc=0 || rc=1
check "stream_lost: its resume from $lost_last is 404 (nothing to resume)" "$rc" "$(status_line) $lost_resumed"

# resume_refused 404: the cut stream's resume is answered 404, every time.
refused="$(post "$(call 13 nine)" "$SESSION")"
refused_id="$(first_id "$refused")"
answer="$(resume "$SESSION" "$refused_id")"
[[ -n "$refused_id" && "$refused" != *"Echo: nine"* && "$(status_line)" == 404 ]] && rc=0 || rc=1
check "resume_refused 404: the cut stream's resume from $refused_id is 404" "$rc" "$(status_line) $answer"

# session_expired_in_flight: the call itself is answered 404 with a JSON-RPC error for its id; the session is gone.
inflight="$(post "$(call 14 ten)" "$SESSION")"
[[ "$(status_line)" == 404 && "$(jq -r '.id, .error.code' <<<"$inflight" | paste -sd' ')" == "14 -32001" ]] && rc=0 || rc=1
check "session_expired_in_flight: the call answered 404, error -32001 for id 14" "$rc" "$(status_line) $inflight"
post '{"jsonrpc":"2.0","id":15,"method":"tools/list"}' "$SESSION" >/dev/null
[[ "$(status_line)" == 404 ]] && rc=0 || rc=1
check "session_expired_in_flight: the session's next request is 404" "$rc" "$(status_line)"

# session_lifecycle restart: the call's result, then every session is forgotten (this one and one opened before).
new_session
other="$SESSION"
new_session
restart="$(post "$(call 16 eleven)" "$SESSION")"
post '{"jsonrpc":"2.0","id":17,"method":"tools/list"}' "$SESSION" >/dev/null
mine="$(status_line)"
post '{"jsonrpc":"2.0","id":18,"method":"tools/list"}' "$other" >/dev/null
[[ "$restart" == *"Echo: eleven"* && "$mine" == 404 && "$(status_line)" == 404 ]] && rc=0 || rc=1
check "session_lifecycle restart: the result, then both sessions' requests 404" "$rc" "$restart / $mine $(status_line)"

# session_lifecycle reinit_404: the result, then the session and the next 3 initialize requests are 404.
new_session
reinit="$(post "$(call 19 twelve)" "$SESSION")"
statuses=""
for _ in 1 2 3 4; do
    post "$init" >/dev/null
    statuses+="$(status_line) "
done
[[ "$reinit" == *"Echo: twelve"* && "$statuses" == "404 404 404 200 " ]] && rc=0 || rc=1
check "session_lifecycle reinit_404: the result, then initialize 404 three times, then a session" "$rc" \
    "$reinit / $statuses"

print_summary "$passed" "$failed"
[[ "$failed" == 0 ]]
