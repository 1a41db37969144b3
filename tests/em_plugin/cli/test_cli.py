"""The ``em-plugin`` command line, driven through click's CliRunner against real disk stores."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result
from sample_store import copy_store

from em_plugin.cli import cli
from provenance.errors import QueryError
from provenance.model import CallStep, FailedCall, InstructionStep, Workflow
from provenance.stores import open_store
from provenance.workflow_json import dumps_workflow
from tests.data_files import benchmark_file
from tests.processes import close_pipes

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = Path(__file__).parents[1] / "data" / "pfas_sample.jsonl"

SAMPLE_IDS = [f"sample/pfas-{i}" for i in range(1, 8)]


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # No test may touch ~/.em-plugin or load the real embedding model.
    monkeypatch.setenv("EM_PLUGIN_STORE", str(tmp_path / "store"))
    monkeypatch.setenv("EM_PLUGIN_EMBEDDER", "fake")


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    """Where a test's disk store goes (also ``$EM_PLUGIN_STORE``); not created yet."""
    return tmp_path / "store"


def run(*args: Any, ok: bool = True) -> Result:
    """Invoke the CLI; with ``ok`` assert success and show stderr when it fails."""
    result = CliRunner().invoke(cli, [str(a) for a in args])
    if ok:
        assert result.exit_code == 0, f"exit {result.exit_code}\n{result.output}"
    return result


def lines_by_id(text: str) -> dict[str, dict[str, Any]]:
    objects = [json.loads(line) for line in text.splitlines() if line.strip()]
    return {obj["id"]: obj for obj in objects}


@pytest.fixture
def imported(sample_store_template: Path, store_dir: Path) -> Path:
    """A disk store holding the sample (a copy of one import, with its step index)."""
    return copy_store(sample_store_template, store_dir)


# ------------------------------------------------------------------------------------ help


COMMANDS = sorted(
    ["import", "export", "query", "show", "stats", "delete", "validate", "reindex", "suggest"]
    + ["eval", "bench", "list", "serve", "outcome"]
    + ["history", "retire", "restore", "procedures", "sessions"]
)


def test_the_group_has_exactly_the_documented_commands() -> None:
    # ``demo``, ``ui`` and ``mcp`` come from packages above em_plugin through the
    # em_plugin.commands entry point (tested in tests/integrations/test_cli_demo.py,
    # tests/integrations/panel/ and tests/integrations/mcp/).
    assert set(cli.commands) - {"demo", "ui", "mcp"} == set(COMMANDS)


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_has_help(name: str) -> None:
    result = run(name, "--help")
    assert result.output.startswith(f"Usage: cli {name}")
    command = cli.commands[name]
    assert command.help and command.help.split("\n")[0] in " ".join(result.output.split())
    assert "Example:" in result.output and f"em-plugin {name}" in result.output


def test_group_help_lists_commands_and_the_embedder_option() -> None:
    result = run("--help")
    # Issue 24: custom embedders are named on the command line (module:function).
    assert "--embedder" in result.output and "module:function" in result.output
    for name in COMMANDS:
        assert name in result.output


# ----------------------------------------------------------------------------- import/export


def test_import_then_export_reproduces_every_line(store_dir: Path) -> None:
    result = run("import", SAMPLE, "--store", store_dir)
    assert result.stdout.startswith("imported 7 workflows into ")
    exported = run("export", "--store", store_dir).stdout
    assert lines_by_id(exported) == lines_by_id(SAMPLE.read_text(encoding="utf-8"))


def test_import_export_round_trip_on_tau2_airline(store_dir: Path) -> None:
    airline = benchmark_file("tau2_airline.jsonl")
    run("import", airline, "--store", store_dir)
    original = lines_by_id(airline.read_text(encoding="utf-8"))
    exported = lines_by_id(run("export", "--store", store_dir).stdout)
    assert len(original) == 50
    assert exported == original


def test_hostile_strings_round_trip_byte_identical(store_dir: Path, tmp_path: Path) -> None:
    hostile = [
        '"; DROP ALL ; SELECT * WHERE { ?s ?p ?o } #',
        "line1\nline2\r\n\ttab",
        "}} GRAPH <urn:x> { <a> <b> <c> } '''",
        "naïve café — 日本語 🚀 \u2028 sep",
        "\\u0022 backslash \\",
        "<http://example.org/not-an-iri>",
        "[bold red]rich markup[/]",
    ]
    workflow = Workflow(
        id="hostile/<x> \"y\" 'z' #1",
        title=hostile[0],
        scope='tenant "a" {b}',
        steps=(
            InstructionStep(
                hostile[1],
                steps=tuple(
                    CallStep(name=f"tool{i}", args={"q": text, text: [text, 1.5, None]})
                    for i, text in enumerate(hostile)
                ),
            ),
            InstructionStep(hostile[3]),
        ),
        failed=(FailedCall(CallStep(name="tool0", args={"x": hostile[2]}), hostile[4], "0"),),
        extra={"note": hostile[5]},
    )
    source = tmp_path / "hostile.jsonl"
    line = dumps_workflow(workflow) + "\n"
    source.write_bytes(line.encode("utf-8"))
    run("import", source, "--store", store_dir)
    exported = run("export", "--store", store_dir, "--scope", workflow.scope).stdout_bytes
    assert exported == line.encode("utf-8")
    shown = run("show", workflow.id, "--store", store_dir).stdout
    assert "[bold red]rich markup[/]" in shown  # printed as text, not parsed as markup


def test_malformed_file_imports_nothing_and_names_file_and_line(
    store_dir: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.jsonl"
    good = SAMPLE.read_text(encoding="utf-8").splitlines()
    bad.write_text(
        "\n".join([good[0], good[1], '{"id": "x", "steps": [{"kind": "nope"}]}', good[2]])
    )
    result = run("import", bad, "--store", store_dir, ok=False)
    assert result.exit_code != 0
    assert result.stderr.strip() == (
        f"error: {bad}:3: steps[0].kind must be one of instruction, call; got 'nope'"
    )
    assert "Traceback" not in result.output
    with open_store(store_dir) as opened:
        assert len(opened) == 0


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("{not json", "invalid JSON"),
        ('{"steps": []}', "a workflow needs 'id'"),
        ('{"id": "a", "steps": [{"kind": "call"}]}', "steps[0]: a call needs 'name'"),
        ('{"id": "sample/pfas-1", "steps": []}', "duplicate workflow id 'sample/pfas-1'"),
    ],
)
def test_malformed_line_reasons(store_dir: Path, tmp_path: Path, line: str, reason: str) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(SAMPLE.read_text(encoding="utf-8") + line + "\n", encoding="utf-8")
    result = run("import", bad, "--store", store_dir, ok=False)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: {bad}:8: {reason}")
    assert len(result.stderr.strip().splitlines()) == 1


def test_skip_invalid_imports_the_valid_lines_and_lists_the_rest(
    store_dir: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "mixed.jsonl"
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()
    lines.insert(2, "{broken")
    lines.append('{"id": "sample/pfas-1", "steps": []}')
    bad.write_bytes(("\n".join(lines) + "\n").encode() + b'{"id": "\xff", "steps": []}\n')
    result = run("import", bad, "--store", store_dir, "--skip-invalid")
    skipped = result.stderr.strip().splitlines()
    assert [s.split(": ")[0] for s in skipped] == [
        f"skipped {bad}:3",
        f"skipped {bad}:9",
        f"skipped {bad}:10",
    ]
    assert "duplicate workflow id 'sample/pfas-1' (first on line 1)" in skipped[1]
    assert "not UTF-8" in skipped[2]
    assert "imported 7 workflows, skipped 3" in result.stdout
    with open_store(store_dir, read_only=True) as opened:
        assert opened.ids() == SAMPLE_IDS


def test_import_scope_and_export_scope(store_dir: Path) -> None:
    run("import", SAMPLE, "--store", store_dir, "--scope", "team-a")
    typo = run("export", "--store", store_dir, "--scope", "other", ok=False)
    assert typo.exit_code == 3 and "existing scopes: 'team-a'" in typo.stderr
    exported = lines_by_id(run("export", "--store", store_dir, "--scope", "team-a").stdout)
    assert sorted(exported) == SAMPLE_IDS
    assert {obj["scope"] for obj in exported.values()} == {"team-a"}


def test_import_validate_runs_shacl(store_dir: Path, tmp_path: Path) -> None:
    small = tmp_path / "two.jsonl"
    small.write_text("\n".join(SAMPLE.read_text(encoding="utf-8").splitlines()[:2]) + "\n")
    result = run("import", small, "--store", store_dir, "--validate")
    assert "imported 2 workflows" in result.stdout


@pytest.mark.parametrize("fmt", ["ttl", "trig", "jsonld", "provjson", "provn"])
def test_export_rdf_and_prov_formats(imported: Path, tmp_path: Path, fmt: str) -> None:
    target = tmp_path / f"out.{fmt}"
    run("export", "--store", imported, "--format", fmt, "-o", target)
    text = target.read_text(encoding="utf-8")
    assert "pfas-1" in text and "product_extractor" in text
    if fmt in ("jsonld", "provjson"):
        json.loads(text)


# ------------------------------------------------------------------------------------- query


def test_query_named_with_bind_in_every_format(imported: Path) -> None:
    args = ["query", "workflows-using", "--store", imported, "--bind", "tool=hazard_assessment"]
    records = json.loads(run(*args, "--format", "json").stdout)
    assert {r["workflow"] for r in records} == {f"sample/pfas-{i}" for i in (1, 3, 4, 6, 7)}
    assert all(r["tool"] == "hazard_assessment" for r in records)
    assert all(isinstance(r["calls"], int) for r in records)
    assert list(records[0]) == ["tool", "workflow", "title", "calls"]
    rows = list(csv.DictReader(io.StringIO(run(*args, "--format", "csv").stdout)))
    assert [r["workflow"] for r in rows] == [r["workflow"] for r in records]
    assert [int(r["calls"]) for r in rows] == [r["calls"] for r in records]
    table = run(*args).stdout
    assert "sample/pfas-7" in table and "5 rows" in table


def test_query_from_file_and_sparql_text(imported: Path, tmp_path: Path) -> None:
    text = textwrap.dedent(
        """\
        PREFIX wf: <https://w3id.org/em-plugin/ns#>
        SELECT DISTINCT ?name WHERE { ?t wf:toolName ?name } ORDER BY ?name
        """
    )
    rq = tmp_path / "tools.rq"
    rq.write_text(text)
    from_file = json.loads(run("query", rq, "--store", imported, "--format", "json").stdout)
    names = [r["name"] for r in from_file]
    assert names[:3] == ["hazard_assessment", "pfas_classifier", "product_extractor"]
    bound = run(
        "query", "--sparql", text, "--bind", "name=pfas_classifier", "--store", imported,
        "--format", "csv",
    ).stdout  # fmt: skip
    assert bound.splitlines() == ["name", "pfas_classifier"]


def test_query_bind_iri_and_unknown_parameter(imported: Path) -> None:
    text = "SELECT ?g WHERE { GRAPH ?g { ?s ?p ?o } } LIMIT 1"
    iri = "https://w3id.org/em-plugin/id/graph/nothing-here"
    out = run("query", "--sparql", text, "--bind", f"g=<{iri}>", "--store", imported,
              "--format", "json").stdout  # fmt: skip
    assert json.loads(out) == []
    bad = run("query", "tool-usage", "--bind", "tol=x", "--store", imported, ok=False)
    assert bad.exit_code == 2  # a bad value (docs/cli.md)
    assert bad.stderr.startswith("error: query 'tool-usage' has no parameter 'tol'; valid: tool")
    bad = run("query", "tool-usage", "--bind", "novalue", "--store", imported, ok=False)
    assert "--bind expects NAME=VALUE" in bad.stderr


def test_query_scope_confines_the_dataset(store_dir: Path, tmp_path: Path) -> None:
    run("import", SAMPLE, "--store", store_dir, "--scope", "team-a")
    other = tmp_path / "other.jsonl"
    other.write_text('{"id": "o1", "steps": [{"kind": "call", "name": "zz_tool"}]}\n')
    run("import", other, "--store", store_dir, "--scope", "team-b")
    query = ["query", "workflows", "--store", store_dir, "--format", "json"]
    assert {r["workflow"] for r in json.loads(run(*query, "--scope", "team-b").stdout)} == {"o1"}
    assert len(json.loads(run(*query).stdout)) == 8


def test_query_list(imported: Path) -> None:
    listed = json.loads(run("query", "--list", "--format", "json").stdout)
    by_name = {q["name"]: q for q in listed}
    assert {"tool-usage", "tool-pairs", "workflows"} <= set(by_name)
    assert by_name["tool-pairs"]["columns"] == ["tool", "next_tool", "count"]
    assert by_name["tool-pairs"]["parameters"][0].startswith("tool (literal): ")
    table = run("query", "--list").stdout
    assert "tool-pairs" in table and "--bind tool (literal)" in table


def test_bind_values_become_literals_or_iris() -> None:
    from rdflib import Literal, URIRef

    from em_plugin.cli.io import parse_binding
    from provenance.queries import load_query

    assert parse_binding("tool=3") == ("tool", Literal("3"))
    assert parse_binding("?tool=a=b") == ("tool", Literal("a=b"))
    assert parse_binding("g=<urn:x:1>") == ("g", URIRef("urn:x:1"))
    lineage = load_query("lineage")  # documents `value (iri)`
    assert parse_binding("value=urn:x:out", lineage) == ("value", URIRef("urn:x:out"))
    assert parse_binding("tool=<urn:t>", lineage) == ("tool", URIRef("urn:t"))
    for bad in ("novalue", "=x", "a b=c", "g=<has space>"):
        with pytest.raises(QueryError):
            parse_binding(bad)


def test_query_needs_exactly_one_source(imported: Path) -> None:
    result = run("query", "--store", imported, ok=False)
    assert result.exit_code == 2 and "exactly one" in result.stderr


# ---------------------------------------------------------------------- show / stats / delete


def test_show_prints_the_tree_with_failed_calls(imported: Path) -> None:
    # Lines are cut to the terminal's width: give the tree room for the agents and errors.
    wide = CliRunner().invoke(
        cli, ["show", "sample/pfas-5", "--store", str(imported)], env={"COLUMNS": "240"}
    )
    out = wide.stdout
    assert out.startswith("sample/pfas-5  Cleaner SDS screened through the coordinator")
    lines = out.splitlines()
    handoff = next(i for i, line in enumerate(lines) if "transfer_to_product_extractor" in line)
    nested = next(i for i, line in enumerate(lines) if "call product_extractor(" in line)
    assert nested > handoff
    indent = len(lines[nested]) - len(lines[nested].lstrip("│ ├└─"))
    assert indent > len(lines[handoff]) - len(lines[handoff].lstrip("│ ├└─"))
    assert "agent=chemist" in out
    failed = next(line for line in lines if "FAILED" in line)
    assert "call product_extractor" in failed
    assert "file not found" in out


def test_show_missing_id_is_one_line(imported: Path) -> None:
    result = run("show", "nope", "--store", imported, ok=False)
    assert result.exit_code == 3
    assert result.stderr == "error: no workflow 'nope'\n"


def test_stats(imported: Path) -> None:
    data = json.loads(run("stats", "--store", imported, "--json").stdout)
    assert data["workflows"] == 7 and data["scopes"] == {"default": 7}
    assert data["tools"] == 5 and data["triples"] > 0
    table = run("stats", "--store", imported).stdout
    assert "scopes.default" in table


def test_delete_by_id_and_by_scope(store_dir: Path, tmp_path: Path) -> None:
    run("import", SAMPLE, "--store", store_dir, "--scope", "team-a")
    other = tmp_path / "other.jsonl"
    other.write_text('{"id": "o1", "steps": [{"kind": "call", "name": "zz_tool"}]}\n')
    run("import", other, "--store", store_dir)
    assert run("delete", "sample/pfas-2", "--store", store_dir, "--yes").stdout.startswith(
        "deleted sample/pfas-2 (scope 'team-a')"
    )
    again = run("delete", "sample/pfas-2", "--store", store_dir, "--yes", ok=False)
    assert again.exit_code == 3 and "no workflow 'sample/pfas-2'" in again.stderr
    out = run("delete", "--scope", "team-a", "--store", store_dir, "--yes").stdout
    assert out.strip() == "deleted 6 workflows of scope 'team-a'"
    assert sorted(lines_by_id(run("export", "--store", store_dir).stdout)) == ["o1"]
    neither = run("delete", "--store", store_dir, ok=False)
    assert neither.exit_code == 2 and "give an ID, --scope, or both" in neither.stderr
    wrong_scope = run("delete", "o1", "--scope", "x", "--store", store_dir, "--yes", ok=False)
    assert wrong_scope.exit_code == 3 and "scope 'x' has no workflows" in wrong_scope.stderr


def test_ids_are_per_scope_show_and_delete_take_scope(store_dir: Path, tmp_path: Path) -> None:
    twin = tmp_path / "twin.jsonl"
    twin.write_text('{"id": "t1", "steps": [{"kind": "call", "name": "zz_tool"}]}\n')
    run("import", twin, "--store", store_dir, "--scope", "team-a")
    run("import", twin, "--store", store_dir, "--scope", "team-b")

    ambiguous = run("delete", "t1", "--store", store_dir, "--yes", ok=False)
    unscoped = run("show", "t1", "--store", store_dir, ok=False)
    shown = run("show", "t1", "--scope", "team-b", "--store", store_dir, "--format", "json")
    deleted = run("delete", "t1", "--scope", "team-a", "--store", store_dir, "--yes")

    assert ambiguous.exit_code == 2 and "several scopes ('team-a', 'team-b')" in ambiguous.stderr
    assert unscoped.exit_code == 3 and "add --scope to choose one" in unscoped.stderr
    assert json.loads(shown.stdout)["scope"] == "team-b"
    assert deleted.stdout.strip() == "deleted t1 (scope 'team-a')"
    left = json.loads(run("list", "--store", store_dir, "--format", "json").stdout)
    assert [(r["id"], r["scope"]) for r in left] == [("t1", "team-b")]


# ------------------------------------------------------------------- validate / reindex / suggest


def test_validate_store(store_dir: Path, tmp_path: Path) -> None:
    small = tmp_path / "two.jsonl"
    small.write_text("\n".join(SAMPLE.read_text(encoding="utf-8").splitlines()[:2]) + "\n")
    run("import", small, "--store", store_dir)
    assert run("validate", "--store", store_dir).stdout.strip() == "2 workflows valid"


def test_validate_reports_violations_with_exit_1(store_dir: Path, tmp_path: Path) -> None:
    small = tmp_path / "three.jsonl"
    small.write_text("\n".join(SAMPLE.read_text(encoding="utf-8").splitlines()[2:5]) + "\n")
    run("import", small, "--store", store_dir)
    # Corrupt one stored graph: a second index on a step breaks the "exactly one" shape.
    from provenance.mapping import graph_iri

    with open_store(store_dir) as opened:
        graph = opened.backend.triples(graph_iri("sample/pfas-4"))
        from rdflib import Literal, URIRef

        step = next(s for s, p, _ in graph if str(p).endswith("#index"))
        index = URIRef("https://w3id.org/em-plugin/ns#index")
        triples = [*graph, (step, index, Literal(99))]
        opened.backend.replace_graphs([(graph_iri("sample/pfas-4"), triples)])
    result = run("validate", "--store", store_dir, "--scope", "default", ok=False)
    assert result.exit_code == 1
    assert result.stdout.startswith("sample/pfas-4: ")
    assert "violation(s) in 3 workflow(s)" in result.stderr


def test_reindex_rebuilds_from_the_store(imported: Path) -> None:
    steps = imported.with_name(imported.name + ".em-index") / "steps"
    assert (steps / "meta.json").is_file()
    shutil.rmtree(steps)
    out = run("reindex", "--store", imported).stdout
    assert out.startswith(f"indexed 7 workflows into {steps} in ")
    meta = json.loads((steps / "meta.json").read_text(encoding="utf-8"))
    assert "fake" in json.dumps(meta)  # built with the configured embedder


def test_suggest_json_keys(imported: Path, tmp_path: Path) -> None:
    current = tmp_path / "current.json"
    current.write_text(json.dumps({
        "id": "now",
        "steps": [{"kind": "instruction",
                   "text": "Extract all ingredients from the SDS file samples/other.txt",
                   "steps": [{"kind": "call", "name": "product_extractor",
                              "args": {"file": "samples/other.txt"}}]}],
    }))  # fmt: skip
    out = json.loads(run("suggest", current, "--store", imported, "--json").stdout)
    assert 1 <= len(out) <= 3
    assert set(out[0]) >= {"tool", "text", "args", "score", "source", "evidence"}
    assert out[0]["tool"] == "pfas_classifier"
    assert set(out[0]["evidence"][0]) == {"workflow_id", "position", "score"}
    table = run("suggest", current, "--store", imported, "--limit", "1").stdout
    assert table.split()[:4] == ["rank", "source", "tool", "text"]
    assert "pfas_classifier" in table
    one_line = tmp_path / "current.jsonl"
    one_line.write_text(current.read_text() + "\n")
    assert json.loads(run("suggest", one_line, "--store", imported, "--json").stdout) == out


def test_suggest_rejects_a_file_with_two_workflows(imported: Path) -> None:
    result = run("suggest", SAMPLE, "--store", imported, ok=False)
    assert result.exit_code == 1
    assert result.stderr.strip() == f"error: {SAMPLE}: expected one workflow, found 7"


# ------------------------------------------------------------------------------ eval / bench


def test_eval_json_keys(tmp_path: Path) -> None:
    lines = benchmark_file("tau2_airline.jsonl").read_text(encoding="utf-8").splitlines()
    train = [line for line in lines if '"split": "train"' in line][:12]
    test = [line for line in lines if '"split": "test"' in line][:6]
    small = tmp_path / "slice.jsonl"
    small.write_text("\n".join(train + test) + "\n")
    report = json.loads(run("eval", small, "--json", "--threshold", "0.6").stdout)
    assert {"targets", "hit@1", "hit@3", "mrr", "ingest_seconds", "suggest_ms_p50",
            "suggest_ms_p95", "baselines", "threshold"} <= set(report)  # fmt: skip
    assert report["train_workflows"] == 12 and report["test_workflows"] == 6
    assert report["threshold"] == 0.6 and report["targets"] > 0
    assert 0.0 <= report["hit@1"] <= report["hit@3"] <= 1.0
    ablation = json.loads(run("eval", small, "--json", "--no-text").stdout)
    assert ablation["use_text"] is False and ablation["targets"] == report["targets"]
    assert not (tmp_path / "store").exists()  # eval defaults to an in-memory store


def test_bench_json_keys() -> None:
    report = json.loads(run("bench", "--workflows", "20", "--queries", "3", "--json").stdout)
    assert {"workflows", "ingest_seconds", "fast_ms_p50", "fast_ms_p95", "reference_ms_p50",
            "speedup", "identical"} <= set(report)  # fmt: skip
    assert report["workflows"] == 20 and report["queries"] == 3
    assert report["identical"] is True


def test_bench_on_a_disk_store_without_the_baseline(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    args = ["bench", "--workflows", "20", "--queries", "2", "--store", store, "--no-baseline"]
    report = json.loads(run(*args, "--json").stdout)
    assert "baseline" not in report and report["disk_bytes_per_leaf"] > 0
    assert report["cold_open_seconds"] >= 0 and report["store"] == store


@pytest.mark.integration
def test_remote_store_through_update_url(oxigraph_server: Any) -> None:
    oxigraph_server.wipe()
    remote = ["--store", oxigraph_server.query_url, "--update-url", oxigraph_server.update_url]
    run("import", SAMPLE, *remote)
    assert lines_by_id(run("export", *remote).stdout) == lines_by_id(SAMPLE.read_text("utf-8"))
    usage = json.loads(run("query", "tool-usage", *remote, "--format", "json").stdout)
    assert {r["tool"] for r in usage} >= {"product_extractor", "pfas_classifier"}
    run("delete", "--scope", "default", "--yes", *remote)
    assert json.loads(run("stats", *remote, "--json").stdout)["workflows"] == 0


# ---------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("args", "message", "code"),
    [
        (["import", "/nonexistent/file.jsonl"], "error: Invalid value for 'FILE': File '", 2),
        (["query", "--sparql", "SELEC nonsense"], "error: ", 1),
        (["query", "no-such-query"], "error: unknown query 'no-such-query'; valid: ", 2),
        (["stats", "--store", "gopher://x"], "error: unknown store 'gopher://x'", 1),
        (["show", "x", "--update-url", "http://127.0.0.1:9/u"], "error: update_url applies", 1),
    ],
)
def test_errors_are_one_line_without_traceback(
    imported: Path, args: list[str], message: str, code: int
) -> None:
    result = run(*args, ok=False)
    assert result.exit_code == code
    assert "Traceback" not in result.output
    assert result.stderr.startswith(message)
    assert len(result.stderr.strip().splitlines()) == 1


def test_unexpected_errors_are_one_line_and_debug_shows_them(
    monkeypatch: pytest.MonkeyPatch, imported: Path
) -> None:
    from provenance.stores.workflow_store import WorkflowStore

    def broken(self: Any) -> Any:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(WorkflowStore, "stats", broken)
    result = run("stats", ok=False)
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        "error: unexpected RuntimeError: boom second line (rerun with --debug for the traceback)"
    )
    debug = CliRunner().invoke(cli, ["--debug", "stats"])
    assert isinstance(debug.exception, RuntimeError)


def test_read_only_query_beside_a_writing_process(imported: Path) -> None:
    writer = textwrap.dedent(
        f"""
        import sys
        from provenance.stores import open_store
        from provenance.model import CallStep, Workflow
        store = open_store({str(imported)!r})
        store.save(Workflow(id="from-writer", steps=(CallStep(name="writer_tool"),)))
        # Finish RocksDB's background compaction first: pyoxigraph documents a reader beside a
        # compacting writer as undefined behaviour (an SST can vanish under the reader).
        store.backend._live().optimize()
        print("ready", flush=True)
        sys.stdin.readline()
        store.close()
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-c", writer], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True, cwd=ROOT, env=env,
    )  # fmt: skip
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        busy = run("import", SAMPLE, "--store", imported, ok=False)
        assert busy.exit_code == 1 and "Traceback" not in busy.output
        records = json.loads(
            run("query", "workflows", "--store", imported, "--format", "json").stdout
        )
        assert {r["workflow"] for r in records} == {*SAMPLE_IDS, "from-writer"}
        assert "sample/pfas-3" in run("show", "sample/pfas-3", "--store", imported).stdout
    finally:
        assert process.stdin is not None
        process.stdin.write("\n")
        process.stdin.flush()
        process.wait(timeout=30)
        close_pipes(process)
    assert process.returncode == 0


def test_python_dash_m_runs_the_cli(imported: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "em_plugin", "stats", "--json", "--store", str(imported)],
        capture_output=True, text=True, cwd=ROOT, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["workflows"] == 7


def test_main_is_the_group() -> None:
    from em_plugin import cli as module

    assert isinstance(module.cli, click.Group)
    with pytest.raises(SystemExit) as exit_info:
        module.main(["--version"])
    assert exit_info.value.code == 0
