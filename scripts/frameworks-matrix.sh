#!/usr/bin/env bash
# The framework resilience matrix: five agent frameworks, each through its own MCP layer with `faultlab model` as
# its model, against every fault of the interoperability matrix (interop/matrix-cases.json) over stdio and
# Streamable HTTP. One Python process per framework (interop/frameworks/matrix.py with fw_<name>.py) runs all its
# cells; interop/frameworks/report.py turns the records into docs/frameworks.json and the table in
# docs/frameworks.md.
#
#   scripts/frameworks-matrix.sh            # run all 230 cells, compare with the committed docs/frameworks.{json,md}
#   scripts/frameworks-matrix.sh --record   # run all and rewrite them
#   scripts/frameworks-matrix.sh --check    # run a sample of the committed cells and compare each (the test command)
#   scripts/frameworks-matrix.sh --install  # only install the frameworks' venvs (the test command, during the build)
#
# --check runs, for each framework and transport, one cell of every distinct behaviour in the committed
# docs/frameworks.json (`report.py sample`: run end × what the model was given × ping after, and a repeated call),
# preferring cells whose outcome does not depend on timing; a cell committed as hung runs once with the 12 s bound
# that decides hangs. About 30 cells, 20 to 30 s with the venvs installed; docs/frameworks.md lists them.
#
# Environment: FAULTLAB_BIN (default ${CARGO_TARGET_DIR:-target}/debug/faultlab, built first), PYTHON (for the
# venvs, scripts/lib/frameworks-venv.sh). Records and logs: .cache/frameworks-matrix/. The last line printed is
# `frameworks: N passed, M failed` (cells as committed); the exit status is non-zero when any cell changed.
# The full matrix is not part of the test command: on the shared 2-core machine it takes 5 to 7 minutes
# (FRAMEWORKS_MATRIX_JOBS=2).
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
  --install) mode=install ;;
  *) die "usage: scripts/frameworks-matrix.sh [--record | --check | --install]" ;;
esac

# shellcheck source=scripts/lib/faultlab-bin.sh
source scripts/lib/faultlab-bin.sh
# shellcheck source=scripts/lib/frameworks-venv.sh
source scripts/lib/frameworks-venv.sh

export PYTHONDONTWRITEBYTECODE=1
started=$SECONDS
install_frameworks
if [[ "$mode" == install ]]; then
  log "venvs installed in $((SECONDS - started)) s"
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

# framework module → the venv that has it
declare -A python_of=(
  [fw_openai_agents]="$FRAMEWORKS_PY" [fw_pydantic_ai]="$FRAMEWORKS_PY" [fw_llamaindex]="$FRAMEWORKS_PY"
  [fw_langgraph]="$FRAMEWORKS_PY_MCP1" [fw_smolagents]="$FRAMEWORKS_PY_MCP1"
)
# FRAMEWORKS_MATRIX_JOBS frameworks at once (default: all five; their cells mostly wait, a hang is bounded at
# 3 s of no progress, see matrix.py).
jobs="${FRAMEWORKS_MATRIX_JOBS:-5}"
[[ "$jobs" =~ ^[1-9]$ ]] || die "FRAMEWORKS_MATRIX_JOBS must be a number from 1 to 9"
rc=0
running=0
for module in fw_langgraph fw_llamaindex fw_openai_agents fw_pydantic_ai fw_smolagents; do
  if ((running >= jobs)); then
    wait -n || rc=$?
    running=$((running - 1))
  fi
  timeout -k 10 600 "${python_of[$module]}" interop/frameworks/matrix.py --framework "$module" \
    --bin "$FAULTLAB_BIN" --cases interop/matrix-cases.json --work "$work/$module" "${sample[@]}" \
    >"$work/raw-$module.jsonl" 2>"$work/$module.log" </dev/null &
  running=$((running + 1))
done
while ((running > 0)); do
  wait -n || rc=$?
  running=$((running - 1))
done
[[ "$rc" == 0 ]] || log "a framework's run failed (logs: $work/*.log)"
grep -h " cells in " "$work"/*.log >&2 || true

rerecord="if the change is intended, re-record with scripts/frameworks-matrix.sh --record (all cells, 5 to 7 minutes)"
if [[ "$mode" == check ]]; then
  python3 interop/frameworks/report.py build --out "$work/frameworks.json" "$work"/raw-*.jsonl ||
    die "the report could not be built"
  log "ran $(grep -c '"framework"' "$work/sample.json") sampled cells in $((SECONDS - started)) s"
  rc=0
  summary="$(python3 interop/frameworks/report.py compare docs/frameworks.json "$work/frameworks.json" \
    --cells "$work/sample.json")" || rc=1
  [[ "$rc" == 0 ]] || log "sampled cells differ from docs/frameworks.json (committed -> observed; logs and \
records: $work/<framework>/); $rerecord"
  echo "$summary"
  exit "$rc"
fi

cp docs/frameworks.md "$work/frameworks.md"
python3 interop/frameworks/report.py build --out "$work/frameworks.json" --doc "$work/frameworks.md" \
  "$work"/raw-*.jsonl || die "the report could not be built"
log "ran in $((SECONDS - started)) s"

if [[ "$mode" == record ]]; then
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
