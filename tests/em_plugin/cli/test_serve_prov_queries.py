"""``em-plugin serve`` answers standard PROV-O queries from an outside client as the Workflow
JSON implies (docs/provenance-mapping.md, "PROV-O types")."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from em_plugin.endpoint import oxigraph_binary
from provenance.stores import open_store
from tests.processes import em_plugin_serve
from tests.prov_counts import STANDARD_QUERIES, dev_workflows, expected_counts

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(oxigraph_binary() is None, reason="pip install oxigraph (server binary)"),
]


def _count(url: str, sparql: str) -> int:
    """One SELECT over the SPARQL 1.1 protocol, as any client sends it (no extensions)."""
    request = urllib.request.Request(
        url,
        data=urllib.parse.urlencode({"query": sparql}).encode(),
        headers={"Accept": "application/sparql-results+json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        rows = json.load(response)["results"]["bindings"]
    return int(rows[0]["n"]["value"])


def test_served_dev_data_answers_standard_prov_queries(tmp_path: Path) -> None:
    workflows = dev_workflows()
    with open_store(tmp_path / "store") as store:
        store.save_many(workflows)
    with em_plugin_serve(tmp_path / "store") as (_, url):
        served = {name: _count(url, sparql) for name, sparql in STANDARD_QUERIES.items()}
    assert served == expected_counts(workflows)
