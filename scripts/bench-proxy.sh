#!/usr/bin/env bash
# Benchmarks `faultlab proxy` on stdio in front of the Node reference server @modelcontextprotocol/server-everything
# (crates/faultlab-bench, `proxy`), against the same server direct, in one run: sequential tools/call round trips,
# pipelined throughput, latency-fault precision, and the delay a latency fault adds to unrelated concurrent calls;
# then the same calls over Streamable HTTP (proxy / direct, and AgentBreak beside the proxy). A benchmark, not a
# test: it prints figures and never fails on them.
#
# Installs, pinned, on first use (all under the git-ignored .cache/):
#   - Node.js and @modelcontextprotocol/server-everything, by scripts/lib/everything-tools.sh (.cache/node)
#   - for scale, peers on the same workload (each left out with the reason when it cannot be had or run):
#     - a stdio relay on the official TypeScript SDK (crates/faultlab-bench/ts-relay.mjs), run on the SDK npm
#       installed beside server-everything (its dependency, resolved as of the same pinned date); nothing new to
#       install, the version is checked against TS_RELAY_SDK_VERSION;
#     - the Python relay mcp-drill (PyPI, `mcp-drill wrap`), pinned by version and wheel hash in a venv at
#       .cache/bench-proxy/drill-venv;
#     - AgentBreak (PyPI, `agentbreak serve`), an LLM and MCP chaos proxy that relays MCP over HTTP only, with
#       every dependency pinned by version and wheel hash in a venv at .cache/bench-proxy/agentbreak-venv; the
#       bench puts it in front of the HTTP workload.
#   With FAULTLAB_BENCH_QUICK=1 the Python peers are neither installed nor run.
#
# Then builds faultlab in release and runs `cargo bench -p faultlab-bench --bench proxy` on that binary
# (scripts/lib/bench-release.sh).
#
# Environment:
#   FAULTLAB_BENCH_QUICK=1     tiny counts (seconds; proves the bench runs, figures mean nothing)
#   FAULTLAB_BENCH_JSON        where the JSON report goes (default target/bench/proxy.json)
#   FAULTLAB_BENCH_NO_DRILL=1  leave mcp-drill out
#   FAULTLAB_BENCH_NO_AGENTBREAK=1  leave AgentBreak out
#   PYTHON                     the Python that creates the peers' venvs (default python3; mcp-drill needs 3.10 or
#                              newer, AgentBreak's pinned wheels are CPython 3.11 to 3.13 on x86_64 Linux)
set -euo pipefail

DRILL_VERSION=0.0.1
DRILL_SHA256=5fed478e5ecd6d4090573d9bcee6f9f7088e94fdf161a0a5aeb5811b93b27631 # mcp_drill-0.0.1-py3-none-any.whl

TS_RELAY_SDK_VERSION=1.32.2 # @modelcontextprotocol/sdk, the same pin as scripts/lib/interop-ts.sh

AGENTBREAK_VERSION=0.4.6
# agentbreak and every package it needs (resolved by pip on 2026-11-30), each pinned by version and wheel hash; the
# two compiled packages carry the hashes of their CPython 3.11, 3.12 and 3.13 x86_64 Linux wheels. pip's
# hash-checking mode installs exactly these or nothing (an unlisted dependency or another file fails the install).
# They are requirements, not a constraints file: pip 23 refuses a dependency pinned only by a constraint in that
# mode ("all requirements must have their versions pinned with ==").
AGENTBREAK_LOCK='agentbreak==0.4.6 --hash=sha256:5087cb4b52089c5c12bcf75ca023861dcf7edd372e912f20cf5c8344a378784c
annotated-doc==0.0.7 --hash=sha256:6bc31bbbec6dfaaedc1676dbc11dbda96fe22a2b5c400e9ebad113fec44a9dc6
annotated-types==0.8.0 --hash=sha256:f072f4d804ea359e4eaf198b1af7a8b0943881a87f31bb764f8bf219bb9419e0
anyio==4.16.0 --hash=sha256:c66ae634e0b8228396b801741beb3294326d4b6102f7bba4041c0dfb58c29026
certifi==2026.10.19.post1 --hash=sha256:1324c476b4811eff41a8bc2122cd0bbd4d9c7234c725446d99ab1612b3a7fdd2
click==8.5.1 --hash=sha256:8bb5376d2006950386f8c6427613334a2acadc5f559cb80e638d00b4df957e37
fastapi==0.165.0 --hash=sha256:896f48462042bb4f162147eb8fac7e858753dc1f486765709baf105d70e4fc5b
h11==0.16.0 --hash=sha256:63cf8bbe7522de3bf65932fda1d9c2772064ffb3dae62d55932da54b31cb6c86
httpcore==1.0.9 --hash=sha256:2d400746a40668fc9dec9810239072b40b4484b640a8c38fd654a024c7a1bf55
httpx==0.28.1 --hash=sha256:d909fcccc110f8c7faf814ca82a9a4d816bc5a6dbfea25d6591d6985b8ba59ad
idna==3.20 --hash=sha256:ab7ae7122974553370f0bdb919e1a960b2cd1bc1ef0276416d896db81c14582c
markdown-it-py==4.3.0 --hash=sha256:7aa1511a46c39138de78d9eba92ce47e63124d8003fc98b3a351909e04239efa
mdurl==0.1.2 --hash=sha256:84008a41e51615a49fc9966191ff91509e3c40b939176e643fd50a5c2196b8f8
opentelemetry-api==1.45.2 --hash=sha256:2cbd737377e710ee740d261c94e93fa0f08e6d037c18f17513cc0a2d94479a34
pydantic==2.14.4 --hash=sha256:653a2ad9f6d8858529c77c72717d0ea991d6c6837fe683246b2f4b2bbfc3fadc
pydantic-core==2.50.5 --hash=sha256:488319076ec92908b91fc6265ce761f1d78748f69f85518564fd16bf333e1b70 --hash=sha256:470bbc2495367f60d3ca849a8039e4c164701d10637e7743f4427d92651bdb6d --hash=sha256:cbfde3ad127786f1dea1a6cd89a5eb824a16203f24743ad2b4e07506f43bc844
pygments==2.21.0 --hash=sha256:2363c69b61c4a97c838da3b130dcd6468f4848992b21a82f2a63ec34377137d9
pyyaml==6.0.4 --hash=sha256:622aa875fa6533f25fedcffe23079357d65a690d462200afed5d8e9d0e01ebee --hash=sha256:93bfb2459195406a518e2f487a9bbf01df240175f31e06f5a252ac6734c7bbf0 --hash=sha256:50588147ab2c6a59b5f990a4905db80899a6c2bd197e046a6201f1e67587e794
rich==15.0.0 --hash=sha256:33bd4ef74232fb73fe9279a257718407f169c09b78a87ad3d296f548e27de0bb
shellingham==1.5.4 --hash=sha256:7ecfff8f2fd72616f7481040475a65b2bf8af90a56c89140852d1120324e8686
starlette==1.10.0 --hash=sha256:478c0ab3b4ced6e82719849c118fa406f0278a3499c1a898cd15cd31bdc38ce4
typer==0.29.2 --hash=sha256:f30731f8ca758368b836b3714872e58e395cef8fcaff918c853b1969ed5274e7
typing-extensions==4.16.0 --hash=sha256:481caa481374e813c1b176ada14e97f1f67a4539ce9cfeb3f350d78d6370c2e8
typing-inspection==0.4.5 --hash=sha256:bc210535442b39e1bf2805e0c7a17dfd6a4ace760c84c7f7d16245d23a6b1c39
uvicorn==0.54.0 --hash=sha256:505bdb0f318731d45f1f712071fc781a8981f6847a31c902c9f5e652d4f67faf'

# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

# shellcheck source=scripts/lib/everything-tools.sh
source "$ROOT/scripts/lib/everything-tools.sh"
# shellcheck source=scripts/lib/bench-release.sh
source "$ROOT/scripts/lib/bench-release.sh"
bench_paths proxy

DRILL_CACHE="$ROOT/.cache/bench-proxy"
DRILL_VENV="$DRILL_CACHE/drill-venv"
DRILL_BIN="$DRILL_VENV/bin/mcp-drill"
DRILL_STAMP="$DRILL_VENV/.bench-stamp"
AGENTBREAK_VENV="$DRILL_CACHE/agentbreak-venv"
AGENTBREAK_BIN="$AGENTBREAK_VENV/bin/agentbreak"
AGENTBREAK_STAMP="$AGENTBREAK_VENV/.bench-stamp"

# Installs a hash-locked Python peer into its own venv unless the same lock and Python are there already; prints
# nothing on success, or the reason it could not be had on stdout (then the bench runs without it).
#   install_locked_venv NAME VENV BIN STAMP PIN REQUIREMENTS PIP_FLAG...
# PIN identifies the lock (it goes into the stamp with the Python version); REQUIREMENTS is the requirements text,
# every line with --hash; PIP_FLAGs are added to `pip install --require-hashes`.
install_locked_venv() {
    local name="$1" venv="$2" bin="$3" stamp="$4" pin="$5" requirements="$6"
    shift 6
    local python="${PYTHON:-python3}" want lock_fd out
    command -v "$python" >/dev/null 2>&1 || { echo "no $python to create its venv"; return 0; }
    want="$pin $("$python" -c 'import sys; print(sys.version.split()[0])' </dev/null)"
    if [[ -x "$bin" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
        log "using $venv ($name already installed)"
        return 0
    fi
    mkdir -p "$DRILL_CACHE"
    exec {lock_fd}>"$ROOT/.cache/bench-proxy.lock"
    flock -w 900 "$lock_fd" || { echo "could not lock .cache/bench-proxy.lock within 900 s"; return 0; }
    if ! [[ -x "$bin" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
        log "installing $pin (hash-pinned) into $venv"
        rm -rf "$venv"
        if ! out="$("$python" -m venv "$venv" 2>&1 </dev/null)"; then
            exec {lock_fd}>&-
            echo "python -m venv failed: ${out//$'\n'/ }"
            return 0
        fi
        printf '%s\n' "$requirements" >"$venv/requirements.txt"
        if ! out="$(PIP_CACHE_DIR="$DRILL_CACHE/pip-cache" PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 \
            "$venv/bin/python" -m pip install --quiet --require-hashes "$@" -r "$venv/requirements.txt" 2>&1 </dev/null)"; then
            exec {lock_fd}>&-
            echo "pip install $pin failed: $(tail -n 3 <<<"$out" | tr '\n' ' ')"
            return 0
        fi
        printf '%s\n' "$want" >"$stamp"
    fi
    exec {lock_fd}>&-
}

# After an install: prints why the tool is left out when it does not run or is not the pinned version (WANT is what
# COMMAND prints); otherwise logs PREFIX and that version, with its Python.
check_installed() { # check_installed NAME PREFIX WANT VENV COMMAND [ARGS...]
    local name="$1" prefix="$2" want="$3" venv="$4" version
    shift 4
    if ! version="$("$@" </dev/null 2>&1)" || [[ "$version" != "$want" ]]; then
        echo "installed $name does not run ($name ${*:2} said: ${version//$'\n'/ })"
        return 0
    fi
    log "$prefix$version ($("$venv/bin/python" --version </dev/null 2>&1))"
}

# mcp-drill: 'wrap' uses the standard library only; the package's one dependency (jsonschema) is for its 'scan'
# extra, so it is installed without dependencies.
install_drill() {
    local reason
    reason="$(install_locked_venv mcp-drill "$DRILL_VENV" "$DRILL_BIN" "$DRILL_STAMP" \
        "mcp-drill==$DRILL_VERSION sha256=$DRILL_SHA256" \
        "mcp-drill==$DRILL_VERSION --hash=sha256:$DRILL_SHA256" --no-deps)"
    [[ -z "$reason" ]] || { echo "$reason"; return 0; }
    check_installed mcp-drill "mcp-drill " "$DRILL_VERSION" "$DRILL_VENV" "$DRILL_BIN" version
}

# AgentBreak and its locked dependencies, wheels only: nothing is built, so the install runs no package's code.
install_agentbreak() {
    local reason
    reason="$(install_locked_venv agentbreak "$AGENTBREAK_VENV" "$AGENTBREAK_BIN" "$AGENTBREAK_STAMP" \
        "agentbreak==$AGENTBREAK_VERSION lock=$(sha256sum <<<"$AGENTBREAK_LOCK" | cut -c1-16)" \
        "$AGENTBREAK_LOCK" --only-binary=:all:)"
    [[ -z "$reason" ]] || { echo "$reason"; return 0; }
    check_installed agentbreak "" "agentbreak $AGENTBREAK_VERSION" "$AGENTBREAK_VENV" "$AGENTBREAK_BIN" --version
}

# The TS relay's SDK: the one beside server-everything, if it is the pinned version; prints nothing when it is, or
# why the relay is left out.
check_ts_sdk() {
    local have
    if ! have="$("$EVERYTHING_NODE_BIN" -p 'require(process.argv[1]).version' "$TS_SDK_DIR/package.json" </dev/null 2>&1)"; then
        echo "no @modelcontextprotocol/sdk at $TS_SDK_DIR"
    elif [[ "$have" != "$TS_RELAY_SDK_VERSION" ]]; then
        echo "server-everything came with @modelcontextprotocol/sdk $have, the relay is pinned to $TS_RELAY_SDK_VERSION"
    else
        log "TS relay on @modelcontextprotocol/sdk $have"
    fi
}

# Why an optional comparison tool is left out of this run, or nothing when it is installed and runs: its own
# opt-out variable set to 1, a quick run, or what its INSTALL function says went wrong.
left_out_why() { # left_out_why OPT_OUT_VARIABLE INSTALL_FUNCTION
    if [[ "${!1:-}" == 1 ]]; then
        echo "left out ($1=1)"
    elif [[ "${FAULTLAB_BENCH_QUICK:-}" == 1 ]]; then
        echo "left out of the quick run"
    else
        "$2"
    fi
}

# ---------------------------------------------------------------- tools
install_everything
verify_everything
DRILL_SKIP="$(left_out_why FAULTLAB_BENCH_NO_DRILL install_drill)"
if [[ -n "$DRILL_SKIP" ]]; then
    log "mcp-drill skipped: $DRILL_SKIP"
    DRILL_ARG=""
else
    DRILL_ARG="$DRILL_BIN"
fi
AGENTBREAK_SKIP="$(left_out_why FAULTLAB_BENCH_NO_AGENTBREAK install_agentbreak)"
if [[ -n "$AGENTBREAK_SKIP" ]]; then
    log "AgentBreak skipped: $AGENTBREAK_SKIP"
    AGENTBREAK_ARG=""
else
    AGENTBREAK_ARG="$AGENTBREAK_BIN"
fi
TS_SDK_DIR="$EVERYTHING_DIR/node_modules/@modelcontextprotocol/sdk"
TS_SKIP="$(check_ts_sdk)"
if [[ -n "$TS_SKIP" ]]; then
    log "TS SDK relay skipped: $TS_SKIP"
    TS_SDK_ARG=""
else
    TS_SDK_ARG="$TS_SDK_DIR"
fi

# ---------------------------------------------------------------- build and run
bench_release proxy \
    FAULTLAB_BENCH_NODE="$EVERYTHING_NODE_BIN" \
    FAULTLAB_BENCH_EVERYTHING="$EVERYTHING_JS" \
    FAULTLAB_BENCH_DRILL="$DRILL_ARG" \
    FAULTLAB_BENCH_DRILL_SKIP="$DRILL_SKIP" \
    FAULTLAB_BENCH_AGENTBREAK="$AGENTBREAK_ARG" \
    FAULTLAB_BENCH_AGENTBREAK_SKIP="$AGENTBREAK_SKIP" \
    FAULTLAB_BENCH_TS_SDK="$TS_SDK_ARG" \
    FAULTLAB_BENCH_TS_SKIP="$TS_SKIP"
