"""``benchmarks/ingest_floor.py`` runs end to end on a tiny memory and prints its tables."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "ingest_floor.py"
DISK = [
    "save_many (the product)",
    "bulk_load floor",
    "bulk_load, five fewer properties",
    "memory load (baseline)",
    "parse only",
]
REMOTE = [
    "save_many (the product)",
    "update floor",
    "N-Quads POST, one transaction",
    "N-Quads POST, bulk loader",
]


def _tables(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *flags: str
) -> tuple[str, dict[str, dict[str, list[str]]]]:
    argv = [str(SCRIPT), "--workflows", "30", "--batch", "10", *flags]
    monkeypatch.setattr(sys, "argv", argv)
    runpy.run_path(str(SCRIPT), run_name="__main__")
    head, *lines = capsys.readouterr().out.splitlines()
    tables: dict[str, dict[str, list[str]]] = {}
    for line in lines:
        title, cells = line[:34].strip(), line[34:].split()
        if cells[0] == "wf/s":
            table = tables[title] = {}
        else:
            table[title] = cells
    return head, tables


def test_the_disk_table_has_every_write_against_the_floor(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    head, tables = _tables(monkeypatch, capsys)

    assert head.startswith("30 workflows,") and "batches of 10" in head
    assert list(tables) == ["disk store"]
    rows = tables["disk store"]
    assert list(rows) == DISK
    assert rows["bulk_load floor"][2] == "1.00"  # the ratios are against the floor itself
    for name, (rate, ms, _ratio, kb) in rows.items():
        assert float(rate) > 0 and float(ms) > 0
        assert (kb == "-") == (name in {"memory load (baseline)", "parse only"})
    lean, full = rows["bulk_load, five fewer properties"][3], rows["bulk_load floor"][3]
    assert 0 < float(lean) < float(full)  # fewer quads, fewer bytes


@pytest.mark.integration
def test_the_remote_table_writes_into_oxigraph_serve(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _, tables = _tables(monkeypatch, capsys, "--remote")

    assert list(tables) == ["disk store", "oxigraph serve (127.0.0.1)"]
    rows = tables["oxigraph serve (127.0.0.1)"]
    assert list(rows) == REMOTE
    assert rows["update floor"][2] == "1.00"
    assert all(float(cells[0]) > 0 and cells[3] == "-" for cells in rows.values())
