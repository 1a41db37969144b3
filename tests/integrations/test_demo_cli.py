"""``em-plugin demo`` end to end: the real embedder, a disk store, both frameworks."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from integrations.cli import cli
from integrations.demo import run_demo

OFF_TOPIC = "Who won the football world cup in 1998?"


def test_a_second_run_reuses_the_seeded_store(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    first = Console(record=True, width=140)
    assert run_demo(store, first, ("beeai",), question=OFF_TOPIC) == 0
    second = Console(record=True, width=140)

    code = run_demo(store, second, ("beeai",), question=OFF_TOPIC)

    assert code == 0
    first_text = first.export_text()  # export_text() empties the recording
    assert "64 bootstrap workflows loaded now" in first_text
    text = second.export_text()
    assert "bootstrap already loaded" in text and "65 workflows" in text  # + session/demo-beeai
    assert "Figure 3 on LangGraph" not in text
    # Both runs say why the second one can differ from the first.
    assert all("The store keeps the sessions saved above" in t for t in (first_text, text))
    # A returning user's third run: each run is one session of its own (the BeeAI demo session
    # used to resume the journaled turns of every earlier run, and failed from the third).
    third = Console(record=True, width=140)
    assert run_demo(store, third, ("beeai",), question=OFF_TOPIC) == 0
    for run_text in (first_text, text, third.export_text()):
        assert "Saved workflow session/demo-beeai (2 steps)" in run_text


def test_unknown_frameworks_are_refused() -> None:
    result = CliRunner().invoke(cli, ["demo", "--framework", "crewai"])
    assert result.exit_code == 2 and "'crewai' is not one of 'langgraph', 'beeai'" in result.output


@pytest.mark.integration
def test_em_plugin_demo_shows_figures_3_and_4_for_both_frameworks(tmp_path: Path) -> None:
    store = str(tmp_path / "store")

    result = CliRunner().invoke(
        cli, ["demo", "--store", store], env={"HF_HUB_OFFLINE": "1", "COLUMNS": "160"}
    )

    out = result.output
    assert result.exit_code == 0, out
    assert "embedder    sentence-transformers:all-MiniLM-L6-v2" in out
    for framework, title in (("langgraph", "LangGraph"), ("beeai", "BeeAI")):
        figure3 = out.split(f"Figure 3 on {title}")[1].split("Figure ")[0]
        assert "> Extract all ingredients from firestop_afff3_sds.txt" in figure3
        assert "FireStop AFFF 3% Aqueous Film-Forming Foam Concentrate contains 6" in figure3
        assert "> Classify them as PFAS" in figure3 and "2 of 6 are PFAS" in figure3
        assert figure3.count("Suggested next steps (from") == 2
        # Memory-based suggestions (the demo runs the paper's chain), with memory evidence.
        assert any(f"│ {source} " in figure3 for source in ("paper", "episodic", "procedural"))
        assert "bootstrap/00" in figure3
        assert f"Saved workflow session/demo-{framework} (2 steps)" in figure3
        assert f"SPARQL query workflow-steps, workflow=session/demo-{framework}" in figure3
        assert "    call product_extractor " in figure3  # nested under its handoff
        figure4 = out.split(f"Figure 4 on {title}")[1].split("explore further")[0]
        assert "> What is the boiling point of water on Mars?" in figure4
        assert "None of the crew's tools covers" in figure4
        assert "fallback" in figure4 and "crew description" in figure4
    assert (
        f"em-plugin query workflow-steps --bind workflow=session/demo-langgraph --store {store}"
        in out
    )
    assert f"em-plugin show session/demo-langgraph --store {store}" in out


def test_explore_commands_run_without_an_activated_venv(monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil
    import sys

    import integrations.demo as demo

    script = Path(sys.executable).parent / "em-plugin"
    if not script.is_file():
        pytest.skip("em-plugin is not installed beside this interpreter")
    monkeypatch.setattr(shutil, "which", lambda name: None)  # `make demo`: .venv not activated
    monkeypatch.chdir(script.parents[2])
    assert demo.em_plugin_program() == str(script.relative_to(script.parents[2]))
    commands = [command for command, _ in demo._explore_commands("/tmp/s", ("beeai",))]
    assert all(c.startswith(f"{script.parent.parent.name}/bin/em-plugin ") for c in commands)
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/em-plugin")
    assert demo.em_plugin_program() == "em-plugin"


def test_a_memory_store_run_says_there_is_nothing_to_explore() -> None:
    console = Console(record=True, width=140)
    code = run_demo("memory:", console, ("beeai",), question=OFF_TOPIC)
    text = console.export_text()
    assert code == 0
    assert "store was in memory and is gone" in text and "explore further" not in text
