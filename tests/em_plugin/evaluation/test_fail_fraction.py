"""``eval --fail-fraction``: train workflows marked failed do not lower suggestion quality, and
no shown suggestion rests mostly on failures without saying so."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from em_plugin.cli import cli
from em_plugin.errors import ConfigurationError
from em_plugin.evaluation.protocol import _load, _mark_failed, evaluate
from tests.data_files import benchmark_file


def test_the_failed_sample_is_fixed_and_sized() -> None:
    train, _ = _load(benchmark_file("tau2_airline.jsonl"), True)
    first = _mark_failed(train, 0.3)
    failed = [w.id for w in first if w.outcome == "failure"]
    assert len(failed) == round(0.3 * len(train))
    assert failed == [w.id for w in _mark_failed(train, 0.3) if w.outcome == "failure"]
    with pytest.raises(ConfigurationError, match=r"fail_fraction must be in \[0, 1\]"):
        _mark_failed(train, 1.5)


def test_marked_failures_do_not_lower_quality_and_are_said() -> None:
    path = benchmark_file("tau2_airline.jsonl")
    plain = evaluate(path, embedder="fake", lstm=False, progress=False)
    marked = evaluate(path, embedder="fake", lstm=False, progress=False, fail_fraction=0.3)
    assert marked["fail_fraction"] == 0.3 and plain["mostly_failed_shown"] == 0
    assert marked["mostly_failed_unsaid"] == 0
    assert marked["hit@3"] >= plain["hit@3"] and marked["hit@1"] >= plain["hit@1"] - 1e-9


def test_the_cli_option(tmp_path: Path) -> None:
    path = benchmark_file("tau2_airline.jsonl")
    result = CliRunner().invoke(
        cli,
        ["eval", str(path), "--no-lstm", "--fail-fraction", "0.3", "--format", "json"],
        env={"EM_PLUGIN_EMBEDDER": "fake", "EM_PLUGIN_STORE": str(tmp_path / "s")},
    )
    assert result.exit_code == 0, result.output
    assert '"fail_fraction": 0.3' in result.stdout
    bad = CliRunner().invoke(cli, ["eval", str(path), "--sweep", "--fail-fraction", "0.3"])
    assert bad.exit_code == 2 and "--fail-fraction applies to one evaluation" in bad.stderr
