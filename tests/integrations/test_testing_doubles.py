"""The shipped test doubles drive a real LangGraph agent, as docs/api.md shows."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_api_guide_testing_example_runs_and_prints_what_it_shows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    guide = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    section = guide.split("### Testing code built on the memory")[1]
    block = section.split("```python\n")[1].split("```")[0]
    exec(compile(block, "docs/api.md", "exec"), {})
    shown = block.rsplit("# ", 1)[1].strip()
    assert capsys.readouterr().out.strip() == shown == "['lookup_order']"


def test_the_shipped_langchain_model_records_what_it_was_sent() -> None:
    from langchain_core.messages import AIMessage, HumanMessage

    from integrations.langgraph.testing import ScriptedChatModel, call

    model = ScriptedChatModel().load([call("t", {"x": 1}, "c1"), AIMessage("done")])
    assert model.bind_tools([]) is model
    first = model.invoke([HumanMessage("go")])
    assert first.tool_calls[0]["id"] == "c1" and model.invoke("again").text == "done"
    assert [m.text for m in model.seen[0]] == ["go"]
