"""Where a BeeAI run's session and scope come from, and the outputs memory answers with.

- session: ``session_id`` in the run's context (``agent.run(text).context({"session_id": ...})``
  or ``agent.run(text, context={...})``), else the conversation id of the serving deployment
  (A2A context, ACP session, Responses API ``conversation``: see
  :mod:`integrations.beeai._deployment`), else the session whose last turn ended with the
  history the input replays (chat completions), else the id given to the constructor, else the
  agent's memory (a script's one conversation);
- scope: ``scope`` in the run's context, else the constructor's, else the memory's own.
"""

from __future__ import annotations

import logging
import uuid
import weakref
from collections.abc import Mapping
from typing import Any

from beeai_framework.agents import AgentOutput
from beeai_framework.agents.requirement import RequirementAgent
from beeai_framework.agents.requirement.types import (
    RequirementAgentOutput,
    RequirementAgentRunState,
)
from beeai_framework.backend import AssistantMessage, MessageTextContent
from beeai_framework.context import RunContext
from beeai_framework.memory import UnconstrainedMemory
from beeai_framework.workflows import Workflow
from beeai_framework.workflows.types import WorkflowRun
from pydantic import BaseModel, ConfigDict

from em_plugin.session import MemoryPort, resolve_scope
from integrations.beeai._sanitize import MARK

logger = logging.getLogger("integrations.beeai")

# A stable session id per BeeAI conversation buffer, for runs that name no session.
_MEMORY_SESSIONS: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def explicit_session(ctx: RunContext) -> str | None:
    """Return ``session_id`` from the run's context, if the caller named one."""
    value = ctx.context.get("session_id")
    return value if isinstance(value, str) and value.strip() else None


def memory_session(ctx: RunContext) -> str:
    """Return the in-process session of a run that nothing names: one per agent memory.

    This is the last resort of a script that runs one agent without a session id; a served
    agent gets its conversation id from the deployment (:mod:`integrations.beeai._deployment`).
    """
    memory = getattr(ctx.instance, "memory", None)
    if memory is None:
        return f"beeai-{uuid.uuid4().hex[:12]}"
    try:
        session = _MEMORY_SESSIONS.get(memory)
        if session is None:
            session = _MEMORY_SESSIONS[memory] = f"beeai-{uuid.uuid4().hex[:12]}"
        return session
    except TypeError:  # a memory that cannot be weakly referenced: one session per run
        return f"beeai-{uuid.uuid4().hex[:12]}"


def scope_of(ctx: RunContext | None, default: str | None, memory: MemoryPort) -> str:
    """Return a run's scope: run context, then ``default``, then the memory's scope."""
    return resolve_scope((ctx.context if ctx is not None else None,), memory, default)


def reply_output(instance: Any, text: str, run_params: Mapping[str, Any] | None = None) -> Any:
    """Build the output a command reply returns in place of the agent's (or workflow's) run.

    A ``RequirementAgent`` caller gets a ``RequirementAgentOutput`` (with a minimal state), so
    code that reads ``response.state`` keeps working; a workflow caller gets a ``WorkflowRun``
    whose state (and result) has the reply as ``final_answer``.

    Args:
        instance: The agent or workflow whose run the reply replaces.
        text: The reply.
        run_params: The run's parameters (a workflow's hold its input state).

    Returns:
        An output carrying the reply.
    """
    if isinstance(instance, Workflow):
        state = (run_params or {}).get("state")
        reply_state = (
            state.model_copy(update={"final_answer": text, "inputs": []})
            if isinstance(state, BaseModel) and "final_answer" in type(state).model_fields
            else state
        )
        return WorkflowRun(state=reply_state, result=reply_state)
    message = AssistantMessage(text, {MARK: "reply"})
    if isinstance(instance, RequirementAgent):
        state = RequirementAgentRunState(
            answer=message, result=text, memory=UnconstrainedMemory(), iteration=0
        )
        return RequirementAgentOutput(output=[message], output_structured=text, state=state)
    return AgentOutput(output=[message], output_structured=text)


def workflow_answer(output: Any) -> str | None:
    """Return a workflow run's final answer (``result.final_answer``), if it has one."""
    if not isinstance(output, WorkflowRun):
        return None
    answer = getattr(output.result, "final_answer", None)
    return answer if isinstance(answer, str) else None


def with_workflow_suffix(output: Any, suffix: str) -> None:
    """Show ``suffix`` after a workflow's final answer, where BeeAI's idiom reads it.

    ``output.state`` and ``output.result`` become copies whose ``final_answer`` carries the
    suffix (``response.state.final_answer`` is what BeeAI's docs read); the workflow's own state
    object, and the agents' messages it holds, keep the crew's answer.

    Args:
        output: The ``WorkflowRun`` the caller receives.
        suffix: What to append; empty means nothing.
    """
    answer = workflow_answer(output)
    if not suffix or answer is None:
        return
    update = {"final_answer": answer + suffix}
    if isinstance(output.result, BaseModel):
        output.result = output.result.model_copy(update=update)
    state = getattr(output, "state", None)
    if isinstance(state, BaseModel) and getattr(state, "final_answer", None) == answer:
        output.state = state.model_copy(update=update)


def answer_message(output: Any) -> AssistantMessage | None:
    """Return the answer message of a run's output (``output.output[-1]``), if it is one."""
    messages = getattr(output, "output", None)
    if isinstance(messages, list) and messages and isinstance(messages[-1], AssistantMessage):
        return messages[-1]
    return None


def with_suffix(output: Any, suffix: str) -> None:
    """Show ``suffix`` after a run's answer without touching the crew's own message.

    The run's output list gets a copy of its last message with the suffix as a new text part;
    the crew's message (which its memory or state may hold) stays as the crew wrote it, so the
    crew's model never reads the suggestions.

    Args:
        output: The run's output (``output.output[-1]`` is the answer message).
        suffix: What to append; empty means nothing.
    """
    message = answer_message(output)
    if not suffix or message is None:
        return
    meta = {**(message.meta or {}), MARK: "suggestions"}
    shown = AssistantMessage([*message.content, MessageTextContent(text=suffix)], meta)
    output.output[-1] = shown


class SuggestionsEvent(BaseModel):
    """The data of the ``episodic_memory_suggestions`` event of a streamed run.

    A run emits it after its answer (``async for data, meta in agent.run(...)``).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    session_id: str
    """The session the turn belongs to."""
    text: str
    """The suggestions as the user reads them (without the leading blank line)."""
    suggestions: list[Any]
    """The :class:`~em_plugin.suggest.types.Suggestion` objects."""
    state: Any = None
    """The finished run's state (a ``RequirementAgent``'s ``RequirementAgentRunState``), unchanged.

    BeeAI's serve adapters stream an agent's run and read ``data.state`` of every event it
    yields (Zed's ACP adapter and the OpenAI-compatible server, for a ``RequirementAgent``);
    an event without it failed their request."""


#: The name of the event carrying the suggestions of a streamed run.
SUGGESTIONS_EVENT = "episodic_memory_suggestions"
