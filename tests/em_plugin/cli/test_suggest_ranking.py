"""``em-plugin suggest`` ranks the PFAS example by its evidence (issue 24), through click's runner.

In the demo's bootstrap data, product_extractor is followed by pfas_classifier in 40 of 48
transitions. Two stored sessions began with the example's instruction word for word and then
asked for a table: their table call answered the user's next request, so the instruction's
similarity weighs its vote at half strength (docs/suggestions.md, "Instruction text").
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from em_plugin.cli import cli

ROOT = Path(__file__).resolve().parents[3]
BOOTSTRAP = ROOT / "integrations" / "demo" / "pfas" / "data" / "bootstrap.jsonl"
CURRENT = ROOT / "docs" / "examples" / "current.json"


def _suggest(store: Path, env: dict[str, str]) -> list[dict]:
    runner = CliRunner()
    imported = runner.invoke(cli, ["import", str(BOOTSTRAP), "--store", str(store)], env=env)
    assert imported.exit_code == 0, imported.output
    pairs = runner.invoke(
        cli, ["query", "tool-pairs", "--store", str(store), "--format", "json"], env=env
    )
    counts = {(r["tool"], r["next_tool"]): int(r["count"]) for r in json.loads(pairs.output)}
    assert counts[("product_extractor", "pfas_classifier")] == 40
    found = runner.invoke(
        cli, ["suggest", str(CURRENT), "--store", str(store), "--format", "json"], env=env
    )
    assert found.exit_code == 0, found.output
    return json.loads(found.output)


def _check(suggestions: list[dict]) -> None:
    tools = [s["tool"] for s in suggestions]
    assert tools[0] == "pfas_classifier"
    assert sorted(tools[1:]) == ["hazard_assessment", "markdown_table"]
    top = suggestions[0]
    assert top["source"] == "episodic" and top["score"] > 0.5
    cited = [e for e in top["evidence"] if e["score"] > 0.65]
    assert len({e["workflow_id"] for e in cited}) >= 8


def test_the_pfas_example_ranks_the_classifier_first(tmp_path: Path) -> None:
    # The fake embedder gives identical texts cosine 1 and others about 0: the case as it was.
    _check(_suggest(tmp_path / "store", {"EM_PLUGIN_EMBEDDER": "fake"}))


@pytest.mark.integration
def test_the_readme_session_ranks_the_classifier_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The README's CLI session: the default model (all-MiniLM-L6-v2), offline.
    monkeypatch.delenv("EM_PLUGIN_EMBEDDER", raising=False)
    _check(_suggest(tmp_path / "store", {"HF_HUB_OFFLINE": "1"}))
