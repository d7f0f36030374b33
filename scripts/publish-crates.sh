#!/usr/bin/env bash
# The crates on crates.io: every workspace crate but the benchmarks (faultlab-bench: publish = false) is published,
# libraries first, so that `cargo install faultlab` works.
#
#   scripts/publish-crates.sh --check      metadata and file lists only, no build (under 5 s; in scripts/ship-lint.sh)
#   scripts/publish-crates.sh --dry-run    `cargo publish --dry-run` of every crate, in dependency order, each
#                                          packaged and built from its .crate against the others' (several
#                                          minutes: a build of the whole workspace; outside the test command)
#   scripts/publish-crates.sh --publish    the same for real (the release workflow; CARGO_REGISTRY_TOKEN)
#
# --check (scripts/lib/crates_check.py): each published crate has a description, license, repository, homepage,
# readme, keywords and categories; its package holds its sources and the files it compiles in (the built-in tasks,
# oracles and scenarios, through links to examples/), and no tests, benchmarks or fixtures; no source of it
# includes a file from outside its folder (a packaged crate cannot reach it); and faultlab-bench is not published.
# --dry-run and --publish: `cargo publish --workspace` (cargo orders the crates by their dependencies and, for a
# dry run, resolves each against the ones packaged before it).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
case "${1:-}" in
  --check) exec python3 scripts/lib/crates_check.py ;;
  --dry-run) exec cargo publish --workspace --exclude faultlab-bench --locked --dry-run ;;
  --publish) exec cargo publish --workspace --exclude faultlab-bench --locked ;;
  *)
    echo "usage: scripts/publish-crates.sh --check | --dry-run | --publish" >&2
    exit 2
    ;;
esac
