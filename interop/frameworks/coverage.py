"""Every case of the SDK matrix (interop/matrix-cases.json, which the framework matrix runs too) and every model-hop
fault has cells in the committed docs/frameworks.json: a case added to the cases file without re-recording the
framework matrix is named here, not left out of the frameworks' table in silence (the check mode samples only
committed cells, so it would never run it).

    python coverage.py CASES.json FRAMEWORKS.json

Prints each missing case, then `frameworks coverage: N cases recorded, M missing`; exit 1 when one is missing.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from matrix import case_id, load_cases  # noqa: E402  (the cases the matrix runs, the ids it records them under)


def missing(cases: list[dict], committed: dict) -> tuple[int, list[str]]:
    """The number of case ids the matrix runs, and those no committed framework has a cell of."""
    recorded = {key for framework in committed["frameworks"] for key in framework["cells"]}
    ids = [case_id(case) for case in cases]
    return len(ids), [i for i in ids if i not in recorded]


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-3], file=sys.stderr)
        return 2
    cases = load_cases(sys.argv[1])
    with open(sys.argv[2], encoding="utf-8") as f:
        committed = json.load(f)
    total, absent = missing(cases, committed)
    for case in absent:
        print(f"missing  `{case}`: a case of {sys.argv[1]} with no cell in {sys.argv[2]}")
    print(f"frameworks coverage: {total - len(absent)} cases recorded, {len(absent)} missing")
    return 1 if absent else 0


if __name__ == "__main__":
    sys.exit(main())
