"""A remote batch whose server crashed mid-request converges: the next sync finds what it committed.

A real ``oxigraph serve`` sits behind a forwarding proxy that, on the chosen update, lets the
server commit, kills it (SIGKILL) before the answer reaches the memory, and drops the memory's
connection: the memory cannot tell whether the batch was stored (``StoreOutcomeUnknown``). The
server is then started again on the same files, and the memory, without being reopened and with
a poll interval that never elapses during the test, must index what the server committed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from em_plugin.memory import EpisodicMemory
from provenance.errors import StoreError, StoreOutcomeUnknown
from provenance.model import CallStep, InstructionStep, Workflow
from provenance.stores import open_store
from tests.conftest import OxigraphServer, start_oxigraph, stop_oxigraph
from tests.sparql_proxy import SparqlProxy

_NEVER_POLL = 3600.0  # only the memory's own unsettled state may make it look at the store


class _Proxy(SparqlProxy):
    """Forwards to a real server that it kills once the server committed a chosen update."""

    server: OxigraphServer
    crash_on: str | None = None  # text of the update the server dies answering (once)

    def upstream(self) -> str:  # the server started again on the same files is a new process
        return self.server.base_url

    def loses_answer(self, path: str, update: str) -> bool:
        if self.crash_on is None or self.crash_on not in update:
            return False
        self.crash_on = None
        # Committed; the server crashes before its answer leaves.
        self.server.process.kill()  # a crash: no answer, no shutdown
        stop_oxigraph(self.server)  # reaps it and closes its pipe
        return True


@pytest.fixture
def proxy(tmp_path: Path) -> Iterator[_Proxy]:
    proxy = _Proxy()
    proxy.server = start_oxigraph(tmp_path / "oxigraph")
    try:
        with proxy.serving():
            yield proxy
    finally:
        stop_oxigraph(proxy.server)


def _workflow(name: str, *tools: str) -> Workflow:
    calls = tuple(CallStep(t) for t in tools)
    return Workflow(id=name, steps=(InstructionStep(f"instruction of {name}", calls),))


def test_what_a_crashed_server_committed_reaches_the_live_index(proxy: _Proxy) -> None:
    with EpisodicMemory(
        proxy.query_url, embedder="fake:32", scope="team", poll_interval=_NEVER_POLL
    ) as memory:
        memory.save(_workflow("w0", "search"))
        # Three transactions; the server commits the second and dies before answering it.
        proxy.crash_on = "/team/v4>"
        batch = [_workflow(f"v{i}", "lookup", "report") for i in range(12)]
        with pytest.raises(StoreOutcomeUnknown, match="cannot be read"):
            memory.save_many(batch, batch_size=4)
        # Read while the server is still down: the read fails, and the memory stays unsettled.
        with pytest.raises(StoreError):
            memory.ids()

        proxy.server = start_oxigraph(proxy.server.location)  # the same files, a new process
        with open_store(proxy.server.query_url, read_only=True) as store:
            stored = store.ids("team")
        assert stored == ["v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "w0"]  # not v8-v11
        # No reopen, no poll: the memory's next read syncs with the store.
        assert memory.ids() == stored
        found = memory.retrieve(_workflow("now", "lookup"))
        assert "v5" in {m.workflow_id for m in found}

        # And it keeps working: the batch saved again stores what was missing.
        assert [w.id for w in memory.save_many(batch, batch_size=4)] == [w.id for w in batch]
        assert memory.ids() == sorted(["w0", *(w.id for w in batch)])
        assert memory.store.ids("team") == memory.ids()  # the committed ones kept, no versions
