"""The MCP server over streamable HTTP on 127.0.0.1: tokens per scope, writes, stateless
requests, the caller's trace continued, and ``em-plugin mcp --transport http`` itself."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from mcp.types import LATEST_PROTOCOL_VERSION
from mcp_support import (
    HELPDESK_SCOPE,
    PFAS,
    ROOT,
    TOKEN_HELPDESK,
    TOKEN_PFAS,
    bootstrap_workflow,
    error_text,
    http_server,
    http_session,
    payload,
    server_env,
    token_file,
    workflow_so_far,
)
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from em_plugin import telemetry
from em_plugin.access import TokenTable
from integrations.mcp import MCPSettings
from integrations.mcp.resources import workflow_uri
from tests.processes import close_pipes, stop_process

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


@pytest.fixture
def tokens(tmp_path: Path) -> TokenTable:
    return TokenTable.load(token_file(tmp_path / "tokens.toml"))


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.configure(tracer_provider=provider)
    exporter.provider = provider  # type: ignore[attr-defined]
    yield exporter
    telemetry.configure()


async def test_a_token_sees_its_scopes_only(store: Path, tokens: TokenTable) -> None:
    settings = MCPSettings(store=str(store), tokens=tokens, allow_write=True)
    pfas_uri = workflow_uri(PFAS, "bootstrap/0001", "prov.ttl")
    with http_server(settings) as served:
        async with http_session(served.url, TOKEN_PFAS) as session:
            protocol = session.initialized.protocolVersion  # type: ignore[attr-defined]
            scopes = payload(await session.call_tool("list_scopes", {}))
            listed = payload(await session.call_tool("list_workflows", {"limit": 1}))
            other = await session.call_tool("list_workflows", {"scope": HELPDESK_SCOPE})
            query = await session.call_tool(
                "run_query", {"name": "workflows", "scope": HELPDESK_SCOPE}
            )
            readable = await session.read_resource(pfas_uri)
            with pytest.raises(Exception, match="your token does not open scope 'helpdesk'"):
                await session.read_resource(
                    workflow_uri(HELPDESK_SCOPE, "helpdesk/2", "workflow.json")
                )
            read_only = await session.call_tool(
                "save_workflow", {"workflow": {"id": "x", "steps": []}}
            )
        async with http_session(served.url, TOKEN_HELPDESK) as session:
            theirs = payload(await session.call_tool("list_scopes", {}))
            refused = await session.call_tool("list_workflows", {"scope": PFAS})

    assert protocol == LATEST_PROTOCOL_VERSION
    # One token, one scope: it is the default, and the other scope is not even named.
    assert scopes["scopes"] == [{"scope": PFAS, "workflows": 64, "writable": False}]
    assert listed["scope"] == PFAS
    assert "your token does not open scope 'helpdesk'; it opens 'pfas'" in error_text(other)
    assert "your token does not open scope 'helpdesk'" in error_text(query)
    assert "prov:Activity" in readable.contents[0].text
    assert "may read scope 'pfas' but not write it" in error_text(read_only)
    assert theirs["scopes"] == [{"scope": HELPDESK_SCOPE, "workflows": 40, "writable": True}]
    assert "it opens 'helpdesk'" in error_text(refused)


async def test_a_request_without_a_known_token_is_refused(
    store_template: Path, tokens: TokenTable
) -> None:
    settings = MCPSettings(store=str(store_template), tokens=tokens)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    with http_server(settings) as served:
        async with httpx.AsyncClient() as client:
            missing = await client.post(served.url, json=body)
            unknown = await client.post(
                served.url, json=body, headers={"Authorization": "Bearer not-a-token-at-all"}
            )

    assert missing.status_code == 401
    assert missing.headers["www-authenticate"].startswith("Bearer")
    assert "Authorization: Bearer" in missing.json()["error"]
    assert unknown.status_code == 401
    assert unknown.json() == {"error": "unknown token"}


async def test_a_read_write_token_saves_and_the_save_is_served(
    store: Path, tokens: TokenTable
) -> None:
    finished = {"id": "ticket/new", "steps": [{"kind": "call", "name": "A1"}]}
    settings = MCPSettings(store=str(store), tokens=tokens, allow_write=True)
    with http_server(settings) as served:
        async with http_session(served.url, TOKEN_HELPDESK) as session:
            saved = payload(await session.call_tool("save_workflow", {"workflow": finished}))
            listed = payload(await session.call_tool("list_workflows", {"limit": 500}))
        async with http_session(served.url, TOKEN_PFAS) as session:
            pfas_save = await session.call_tool(
                "save_workflow", {"workflow": finished, "scope": HELPDESK_SCOPE}
            )

    assert saved["saved"] == "ticket/new"
    assert saved["scope"] == HELPDESK_SCOPE
    assert listed["total"] == 41
    assert "ticket/new" in [w["id"] for w in listed["workflows"]]
    assert "your token does not open scope 'helpdesk'" in error_text(pfas_save)


async def test_stateless_requests_need_no_session(store_template: Path) -> None:
    settings = MCPSettings(store=str(store_template), scope=PFAS)
    current = workflow_so_far(bootstrap_workflow(1), 1)
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "suggest_next_steps", "arguments": {"workflow": current}},
    }
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": LATEST_PROTOCOL_VERSION,
    }
    with http_server(settings) as served:
        async with httpx.AsyncClient(timeout=120) as client:
            answers = [await client.post(served.url, json=body, headers=headers) for _ in range(2)]

    for answer in answers:  # no initialize, no session id: each request stands alone
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("application/json")
        assert "mcp-session-id" not in answer.headers
        reply = answer.json()
        assert reply["id"] == 7
        result = reply["result"]
        assert result["isError"] is False
        assert result["structuredContent"]["suggestions"][0]["tool"] == "pfas_classifier"


async def test_the_callers_traceparent_is_continued_into_the_memory_spans(
    store_template: Path, spans: InMemorySpanExporter
) -> None:
    settings = MCPSettings(store=str(store_template), scope=PFAS)
    current = workflow_so_far(bootstrap_workflow(1), 1)
    header = {"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"}
    meta_trace = "0af7651916cd43dd8448eb211c80319c"
    meta = {"traceparent": f"00-{meta_trace}-b7ad6b7169203331-01"}
    provider = spans.provider  # type: ignore[attr-defined]
    with http_server(settings, tracer_provider=provider) as served:
        async with http_session(served.url, headers=header) as session:
            payload(await session.call_tool("suggest_next_steps", {"workflow": current}))
            payload(await session.call_tool("list_scopes", {}, meta=meta))

    finished = spans.get_finished_spans()
    [call] = [s for s in finished if s.name == "tools/call suggest_next_steps"]
    assert call.kind == SpanKind.SERVER
    assert call.context.trace_id == int(TRACE_ID, 16)
    assert call.parent is not None and call.parent.span_id == int(PARENT_ID, 16)
    assert call.attributes["mcp.method.name"] == "tools/call"
    assert call.attributes["gen_ai.tool.name"] == "suggest_next_steps"
    assert call.attributes["network.transport"] == "tcp"
    searches = [
        s for s in finished if (s.attributes or {}).get("gen_ai.operation.name") == "search_memory"
    ]
    assert searches, [s.name for s in finished]
    assert all(s.context.trace_id == int(TRACE_ID, 16) for s in searches)
    assert any(s.parent is not None and s.parent.span_id == call.context.span_id for s in searches)
    # A traceparent in the request's _meta wins over the HTTP header (it is the MCP way).
    [listing] = [s for s in finished if s.name == "tools/call list_scopes"]
    assert listing.context.trace_id == int(meta_trace, 16)


def test_the_command_serves_http_and_prints_its_url(store_template: Path, tmp_path: Path) -> None:
    tokens = token_file(tmp_path / "tokens.toml")
    command = [sys.executable, "-m", "integrations.mcp", "--store", str(store_template)]
    command += ["--transport", "http", "--port", "0", "--token-file", str(tokens)]
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env=server_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp"), url
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
        body["params"] = {"name": "list_scopes", "arguments": {}}  # type: ignore[assignment]
        answer = httpx.post(
            url,
            json=body,
            headers={
                "Authorization": f"Bearer {TOKEN_PFAS}",
                "Accept": "application/json, text/event-stream",
            },
            timeout=120,
        )
    finally:
        stop_process(process)  # type: ignore[arg-type]
        close_pipes(process)
    assert answer.status_code == 200, answer.text
    listed = json.loads(answer.json()["result"]["content"][0]["text"])
    assert listed["scopes"] == [{"scope": PFAS, "workflows": 64, "writable": False}]


async def test_a_request_for_another_host_name_is_refused(store_template: Path) -> None:
    settings = MCPSettings(store=str(store_template), scope=PFAS)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream"}
    with http_server(settings) as served:
        async with httpx.AsyncClient() as client:
            # A web page reaching 127.0.0.1 through a rebound DNS name sends that name as Host.
            rebound = await client.post(
                served.url, json=body, headers={**headers, "Host": "attacker.example"}
            )
            direct = await client.post(served.url, json=body, headers=headers)

    assert rebound.status_code == 421
    assert direct.status_code == 200


async def test_concurrent_calls_share_one_memory(store: Path) -> None:
    settings = MCPSettings(store=str(store), scope=PFAS, allow_write=True)
    current = workflow_so_far(bootstrap_workflow(1), 1)
    saves = [
        {"id": f"parallel/{n}", **workflow_so_far(bootstrap_workflow(n + 1), 2)} for n in range(4)
    ]
    with http_server(settings) as served:
        async with http_session(served.url) as session:
            results = await asyncio.gather(
                *[session.call_tool("suggest_next_steps", {"workflow": current}) for _ in range(4)],
                *[session.call_tool("save_workflow", {"workflow": w}) for w in saves],
            )
            listed = payload(await session.call_tool("list_workflows", {"limit": 500}))

    answers = [payload(r) for r in results]
    assert all(a["suggestions"][0]["tool"] == "pfas_classifier" for a in answers[:4])
    assert sorted(a["saved"] for a in answers[4:]) == [f"parallel/{n}" for n in range(4)]
    assert listed["total"] == 68
