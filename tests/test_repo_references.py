"""The repo explains itself: code and tests cite files in the repo, never the design notes outside.

Docstrings point at ``docs/*.md``; a reference to the project's private design map or notes
(which a clone does not have) would send a reader nowhere.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OUTSIDE = re.compile(r"DESIGN §|DESIGN\.md|\bnotes/\w+\.md|\.\./shared/")
DOC_LINK = re.compile(r"\bdocs/[\w-]+\.md")


def _sources() -> list[Path]:
    return sorted(
        p
        for package in ("em_plugin", "provenance", "integrations", "benchmarks")
        for p in (ROOT / package).rglob("*.py")
    )


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_sources_cite_nothing_outside_the_repo(path: Path) -> None:
    hits = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert not hits, "cites files outside the repo:\n" + "\n".join(hits)


def test_cited_docs_exist() -> None:
    cited = {m.group(0) for p in _sources() for m in DOC_LINK.finditer(p.read_text("utf-8"))}
    assert cited, "no module cites docs/"
    missing = sorted(c for c in cited if not (ROOT / c).is_file())
    assert not missing, f"cited but missing: {missing}"
