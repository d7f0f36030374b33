#!/usr/bin/env bash
# The interoperability matrix: the fault suite against real MCP SDK clients (the official Python SDK, the official
# TypeScript SDK and rmcp), each over the transports it speaks. Cases: interop/matrix-cases.json; clients:
# interop/python/matrix_client.py, interop/ts/matrix_client.mjs, crates/faultlab/examples/interop_rmcp.rs;
# report: interop/matrix_report.py.
#
#   scripts/interop-matrix.sh            # run, compare with the committed docs/compatibility.{json,md}; fail on a change
#   scripts/interop-matrix.sh --record   # run and rewrite docs/compatibility.{json,md}
#
# Environment: FAULTLAB_BIN (default ${CARGO_TARGET_DIR:-target}/debug/faultlab, built when missing), PYTHON (for
# the venv). The pinned SDKs install into .cache/ (git-ignored): scripts/lib/py-interop.sh, scripts/lib/interop-ts.sh.
# Raw records and logs: .cache/interop-matrix/. The last line printed is `N passed, M failed` (cells that match the
# committed table); the exit status is non-zero when any cell changed.
set -euo pipefail

# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# Its summary line is what scripts/test.sh counts, so a run that cannot start says it failed.
die() {
  log "error: $*"
  echo "0 passed, 1 failed"
  exit 2
}

record=0
case "${1:-}" in
  "") ;;
  --record) record=1 ;;
  *) die "usage: scripts/interop-matrix.sh [--record]" ;;
esac

work=".cache/interop-matrix"
mkdir -p "$work"
rm -f "$work"/raw-*.jsonl
cases="interop/matrix-cases.json"
export PYTHONDONTWRITEBYTECODE=1
started=$SECONDS

# --- the pinned SDKs and the binaries ---------------------------------------------------------------------------
# shellcheck source=scripts/lib/py-interop.sh
source scripts/lib/py-interop.sh
install_py_interop
# shellcheck source=scripts/lib/interop-ts.sh
source scripts/lib/interop-ts.sh
install_interop_ts

target="${CARGO_TARGET_DIR:-target}"
if [[ -n "${FAULTLAB_BIN:-}" ]]; then
  bin="$FAULTLAB_BIN"
  [[ -x "$bin" ]] || die "FAULTLAB_BIN=$bin is not an executable file"
  cargo build -q --workspace --example interop_rmcp </dev/null
else
  cargo build -q --workspace --bin faultlab --example interop_rmcp </dev/null
  bin="$target/debug/faultlab"
fi
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
rmcp_example="$target/debug/examples/interop_rmcp"
rmcp_version="$(awk '/^name = "rmcp"$/ {getline; gsub(/"/, "", $3); print $3; exit}' Cargo.lock)"
[[ -n "$rmcp_version" ]] || die "rmcp not found in Cargo.lock"
log "binary $bin; rmcp $rmcp_version"

# --- the clients (each bounds every call itself; timeout is the last resort) -----------------------------------
run_client() {
  local name="$1"; shift
  log "$name"
  local rc=0
  timeout -k 10 300 "$@" >"$work/raw-$name.jsonl" 2>"$work/$name.log" </dev/null || rc=$?
  [[ "$rc" == 0 ]] || log "$name exited $rc (log: $work/$name.log)"
}
# The three clients run at once: each cell mostly waits on a fault's timeout, and each client starts its own servers.
cp interop/ts/matrix_client.mjs "$INTEROP_TS_DIR/matrix_client.mjs"
run_client python "$PY_INTEROP_PY" interop/python/matrix_client.py --bin "$bin" --cases "$cases" \
  --server-log "$work/python-server.log" &
run_client typescript "$INTEROP_TS_NODE" "$INTEROP_TS_DIR/matrix_client.mjs" --bin "$bin" --cases "$cases" &
run_client rmcp "$rmcp_example" --bin "$bin" --cases "$cases" --sdk-version "$rmcp_version" &
wait

# --- the report ---------------------------------------------------------------------------------------------------
out="$work/out"
rm -rf "$out"
python3 interop/matrix_report.py build --cases "$cases" --out-dir "$out" "$work"/raw-*.jsonl
log "ran in $((SECONDS - started)) s"

if [[ "$record" == 1 ]]; then
  cp "$out/compatibility.json" "$out/compatibility.md" docs/
  log "recorded docs/compatibility.json and docs/compatibility.md"
  python3 interop/matrix_report.py compare docs/compatibility.json "$out/compatibility.json"
  exit 0
fi

[[ -f docs/compatibility.json ]] || die "docs/compatibility.json missing: run scripts/interop-matrix.sh --record"
rc=0
diff -u docs/compatibility.md "$out/compatibility.md" >&2 || rc=1
summary="$(python3 interop/matrix_report.py compare docs/compatibility.json "$out/compatibility.json")" || rc=1
if [[ "$rc" != 0 ]]; then
  echo "interop-matrix: observations differ from the committed table; if the change is intended," \
    "re-record with scripts/interop-matrix.sh --record" >&2
fi
echo "$summary"
exit "$rc"
