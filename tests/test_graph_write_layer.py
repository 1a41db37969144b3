"""Only ``provenance/stores`` writes or drops the store's graphs (docs/sparql.md, docs/stores.md).

The families of graphs the store holds are declared in ``provenance/stores/graph_families.py``
and written by the store layer's calls (``WorkflowStore.commit``, ``record_suggestions``,
``provenance/stores/graph_writes.py``, ``provenance/stores/backup.py``). Any other module that
called a backend's write primitives would write a family behind the registry's back, and
``forget``, the backup or a token's rights would miss it. So this test reads every module outside
``provenance/stores`` and fails on a call of:

* the :class:`~provenance.stores.base.GraphStore` write primitives (``replace_graphs``,
  ``drop_graphs``), on any receiver;
* pyoxigraph's store mutators (``update``, ``add``, ``remove``, ``extend``, ``load``,
  ``bulk_load``, ``bulk_extend``, ``remove_graph``, ``clear_graph``, ``clear``, ``add_graph``)
  on a receiver named like a store or a backend (``store``, ``self.store``, ``x.backend``), in
  a module that imports pyoxigraph.

The SPARQL server of ``em-plugin serve --token-file`` (``em_plugin/endpoint/``) is the one
exception (:data:`SERVERS`): it runs its clients' updates, each checked graph by graph against the
registry's token rights (``em_plugin/access/sparql.py``), and keeps private in-memory copies of
scopes.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("provenance", "em_plugin", "integrations")
STORE_LAYER = ROOT / "provenance" / "stores"
GRAPH_WRITES = frozenset({"replace_graphs", "drop_graphs"})
OXIGRAPH_WRITES = frozenset(
    {
        "add",
        "add_graph",
        "bulk_extend",
        "bulk_load",
        "clear",
        "clear_graph",
        "extend",
        "load",
        "remove",
        "remove_graph",
        "update",
    }
)
#: Modules (by path) that serve SPARQL updates of clients; see the module doc.
SERVERS = frozenset({"em_plugin/endpoint/scoped.py", "em_plugin/endpoint/scope_copy.py"})


def _imports_pyoxigraph(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name == "pyoxigraph" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pyoxigraph"):
            return True
    return False


def graph_writes(source: str) -> list[tuple[int, str]]:
    """Return ``(line, call)`` for every graph write the source makes (see the module doc)."""
    tree = ast.parse(source)
    oxigraph = _imports_pyoxigraph(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        name = node.func.attr
        receiver = ast.unparse(node.func.value)
        last = receiver.rpartition(".")[2].lower()
        if name in GRAPH_WRITES or (
            oxigraph and name in OXIGRAPH_WRITES and last.endswith(("store", "backend"))
        ):
            found.append((node.lineno, f"{receiver}.{name}(...)"))
    return found


def test_only_the_store_layer_writes_graphs() -> None:
    violations = []
    checked = 0
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.is_relative_to(STORE_LAYER) or path.relative_to(ROOT).as_posix() in SERVERS:
                continue
            checked += 1
            for line, call in graph_writes(path.read_text(encoding="utf-8")):
                violations.append(f"{path.relative_to(ROOT)}:{line}: {call}")
    assert checked > 100, "the scan found too few modules: is ROOT right?"
    assert not violations, (
        "graphs written outside provenance/stores (write them through the store layer, "
        "provenance/stores/graph_writes.py, and register their family in "
        "provenance/stores/graph_families.py):\n" + "\n".join(violations)
    )


def test_the_store_layer_itself_is_seen_writing() -> None:
    # The scanner finds the writes the store layer does make: it would find them elsewhere.
    writes = graph_writes((STORE_LAYER / "graph_writes.py").read_text(encoding="utf-8"))
    assert {call for _, call in writes} >= {
        "backend.replace_graphs(...)",
        "backend.drop_graphs(...)",
    }


def test_scanner_sees_writes_through_backends_and_oxigraph_stores() -> None:
    source = (
        "import pyoxigraph as ox\n"
        "def f(memory, copy, seen):\n"
        "    memory.store.backend.replace_graphs([])\n"
        "    copy.store.remove_graph(ox.NamedNode('urn:g'))\n"
        "    seen.add(1)\n"  # a set: not a store
        "    copy.store.query('ASK {}')\n"  # a read
    )
    assert graph_writes(source) == [
        (3, "memory.store.backend.replace_graphs(...)"),
        (4, "copy.store.remove_graph(...)"),
    ]


def test_the_servers_exempted_exist() -> None:
    # An exemption for a module that moved or went would silently exempt nothing (or a new
    # module of the same name): keep the list true.
    assert all((ROOT / path).is_file() for path in SERVERS)
