#!/usr/bin/env bash
# A real agent framework graded by `faultlab eval`: examples/eval/agents/framework_agent.py (the OpenAI Agents SDK,
# pinned in interop/frameworks/requirements.txt, installed by scripts/lib/frameworks-venv.sh, with the scripted
# model examples/eval/agents/model-script.yaml started by the agent itself) on the seven built-in tasks, sealed
# like any agent; each verdict is compared with examples/eval/frameworks-oracle.yaml.
#
#   scripts/frameworks-eval.sh               # the seven built-in tasks
#   scripts/frameworks-eval.sh TASK_ID...    # only these (e.g. data-empty-read): the test command runs two, one
#                                            # the framework passes and one it fails, for its time budget
#
# The runs get --deadline-ms 15000: the tasks' 1.5 s is sized for a lean agent, and the SDK's run loop on a busy
# 2-core machine takes about a second from its first connection to its first model request, so with the tasks' own
# deadlines every run would be killed and the verdicts would measure the machine. 15 s lets the framework's own
# defaults decide (its 5 s MCP request timeout fits inside).
#
# Environment: FAULTLAB_BIN (default: the workspace's debug build, built when needed), PYTHON (for the venv).
# Reports go to .cache/frameworks-eval/. The seven tasks take about a minute and a half on the shared machine; the
# test command's frameworks-eval stage runs two (15 s: data-empty-read, which the framework passes, and
# transport-timeout-after-write, which it fails after its 5 s MCP timeout). The last line is `N passed, M failed` (one per task); exit 0 when every verdict is
# the expected one, 1 when one differs, 2 when the run could not be set up.
set -euo pipefail

# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# shellcheck source=scripts/lib/frameworks-venv.sh
source "$ROOT/scripts/lib/frameworks-venv.sh"
tasks=()
for id in "$@"; do
    [[ -f "examples/eval/tasks/$id.yaml" ]] || die "no built-in task $id (examples/eval/tasks/$id.yaml)"
    tasks+=("examples/eval/tasks/$id.yaml")
done
# Without ids, the seven fault tasks of examples/eval/tasks (the built-in confirmation task, examples/eval/askback,
# is not in the framework's expectation file: the framework's MCP client declares no elicitation).
(( $# > 0 )) || tasks=(examples/eval/tasks/*.yaml)
trap 'summary_on_exit $? $(( $# > 0 ? $# : 7 )) 0' EXIT

export PYTHONDONTWRITEBYTECODE=1
install_frameworks
resolve_faultlab_bin

out="$ROOT/.cache/frameworks-eval"
rm -rf "$out"
mkdir -p "$out"
started=$SECONDS
log "faultlab eval --agent framework_agent.py on ${*:-the seven tasks of examples/eval/tasks} (reports in $out)"
# Exit 2 is a run that failed its grade: expected for some tasks, the comparison below decides.
# Beside the runs (they mostly wait), so it adds no time: every body and event of the scripted model against the
# pinned openai and anthropic SDKs' pydantic types (interop/frameworks/model_types.py).
"$FRAMEWORKS_PY" interop/frameworks/model_types.py "$FAULTLAB_BIN" examples/model/script.yaml \
    >"$out/model-types.txt" 2>&1 </dev/null &
types_pid=$!
status=0
"$FAULTLAB_BIN" eval --agent "$FRAMEWORKS_PY examples/eval/agents/framework_agent.py" --deadline-ms 15000 --jobs 2 \
    --out "$out" "${tasks[@]}" >"$out/console.txt" 2>&1 || status=$?
cat "$out/console.txt" >&2
[[ "$status" == 0 || "$status" == 2 ]] || die "faultlab eval could not run the agent (exit $status; logs in $out/runs)"
log "ran in $((SECONDS - started)) s"

# The comparison, in the venv's Python (PyYAML is pinned there): the fields of examples/eval/oracle.yaml's entries.
rc=0
"$FRAMEWORKS_PY" - "$ROOT/examples/eval/frameworks-oracle.yaml" "$out/report.json" "$@" <<'PY' || rc=$?
import json
import sys

import yaml


def describe(passed, outcome, strategy, failing):
    text = f"{'pass' if passed else 'fail'} {outcome} by {strategy}"
    return text + (f" (failing: {', '.join(sorted(failing))})" if failing else "")


with open(sys.argv[1], encoding="utf-8") as f:
    oracle = yaml.safe_load(f)
with open(sys.argv[2], encoding="utf-8") as f:
    runs = {r["task"]: r for r in json.load(f)["runs"] if r["agent"] == oracle["agent"]}
passed = failed = 0
only = set(sys.argv[3:])
for entry in oracle["entries"]:
    if only and entry["task"] not in only:
        continue
    want = describe(entry["pass"], entry["outcome"], entry["strategy"], entry["failing"])
    run = runs.pop(entry["task"], None)
    if run is None:
        got = "no run"
    elif run.get("error"):
        got = f"error: {run['error']}"
    else:
        v = run["verdict"]
        layers = [k for k in ("outcome", "safety", "recovery", "side_effects") if not v[k]["passed"]]
        got = describe(v["passed"], v["recovery"]["outcome"], v["recovery"]["strategy"], layers)
    if got == want:
        passed += 1
        print(f"ok {entry['task']}: {got}")
    else:
        failed += 1
        print(f"DIFFERS {entry['task']}: expected {want}, got {got}")
for task in runs:
    failed += 1
    print(f"DIFFERS {task}: a run the expectation file does not name")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
SUMMARY_PRINTED=1
[[ "$rc" == 0 ]] || log "a verdict differs from examples/eval/frameworks-oracle.yaml (runs and agent logs: $out/runs)"
if ! wait "$types_pid"; then
    rc=1
    log "faultlab model wrote a body the pinned SDKs' types refuse:"
fi
cat "$out/model-types.txt" >&2
exit "$rc"
