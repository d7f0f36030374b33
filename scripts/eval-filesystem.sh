#!/usr/bin/env bash
# Eval against a server nobody on the team wrote: every control agent on examples/eval/external/
# filesystem-timeout-after-write.yaml, through `faultlab proxy` to the reference @modelcontextprotocol/server-filesystem
# (pinned, installed under .cache/node by scripts/lib/filesystem-tools.sh), each verdict checked against
# examples/eval/external/oracle.yaml. Without the built-in server there is no side-effect ledger, so this proves the
# grader's other path: write counts from the trajectory's executed flags, state from the workspace snapshots.
#
#   scripts/eval-filesystem.sh
#
# Environment:
#   FAULTLAB_BIN   the faultlab binary (default: the workspace's debug build, built when needed)
#
# Reports go to .cache/eval-filesystem/. Exit status: that of `faultlab eval --controls --oracle …`.
set -euo pipefail

DIE_STATUS=1
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# shellcheck source=scripts/lib/filesystem-tools.sh
source "$ROOT/scripts/lib/filesystem-tools.sh"
install_filesystem
verify_filesystem
resolve_faultlab_bin

# The task's server command reads these (it is started by the proxy, which the agent starts).
export FAULTLAB_FS_NODE="$FILESYSTEM_NODE_BIN" FAULTLAB_FS_JS="$FILESYSTEM_JS"
out="$ROOT/.cache/eval-filesystem"
mkdir -p "$out"
log "faultlab eval --controls on the filesystem task (reports in $out)"
status=0
"$FAULTLAB_BIN" eval --controls --oracle "$ROOT/examples/eval/external/oracle.yaml" --jobs 2 --out "$out" \
    "$ROOT/examples/eval/external/filesystem-timeout-after-write.yaml" >"$out/console.txt" || status=$?
cat "$out/console.txt"
[[ "$status" == 0 ]] || { echo "eval-filesystem: error: faultlab eval exited $status" >&2; exit "$status"; }
log "ok"
