#!/usr/bin/env bash
# Benchmarks the lineage-driven search of `faultlab explore` against `--exhaustive` at --max-faults 3 on the
# controls: for each control agent on the built-in transport-timeout-after-write task, the runs each needed and
# the minimal failing sets each found; the search must find every minimal failing set exhaustive finds. Goal (the
# explore issue): at least 5× fewer runs at k = 3. A benchmark, not a test: it prints the figure and never fails on
# the ratio (it exits 1 only when the search missed a set exhaustive found, or a command could not run).
#
# Environment:
#   FAULTLAB_BENCH_QUICK=1      the debug build, four classes (error, timeout, timeout-after, malformed)
#   FAULTLAB_EXPLORE_CLASSES    the classes, comma-separated (default: every class; each by its representative)
#   FAULTLAB_BENCH_JSON         where the JSON report goes (default target/bench/explore.json)
#   FAULTLAB_BIN                the faultlab binary to measure (default: the release build, or the debug build with
#                               FAULTLAB_BENCH_QUICK, built here)
set -euo pipefail

# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

# shellcheck source=scripts/lib/bench-release.sh
source "$ROOT/scripts/lib/bench-release.sh"
bench_paths explore-search

classes="${FAULTLAB_EXPLORE_CLASSES:-}"
[[ -z "${FAULTLAB_BENCH_QUICK:-}" ]] || classes="${classes:-error,timeout,timeout-after,malformed}"
bench_binary
out="$TARGET_DIR/bench/explore-search"
rm -rf "$out"
mkdir -p "$out"
args=(explore --controls --quick --max-faults 3 --seed 1 --jobs 2)
[[ -z "$classes" ]] || args+=(--classes "$classes")
for mode in search exhaustive; do
    extra=()
    [[ "$mode" == search ]] || extra=(--exhaustive)
    log "faultlab ${args[*]} ${extra[*]} ($profile)"
    start=$(date +%s.%N)
    # The oracle speaks of single faults: a disagreement (exit 2) is not this bench's concern.
    "$bin" "${args[@]}" "${extra[@]}" --out "$out/$mode" >"$out/$mode.console.txt" 2>&1 || true
    end=$(date +%s.%N)
    [[ -f "$out/$mode/report.json" ]] || { cat "$out/$mode.console.txt"; die "faultlab explore ($mode) wrote no report"; }
    echo "$start $end" >"$out/$mode.wall"
done
python3 - "$out" "$JSON_OUT" "$profile" "${classes:-all}" <<'PY'
import json, sys
out, json_out, profile, classes = sys.argv[1:]

def load(mode):
    report = json.load(open(f"{out}/{mode}/report.json"))
    # The figure is the stdio task's; --controls also explores its HTTP twin for the stream and session classes.
    report["explorations"] = [e for e in report["explorations"] if e["task"] == "transport-timeout-after-write"]
    start, end = map(float, open(f"{out}/{mode}.wall").read().split())
    return report, end - start

def minimal(e):
    broke = [frozenset((f["call"], f["class"], f["fault"]) for f in v["faults"]) for v in e["variants"] if v["broke"]]
    return {s for s in broke if not any(o < s for o in broke)}

search, search_wall = load("search")
exhaustive, exhaustive_wall = load("exhaustive")
rows, missed = [], []
for s, x in zip(search["explorations"], exhaustive["explorations"]):
    runs = lambda e: sum(v["runs"] for v in e["variants"])
    found, wanted = minimal(s), minimal(x)
    if not wanted <= found:
        missed.append(f"{s['agent']}: {sorted(map(sorted, wanted - found))}")
    rows.append({"agent": s["agent"], "search_runs": runs(s), "exhaustive_runs": runs(x),
                 "minimal_sets": len(wanted), "found": len(found & wanted)})
total_s = sum(r["search_runs"] for r in rows)
total_x = sum(r["exhaustive_runs"] for r in rows)
result = {"profile": profile, "classes": classes, "max_faults": 3, "agents": rows, "search_runs": total_s,
          "exhaustive_runs": total_x, "ratio": round(total_x / max(total_s, 1), 2),
          "search_wall_s": round(search_wall, 1), "exhaustive_wall_s": round(exhaustive_wall, 1),
          "missed": missed, "goal": "every minimal failing set exhaustive finds, with at least 5x fewer runs at k = 3"}
json.dump(result, open(json_out, "w"), indent=2)
for r in rows:
    print(f"bench-explore: {r['agent']}: search {r['search_runs']} runs, exhaustive {r['exhaustive_runs']} runs, "
          f"{r['found']}/{r['minimal_sets']} minimal failing sets")
print(f"bench-explore: search {total_s} runs ({search_wall:.1f} s), exhaustive {total_x} runs ({exhaustive_wall:.1f} s): "
      f"{total_x / max(total_s, 1):.1f}x fewer; missed {len(missed)}")
sys.exit(1 if missed else 0)
PY
