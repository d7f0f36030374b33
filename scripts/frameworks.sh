#!/usr/bin/env bash
# A real agent framework against `faultlab model`: the OpenAI Agents SDK (openai-agents, pinned in
# interop/frameworks/requirements.txt + constraints.txt, installed by scripts/lib/frameworks-venv.sh) runs interop/frameworks/openai_agents_agent.py with
# `faultlab model --script examples/model/script.yaml` as its model and `faultlab serve --transport http` as its
# MCP server, over the Responses and the Chat Completions APIs, streaming and not. Each run must end with the
# script's answer, and the model's recording must show the two MCP results the framework passed back. A last run
# puts examples/model/rules.yaml on the model hop (a 429 with Retry-After, an answer cut midway) and reports what
# the framework made of it. Not part of the test command (it installs a framework; about a minute).
#
#   scripts/frameworks.sh
#
# Environment:
#   FAULTLAB_BIN   the faultlab binary to test (default: ${CARGO_TARGET_DIR:-target}/debug/faultlab, built first)
#   PYTHON         the Python that creates the venv (default: python3; 3.10 or newer)
#
# The venv lives in .cache/frameworks/venv, rebuilt only when the pins or the Python change; logs, recordings and
# the agent's JSON lines go to .cache/frameworks/logs/ (replaced on each run). Prints one line per check, then
# `N passed, M failed`; exits non-zero if a check failed, 2 if the run could not be set up.
set -euo pipefail

CALLER_PWD="$PWD"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

log() { printf 'frameworks: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 2; }

# shellcheck source=scripts/lib/faultlab-bin.sh
source "$ROOT/scripts/lib/faultlab-bin.sh"
# shellcheck source=scripts/lib/frameworks-venv.sh
source "$ROOT/scripts/lib/frameworks-venv.sh"
# shellcheck source=scripts/lib/process-wait.sh
source "$ROOT/scripts/lib/process-wait.sh"

export PYTHONDONTWRITEBYTECODE=1
LOGS="$ROOT/.cache/frameworks/logs"
rm -rf "$LOGS"
mkdir -p "$LOGS"

# --- the pinned framework (scripts/lib/frameworks-venv.sh), installed only when the pins or the Python changed ---
install_frameworks
VENV="$FRAMEWORKS_CACHE/venv"
log "openai-agents $("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("openai-agents"))')"

resolve_faultlab_bin

# --- the lab: an MCP server and a model, each ended by this script -------------------------------------------
SERVE_PID="" MODEL_PID=""
cleanup() {
    stop_job "$MODEL_PID" "faultlab model" 5
    stop_job "$SERVE_PID" "faultlab serve" 5
}
trap cleanup EXIT

"$FAULTLAB_BIN" serve --transport http --port 0 2>"$LOGS/serve.log" &
SERVE_PID=$!
MCP_URL="$(wait_for_line "$SERVE_PID" "$LOGS/serve.log" 's#^faultlab: listening at \(http://[^[:space:]]*\).*#\1#p' 30)" ||
    die "faultlab serve did not start: $(cat "$LOGS/serve.log")"

# start_model NAME [ARGS…]: a model endpoint recording into $LOGS/NAME.jsonl; sets MODEL_URL and MODEL_PID.
start_model() {
    local name="$1"
    shift
    "$FAULTLAB_BIN" model --script examples/model/script.yaml --record "$LOGS/$name.jsonl" "$@" 2>"$LOGS/$name.log" &
    MODEL_PID=$!
    MODEL_URL="$(wait_for_line "$MODEL_PID" "$LOGS/$name.log" 's#^faultlab: model listening at \(http://[^[:space:]]*\).*#\1#p' 30)" ||
        die "faultlab model did not start: $(cat "$LOGS/$name.log")"
}

passed=0
failed=0
check() { # check NAME OK DETAIL
    if [[ "$2" == 1 ]]; then passed=$((passed + 1)); echo "ok    $1"; else failed=$((failed + 1)); echo "FAIL  $1: $3"; fi
}

# agent NAME API [--stream]: one agent run (bounded: a framework that hangs is killed); its JSON line on stdout.
agent() {
    local name="$1"
    shift
    timeout -k 5 120 "$VENV/bin/python" interop/frameworks/openai_agents_agent.py \
        --model-url "$MODEL_URL" --mcp-url "$MCP_URL" --api "$@" 2>"$LOGS/$name-agent.log" </dev/null |
        tee "$LOGS/$name-agent.jsonl" || true
}

# What a run's recording says: model requests, and the tool results of the last one (text of each, failed flags).
summary() {
    "$VENV/bin/python" - "$1" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
last = lines[-1]["tool_results"] if lines else []
faults = [l["fault"]["rule"] for l in lines if l.get("fault")]
print(json.dumps({"requests": len(lines), "results": [r["text"][:40] for r in last],
                  "failed": [r["failed"] for r in last], "faults": faults}))
PY
}

# answered JSON_LINE: 1 when the agent's run ended with the script's final answer.
answered() {
    local got
    got="$("$VENV/bin/python" -c 'import json,sys; print(json.loads(sys.argv[1] or "{}").get("final_output"))' "$1")"
    [[ "$got" == "The server answered the ping and the delay." ]] && echo 1
}

start_model healthy
for api in responses chat; do
    for stream in "" --stream; do
        name="$api${stream:+-stream}"
        out="$(agent "$name" "$api" $stream)"
        check "openai-agents $name: the run ends with the script's answer" "$(answered "$out")" "$out"
    done
done
seen="$(summary "$LOGS/healthy.jsonl")"
check "the recording shows 4 runs x 3 model requests, the last with both MCP results, none failed" \
    "$([[ "$seen" == *'"requests": 12'* && "$seen" == *'"status\":\"ok'* && "$seen" == *'"failed": [false, false]'* ]] && echo 1)" "$seen"
stop_job "$MODEL_PID" "faultlab model" 5
check "faultlab model exits 0 on SIGTERM" "$([[ "$STOP_STATUS" == 0 ]] && echo 1)" "exit $STOP_STATUS"
MODEL_PID=""

kill -0 "$SERVE_PID" 2>/dev/null || die "faultlab serve ended early: $(cat "$LOGS/serve.log")"
start_model faulted --rules examples/model/rules.yaml
out="$(agent faulted responses)"
seen="$(summary "$LOGS/faulted.jsonl")"
log "with faults on the model hop: $out; recording: $seen"
check "openai-agents waits out the 429, retries the cut answer and still ends with the answer" "$(answered "$out")" "$out"
check "the faulted run's recording names both model-hop faults" \
    "$([[ "$seen" == *'first-call-limited'* && "$seen" == *'third-answer-cut'* ]] && echo 1)" "$seen"

echo "$passed passed, $failed failed"
[[ "$failed" == 0 ]]
