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
