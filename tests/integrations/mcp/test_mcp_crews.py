"""Crews that use the memory through MCP: a LangGraph agent (``langchain-mcp-adapters``) and a
BeeAI agent (``MCPTool``), each driven by a scripted chat model.

The LangGraph crew talks to ``python -m integrations.mcp`` over stdio, on a store indexed with
the real embedding model, as an assistant would; the BeeAI agent talks to a server over
streamable HTTP.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp_support import (
    PFAS,
    bootstrap_workflow,
    copy_store,
    http_server,
    http_session,
    seed,
    server_env,
    workflow_so_far,
)

from integrations.mcp import MCPSettings
from provenance.stores import open_store

TASK = "Tabulate which substances in acme_sds.pdf are PFAS"
EXTRACTED = {
    "kind": "call",
    "name": "product_extractor",
    "args": {"file": "acme_sds.pdf"},
    "output": {"ingredients": ["PFOA", "water"]},
}
CLASSIFIED = {"kind": "call", "name": "pfas_classifier", "args": {"names": ["PFOA", "water"]}}


@pytest.fixture(scope="module")
def real_store_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The seeded store, indexed with the default embedding model (all-MiniLM-L6-v2)."""
    return seed(tmp_path_factory.mktemp("mcp-real") / "store", embedder=None)


def _tool_answers(messages: list[Any]) -> dict[str, Any]:
    """Each tool's answer in a LangGraph run, by tool-call id (JSON decoded when it is JSON)."""
    out: dict[str, Any] = {}
    for message in messages:
        if getattr(message, "type", None) != "tool":
            continue
        text = message.content if isinstance(message.content, str) else message.content[0]["text"]
        try:
            out[message.tool_call_id] = json.loads(text)
        except json.JSONDecodeError:
            out[message.tool_call_id] = text
    return out


@pytest.mark.integration
async def test_a_langgraph_crew_recalls_follows_a_suggestion_and_saves_through_mcp(
    real_store_template: Path, tmp_path: Path
) -> None:
    pytest.importorskip("langchain_mcp_adapters")
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_mcp_adapters.client import MultiServerMCPClient
    from langchain_mcp_adapters.tools import load_mcp_tools
    from lg_scaffold import ScriptedChatModel, agent_crew, call, pfas_classifier, product_extractor

    store = copy_store(real_store_template, tmp_path)
    so_far = {"steps": [{"kind": "instruction", "text": TASK, "steps": [EXTRACTED]}]}
    finished = {
        "id": "session/acme",
        "steps": [{"kind": "instruction", "text": TASK, "steps": [EXTRACTED, CLASSIFIED]}],
    }
    model = ScriptedChatModel(messages=iter([])).load(
        [
            call("recall_workflows", {"query": TASK}, "r1"),
            call("product_extractor", {"file": "acme_sds.pdf"}, "e1"),
            call("suggest_next_steps", {"workflow": so_far}, "s1"),
            call("pfas_classifier", {"names": ["PFOA", "water"]}, "k1"),
            call("save_workflow", {"workflow": finished}, "w1"),
            AIMessage("PFOA is a PFAS; water is not. Saved to memory."),
        ]
    )
    client = MultiServerMCPClient(
        {
            "memory": {
                "transport": "stdio",
                "command": sys.executable,
                "args": ["-m", "integrations.mcp", "--store", str(store), "--scope", PFAS]
                + ["--allow-write"],
                "env": server_env(),
            }
        }
    )
    async with client.session("memory") as session:
        memory_tools = await load_mcp_tools(session)
        crew = agent_crew(model, tools=[*memory_tools, product_extractor, pfas_classifier])
        result = await crew.ainvoke({"messages": [HumanMessage(TASK)]})

    answers = _tool_answers(result["messages"])
    recalled = answers["r1"]["workflows"]
    assert recalled, answers["r1"]
    assert all(w["workflow_id"].startswith("bootstrap/") for w in recalled)
    assert "PFAS" in recalled[0]["title"]
    assert recalled[0]["steps"][0] == "product_extractor"

    suggestions = answers["s1"]["suggestions"]
    assert "pfas_classifier" in [s["tool"] for s in suggestions], suggestions
    cited = next(s for s in suggestions if s["tool"] == "pfas_classifier")
    assert cited["evidence"] and all(
        e["workflow_id"].startswith("bootstrap/") for e in cited["evidence"]
    )

    assert answers["w1"]["saved"] == "session/acme"
    assert answers["w1"]["scope"] == PFAS
    assert result["messages"][-1].content.startswith("PFOA is a PFAS")
    with open_store(str(store), read_only=True) as stored:
        saved = stored.load("session/acme", PFAS)
    assert [s.name for s in saved.leaves()] == ["product_extractor", "pfas_classifier"]


async def test_a_beeai_agent_uses_the_memory_through_mcptool(store: Path) -> None:
    pytest.importorskip("beeai_framework")
    from beeai_framework.agents.requirement import RequirementAgent
    from beeai_framework.backend import ToolMessage
    from beeai_framework.tools.mcp import MCPTool

    from integrations.beeai.testing import ScriptedChatModel, call, final, last_tool_result

    current = workflow_so_far(bootstrap_workflow(1), 1)
    finished = {"id": "beeai/run-1", **workflow_so_far(bootstrap_workflow(1), 3)}
    llm = ScriptedChatModel(
        [
            call("suggest_next_steps", workflow=current),
            call("save_workflow", workflow=finished),
            call("run_query", name="workflows-using", bindings={"tool": "pfas_classifier"}),
            lambda model_input: final(last_tool_result(model_input)),
        ],
        name="assistant",
    )
    settings = MCPSettings(store=str(store), scope=PFAS, allow_write=True)
    with http_server(settings) as served:
        async with http_session(served.url) as session:
            tools = await MCPTool.from_session(session)
            agent = RequirementAgent(llm=llm, tools=tools, name="assistant")
            response = await agent.run("Which tool comes after the product extractor?")
            outputs = [
                json.loads("".join(str(part.result) for part in m.content))
                for m in agent.memory.messages
                if isinstance(m, ToolMessage) and m.content[0].tool_name != "final_answer"
            ]

    assert sorted(t.name for t in tools)[0] == "list_queries"
    suggested, saved, using = outputs[0], outputs[1], outputs[2]
    assert suggested["suggestions"][0]["tool"] == "pfas_classifier"
    assert suggested["suggestions"][0]["evidence"]
    assert saved == {**saved, "saved": "beeai/run-1", "scope": PFAS}
    using_it = " ".join(row["workflow"] for row in using["rows"])
    assert "beeai/run-1" in using_it and "bootstrap/0001" in using_it
    assert json.loads(response.last_message.text)["query"] == "workflows-using"


async def test_langchain_mcp_adapters_reach_the_http_server_as_docs_mcp_shows(
    store_template: Path,
) -> None:
    from langchain_mcp_adapters.client import MultiServerMCPClient
    from langchain_mcp_adapters.tools import load_mcp_tools

    with http_server(MCPSettings(store=str(store_template), scope=PFAS)) as served:
        client = MultiServerMCPClient(
            {"memory": {"transport": "streamable_http", "url": served.url}}
        )
        async with client.session("memory") as session:
            tools = {t.name: t for t in await load_mcp_tools(session)}
            answer = await tools["list_scopes"].ainvoke({})

    assert "suggest_next_steps" in tools
    text = answer if isinstance(answer, str) else answer[0]["text"]
    assert json.loads(text)["scopes"] == [{"scope": PFAS, "workflows": 64, "writable": False}]
