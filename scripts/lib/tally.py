"""The PASS/FAIL lines of the ship checks (crates, release config, the Action's script) and their one summary line
`<what>: N passed, M failed`, which scripts/test.sh counts."""

from __future__ import annotations


class Tally:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0

    def check(self, name: str, ok: bool, detail: object = "") -> None:
        """One PASS or FAIL line; a failure's detail follows it on the same line, or below when it spans lines."""
        if ok:
            self.passed += 1
            print(f"PASS  {name}")
            return
        self.failed += 1
        text = str(detail)
        if text == "":
            print(f"FAIL  {name}")
        elif "\n" in text:
            print(f"FAIL  {name}\n      {text}")
        else:
            print(f"FAIL  {name}: {text}")

    def summary(self, what: str) -> int:
        """Prints the summary line and returns the exit status: 1 when a check failed."""
        print(f"{what}: {self.passed} passed, {self.failed} failed")
        return 1 if self.failed else 0
