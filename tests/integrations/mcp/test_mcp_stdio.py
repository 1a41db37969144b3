"""An MCP session over stdio with the SDK's own client: ``python -m integrations.mcp``.

One server process per test module answers every test (each test opens its own session on a
fresh process would cost a second each; the server is read-only, so tests cannot disturb each
other).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from mcp.shared.exceptions import McpError
from mcp.types import LATEST_PROTOCOL_VERSION
from mcp_support import (
    HELPDESK_SCOPE,
    PFAS,
    bootstrap_workflow,
    error_text,
    payload,
    stdio_session,
    workflow_so_far,
)

from em_plugin.memory import EpisodicMemory
from integrations.mcp.resources import workflow_uri
from integrations.mcp.tools import TOOL_NAMES
from provenance.export import provjson_to_workflows
from provenance.model import CallStep, InstructionStep, Workflow
from provenance.workflow_json import loads_workflow


async def test_the_tools_and_resource_templates_are_listed(store_template: Path) -> None:
    async with stdio_session(store_template) as session:
        initialized = session.initialized  # type: ignore[attr-defined]
        tools = {t.name: t for t in (await session.list_tools()).tools}
        templates = (await session.list_resource_templates()).resourceTemplates

    # The current revision of the protocol, as the installed SDK knows it.
    assert initialized.protocolVersion == LATEST_PROTOCOL_VERSION
    assert initialized.serverInfo.name == "em-plugin"
    assert "recall_workflows" in initialized.instructions

    assert sorted(tools) == sorted(TOOL_NAMES)
    assert tools["list_workflows"].annotations.readOnlyHint is True
    assert tools["save_workflow"].annotations.readOnlyHint is False
    schema = tools["suggest_next_steps"].inputSchema
    assert schema["required"] == ["workflow"]
    assert {"workflow", "scope", "limit"} <= set(schema["properties"])
    uris = sorted(t.uriTemplate for t in templates)
    assert uris == [
        "em-plugin://workflows/{scope}/{workflow_id}/prov.json",
        "em-plugin://workflows/{scope}/{workflow_id}/prov.ttl",
        "em-plugin://workflows/{scope}/{workflow_id}/workflow.json",
    ]


async def test_a_session_lists_suggests_queries_and_reads_prov(store_template: Path) -> None:
    stored = bootstrap_workflow(1)
    current = workflow_so_far(stored, 1)  # product_extractor done: what comes next?
    async with stdio_session(store_template) as session:
        scopes = payload(await session.call_tool("list_scopes", {}))
        listed = payload(
            await session.call_tool("list_workflows", {"scope": PFAS, "limit": 2, "offset": 0})
        )
        suggested = payload(
            await session.call_tool("suggest_next_steps", {"workflow": current, "scope": PFAS})
        )
        pairs = payload(
            await session.call_tool(
                "run_query",
                {"name": "tool-pairs", "bindings": {"tool": "product_extractor"}, "scope": PFAS},
            )
        )
        turtle = await session.read_resource(workflow_uri(PFAS, stored.id, "prov.ttl"))
        provjson = await session.read_resource(workflow_uri(PFAS, stored.id, "prov.json"))
        as_json = await session.read_resource(workflow_uri(PFAS, stored.id, "workflow.json"))

    assert scopes == {
        "scopes": [
            {"scope": HELPDESK_SCOPE, "workflows": 40, "writable": False},
            {"scope": PFAS, "workflows": 64, "writable": False},
        ],
        "read_only": True,
    }
    assert listed["total"] == 64
    assert [w["id"] for w in listed["workflows"]] == ["bootstrap/0001", "bootstrap/0002"]
    assert listed["workflows"][0]["resources"]["prov_turtle"] == workflow_uri(
        PFAS, "bootstrap/0001", "prov.ttl"
    )

    # The bootstrap crews classify right after extracting: the suggestion says so, and cites
    # the past workflows (and the positions in them) it rests on.
    best = suggested["suggestions"][0]
    assert suggested["workflow_so_far"] == ["product_extractor"]
    assert best["tool"] == "pfas_classifier"
    assert best["evidence"], best
    assert all(e["workflow_id"].startswith("bootstrap/") for e in best["evidence"])
    assert all(e["position"] >= 1 for e in best["evidence"])

    assert pairs["columns"] == ["tool", "next_tool", "count"]
    after_extractor = {r["next_tool"]: int(r["count"]) for r in pairs["rows"]}
    assert after_extractor["pfas_classifier"] > 0
    assert all(r["tool"] == "product_extractor" for r in pairs["rows"])

    assert turtle.contents[0].mimeType == "text/turtle"
    assert "prov:Activity" in turtle.contents[0].text
    assert provjson.contents[0].mimeType == "application/json"
    [read_back] = provjson_to_workflows(provjson.contents[0].text)
    assert [s.name for s in read_back.leaves()] == [s.name for s in stored.leaves()]
    assert loads_workflow(as_json.contents[0].text) == stored


async def test_a_read_only_server_refuses_a_save_and_stores_nothing(store: Path) -> None:
    finished = {"id": "run/1", **workflow_so_far(bootstrap_workflow(1), 3)}
    async with stdio_session(store) as session:
        refused = await session.call_tool("save_workflow", {"workflow": finished, "scope": PFAS})
        listed = payload(await session.call_tool("list_workflows", {"scope": PFAS}))

    assert "read-only" in error_text(refused)
    assert "--allow-write" in error_text(refused)
    assert listed["total"] == 64


async def test_the_write_flag_lets_a_save_through(store: Path) -> None:
    finished = {"id": "run/1", **workflow_so_far(bootstrap_workflow(1), 3)}
    async with stdio_session(store, "--allow-write") as session:
        unscoped = await session.call_tool("save_workflow", {"workflow": finished})
        clash = await session.call_tool(
            "save_workflow", {"workflow": {**finished, "scope": HELPDESK_SCOPE}, "scope": PFAS}
        )
        saved = payload(
            await session.call_tool("save_workflow", {"workflow": finished, "scope": PFAS})
        )
        listed = payload(await session.call_tool("list_workflows", {"scope": PFAS, "limit": 500}))
        read = await session.read_resource(workflow_uri(PFAS, "run/1", "workflow.json"))

    # Two scopes and none named: the server does not guess where a save goes.
    assert "choose a scope: pass scope= one of 'helpdesk', 'pfas'" in error_text(unscoped)
    assert "the workflow's scope 'helpdesk' differs from scope='pfas'" in error_text(clash)
    assert saved == {
        "saved": "run/1",
        "scope": PFAS,
        "steps": 3,
        "resources": {
            "prov_turtle": workflow_uri(PFAS, "run/1", "prov.ttl"),
            "prov_json": workflow_uri(PFAS, "run/1", "prov.json"),
            "workflow_json": workflow_uri(PFAS, "run/1", "workflow.json"),
        },
    }
    assert listed["total"] == 65
    assert "run/1" in [w["id"] for w in listed["workflows"]]
    expected = bootstrap_workflow(1).prefix(3).leaves()
    assert loads_workflow(read.contents[0].text).leaves() == expected


async def test_bad_input_gives_a_clear_tool_error(store_template: Path) -> None:
    async with stdio_session(store_template) as session:
        not_json = await session.call_tool("suggest_next_steps", {"workflow": "{steps: ["})
        no_steps = await session.call_tool("suggest_next_steps", {"workflow": {"title": "x"}})
        bad_step = await session.call_tool(
            "suggest_next_steps", {"workflow": {"steps": [{"kind": "call"}]}, "scope": PFAS}
        )
        two_scopes = await session.call_tool("list_workflows", {})
        no_scope = await session.call_tool("list_workflows", {"scope": "nobody"})
        bad_query = await session.call_tool("run_query", {"name": "tool-pairz", "scope": PFAS})
        bad_param = await session.call_tool(
            "run_query", {"name": "tool-pairs", "bindings": {"tol": "x"}, "scope": PFAS}
        )
        with pytest.raises(McpError, match="no workflow 'nope' in scope 'pfas'"):
            await session.read_resource(workflow_uri(PFAS, "nope", "prov.ttl"))
        still = payload(await session.call_tool("list_scopes", {}))

    assert "workflow is not JSON" in error_text(not_json)
    assert "a workflow needs 'steps'" in error_text(no_steps)
    assert "docs/workflow-json.md" in error_text(no_steps)
    assert "name" in error_text(bad_step)
    assert "choose a scope: pass scope= one of 'helpdesk', 'pfas'" in error_text(two_scopes)
    assert "scope 'nobody' has no workflows; your scopes: 'helpdesk', 'pfas'" in error_text(
        no_scope
    )
    assert "no named query 'tool-pairz'; valid: " in error_text(bad_query)
    assert "tool-pairs" in error_text(bad_query)
    assert "has no parameter 'tol'; valid: tool" in error_text(bad_param)
    assert len(still["scopes"]) == 2  # the server kept serving


async def test_a_read_only_server_sees_what_a_crew_beside_it_saves(store: Path) -> None:
    text = "Summarise the zeta.pdf hazard report for the board"
    new = Workflow(
        id="crew/live",
        scope=PFAS,
        steps=(InstructionStep(text, (CallStep("report_writer", {"file": "zeta.pdf"}),)),),
    )
    with EpisodicMemory(store=str(store), scope=PFAS, embedder="fake:64") as crew:
        async with stdio_session(store, "--scope", PFAS) as session:
            before = payload(await session.call_tool("list_workflows", {"limit": 500}))
            crew.save(new)
            # The server looks for the writer's new commits at most once a second.
            await asyncio.sleep(1.1)
            after = payload(await session.call_tool("list_workflows", {"limit": 500}))
            recalled = payload(await session.call_tool("recall_workflows", {"query": text}))

    assert before["total"] == 64
    assert after["total"] == 65
    assert "crew/live" in [w["id"] for w in after["workflows"]]
    assert recalled["workflows"][0]["workflow_id"] == "crew/live"
    assert recalled["workflows"][0]["steps"] == ["report_writer"]
