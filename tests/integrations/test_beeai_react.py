"""BeeAI ReActAgent + HandoffTool: captured at every depth; its model never sees suggestions."""

from __future__ import annotations

from beeai_framework.agents.react import ReActAgent
from beeai_framework.agents.requirement import RequirementAgent
from beeai_framework.memory import UnconstrainedMemory
from beeai_framework.tools.handoff import HandoffTool
from beeai_support import make_memory, product_extractor

from integrations.beeai import EpisodicMemoryMiddleware
from integrations.beeai.testing import ScriptedChatModel, call, final, say
from provenance.model import CallStep, InstructionStep, Workflow

HANDOFF = 'Thought: hand off\nFunction Name: extractor\nFunction Input: {"task": "Extract"}\n'


async def test_react_agent_handoff_is_captured_and_its_model_stays_clean() -> None:
    memory = make_memory()
    seed = (CallStep(name="extractor", args={}), CallStep(name="write_report", args={}))
    memory.save(Workflow(id="seed", steps=(InstructionStep(text="Extract acme.pdf", steps=seed),)))
    mw = EpisodicMemoryMiddleware(memory, session_id="react")
    worker, boss = ScriptedChatModel(name="worker"), ScriptedChatModel(name="boss")
    extractor = RequirementAgent(llm=worker, tools=[product_extractor], tool_call_checker=False)
    agent = ReActAgent(
        llm=boss,
        tools=[HandoffTool(extractor, name="extractor", description="Extracts.")],
        memory=UnconstrainedMemory(),
    )
    for _ in range(2):
        boss.extend([say(HANDOFF), say("Thought: done\nFinal Answer: PFOA, water")])
        worker.extend([call("product_extractor", file="acme.pdf"), final("PFOA, water")])
    first = await agent.run("Extract acme.pdf").middleware(mw)
    assert first.last_message.text.startswith("PFOA, water\n\nSuggested next steps")
    await agent.run("Extract acme.pdf again").middleware(mw)
    (instruction, _) = mw.workflow().steps
    (handoff,) = instruction.steps
    assert (handoff.name, handoff.agent) == ("extractor", agent.meta.name)
    assert [(c.name, c.agent) for c in handoff.steps] == [("product_extractor", "extractor")]
    texts = [str(m.content) for c in boss.calls + worker.calls for m in c.messages]
    assert texts and not [t for t in texts if "Suggested next steps" in t]
