"""What the previous release stored for a LangGraph session still loads to the same workflow.

``tests/data/sessions/`` holds a thread's messages and its private channel as the previous
release's node (``episodic_capture``) and middleware (``episodic_trace``, nested call entries)
checkpointed them, with the workflow that release compiled from them (see the folder's README).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_core.messages import messages_from_dict

from em_plugin.capture.trajectory import without_run_details
from integrations.langgraph._trace import trajectory_from_trace
from integrations.langgraph._turns import trajectory_from_turns
from provenance.model import CallStep, Step, Workflow
from provenance.workflow_json import workflow_from_json

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "sessions"


def sample(name: str) -> dict[str, Any]:
    return json.loads((SAMPLES / name).read_text(encoding="utf-8"))


def call_ids(steps: tuple[Step, ...]) -> list[str | None]:
    return [
        i for s in steps for i in ([s.id] if isinstance(s, CallStep) else []) + call_ids(s.steps)
    ]


def test_an_earlier_node_thread_compiles_to_the_workflow_it_compiled_to() -> None:
    data = sample("langgraph_node_v1.json")
    messages = messages_from_dict(data["messages"])
    workflow = trajectory_from_turns(
        messages, data["episodic_capture"], session_id="t1", scope="default"
    ).compile()
    assert workflow == workflow_from_json(data["workflow"])


def test_an_earlier_middleware_thread_compiles_to_the_workflow_it_compiled_to() -> None:
    data = sample("langgraph_middleware_v1.json")
    messages = messages_from_dict(data["messages"])
    workflow = trajectory_from_trace(
        messages, data["episodic_trace"], session_id="n1", scope="default"
    ).compile()
    expected: Workflow = workflow_from_json(data["workflow"])
    # That release stamped the middleware's calls when it replayed them: only times differ.
    assert without_run_details(workflow) == without_run_details(expected)
    assert call_ids(workflow.steps) == call_ids(expected.steps) == ["c1", "c2", "k2", "k3"]
    assert [f.call.id for f in workflow.failed] == [f.call.id for f in expected.failed]
    assert [f.call.name for f in workflow.failed] == ["pfas_classifier", "write_report"]
