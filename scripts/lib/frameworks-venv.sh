# shellcheck shell=bash
# Shared by scripts/frameworks.sh, scripts/frameworks-matrix.sh and scripts/frameworks-eval.sh (sourced, not run;
# the test command installs through `scripts/frameworks-matrix.sh --install`, in the background while Rust
# compiles): the
# pinned agent frameworks in two venvs under .cache/frameworks (git-ignored), installed by uv (itself pinned, from
# PyPI) because pip takes minutes over 200 wheels and uv seconds:
#   venv       interop/frameworks/requirements.txt (+ constraints.txt): openai-agents, PydanticAI, LlamaIndex (MCP SDK 2.x)
#   venv-mcp1  interop/frameworks/mcp1-requirements.txt (+ mcp1-constraints.txt): LangGraph, smolagents (MCP SDK 1.x)
# Each is rebuilt only when its pins, uv's pin, the install's options or the Python change. The modules are
# compiled to bytecode at install (--compile-bytecode): the matrix runs with PYTHONDONTWRITEBYTECODE, and every
# run compiling the frameworks' sources again cost each import about twice its time (LlamaIndex: 11 s of CPU
# instead of 6).
#
# Names start with FRAMEWORKS_ or frameworks_. The sourcing script sets ROOT and defines log and die (die exits).
# Environment: PYTHON, the Python that creates the venvs (default python3; 3.11 or newer).

FRAMEWORKS_PINS="$ROOT/interop/frameworks"
FRAMEWORKS_CACHE="$ROOT/.cache/frameworks"
FRAMEWORKS_PY="$FRAMEWORKS_CACHE/venv/bin/python"
FRAMEWORKS_PY_MCP1="$FRAMEWORKS_CACHE/venv-mcp1/bin/python"
FRAMEWORKS_UV_PIN="uv==0.13.9"
FRAMEWORKS_UV_OPTIONS=(--quiet --compile-bytecode)

# frameworks_install_venv DIR PREFIX: the venv DIR from PREFIX{requirements,constraints}.txt, unless up to date.
frameworks_install_venv() {
    local dir="$1" prefix="$2" want
    want="$({ "${PYTHON:-python3}" -c 'import sys; print(sys.version)'; echo "$FRAMEWORKS_UV_PIN ${FRAMEWORKS_UV_OPTIONS[*]}"
        cat "$FRAMEWORKS_PINS/${prefix}requirements.txt" "$FRAMEWORKS_PINS/${prefix}constraints.txt"; } |
        sha256sum | cut -d' ' -f1)"
    [[ -x "$dir/bin/python" && "$(cat "$dir/.stamp" 2>/dev/null)" == "$want" ]] && return 0
    log "installing interop/frameworks/${prefix}requirements.txt into $dir"
    rm -rf "$dir"
    "${PYTHON:-python3}" -m venv --without-pip "$dir"
    UV_CACHE_DIR="$FRAMEWORKS_CACHE/uv-cache" UV_NO_PROGRESS=1 "$FRAMEWORKS_CACHE/uv/bin/uv" pip install \
        "${FRAMEWORKS_UV_OPTIONS[@]}" --python "$dir/bin/python" -r "$FRAMEWORKS_PINS/${prefix}requirements.txt" </dev/null ||
        die "installing ${prefix}requirements.txt failed"
    printf '%s\n' "$want" >"$dir/.stamp"
}

# Installs uv and both venvs (idempotent). Scripts running at once take turns through a lock.
install_frameworks() {
    local lock_fd
    mkdir -p "$FRAMEWORKS_CACHE"
    exec {lock_fd}>"$ROOT/.cache/frameworks.lock"
    flock -w 900 "$lock_fd" || die "could not lock $ROOT/.cache/frameworks.lock within 900 s (another install running?)"
    if [[ "$(cat "$FRAMEWORKS_CACHE/uv/.stamp" 2>/dev/null)" != "$FRAMEWORKS_UV_PIN" ]]; then
        rm -rf "$FRAMEWORKS_CACHE/uv"
        "${PYTHON:-python3}" -m venv "$FRAMEWORKS_CACHE/uv"
        PIP_CACHE_DIR="$FRAMEWORKS_CACHE/pip-cache" PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 \
            "$FRAMEWORKS_CACHE/uv/bin/python" -m pip install --quiet "$FRAMEWORKS_UV_PIN" </dev/null ||
            die "installing $FRAMEWORKS_UV_PIN failed"
        printf '%s\n' "$FRAMEWORKS_UV_PIN" >"$FRAMEWORKS_CACHE/uv/.stamp"
    fi
    frameworks_install_venv "$FRAMEWORKS_CACHE/venv" ""
    frameworks_install_venv "$FRAMEWORKS_CACHE/venv-mcp1" "mcp1-"
    exec {lock_fd}>&-
}
