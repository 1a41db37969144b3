"""Time every named query (provenance/queries/*.rq) on a store, unbound and with parameters bound.

Usage::

    PYTHONPATH=<checkout> python benchmarks/named_queries.py STORE [--query NAME ...]
        [--timeout SECONDS] [--unbound-only | --bound-only]

Each query runs as ``em-plugin query`` runs it (``WorkflowStore.query`` with the name and the
bindings), in a child process of its own that opens STORE read-only, so that a query past
``--timeout`` is stopped and the next one still runs. The bound runs give each parameter,
one at a time, a typical value read from the store (a workflow id, a tool name, a scope, a
session...; the values are printed). For each run the table shows the rows, the seconds and
a digest of the sorted rows: run it with ``PYTHONPATH`` set to two checkouts to compare
plans (seconds) and answers (digest) before and after a query change. The load average is
printed before and after: the figures are from a shared machine unless it says otherwise.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from typing import Any

_PREFIXES = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX dcterms: <http://purl.org/dc/terms/>
PREFIX pl: <https://w3id.org/em-plugin/provlake#>
PREFIX wf: <https://w3id.org/em-plugin/ns#>
"""
# Cheap look-ups of a typical value per parameter name: each reads one match, never a scan.
_PROBES = {
    "workflow": "SELECT ?v WHERE { GRAPH ?g { ?w a pl:Workflow ; dcterms:identifier ?v } } LIMIT 1",
    "tool": "SELECT ?v WHERE { GRAPH ?g { ?s a wf:FunctionCallStep ; wf:tool/wf:toolName ?v } } "
    "LIMIT 1",
    "next_tool": "SELECT ?v WHERE { GRAPH ?g { ?s wf:nextCall/wf:tool/wf:toolName ?v } } LIMIT 1",
    "scope": "SELECT ?v WHERE { GRAPH ?g { ?w a pl:Workflow ; wf:scope ?v } } LIMIT 1",
    "session": "SELECT ?v WHERE { GRAPH ?g { ?a a wf:Suggestion ; wf:sessionId ?v } } LIMIT 1",
    "outcome": "SELECT ?v WHERE { GRAPH ?g { ?r wf:outcome ?v } } LIMIT 1",
    "status": "SELECT ?v WHERE { GRAPH ?g { ?p a wf:Procedure ; wf:status ?v } } LIMIT 1",
    "subject": "SELECT ?v WHERE { GRAPH ?g { ?r a wf:LifecycleRecord ; dcterms:identifier ?v } } "
    "LIMIT 1",
    "value": "SELECT ?v WHERE { GRAPH ?g { ?v prov:wasGeneratedBy/a wf:FunctionCall ; "
    "prov:value ?x } } LIMIT 1",
}
# When the store has no such record, a value that matches nothing still times the plan.
_FALLBACK = {"subject": "wf-0000001", "value": "https://w3id.org/em-plugin/id/none-output"}


def _typical_values(store: Any, names: set[str]) -> dict[str, str]:
    """Return a value per parameter name, read from the store (or the fallback)."""
    values = {}
    for name in sorted(names):
        # The backend's own select: ad-hoc text through store.query lists the query dataset's
        # graphs first (provenance/stores/union.py), seconds on a large store.
        rows = store.backend.select(_PREFIXES + _PROBES[name]).rows if name in _PROBES else []
        if rows:
            values[name] = str(rows[0][0])
        elif name in _FALLBACK:
            values[name] = _FALLBACK[name]
    return values


def _run_one(store_dir: str, name: str, bindings: dict[str, str]) -> dict[str, Any]:
    """Run one named query and return its row count, seconds and sorted-row digest."""
    from provenance.queries import load_query
    from provenance.stores import QueryResult, open_store

    store = open_store(store_dir, read_only=True)
    query = load_query(name)
    terms = query.bindings(**bindings)
    started = time.perf_counter()
    result = store.query(name, bindings=terms or None)
    assert isinstance(result, QueryResult)  # every named query is a SELECT
    rows = result.rows
    seconds = time.perf_counter() - started
    text = "\n".join(
        sorted(repr(tuple(str(c) if c is not None else None for c in r)) for r in rows)
    )
    return {
        "rows": len(rows),
        "seconds": seconds,
        "digest": hashlib.sha256(text.encode()).hexdigest()[:12],
    }


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("store", help="a store directory")
    parser.add_argument("--query", action="append", help="only this query (repeatable)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per run")
    parser.add_argument("--unbound-only", action="store_true")
    parser.add_argument("--bound-only", action="store_true")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--bindings", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(_run_one(args.store, args.one, json.loads(args.bindings))))
        return

    from provenance.queries import list_queries
    from provenance.stores import open_store

    queries = [q for q in list_queries() if not args.query or q.name in args.query]
    values = _typical_values(
        open_store(args.store, read_only=True), {p for q in queries for p in q.parameter_names}
    )
    print(f"store {args.store}; load average {_load()}")
    print("typical values: " + ", ".join(f"{k}={v}" for k, v in values.items()))
    print(f"{'query':24s} {'bindings':44s} {'rows':>8s} {'seconds':>9s}  digest")
    for query in queries:
        runs: list[dict[str, str]] = []
        if not args.bound_only:
            runs.append({})
        if not args.unbound_only:
            # One parameter at a time, as `em-plugin query NAME --tool T` is typically asked.
            runs += [{p: values[p]} for p in query.parameter_names if p in values]
        for bindings in runs:
            command = [sys.executable, __file__, args.store, "--one", query.name]
            command += ["--bindings", json.dumps(bindings)]
            shown = ",".join(f"{k}={v}" for k, v in bindings.items()) or "-"
            try:
                done = subprocess.run(
                    command, capture_output=True, text=True, timeout=args.timeout, check=True
                )
                out = json.loads(done.stdout.strip().splitlines()[-1])
                line = f"{out['rows']:8d} {out['seconds']:9.3f}  {out['digest']}"
            except subprocess.TimeoutExpired:
                line = f"{'-':>8s} {'>' + str(int(args.timeout)):>9s}  (stopped)"
            except subprocess.CalledProcessError as exc:
                line = f"error: {exc.stderr.strip().splitlines()[-1][:80]}"
            print(f"{query.name:24s} {shown[:44]:44s} {line}", flush=True)
    print(f"load average {_load()}")


if __name__ == "__main__":
    main()
