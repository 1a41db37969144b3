"""A BeeAI crew with episodic memory, served the way teams deploy it (run as a process).

``python beeai_server_app.py --protocol a2a|responses|chat --port P --store SPEC --log FILE``
(or ``--protocol acp``: Zed's Agent Client Protocol on this process's stdin and stdout, no port)
serves a ``RequirementAgent`` coordinator whose sub-agents (unnamed ``RequirementAgent``s behind
``HandoffTool``s) extract and classify, every model a scripted policy that never runs out; the
memory middleware is on the coordinator (``--front agent``: an ``EpisodicMemoryAgent`` in front
of it instead), and the server gets a ``SessionMemoryManager`` (``--manager none``: not). Each
model input is appended to ``--log`` (one JSON line per call), so a test can check what the
models read. The memory sits on ``--store`` (a directory, or an ``oxigraph serve`` URL shared by
several processes) and is seeded with one past workflow, so suggestions appear.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from beeai_framework.agents.requirement import RequirementAgent
from beeai_framework.backend import AnyMessage, ChatModelOutput, ToolMessage, UserMessage
from beeai_framework.backend.types import ChatModelInput
from beeai_framework.context import RunContext
from beeai_framework.memory import UnconstrainedMemory
from beeai_framework.tools import tool
from beeai_framework.tools.handoff import HandoffTool

from em_plugin.embedding import FakeEmbedder
from em_plugin.memory import EpisodicMemory
from integrations.beeai import EpisodicMemoryAgent, EpisodicMemoryMiddleware, SessionMemoryManager
from integrations.beeai.testing import ScriptedChatModel, ScriptStep, call, final
from provenance.model import CallStep, InstructionStep, Workflow

EXTRACT = "Extract the ingredients from the SDS file acme.pdf"
CLASSIFY = "Classify the extracted ingredients as PFAS or not"
SCOPE = "team"


@tool
def product_extractor(file: str) -> str:
    """Extract the ingredient list from a safety data sheet (SDS) file."""
    return json.dumps({"file": file, "ingredients": ["PFOA", "water"]})


@tool
def pfas_classifier(names: list[str]) -> str:
    """Classify chemical names as PFAS or not."""
    return json.dumps({n: n.startswith("PF") for n in names})


Policy = Callable[[str, bool], ScriptStep]


class PolicyModel(ScriptedChatModel):
    """A scripted model that answers from a policy (never runs out) and logs what it reads."""

    def __init__(self, name: str, policy: Policy, log: Path) -> None:
        super().__init__(name=name)
        self._policy = policy
        self._log = log

    async def _create(self, input: ChatModelInput, run: RunContext) -> ChatModelOutput:
        messages: Sequence[AnyMessage] = input.messages
        with self._log.open("a", encoding="utf-8") as out:
            line = {"model": self.model_id, "texts": [m.text for m in messages]}
            out.write(json.dumps(line) + "\n")
        task, answered = _task(messages)
        return self._to_output(self._policy(task, answered))


def _task(messages: Sequence[AnyMessage]) -> tuple[str, bool]:
    """The last user message, and whether a tool has answered since."""
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], UserMessage):
            rest = messages[index + 1 :]
            return messages[index].text, any(isinstance(m, ToolMessage) for m in rest)
    return "", False


def coordinator_policy(task: str, answered: bool) -> ScriptStep:
    if answered:
        return final(f"Done: {task}")
    lowered = task.lower()
    if "classify" in lowered:
        return call("classifier", task="Classify PFOA and water")
    if "extract" in lowered:
        return call("extractor", task="Extract the ingredients of acme.pdf")
    return final("Hello!")


def extractor_policy(task: str, answered: bool) -> ScriptStep:
    return final("PFOA, water") if answered else call("product_extractor", file="acme.pdf")


def classifier_policy(task: str, answered: bool) -> ScriptStep:
    if answered:
        return final("PFOA: PFAS")
    return call("pfas_classifier", names=["PFOA", "water"])


def build(
    store: str, log: Path, front: str = "middleware"
) -> tuple[RequirementAgent | EpisodicMemoryAgent, EpisodicMemory]:
    """The agent to serve and the memory, seeded once.

    ``front="middleware"``: the coordinator with the memory middleware on it;
    ``front="agent"``: an :class:`EpisodicMemoryAgent` (named ``coordinator`` too, so clients
    address it alike) in front of the coordinator.
    """
    memory = EpisodicMemory(store=store, embedder=FakeEmbedder(64), scope=SCOPE)
    if "seed" not in memory.ids():
        steps = (CallStep(name="extractor", args={}), CallStep(name="classifier", args={}))
        memory.save(Workflow(id="seed", steps=(InstructionStep(text=EXTRACT, steps=steps),)))
    extractor = RequirementAgent(
        llm=PolicyModel("extractor_llm", extractor_policy, log),
        tools=[product_extractor],
        tool_call_checker=False,
    )
    classifier = RequirementAgent(
        llm=PolicyModel("classifier_llm", classifier_policy, log),
        tools=[pfas_classifier],
        tool_call_checker=False,
    )
    coordinator = RequirementAgent(
        llm=PolicyModel("coordinator_llm", coordinator_policy, log),
        tools=[
            HandoffTool(extractor, name="extractor", description="Extracts ingredients."),
            HandoffTool(classifier, name="classifier", description="Classifies chemicals."),
        ],
        memory=UnconstrainedMemory(),
        name="coordinator",
        description="Coordinates the chemistry crew.",
        middlewares=[EpisodicMemoryMiddleware(memory)] if front == "middleware" else [],
        tool_call_checker=False,
    )
    if front == "agent":
        return EpisodicMemoryAgent(coordinator, memory, name="coordinator"), memory
    return coordinator, memory


def serve(
    protocol: str,
    port: int,
    coordinator: RequirementAgent | EpisodicMemoryAgent,
    manager: str = "session",
) -> None:
    """Serve the agent on 127.0.0.1 (blocks until the process is stopped).

    ``manager="none"`` leaves out ``SessionMemoryManager`` (BeeAI's default manager): the
    wiring mistake the memory middleware and the EM agent warn about.
    """
    sessions = SessionMemoryManager() if manager == "session" else None
    if protocol == "acp":
        from beeai_framework.adapters.acp_zed import ACPZedServer

        ACPZedServer(memory_manager=sessions).register(coordinator).serve()
        return
    if protocol == "a2a":
        from beeai_framework.adapters.a2a.serve.server import A2AServer, A2AServerConfig

        a2a = A2AServer(
            config=A2AServerConfig(host="127.0.0.1", port=port), memory_manager=sessions
        )
        if isinstance(coordinator, RequirementAgent):
            a2a.register(coordinator, send_trajectory=False)
        else:
            a2a.register(coordinator)
        a2a.serve()
        return
    from beeai_framework.adapters.openai.serve.server import OpenAIServer, OpenAIServerConfig

    api: Any = "responses" if protocol == "responses" else "chat-completion"
    config = OpenAIServerConfig(host="127.0.0.1", port=port, api=api)
    memory_manager = sessions if protocol == "responses" else None
    OpenAIServer(config=config, memory_manager=memory_manager).register(coordinator).serve()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--protocol", choices=["a2a", "responses", "chat", "acp"], required=True)
    parser.add_argument("--port", type=int, default=0, help="not for acp (stdio)")
    parser.add_argument("--store", required=True)
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--manager", choices=["session", "none"], default="session")
    parser.add_argument("--front", choices=["middleware", "agent"], default="middleware")
    args = parser.parse_args()
    coordinator, _ = build(args.store, args.log, args.front)
    serve(args.protocol, args.port, coordinator, args.manager)


if __name__ == "__main__":
    main()
