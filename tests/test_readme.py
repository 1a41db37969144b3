"""The README shows what a user sees: every code block runs on its own and prints what is shown.

- ``python`` blocks run alone, each in a fresh process and directory; the ``text`` block after
  "Output:" is what they must print.
- ``console`` blocks are command-line sessions: each ``$ command`` runs in bash from the
  repository root (``/tmp/`` in them becomes a private directory) and must print the lines under
  it. A ``…`` in an expected line stands for any text (timings, cut cells).
- The demo excerpt (the ``text`` block after ``make demo``) must appear, line by line and in
  order, in the output of a first ``em-plugin demo`` run.
- ``bash`` blocks (installation) name only make targets and extras that exist.

Every link to a file of the repository must point at a file that exists, and nothing may cite
files outside the repository.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BIN = Path(sys.executable).parent
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.DOTALL | re.MULTILINE)
_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
WIDTH = "100"


@dataclass(frozen=True)
class Block:
    """One fenced block of the README."""

    language: str
    text: str
    before: str
    """The README text between the previous block and this one."""


def blocks() -> list[Block]:
    """Every fenced block of the README, in order."""
    text = README.read_text(encoding="utf-8")
    found, end = [], 0
    for match in _FENCE.finditer(text):
        found.append(Block(match.group(1), match.group(2), text[end : match.start()]))
        end = match.end()
    return found


def python_examples() -> list[tuple[str, str]]:
    """Each ``python`` block with the output shown after it."""
    found = blocks()
    pairs = []
    for i, block in enumerate(found):
        if block.language != "python":
            continue
        following = found[i + 1] if i + 1 < len(found) else None
        assert following is not None and following.language == "text", block.text[:80]
        assert following.before.strip() == "Output:", following.before
        pairs.append((block.text, following.text))
    return pairs


def matches(expected: str, actual: str) -> bool:
    """Tell whether an actual output line is the expected one (``…`` matches any text)."""
    pattern = ".*".join(re.escape(part) for part in expected.rstrip().split("…"))
    return re.fullmatch(pattern, actual.rstrip()) is not None


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.rstrip("\n").split("\n")]


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "COLUMNS": WIDTH,
        "EM_PLUGIN_STORE": str(tmp_path / "store"),
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(ROOT),
    }


# ------------------------------------------------------------------------------ structure


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
    assert "source .venv/bin/activate" in text and ".venv/bin/em-plugin" in text
    assert "--index-url https://download.pytorch.org/whl/cpu" in text
    assert len(python_examples()) == 3
    assert sum(b.language == "console" for b in blocks()) == 1


def test_ten_lines_are_ten_lines() -> None:
    ten = python_examples()[0][0]
    assert len([line for line in ten.splitlines() if line.strip()]) <= 10


def test_links_point_at_files_of_the_repository() -> None:
    text = README.read_text(encoding="utf-8")
    missing = [
        target
        for target in _LINK.findall(text)
        if "://" not in target and not (ROOT / target).exists()
    ]
    assert not missing, f"README links to files the repository lacks: {missing}"
    for outside in ("../shared", "DESIGN", "notes/"):
        assert outside not in text, outside


def test_install_lines_name_real_targets_and_extras() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    extras = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    )
    for block in blocks():
        if block.language != "bash":
            continue
        for target in re.findall(r"^make (\w+)", block.text, re.MULTILINE):
            assert re.search(rf"^{target}:", makefile, re.MULTILINE), target
        for group in re.findall(r'"\.\[([\w,]+)\]"', block.text):
            assert set(group.split(",")) <= extras, group


def test_the_extras_table_names_every_extra_and_serve_brings_its_server() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `(\w+)` \|", text, re.MULTILINE))
    assert listed == set(extras), f"extras missing from the README's table: {set(extras) - listed}"
    # `em-plugin serve` runs the oxigraph server binary of the oxigraph package.
    assert any(d.startswith("oxigraph") for d in extras["serve"])


def test_the_matcher_treats_the_ellipsis_as_any_text() -> None:
    assert matches("imported 64 workflows into /x in … s", "imported 64 workflows into /x in 9.1 s")
    assert matches("a   cut…", "a   cut…   ")
    assert not matches("64 workflows", "65 workflows")


# ------------------------------------------------------------------------------ python blocks


@pytest.mark.integration
@pytest.mark.parametrize("index", range(3), ids=["ten-lines", "langgraph", "beeai"])
def test_python_block_prints_what_the_readme_shows(index: int, tmp_path: Path) -> None:
    code, shown = python_examples()[index]
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")

    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,  # on its own: nothing from the other blocks, no repository files
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
    )

    assert result.returncode == 0, result.stderr[-3000:]
    assert _lines(result.stdout) == _lines(shown)


# ------------------------------------------------------------------------------ console block


def console_steps(private: Path) -> list[tuple[str, list[str]]]:
    """The ``$ command`` lines of the console block, each with its expected output lines."""
    (block,) = [b for b in blocks() if b.language == "console"]
    steps: list[tuple[str, list[str]]] = []
    for line in block.text.replace("/tmp/", f"{private}/").rstrip("\n").split("\n"):
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    return steps


@pytest.mark.integration
def test_console_session_prints_what_the_readme_shows(tmp_path: Path) -> None:
    assert shutil.which("em-plugin", path=str(BIN)), "em-plugin is not installed in this venv"
    for command, expected in console_steps(tmp_path):
        result = subprocess.run(
            ["bash", "-c", command],
            cwd=ROOT,
            env=_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=600,
        )
        actual = _lines(result.stdout + result.stderr)
        assert len(actual) == len(expected), f"$ {command}\n" + "\n".join(actual)
        for want, got in zip(expected, actual, strict=True):
            assert matches(want, got), f"$ {command}\n  expected: {want}\n  got:      {got}"


# ------------------------------------------------------------------------------ demo excerpt


@pytest.mark.integration
def test_demo_excerpt_is_what_a_first_run_prints(tmp_path: Path) -> None:
    pytest.importorskip("rdkit", reason="the demo needs the [demo] extra")
    # A short home: the setup table's store line must not wrap at the README's width.
    home = Path(tempfile.mkdtemp(prefix="h", dir="/tmp"))
    excerpt = next(
        b.text for b in blocks() if b.language == "text" and "crew model" in b.text
    ).replace("/root/", f"{home}/")
    env = {**_env(tmp_path), "HOME": str(home)}
    env.pop("EM_PLUGIN_STORE")  # the README shows the default store

    result = subprocess.run(
        [str(BIN / "em-plugin"), "demo"], env=env, capture_output=True, text=True, timeout=900
    )

    shutil.rmtree(home, ignore_errors=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    actual = _lines(result.stdout)
    position = 0
    for want in _lines(excerpt):
        if want == "…":
            continue
        while position < len(actual) and not matches(want, actual[position]):
            position += 1
        assert position < len(actual), f"not in the demo's output (in order): {want}"
        position += 1
