"""The layers import one way only: integrations -> em_plugin -> provenance (docs/architecture.md).

Inside ``em_plugin`` the engine subpackages (capture, retrieval, state, suggest, embedding) never
import the session or CLI layers above them, and no core package imports the PFAS demo.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# package -> top-level packages it must never import
FORBIDDEN = {
    "provenance": {"em_plugin", "integrations"},
    "em_plugin": {"integrations"},
}


def _imported_modules(tree: ast.AST, module: str) -> list[tuple[int, str]]:
    """Every module named by an import statement anywhere in the tree (incl. inside functions)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import: resolve against the module's own package
                base = module.split(".")[: -node.level]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            found.append((node.lineno, name))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append((node.lineno, node.args[0].value))
    return found


def _python_files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


# em_plugin subpackage -> module prefixes it must never import
SUBPACKAGE_FORBIDDEN = {
    sub: ("em_plugin.session", "em_plugin.cli", "em_plugin.memory", "em_plugin.evaluation")
    for sub in ("capture", "retrieval", "state", "suggest", "embedding")
}
DEMO_PREFIXES = ("em_plugin.demo", "integrations.demo")


def _violations(package_dir: str, forbidden: tuple[str, ...]) -> list[str]:
    found = []
    for path in _python_files(package_dir):
        rel = path.relative_to(ROOT)
        module = ".".join(rel.with_suffix("").parts)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(rel))
        for line, name in _imported_modules(tree, module):
            if any(name == p or name.startswith(p + ".") for p in forbidden):
                found.append(f"{rel}:{line}: imports {name}")
    return found


@pytest.mark.parametrize("sub", sorted(SUBPACKAGE_FORBIDDEN))
def test_engine_subpackages_never_import_session_or_cli(sub: str) -> None:
    assert _python_files(f"em_plugin/{sub}"), f"em_plugin/{sub}/ is missing"
    violations = _violations(f"em_plugin/{sub}", SUBPACKAGE_FORBIDDEN[sub])
    assert not violations, "upward imports:\n" + "\n".join(violations)


@pytest.mark.parametrize("package", ["em_plugin", "provenance"])
def test_core_never_imports_the_demo(package: str) -> None:
    # The demo lives in integrations/demo/ (the [demo] extra), never inside the core.
    assert not (ROOT / package / "demo").exists()
    violations = _violations(package, DEMO_PREFIXES)
    assert not violations, "the core imports the demo:\n" + "\n".join(violations)


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_never_imports_upward(package: str) -> None:
    files = _python_files(package)
    assert files, f"no Python files found under {package}/"
    violations = []
    for path in files:
        rel = path.relative_to(ROOT)
        module = ".".join(rel.with_suffix("").parts)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(rel))
        for line, name in _imported_modules(tree, module):
            if name.split(".")[0] in FORBIDDEN[package]:
                violations.append(f"{rel}:{line}: imports {name}")
    assert not violations, "upward imports:\n" + "\n".join(violations)


def test_scanner_sees_imports_inside_functions() -> None:
    source = "def f():\n    from integrations import x\n    import em_plugin.cli\n"
    names = [name for _, name in _imported_modules(ast.parse(source), "provenance.m")]
    assert names == ["integrations", "em_plugin.cli"]


def test_scanner_resolves_relative_imports() -> None:
    tree = ast.parse("from ..integrations import y\nfrom . import z\n")
    names = [name for _, name in _imported_modules(tree, "em_plugin.sub.m")]
    assert names == ["em_plugin.integrations", "em_plugin.sub"]


# The package order inside em_plugin (docs/architecture.md): a package may import only packages
# earlier in this list. Every import counts, including lazy imports inside functions and imports
# under ``if TYPE_CHECKING:``, since a hidden cycle is still a cycle for a reader.
PACKAGE_ORDER = (
    "errors",
    "_deprecation",
    "types",
    "config",
    "telemetry",
    "capture",
    "embedding",
    "retrieval",
    "state",
    "suggest",
    "lifecycle",
    "session",
    "access",
    "settings",
    "_compat",
    "memory",
    "testing",
    "evaluation",
    "endpoint",
    "cli",
    "__init__",
    "__main__",
)


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph(packages: tuple[str, ...]) -> dict[str, set[str]]:
    """Module -> the project modules it imports (a package's import names its ``__init__``)."""
    modules = {_module_name(p): p for pkg in packages for p in _python_files(pkg)}
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        # Relative imports resolve against the package; a package's __init__ is that package.
        anchor = module + ".__init__" if path.name == "__init__.py" else module
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        targets: set[str] = set()
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom):
                base = _imported_modules(ast.Module(body=[node], type_ignores=[]), anchor)[0][1]
                # ``from pkg import sub`` imports the submodule when one exists.
                names = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                    for a in node.names
                ]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                while name and name not in modules:
                    name = name.rpartition(".")[0]
                # Importing a.b.c first runs the __init__ of a and a.b: those are imports too,
                # except of the packages the importing module itself sits in.
                parent = name
                while parent:
                    if parent != module and not module.startswith(parent + "."):
                        targets.add(parent)
                    parent = parent.rpartition(".")[0]
        graph[module] = {t for t in targets if t in modules}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _order_violations(graph: dict[str, set[str]]) -> dict[tuple[str, str], list[str]]:
    rank = {name: i for i, name in enumerate(PACKAGE_ORDER)}
    found: dict[tuple[str, str], list[str]] = {}
    for module, targets in graph.items():
        if not module.startswith("em_plugin"):
            continue
        source = _package_of(module)
        for target in targets:
            if not target.startswith("em_plugin") or target == "em_plugin":
                continue
            dest = _package_of(target)
            if dest != source and rank[dest] >= rank[source]:
                found.setdefault((source, dest), []).append(f"{module} -> {target}")
    return found


def test_every_em_plugin_package_has_a_place_in_the_order() -> None:
    here = ROOT / "em_plugin"
    packages = {p.stem for p in here.glob("*.py")} | {
        p.parent.name for p in here.glob("*/__init__.py")
    }
    missing = sorted(packages - set(PACKAGE_ORDER))
    assert not missing, f"add these em_plugin packages to PACKAGE_ORDER: {missing}"


def test_em_plugin_packages_import_only_earlier_packages() -> None:
    found = _order_violations(_import_graph(("em_plugin",)))
    assert not found, "imports against the package order:\n" + "\n".join(
        f"{a} -> {b}: {', '.join(sorted(hits))}" for (a, b), hits in sorted(found.items())
    )


def test_no_import_cycles_between_modules() -> None:
    cycles = _cycles(_import_graph(("provenance", "em_plugin", "integrations")))
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_cycle_detector_sees_a_lazy_cycle() -> None:
    graph = {
        "em_plugin.state.a": {"em_plugin.suggest.b"},
        "em_plugin.suggest.b": {"em_plugin.state.a"},
    }
    assert _cycles(graph) == [["em_plugin.state.a", "em_plugin.suggest.b"]]
    assert set(_order_violations(graph)) == {("state", "suggest")}
