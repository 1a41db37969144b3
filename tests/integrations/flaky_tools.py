"""The test crews' tools, framework-neutral: each scaffold wraps them with its framework's ``tool``.

Tools fail on demand, like a flaky service: ``FLAKY.fail_once(name)`` makes the next call of that
tool raise ``TimeoutError``. ``tests/integrations/conftest.py`` resets ``FLAKY`` around every test.
"""

from __future__ import annotations

import json


class Flaky:
    """Which tools fail on their next call (each listed name fails once), and what was called."""

    def __init__(self) -> None:
        self.pending: list[str] = []
        self.calls: list[str] = []
        self.succeeded: list[str] = []

    def fail_once(self, name: str) -> None:
        self.pending.append(name)

    def check(self, name: str) -> None:
        self.calls.append(name)
        if name in self.pending:
            self.pending.remove(name)
            raise TimeoutError(f"{name}: upstream timeout")
        self.succeeded.append(name)

    def reset(self) -> None:
        self.pending.clear()
        self.calls.clear()
        self.succeeded.clear()


FLAKY = Flaky()


def product_extractor(file: str) -> str:
    """Extract the ingredient list from a safety data sheet (SDS) file."""
    FLAKY.check("product_extractor")
    return json.dumps({"file": file, "ingredients": ["PFOA", "water"]})


def pfas_classifier(names: list[str]) -> str:
    """Classify chemical names as PFAS or not."""
    FLAKY.check("pfas_classifier")
    return json.dumps({n: n.startswith("PF") for n in names})


def write_report(summary: str) -> str:
    """Write a short report."""
    FLAKY.check("write_report")
    return f"report: {summary}"
