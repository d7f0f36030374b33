#!/usr/bin/env bash
# Interop check against a client nobody on the team wrote: the official MCP Python SDK, pinned in
# interop/python/requirements.txt (+ constraints.txt), runs interop/python/client_check.py against
# `faultlab serve` over stdio and over Streamable HTTP.
#
#   scripts/interop-python.sh
#
# Environment:
#   FAULTLAB_BIN   the faultlab binary to test (a path, or a name on PATH; default: the workspace debug build,
#                  brought up to date with `cargo build -p faultlab`: scripts/lib/faultlab-bin.sh)
#   PYTHON         the Python that creates the venv (default: python3; 3.11 or newer)
#
# The venv lives in .cache/py-interop/venv (scripts/lib/py-interop.sh, shared with scripts/proxy-filesystem.sh)
# and is rebuilt only when the requirements, the constraints or the Python change. Server stderr goes to
# .cache/py-interop/logs/. The last line printed is `N passed, M failed` (counting checks); the exit status is
# non-zero if any check failed.
set -euo pipefail

# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

interop="interop/python"
logs=".cache/py-interop/logs"
export PYTHONDONTWRITEBYTECODE=1

mkdir -p "$logs"

# --- the pinned SDK in a venv, installed only when something it depends on changed -------------------
# shellcheck source=scripts/lib/py-interop.sh
source "$ROOT/scripts/lib/py-interop.sh"
install_py_interop
venv="$PY_INTEROP_VENV"

# --- the binary ------------------------------------------------------------------------------------------
resolve_faultlab_bin
bin="$FAULTLAB_BIN"

# --- the checks ------------------------------------------------------------------------------------------
passed=0
failed=0
for transport in stdio http; do
  out="$logs/$transport-checks.jsonl"
  log="$logs/$transport-server.log"
  : >"$log"
  echo "interop-python: $transport"
  rc=0
  # client_check bounds itself (watchdog); timeout is the last resort should the interpreter wedge.
  timeout -k 10 240 "$venv/bin/python" "$interop/client_check.py" \
    --transport "$transport" --bin "$bin" --server-log "$log" </dev/null | tee "$out" || rc=$?
  # A non-zero exit with no failed check recorded (a crash, the outer timeout) still counts as a failure.
  read -r p f < <("$venv/bin/python" "$interop/tally.py" "$out" "$rc")
  if [[ "$rc" != 0 ]]; then
    echo "interop-python: $transport: client_check exited $rc; server log: $log" >&2
  fi
  passed=$((passed + p))
  failed=$((failed + f))
done

echo "$passed passed, $failed failed"
[[ "$failed" == 0 ]]
