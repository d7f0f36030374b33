# shellcheck shell=bash
# Shared by scripts/conformance.sh, conformance-client.sh and conformance-proxy.sh (sourced, not run): the pinned
# Node.js and @modelcontextprotocol/conformance, from scripts/lib/node-tools.sh (.cache/node, git-ignored).
# The sourcing script sets ROOT and defines log and die (die exits) before calling install_tools and verify_tools,
# and SCENARIO_TIMEOUT before run_conformance.

# shellcheck source=scripts/lib/node-tools.sh
source "$ROOT/scripts/lib/node-tools.sh"
CONFORMANCE_VERSION="$NODE_CONFORMANCE_VERSION"
CONFORMANCE_JS="$NODE_MODULES/@modelcontextprotocol/conformance/dist/index.js"

install_tools() { install_node_file "$CONFORMANCE_JS" "conformance CLI"; }

verify_tools() { verify_node_package @modelcontextprotocol/conformance "$CONFORMANCE_VERSION"; }

# run_conformance MODE SCENARIO OUT_DIR ARG...: one scenario of the suite (`conformance MODE ARG... --scenario
# SCENARIO -o OUT_DIR`), its command line echoed, bounded by SCENARIO_TIMEOUT seconds, its output also in
# OUT_DIR/output.txt; sets RC to its exit status (124 or 137: timed out).
run_conformance() {
    local mode="$1" scenario="$2" out_dir="$3"
    shift 3
    mkdir -p "$out_dir"
    echo "=== scenario $scenario ==="
    echo "\$ $NODE_BIN $CONFORMANCE_JS $mode $* --scenario $scenario -o $out_dir"
    RC=0
    timeout --kill-after=5 "$SCENARIO_TIMEOUT" \
        "$NODE_BIN" "$CONFORMANCE_JS" "$mode" "$@" --scenario "$scenario" -o "$out_dir" \
        </dev/null 2>&1 | tee "$out_dir/output.txt" || RC=${PIPESTATUS[0]}
}
