# shellcheck shell=bash
# Shared by the benchmark scripts (sourced, not run). The sourcing script sets ROOT (the workspace root) and
# CALLER_PWD (where it was started) and defines log, die and resolve_faultlab_bin (scripts/lib/common.sh).

# Sets TARGET_DIR (cargo's target directory, absolute; exported as CARGO_TARGET_DIR when one was given) and
# JSON_OUT (FAULTLAB_BENCH_JSON, or TARGET_DIR/bench/NAME.json; absolute, as the bench runs in its crate's folder)
# and creates JSON_OUT's folder.
#   bench_paths NAME
bench_paths() {
    TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
    [[ "$TARGET_DIR" == /* ]] || TARGET_DIR="$CALLER_PWD/$TARGET_DIR"
    [[ -z "${CARGO_TARGET_DIR:-}" ]] || export CARGO_TARGET_DIR="$TARGET_DIR"
    JSON_OUT="${FAULTLAB_BENCH_JSON:-$TARGET_DIR/bench/$1.json}"
    [[ "$JSON_OUT" == /* ]] || JSON_OUT="$CALLER_PWD/$JSON_OUT"
    mkdir -p "$(dirname "$JSON_OUT")"
}

# Builds faultlab in release and runs one bench of crates/faultlab-bench on that binary (the bench crate does not
# depend on faultlab, so building it leaves target/release/faultlab as `cargo build --release` made it), with the
# JSON report to JSON_OUT and each VAR=VALUE in its environment.
#   bench_release NAME [VAR=VALUE...]
bench_release() {
    local name="$1" start
    shift
    log "building faultlab (cargo build --release -p faultlab)"
    start=$SECONDS
    cargo build --release -p faultlab </dev/null >&2
    log "release build took $((SECONDS - start)) s"
    log "running cargo bench -p faultlab-bench --bench $name${FAULTLAB_BENCH_QUICK:+ (FAULTLAB_BENCH_QUICK=$FAULTLAB_BENCH_QUICK)}"
    start=$SECONDS
    env FAULTLAB_BENCH_BIN="$TARGET_DIR/release/faultlab" FAULTLAB_BENCH_JSON="$JSON_OUT" "$@" \
        cargo bench -p faultlab-bench --bench "$name" </dev/null
    log "cargo bench (including its build) took $((SECONDS - start)) s"
}

# Sets bin and profile for the benchmarks that run the binary themselves (bench-eval, bench-explore): FAULTLAB_BIN
# when given, as every script takes it (resolve_faultlab_bin; nothing built), its profile read from its path
# (target/release or target/debug, else "given"); otherwise the release build, or the debug build with
# FAULTLAB_BENCH_QUICK, built here first.
#   bench_binary
bench_binary() {
    if [[ -n "${FAULTLAB_BIN:-}" ]]; then
        resolve_faultlab_bin
        bin="$FAULTLAB_BIN"
        case "$bin" in
            */release/faultlab) profile=release ;;
            */debug/faultlab) profile=debug ;;
            *) profile=given ;;
        esac
        return
    fi
    local release=(--release)
    profile=release
    if [[ -n "${FAULTLAB_BENCH_QUICK:-}" ]]; then
        release=()
        profile=debug
    fi
    log "building faultlab ($profile)"
    cargo build -q "${release[@]}" -p faultlab </dev/null
    bin="$TARGET_DIR/$profile/faultlab"
    [[ -x "$bin" ]] || die "no binary at $bin"
}
