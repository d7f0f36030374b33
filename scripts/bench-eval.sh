#!/usr/bin/env bash
# Benchmarks `faultlab eval`: about 1,600 graded runs (the control agents × the built-in tasks × 18 seeds)
# with --jobs 2, each a real agent process through the real proxy to the real workspace server, graded on five
# layers. Goal (the eval issue): under 5 minutes, i.e. at least 3.3 graded runs per second. Release build.
# A benchmark, not a test: it prints the figure and never fails on it (the oracle check is scripts/eval-oracle.sh).
#
# Environment:
#   FAULTLAB_BENCH_QUICK=1   one repeat (56 runs) on the debug build, only to prove it runs
#   FAULTLAB_BENCH_JSON      where the JSON report goes (default target/bench/eval.json)
set -euo pipefail

# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

# shellcheck source=scripts/lib/bench-release.sh
source "$ROOT/scripts/lib/bench-release.sh"
bench_paths eval

if [[ -n "${FAULTLAB_BENCH_QUICK:-}" ]]; then
    repeat=1
    profile=debug
    cargo build -q -p faultlab </dev/null
else
    repeat=18
    profile=release
    log "building faultlab (release)"
    cargo build -q --release -p faultlab </dev/null
fi
bin="$TARGET_DIR/$profile/faultlab"
[[ -x "$bin" ]] || die "no binary at $bin"
out="$TARGET_DIR/bench/eval-runs"
rm -rf "$out"
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
# `faultlab explore`: one built-in task, one control agent, every fault class at every tool call, three repeats
# (45 variant runs and 3 healthy runs), --jobs 2. Goal (the explore issue): about 50 single-fault variants in
# under 30 s. Not in quick mode.
if [[ -z "${FAULTLAB_BENCH_QUICK:-}" ]]; then
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
