"""``benchmarks/ingest_floor.py`` runs end to end on a tiny memory and prints its tables."""

from __future__ import annotations

import re
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
    ratios = [line for line in lines if line.startswith("  ")]  # the per-round ratios
    for line in lines[len(ratios) + 1 :]:
        title, cells = line[:34].strip(), line[34:].split()
        if cells[0] == "wf/s":
            table = tables[title] = {}
        else:
            table[title] = cells
    tables["ratios"] = {line.split(":")[0].strip(): line.split(":")[1].split() for line in ratios}
    return head, tables


def test_the_disk_table_has_every_write_against_the_floor(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    head, tables = _tables(monkeypatch, capsys)

    assert head.startswith("30 workflows,") and "batches of 10" in head
    assert list(tables) == ["disk store", "ratios"]
    assert list(tables["ratios"]) == ["round 1", "median", "python work"]
    assert float(tables["ratios"]["python work"][0]) > 0  # ms/wf of the calling thread
    rows = tables["disk store"]
    assert list(rows) == DISK
    assert rows["bulk_load floor"][2] == "1.00"  # the ratios are against the floor itself
    for name, (rate, ms, _ratio, kb) in rows.items():
        assert float(rate) > 0 and float(ms) > 0
        assert (kb == "-") == (name in {"memory load (baseline)", "parse only"})
    assert float(rows["bulk_load, five fewer properties"][3]) > 0
    # Fewer quads per workflow (on disk, 30 workflows are too few for RocksDB's sizes to tell).
    quads, lean = re.search(
        r"([\d.]+) quads per workflow \(([\d.]+) with five fewer", head
    ).groups()
    assert 0 < float(lean) < float(quads)


@pytest.mark.integration
def test_the_remote_table_writes_into_oxigraph_serve(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _, tables = _tables(monkeypatch, capsys, "--remote")

    assert list(tables) == ["disk store", "oxigraph serve (127.0.0.1)", "ratios"]
    rows = tables["oxigraph serve (127.0.0.1)"]
    assert list(rows) == REMOTE
    assert rows["update floor"][2] == "1.00"
    assert all(float(cells[0]) > 0 and cells[3] == "-" for cells in rows.values())


def test_rounds_measure_the_product_the_floor_and_the_serial_path_in_turn(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _, tables = _tables(monkeypatch, capsys, "--rounds", "2", "--product-only", "--serial")

    assert list(tables["disk store"]) == [
        "save_many (the product)",
        "bulk_load floor",
        "save_many, batch by batch",
    ]
    ratios = tables["ratios"]
    assert list(ratios) == ["round 1", "round 2", "median", "python work"]
    for name in ("round 1", "round 2"):
        assert ratios[name][0] == "save_many" and ratios[name][2] == "batch"
        assert float(ratios[name][1].rstrip(",")) > 0 and float(ratios[name][-1]) > 0
    assert float(ratios["median"][1]) in {
        float(ratios[r][1].rstrip(",")) for r in ("round 1", "round 2")
    }
