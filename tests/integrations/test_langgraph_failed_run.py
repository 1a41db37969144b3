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


class FlakyChatModel(ScriptedChatModel):
    """A chat model whose provider is down for one instruction ("... beta.pdf")."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
        asked = [m for m in messages if isinstance(m, HumanMessage)]
        if asked and "beta.pdf" in asked[-1].text:
            raise BrokenModelError("LLM provider unreachable (injected)")
        return super()._generate(messages, stop, run_manager, **kwargs)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_failure_travels_with_the_thread_to_another_worker(mode: str) -> None:
    """Worker A's run raises; worker B (its own node, the same checkpointer, a process that
    never saw the run) saves the thread with outcome failure: the error is read from the
    thread's checkpoints, not from A's memory."""
    import asyncio

    from langchain_core.messages import AIMessage

    from integrations.langgraph._capture import install

    memory, saver = _memory(), InMemorySaver()
    model = FlakyChatModel(messages=iter([AIMessage("Nothing to extract.")]))
    broken = BrokenChatModel(messages=iter([]))
    first = with_episodic_memory(agent_crew(model), memory).compile(checkpointer=saver)
    other = with_episodic_memory(agent_crew(broken), memory).compile(checkpointer=saver)
    key = "episodic_capture"
    config = thread(f"travels-{mode}")
    first.invoke({"messages": [HumanMessage("Extract the ingredients from acme.pdf")]}, config)
    with pytest.raises(BrokenModelError):
        first.invoke({"messages": [HumanMessage(INSTRUCTION.replace("acme", "beta"))]}, config)
    install().run_failure(config["configurable"]["thread_id"])  # B's process never saw it

    save = {"messages": [HumanMessage("/save")]}
    if mode == "sync":
        other.invoke(save, config)
    else:
        asyncio.run(other.ainvoke(save, config))
    workflow = _saved(memory)
    assert workflow.outcome == "failure"  # type: ignore[attr-defined]
    assert [s.text for s in workflow.steps] == [  # type: ignore[attr-defined]
        "Extract the ingredients from acme.pdf",
        INSTRUCTION.replace("acme", "beta"),
    ]
    # The failed turn is an entry of the thread now: recorded once, whoever reads it next.
    entries = other.get_state(config).values[key]
    errors = [e.get("error") or e.get("run_error") for e in entries]
    assert errors[-1] == "BrokenModelError: LLM provider unreachable (injected)"
    other.invoke({"messages": [HumanMessage("/save")]}, config)
    assert len(other.get_state(config).values[key]) == len(entries)
    assert _saved(memory).outcome == "failure"  # type: ignore[attr-defined]


def test_a_new_instruction_after_the_failure_supersedes_it() -> None:
    from langchain_core.messages import AIMessage

    memory = _memory()
    model = FlakyChatModel(messages=iter([AIMessage("Done."), AIMessage("Done again.")]))
    graph = with_episodic_memory(agent_crew(model), memory).compile(checkpointer=InMemorySaver())
    config = thread("superseded")
    with pytest.raises(BrokenModelError):
        graph.invoke({"messages": [HumanMessage(INSTRUCTION.replace("acme", "beta"))]}, config)
    graph.invoke({"messages": [HumanMessage("Extract the ingredients from gamma.pdf")]}, config)
    graph.invoke({"messages": [HumanMessage("/save")]}, config)
    workflow = _saved(memory)
    assert workflow.outcome is None  # type: ignore[attr-defined]
    assert len(workflow.steps) == 2  # type: ignore[attr-defined]
