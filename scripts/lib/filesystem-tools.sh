# shellcheck shell=bash
# Shared by scripts/proxy-filesystem.sh and eval-filesystem.sh (sourced, not run): the reference stdio server
# @modelcontextprotocol/server-filesystem and the Node.js that runs it, from scripts/lib/node-tools.sh
# (.cache/node, git-ignored). Every name defined here starts with FILESYSTEM_ or filesystem_. The sourcing script
# sets ROOT and defines log and die (die exits) before calling install_filesystem and verify_filesystem.

# shellcheck source=scripts/lib/node-tools.sh
source "$ROOT/scripts/lib/node-tools.sh"
FILESYSTEM_NODE_BIN="$NODE_BIN"
FILESYSTEM_JS="$NODE_MODULES/@modelcontextprotocol/server-filesystem/dist/index.js"

install_filesystem() { install_node_file "$FILESYSTEM_JS" "server-filesystem"; }

verify_filesystem() { verify_node_package @modelcontextprotocol/server-filesystem "$NODE_FILESYSTEM_VERSION"; }
