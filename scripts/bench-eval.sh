#!/usr/bin/env bash
# Benchmarks `faultlab eval`: about 1,600 graded runs (the control agents × the built-in tasks × 18 seeds)
# with --jobs 2, each a real agent process through the real proxy to the real workspace server, graded on five
# layers. Goal (the eval issue): under 5 minutes, i.e. at least 3.3 graded runs per second. Release build.
# Then, in the same run, the proxy where eval runs it (in its own process, in front of the workspace server in
# process) against the proxy process per run that starts a server process per connection (FAULTLAB_EVAL_PROXY=process,
# how eval ran before): graded runs per second of the control agents (every built-in task, 3 seeds) and of a
# trivial agent (`true`, which never connects: a run is then the lab's own work; the tasks of examples/eval/tasks × 40 seeds), each
# place in turn, the trivial agent's three times (min / median / max of the ratios), and the CPU time per run
# (eval and every process it waited for). Goal: at least 1.3× the runs per second.
# A benchmark, not a test: it prints the figure and never fails on it (the oracle check is scripts/eval-oracle.sh).
#
# Environment:
#   FAULTLAB_BENCH_QUICK=1   one repeat (56 runs) on the debug build, only to prove it runs (the places compared
#                            with one repeat of the controls and 20 of the trivial agent)
#   FAULTLAB_BENCH_JSON      where the JSON report goes (default target/bench/eval.json)
#   FAULTLAB_BIN             the faultlab binary to measure (default: the release build, or the debug build with
#                            FAULTLAB_BENCH_QUICK, built here)
#   FAULTLAB_BENCH_EVAL_PLACES=only   only the comparison of the proxy's places (a new JSON report with only it)
set -euo pipefail

# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

# shellcheck source=scripts/lib/bench-release.sh
source "$ROOT/scripts/lib/bench-release.sh"
bench_paths eval

bench_binary
repeat=18
[[ -z "${FAULTLAB_BENCH_QUICK:-}" ]] || repeat=1
places_only="${FAULTLAB_BENCH_EVAL_PLACES:-}"
[[ -z "$places_only" || "$places_only" == only ]] || die "FAULTLAB_BENCH_EVAL_PLACES is \"only\" or unset"
out="$TARGET_DIR/bench/eval-runs"
rm -rf "$out"
if [[ -n "$places_only" ]]; then
    rm -f "$JSON_OUT"
else
log "faultlab eval --controls --repeat $repeat --jobs 2 ($profile)"
start=$(date +%s.%N)
status=0
"$bin" eval --controls --repeat "$repeat" --seed 1 --jobs 2 --out "$out" >"$out.console.txt" 2>&1 || status=$?
end=$(date +%s.%N)
python3 - "$out/report.json" "$JSON_OUT" "$start" "$end" "$status" "$repeat" "$profile" <<'PY'
import json, os, platform, sys
report_path, json_out, start, end, status, repeat, profile = sys.argv[1:]
report = json.load(open(report_path))
runs = len(report["runs"])
wall = float(end) - float(start)
limit = 300.0 * runs / 1000  # the goal: 1,000 runs in 5 minutes, scaled to the runs made
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.machine())
result = {
    "machine": {"cores": os.cpu_count(), "cpu": cpu},
    "profile": profile,
    "runs": runs,
    # What the runs were: counted from the report, so the row stays true as tasks and controls are added.
    "tasks": len({r["task"] for r in report["runs"]}),
    "agents": len({r["agent"] for r in report["runs"]}),
    "repeat": int(repeat),
    "jobs": 2,
    "wall_s": round(wall, 2),
    "runs_per_s": round(runs / wall, 2),
    "oracle_exit": int(status),
    "goal": "1,000 graded runs in under 5 minutes with --jobs 2 (≥ 3.33 runs/s)",
    "met": wall <= limit,
}
json.dump(result, open(json_out, "w"), indent=2)
print(f"bench-eval: {runs} graded runs in {wall:.1f} s = {runs / wall:.2f} runs/s (oracle exit {status})")
PY
fi
# The proxy in process against the proxy process, each place in turn.
if [[ -n "${FAULTLAB_BENCH_QUICK:-}" ]]; then
    controls_repeat=1
    trivial_repeat=20
else
    controls_repeat=3
    trivial_repeat=40
fi
places="$TARGET_DIR/bench/eval-places.jsonl"
: >"$places"
# place_run PLACE AGENT ARGS...: one `faultlab eval` with the proxy at PLACE; its runs, wall time and CPU time (eval's
# and every process it waited for: as the child subreaper it waits for every process of its runs) appended to $places.
place_run() {
    local place="$1" agent="$2" runs_out="$TARGET_DIR/bench/eval-place-runs"
    shift 2
    rm -rf "$runs_out"
    FAULTLAB_EVAL_PROXY="$place" python3 - "$runs_out" "$place" "$agent" "$bin" eval "$@" --seed 1 --jobs 2 \
        --out "$runs_out" >>"$places" <<'PY'
import json, os, subprocess, sys, time
runs_out, place, agent, *command = sys.argv[1:]
start = time.monotonic()
with open(runs_out + ".console.txt", "w") as console:
    child = subprocess.Popen(command, stdout=console, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
wall = time.monotonic() - start
runs = json.load(open(os.path.join(runs_out, "report.json")))["runs"]
print(json.dumps({"place": place, "agent": agent, "runs": len(runs), "errors": sum(1 for r in runs if r.get("error")),
                  "wall_s": round(wall, 3), "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
                  "exit": os.waitstatus_to_exitcode(status)}))
PY
}
log "the proxy in process against the proxy process: the controls ($controls_repeat seeds) and a trivial agent ($trivial_repeat seeds, 3 rounds)"
for place in process in-process; do
    place_run "$place" controls --controls --repeat "$controls_repeat"
done
for _ in 1 2 3; do
    for place in process in-process; do
        place_run "$place" trivial --agent true --agent-name trivial --repeat "$trivial_repeat" examples/eval/tasks/*.yaml
    done
done
python3 - "$places" "$JSON_OUT" "$profile" <<'PY'
import json, os, statistics, sys
places_path, json_out, profile = sys.argv[1:]
rows = [json.loads(l) for l in open(places_path)]
def rate(r):
    return r["runs"] / r["wall_s"]
def of(agent):
    before = [r for r in rows if r["agent"] == agent and r["place"] == "process"]
    after = [r for r in rows if r["agent"] == agent and r["place"] == "in-process"]
    ratios = sorted(rate(a) / rate(b) for b, a in zip(before, after))
    cpu = lambda rs: statistics.median(1000 * r["cpu_s"] / r["runs"] for r in rs)  # noqa: E731
    return {"runs": after[0]["runs"], "process_runs_per_s": [round(rate(r), 2) for r in before],
            "in_process_runs_per_s": [round(rate(r), 2) for r in after],
            "process_cpu_ms_per_run": round(cpu(before), 1), "in_process_cpu_ms_per_run": round(cpu(after), 1),
            "ratios": [round(x, 3) for x in ratios], "median_ratio": round(statistics.median(ratios), 3),
            "errors": sum(r["errors"] for r in before + after)}
result = json.load(open(json_out)) if os.path.exists(json_out) else {"profile": profile}
result["places"] = {"profile": profile, "controls": of("controls"), "trivial": of("trivial"),
                    "goal": "graded runs/s with the proxy in process / as a process >= 1.3"}
json.dump(result, open(json_out, "w"), indent=2)
for agent in ("controls", "trivial"):
    p = result["places"][agent]
    print(f"bench-eval: {agent}: in process {p['in_process_runs_per_s']} runs/s, process {p['process_runs_per_s']} runs/s: "
          f"{p['median_ratio']}× (ratios {p['ratios']}; {p['runs']} runs each, {p['errors']} set-up errors); CPU per run "
          f"{p['in_process_cpu_ms_per_run']} vs {p['process_cpu_ms_per_run']} ms")
PY
# `faultlab explore`: one built-in task, one control agent, every fault class at every tool call, three repeats
# (45 variant runs and 3 healthy runs), --jobs 2. Goal (the explore issue): about 50 single-fault variants in
# under 30 s. Not in quick mode.
if [[ -z "${FAULTLAB_BENCH_QUICK:-}" && -z "$places_only" ]]; then
    explore_out="$TARGET_DIR/bench/explore-runs"
    rm -rf "$explore_out"
    log "faultlab explore transport-timeout-after-write --agent good --repeat 3 --jobs 2 ($profile)"
    start=$(date +%s.%N)
    status=0
    "$bin" explore examples/eval/tasks/transport-timeout-after-write.yaml --agent "$bin agent good" --agent-name good \
        --quick --repeat 3 --jobs 2 --out "$explore_out" >"$explore_out.console.txt" 2>&1 || status=$?
    end=$(date +%s.%N)
    python3 - "$explore_out/report.json" "$(dirname "$JSON_OUT")/explore.json" "$start" "$end" "$status" "$profile" <<'PY'
import json, sys
report_path, json_out, start, end, status, profile = sys.argv[1:]
e = json.load(open(report_path))["explorations"][0]
variants = len(e["variants"])
runs = sum(v["runs"] for v in e["variants"]) + e["healthy"]["runs"]
wall = float(end) - float(start)
result = {"profile": profile, "variants": variants, "runs": runs, "repeat": 3, "jobs": 2, "wall_s": round(wall, 2),
          "exit": int(status), "goal": "about 50 single-fault variant runs of one task in under 30 s with --jobs 2",
          "met": wall <= 30.0}
json.dump(result, open(json_out, "w"), indent=2)
print(f"bench-eval: explore: {runs} runs ({variants} variants × 3 repeats + healthy) in {wall:.1f} s (exit {status})")
PY
fi
