"""A TypeScript framework's driver (ts/fw_*.mjs, the protocol in ts/cell.mjs) as matrix.py's framework module: the
same NAME, PACKAGE, API, DEFAULT_DEADLINE and run() a Python fw_*.py has, VERSION read from the installed
package. Each cell is one Node process (started in a session of its own, so the stdio server it starts goes with
it): a run abandoned as hung is ended with its process group, and so is every run still going when the matrix
ends (stop_all).

    matrix.py --framework PATH/fw_x.mjs --node NODE ...
"""

import asyncio
import json
import os
import signal
import subprocess
import tempfile

# The process groups of the Node runs not yet ended.
RUNS: set[int] = set()


def _kill(pid: int) -> None:
    RUNS.discard(pid)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def stop_all() -> None:
    for pid in list(RUNS):
        _kill(pid)


def installed_version(driver: str, package: str) -> str:
    """The version of the package the driver imports, found as Node finds it: in node_modules of the driver's
    folder or the nearest one above."""
    folder = os.path.dirname(os.path.abspath(driver))
    while True:
        manifest = os.path.join(folder, "node_modules", package, "package.json")
        if os.path.exists(manifest):
            with open(manifest, encoding="utf-8") as f:
                return json.load(f)["version"]
        if os.path.dirname(folder) == folder:
            raise RuntimeError(f"{package} is not installed where {driver} can import it")
        folder = os.path.dirname(folder)


class NodeFramework:
    def __init__(self, driver: str, node: str, work: str):
        self.driver, self.node, self.work = driver, node, work
        meta = json.loads(subprocess.run([node, driver, "--meta"], capture_output=True, text=True, check=True,
                                         timeout=60).stdout)
        self.NAME, self.PACKAGE, self.API = meta["name"], meta["package"], meta["api"]
        self.DEFAULT_DEADLINE = meta["default_deadline"]
        self.VERSION = installed_version(driver, self.PACKAGE)

    async def run(self, model_url: str, server: dict, prompt: str) -> str:
        os.makedirs(self.work, exist_ok=True)
        fd, cell = tempfile.mkstemp(prefix="cell-", suffix=".json", dir=self.work)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump({"model_url": model_url, "server": server, "prompt": prompt}, out)
        with open(cell.removesuffix(".json") + ".node.log", "wb") as log:
            proc = await asyncio.create_subprocess_exec(
                self.node, self.driver, cell, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                stderr=log, start_new_session=True)
        RUNS.add(proc.pid)
        try:
            stdout, _ = await proc.communicate()
        finally:
            # Also when the matrix cancels a hung run: the process group (Node and the stdio server it started)
            # ends here, not at the matrix's exit.
            _kill(proc.pid)
        lines = [line for line in stdout.decode(errors="replace").splitlines() if line.startswith("{")]
        if not lines:
            raise RuntimeError(f"the Node driver exited with status {proc.returncode} and no record "
                               f"(log: {cell.removesuffix('.json')}.node.log)")
        record = json.loads(lines[-1])
        if "error" in record:
            name, _, message = record["error"].partition(": ")
            # The JavaScript error's name, as the exception's type name matrix.py records.
            kind = type(name if name.isidentifier() else "Error", (Exception,), {})
            raise kind(message)
        return record["output"]
