#!/usr/bin/env python3
"""Runs every example of README.md and docs/*.md as written (scripts/docs-examples.sh starts it; stdlib only).

Every fenced block with a language is an example:

  sh, bash, shell   run with `bash -e -o pipefail` in a fresh folder of its own (below); it must exit 0
  yaml, yml, json   a file the reader writes, or output the reader sees: it needs a marker saying how to check it
  text              output, a synopsis or a diagram: not run
  (none)            an error: give the block a language

A marker is an HTML comment on the line just above the fence (one directive per comment, several comments may
stack), invisible on the rendered page:

  <!-- example: skip: REASON -->        not run here; the check prints the reason
  <!-- example: service -->            each command line is a long-running server: it is started, probed (its
                                       `listening` line on stderr, or a reply on stdout to an `initialize` request
                                       written to its stdin), stopped with SIGTERM, and must exit 0
  <!-- example: exits N -->            the block must exit N rather than 0 (one command; e.g. a check that finds
                                       what it exists to find)
  <!-- example: file NAME -->           a YAML/JSON block is the file NAME: written into the folder of every block of
                                       the same document, as the reader would have it
  <!-- example: check: COMMAND -->      run COMMAND in such a folder: it loads or validates the file and must exit 0
  <!-- example: check service: COMMAND -->  the same with a COMMAND that serves: checked as a `service` line
  <!-- example: output of: COMMAND -->  a JSON block equals what COMMAND prints on stdout (compared as JSON)

Each block runs in a fresh temporary folder that holds a link to every top-level entry of the repository (so
`examples/...` paths work as they do in a clone, and what a block writes stays in its folder), `.venv` (the
Python environment the README makes, when given), `faultlab-demo` (what the set-up's `faultlab demo` writes: with
--demo, the demo runs beside the first blocks and a block that names faultlab-demo waits for it) and the
document's `file` blocks; HOME is that folder, and the faultlab under test comes first on PATH. The blocks run
--jobs at a time, the likely longest first (eval and explore, then run, init and demo readers), so the wall time
is close to the longest block's.

The last line printed is `docs-examples: N passed, M failed, K skipped`. Exit status 0 when none failed.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

SHELL = {"sh", "bash", "shell"}
DATA = {"yaml", "yml", "json"}
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)[^`]*$")
MARKER = re.compile(r"^\s*<!--\s*example:\s*(.*?)\s*-->\s*$")
INITIALIZE = (
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},'
    '"clientInfo":{"name":"docs-examples","version":"1"}}}\n'
)
DEMO = "faultlab-demo"
SERVICE_PROBE_S = 15.0  # a debug build on a busy machine starts in well under this
STOP_GRACE_S = 5.0  # after SIGTERM: faultlab's own shutdown grace is 2 s


@dataclass
class Block:
    doc: str
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    directives: list[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"

    def directive(self, name: str) -> str | None:
        """The value of `name: value` (`name value` for file and exits; "" for a bare `name`), None when absent."""
        for d in self.directives:
            if d == name:
                return ""
            if d.startswith(name + ":") or (name in SPACED and d.startswith(name + " ")):
                return d[len(name) + 1 :].strip()
        return None


def parse(doc: str, text: str) -> tuple[list[Block], list[str]]:
    """The fenced blocks of a Markdown text, each with the markers just above it; and the problems found."""
    blocks: list[Block] = []
    problems: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = m.group(1), m.group(2), m.group(3).lower()
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and not (lines[i].strip().startswith(fence) and lines[i].strip().strip(fence[0]) == ""):
            body.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i])
            i += 1
        if i == len(lines):
            problems.append(f"{doc}:{start + 1}: a fence that is never closed")
        i += 1
        directives = []
        j = start - 1
        while j >= 0 and (marker := MARKER.match(lines[j])):
            directives.insert(0, marker.group(1))
            j -= 1
        blocks.append(Block(doc, start + 1, lang, "\n".join(body) + "\n", directives))
    return blocks, problems


KNOWN = ("skip", "service", "exits", "file", "check", "check service", "output of")
SPACED = ("exits", "file")


def classify(block: Block) -> tuple[str, str]:
    """(kind, detail): kind is run, service, data, skip, ignore or bad (detail: why)."""
    for d in block.directives:
        if not any(d == k or d.startswith(k + ":") or (k in SPACED and d.startswith(k + " ")) for k in KNOWN):
            return "bad", f"unknown marker `example: {d}` (known: {', '.join(KNOWN)})"
    skip = block.directive("skip")
    if skip is not None:
        return ("skip", skip) if skip else ("bad", "`skip` needs a reason: `example: skip: REASON`")
    if block.lang == "":
        return "bad", "a block without a language: `sh` to run it, `text` for output or a synopsis"
    if block.lang in SHELL:
        exits = block.directive("exits")
        if exits is not None and not exits.isdigit():
            return "bad", f"`exits {exits}`: an exit status is a number"
        return ("service", "") if block.directive("service") is not None else ("run", "")
    if block.lang in DATA:
        if any(block.directive(d) for d in ("output of", "file", "check", "check service")):
            return "data", ""
        return "bad", (
            f"a {block.lang} block with no marker: `example: file NAME` (with `example: check: COMMAND`), "
            "`example: output of: COMMAND` or `example: skip: REASON`"
        )
    return "ignore", ""


def logical_lines(text: str) -> list[str]:
    """Command lines with backslash continuations joined; blank and comment-only lines left out."""
    out: list[str] = []
    pending = ""
    for line in text.splitlines():
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        line = pending + line
        pending = ""
        if line.strip() and not line.strip().startswith("#"):
            out.append(line.strip())
    return out


class Runner:
    def __init__(self, root: Path, bin_dir: Path, venv: Path | None, timeout: float) -> None:
        self.root = root
        self.venv = venv
        self.demo: Path | None = None
        self.demo_done: concurrent.futures.Future[tuple[bool, str]] | None = None
        self.timeout = timeout
        self.entries = self.top_level(root)
        self.env = dict(os.environ)
        self.env["PATH"] = f"{bin_dir}{os.pathsep}{self.env.get('PATH', '')}"
        self.env["NO_COLOR"] = "1"
        self.env.pop("FAULTLAB_BIN", None)
        self.files: dict[str, dict[str, str]] = {}  # document → file name → contents

    @staticmethod
    def top_level(root: Path) -> list[str]:
        try:
            listed = subprocess.run(
                ["git", "-C", str(root), "ls-files"], capture_output=True, text=True, check=True
            ).stdout.split()
            return sorted({path.split("/", 1)[0] for path in listed})
        except (OSError, subprocess.CalledProcessError):
            return sorted(p.name for p in root.iterdir() if p.name not in {".git", "target", ".cache"})

    def folder(self, block: Block) -> tuple[Path, dict[str, str]]:
        folder = Path(tempfile.mkdtemp(prefix="docs-example-"))
        for name in self.entries:
            (folder / name).symlink_to(self.root / name)
        if self.venv:
            (folder / ".venv").symlink_to(self.venv)
        if self.demo and DEMO in block.text:
            (folder / DEMO).symlink_to(self.demo)
        for name, contents in self.files.get(block.doc, {}).items():
            (folder / name).write_text(contents, encoding="utf-8")
        env = self.env | {"HOME": str(folder)}
        return folder, env

    def start_demo(self, pool: concurrent.futures.Executor, out: Path) -> None:
        """The set-up's `faultlab demo` (as `cargo run -p faultlab -- demo` runs it), writing out/faultlab-demo."""
        self.demo = out / DEMO
        argv = ["bash", "-c", f"exec faultlab demo --out {DEMO}"]
        env = self.env | {"HOME": str(out)}

        def demo() -> tuple[bool, str]:
            rc, output = self.shell(argv, out, env, self.timeout)
            return rc == 0, f"the set-up's `faultlab demo` exited {rc}\n{tail(output, 60)}"

        self.demo_done = pool.submit(demo)

    def run(self, block: Block) -> tuple[bool, str]:
        kind, _ = classify(block)
        if self.demo_done and DEMO in block.text:
            ok, why = self.demo_done.result()
            if not ok:
                return False, why
        folder, env = self.folder(block)
        try:
            if kind == "service":
                return self.service(block, folder, env)
            if kind == "data":
                return self.data(block, folder, env)
            want = int(block.directive("exits") or 0)
            rc, output = self.shell(["bash", "-e", "-o", "pipefail", "-c", block.text], folder, env, self.timeout)
            if rc == want:
                return True, ""
            return False, f"exit {rc}, expected {want}\n{tail(output)}"
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def shell(self, argv: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int | str, str]:
        """Runs argv in its own process group, bounded by timeout; the whole group is ended afterwards."""
        with tempfile.TemporaryFile() as log:
            proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                    start_new_session=True)
            try:
                rc: int | str = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                rc = f"timeout (more than {timeout:.0f} s)"
            end_group(proc)
            log.seek(0)
            return rc, log.read().decode("utf-8", "replace")

    def data(self, block: Block, folder: Path, env: dict[str, str]) -> tuple[bool, str]:
        command = block.directive("output of")
        if command:
            rc, output = self.capture(command, folder, env)
            if rc != 0:
                return False, f"`{command}` exited {rc}\n{tail(output)}"
            try:
                if json.loads(output) != json.loads(block.text):
                    return False, f"the block differs from what `{command}` prints:\n{tail(output)}"
            except json.JSONDecodeError as e:
                return False, f"not JSON: {e}"
            return True, ""
        command = block.directive("check")
        if command:
            rc, output = self.shell(["bash", "-e", "-o", "pipefail", "-c", command], folder, env, self.timeout)
            if rc != 0:
                return False, f"`{command}` exited {rc}\n{tail(output)}"
        command = block.directive("check service")
        if command:
            ok, why = self.one_service(f"exec {command}", folder, env)
            if not ok:
                return False, f"`{command}`: {why}"
        return True, ""

    def capture(self, command: str, folder: Path, env: dict[str, str]) -> tuple[int | str, str]:
        try:
            done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", command], cwd=folder, env=env,
                                  stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            return "timeout", ""
        return done.returncode, done.stdout + done.stderr if done.returncode else done.stdout

    def service(self, block: Block, folder: Path, env: dict[str, str]) -> tuple[bool, str]:
        """Each command line a server: started, probed, stopped with SIGTERM, exit 0. Assignments and `export`
        lines are set-up, run before each."""
        lines = logical_lines(block.text)
        setup = [line for line in lines if re.match(r"^(export\s+)?[A-Za-z_]\w*=", line)]
        commands = [line for line in lines if line not in setup]
        for command in commands:
            ok, why = self.one_service("\n".join([*setup, "exec " + command]), folder, env)
            if not ok:
                return False, f"`{command}`: {why}"
        return True, ""

    def one_service(self, script: str, folder: Path, env: dict[str, str]) -> tuple[bool, str]:
        proc = subprocess.Popen(["bash", "-e", "-c", script], cwd=folder, env=env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        seen: list[str] = []
        try:
            proc.stdin.write(INITIALIZE.encode())
            proc.stdin.flush()
            up = wait_until_up(proc, seen)
            if not up:
                rc = proc.poll()
                return False, (f"exited {rc} before it answered" if rc is not None else
                               f"no listening line and no reply within {SERVICE_PROBE_S:.0f} s") + "\n" + tail(
                    "".join(seen))
            proc.send_signal(signal.SIGTERM)
            try:
                rc = proc.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                return False, f"still running {STOP_GRACE_S:.0f} s after SIGTERM"
            if rc != 0:
                rest = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
                return False, f"exited {rc} after SIGTERM\n{tail(''.join(seen) + rest)}"
            return True, ""
        finally:
            end_group(proc)
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if stream:
                    stream.close()


def wait_until_up(proc: subprocess.Popen, seen: list[str]) -> bool:
    """True once the server printed its listening line (stderr) or answered the initialize request (stdout)."""
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, "stdout")
    sel.register(proc.stderr, selectors.EVENT_READ, "stderr")
    buffers = {"stdout": b"", "stderr": b""}
    deadline = time.monotonic() + SERVICE_PROBE_S
    open_streams = 2
    while open_streams and (left := deadline - time.monotonic()) > 0:
        for key, _ in sel.select(timeout=left):
            chunk = os.read(key.fileobj.fileno(), 65536)
            if not chunk:
                sel.unregister(key.fileobj)
                open_streams -= 1
                continue
            buffers[key.data] += chunk
            seen.append(chunk.decode("utf-8", "replace"))
            if key.data == "stderr" and b"listening" in buffers["stderr"]:
                return True
            if key.data == "stdout" and b"\n" in buffers["stdout"]:
                return True
    return False


def end_group(proc: subprocess.Popen) -> None:
    """SIGKILL to what is left of the block's process group (a server a block put in the background)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        pass


def tail(text: str, lines: int = 15) -> str:
    return "\n".join("    " + line for line in text.rstrip().splitlines()[-lines:])


def collect(root: Path) -> tuple[list[Block], list[str]]:
    blocks: list[Block] = []
    problems: list[str] = []
    for path in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        found, bad = parse(str(path.relative_to(root)), path.read_text(encoding="utf-8"))
        blocks += found
        problems += bad
    return blocks, problems


def cost(block: Block) -> int:
    """A guess at how long a block takes, to start the long ones first: an eval or explore batch, then scenario
    runs, then what waits for the demo, then the rest."""
    words = block.text.split()
    for rank, names in enumerate((("eval", "explore"), ("run", "init"), (DEMO,))):
        if any(name in words or (name == DEMO and DEMO in block.text) for name in names):
            return 3 - rank
    return 0


def check(
    blocks: list[Block], problems: list[str], runner: Runner, jobs: int, demo: Path | None
) -> tuple[int, int, int]:
    """Runs the blocks, printing a line each; returns (passed, failed, skipped)."""
    failed = len(problems)
    for problem in problems:
        print(f"FAIL {problem}", flush=True)
    for block in blocks:
        name = block.directive("file")
        if name and classify(block)[0] == "data":
            runner.files.setdefault(block.doc, {})[name] = block.text
    todo = []
    passed = skipped = 0
    for block in blocks:
        kind, detail = classify(block)
        if kind == "bad":
            failed += 1
            print(f"FAIL {block.where}: {detail}", flush=True)
        elif kind == "skip":
            skipped += 1
            print(f"SKIP {block.where}: {detail}", flush=True)
        elif kind != "ignore":
            todo.append(block)

    def one(block: Block) -> tuple[Block, bool, str, float]:
        started = time.monotonic()
        ok, why = runner.run(block)
        return block, ok, why, time.monotonic() - started

    todo.sort(key=lambda block: (cost(block) == 1, -cost(block)))  # demo readers last: they wait for it
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as setup, \
            concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        if demo:
            runner.start_demo(setup, demo)
        for block, ok, why, seconds in pool.map(one, todo):
            kind = classify(block)[0]
            if ok:
                passed += 1
                print(f"PASS {block.where} ({kind}, {seconds:.1f} s)", flush=True)
            else:
                failed += 1
                print(f"FAIL {block.where} ({kind}, {seconds:.1f} s): {why}", flush=True)
    return passed, failed, skipped


SELF_TEST = """\
```sh
true
```

```sh
false
```

<!-- example: exits 3 -->
```sh
exit 3
```

<!-- example: skip: needs a container engine -->
```sh
podman run x
```

```yaml
a: 1
```

<!-- example: file f.yaml -->
<!-- example: check: grep -q 'b: 2' f.yaml -->
<!-- example: check service: bash -c 'trap "exit 0" TERM; grep -q "b: 2" f.yaml && echo listening >&2; while :; do sleep 0.05; done' -->
```yaml
b: 2
```

<!-- example: file g.yaml -->
<!-- example: check: grep -q 'b: 2' g.yaml -->
```yaml
c: 3
```

<!-- example: output of: echo '{"x": [1]}' -->
```json
{ "x": [1] }
```

```
untagged
```

<!-- example: service -->
```sh
bash -c 'trap "exit 0" TERM; echo listening >&2; while :; do sleep 0.05; done'
bash -c 'trap "exit 0" TERM; read -r line; echo "$line"; while :; do sleep 0.05; done'
```

<!-- example: service -->
```sh
cat
```

<!-- example: frobnicate -->
```text
output
```
"""


def self_test(root: Path) -> bool:
    """The extractor and the runner on a small document: the good blocks pass, each bad one fails."""
    blocks, problems = parse("self-test.md", SELF_TEST)
    runner = Runner(root, Path("/nonexistent"), None, timeout=10)
    runner.entries = []
    results = []
    for block in blocks:
        runner.files.setdefault(block.doc, {})
        if block.directive("file") and classify(block)[0] == "data":
            runner.files[block.doc][block.directive("file")] = block.text
    for block in blocks:
        kind, _ = classify(block)
        results.append(kind if kind in {"bad", "skip", "ignore"} else runner.run(block)[0])
    want = [True, False, True, "skip", "bad", True, False, True, "bad", True, False, "bad"]
    if results != want or problems:
        print(f"docs-examples: self-test failed: got {results}, want {want}; problems {problems}", file=sys.stderr)
        return False
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--bin", type=Path, help="the faultlab binary under test (its folder goes first on PATH)")
    parser.add_argument("--venv", type=Path, help="linked as .venv in each block's folder")
    parser.add_argument("--demo", type=Path, help="a folder where the set-up's `faultlab demo` writes faultlab-demo")
    parser.add_argument("--jobs", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=90.0, help="seconds one block may take (a bound for a hang)")
    parser.add_argument("--self-test", action="store_true", help="only check the checker")
    args = parser.parse_args()
    root = args.root.resolve()
    if args.self_test:
        ok = self_test(root)
        print(f"docs-examples: self-test {'passed' if ok else 'FAILED'}")
        return 0 if ok else 1
    if not args.bin:
        parser.error("--bin is required")
    started = time.monotonic()
    blocks, problems = collect(root)
    runner = Runner(root, args.bin.resolve().parent, args.venv, args.timeout)
    passed, failed, skipped = check(blocks, problems, runner, args.jobs, args.demo)
    print(f"docs-examples: {passed} passed, {failed} failed, {skipped} skipped in {time.monotonic() - started:.1f} s")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
