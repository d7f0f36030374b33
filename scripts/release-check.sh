#!/usr/bin/env bash
# The archive a user downloads, tried as a user would: builds this machine's release archive with the release
# recipe (scripts/release-archive.sh, the workflow's own, for the host's target), checks it against its .sha256,
# unpacks it into a clean folder, and runs `faultlab demo` from there with nothing else on PATH (PATH is the
# folder's bin/ alone, HOME an empty folder, no other variable); the demo must pass and write its index.html.
# Not part of scripts/test.sh: a release build (the first took 69 min on the 2-core machine under a load of 16,
# 2026-12-04; then 7 s to pack and 9 s for the demo from the 12.8 MB archive). The test command checks
# the recipe's configuration instead (scripts/lib/release_config_check.py, in scripts/ship-lint.sh).
#
#   scripts/release-check.sh                              (FAULTLAB_ARCHIVE_PROFILE=dev: a debug build, quicker)
#
# Nothing is left behind: the archive, the install and the demo's output are in one temporary folder, removed at
# the end (the release build stays in target/, like any build). Exit 0 when the demo passed from the archive.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
work="$(mktemp -d "${TMPDIR:-/tmp}/release-check.XXXXXX")"
trap 'rm -rf "$work"' EXIT

host="$(rustc -vV | sed -n 's/^host: //p')"
start=$SECONDS
archive="$(scripts/release-archive.sh "$host" "$work/dist")"
echo "release-check: built $archive in $((SECONDS - start)) s"
(cd "$work/dist" && sha256sum -c "$(basename "$archive").sha256")

name="$(basename "$archive" .tar.gz)"
mkdir -p "$work/clean/bin" "$work/home"
tar -xzf "$archive" -C "$work/clean"
mv "$work/clean/$name/faultlab" "$work/clean/bin/faultlab"
echo "release-check: installed into $work/clean/bin (the archive holds: $(ls "$work/clean/$name" | tr '\n' ' '))"

# Nothing of this machine's PATH: only the installed folder.
demo() { env -i PATH="$work/clean/bin" HOME="$work/home" faultlab "$@"; }
demo --version
start=$SECONDS
demo demo --out "$work/home/demo" | tail -n 3
echo "release-check: faultlab demo passed from the archive in $((SECONDS - start)) s"
grep -q 'href="eval/report.html"' "$work/home/demo/index.html" || {
  echo "release-check: FAIL: the demo's index.html does not link eval/report.html"
  exit 1
}
echo "release-check: ok: $name installs into a clean folder and its demo passes with only it on PATH"
