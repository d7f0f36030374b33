#!/usr/bin/env bash
# Validates faultlab's JUnit XML against a common JUnit schema: Jenkins xunit-plugin's junit-10.xsd.
#
#   scripts/junit-validate.sh
#
# The schema: junit-10.xsd (MIT, Gregory Boissinot, from the Jenkins xunit plugin), the schema that
# pytest validates its own --junitxml output against, as pytest ships it in its source distribution on PyPI:
# pytest==9.0.2, pytest-9.0.2.tar.gz, member pytest-9.0.2/testing/example_scripts/junit-10.xsd.
# Why this one: Surefire's surefire-test-report.xsd is not in Debian's libsurefire-java 2.22.3-2 (its jars hold
# no .xsd) and Maven Central is not a registry this project reaches; no package found ships Ant's schema. The
# Jenkins xunit plugin validates JUnit input with junit-10.xsd, and pytest tests its own output against it.
# The sdist and the XSD are checked against the sha256 sums below, so the schema cannot drift.
#
# The validator: xmlschema (XSD 1.0) from PyPI, in a venv at .cache/junit-xsd/venv. Every package is pinned with
# its hash; setuptools and setuptools-scm are there only so pip can prepare pytest's sdist metadata
# (--no-build-isolation keeps that build pinned too). Installed once, under a lock, and again only when the
# pins or the Python change (.cache/ is git-ignored).
#
# The files, made with the binary into a temporary folder (copies kept in .cache/junit-xsd/last/):
#   demo.xml, demo-suite.xml    faultlab demo --out DIR  ->  DIR/junit.xml, DIR/suite/junit.xml   (exit 0)
#   run-pass.xml                faultlab run examples/scenarios/ping.yaml examples/scenarios/hang.yaml
#                                 --format junit  (stdout, exit 0)
#   run-fail.xml                a scenario whose expectation fails, --format junit  (stdout, exit 2)
#   run-error.xml               faultlab run no-such-file.yaml --format junit  (stdout, exit 1)
#   run-skipped.xml             faultlab run disconnect-stdio.yaml --format junit  (a <skipped>; stdout, exit 0)
#   eval-pass.xml, eval-fail.xml  faultlab eval data-empty-read.yaml --format junit with the good control agent
#                                 (exit 0) and the one that gives up (a <failure>; exit 2)
#   eval-error.xml              the same task against an HTTP server nothing listens on (an <error>; exit 1)
#   merged.xml                  faultlab report merge of eval-pass and eval-fail's reports: OUT.xml beside it
# A file passes when the command exited as expected and the file is valid against the XSD. One line per file
# with the first validator error (all of them go to .cache/junit-xsd/last/LABEL.errors.txt), then
# `N passed, M failed`; the exit status is non-zero if any file failed.
#
# Environment:
#   FAULTLAB_BIN   the faultlab binary (a path, or a name on PATH; default: the workspace debug build,
#                  brought up to date with `cargo build -p faultlab`: scripts/lib/faultlab-bin.sh)
#   PYTHON         the Python that creates the venv (default: python3; 3.11 or newer)
set -euo pipefail

DIE_STATUS=1
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

cache=".cache/junit-xsd"
venv="$cache/venv"
xsd="$cache/xsd/junit-10.xsd"
python="${PYTHON:-python3}"
export PIP_CACHE_DIR="$ROOT/$cache/pip-cache"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PYTHONDONTWRITEBYTECODE=1

PYTEST_VERSION=9.0.2
PYTEST_SDIST_SHA256=75186651a92bd89611d1d9fc20f0b4345fd827c41ccd5c299a868a05d70edf11
XSD_MEMBER="pytest-$PYTEST_VERSION/testing/example_scripts/junit-10.xsd"
XSD_SHA256=a1a816f58d1bf95ebabf371994df0b9246dee66ea9572fbec4f9296f1b2c0ff6

# All pure-Python wheels (py3-none-any); installed with --no-deps, so this list is the whole venv.
requirements() {
  cat <<'EOF'
xmlschema==4.3.2 --hash=sha256:cf5c970a30f6ebcb3da35260e694704cc0b6794d8ace46125bb2a95e38ed9307
elementpath==5.1.4 --hash=sha256:5ec8d7bb44b16c98414a6a95e20cb150f3cbfc3cac65edc14773288c7a937376
setuptools==84.2.1 --hash=sha256:ca140b45d5325a9478f880e351484f62fef15f336462e449ca0c03c873d589c2
setuptools-scm==10.3.4 --hash=sha256:82f34c3e3084fc2b57d397200637cc13f2338004052d2fee47baa5f0e902464e
vcs-versioning==2.6.0 --hash=sha256:f8bebd1302ebc12e67ceb30fc7dd698ec969414b6fa43b30c3f14ac9b1e72c41
packaging==26.3 --hash=sha256:d7193f7c8e4e93f444fde0262bf90af30e16fa0ad0ad44cb553c87339b23cd1c
EOF
}

# --- validator and schema, installed only when something they depend on changed ----------------------
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || die "$python is older than Python 3.11"
stamp_now="$(
  {
    "$python" -c 'import sys; print(sys.version)'
    requirements
    echo "pytest==$PYTEST_VERSION $PYTEST_SDIST_SHA256 $XSD_MEMBER $XSD_SHA256"
  } | sha256sum | cut -d' ' -f1
)"
stamp_file="$cache/.installed"

installed() {
  [[ -x "$venv/bin/python" && -f "$xsd" && -f "$stamp_file" && "$(cat "$stamp_file")" == "$stamp_now" ]]
}

install_locked() {
  log "installing xmlschema into $venv and junit-10.xsd from pytest==$PYTEST_VERSION (sdist) into $cache/xsd"
  rm -rf "$venv" "$cache/xsd" "$cache/dist" "$stamp_file"
  "$python" -m venv "$venv"
  requirements >"$cache/requirements.txt"
  "$venv/bin/python" -m pip install --quiet --no-deps --require-hashes -r "$cache/requirements.txt" </dev/null
  "$venv/bin/python" -m pip check </dev/null >/dev/null || die "pip check failed in $venv"
  # The XSD is not in pytest's wheel, only in its sdist; pip prepares the sdist's metadata with the pinned
  # setuptools above (no build isolation, so nothing unpinned is fetched).
  echo "pytest==$PYTEST_VERSION --hash=sha256:$PYTEST_SDIST_SHA256" >"$cache/pytest-sdist.txt"
  "$venv/bin/python" -m pip download --quiet --no-deps --no-binary :all: --no-build-isolation --require-hashes \
    -r "$cache/pytest-sdist.txt" -d "$cache/dist" </dev/null
  mkdir -p "$cache/xsd"
  "$venv/bin/python" - "$cache/dist/pytest-$PYTEST_VERSION.tar.gz" "$XSD_MEMBER" "$xsd" <<'EOF'
import sys, tarfile
sdist, member, dest = sys.argv[1:]
with tarfile.open(sdist) as tar, open(dest, "wb") as out:
    out.write(tar.extractfile(member).read())
EOF
  echo "$XSD_SHA256  $xsd" | sha256sum --check --quiet - || die "$xsd does not have the pinned sha256"
  echo "$stamp_now" >"$stamp_file"
}

mkdir -p "$cache"
if installed; then
  log "validator and schema up to date ($cache)"
else
  exec {lock_fd}>"$cache.lock"
  flock -w 900 "$lock_fd" || die "could not lock $cache.lock within 900 s (another install running?)"
  installed || install_locked
  exec {lock_fd}>&-
fi
echo "$XSD_SHA256  $xsd" | sha256sum --check --quiet - || die "$xsd does not have the pinned sha256"
"$venv/bin/python" -c 'import importlib.metadata as m; print("junit-validate: xmlschema", m.version("xmlschema"))'
log "schema $xsd (pytest==$PYTEST_VERSION sdist: $XSD_MEMBER, sha256 $XSD_SHA256)"

# --- the binary --------------------------------------------------------------------------------------------
resolve_faultlab_bin
bin="$FAULTLAB_BIN"

# --- the JUnit files ---------------------------------------------------------------------------------------
work="$(mktemp -d "${TMPDIR:-/tmp}/junit-validate.XXXXXX")"
trap 'rm -rf "$work"' EXIT
manifest="$work/manifest.tsv"
: >"$manifest"

# record LABEL FILE EXIT EXPECTED_EXIT SHOWN: one line of the manifest the validator reads.
record() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$manifest"; }

# junit_stdout LABEL EXPECTED_EXIT SHOWN -- COMMAND...: runs COMMAND with its stdout (the JUnit) to $work/LABEL and
# its stderr to $work/LABEL.stderr, and records its exit code.
junit_stdout() {
  local label="$1" want="$2" shown="$3" rc=0
  shift 4
  timeout -k 10 300 "$@" </dev/null >"$work/$label" 2>"$work/$label.stderr" || rc=$?
  record "$label" "$work/$label" "$rc" "$want" "$shown"
}

log "producing JUnit files in $work"
rc=0
timeout -k 10 300 "$bin" demo --out "$work/demo" </dev/null >"$work/demo.stdout" 2>"$work/demo.stderr" || rc=$?
record demo.xml "$work/demo/junit.xml" "$rc" 0 "faultlab demo --out DIR: DIR/junit.xml"
record demo-suite.xml "$work/demo/suite/junit.xml" "$rc" 0 "faultlab demo --out DIR: DIR/suite/junit.xml"

junit_stdout run-pass.xml 0 "faultlab run ping.yaml hang.yaml --format junit" -- \
  "$bin" run examples/scenarios/ping.yaml examples/scenarios/hang.yaml --format junit

printf 'name: wrong\ncall: {tool: ping}\ntimeoutMs: 5000\nexpect: {outcome: error}\n' >"$work/wrong.yaml"
junit_stdout run-fail.xml 2 "faultlab run wrong.yaml --format junit" -- \
  "$bin" run "$work/wrong.yaml" --format junit

junit_stdout run-error.xml 1 "faultlab run no-such-file.yaml --format junit" -- \
  "$bin" run no-such-file.yaml --format junit

junit_stdout run-skipped.xml 0 "faultlab run disconnect-stdio.yaml --format junit" -- \
  "$bin" run examples/scenarios/disconnect-stdio.yaml --format junit

task=examples/eval/tasks/data-empty-read.yaml
junit_stdout eval-pass.xml 0 "faultlab eval data-empty-read.yaml --agent 'faultlab agent good' --format junit" -- \
  "$bin" eval "$task" --agent "$bin agent good" --agent-name good --out "$work/eval-pass" --format junit
junit_stdout eval-fail.xml 2 "faultlab eval data-empty-read.yaml --agent 'faultlab agent gives-up' --format junit" -- \
  "$bin" eval "$task" --agent "$bin agent gives-up" --agent-name gives-up --out "$work/eval-fail" --format junit
# Port 9 (discard): nothing listens there on a test machine.
{ cat "$task"; echo "server: {url: 'http://127.0.0.1:9/mcp'}"; } >"$work/unreachable.yaml"
junit_stdout eval-error.xml 1 "faultlab eval (an HTTP server nothing listens on) --format junit" -- \
  "$bin" eval "$work/unreachable.yaml" --agent "$bin agent good" --out "$work/eval-error" --format junit
rc=0
"$bin" report merge "$work/merged/report.json" "$work/eval-pass/report.json" "$work/eval-fail/report.json" \
  </dev/null >"$work/merged.stdout" 2>"$work/merged.stderr" || rc=$?
record merged.xml "$work/merged/report.xml" "$rc" 0 "faultlab report merge OUT.json A B: OUT.xml"

rm -rf "$cache/last"
mkdir -p "$cache/last"
while IFS=$'\t' read -r label file _; do
  if [[ -f "$file" ]]; then
    cp "$file" "$cache/last/$label"
  fi
done <"$manifest"
cp "$work"/*.stderr "$cache/last/" 2>/dev/null || true

# --- validation --------------------------------------------------------------------------------------------
status=0
"$venv/bin/python" - "$xsd" "$manifest" "$cache/last" <<'EOF' || status=$?
import os
import sys
import xmlschema

xsd_path, manifest, last = sys.argv[1:]
schema = xmlschema.XMLSchema10(xsd_path)
passed = failed = 0
with open(manifest, encoding="utf-8") as f:
    rows = [line.rstrip("\n").split("\t") for line in f if line.strip()]
for label, path, rc, want, command in rows:
    problems = []
    if rc != want:
        problems.append(f"exit code {rc}, expected {want}")
    errors = []
    if not os.path.isfile(path):
        problems.append("file not written")
    elif os.path.getsize(path) == 0:
        problems.append("empty file")
    else:
        try:
            errors = list(schema.iter_errors(path))
        except Exception as e:  # not well-formed XML
            problems.append(f"not well-formed XML: {e}")
    if errors:
        # The first reason on the line; every error in full (schema component, instance) in last/LABEL.errors.txt.
        more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
        problems.append(f"invalid: {errors[0].reason} at {errors[0].path}{more}; see {last}/{label}.errors.txt")
        with open(f"{last}/{label}.errors.txt", "w", encoding="utf-8") as report:
            report.writelines(f"{e}\n\n" for e in errors)
    if problems:
        failed += 1
        print(f"FAIL  {label}  [{command}; exit {rc}]  " + "; ".join(problems), flush=True)
    else:
        passed += 1
        print(f"PASS  {label}  [{command}; exit {rc}]  valid against junit-10.xsd", flush=True)
print(f"{passed} passed, {failed} failed", flush=True)
sys.exit(1 if failed else 0)
EOF
exit "$status"
