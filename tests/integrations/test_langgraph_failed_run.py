"""A crew run that raises: the error reaches the user unchanged, the next /save says "failure"."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from lg_scaffold import ScriptedChatModel, agent_crew, thread

from em_plugin.embedding import FakeEmbedder
from em_plugin.memory import EpisodicMemory
from integrations.langgraph import EpisodicMemoryMiddleware, with_episodic_memory

INSTRUCTION = "Extract the ingredients from the SDS file acme.pdf"


class BrokenModelError(RuntimeError):
    """The crew's model provider is down."""


class BrokenChatModel(ScriptedChatModel):
    """A chat model whose provider is down."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
        raise BrokenModelError("LLM provider unreachable (injected)")


def _memory() -> EpisodicMemory:
    return EpisodicMemory(store="memory:", embedder=FakeEmbedder(64))


def _saved(memory: EpisodicMemory) -> object:
    [workflow_id] = memory.ids()
    return memory.load(workflow_id)


@pytest.mark.parametrize("front", ["node", "middleware"])
def test_a_failed_run_is_saved_with_outcome_failure(front: str) -> None:
    memory = _memory()
    model = BrokenChatModel(messages=iter([]))
    if front == "node":
        graph = with_episodic_memory(agent_crew(model), memory).compile(
            checkpointer=InMemorySaver()
        )
    else:
        middleware = [EpisodicMemoryMiddleware(memory)]
        graph = agent_crew(model, middleware=middleware, checkpointer=InMemorySaver())
    config = thread(f"failed-{front}")

    with pytest.raises(BrokenModelError, match="unreachable"):
        graph.invoke({"messages": [HumanMessage(INSTRUCTION)]}, config)

    graph.invoke({"messages": [HumanMessage("/save")]}, config)
    workflow = _saved(memory)
    assert workflow.outcome == "failure"  # type: ignore[attr-defined]
    assert [s.text for s in workflow.steps] == [INSTRUCTION]  # type: ignore[attr-defined]
