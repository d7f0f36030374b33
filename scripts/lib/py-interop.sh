# shellcheck shell=bash
# Shared by scripts/interop-python.sh and scripts/proxy-filesystem.sh (sourced, not run): the official MCP Python
# SDK, pinned in interop/python/requirements.txt (+ constraints.txt), in a venv at .cache/py-interop/venv
# (git-ignored), rebuilt only when the requirements, the constraints or the Python change.
#
# Every name defined here starts with PY_INTEROP_ or py_interop_, so that it can be sourced beside the other helpers
# in scripts/lib. The sourcing script sets ROOT (the workspace root) and defines log and die (die exits) before
# calling install_py_interop. Environment: PYTHON, the Python that creates the venv (default python3; 3.11 or newer).

PY_INTEROP_DIR="$ROOT/interop/python"
PY_INTEROP_CACHE="$ROOT/.cache/py-interop"
PY_INTEROP_VENV="$PY_INTEROP_CACHE/venv"
PY_INTEROP_PY="$PY_INTEROP_VENV/bin/python"
PY_INTEROP_STAMP="$PY_INTEROP_VENV/.interop-stamp"

# What the venv is built from: the creating Python's version and the two pin files.
py_interop_stamp_want() {
    {
        "${PYTHON:-python3}" -c 'import sys; print(sys.version)'
        cat "$PY_INTEROP_DIR/requirements.txt" "$PY_INTEROP_DIR/constraints.txt"
    } | sha256sum | cut -d' ' -f1
}

py_interop_installed() {
    [[ -x "$PY_INTEROP_PY" && -f "$PY_INTEROP_STAMP" && "$(cat "$PY_INTEROP_STAMP")" == "$1" ]]
}

# Creates the venv and installs the pinned SDK unless it is already there (idempotent). Scripts that run at the same
# time take turns through a lock, so one never removes the venv under the other.
install_py_interop() {
    local want lock_fd
    want="$(py_interop_stamp_want)"
    if py_interop_installed "$want"; then
        log "venv up to date ($PY_INTEROP_VENV)"
    else
        mkdir -p "$PY_INTEROP_CACHE"
        exec {lock_fd}>"$ROOT/.cache/py-interop.lock"
        flock -w 900 "$lock_fd" || die "could not lock $ROOT/.cache/py-interop.lock within 900 s (another install running?)"
        if ! py_interop_installed "$want"; then
            log "creating $PY_INTEROP_VENV and installing interop/python/requirements.txt"
            rm -rf "$PY_INTEROP_VENV"
            "${PYTHON:-python3}" -m venv "$PY_INTEROP_VENV"
            # requirements.txt pins mcp and pulls in constraints.txt (-c), which pins everything mcp needs.
            PIP_CACHE_DIR="$PY_INTEROP_CACHE/pip-cache" PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 \
                "$PY_INTEROP_PY" -m pip install --quiet -r "$PY_INTEROP_DIR/requirements.txt" </dev/null
            printf '%s\n' "$want" >"$PY_INTEROP_STAMP"
        fi
        exec {lock_fd}>&-
    fi
    log "mcp $("$PY_INTEROP_PY" -c 'import importlib.metadata as m; print(m.version("mcp"))' </dev/null)"
}
