#!/usr/bin/env bash
# The framework resilience matrix: nine agent frameworks (five Python, four TypeScript), each through its own MCP
# layer with `faultlab model` as its model, against every fault of the interoperability matrix
# (interop/matrix-cases.json) over stdio and Streamable HTTP. One Python process per framework
# (interop/frameworks/matrix.py) runs all its cells: a Python framework is imported into it (fw_<name>.py), a
# TypeScript one runs one Node process per cell (interop/frameworks/ts/fw_<name>.mjs, node_framework.py);
# interop/frameworks/report.py turns the records into docs/frameworks.json and the table in docs/frameworks.md.
#
#   scripts/frameworks-matrix.sh            # run all 1350 cells, compare with the committed docs/frameworks.{json,md}
#   scripts/frameworks-matrix.sh --record   # run all and rewrite them
#   scripts/frameworks-matrix.sh --record-missing  # run only the cells docs/frameworks.json has none of (the cases
#                                           # added since the last recording) and add them, keeping every other cell
#   scripts/frameworks-matrix.sh --check    # run a sample of the committed cells and compare each (the test command)
#   scripts/frameworks-matrix.sh --install  # only install the frameworks (venvs, npm packages: the test command,
#                                           # during the build)
#
# --check runs, for each framework and transport, one cell of every distinct behaviour in the committed
# docs/frameworks.json (`report.py sample`: run end × what the model was given × ping after, and a repeated call),
# preferring cells whose outcome does not depend on timing; a cell committed as hung runs once with the 12 s bound
# that decides hangs. About 110 cells, 2 minutes on the loaded 2-core machine; docs/frameworks.md lists them. It
# also fails for each case of interop/matrix-cases.json (or model-hop fault) no framework has a committed cell of
# (interop/frameworks/coverage.py): a case added there needs a --record (or --record-missing) here.
#
# Environment: FAULTLAB_BIN (default ${CARGO_TARGET_DIR:-target}/debug/faultlab, built first), PYTHON (for the
# venvs, scripts/lib/frameworks-venv.sh), FRAMEWORKS_MATRIX_ONLY (names of driver files, e.g. "fw_mastra
# fw_ai_sdk": run only those; the others' cells are kept as committed in docs/frameworks.json, so --record
# re-records those frameworks alone). Records and logs: .cache/frameworks-matrix/. The last line printed is
# `frameworks: N passed, M failed` (cells as committed); the exit status is non-zero when any cell changed.
# The full matrix is not part of the test command: on the shared 2-core machine it takes about 10 minutes.
set -euo pipefail

CALLER_PWD="$PWD"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
log() { echo "frameworks-matrix: $*" >&2; }
die() { log "error: $*"; echo "frameworks: 0 passed, 1 failed"; exit 2; }

mode=full
case "${1:-}" in
  "") ;;
  --record) mode=record ;;
  --check) mode=check ;;
  --record-missing) mode=record-missing ;;
  --install) mode=install ;;
  *) die "usage: scripts/frameworks-matrix.sh [--record | --record-missing | --check | --install]" ;;
esac

# shellcheck source=scripts/lib/faultlab-bin.sh
source scripts/lib/faultlab-bin.sh
# shellcheck source=scripts/lib/frameworks-venv.sh
source scripts/lib/frameworks-venv.sh
# shellcheck source=scripts/lib/frameworks-node.sh
source scripts/lib/frameworks-node.sh

export PYTHONDONTWRITEBYTECODE=1
started=$SECONDS
install_frameworks
install_frameworks_node
frameworks_node_drivers
if [[ "$mode" == install ]]; then
  log "venvs and npm packages installed in $((SECONDS - started)) s"
  exit 0
fi
work="$ROOT/.cache/frameworks-matrix"
rm -rf "$work"
mkdir -p "$work"
resolve_faultlab_bin
log "venvs and binary ready in $((SECONDS - started)) s"
started=$SECONDS

[[ -f docs/frameworks.json || "$mode" == record ]] ||
  die "docs/frameworks.json missing: run scripts/frameworks-matrix.sh --record"
sample=()
if [[ "$mode" == check ]]; then
  python3 interop/frameworks/report.py sample docs/frameworks.json >"$work/sample.json" ||
    die "could not choose the sample from docs/frameworks.json"
  sample=(--cells "$work/sample.json")
fi
if [[ "$mode" == record-missing ]]; then
  [[ -z "${FRAMEWORKS_MATRIX_ONLY:-}" ]] || die "FRAMEWORKS_MATRIX_ONLY goes with --record, not --record-missing"
  sample=(--missing-from docs/frameworks.json)
fi

# framework → the command that runs its cells: a Python framework's module in the venv that has it, a TypeScript
# framework's driver in the npm install, by the pinned Node (matrix.py itself needs only the standard library).
matrix=(interop/frameworks/matrix.py --bin "$FAULTLAB_BIN" --cases interop/matrix-cases.json)
declare -A command_of=(
  [fw_openai_agents]="$FRAMEWORKS_PY" [fw_pydantic_ai]="$FRAMEWORKS_PY" [fw_llamaindex]="$FRAMEWORKS_PY"
  [fw_langgraph]="$FRAMEWORKS_PY_MCP1" [fw_smolagents]="$FRAMEWORKS_PY_MCP1"
  [fw_ai_sdk]=node [fw_openai_agents_js]=node [fw_mastra]=node [fw_langchain_js]=node
)
only="${FRAMEWORKS_MATRIX_ONLY:-$(printf '%s\n' "${!command_of[@]}" | sort)}"
[[ -z "${FRAMEWORKS_MATRIX_ONLY:-}" || "$mode" != check ]] ||
  die "FRAMEWORKS_MATRIX_ONLY is for recording some frameworks again; --check runs the whole sample"
for module in $only; do
  [[ -n "${command_of[$module]:-}" ]] || die "FRAMEWORKS_MATRIX_ONLY: no framework $module (known: ${!command_of[*]})"
done
# The committed matrix's other frameworks, kept as they are when only some run.
keep=()
[[ -z "${FRAMEWORKS_MATRIX_ONLY:-}" ]] || keep=(--keep docs/frameworks.json)
# --record-missing: every committed cell stays, the new ones join them.
[[ "$mode" != record-missing ]] || keep=(--merge docs/frameworks.json)
# FRAMEWORKS_MATRIX_JOBS frameworks at once (default: all nine; their cells mostly wait, a hang is bounded at
# 3 s of no progress, see matrix.py).
jobs="${FRAMEWORKS_MATRIX_JOBS:-9}"
[[ "$jobs" =~ ^[1-9]$ ]] || die "FRAMEWORKS_MATRIX_JOBS must be a number from 1 to 9"
rc=0
running=0
for module in $only; do
  if ((running >= jobs)); then
    wait -n || rc=$?
    running=$((running - 1))
  fi
  if [[ "${command_of[$module]}" == node ]]; then
    run=(python3 "${matrix[@]}" --framework "$FRAMEWORKS_NODE_DRIVERS/$module.mjs" --node "$NODE_BIN")
  else
    run=("${command_of[$module]}" "${matrix[@]}" --framework "$module")
  fi
  # Node keeps the frameworks' compiled code between runs (V8's code cache): each cell is a fresh Node process.
  NODE_COMPILE_CACHE="$FRAMEWORKS_NODE_DIR/compile-cache" timeout -k 10 1200 "${run[@]}" --work "$work/$module" \
    "${sample[@]}" >"$work/raw-$module.jsonl" 2>"$work/$module.log" </dev/null &
  running=$((running + 1))
done
while ((running > 0)); do
  wait -n || rc=$?
  running=$((running - 1))
done
[[ "$rc" == 0 ]] || log "a framework's run failed (logs: $work/*.log)"
grep -h " cells in " "$work"/*.log >&2 || true

rerecord="if the change is intended, re-record with scripts/frameworks-matrix.sh --record (all cells, about 10 minutes)"
if [[ "$mode" == check ]]; then
  python3 interop/frameworks/report.py build --out "$work/frameworks.json" "${keep[@]}" "$work"/raw-*.jsonl ||
    die "the report could not be built"
  log "ran $(grep -c '"framework"' "$work/sample.json") sampled cells in $((SECONDS - started)) s"
  rc=0
  summary="$(python3 interop/frameworks/report.py compare docs/frameworks.json "$work/frameworks.json" \
    --cells "$work/sample.json")" || rc=1
  [[ "$rc" == 0 ]] || log "sampled cells differ from docs/frameworks.json (committed -> observed; logs and \
records: $work/<framework>/); $rerecord"
  # A case of the cases file no framework has a cell of fails the check too (one failure per case): the sample
  # is drawn from committed cells, so it would never run it.
  coverage_rc=0
  python3 interop/frameworks/coverage.py interop/matrix-cases.json docs/frameworks.json >"$work/coverage.txt" 2>&1 ||
    coverage_rc=$?
  uncovered="$(grep -c '^missing ' "$work/coverage.txt" || true)"
  # A coverage check that could not run counts as one failure, not as none.
  [[ "$coverage_rc" == 0 || "$uncovered" != 0 ]] || uncovered=1
  if [[ "$coverage_rc" != 0 ]]; then
    cat "$work/coverage.txt" >&2
    log "$uncovered case(s) of interop/matrix-cases.json have no cells in docs/frameworks.json; $rerecord"
    rc=1
    if [[ "$summary" =~ ^(.*)\ ([0-9]+)\ failed$ ]]; then
      summary="${BASH_REMATCH[1]} $((BASH_REMATCH[2] + uncovered)) failed"
    fi
  fi
  echo "$summary"
  exit "$rc"
fi

cp docs/frameworks.md "$work/frameworks.md"
python3 interop/frameworks/report.py build --out "$work/frameworks.json" --doc "$work/frameworks.md" \
  "${keep[@]}" "$work"/raw-*.jsonl || die "the report could not be built"
log "ran in $((SECONDS - started)) s"

if [[ "$mode" == record || "$mode" == record-missing ]]; then
  [[ -f docs/frameworks.json ]] && python3 interop/frameworks/report.py compare docs/frameworks.json "$work/frameworks.json" || true
  cp "$work/frameworks.json" "$work/frameworks.md" docs/
  log "recorded docs/frameworks.json and docs/frameworks.md"
  exit 0
fi

rc=0
diff -u docs/frameworks.md "$work/frameworks.md" >&2 || rc=1
summary="$(python3 interop/frameworks/report.py compare docs/frameworks.json "$work/frameworks.json")" || rc=1
[[ "$rc" == 0 ]] || log "observations differ from the committed matrix; $rerecord"
echo "$summary"
exit "$rc"
