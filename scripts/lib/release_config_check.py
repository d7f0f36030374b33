#!/usr/bin/env python3
"""Checks the release workflow (.github/workflows/release.yml) against the release recipe and the Action, what
actionlint cannot know: the archives are built for the same targets the Action downloads (Linux x86_64 and arm64
static, macOS both), each by scripts/release-archive.sh on its own runner; the archives and the image get build
provenance attestations (with the permissions those need); the release publishes the archives with their .sha256
sums; the demo's output goes to GitHub Pages; the recipe names the archives as the Action expects.

    release_config_check.py [WORKFLOW]     (scripts/ship-lint.sh runs it in its venv: needs PyYAML)

Prints PASS or FAIL per check and `N passed, M failed`; exit 1 when one failed.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tally import Tally  # noqa: E402  (beside this file)

import yaml

ROOT = Path(__file__).resolve().parents[2]
WANTED = {
    "x86_64-unknown-linux-musl",
    "aarch64-unknown-linux-musl",
    "x86_64-apple-darwin",
    "aarch64-apple-darwin",
}

TALLY = Tally()
check = TALLY.check


def action_module():
    spec = importlib.util.spec_from_file_location("faultlab_action", ROOT / "action" / "faultlab_action.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def steps_using(job: dict, action: str) -> list[dict]:
    return [s for s in job.get("steps", []) if str(s.get("uses", "")).split("@")[0] == action]


def runs(job: dict) -> str:
    return "\n".join(str(s.get("run", "")) for s in job.get("steps", []))


def main() -> int:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / ".github" / "workflows" / "release.yml"
    workflow = yaml.safe_load(path.read_text(encoding="utf-8"))
    jobs = workflow.get("jobs", {})
    # YAML 1.1 reads the key `on` as True.
    trigger = workflow.get("on", workflow.get(True, {}))
    check("runs on a pushed tag v*", (trigger.get("push") or {}).get("tags") == ["v*"], trigger)

    archives = jobs.get("archives", {})
    matrix = archives.get("strategy", {}).get("matrix", {}).get("include", [])
    targets = {entry.get("target") for entry in matrix}
    check("the archives' targets: Linux x86_64 and arm64 (musl, static), macOS x86_64 and arm64", targets == WANTED, sorted(targets))
    action = action_module()
    check("the Action downloads exactly the targets the workflow builds", set(action.TARGETS.values()) == targets,
          sorted(action.TARGETS.values()))
    native = {"x86_64-unknown-linux-musl": "ubuntu-24.04", "aarch64-unknown-linux-musl": "ubuntu-24.04-arm",
              "x86_64-apple-darwin": "macos-15-intel", "aarch64-apple-darwin": "macos-14"}
    check("each target builds on a runner of its own architecture (the recipe runs what it built)",
          all(native.get(e.get("target")) == e.get("os") for e in matrix), matrix)
    check("each archive is made by the recipe, scripts/release-archive.sh ${{ matrix.target }}",
          "scripts/release-archive.sh ${{ matrix.target }} dist" in runs(archives))
    version = re.search(r'^version = "([^"]+)"', (ROOT / "Cargo.toml").read_text(), re.MULTILINE).group(1)
    for target in sorted(WANTED):
        recipe = subprocess.run([str(ROOT / "scripts" / "release-archive.sh"), "--name", target],
                                capture_output=True, text=True, check=False).stdout.strip()
        check(f"the recipe's archive for {target} is the one the Action downloads",
              recipe == action.archive_name(version, target), (recipe, action.archive_name(version, target)))

    attest = steps_using(archives, "actions/attest-build-provenance")
    check("the archives' build provenance is attested", any(s.get("with", {}).get("subject-path") == "dist/*.tar.gz" for s in attest), attest)
    permissions = archives.get("permissions", {})
    check("the archives job may sign and store attestations (id-token, attestations: write)",
          permissions.get("id-token") == "write" and permissions.get("attestations") == "write", permissions)

    image = jobs.get("image", {})
    attest = steps_using(image, "actions/attest-build-provenance")
    script = runs(image)
    check("the image is built from the Containerfile and pushed, its digest a step output",
          "docker build --file Containerfile" in script and "docker push" in script and "digest=" in script, script)
    check("the image's build provenance is attested, by digest, and pushed beside it",
          any(s.get("with", {}).get("subject-digest") == "${{ steps.push.outputs.digest }}"
              and s["with"].get("push-to-registry") is True for s in attest), attest)
    permissions = image.get("permissions", {})
    check("the image job may push and attest (packages, id-token, attestations: write)",
          all(permissions.get(k) == "write" for k in ("packages", "id-token", "attestations")), permissions)

    release = jobs.get("github-release", {})
    script = runs(release)
    check("the release checks the sums and publishes the archives with their .sha256 files",
          "sha256sum -c" in script and "gh release create" in script and "*.tar.gz.sha256" in script, script)
    check("the release may write contents", release.get("permissions", {}).get("contents") == "write")

    site = jobs.get("demo-site", {})
    check("the demo runs from the released Linux archive and its folder is published to Pages",
          "demo --out site" in runs(site)
          and any(s.get("with", {}).get("path") == "site" for s in steps_using(site, "actions/upload-pages-artifact"))
          and bool(steps_using(site, "actions/deploy-pages")), runs(site))
    check("the Pages job may deploy (pages, id-token: write)",
          site.get("permissions", {}).get("pages") == "write" and site.get("permissions", {}).get("id-token") == "write")

    check("the crates are published by scripts/publish-crates.sh", "scripts/publish-crates.sh --publish" in runs(jobs.get("crates", {})))
    registry = jobs.get("mcp-registry", {})
    check("the MCP Registry entry is published with the workflow's OIDC identity (io.github namespace)",
          "mcp-publisher login github-oidc" in runs(registry) and registry.get("permissions", {}).get("id-token") == "write")
    return TALLY.summary("release-config")


if __name__ == "__main__":
    sys.exit(main())
