#!/usr/bin/env bash
# Runs every test of the project:
#   1. formatting and lints (rustfmt, clippy with warnings as errors);
#   2. the Rust test suite of the whole workspace;
#   3. the official MCP conformance suite: its server scenarios against `faultlab serve --transport http`, its
#      client scenarios with the reference client as the client under test, and its server scenarios against
#      the Node reference server directly and through `faultlab proxy` (the results must be the same);
#   4. real-SDK interop: the official Python MCP SDK against `faultlab serve` over stdio and HTTP, and through
#      `faultlab proxy` in front of the real filesystem server (a fault of each category, idempotency on disk);
#      The interoperability matrix (Python, TypeScript and rmcp SDK clients × every fault × transport) must
#      reproduce docs/compatibility.md;
#   5. JUnit output (demo, run: passing, failing, not run) validated against the common junit-10.xsd;
#   6. the diagnose HTML report opened in headless Chromium (Debian's package, installed by the script);
#   7. the eval oracle matrix: every control agent on every built-in task through the real proxy, each verdict
#      as examples/eval/oracle.yaml expects; the same against the real filesystem server (no ledger); the Python
#      SDK example agent graded on every built-in task;
#   8. both benchmarks in quick mode on the debug build (they run and report; figures are not checked).
# Steps 3 to 8 install their own pinned Node and Python dependencies under .cache/ (git-ignored).
set -euo pipefail
cd "$(dirname "$0")/.."

cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked

export FAULTLAB_BIN="$PWD/target/debug/faultlab"
scripts/eval-oracle.sh
scripts/conformance.sh
scripts/conformance-client.sh
scripts/conformance-proxy.sh
scripts/interop-python.sh
scripts/eval-python.sh
scripts/proxy-filesystem.sh
scripts/eval-filesystem.sh
scripts/interop-matrix.sh
scripts/junit-validate.sh
scripts/diagnose-html.sh
scripts/bench-quick.sh
