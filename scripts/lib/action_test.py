#!/usr/bin/env python3
"""Tests the GitHub Action's script (action/faultlab_action.py) as action.yml runs it, with the runner's
environment made up here: the words `args` becomes (a shell-quoted string with quotes inside, nothing expanded; a
YAML list in block and flow style), the exit code passed through as the `exit-code` output, the release archive
installed from a local releases folder (file:// URLs) with its SHA-256 checked, and the fall-back to
`cargo install --locked` when there is no archive. faultlab and cargo are stand-ins that record their arguments.

    action_test.py        (scripts/ship-lint.sh runs it; stdlib only)

Prints PASS or FAIL per case and `N passed, M failed`; exit 1 when one failed.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tally import Tally  # noqa: E402  (beside this file)

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "action" / "faultlab_action.py"
VERSION = "9.8.7"

TALLY = Tally()
check = TALLY.check


def stand_in(folder: Path, name: str, record: Path, exit_code: int = 0) -> None:
    """An executable `name` in folder that writes its arguments as JSON to record and exits exit_code."""
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / name
    program.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"open({str(record)!r}, 'w').write(json.dumps(sys.argv[1:]))\nsys.exit({exit_code})\n"
    )
    program.chmod(0o755)


def action(step: str, env: dict[str, str], work: Path) -> subprocess.CompletedProcess[str]:
    base = {
        "PATH": f"{work / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "GITHUB_OUTPUT": str(work / "output"),
        "GITHUB_PATH": str(work / "path"),
        "GITHUB_ACTION_PATH": str(work / "action-checkout"),
        "RUNNER_OS": "Linux",
        "RUNNER_ARCH": "X64",
    }
    (work / "output").write_text("")
    (work / "path").write_text("")
    return subprocess.run(
        [sys.executable, str(SCRIPT), step], env={**base, **env}, capture_output=True, text=True, timeout=60
    )


def argv_of(args: str, work: Path) -> tuple[list[str] | None, subprocess.CompletedProcess[str]]:
    record = work / "argv.json"
    record.unlink(missing_ok=True)
    done = action("run", {"FAULTLAB_ARGS": args, "HOME": "/home/runner", "X": "expanded"}, work)
    return (json.loads(record.read_text()) if record.exists() else None), done


def release(folder: Path, version: str, target: str, binary: bytes, digest: str | None = None) -> None:
    """A releases folder as GitHub serves it: vVERSION/NAME.tar.gz and NAME.tar.gz.sha256."""
    name = f"faultlab-{version}-{target}"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo(f"{name}/faultlab")
        info.size, info.mode = len(binary), 0o755
        tar.addfile(info, io.BytesIO(binary))
    data = buffer.getvalue()
    (folder / f"v{version}").mkdir(parents=True, exist_ok=True)
    (folder / f"v{version}" / f"{name}.tar.gz").write_bytes(data)
    sha = digest or hashlib.sha256(data).hexdigest()
    (folder / f"v{version}" / f"{name}.tar.gz.sha256").write_text(f"{sha}  {name}.tar.gz\n")


def main() -> int:
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        (work / "action-checkout").mkdir()
        (work / "action-checkout" / "Cargo.toml").write_text(f'[workspace.package]\nversion = "{VERSION}"\n')
        stand_in(work / "bin", "faultlab", work / "argv.json")

        # A shell-quoted string: the README's own example, quotes inside quotes, nothing expanded.
        cases = [
            (
                "eval --agent 'python3 my_agent.py' --out results",
                ["eval", "--agent", "python3 my_agent.py", "--out", "results"],
            ),
            (
                """eval --agent "python3 -c 'print(\\"hi there\\")'" --agent-name 'it'"'"'s mine'""",
                ["eval", "--agent", """python3 -c 'print("hi there")'""", "--agent-name", "it's mine"],
            ),
            ("run $HOME ~ '*.yaml' $(rm -rf x) ${X} a\\ b", ["run", "$HOME", "~", "*.yaml", "$(rm", "-rf", "x)", "${X}", "a b"]),
            (
                "- eval\n- --agent\n- python3 my_agent.py   # the agent\n- 'it''s'\n- \"say \\\"hi\\\"\"\n",
                ["eval", "--agent", "python3 my_agent.py", "it's", 'say "hi"'],
            ),
            ("[eval, --agent, 'python3 my_agent.py', \"a, b\"]", ["eval", "--agent", "python3 my_agent.py", "a, b"]),
        ]
        for args, want in cases:
            got, done = argv_of(args, work)
            check(f"args {args!r} are {want}", got == want, f"got {got}; stderr: {done.stderr.strip()}")

        for bad, says in [("eval --agent 'python3 my_agent.py", "No closing quotation"), ("- eval\nrun", "line 2"), ("", "empty")]:
            got, done = argv_of(bad, work)
            check(
                f"args {bad!r} are refused (exit 1, the error names args and says {says!r})",
                got is None and done.returncode == 1 and "args" in done.stdout and says in done.stdout,
                f"exit {done.returncode}: {done.stdout.strip()} {done.stderr.strip()}",
            )

        stand_in(work / "bin", "faultlab", work / "argv.json", exit_code=2)
        _, done = argv_of("run ping.yaml", work)
        output = (work / "output").read_text()
        check("exit 2 passes through, as the exit-code output", done.returncode == 2 and "exit-code=2\n" in output, output)

        # Install: the archive for the runner, checked and extracted into FAULTLAB_HOME/bin, put on PATH.
        releases = work / "releases"
        release(releases, VERSION, "x86_64-unknown-linux-musl", b"#!/bin/sh\necho archive\n")
        home = work / "home-archive"
        env = {"FAULTLAB_RELEASES": releases.as_uri(), "FAULTLAB_HOME": str(home), "CARGO": str(work / "bin" / "cargo")}
        stand_in(work / "bin", "cargo", work / "cargo.json")
        done = action("install", env, work)
        installed = home / "bin" / "faultlab"
        check(
            "the release archive for Linux X64 is installed and put on PATH",
            done.returncode == 0
            and installed.read_bytes() == b"#!/bin/sh\necho archive\n"
            and (work / "path").read_text() == f"{home / 'bin'}\n"
            and not (work / "cargo.json").exists(),
            f"exit {done.returncode}: {done.stdout} {done.stderr}",
        )
        done = action("install", env, work)
        check("a cached install is used as it is", done.returncode == 0 and "restored from the cache" in done.stdout, done.stdout)

        release(releases, VERSION, "aarch64-apple-darwin", b"x", digest="0" * 64)
        home = work / "home-bad"
        done = action("install", {**env, "FAULTLAB_HOME": str(home), "RUNNER_OS": "macOS", "RUNNER_ARCH": "ARM64"}, work)
        check(
            "an archive whose SHA-256 differs is refused, with no fall-back",
            done.returncode == 1 and "SHA-256" in done.stdout and not (home / "bin").exists()
            and not (work / "cargo.json").exists(),
            f"exit {done.returncode}: {done.stdout} {done.stderr}",
        )

        home = work / "home-source"
        done = action("install", {**env, "FAULTLAB_HOME": str(home), "FAULTLAB_VERSION": "v0.0.1"}, work)
        cargo = json.loads((work / "cargo.json").read_text()) if (work / "cargo.json").exists() else None
        want = ["install", "--locked", "--path", str(work / "action-checkout" / "crates" / "faultlab"), "--root", str(home)]
        check("no archive for the version: cargo install --locked from the action's checkout", done.returncode == 0 and cargo == want, f"{cargo}; {done.stdout}")

        done = action("plan", {"FAULTLAB_VERSION": ""}, work)
        output = (work / "output").read_text()
        check(
            "plan: the action's own version and the runner's target make the cache key",
            f"key=faultlab-{VERSION}-x86_64-unknown-linux-musl\n" in output,
            output,
        )
    return TALLY.summary("action")


if __name__ == "__main__":
    sys.exit(main())
