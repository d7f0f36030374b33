#!/usr/bin/env python3
"""The GitHub Action's steps (action.yml runs them; stdlib only, so it runs on any runner's python3).

    faultlab_action.py plan      where faultlab goes for this runner, and the cache key (step outputs)
    faultlab_action.py install   the release archive for this platform, its SHA-256 checked; when there is no
                                 such archive (an unreleased version, a platform without one), `cargo install
                                 --locked` from the action's own checkout instead
    faultlab_action.py run       faultlab with the `args` input's words; exit code passed through and written as
                                 the `exit-code` output

The `args` input is either a YAML list of words (block `- word` lines, or a flow `[a, "b c"]` list) or one string
split the way a POSIX shell splits words: quotes group and are removed, a backslash escapes, and nothing is
expanded ($VAR, ~, *, $(...) stay as written): the arguments come from the workflow file, not from a shell.

Environment (set by action.yml from the inputs and the runner): FAULTLAB_ARGS, FAULTLAB_VERSION (a version, or
empty for the action's own), FAULTLAB_REPOSITORY (owner/name the archives are released from), FAULTLAB_RELEASES
(the base URL of the releases; default https://github.com/REPOSITORY/releases/download), FAULTLAB_HOME (where
faultlab is installed; the cached folder), GITHUB_ACTION_PATH, GITHUB_OUTPUT, GITHUB_PATH, RUNNER_OS, RUNNER_ARCH,
CARGO (the cargo to fall back on; default cargo).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

# The release workflow's targets (.github/workflows/release.yml builds one archive for each), by runner.
TARGETS = {
    ("Linux", "X64"): "x86_64-unknown-linux-musl",
    ("Linux", "ARM64"): "aarch64-unknown-linux-musl",
    ("macOS", "X64"): "x86_64-apple-darwin",
    ("macOS", "ARM64"): "aarch64-apple-darwin",
}
DOWNLOAD_TIMEOUT_S = 60


class ActionError(Exception):
    """A problem the workflow's author can fix: printed as a GitHub error annotation, exit 1."""


def archive_name(version: str, target: str) -> str:
    """The archive scripts/release-archive.sh makes, without its .tar.gz."""
    return f"faultlab-{version}-{target}"


def action_version() -> str:
    """The workspace version of the action's own checkout (its Cargo.toml)."""
    cargo = Path(os.environ.get("GITHUB_ACTION_PATH", ".")) / "Cargo.toml"
    match = re.search(r'^version = "([^"]+)"', cargo.read_text(encoding="utf-8"), re.MULTILINE)
    if not match:
        raise ActionError(f"{cargo}: no workspace version")
    return match.group(1)


def version() -> str:
    wanted = os.environ.get("FAULTLAB_VERSION", "").strip().removeprefix("v")
    return wanted or action_version()


def target() -> str | None:
    return TARGETS.get((os.environ.get("RUNNER_OS", ""), os.environ.get("RUNNER_ARCH", "")))


def output(name: str, value: str) -> None:
    path = os.environ.get("GITHUB_OUTPUT")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{name}={value}\n")


def plan() -> int:
    v = version()
    t = target() or f"{os.environ.get('RUNNER_OS', 'unknown')}-{os.environ.get('RUNNER_ARCH', 'unknown')}-source"
    output("version", v)
    output("target", t)
    output("key", f"faultlab-{v}-{t}")
    return 0


def fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as response:  # noqa: S310 (http(s) or file)
        return response.read()


def from_archive(v: str, t: str, home: Path) -> bool:
    """Installs the release archive into home/bin; False when there is no archive to download."""
    repository = os.environ.get("FAULTLAB_REPOSITORY", "")
    base = os.environ.get("FAULTLAB_RELEASES") or f"https://github.com/{repository}/releases/download"
    name = archive_name(v, t)
    url = f"{base.rstrip('/')}/v{v}/{name}.tar.gz"
    try:
        data = fetch(url)
        listed = fetch(url + ".sha256").decode("utf-8").split()
    except (urllib.error.URLError, OSError) as e:
        print(f"faultlab: no release archive at {url} ({e}): building from source instead")
        return False
    digest = hashlib.sha256(data).hexdigest()
    if not listed or listed[0] != digest:
        # Never fall back here: a mismatch is a tampered or broken download, not a missing one.
        raise ActionError(f"{url}: SHA-256 {digest} is not the published {listed[0] if listed else '(empty)'}")
    with tempfile.TemporaryDirectory() as scratch:
        archive = Path(scratch) / f"{name}.tar.gz"
        archive.write_bytes(data)
        with tarfile.open(archive) as tar:
            # The data filter refuses links and paths that leave the folder (Python 3.12, and 3.8.17+ backports).
            if hasattr(tarfile, "data_filter"):
                tar.extractall(scratch, filter="data")
            else:
                tar.extractall(scratch)  # noqa: S202 (an archive whose SHA-256 was just checked)
        binary = Path(scratch) / name / "faultlab"
        if not binary.is_file():
            raise ActionError(f"{url}: the archive has no {name}/faultlab")
        (home / "bin").mkdir(parents=True, exist_ok=True)
        os.replace(binary, home / "bin" / "faultlab")
    print(f"faultlab: installed {name} from {url} (SHA-256 {digest})")
    return True


def from_source(home: Path) -> None:
    source = Path(os.environ.get("GITHUB_ACTION_PATH", ".")) / "crates" / "faultlab"
    command = [os.environ.get("CARGO", "cargo"), "install", "--locked", "--path", str(source), "--root", str(home)]
    print("faultlab: " + shlex.join(command), flush=True)
    if subprocess.run(command, check=False).returncode != 0:
        raise ActionError("cargo install --locked failed (is a Rust toolchain installed on this runner?)")


def install() -> int:
    home = Path(os.environ["FAULTLAB_HOME"])
    binary = home / "bin" / "faultlab"
    if binary.is_file():
        print(f"faultlab: {binary} restored from the cache")
    else:
        v, t = version(), target()
        if t is None or not from_archive(v, t, home):
            from_source(home)
    path = os.environ.get("GITHUB_PATH")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{home / 'bin'}\n")
    return 0


# A YAML plain scalar item: `- word`, with an optional comment after a space.
BLOCK_ITEM = re.compile(r"^-(?:\s+(.*))?$")


def yaml_scalar(text: str, where: str) -> str:
    """One scalar of a YAML list: plain, 'single-quoted' ('' is a quote) or "double-quoted" (JSON escapes)."""
    text = text.strip()
    if text.startswith("'"):
        if len(text) < 2 or not text.endswith("'"):
            raise ActionError(f"args, {where}: unclosed single quote in {text}")
        return text[1:-1].replace("''", "'")
    if text.startswith('"'):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as e:
            raise ActionError(f"args, {where}: bad double-quoted word {text}: {e.msg}") from None
        if not isinstance(value, str):
            raise ActionError(f"args, {where}: {text} is not a word")
        return value
    return re.sub(r"\s+#.*$", "", text)


def flow_items(text: str) -> list[str]:
    """The items of a one-line flow list `[a, 'b c', "d"]` (commas inside quotes kept)."""
    inner = text.strip()[1:-1]
    items, current, quote, i = [], "", None, 0
    while i < len(inner):
        c = inner[i]
        if quote:
            current += c
            if c == quote and not (quote == "'" and inner[i + 1 : i + 2] == "'"):
                quote = None
            elif c == quote:
                current += inner[i + 1]
                i += 1
            elif c == "\\" and quote == '"':
                current += inner[i + 1 : i + 2]
                i += 1
        elif c in "'\"" and not current.strip():
            quote = c
            current += c
        elif c == ",":
            items.append(current)
            current = ""
        else:
            current += c
        i += 1
    if quote:
        raise ActionError(f"args: unclosed {quote} in the list {text.strip()}")
    if current.strip():
        items.append(current)
    return [yaml_scalar(item, f"item {n + 1}") for n, item in enumerate(items)]


def words(args: str) -> list[str]:
    """The `args` input as words: a YAML list, else split like a POSIX shell, without expansion."""
    lines = [line for line in args.splitlines() if line.strip() and not line.strip().startswith("#")]
    if not lines:
        raise ActionError("args is empty: give the faultlab command line after `faultlab`")
    stripped = args.strip()
    if stripped.startswith("[") and stripped.endswith("]") and len(lines) == 1:
        return flow_items(stripped)
    if BLOCK_ITEM.match(lines[0].strip()):
        out = []
        for n, line in enumerate(lines, 1):
            item = BLOCK_ITEM.match(line.strip())
            if not item:
                raise ActionError(f"args, line {n}: {line.strip()!r} is not a `- word` item of the list")
            out.append(yaml_scalar(item.group(1) or "", f"line {n}"))
        return out
    try:
        return shlex.split(args, comments=False, posix=True)
    except ValueError as e:
        raise ActionError(f"args: {e} (check the quotes): {args.strip()}") from None


def run() -> int:
    argv = words(os.environ.get("FAULTLAB_ARGS", ""))
    print("faultlab: running " + shlex.join(["faultlab", *argv]), flush=True)
    try:
        status = subprocess.run(["faultlab", *argv], check=False).returncode
    except FileNotFoundError:
        raise ActionError("faultlab is not on PATH: the install step did not run") from None
    output("exit-code", str(status))
    return status


def main() -> int:
    steps = {"plan": plan, "install": install, "run": run}
    if len(sys.argv) != 2 or sys.argv[1] not in steps:
        print(f"usage: {sys.argv[0]} {'|'.join(steps)}", file=sys.stderr)
        return 2
    try:
        return steps[sys.argv[1]]()
    except ActionError as e:
        print(f"::error title=faultlab action::{e}")
        print(f"faultlab: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
