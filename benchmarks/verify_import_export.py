"""Import every benchmark file into a disk store through the CLI, export it, compare; check counts.

Usage: python benchmarks/verify_import_export.py [DATA_DIR]

For each ``*.jsonl`` file: ``em-plugin import`` into a fresh disk store, ``em-plugin export
--format jsonl``, and compare the exported objects with the file's lines (by id). Then run the
``tool-usage`` and ``tool-pairs`` named queries and compare them with counts computed directly
from the JSON (call leaves in leaf order, instructions skipped).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from click.testing import CliRunner

from integrations.cli import cli
from provenance.workflow_json import read_jsonl


def _direct_counts(path: Path) -> tuple[Counter, Counter, Counter]:
    calls: Counter = Counter()
    workflows: Counter = Counter()
    pairs: Counter = Counter()
    for workflow in read_jsonl(path):
        names = [leaf.name for leaf in workflow.leaves() if leaf.kind == "call"]
        calls.update(names)
        workflows.update(set(names))
        pairs.update(zip(names, names[1:], strict=False))
    return calls, workflows, pairs


def _query(runner: CliRunner, store: str, name: str) -> list[dict]:
    result = runner.invoke(cli, ["query", name, "--store", store, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def verify(path: Path, runner: CliRunner) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = str(Path(tmp) / "store")
        out = Path(tmp) / "out.jsonl"
        started = time.perf_counter()
        result = runner.invoke(cli, ["import", str(path), "--store", store])
        assert result.exit_code == 0, result.output
        imported = time.perf_counter() - started
        result = runner.invoke(
            cli, ["export", "--store", store, "--format", "jsonl", "-o", str(out)]
        )
        assert result.exit_code == 0, result.output
        original = {json.loads(x)["id"]: json.loads(x) for x in path.read_text().splitlines() if x}
        again = {json.loads(x)["id"]: json.loads(x) for x in out.read_text().splitlines() if x}
        equal = original == again
        calls, workflows, pairs = _direct_counts(path)
        usage = {
            r["tool"]: (int(r["calls"]), int(r["workflows"]))
            for r in _query(runner, store, "tool-usage")
        }
        expected_usage = {t: (calls[t], workflows[t]) for t in calls}
        got_pairs = {
            (r["tool"], r["next_tool"]): int(r["count"])
            for r in _query(runner, store, "tool-pairs")
        }
        print(
            f"{path.name}: {len(original)} workflows, import {imported:.1f} s, "
            f"export equal: {equal}, tool-usage agrees: {usage == expected_usage}, "
            f"tool-pairs agree: {got_pairs == dict(pairs)}"
        )
        if not (equal and usage == expected_usage and got_pairs == dict(pairs)):
            raise SystemExit(1)


def main() -> None:
    data = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/data/workflows")
    runner = CliRunner()
    for path in sorted(data.glob("*.jsonl")):
        verify(path, runner)


if __name__ == "__main__":
    main()
