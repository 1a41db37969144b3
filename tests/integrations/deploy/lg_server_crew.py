"""The crew the LangGraph API server serves in the deployment tests (``langgraph.json`` names it).

A ``create_agent`` coordinator with two ``create_agent`` sub-agents behind tools, on rule-based
chat models: each model answers from the conversation it is given (no script state), so any
server process, and a restarted one, continues a thread the same way. The extractor's tool fails
on its first attempt and the sub-agent retries; an instruction naming :data:`UNREACHABLE` makes
the coordinator's model raise (the run fails). Every model input is appended to the JSON lines
file ``$EM_TEST_SEEN`` (the tests check that no model ever reads the memory's messages).

Environment: ``EM_TEST_STORE`` (the memory's store), ``EM_TEST_SEEN``.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import ToolErrorMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool

from em_plugin.embedding import FakeEmbedder
from em_plugin.memory import EpisodicMemory
from integrations.langgraph import with_episodic_memory

Rule = Callable[[Sequence[BaseMessage]], AIMessage]
#: Runs whose file is this one meet at a barrier: two such runs must be in flight together.
TOGETHER = "together.pdf"
_BARRIER = threading.Barrier(2)
#: An instruction naming this file makes the coordinator's model provider fail.
UNREACHABLE = "unreachable.pdf"


class RuleChatModel(BaseChatModel):
    """A chat model whose answer is a function of the conversation (tools decided by the rule)."""

    rule: Any
    label: str = "rule"

    @property
    def _llm_type(self) -> str:
        return "rule-chat-model"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self  # the rule decides which tool is called

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        seen = os.environ.get("EM_TEST_SEEN")
        if seen:
            with open(seen, "a", encoding="utf-8") as out:
                texts = [m.text for m in messages]
                out.write(json.dumps({"model": self.label, "texts": texts}) + "\n")
        return ChatResult(generations=[ChatGeneration(message=self.rule(messages))])


def _call(name: str, args: dict[str, Any], messages: Sequence[BaseMessage]) -> AIMessage:
    call_id = f"{name}-{len(messages)}"
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id}])


def _last_human(messages: Sequence[BaseMessage]) -> str:
    return next(m.text for m in reversed(messages) if isinstance(m, HumanMessage))


def coordinator_rule(messages: Sequence[BaseMessage]) -> AIMessage:
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return AIMessage(f"Done: {last.text}")
    task = _last_human(messages)
    if UNREACHABLE in task:
        raise ConnectionError("coordinator model provider unreachable")
    delegate = "ask_classifier" if task.startswith("Classify") else "ask_extractor"
    return _call(delegate, {"task": task}, messages)


def extractor_rule(messages: Sequence[BaseMessage]) -> AIMessage:
    last = messages[-1]
    file = _last_human(messages).split()[-1]
    attempt = 1 + sum(isinstance(m, ToolMessage) for m in messages)
    if isinstance(last, ToolMessage) and last.status != "error":
        return AIMessage(f"{file}: PFOA, water")
    if attempt > 2:
        return AIMessage(f"{file}: extraction failed")
    return _call("product_extractor", {"file": file, "attempt": attempt}, messages)


def classifier_rule(messages: Sequence[BaseMessage]) -> AIMessage:
    if isinstance(messages[-1], ToolMessage):
        return AIMessage("PFOA is a PFAS; water is not.")
    return _call("pfas_classifier", {"names": ["PFOA", "water"]}, messages)


@tool
def product_extractor(file: str, attempt: int) -> str:
    """Extract the ingredient list from a safety data sheet (SDS) file."""
    if attempt == 1:
        raise TimeoutError(f"{file}: upstream timeout")
    if file == TOGETHER:
        _BARRIER.wait(timeout=60)
    return json.dumps({"file": file, "ingredients": ["PFOA", "water"]})


@tool
def pfas_classifier(names: list[str]) -> str:
    """Classify chemical names as PFAS or not."""
    return json.dumps({n: n.startswith("PF") for n in names})


def _errors(exc: Exception, request: Any) -> str:
    return f"{type(exc).__name__}: {exc}"


def _agent(rule: Rule, tools: list[Any], name: str) -> Any:
    return create_agent(
        RuleChatModel(rule=rule, label=name),
        tools,
        middleware=[ToolErrorMiddleware(on_error=_errors)],
        name=name,
    )


extractor = _agent(extractor_rule, [product_extractor], "extractor")
classifier = _agent(classifier_rule, [pfas_classifier], "classifier")


@tool
def ask_extractor(task: str) -> str:
    """Ask the extraction agent."""
    return str(extractor.invoke({"messages": [HumanMessage(task)]})["messages"][-1].text)


@tool
def ask_classifier(task: str) -> str:
    """Ask the classification agent."""
    return str(classifier.invoke({"messages": [HumanMessage(task)]})["messages"][-1].text)


memory = EpisodicMemory(store=os.environ["EM_TEST_STORE"], embedder=FakeEmbedder(64))
coordinator = _agent(coordinator_rule, [ask_extractor, ask_classifier], "coordinator")
graph = with_episodic_memory(coordinator, memory)
