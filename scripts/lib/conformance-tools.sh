# shellcheck shell=bash
# Shared by scripts/conformance.sh, conformance-client.sh and conformance-proxy.sh (sourced, not run): the pinned
# Node.js and @modelcontextprotocol/conformance, from scripts/lib/node-tools.sh (.cache/node, git-ignored).
# The sourcing script sets ROOT and defines log and die (die exits) before calling install_tools and verify_tools.

# shellcheck source=scripts/lib/node-tools.sh
source "$ROOT/scripts/lib/node-tools.sh"
CONFORMANCE_VERSION="$NODE_CONFORMANCE_VERSION"
CONFORMANCE_JS="$NODE_MODULES/@modelcontextprotocol/conformance/dist/index.js"

install_tools() { install_node_file "$CONFORMANCE_JS" "conformance CLI"; }

verify_tools() { verify_node_package @modelcontextprotocol/conformance "$CONFORMANCE_VERSION"; }
