#!/usr/bin/env python3
"""The crates' readiness for crates.io without building anything (scripts/publish-crates.sh --check says what is
checked). Prints PASS or FAIL per crate and check, then `crates: N passed, M failed`; exit 1 when one failed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tally import Tally  # noqa: E402  (beside this file)

ROOT = Path(__file__).resolve().parents[2]
UNPUBLISHED = {"faultlab-bench"}
FIELDS = ("description", "license", "repository", "homepage", "readme", "keywords", "categories")
# Files a crate compiles in from examples/ (through a link in its folder): they must be in its package.
BUILTIN = {
    "faultlab-eval": [
        ("builtin/tasks/", ROOT / "examples/eval/tasks", ".yaml"),
        ("builtin/askback/", ROOT / "examples/eval/askback", ".yaml"),
        ("builtin/", None, "oracle.yaml"),
    ],
    "faultlab-explore": [("builtin/", None, "explore-oracle.yaml")],
    "faultlab": [("scenarios/", ROOT / "examples/scenarios", ".yaml")],
}
INCLUDE = re.compile(r'include_(?:str|bytes)!\(\s*"([^"]+)"')

TALLY = Tally()
check = TALLY.check


def cargo(*args: str) -> str:
    return subprocess.run(["cargo", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def main() -> int:
    metadata = json.loads(cargo("metadata", "--no-deps", "--format-version", "1"))
    for package in sorted(metadata["packages"], key=lambda p: p["name"]):
        name = package["name"]
        publishable = package.get("publish") != []
        if name in UNPUBLISHED:
            check(f"{name} is not published", not publishable)
            continue
        check(f"{name} is published", publishable)
        missing = [f for f in FIELDS if not package.get(f)]
        check(f"{name}: crates.io metadata ({', '.join(FIELDS)})", not missing, f"missing {missing}")
        files = cargo("package", "--list", "--allow-dirty", "-p", name).split()
        sources = [f for f in files if f.startswith("src/")]
        stray = [f for f in files if f.startswith(("tests/", "benches/", "fixtures/")) or "/tests/" in f]
        check(f"{name}: the package holds its sources and README.md, no tests or fixtures",
              bool(sources) and "README.md" in files and not stray, stray or files[:5])
        folder = Path(package["manifest_path"]).parent
        # Every file compiled in is inside the crate's folder (a `..` out of it is not in the package) and packaged.
        # (The unit tests, after `#[cfg(test)]` at the end of a file, are not built from the package.)
        outside = []
        for source in folder.glob("src/**/*.rs"):
            text = source.read_text(encoding="utf-8").split("#[cfg(test)]")[0]
            for included in INCLUDE.findall(text):
                packaged = os.path.normpath((source.parent.relative_to(folder) / included).as_posix())
                if packaged.startswith("..") or packaged not in files:
                    outside.append(f"{source.relative_to(ROOT)}: {included}")
        check(f"{name}: every file its sources compile in is in its package", not outside, outside)
        for prefix, examples, suffix in BUILTIN.get(name, []):
            if examples is None:
                ok = f"{prefix}{suffix}" in files
                check(f"{name}: {prefix}{suffix} is packaged", ok)
                continue
            want = sorted(p.name for p in examples.iterdir() if p.name.endswith(suffix))
            got = sorted(f[len(prefix):] for f in files if f.startswith(prefix) and "/" not in f[len(prefix):])
            check(f"{name}: every {examples.relative_to(ROOT)}/*{suffix} is packaged under {prefix}", got == want,
                  f"{got} != {want}")
    return TALLY.summary("crates")


if __name__ == "__main__":
    sys.exit(main())
