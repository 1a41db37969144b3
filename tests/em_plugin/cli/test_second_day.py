"""What a user meets on the second day: exit statuses, option positions, formats, wording.

Every test drives ``em-plugin`` through click's CliRunner against real disk stores (the issue
"The second day", items 8, 9, 10 and 14).
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from sample_store import copy_store

from em_plugin.cli import cli

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "tests" / "em_plugin" / "data" / "pfas_sample.jsonl"


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("EM_PLUGIN_STORE", str(tmp_path / "default-store"))
    monkeypatch.setenv("EM_PLUGIN_EMBEDDER", "fake")


def run(*args: Any, code: int = 0, input: str | None = None) -> Result:
    """Invoke the CLI at 80 columns; assert the exit status."""
    result = CliRunner().invoke(cli, [str(a) for a in args], input=input, terminal_width=80)
    assert result.exit_code == code, f"exit {result.exit_code}\n{result.output}"
    return result


@pytest.fixture
def store(sample_store_template: Path, tmp_path: Path) -> Path:
    """A disk store holding the 7 sample workflows in scope 'default'."""
    return copy_store(sample_store_template, tmp_path / "store")


# --------------------------------------------------------------------------- item 9: statuses


def test_a_file_argument_that_is_missing_or_a_directory_is_bad_usage(tmp_path: Path) -> None:
    missing = run("import", tmp_path / "nosuch.jsonl", "--store", tmp_path / "s", code=2)
    assert "nosuch.jsonl" in missing.output and "does not exist" in missing.output
    folder = run("import", tmp_path, "--store", tmp_path / "s", code=2)
    assert "is a directory" in folder.output
    # suggest and eval said the same already: one rule for every FILE argument.
    assert run("suggest", tmp_path / "nosuch.json", code=2).exit_code == 2
    assert not (tmp_path / "s").exists(), "nothing was created"


def test_a_store_path_that_is_a_file_is_not_found() -> None:
    result = run("list", "--store", "/etc/passwd", code=3)
    assert result.output.startswith("error: no store at /etc/passwd")
    assert "is a file" in result.output


def test_an_unknown_query_name_is_a_bad_value_listing_the_names(store: Path) -> None:
    result = run("query", "nosuchquery", "--store", store, code=2)
    assert "unknown query 'nosuchquery'" in result.output and "tool-pairs" in result.output
    assert run("query", "--store", store, code=2).exit_code == 2  # neither NAME nor --sparql
    assert run("query", "nosuch.rq", "--store", store, code=2).exit_code == 2
    bad_bind = run("query", "tool-pairs", "--bind", "novalue", "--store", store, code=2)
    assert "novalue" in bad_bind.output


# --------------------------------------------------------------------------- item 8: formats


@pytest.mark.parametrize("fmt", ["ttl", "trig", "jsonld", "provn"])
def test_import_of_an_rdf_export_names_the_formats_import_reads(
    store: Path, tmp_path: Path, fmt: str
) -> None:
    exported = tmp_path / f"exp.{fmt}"
    run("export", "--format", fmt, "-o", exported, "--store", store)
    result = run("import", exported, "--store", tmp_path / "new", code=1)
    message = result.output
    assert "invalid JSON" not in message
    assert f"exp.{fmt}" in message and "export" in message
    for readable in (".jsonl", ".json", ".nq"):
        assert readable in message
    assert not (tmp_path / "new").exists()


def test_import_of_a_prov_json_export_says_it_is_prov_json(store: Path, tmp_path: Path) -> None:
    exported = tmp_path / "exp.json"
    run("export", "--format", "provjson", "-o", exported, "--store", store)
    result = run("import", exported, "--store", tmp_path / "new", code=1)
    assert "PROV-JSON" in result.output and ".jsonl" in result.output


def test_import_of_a_text_file_that_is_no_json_lists_the_formats(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("hello\n")
    result = run("import", notes, "--store", tmp_path / "new", code=1)
    assert "notes.txt:1: invalid JSON" in result.output
    assert ".jsonl" in result.output and ".nq" in result.output


# --------------------------------------------------------------------------- item 10: options


def test_store_options_go_before_or_after_a_subcommand(store: Path) -> None:
    after = run("sessions", "abandon", "--older-than", "1h", "--store", store)
    before = run("sessions", "--store", store, "abandon", "--older-than", "1h")
    assert after.output == before.output == "0 sessions abandoned.\n"
    scoped = run("sessions", "abandon", "--older-than", "1h", "--scope", "nosuch", "--store", store)
    assert scoped.output == "0 sessions abandoned.\n"


def test_the_root_options_go_after_the_command_too(store: Path) -> None:
    run("list", "--store", store, "--embedder", "fake", "--limit", "1")
    # --debug after the command shows the traceback as it does before it.
    bad = ["query", "--sparql", "SELECT * WHERE { ?s ?p }", "--store", str(store)]
    for args in (["--debug", *bad], [*bad, "--debug"]):
        result = CliRunner().invoke(cli, args)
        assert type(result.exception).__name__ == "QueryError", result.output


@pytest.mark.parametrize("bare", ["1", "0.5", "30"])
def test_a_duration_needs_a_unit(store: Path, bare: str) -> None:
    result = run("sessions", "--store", store, "abandon", "--older-than", bare, code=2)
    assert f"'{bare}' has no unit" in result.output
    assert "s, m, h or d" in result.output


# --------------------------------------------------------------------------- item 14: Ctrl-C

_LATE_CTRL_C = """
import atexit, os, signal, sys
from pathlib import Path
import click
from em_plugin.cli.base import cli
from em_plugin.cli.exiting import run_program

marker = Path(sys.argv[1])

def flush_saves():
    # Exit work a command leaves (like the background saves' flush): Ctrl-C comes during it.
    os.kill(os.getpid(), signal.SIGINT)
    marker.write_text("flushed")

@cli.command("work")
def work():
    atexit.register(flush_saves)
    click.echo("imported 1 workflow")

sys.argv = ["em-plugin", "work"]
run_program(lambda: cli.main(prog_name="em-plugin"))
"""


def test_ctrl_c_while_the_program_exits_says_interrupted_and_loses_nothing(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "flushed"
    done = subprocess.run(
        [sys.executable, "-c", _LATE_CTRL_C, str(marker)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.stdout == "imported 1 workflow\n"
    assert done.stderr == "interrupted\n", done.stderr
    assert done.returncode == 130
    assert marker.read_text() == "flushed", "the exit work finished"


# --------------------------------------------------------------------------- item 14: wording


def test_counts_are_singular_for_one_and_an_empty_store_has_no_scopes(tmp_path: Path) -> None:
    one = tmp_path / "one.jsonl"
    one.write_text(SAMPLE.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    store = tmp_path / "s"
    assert run("import", one, "--store", store).output.startswith("imported 1 workflow into")
    assert run("list", "--store", store).output.rstrip().endswith("\n1 workflow")
    empty = tmp_path / "empty"
    run("import", "/dev/null", "--store", empty)
    stats = run("stats", "--store", empty).output
    assert "{}" not in stats and stats.rstrip().splitlines()[-1].split() == ["scopes", "none"]


# --------------------------------------------------------------------------- item 6: 80 columns

SOURCES = [
    {
        "session": "demo-beeai",
        "time": f"2026-12-07T13:38:{10 + i}.123456+00:00",
        "rank": i + 1,
        "text": f"{verb} the ingredients of firestop_afff3_sds.txt for the report",
        "tool": tool,
        "score": 0.8523 - i / 10,
        "workflow": f"bootstrap/00{i + 10}",
        "title": f"PFAS report {i} for duraglide_nonstick_primer_sds.pdf",
    }
    for i, (verb, tool) in enumerate(
        [("Extract", "product_extractor"), ("Classify", "pfas_classifier"), ("Assess", "hazard")]
    )
]


def _rendered(columns: list[str], records: list[dict[str, Any]], width: int = 80) -> str:
    from rich.console import Console

    from em_plugin.cli.render import records_table

    console = Console(width=width, record=True, file=io.StringIO())
    console.print(records_table(columns, records, width=width))
    return console.export_text()


def _left_out(out: str) -> set[str]:
    flat = " ".join(out.split())
    if "not shown at" not in flat:
        return set()
    named = flat.split("columns:", 1)[1].split("(", 1)[0]
    return {name.strip() for name in named.split(",")}


@pytest.mark.parametrize("width", [80, 60])
def test_a_table_at_80_columns_wraps_prose_and_never_cuts_a_value(width: int) -> None:
    columns = list(SOURCES[0])
    out = _rendered(columns, SOURCES, width)
    lines = out.rstrip("\n").splitlines()
    assert all(len(line) <= width for line in lines), out
    assert "…" not in out
    words = {w.rstrip(",") for w in out.split()}
    left_out = _left_out(out)
    for record in SOURCES:
        for column in set(columns) - left_out:
            value = record[column]
            value = f"{value:.4g}" if isinstance(value, float) else str(value)
            # Whole, or (prose) every word whole on some line.
            assert set(value.split()) <= words, f"{column} {value!r} cut or missing:\n{out}"
    assert {"score", "tool", "workflow"}.isdisjoint(left_out) or width < 80, out


def test_columns_that_cannot_fit_are_named_not_cut() -> None:
    out = _rendered(list(SOURCES[0]), SOURCES, width=40)
    assert "…" not in out and _left_out(out)
    assert all(len(line) <= 40 for line in out.rstrip("\n").splitlines()), out


def test_the_workflow_steps_query_at_80_columns(store: Path) -> None:
    bound = ["--bind", "workflow=sample/pfas-1"]
    out = run("query", "workflow-steps", *bound, "--store", store).output
    lines = out.rstrip("\n").splitlines()
    assert all(len(line) <= 80 for line in lines), out
    assert "…" not in out
    words = out.split()
    assert words.count("instruction") >= 1 and "inst…" not in out
    assert "product_extractor" in words and "pfas_classifier" in words
