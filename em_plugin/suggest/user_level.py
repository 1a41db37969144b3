"""Suggestions at the user's level: what the user can ask the crew, never a sub-agent's tool alone.

In a crew with handoffs, a sub-agent's calls nest under the handoff call that the coordinator
made (``CallStep.steps``). The coordinator, the agent the user talks to, cannot call them. A
suggestion whose cited leaf is such a nested call is lifted:

* its tool becomes the outermost call above the leaf (the handoff the coordinator makes);
* its text becomes the instruction that call served, when that instruction is not the one the
  user is working on now (the next instruction of the past workflow); otherwise the handoff's
  own text;
* :attr:`Suggestion.detail` lists the tools that served it (the sub-agent's included).

Without evidence (the crew fallback, an LLM answer), the crew description decides: a tool of an
agent that another agent hands off to (a tool named after the agent, such as
``transfer_to_<agent>``) is reached through that handoff tool.
"""

from __future__ import annotations

import dataclasses

from em_plugin.state.episodes import nested_routes
from em_plugin.suggest.base import SuggestionRequest, call_text, short
from em_plugin.suggest.cited import CitedLeaf, CitedWorkflows
from em_plugin.suggest.crew import CrewDescription
from em_plugin.suggest.types import Suggestion
from provenance.model import CallStep, InstructionStep, Step, walk_steps

__all__ = ["handoff_routes", "lift", "nested_routes"]


def _tools_under(step: Step) -> tuple[str, ...]:
    found = (s.name for _, s in walk_steps((step,)) if isinstance(s, CallStep))
    return tuple(dict.fromkeys(found))


def _is_handoff(tool: str, agent: str) -> bool:
    return tool == agent or tool.endswith(f"_{agent}")


def handoff_routes(crew: CrewDescription | None) -> dict[str, str]:
    """Map each tool only reachable through a handoff to the handoff tool that reaches it.

    Args:
        crew: The crew description.

    Returns:
        ``{sub-agent tool: handoff tool}``; empty without a crew or without handoffs.
    """
    if crew is None:
        return {}
    handoffs: dict[str, str] = {}  # sub-agent name -> handoff tool
    for agent in crew.agents:
        for tool in agent.tools:
            for other in crew.agents:
                if other.name != agent.name and _is_handoff(tool.name, other.name):
                    handoffs.setdefault(other.name, tool.name)
    direct = {t.name for a in crew.agents if a.name not in handoffs for t in a.tools}
    routes: dict[str, str] = {}
    for agent in crew.agents:
        if agent.name in handoffs:
            for tool in agent.tools:
                if tool.name not in direct:
                    routes.setdefault(tool.name, handoffs[agent.name])
    return routes


def _current_instruction(request: SuggestionRequest) -> str | None:
    texts = [s.text for _, s in request.workflow.walk() if isinstance(s, InstructionStep)]
    return texts[-1] if texts else None


def _lift_cited(request: SuggestionRequest, suggestion: Suggestion, leaf: CitedLeaf) -> Suggestion:
    top = next((s for s in leaf.ancestors if isinstance(s, CallStep)), None)
    if top is None:
        return suggestion
    instruction = next(
        (s for s in reversed(leaf.ancestors) if isinstance(s, InstructionStep)), None
    )
    if instruction is not None and instruction.text != _current_instruction(request):
        text, detail = short(instruction.text), _tools_under(instruction)
    else:
        text, detail = call_text(top.name, request.crew), _tools_under(top)
    return dataclasses.replace(suggestion, text=text, tool=top.name, detail=detail)


def lift(
    request: SuggestionRequest,
    suggestion: Suggestion,
    cited: CitedWorkflows,
    routes: dict[str, str] | None = None,
) -> Suggestion:
    """Return the suggestion at the user's level (itself when it already is).

    Args:
        request: The current workflow and memory.
        suggestion: A suggestion of any suggester.
        cited: The chain's cache of cited workflows.
        routes: :func:`handoff_routes` of the request's crew, when already computed.
    """
    if suggestion.tool is None:
        return suggestion
    routes = handoff_routes(request.crew) if routes is None else routes
    for evidence in suggestion.evidence:
        leaf = cited.leaf(request, evidence)
        if leaf is not None and isinstance(leaf.step, CallStep):
            if leaf.step.name == suggestion.tool:
                return _lift_cited(request, suggestion, leaf)
    route = routes.get(suggestion.tool)
    if route is None:
        return suggestion
    return dataclasses.replace(
        suggestion,
        text=call_text(
            route, request.crew, suggestion.text if suggestion.source == "llm" else None
        ),
        tool=route,
        detail=(route, suggestion.tool),
    )
