#!/usr/bin/env bash
# Every example of README.md and docs/*.md, run as written (scripts/docs_examples.py says how each fenced block is
# checked and what its `<!-- example: ... -->` markers mean), on the state the README's set-up leaves: the demo's
# faultlab-demo/ made, the faultlab that `cargo run` built first on PATH. Also the Python example agent
# (examples/eval/agents/python_sdk_agent.py) graded on every built-in task, by the README's own `faultlab eval`
# line, with the pinned SDK in the venv the README's `.venv` line makes (here: the one scripts/lib/py-interop.sh
# makes from the same pins, linked as .venv).
#
#   scripts/docs-examples.sh
#
# The blocks run in a network namespace of their own when `unshare` can make one, so the fixed ports the
# examples show (8080, 8400) never meet another program's; else in the machine's.
#
# Environment:
#   FAULTLAB_BIN   the faultlab binary to test (a path, or a name on PATH); when unset, the workspace's debug build,
#                  brought up to date with `cargo build -p faultlab` (scripts/lib/faultlab-bin.sh)
#   PYTHON         the Python that creates the venv (default: python3; 3.11 or newer)
#   JOBS           blocks run at once (default 3: most of them wait on children and timeouts)
#
# The last line printed is `docs-examples: N passed, M failed, K skipped`; the exit status is 0 only when no block
# failed, 2 when the check could not be set up.
set -euo pipefail

# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

export PYTHONDONTWRITEBYTECODE=1

# shellcheck source=scripts/lib/py-interop.sh
source "$ROOT/scripts/lib/py-interop.sh"
resolve_faultlab_bin
python3 "$ROOT/scripts/docs_examples.py" --root "$ROOT" --self-test || die "the checker's self-test failed"
install_py_interop

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# --demo: the set-up's first command, `cargo run -p faultlab -- demo`, with the binary it builds, writes
# faultlab-demo/ in $work for the blocks that read it.
check=(python3 "$ROOT/scripts/docs_examples.py" --root "$ROOT" --bin "$FAULTLAB_BIN" --venv "$PY_INTEROP_VENV"
    --demo "$work" --jobs "${JOBS:-3}")
rc=0
if command -v ip >/dev/null && unshare --user --map-root-user --net true 2>/dev/null; then
    # The namespace's loopback is up for exactly the checker's life; nothing outside can reach it.
    unshare --user --map-root-user --net bash -c 'ip link set lo up && exec "$@"' bash "${check[@]}" || rc=$?
else
    log "no network namespace (unshare failed): the examples' ports are the machine's"
    "${check[@]}" || rc=$?
fi
exit "$rc"
