"""docs/extending.md is real: each recipe's code blocks, run one after the other in a fresh
process, build the extension and check it (the store contract, a chain, the conformance kit)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from em_plugin.suggest.chat import ENTRY_POINT_GROUP as CHAT_GROUP
from provenance.stores import ENTRY_POINT_GROUP as STORE_GROUP

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "extending.md"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.DOTALL | re.MULTILINE)


def recipes() -> dict[str, list[tuple[str, str]]]:
    """``{recipe heading: [(language, code), ...]}`` for every ``## Recipe`` section."""
    sections = re.split(r"^## ", GUIDE.read_text(encoding="utf-8"), flags=re.MULTILINE)
    found = {}
    for section in sections[1:]:
        heading, _, body = section.partition("\n")
        if heading.startswith("Recipe"):
            found[heading] = [(m.group(1), m.group(2)) for m in _FENCE.finditer(body)]
    return found


def test_the_guide_has_three_recipes_with_code() -> None:
    found = recipes()
    assert len(found) == 3, list(found)
    assert all(any(lang == "python" for lang, _ in blocks) for blocks in found.values())


@pytest.mark.parametrize("heading", list(recipes()), ids=lambda h: h.split(":")[0])
def test_recipe_runs(heading: str, tmp_path: Path) -> None:
    code = "\n\n".join(text for lang, text in recipes()[heading] if lang == "python")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]


def test_entry_point_groups_shown_are_the_ones_read() -> None:
    shown = [text for blocks in recipes().values() for lang, text in blocks if lang == "toml"]
    groups = {g for text in shown for g in tomllib.loads(text)["project"]["entry-points"]}
    assert groups <= {CHAT_GROUP, STORE_GROUP} and groups, groups
