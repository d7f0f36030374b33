# shellcheck shell=bash
# Shared by the serve and proxy benchmarks and scripts/conformance-proxy.sh (sourced, not run): the Node reference
# server @modelcontextprotocol/server-everything and the Node.js that runs it, from scripts/lib/node-tools.sh
# (.cache/node, git-ignored). Every name defined here starts with EVERYTHING_ or everything_. The sourcing script
# sets ROOT and defines log and die (die exits) before calling install_everything and verify_everything.

# shellcheck source=scripts/lib/node-tools.sh
source "$ROOT/scripts/lib/node-tools.sh"
EVERYTHING_DIR="$NODE_DIR"
EVERYTHING_NODE_BIN="$NODE_BIN"
EVERYTHING_JS="$NODE_MODULES/@modelcontextprotocol/server-everything/dist/index.js"

install_everything() { install_node_file "$EVERYTHING_JS" "server-everything"; }

verify_everything() { verify_node_package @modelcontextprotocol/server-everything "$NODE_EVERYTHING_VERSION"; }
