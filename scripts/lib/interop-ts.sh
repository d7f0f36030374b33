# shellcheck shell=bash
# Shared helper (sourced, not run) for scripts/interop-matrix.sh: the official MCP TypeScript SDK and the Node.js
# that runs its client, from scripts/lib/node-tools.sh (.cache/node, git-ignored). The client script is copied into
# INTEROP_TS_DIR so that it resolves the pinned SDK. The sourcing script sets ROOT and defines log and die.

# shellcheck source=scripts/lib/node-tools.sh
source "$ROOT/scripts/lib/node-tools.sh"
INTEROP_TS_DIR="$NODE_DIR"
INTEROP_TS_NODE="$NODE_BIN"

install_interop_ts() {
    install_node
    verify_node_package @modelcontextprotocol/sdk "$NODE_SDK_VERSION"
}
