"""The scope rules of the MCP server: server scope, call scope, the only visible scope, tokens."""

from __future__ import annotations

import pytest
from mcp_support import TOKEN_HELPDESK, TOKEN_PFAS

from em_plugin.access import TokenTable
from integrations.mcp.access import Caller, ScopeGate
from integrations.mcp.errors import MemoryToolError
from integrations.mcp.tracing import trace_carrier

EXISTING = ["helpdesk", "pfas"]
TOKENS = TokenTable.from_mapping(
    {
        "tokens": {
            "reader": {"token": TOKEN_PFAS, "scopes": ["pfas"]},
            "writer": {"token": TOKEN_HELPDESK, "scopes": ["helpdesk"], "access": "read-write"},
        }
    }
)


def _caller(gate: ScopeGate, token: str) -> Caller:
    return gate.caller(f"Bearer {token}")


def test_a_call_names_its_scope_or_uses_the_only_one() -> None:
    gate = ScopeGate(scope=None, tokens=None, allow_write=True)
    anyone = gate.caller(None)
    assert gate.read_scope(anyone, "pfas", EXISTING) == "pfas"
    assert gate.read_scope(anyone, None, ["pfas"]) == "pfas"
    with pytest.raises(MemoryToolError, match="choose a scope: pass scope= one of 'helpdesk'"):
        gate.read_scope(anyone, None, EXISTING)
    with pytest.raises(MemoryToolError, match="scope 'x' has no workflows; your scopes: 'help"):
        gate.read_scope(anyone, "x", EXISTING)
    with pytest.raises(MemoryToolError, match="non-empty"):
        gate.read_scope(anyone, " ", EXISTING)
    # A save may start a scope; into an empty memory it goes to 'default'.
    assert gate.write_scope(anyone, "new-team", EXISTING) == "new-team"
    assert gate.write_scope(anyone, None, []) == "default"
    with pytest.raises(MemoryToolError, match="holds no workflows yet"):
        gate.read_scope(anyone, None, [])


def test_a_server_scope_is_the_only_scope() -> None:
    gate = ScopeGate(scope="pfas", tokens=None, allow_write=False)
    anyone = gate.caller(None)
    assert gate.visible(anyone, EXISTING) == ["pfas"]
    assert gate.read_scope(anyone, None, EXISTING) == "pfas"
    with pytest.raises(MemoryToolError, match="serves scope 'pfas' only"):
        gate.read_scope(anyone, "helpdesk", EXISTING)
    with pytest.raises(MemoryToolError, match="read-only: restart it with --allow-write"):
        gate.write_scope(anyone, None, EXISTING)


def test_tokens_open_their_scopes_only() -> None:
    gate = ScopeGate(scope=None, tokens=TOKENS, allow_write=True)
    reader, writer = _caller(gate, TOKEN_PFAS), _caller(gate, TOKEN_HELPDESK)
    assert gate.visible(reader, EXISTING) == ["pfas"]
    assert gate.read_scope(reader, None, EXISTING) == "pfas"
    with pytest.raises(MemoryToolError, match="does not open scope 'helpdesk'; it opens 'pfas'"):
        gate.read_scope(reader, "helpdesk", EXISTING)
    with pytest.raises(MemoryToolError, match="does not open scope 'elsewhere'"):
        gate.read_scope(reader, "elsewhere", EXISTING)  # never says whether it exists
    with pytest.raises(MemoryToolError, match="may read scope 'pfas' but not write it"):
        gate.write_scope(reader, None, EXISTING)
    assert gate.write_scope(writer, None, EXISTING) == "helpdesk"
    # A writer's scope with no workflows yet: its only scope, ready for the first save.
    assert gate.write_scope(writer, None, ["pfas"]) == "helpdesk"
    for header in (None, "Basic abc", "Bearer unknown-token-0123456789"):
        with pytest.raises(MemoryToolError, match="refused"):
            gate.caller(header)


def test_the_trace_context_comes_from_meta_then_headers() -> None:
    class Meta:
        model_extra = {"traceparent": "00-aa-bb-01", "tracestate": "k=v", "other": 1}

    headers = {"traceparent": "00-cc-dd-01"}
    assert trace_carrier(Meta(), headers) == {"traceparent": "00-aa-bb-01", "tracestate": "k=v"}
    assert trace_carrier(None, headers) == {"traceparent": "00-cc-dd-01"}
    assert trace_carrier(None, None) == {}
