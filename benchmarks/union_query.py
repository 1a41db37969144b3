"""Ad-hoc SPARQL over the true union default graph vs Oxigraph's own union vs ``GRAPH ?g``.

``em-plugin query --sparql`` (``WorkflowStore.query``) copies the workflow graphs into a private
store whose default graph holds each triple once (provenance/stores/union.py). This prints, for
one count through a shared tool node, the time and the answer of the three ways, and the time
ratio against Oxigraph's union:

    python benchmarks/union_query.py notebooks/data/tau2_telecom.jsonl --tool reset_apn_settings
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from provenance.stores import open_store
from provenance.stores.union import with_standard_prefixes
from provenance.workflow_json import read_jsonl

COUNT = 'SELECT (COUNT(*) AS ?n) WHERE {{ {open}?c wf:tool ?t . ?t wf:toolName "{tool}" {close}}}'


def main() -> None:
    """Import FILE into a disk store and time the three ways of counting one tool's calls."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path, help="a Workflow JSON .jsonl file")
    parser.add_argument("--tool", default="A1", help="the tool whose call steps are counted")
    args = parser.parse_args()
    store = open_store(str(Path(tempfile.mkdtemp()) / "store"))
    store.save_many(read_jsonl(args.file))
    print(f"{args.file.name}: {len(store)} workflows, {store.stats()['triples']} triples")
    plain = COUNT.format(open="", close="", tool=args.tool)
    graph = COUNT.format(open="GRAPH ?g { ", close="} ", tool=args.tool)
    timings = {}
    for name, run in (
        ("true union (em-plugin query --sparql)", lambda: store.query(plain)),
        ("Oxigraph union default graph", lambda: store.query(with_standard_prefixes(plain))),
        ("GRAPH ?g in place (named queries)", lambda: store.query(with_standard_prefixes(graph))),
    ):
        start = time.perf_counter()
        result = run()
        timings[name] = time.perf_counter() - start
        print(f"{name:40} {timings[name]:7.2f} s  count {result.rows[0][0]}")  # type: ignore[union-attr]
    baseline = timings["Oxigraph union default graph"]
    ratio = timings["true union (em-plugin query --sparql)"] / baseline
    print(f"true union / Oxigraph union time: {ratio:.2f}")
    store.close()


if __name__ == "__main__":
    main()
