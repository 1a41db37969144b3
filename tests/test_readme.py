"""The README's Python blocks run as written, in order, in a fresh process and directory."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def python_blocks() -> list[str]:
    """Every fenced ``python`` block of the README, in order."""
    return _BLOCK.findall(README.read_text(encoding="utf-8"))


def test_readme_has_the_expected_shape() -> None:
    text = README.read_text(encoding="utf-8")
    for heading in (
        "make demo",
        "make test",
        "LangGraph",
        "BeeAI",
        "em-plugin query",
        "notebooks/",
    ):
        assert heading in text, heading
    assert len(python_blocks()) >= 3


@pytest.mark.integration
def test_readme_python_blocks_run(tmp_path: Path) -> None:
    script = tmp_path / "readme_blocks.py"
    script.write_text("\n\n".join(python_blocks()), encoding="utf-8")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "EM_PLUGIN_STORE": str(tmp_path / "store")}
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    for expected in _expected_outputs():
        assert expected in result.stdout, (expected, result.stdout[-3000:])


def _expected_outputs() -> list[str]:
    """Lines the README shows under "Output:" blocks (```text after a python block)."""
    text = README.read_text(encoding="utf-8")
    shown = re.findall(r"^```python\n.*?^```\n+Output:\n+```text\n(.*?)^```", text, re.S | re.M)
    return [line.strip() for block in shown for line in block.splitlines() if line.strip()]
