#!/usr/bin/env bash
# An external agent graded end to end: `faultlab eval` runs examples/eval/agents/python_sdk_agent.py, a careful
# scripted agent written with the official MCP Python SDK (pinned in interop/python/requirements.txt), once on each
# built-in task it is meant for, through the real fault proxy, and grades it. The agent must pass every one:
#   transport-timeout-after-write  checks that the timed-out write took effect instead of writing twice
#   transport-slow-read            retries the read that outlived its call timeout
#   protocol-malformed-read        retries after the reply the SDK could not parse
#   data-empty-read                retries after an empty result
#   temporal-out-of-order-read     retries the read whose reply is held back, ignores the late one
#   systemic-burst-read            three failed reads of input.txt, then the copy in backup/
#   authorization-forbidden-write  every write is forbidden: an honest failure claim (aborted safely)
# The script then checks report.json itself: one run per task, each graded passed, under the agent's label (the
# script's name without its extension, since the interpreter is a launcher: python_sdk_agent).
#
#   scripts/eval-python.sh
#
# Installed, pinned, under git-ignored .cache/ on first use: the Python SDK venv under .cache/py-interop/venv
# (scripts/lib/py-interop.sh, shared with interop-python.sh and proxy-filesystem.sh).
#
# Environment:
#   FAULTLAB_BIN   the faultlab binary to test (a path, or a name on PATH); when unset, the workspace's debug build,
#                  brought up to date with `cargo build -p faultlab` (scripts/lib/faultlab-bin.sh)
#   PYTHON         the Python that creates the venv (default: python3; 3.11 or newer)
#   JOBS           runs in parallel (default: 1; faultlab eval's own default is 2). Loading the SDK takes 0.5 s of
#                  CPU and a busy 2-CPU machine can take seconds, so the tasks' 3 s deadlines (sized for the
#                  Rust control agents) are raised to 10 s here with --deadline-ms; the agent reads its deadline
#                  from FAULTLAB_TASK
#
# The report (report.json, report.md, report.html) and each run's folder (trajectory, ledger, claim, agent.log) go
# to .cache/eval-python/ (replaced on each run). The last line printed is `eval-python: N runs graded, M passed`;
# the exit status is 0 only if faultlab eval exited 0 and every expected run is in the report and passed, 1 if not,
# 2 if the evaluation could not be set up.
set -euo pipefail

# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

export PYTHONDONTWRITEBYTECODE=1
OUT="$ROOT/.cache/eval-python"
AGENT="$ROOT/examples/eval/agents/python_sdk_agent.py"
TASKS=(
  transport-timeout-after-write
  transport-slow-read
  protocol-malformed-read
  data-empty-read
  temporal-out-of-order-read
  systemic-burst-read
  authorization-forbidden-write
)

# ---------------------------------------------------------------- tools
# shellcheck source=scripts/lib/py-interop.sh
source "$ROOT/scripts/lib/py-interop.sh"
install_py_interop
resolve_faultlab_bin
[[ -f "$AGENT" ]] || die "the agent $AGENT is missing"

# ---------------------------------------------------------------- the evaluation
task_files=()
for task in "${TASKS[@]}"; do
  file="examples/eval/tasks/$task.yaml"
  [[ -f "$file" ]] || die "task file $file is missing"
  task_files+=("$file")
done

# The agent starts in a scratch folder of its run, so both the interpreter (the venv's, with the pinned SDK) and
# the script are given by absolute path. faultlab eval splits --agent like a shell would (quotes, no expansion).
agent_command="$(printf '%q %q' "$PY_INTEROP_PY" "$AGENT")"
label="$(basename "$AGENT" .py)"
rm -rf "$OUT"
log "faultlab eval: ${#TASKS[@]} tasks, agent: $agent_command"
rc=0
"$FAULTLAB_BIN" eval "${task_files[@]}" --agent "$agent_command" --jobs "${JOBS:-1}" --deadline-ms 10000 --out "$OUT" </dev/null || rc=$?
case "$rc" in
  0) ;;
  2) log "faultlab eval exited 2: a run failed its grade (see $OUT/report.md)" ;;
  *) die "faultlab eval exited $rc: the evaluation could not happen" ;;
esac
[[ -f "$OUT/report.json" ]] || die "faultlab eval wrote no $OUT/report.json"

# ---------------------------------------------------------------- the report, checked independently
# Prints the problems, one a line, then `runs passed wall_ms` alone on the last line.
mapfile -t checked < <("$PY_INTEROP_PY" - "$OUT/report.json" "$label" "${TASKS[@]}" <<'EOF'
import json, sys
report_path, label, tasks = sys.argv[1], sys.argv[2], sys.argv[3:]
with open(report_path, encoding="utf-8") as f:
    report = json.load(f)
runs = report["runs"]
passed = 0
for run in runs:
    verdict = run.get("verdict", {})
    if run.get("agent") != label:
        print(f"{run.get('task')}: graded under the agent label {run.get('agent')!r}, expected {label!r}")
    elif verdict.get("passed") is True:
        passed += 1
    else:
        recovery = verdict.get("recovery", {})
        failing = [layer for layer in ("outcome", "safety", "side_effects") if not verdict.get(layer, {}).get("passed")]
        if not recovery.get("passed"):
            failing.append("recovery")
        print(f"{run.get('task')}: FAILED ({', '.join(failing) or 'no layer named'}): {recovery.get('detail', '')}"
              f"; claim {run.get('claim')}; see {run.get('dir')}/agent.log")
for task in tasks:
    count = sum(1 for run in runs if run.get("task") == task)
    if count != 1:
        print(f"{task}: {count} runs in the report, expected 1")
for task in sorted({run.get("task") for run in runs} - set(tasks)):
    print(f"{task}: in the report but not asked for")
print(len(runs), passed, report.get("meta", {}).get("wall_ms", 0))
EOF
)
[[ ${#checked[@]} -gt 0 ]] || die "could not read $OUT/report.json"
read -r graded passed wall_ms <<<"${checked[-1]}"
problems=("${checked[@]:0:${#checked[@]}-1}")
for problem in "${problems[@]}"; do
  log "$problem"
done
log "report: $OUT/report.md (wall time $((wall_ms / 1000)).$(printf '%03d' $((wall_ms % 1000))) s)"
echo "eval-python: $passed passed, $((graded - passed)) failed ($graded runs graded)"
[[ "$rc" == 0 && ${#problems[@]} == 0 && "$graded" == "${#TASKS[@]}" && "$passed" == "$graded" ]]
