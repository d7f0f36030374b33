#!/usr/bin/env bash
# Checks the README's install line as a new user runs it: from a clean copy of the repository (the files git tracks
# at HEAD, nothing built), `cargo install --locked --path crates/faultlab` into a temporary --root, then the
# installed binary answers `faultlab --version` with the workspace's version and prints its completions and manual
# page. Not part of scripts/test.sh: a release build from nothing takes about 6 minutes on an idle machine (14 min measured here beside other work).
#
#   scripts/install-check.sh
#
# Nothing is left behind: the copy, the build folder and the --root are in one temporary folder, removed at the end.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

work="$(mktemp -d "${TMPDIR:-/tmp}/install-check.XXXXXX")"
trap 'rm -rf "$work"' EXIT

echo "install-check: a clean copy of HEAD in $work/src"
mkdir "$work/src"
git archive --format=tar HEAD | tar -x -C "$work/src"

echo "install-check: cargo install --locked --path crates/faultlab --root $work/root"
# Its own target folder: nothing of this checkout's builds is reused.
(cd "$work/src" && CARGO_TARGET_DIR="$work/target" cargo install --locked --path crates/faultlab --root "$work/root")

bin="$work/root/bin/faultlab"
want="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n1)"
got="$("$bin" --version)"
[[ "$got" == "faultlab $want" ]] || { echo "install-check: FAIL: --version said '$got', expected 'faultlab $want'"; exit 1; }
"$bin" completions bash | grep -q -- 'complete -F _faultlab .*faultlab$' || { echo "install-check: FAIL: no bash completion"; exit 1; }
"$bin" man | grep -q '^\.TH faultlab 1' || { echo "install-check: FAIL: no manual page"; exit 1; }
echo "install-check: ok: $got installed into a clean --root"
