#!/usr/bin/env bash
# The oracle matrix: every built-in control agent on every built-in task, each a real MCP client process going
# through `faultlab proxy` to the built-in workspace server, graded on five layers, and every verdict checked
# against examples/eval/oracle.yaml. Proves the grader passes the good agent and fails each bad one in the way
# that matches its defect; then `faultlab explore --controls` finds each control agent's breaking fault classes and
# checks them against examples/eval/explore-oracle.yaml.
#
#   scripts/eval-oracle.sh
#
# Environment:
#   FAULTLAB_BIN   the faultlab binary (default: the workspace's debug build, built when needed)
#
# Reports (JSON, Markdown, HTML, each run's trajectory, ledger and claim) go to .cache/eval-oracle/. Exit status:
# that of `faultlab eval --controls` (0 all verdicts as expected; 2 a disagreement, listed; 1 could not run).
set -euo pipefail

DIE_STATUS=1
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
resolve_faultlab_bin

out="$ROOT/.cache/eval-oracle"
mkdir -p "$out"
log "faultlab eval --controls --jobs 2 (reports in $out)"
"$FAULTLAB_BIN" eval --controls --jobs 2 --out "$out" >"$out/console.txt" || status=$?
tail -n 3 "$out/console.txt"
if [[ "${status:-0}" != 0 ]]; then
    grep '^oracle' "$out/console.txt" || true
    echo "eval-oracle: error: faultlab eval --controls exited ${status}" >&2
    exit "$status"
fi
# The adversarial controls must leave nothing behind: the forker's setsid child ends with its run, and the
# escaper's writes outside the workspace never happen.
if pgrep -f 'sleep 3599.25' >/dev/null; then
    pkill -f 'sleep 3599.25' || true
    die "a forker's child outlived its run"
fi
for f in /tmp/escaped-by-faultlab-escaper.txt "$out"/runs/*/escaper/escaped-by-faultlab-escaper.txt; do
    [[ ! -e "$f" ]] || die "the escaper wrote $f outside its workspace"
done
# Exploration: each control agent's healthy run, then the error, timeout-after and transport-loss classes at each
# of its tool calls and, with --protocol-sites, at its initialize; then the stream and session classes at each tool
# call and at the initialize of the same read and write over HTTP (transport-stream-lost-read; on the stdio task
# they are listed as not tried). The classes that break, and those that only degrade, each agent must be those
# examples/eval/explore-oracle.yaml names, at the tool calls and at the protocol's requests apart; over HTTP also
# what a 503 at the first resume of each cut stream does (the timing "while the stream resumes": 19 runs of about
# a second, no measurable wall time, as they end while the cut streams' 3 s resumes are still waited on). Five classes of
# fourteen, each by its representative fault alone (--quick), for the test command's time budget; most of the time
# is over HTTP, where a cut stream's reply comes with its resume 3 s later: the agents are killed at the task's
# 2.5 s deadline waiting for it at initialize, and ignores-timeout at each call. Those runs wait, they do not compute:
# three explorations run at a time (--jobs 3; about 21 s on a loaded debug build, where --jobs 2 took about 26 s).
# The twelve stdio classes with --quick and --protocol-sites take about 75 s, and every catalogue fault of every
# class, `faultlab explore --controls`, several minutes.
# Beside it, sets of up to three faults (k = 3): the good agent on the stdio task under error and timeout-after,
# whose minimal failing sets (two of two faults, two of three) must be the oracle's `sets`. The search's 25 runs,
# one at a time (about 8 s, within the other's wall time); --exhaustive finds the same sets in 77 (about 17 s),
# left to scripts/bench-explore.sh.
# With them, the model class at the model requests of the built-in task with a model (model-tool-call-cut-read;
# five agents, 15 runs, about a second): the agents that ask the model again survive a cut answer, gives-up and the
# blind retrier (it runs the cut call with {}) degrade.
classes=error,timeout-after,transport-loss,stream,session,model
log "faultlab explore --controls --quick --protocol-sites --classes $classes; beside it --control good --max-faults 3"
"$FAULTLAB_BIN" explore --controls --control good --quick --max-faults 3 --classes error,timeout-after --jobs 1 \
    --out "$out/explore-sets" "$ROOT/examples/eval/tasks/transport-timeout-after-write.yaml" \
    >"$out/explore-sets-console.txt" 2>&1 &
sets=$!
"$FAULTLAB_BIN" explore --controls --quick --protocol-sites --classes "$classes" --jobs 3 --out "$out/explore" \
    >"$out/explore-console.txt" 2>&1 || explore_status=$?
wait "$sets" || sets_status=$?
if [[ "${explore_status:-0}" != 0 ]]; then
    cat "$out/explore-console.txt"
    die "faultlab explore --controls disagrees with its oracle"
fi
grep '^explore oracle' "$out/explore-console.txt"
if [[ "${sets_status:-0}" != 0 ]]; then
    cat "$out/explore-sets-console.txt"
    die "faultlab explore --control good --max-faults 3 disagrees with its oracle's minimal failing sets"
fi
grep '^explore oracle' "$out/explore-sets-console.txt" | sed 's/^/sets (k = 3): /'
# Replay to another agent: every control agent, replayed on the good agent's recording of a task of each kind (a
# write that times out, a faulted read, a forbidden write; the same workspace nonce, the recorded replies), must
# get the verdict it gets live. Three tasks, not seven, for the test command's time budget (about 7 s).
runs=()
for task in transport-timeout-after-write data-empty-read authorization-forbidden-write; do
    runs+=(--run "$task/good")
done
log "faultlab replay: every control agent on the good agent's recordings"
"$FAULTLAB_BIN" replay "$out/report.json" "${runs[@]}" --controls --jobs 2 --out "$out/replay" >"$out/replay-console.txt" 2>&1 || true
python3 - "$out/report.json" "$out/replay/report.json" <<'PY' || die "a replayed verdict differs from the live one"
import json, sys
live = {(r["task"], r["agent"]): (r["verdict"]["passed"], r["verdict"]["recovery"]["outcome"]) for r in json.load(open(sys.argv[1]))["runs"]}
replayed = json.load(open(sys.argv[2]))["runs"]
differ = [r for r in replayed if (r["verdict"]["passed"], r["verdict"]["recovery"]["outcome"]) != live[(r["task"], r["agent"])]]
for r in differ:
    print(f"eval-oracle: replayed {r['task']} × {r['agent']}: {r['verdict']['recovery']['outcome']}, live: {live[(r['task'], r['agent'])][1]}")
print(f"eval-oracle: {len(replayed)} replayed runs, {len(differ)} differ from live")
sys.exit(1 if differ or not replayed else 0)
PY
grep -q '"isolation": "namespaces"' "$out/report.json" || log "note: the runs were not sealed in namespaces here"
log "ok"
