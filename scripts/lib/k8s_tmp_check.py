#!/usr/bin/env python3
"""Checks what the Kubernetes schemas cannot: every container whose root file system is read-only mounts an
emptyDir at /tmp (faultlab's HOME and TMPDIR, where eval keeps its runs' scratch folders), so no pod fails with
"Read-only file system".

    k8s_tmp_check.py MANIFEST...

Prints one line per container checked and exits 1 when one lacks the mount (naming file, object and container).
Needs PyYAML (scripts/ship-lint.sh runs it in its venv).
"""

from __future__ import annotations

import sys

import yaml


def pod_spec(obj: dict) -> dict | None:
    """The pod template's spec of a workload, or a Pod's own spec."""
    kind = obj.get("kind")
    spec = obj.get("spec") or {}
    if kind == "Pod":
        return spec
    if kind == "CronJob":
        spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    template = spec.get("template")
    return (template or {}).get("spec")


def check(path: str) -> list[str]:
    problems: list[str] = []
    with open(path, encoding="utf-8") as f:
        documents = [d for d in yaml.safe_load_all(f) if d]
    for obj in documents:
        spec = pod_spec(obj)
        if spec is None:
            continue
        name = f"{obj.get('kind')}/{(obj.get('metadata') or {}).get('name')}"
        empty_dirs = {v["name"] for v in spec.get("volumes") or [] if "emptyDir" in v}
        for container in (spec.get("initContainers") or []) + (spec.get("containers") or []):
            security = container.get("securityContext") or {}
            if not security.get("readOnlyRootFilesystem"):
                continue
            mounts = {m.get("mountPath"): m.get("name") for m in container.get("volumeMounts") or []}
            where = f"{path}: {name}, container {container.get('name')}"
            if mounts.get("/tmp") in empty_dirs:
                print(f"ok    {where}: read-only root, emptyDir at /tmp")
            else:
                problems.append(f"{where}: readOnlyRootFilesystem but no emptyDir mounted at /tmp")
    return problems


def main() -> int:
    problems = [p for path in sys.argv[1:] for p in check(path)]
    for problem in problems:
        print(f"FAIL  {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
