"""Truthful suggestion provenance: what a record cites existed when the suggestions were made,
fallback suggestions derive from the crew description, and a backup carries the records."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from em_plugin.cli import cli
from em_plugin.memory import EpisodicMemory
from em_plugin.suggest.types import SOURCES, Evidence, Suggestion
from provenance.model import CallStep, InstructionStep, Workflow
from provenance.stores import open_store

CREW = {
    "name": "chemists",
    "description": "PFAS checks",
    "agents": [{"name": "chemist", "role": "checks", "tools": ["pfas_classifier"]}],
}
PAST = Workflow(
    id="past-1",
    steps=(InstructionStep("Extract", (CallStep("extractor"), CallStep("classifier"))),),
)


def _sources(store: object) -> list[dict[str, str]]:
    result = store.query("suggestion-sources")  # type: ignore[attr-defined]
    return [{k: str(v) for k, v in row.items()} for row in result.dicts()]


def test_records_cite_stored_workflows_and_fallback_cites_the_crew(tmp_path: Path) -> None:
    with EpisodicMemory(store="memory:", embedder="fake", crew_description=CREW) as memory:
        memory.save(PAST)
        shown = [
            Suggestion(
                "Call classifier",
                "classifier",
                score=0.9,
                evidence=(Evidence("past-1", 1, 1.0), Evidence("session/s1", 1, 1.0)),
            ),
            Suggestion("Call pfas_classifier", "pfas_classifier", score=0.5, source="fallback"),
        ]
        memory.record_suggestions("s1", shown)
        rows = _sources(memory.store)
    cited = {(r["tool"], r["workflow"]) for r in rows}
    # The session's own workflow was not stored when the suggestions were made: not cited.
    assert cited == {("classifier", "past-1"), ("pfas_classifier", "(crew description)")}
    crew_row = next(r for r in rows if r["tool"] == "pfas_classifier")
    assert crew_row["title"] == "crew description (chemists)"


def test_every_source_is_documented() -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "suggestions.md").read_text()
    for source in SOURCES:
        assert f"`{source}`" in docs, source


def test_an_nq_export_is_a_backup_with_the_suggestion_records(tmp_path: Path) -> None:
    source, target = tmp_path / "source", tmp_path / "target"
    with EpisodicMemory(store=str(source), embedder="fake") as memory:
        memory.save(PAST)
        suggestion = Suggestion(
            "Call classifier", "classifier", score=0.9, evidence=(Evidence("past-1", 1, 1.0),)
        )
        memory.record_suggestions("s1", [suggestion])
    backup = tmp_path / "backup.nq"
    runner = CliRunner()
    exported = runner.invoke(
        cli,
        [
            "--embedder",
            "fake",
            "export",
            "--format",
            "nq",
            "-o",
            str(backup),
            "--store",
            str(source),
        ],
    )
    assert exported.exit_code == 0, exported.output
    restored = runner.invoke(
        cli, ["--embedder", "fake", "import", str(backup), "--store", str(target)]
    )
    assert restored.exit_code == 0, restored.output
    assert "restored 1 workflow and 2 record graphs" in restored.output
    with (
        open_store(str(source), read_only=True) as before,
        open_store(str(target), read_only=True) as after,
    ):
        assert after.ids() == before.ids() == ["past-1"]
        assert _sources(after) == _sources(before) != []
    with EpisodicMemory(store=str(target), embedder="fake") as memory:  # the index follows
        assert memory.ids() == ["past-1"]
