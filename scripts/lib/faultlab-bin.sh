# shellcheck shell=bash
# Shared by the scripts that drive the faultlab binary (sourced, not run). The sourcing script sets ROOT (the
# workspace root) and CALLER_PWD (the caller's directory) and defines log and die (die exits).

# Sets FAULTLAB_BIN: as given (a name on PATH, or a path relative to the caller's directory), else the
# workspace's debug build, brought up to date first (a no-op when fresh).
resolve_faultlab_bin() {
    if [[ -n "${FAULTLAB_BIN:-}" ]]; then
        if [[ "$FAULTLAB_BIN" != */* ]]; then
            FAULTLAB_BIN="$(command -v "$FAULTLAB_BIN" || true)"
            [[ -n "$FAULTLAB_BIN" ]] || die "FAULTLAB_BIN is not on PATH"
        fi
        [[ "$FAULTLAB_BIN" == /* ]] || FAULTLAB_BIN="$CALLER_PWD/$FAULTLAB_BIN"
    else
        local target_dir="${CARGO_TARGET_DIR:-$ROOT/target}"
        [[ "$target_dir" == /* ]] || target_dir="$CALLER_PWD/$target_dir"
        FAULTLAB_BIN="$target_dir/debug/faultlab"
        log "building faultlab (cargo build -p faultlab)"
        (
            [[ -z "${CARGO_TARGET_DIR:-}" ]] || export CARGO_TARGET_DIR="$target_dir"
            cd "$ROOT" && cargo build -p faultlab </dev/null >&2
        )
    fi
    [[ -x "$FAULTLAB_BIN" ]] || die "faultlab binary not found or not executable: $FAULTLAB_BIN"
    log "faultlab binary: $FAULTLAB_BIN"
}
