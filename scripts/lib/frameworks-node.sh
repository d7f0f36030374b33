# shellcheck shell=bash
# Shared by scripts/frameworks-matrix.sh (sourced, not run): the TypeScript agent frameworks of the framework matrix,
# pinned by interop/frameworks/ts/package.json (exact versions) and package-lock.json (every transitive package,
# with its integrity hash), installed by `npm ci` into .cache/frameworks-node (git-ignored), run by the pinned
# Node 22 of scripts/lib/node-tools.sh. Rebuilt only when the pins, npm's options or the pinned Node change.
#
# Names start with FRAMEWORKS_NODE_ or frameworks_node_. The sourcing script sets ROOT and defines log and die.

# shellcheck source=scripts/lib/node-tools.sh
source "$ROOT/scripts/lib/node-tools.sh"
FRAMEWORKS_NODE_PINS="$ROOT/interop/frameworks/ts"
FRAMEWORKS_NODE_DIR="$ROOT/.cache/frameworks-node"
# Install scripts stay off (no package here needs one to run), so an install runs no code from the registry.
FRAMEWORKS_NODE_NPM_OPTIONS=(--no-audit --no-fund --no-update-notifier --ignore-scripts)

# Installs the pinned Node (install_node) and the frameworks (idempotent); scripts running at once take turns.
install_frameworks_node() {
    local lock_fd want
    install_node
    want="$({ echo "$NODE_PKG_VERSION ${FRAMEWORKS_NODE_NPM_OPTIONS[*]}"
        cat "$FRAMEWORKS_NODE_PINS/package.json" "$FRAMEWORKS_NODE_PINS/package-lock.json"; } | sha256sum | cut -d' ' -f1)"
    [[ "$(cat "$FRAMEWORKS_NODE_DIR/.stamp" 2>/dev/null)" == "$want" ]] && return 0
    mkdir -p "$ROOT/.cache"
    exec {lock_fd}>"$ROOT/.cache/frameworks-node.lock"
    flock -w 900 "$lock_fd" || die "could not lock $ROOT/.cache/frameworks-node.lock within 900 s (another install running?)"
    if [[ "$(cat "$FRAMEWORKS_NODE_DIR/.stamp" 2>/dev/null)" != "$want" ]]; then
        log "installing interop/frameworks/ts/package-lock.json into $FRAMEWORKS_NODE_DIR"
        rm -rf "$FRAMEWORKS_NODE_DIR"
        mkdir -p "$FRAMEWORKS_NODE_DIR"
        cp "$FRAMEWORKS_NODE_PINS/package.json" "$FRAMEWORKS_NODE_PINS/package-lock.json" "$FRAMEWORKS_NODE_DIR/"
        # The machine's npm may run on an older Node and warn (EBADENGINE) about packages that want Node >= 22;
        # they run on the pinned Node 22.
        (cd "$FRAMEWORKS_NODE_DIR" && npm_config_cache="$ROOT/.cache/npm" npm ci "${FRAMEWORKS_NODE_NPM_OPTIONS[@]}" \
            --loglevel=error </dev/null >&2) || die "npm ci of interop/frameworks/ts/package-lock.json failed"
        printf '%s\n' "$want" >"$FRAMEWORKS_NODE_DIR/.stamp"
    fi
    exec {lock_fd}>&-
}

# Copies the drivers (interop/frameworks/ts/*.mjs) into the install, where Node resolves their packages; sets
# FRAMEWORKS_NODE_DRIVERS to that folder.
frameworks_node_drivers() {
    FRAMEWORKS_NODE_DRIVERS="$FRAMEWORKS_NODE_DIR/drivers"
    mkdir -p "$FRAMEWORKS_NODE_DRIVERS"
    cp "$FRAMEWORKS_NODE_PINS"/*.mjs "$FRAMEWORKS_NODE_DRIVERS/"
}
