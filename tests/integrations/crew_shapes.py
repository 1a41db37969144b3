"""Crew shapes built with the frameworks' real public APIs, driven by scripted models.

Each shape is a :class:`~integrations.conformance.CrewHarness` for the conformance kit's scenario
(``integrations/conformance.py``): two instructions (the first with a tool that fails once and is
retried), ``/save``, then a new thread repeating the first kind of instruction, whose suggestions
must come from the saved session. Used by ``test_crew_shapes.py`` and by
``benchmarks/crew_shapes_table.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import flaky_tools
from flaky_tools import FLAKY
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import tool as lc_tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from lg_scaffold import ScriptedChatModel, agent_crew, call, with_memory

from em_plugin.memory import EpisodicMemory
from em_plugin.suggest.types import Suggestion
from integrations.conformance import (
    CHECKS,
    CLASSIFY,
    EXTRACT,
    ConformanceFailure,
    CrewHarness,
    Shape,
    outcome_of,
)
from integrations.langgraph import EpisodicMemoryNode, memory_kind

# -- LangGraph ------------------------------------------------------------------------------

product_extractor = lc_tool(flaky_tools.product_extractor)
pfas_classifier = lc_tool(flaky_tools.pfas_classifier)
write_report = lc_tool(flaky_tools.write_report)


def _lg_texts(models: Sequence[ScriptedChatModel]) -> list[str]:
    return [
        m.text
        for model in models
        for request in model.seen
        for m in request
        if isinstance(m, BaseMessage)
    ]


class _LangGraphCrew:
    """A LangGraph graph holding ``node`` (wired as the README shows), as a harness."""

    def __init__(
        self,
        graph: Any,
        node: EpisodicMemoryNode,
        models: Sequence[ScriptedChatModel],
        script: Callable[[str, str], None],
    ) -> None:
        self.graph, self.node, self.models, self.script = graph, node, models, script

    def turn(self, text: str, thread: str) -> None:
        self.graph.invoke({"messages": [HumanMessage(text)]}, _thread(thread))

    def stream(self, text: str, thread: str) -> list[str]:
        chunks = self.graph.stream(
            {"messages": [HumanMessage(text)]}, _thread(thread), stream_mode="messages"
        )
        return [chunk.text for chunk, _ in chunks if memory_kind(chunk) == "suggestions"]

    def shown(self, thread: str) -> list[Suggestion]:
        return list(self.node.sessions.find(thread).last_suggestions)

    def model_inputs(self) -> list[str]:
        return _lg_texts(self.models)

    def close(self) -> None:
        pass


def _thread(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


def _supervisor(output_mode: str) -> Callable[[EpisodicMemory], CrewHarness]:
    def run(mem: EpisodicMemory) -> CrewHarness:
        from langgraph_supervisor import create_supervisor

        boss, ex, cl = (ScriptedChatModel(messages=iter([])) for _ in range(3))
        extractor = agent_crew(ex, tools=[product_extractor], name="extractor")
        classifier = agent_crew(cl, tools=[pfas_classifier], name="classifier")
        crew = create_supervisor(
            [extractor, classifier], model=boss, output_mode=output_mode
        ).compile(name="supervisor")
        node = EpisodicMemoryNode(mem)

        def script(text: str, tag: str) -> None:
            if text == CLASSIFY:
                boss.load([call("transfer_to_classifier", {}, f"{tag}-h2"), AIMessage("Done.")])
                cl.load(
                    [
                        call("pfas_classifier", {"names": ["PFOA", "water"]}, f"{tag}-c1"),
                        AIMessage("PFOA is a PFAS."),
                    ]
                )
                return
            boss.load([call("transfer_to_extractor", {}, f"{tag}-h1"), AIMessage("Extracted.")])
            attempts = [call("product_extractor", {"file": "acme.pdf"}, f"{tag}-e1")]
            if tag == "t-1":
                FLAKY.fail_once("product_extractor")
                attempts.append(call("product_extractor", {"file": "acme.pdf"}, f"{tag}-e2"))
            ex.load([*attempts, AIMessage("PFOA, water")])

        return _LangGraphCrew(with_memory(crew, node), node, (boss, ex, cl), script)

    return run


def _swarm(mem: EpisodicMemory) -> CrewHarness:
    from langgraph_swarm import create_handoff_tool, create_swarm

    ex, cl = ScriptedChatModel(messages=iter([])), ScriptedChatModel(messages=iter([]))
    to_classifier = create_handoff_tool(agent_name="classifier")
    to_extractor = create_handoff_tool(agent_name="extractor")
    extractor = agent_crew(ex, tools=[product_extractor, to_classifier], name="extractor")
    classifier = agent_crew(cl, tools=[pfas_classifier, to_extractor], name="classifier")
    crew = create_swarm([extractor, classifier], default_active_agent="extractor").compile()
    node = EpisodicMemoryNode(mem)

    def script(text: str, tag: str) -> None:
        if text == CLASSIFY:
            ex.load([call("transfer_to_classifier", {}, f"{tag}-h1"), AIMessage("PFAS.")])
            cl.load(
                [
                    call("pfas_classifier", {"names": ["PFOA", "water"]}, f"{tag}-c1"),
                    call("transfer_to_extractor", {}, f"{tag}-h2"),
                ]
            )
            return
        attempts = [call("product_extractor", {"file": "acme.pdf"}, f"{tag}-e1")]
        if tag == "t-1":
            FLAKY.fail_once("product_extractor")
            attempts.append(call("product_extractor", {"file": "acme.pdf"}, f"{tag}-e2"))
        ex.load([*attempts, AIMessage("PFOA, water")])

    return _LangGraphCrew(with_memory(crew, node), node, (ex, cl), script)


def _agents_as_tools(mem: EpisodicMemory) -> CrewHarness:
    boss, ex, cl = (ScriptedChatModel(messages=iter([])) for _ in range(3))
    extractor = agent_crew(ex, tools=[product_extractor], name="extractor")
    classifier = agent_crew(cl, tools=[pfas_classifier], name="classifier")

    @lc_tool
    def ask_extractor(task: str) -> str:
        """Ask the extraction agent."""
        return extractor.invoke({"messages": [HumanMessage(task)]})["messages"][-1].text

    @lc_tool
    def ask_classifier(task: str) -> str:
        """Ask the classification agent."""
        return classifier.invoke({"messages": [HumanMessage(task)]})["messages"][-1].text

    crew = agent_crew(boss, tools=[ask_extractor, ask_classifier], name="assistant")
    node = EpisodicMemoryNode(mem)

    def script(text: str, tag: str) -> None:
        if text == CLASSIFY:
            boss.load(
                [
                    call("ask_classifier", {"task": "classify PFOA"}, f"{tag}-a2"),
                    AIMessage("PFOA is a PFAS."),
                ]
            )
            cl.load([call("pfas_classifier", {"names": ["PFOA"]}, f"{tag}-c1"), AIMessage("PFAS")])
            return
        # Both sub-agents at once: one model message with two parallel tool calls.
        parallel = AIMessage(
            "",
            tool_calls=[
                {"name": "ask_extractor", "args": {"task": "acme.pdf"}, "id": f"{tag}-a1"},
                {"name": "ask_classifier", "args": {"task": "PFOA?"}, "id": f"{tag}-a1b"},
            ],
        )
        boss.load([parallel, AIMessage("Extracted and checked.")])
        attempts = [call("product_extractor", {"file": "acme.pdf"}, f"{tag}-e1")]
        if tag == "t-1":
            FLAKY.fail_once("product_extractor")
            attempts.append(call("product_extractor", {"file": "acme.pdf"}, f"{tag}-e2"))
        ex.load([*attempts, AIMessage("PFOA, water")])
        cl.load([call("pfas_classifier", {"names": ["PFOA"]}, f"{tag}-c0"), AIMessage("PFAS")])

    return _LangGraphCrew(with_memory(crew, node), node, (boss, ex, cl), script)


def _unnamed_react(model: ScriptedChatModel, tools: list[Any]) -> Any:
    """A hand-built ReAct subgraph whose messages name no agent."""
    bound = model.bind_tools(tools)

    def agent(state: MessagesState) -> dict:
        return {"messages": [bound.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(tools, handle_tool_errors=True))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile()


def _subgraph(mem: EpisodicMemory) -> CrewHarness:
    ex, cl = ScriptedChatModel(messages=iter([])), ScriptedChatModel(messages=iter([]))
    builder = StateGraph(MessagesState)
    builder.add_node("extractor", _unnamed_react(ex, [product_extractor]))
    builder.add_node("classifier", _unnamed_react(cl, [pfas_classifier]))

    def route(state: MessagesState) -> str:
        human = next(m for m in reversed(state["messages"]) if isinstance(m, HumanMessage))
        return "classifier" if human.text.startswith("Classify") else "extractor"

    builder.add_conditional_edges(START, route, ["extractor", "classifier"])
    builder.add_edge("extractor", END)
    builder.add_edge("classifier", END)
    crew = builder.compile()
    node = EpisodicMemoryNode(mem)

    def script(text: str, tag: str) -> None:
        if text == CLASSIFY:
            cl.load(
                [
                    call("pfas_classifier", {"names": ["PFOA", "water"]}, f"{tag}-c1"),
                    AIMessage("PFOA is a PFAS."),
                ]
            )
            return
        attempts = [call("product_extractor", {"file": "acme.pdf"}, f"{tag}-e1")]
        if tag == "t-1":
            FLAKY.fail_once("product_extractor")
            attempts.append(call("product_extractor", {"file": "acme.pdf"}, f"{tag}-e2"))
        ex.load([*attempts, AIMessage("PFOA, water")])

    return _LangGraphCrew(with_memory(crew, node), node, (ex, cl), script)


# -- BeeAI ----------------------------------------------------------------------------------


def _bee_texts(models: Sequence[Any]) -> list[str]:
    return [str(m.content) for model in models for c in model.calls for m in c.messages]


class _BeeAICrew:
    """A BeeAI agent or workflow run with ``mw`` (one event loop for the whole scenario)."""

    def __init__(
        self,
        start: Callable[[str, str], Any],
        mw: Any,
        models: Sequence[Any],
        script: Callable[[str, str], None],
    ) -> None:
        self.start, self.mw, self.models, self.script = start, mw, models, script
        self.loop = asyncio.Runner()

    def turn(self, text: str, thread: str) -> None:
        async def run() -> None:
            await self.start(text, thread)

        self.loop.run(run())

    def stream(self, text: str, thread: str) -> list[str]:
        from integrations.beeai import SUGGESTIONS_EVENT

        async def run() -> list[str]:
            return [
                data.text
                async for data, meta in self.start(text, thread)
                if meta.name == SUGGESTIONS_EVENT
            ]

        return self.loop.run(run())

    def shown(self, thread: str) -> list[Suggestion]:
        return list(self.mw.suggestions(thread))

    def model_inputs(self) -> list[str]:
        return _bee_texts(self.models)

    def close(self) -> None:
        self.loop.close()


def _bee_handoff(mem: EpisodicMemory) -> CrewHarness:
    from beeai_framework.agents.requirement import RequirementAgent
    from beeai_framework.memory import UnconstrainedMemory
    from beeai_framework.tools.handoff import HandoffTool
    from beeai_support import pfas_classifier as bee_classifier
    from beeai_support import product_extractor as bee_extractor

    from integrations.beeai import EpisodicMemoryMiddleware
    from integrations.beeai.testing import ScriptedChatModel as BeeModel
    from integrations.beeai.testing import call as bcall
    from integrations.beeai.testing import final

    boss, ex, cl = BeeModel(name="boss"), BeeModel(name="ex"), BeeModel(name="cl")
    # Sub-agents without names: each is known by the handoff tool that runs it.
    extractor = RequirementAgent(llm=ex, tools=[bee_extractor], tool_call_checker=False)
    classifier = RequirementAgent(llm=cl, tools=[bee_classifier], tool_call_checker=False)
    mw = EpisodicMemoryMiddleware(mem)
    coordinator = RequirementAgent(
        llm=boss,
        tools=[
            HandoffTool(extractor, name="extractor", description="Extracts ingredients."),
            HandoffTool(classifier, name="classifier", description="Classifies chemicals."),
        ],
        memory=UnconstrainedMemory(),
        name="coordinator",
        middlewares=[mw],
        tool_call_checker=False,
    )

    def script(text: str, tag: str) -> None:
        if text == CLASSIFY:
            boss.extend([bcall("classifier", task="Classify PFOA and water"), final("PFAS.")])
            cl.extend([bcall("pfas_classifier", names=["PFOA", "water"]), final("PFOA: PFAS")])
            return
        boss.extend([bcall("extractor", task="Extract acme.pdf"), final("Extracted.")])
        attempts = [bcall("product_extractor", file="acme.pdf")]
        if tag == "t-1":
            FLAKY.fail_once("product_extractor")
            attempts.append(bcall("product_extractor", file="acme.pdf"))
        ex.extend([*attempts, final("PFOA, water")])

    def start(text: str, session: str) -> Any:
        return coordinator.run(text).context({"session_id": session})

    return _BeeAICrew(start, mw, (boss, ex, cl), script)


def _bee_workflow(mem: EpisodicMemory) -> CrewHarness:
    from beeai_framework.agents.requirement import RequirementAgent
    from beeai_framework.workflows.agent import AgentWorkflow, AgentWorkflowInput
    from beeai_support import pfas_classifier as bee_classifier
    from beeai_support import product_extractor as bee_extractor
    from beeai_support import write_report as bee_report

    from integrations.beeai import EpisodicMemoryMiddleware
    from integrations.beeai.testing import ScriptedChatModel as BeeModel
    from integrations.beeai.testing import call as bcall
    from integrations.beeai.testing import final

    first, second = BeeModel(name="first"), BeeModel(name="second")
    workflow = AgentWorkflow(name="chemistry")
    workflow.add_agent(RequirementAgent(llm=first, tools=[bee_extractor], tool_call_checker=False))
    workflow.add_agent(
        RequirementAgent(llm=second, tools=[bee_classifier, bee_report], tool_call_checker=False)
    )
    mw = EpisodicMemoryMiddleware(mem)

    def script(text: str, tag: str) -> None:
        if text == CLASSIFY:
            first.extend([final("Nothing to extract.")])
            second.extend([bcall("pfas_classifier", names=["PFOA", "water"]), final("PFAS.")])
            return
        attempts = [bcall("product_extractor", file="acme.pdf")]
        if tag == "t-1":
            FLAKY.fail_once("product_extractor")
            attempts.append(bcall("product_extractor", file="acme.pdf"))
        first.extend([*attempts, final("PFOA, water")])
        second.extend([bcall("write_report", summary="PFOA"), final("Reported.")])

    def start(text: str, session: str) -> Any:
        run = workflow.run([AgentWorkflowInput(prompt=text)])
        return run.context({"session_id": session}).middleware(mw)

    return _BeeAICrew(start, mw, (first, second), script)


def _bee_tool_calling(mem: EpisodicMemory) -> CrewHarness:
    import warnings

    from beeai_framework.agents.tool_calling import ToolCallingAgent
    from beeai_framework.memory import UnconstrainedMemory
    from beeai_support import pfas_classifier as bee_classifier
    from beeai_support import product_extractor as bee_extractor

    from integrations.beeai import EpisodicMemoryMiddleware
    from integrations.beeai.testing import ScriptedChatModel as BeeModel
    from integrations.beeai.testing import call as bcall
    from integrations.beeai.testing import final

    llm = BeeModel(name="llm")
    with warnings.catch_warnings():
        # BeeAI deprecated ToolCallingAgent (use RequirementAgent); crews still run it.
        warnings.filterwarnings(
            "ignore", "Call to deprecated class ToolCallingAgent", DeprecationWarning
        )
        agent = ToolCallingAgent(
            llm=llm, tools=[bee_extractor, bee_classifier], memory=UnconstrainedMemory()
        )
    mw = EpisodicMemoryMiddleware(mem)

    def script(text: str, tag: str) -> None:
        if text == CLASSIFY:
            llm.extend([bcall("pfas_classifier", names=["PFOA", "water"]), final("PFAS.")])
            return
        attempts = [bcall("product_extractor", file="acme.pdf")]
        if tag == "t-1":
            FLAKY.fail_once("product_extractor")
            attempts.append(bcall("product_extractor", file="beta.pdf"))
        llm.extend([*attempts, final("PFOA, water")])

    def start(text: str, session: str) -> Any:
        return agent.run(text).context({"session_id": session}).middleware(mw)

    return _BeeAICrew(start, mw, (llm,), script)


SUPERVISED = [
    (0, EXTRACT, "user"),
    (1, "transfer_to_extractor", "supervisor"),
    (2, "product_extractor", "extractor"),
    (0, CLASSIFY, "user"),
    (1, "transfer_to_classifier", "supervisor"),
    (2, "pfas_classifier", "classifier"),
]

SHAPES = [
    Shape(
        "langgraph-supervisor",
        SUPERVISED,
        ["product_extractor"],
        _supervisor("last_message"),
        frozenset({"transfer_to_extractor", "transfer_to_classifier"}),
    ),
    Shape(
        "langgraph-supervisor full_history",
        SUPERVISED,
        ["product_extractor"],
        _supervisor("full_history"),
        frozenset({"transfer_to_extractor", "transfer_to_classifier"}),
    ),
    Shape(
        "langgraph-swarm",
        [
            (0, EXTRACT, "user"),
            (1, "product_extractor", "extractor"),
            (0, CLASSIFY, "user"),
            (1, "transfer_to_classifier", "extractor"),
            (2, "pfas_classifier", "classifier"),
            (2, "transfer_to_extractor", "classifier"),
        ],
        ["product_extractor"],
        _swarm,
        # Every swarm agent talks to the user directly.
        frozenset(
            {
                "product_extractor",
                "pfas_classifier",
                "transfer_to_classifier",
                "transfer_to_extractor",
            }
        ),
    ),
    Shape(
        "create_agent, sub-agents as parallel tools",
        [
            (0, EXTRACT, "user"),
            (1, "ask_extractor", "assistant"),
            (2, "product_extractor", "extractor"),
            (1, "ask_classifier", "assistant"),
            (2, "pfas_classifier", "classifier"),
            (0, CLASSIFY, "user"),
            (1, "ask_classifier", "assistant"),
            (2, "pfas_classifier", "classifier"),
        ],
        ["product_extractor"],
        _agents_as_tools,
        frozenset({"ask_extractor", "ask_classifier"}),
    ),
    Shape(
        "hand-built subgraphs",
        [
            (0, EXTRACT, "user"),
            (1, "product_extractor", "extractor"),
            (0, CLASSIFY, "user"),
            (1, "pfas_classifier", "classifier"),
        ],
        ["product_extractor"],
        _subgraph,
        frozenset({"product_extractor", "pfas_classifier"}),  # routed by the instruction
    ),
    Shape(
        "BeeAI RequirementAgent + HandoffTool (unnamed sub-agents)",
        [
            (0, EXTRACT, "user"),
            (1, "extractor", "coordinator"),
            (2, "product_extractor", "extractor"),
            (0, CLASSIFY, "user"),
            (1, "classifier", "coordinator"),
            (2, "pfas_classifier", "classifier"),
        ],
        ["product_extractor"],
        _bee_handoff,
        frozenset({"extractor", "classifier"}),
    ),
    Shape(
        "BeeAI AgentWorkflow",
        [
            (0, EXTRACT, "user"),
            (1, "product_extractor", "RequirementAgent#1"),
            (1, "write_report", "RequirementAgent#2"),
            (0, CLASSIFY, "user"),
            (1, "pfas_classifier", "RequirementAgent#2"),
        ],
        ["product_extractor"],
        _bee_workflow,
        frozenset({"product_extractor", "pfas_classifier", "write_report"}),  # every step runs
    ),
    Shape(
        "BeeAI ToolCallingAgent",
        [
            (0, EXTRACT, "user"),
            (1, "product_extractor", "ToolCallingAgent"),
            (0, CLASSIFY, "user"),
            (1, "pfas_classifier", "ToolCallingAgent"),
        ],
        ["product_extractor"],
        _bee_tool_calling,
        frozenset({"product_extractor", "pfas_classifier"}),
    ),
]


def evaluate(shape: Shape) -> dict[str, Any]:
    """Run a shape's scenario once and every check of the kit on it.

    Returns:
        ``{check name: passed}`` for every check of :data:`integrations.conformance.CHECKS`, plus
        the ``outcome``.
    """
    outcome = outcome_of(shape)
    result: dict[str, Any] = {"outcome": outcome}
    for check in CHECKS:
        try:
            check(shape, outcome)
        except ConformanceFailure:
            result[check.name] = False
        else:
            result[check.name] = True
    return result
