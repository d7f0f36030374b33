#!/usr/bin/env bash
# The release recipe: builds faultlab for one target and packs it as the archive the release workflow publishes
# (.github/workflows/release.yml runs this on each target's own runner) and the GitHub Action downloads.
#
#   scripts/release-archive.sh TARGET [OUT]     build, pack into OUT (default dist/), print the archive's path
#   scripts/release-archive.sh --name TARGET    print the archive's name (no .tar.gz) and build nothing
#
# TARGET is a Rust target triple: the workflow's are x86_64-unknown-linux-musl and aarch64-unknown-linux-musl
# (static: musl links everything in; ring's bit of C is compiled by musl-gcc), x86_64-apple-darwin and
# aarch64-apple-darwin. Here, scripts/release-check.sh builds the host's (x86_64-unknown-linux-gnu).
#
# OUT/faultlab-VERSION-TARGET.tar.gz holds faultlab-VERSION-TARGET/: the faultlab binary, README.md, LICENSE,
# completions/ (bash, zsh, fish) and man/ (a page per command), all made by the binary just built (so it must run
# on this machine: the workflow builds each target natively). OUT/faultlab-VERSION-TARGET.tar.gz.sha256 is
# `HASH  NAME.tar.gz`, what `sha256sum -c` and `shasum -a 256 -c` read.
#
# The build: `cargo build --profile release --locked -p faultlab --target TARGET` (CARGO_TARGET_DIR as set;
# default target/). FAULTLAB_ARCHIVE_PROFILE=dev packs a debug build instead (for trying the packing and the
# install quickly on a machine where a release build from nothing takes too long; never for a release: the
# workflow leaves it unset). Exit 0 with the archive made, 1 on a failure (the step named), 2 on bad arguments.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
usage() {
  echo "usage: scripts/release-archive.sh TARGET [OUT] | --name TARGET" >&2
  exit 2
}
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n1)"
[[ -n "$version" ]] || { echo "release-archive: no workspace version in Cargo.toml" >&2; exit 1; }
name_of() { echo "faultlab-$version-$1"; }

[[ $# -ge 1 ]] || usage
if [[ "$1" == --name ]]; then
  [[ $# -eq 2 ]] || usage
  name_of "$2"
  exit 0
fi
[[ $# -le 2 ]] || usage
target="$1"
out="${2:-dist}"
[[ "$target" =~ ^[a-z0-9_]+-[a-z0-9_]+-[a-z0-9_]+(-[a-z0-9_]+)?$ ]] || {
  echo "release-archive: '$target' is not a target triple (e.g. x86_64-unknown-linux-musl)" >&2
  exit 2
}
name="$(name_of "$target")"

profile="${FAULTLAB_ARCHIVE_PROFILE:-release}"
case "$profile" in
  release) profile_dir=release ;;
  dev) profile_dir=debug ;;
  *)
    echo "release-archive: FAULTLAB_ARCHIVE_PROFILE must be release or dev, not '$profile'" >&2
    exit 2
    ;;
esac
# A dev archive for the host is the workspace's own debug build (target/debug: no second build of everything).
target_args=(--target "$target")
binary="${CARGO_TARGET_DIR:-target}/$target/$profile_dir/faultlab"
if [[ "$profile" == dev && "$target" == "$(rustc -vV | sed -n 's/^host: //p')" ]]; then
  target_args=()
  binary="${CARGO_TARGET_DIR:-target}/$profile_dir/faultlab"
fi
echo "release-archive: cargo build --profile $profile --locked -p faultlab ${target_args[*]}" >&2
cargo build --profile "$profile" --locked -p faultlab "${target_args[@]}" >&2
[[ -x "$binary" ]] || { echo "release-archive: the build made no $binary" >&2; exit 1; }

mkdir -p "$out"
stage="$(mktemp -d "${TMPDIR:-/tmp}/release-archive.XXXXXX")"
trap 'rm -rf "$stage"' EXIT
dir="$stage/$name"
mkdir -p "$dir/completions" "$dir/man"
install -m 0755 "$binary" "$dir/faultlab"
install -m 0644 README.md LICENSE "$dir/"
"$dir/faultlab" completions bash >"$dir/completions/faultlab.bash"
"$dir/faultlab" completions zsh >"$dir/completions/_faultlab"
"$dir/faultlab" completions fish >"$dir/completions/faultlab.fish"
"$dir/faultlab" man --out "$dir/man" >/dev/null
# The same bytes for the same files: names sorted, no owner, every date the last commit's (GNU tar; bsdtar on
# macOS takes the files as listed).
mtime="$(git log -1 --format=%ct 2>/dev/null || date +%s)"
archive="$out/$name.tar.gz"
if tar --version 2>/dev/null | grep -q 'GNU tar'; then
  tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$mtime" -cf - "$name" | gzip -9n >"$archive"
else
  tar -C "$stage" -cf - "$name" | gzip -9n >"$archive"
fi
if command -v sha256sum >/dev/null; then
  hash="$(sha256sum "$archive" | cut -d' ' -f1)"
else
  hash="$(shasum -a 256 "$archive" | cut -d' ' -f1)"
fi
echo "$hash  $name.tar.gz" >"$archive.sha256"
echo "release-archive: $archive ($(wc -c <"$archive" | tr -d ' ') bytes, SHA-256 $hash)" >&2
echo "$archive"
