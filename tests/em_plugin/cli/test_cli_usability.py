"""What a newcomer meets at the command line: progress, formats, errors, safety, ad-hoc SPARQL.

Every test drives ``em-plugin`` through click's CliRunner against real disk stores.
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from sample_store import copy_store

import em_plugin.cli.progress as progress_module
import em_plugin.cli.store_commands as store_commands
from em_plugin.cli import cli
from provenance.stores import open_store
from provenance.workflow_json import read_jsonl

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "tests" / "em_plugin" / "data" / "pfas_sample.jsonl"
TELECOM = ROOT / "notebooks" / "data" / "tau2_telecom.jsonl"
AIRLINE = ROOT / "notebooks" / "data" / "tau2_airline.jsonl"
TOOL_COUNT = (
    "SELECT (COUNT(*) AS ?n) WHERE {{ {open}?call wf:tool ?tool . "
    '?tool wf:toolName "reset_apn_settings" {close}}}'
)


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("EM_PLUGIN_STORE", str(tmp_path / "default-store"))
    monkeypatch.setenv("EM_PLUGIN_EMBEDDER", "fake")


def run(*args: Any, ok: bool = True, input: str | None = None) -> Result:
    """Invoke the CLI; with ``ok`` assert success."""
    result = CliRunner().invoke(cli, [str(a) for a in args], input=input, terminal_width=80)
    if ok:
        assert result.exit_code == 0, f"exit {result.exit_code}\n{result.output}"
    return result


@pytest.fixture
def store(sample_store_template: Path, tmp_path: Path) -> Path:
    """A disk store (and its index) holding the 7 sample workflows in scope 'default'."""
    return copy_store(sample_store_template, tmp_path / "store")


@pytest.fixture
def current(tmp_path: Path) -> Path:
    path = tmp_path / "current.json"
    path.write_text(
        json.dumps(
            {
                "id": "now",
                "steps": [
                    {
                        "kind": "instruction",
                        "text": "Extract all ingredients from the SDS file samples/other.txt",
                        "steps": [
                            {
                                "kind": "call",
                                "name": "product_extractor",
                                "args": {"file": "samples/other.txt"},
                            }
                        ],
                    }
                ],
            },
            indent=2,
        )
    )
    return path


# ------------------------------------------------------------------------------ progress (8)


@pytest.mark.parametrize(
    ("args", "label"),
    [
        (("validate",), "validate"),
        (("reindex",), "reindex"),
        (("import", SAMPLE), "import"),
    ],
)
def test_progress_bar_on_a_terminal_only(
    store: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[Any, ...], label: str
) -> None:
    # validate may report SHACL violations (exit 1): the bar is shown either way.
    quiet = run(*args, "--store", store, ok=args[0] != "validate")
    assert "\x1b[" not in quiet.stderr  # not a terminal: no bar
    monkeypatch.setattr(progress_module, "stderr_is_terminal", lambda: True)

    shown = run(*args, "--store", store, ok=args[0] != "validate")

    assert label in shown.stderr and "\x1b[" in shown.stderr  # a live rich bar
    assert shown.stdout.split()[:2] == quiet.stdout.split()[:2]  # the result line is unchanged


def test_bench_and_eval_show_progress_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(progress_module, "stderr_is_terminal", lambda: True)
    import em_plugin.cli.engine_commands as engine_commands

    monkeypatch.setattr(engine_commands, "stderr_is_terminal", lambda: True)
    bench = run("bench", "--workflows", "30", "--queries", "3")
    assert "bench" in bench.stderr and "\x1b[" in bench.stderr
    # eval draws its bar itself (em_plugin.evaluation); the CLI turns it on at a terminal only.
    from em_plugin.evaluation import protocol

    asked: list[Any] = []
    real = protocol.evaluate

    def evaluate(*args: Any, **kwargs: Any) -> Any:
        asked.append(kwargs["progress"])
        return real(*args, **kwargs)

    monkeypatch.setattr(protocol, "evaluate", evaluate)
    run("eval", AIRLINE)
    monkeypatch.setattr(engine_commands, "stderr_is_terminal", lambda: False)
    run("eval", AIRLINE)
    assert asked == [True, False]


# ------------------------------------------------------------------------ list and tables (9)


def test_list_with_scope_and_limit(store: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.jsonl"
    other.write_text('{"id": "o1", "title": "other", "steps": [{"kind": "call", "name": "x"}]}\n')
    run("import", other, "--store", store, "--scope", "team-b")

    everything = json.loads(run("list", "--store", store, "--format", "json").stdout)
    limited = run("list", "--store", store, "--limit", "3").stdout
    team_b = json.loads(
        run("list", "--store", store, "--scope", "team-b", "--format", "json").stdout
    )

    assert [r["id"] for r in everything] == sorted(r["id"] for r in everything)
    assert len(everything) == 8 and set(everything[0]) == {"id", "scope", "steps", "calls", "title"}
    assert "3 of 8 workflows (--limit 0 lists all)" in limited
    assert team_b == [{"id": "o1", "scope": "team-b", "steps": 1, "calls": 1, "title": "other"}]


def test_tables_fit_80_columns_and_wrap_prose_instead_of_cutting(store: Path) -> None:
    out = run("query", "workflows", "--store", store).stdout
    lines = out.rstrip("\n").splitlines()

    assert all(len(line) <= 80 for line in lines), out
    assert sum("sample/pfas-" in line for line in lines) == 7  # ids whole, once per row
    assert "…" not in out  # long titles wrap at their words, nothing is cut
    header = next(line for line in lines if line.strip())
    assert header.split()[:2] == ["workflow", "id"] or "workflow" in header


# ------------------------------------------------------------------------------ formats (10)


def _parse(fmt: str, text: str) -> Any:
    if fmt == "json":
        return json.loads(text)
    if fmt == "jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    if fmt == "csv":
        return list(csv.DictReader(io.StringIO(text)))
    return text


@pytest.mark.parametrize("fmt", ["table", "json", "jsonl", "csv"])
@pytest.mark.parametrize(
    "args",
    [
        ("list",),
        ("query", "tool-usage"),
        ("query", "--sparql", "SELECT ?id WHERE { ?w dcterms:identifier ?id }"),
        ("stats",),
        ("suggest", "{current}"),
    ],
    ids=["list", "query-named", "query-sparql", "stats", "suggest"],
)
def test_every_listing_command_takes_every_format(
    store: Path, current: Path, args: tuple[str, ...], fmt: str
) -> None:
    argv = [current if a == "{current}" else a for a in args]
    out = run(*argv, "--store", store, "--format", fmt).stdout
    parsed = _parse(fmt, out)
    assert parsed, out
    if fmt in ("json", "jsonl", "csv") and isinstance(parsed, list):
        assert all(isinstance(row, dict) for row in parsed)


@pytest.mark.parametrize("fmt", ["table", "json", "jsonl", "csv"])
def test_eval_and_bench_take_every_format(fmt: str) -> None:
    evaluation = _parse(fmt, run("eval", AIRLINE, "--format", fmt).stdout)
    bench = _parse(fmt, run("bench", "--workflows", "20", "--queries", "2", "--format", fmt).stdout)
    if fmt == "json":
        assert evaluation["targets"] > 0 and bench["workflows"] == 20
    elif fmt == "csv":
        assert [row["method"] for row in evaluation][0] == "episodic memory"
        assert {"key", "value"} <= set(bench[0])
    assert evaluation and bench


def test_eval_peers_are_opt_in_and_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    from em_plugin.evaluation import protocol

    asked: list[Any] = []
    monkeypatch.setattr(protocol, "evaluate", lambda *a, **k: asked.append(k["peers"]) or {})
    run("eval", AIRLINE, "--format", "json")
    run("eval", AIRLINE, "--peers", "transformer,lstm", "--format", "json")
    run("eval", AIRLINE, "--no-lstm", "--format", "json")  # old scripts keep working
    assert asked == [(), ("lstm", "transformer"), ()]
    bad = run("eval", AIRLINE, "--peers", "gru", ok=False)
    assert bad.exit_code == 2 and "choose from lstm, transformer" in bad.output
    swept = run("eval", AIRLINE, "--sweep", "--peers", "lstm", ok=False)
    assert swept.exit_code == 2 and "--sweep" in swept.output


def test_json_alias_and_show_formats(store: Path) -> None:
    assert json.loads(run("stats", "--store", store, "--json").stdout)["workflows"] == 7
    shown = json.loads(run("show", "sample/pfas-1", "--store", store, "--format", "json").stdout)
    one_line = run("show", "sample/pfas-1", "--store", store, "--format", "jsonl").stdout
    assert shown["id"] == "sample/pfas-1" and json.loads(one_line) == shown
    assert one_line.count("\n") == 1


def test_eval_table_puts_memory_and_baselines_side_by_side() -> None:
    out = run("eval", AIRLINE).stdout
    rows = {line.split("  ")[0].strip(): line for line in out.splitlines() if "  0." in line}
    assert {"episodic memory", "bigram", "longest suffix", "paper rule"} <= set(rows)
    header = next(line for line in out.splitlines() if "hit@1" in line)
    assert header.split()[:4] == ["method", "hit@1", "hit@3", "mrr"]
    assert "beats bigram and longest suffix" in out


# ------------------------------------------------------------------------------ errors (11)


@pytest.mark.parametrize(
    ("args", "code", "start"),
    [
        (("list", "--nope"), 2, "error: No such option '--nope'."),
        (("eval",), 2, "error: Missing argument 'FILE'."),
        (("show", "nope"), 3, "error: no workflow 'nope'"),
        (("query", "--sparql", "SELECT ?x WHERE { ?x ?y }"), 1, "error: invalid SPARQL: "),
    ],
)
def test_one_error_style_and_documented_exit_codes(
    store: Path, args: tuple[str, ...], code: int, start: str
) -> None:
    result = run(*args, "--store", store, ok=False)
    assert result.exit_code == code
    assert result.stderr.startswith(start) and result.stderr.count("\n") == 1, result.stderr
    assert "Usage:" not in result.output


def test_help_names_no_internal_api_and_lists_exit_codes() -> None:
    assert "to_json" not in run("suggest", "--help").stdout
    assert " ." not in run("eval", "--help").stdout.replace("...", "")
    assert "Exit status: 0 success, 1 failure, 2 bad usage, 3 not found" in run("--help").stdout


def test_invalid_sparql_error_is_short(store: Path) -> None:
    result = run("query", "--sparql", "SELECT ?x WHERE { ?x ?y }", "--store", store, ok=False)
    assert len(result.stderr) < 400 and result.stderr.startswith("error: invalid SPARQL")


# ------------------------------------------------------------------- silent wrong answers (12)


def test_suggest_on_an_empty_scope_names_the_existing_scopes(store: Path, current: Path) -> None:
    result = run("suggest", current, "--store", store, "--scope", "team-z", ok=False)
    assert result.exit_code == 3
    assert result.stderr == ("error: scope 'team-z' has no workflows; existing scopes: 'default'\n")


@pytest.mark.parametrize(
    "args",
    [
        ("suggest", "{current}"),
        ("list",),
        ("query", "workflows"),
        ("show", "x"),
        ("stats",),
        ("export",),
        ("validate",),
        ("delete", "--scope", "x", "--yes"),
    ],
    ids=lambda a: a[0],
)
def test_read_only_uses_never_create_a_store(
    tmp_path: Path, current: Path, args: tuple[str, ...]
) -> None:
    typo = tmp_path / "stroe"
    argv = [current if a == "{current}" else a for a in args]
    result = run(*argv, "--store", typo, ok=False)
    assert result.exit_code == 3
    assert result.stderr.startswith(f"error: no store at {typo} ")
    assert not typo.exists() and not typo.with_name("stroe.em-index").exists()


def test_delete_of_an_unknown_scope_is_an_error(store: Path) -> None:
    result = run("delete", "--scope", "defualt", "--store", store, "--yes", ok=False)
    assert result.exit_code == 3
    assert "scope 'defualt' has no workflows; existing scopes: 'default'" in result.stderr
    assert len(open_store(str(store), read_only=True)) == 7


# ------------------------------------------------------------------------- delete safety (13)


def test_delete_asks_on_a_terminal(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_commands, "_stdin_is_terminal", lambda: True)

    declined = run("delete", "--scope", "default", "--store", store, input="n\n")
    assert "Delete 7 workflows of scope 'default'" in declined.output
    assert "nothing deleted" in declined.stderr and "error" not in declined.output
    with open_store(str(store), read_only=True) as opened:
        assert len(opened) == 7

    accepted = run("delete", "--scope", "default", "--store", store, input="y\n")
    assert "deleted 7 workflows of scope 'default'" in accepted.stdout
    with open_store(str(store), read_only=True) as opened:
        assert len(opened) == 0


def test_delete_needs_yes_without_a_terminal_and_has_a_dry_run(store: Path) -> None:
    refused = run("delete", "--scope", "default", "--store", store, ok=False)
    assert refused.exit_code == 2 and "without --yes" in refused.stderr

    dry = run("delete", "--scope", "default", "--store", store, "--dry-run")
    assert dry.stdout.splitlines()[:1] == ["sample/pfas-1"]
    assert "would delete 7 workflows of scope 'default' (dry run" in dry.stdout
    with open_store(str(store), read_only=True) as opened:
        assert len(opened) == 7


# -------------------------------------------------------------------------- ad-hoc SPARQL (14)


def test_ad_hoc_sparql_has_the_project_prefixes(store: Path) -> None:
    text = "SELECT (COUNT(DISTINCT ?w) AS ?n) WHERE { ?w a pl:Workflow ; dcterms:identifier ?i }"
    out = json.loads(run("query", "--sparql", text, "--store", store, "--format", "json").stdout)
    assert out == [{"n": 7}]
    # A query that declares a prefix itself keeps its own declaration.
    own = "PREFIX wf: <urn:nothing#> SELECT (COUNT(*) AS ?n) WHERE { ?c wf:tool ?t }"
    assert json.loads(run("query", "--sparql", own, "--store", store, "--json").stdout) == [
        {"n": 0}
    ]


def test_union_default_graph_counts_each_triple_once(tmp_path: Path) -> None:
    # The scenario of the report: a count without GRAPH over a real file (τ²-bench telecom).
    # Oxigraph's union default graph repeats the shared tool node once per workflow graph, so
    # the count came out multiplied by the number of workflows that use the tool.
    store = tmp_path / "telecom"
    run("import", TELECOM, "--store", store)
    workflows = read_jsonl(TELECOM)
    using = sum(
        any(getattr(leaf, "name", None) == "reset_apn_settings" for leaf in w.leaves())
        for w in workflows
    )
    without_graph = TOOL_COUNT.format(open="", close="")
    with_graph = TOOL_COUNT.format(open="GRAPH ?g { ", close="} ")

    def count(text: str) -> int:
        out = run("query", "--sparql", text, "--store", store, "--format", "json").stdout
        return int(json.loads(out)[0]["n"])

    truth = count(with_graph)
    assert using == 26 and truth >= using
    assert count(without_graph) == truth
    from provenance.stores.union import with_standard_prefixes

    with open_store(str(store), read_only=True) as opened:
        # The Python API answers as the CLI does; Oxigraph's own union is a cross product.
        assert int(opened.query(with_standard_prefixes(without_graph)).rows[0][0]) == truth
        naive = int(opened.backend.query(with_standard_prefixes(without_graph)).rows[0][0])
    assert naive == truth * using


def test_union_default_graph_leaves_suggestion_records_out(store: Path) -> None:
    from em_plugin.memory import EpisodicMemory
    from em_plugin.suggest.types import Evidence, Suggestion

    count = "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"
    before = json.loads(run("query", "--sparql", count, "--store", store, "--json").stdout)
    with EpisodicMemory(store=str(store), embedder="fake") as memory:
        shown = [
            Suggestion("Classify", tool="pfas_classifier", evidence=(Evidence("sample/pfas-1", 1),))
        ]
        assert memory.record_suggestions("s1", shown) is not None
    after = json.loads(run("query", "--sparql", count, "--store", store, "--json").stdout)
    assert after == before


# --------------------------------------------------------------------------- import .json (15)


def test_import_accepts_pretty_json_one_workflow_or_a_list(tmp_path: Path, current: Path) -> None:
    store = tmp_path / "store"
    listed = tmp_path / "many.json"
    objects = [json.loads(line) for line in SAMPLE.read_text("utf-8").splitlines()[:3]]
    listed.write_text(json.dumps(objects, indent=2))

    one = run("import", current, "--store", store)
    many = run("import", listed, "--store", store)

    assert (
        one.stdout.startswith("imported 1 workflow into") and "imported 3 workflows" in many.stdout
    )
    ids = json.loads(run("list", "--store", store, "--format", "json").stdout)
    assert [r["id"] for r in ids] == ["now", "sample/pfas-1", "sample/pfas-2", "sample/pfas-3"]


def test_import_json_list_locates_the_bad_item(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"id": "a", "steps": []}, {"steps": []}], indent=2))
    result = run("import", bad, "--store", tmp_path / "store", ok=False)
    assert result.exit_code == 1
    assert result.stderr == f"error: {bad}: workflow [1]: a workflow needs 'id'\n"
    assert not (tmp_path / "store").exists() or len(open_store(str(tmp_path / "store"))) == 0


# ----------------------------------------------------------------- python -m, demo extra (16)


def test_python_dash_m_em_plugin_has_the_demo_command() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "em_plugin", "demo", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Usage: em-plugin demo")


def test_demo_without_the_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import integrations.cli

    monkeypatch.setattr(integrations.cli, "_installed", lambda module: module != "rdkit")
    result = run("demo", ok=False)
    assert result.exit_code == 4
    assert result.stderr.startswith("error: the demo needs rdkit: install the demo extra: ")
    assert "pip install -e '.[demo]'" in result.stderr


# ---------------------------------------------------------------------- second writer (17)


def test_a_second_writer_gets_advice_for_the_cli(store: Path) -> None:
    writer = open_store(str(store))
    try:
        blocked = run("import", SAMPLE, "--store", store, ok=False)
        reading = run("stats", "--store", store, "--format", "json")
    finally:
        writer.close()
    assert blocked.exit_code == 1 and "read_only" not in blocked.stderr
    assert "is open for writing in another process" in blocked.stderr
    assert "The read commands (list, query, show, stats, export, validate) work" in blocked.stderr
    assert json.loads(reading.stdout)["workflows"] == 7


def test_eval_sweep_table_fits_80_columns_and_csv_keeps_every_key() -> None:
    table = run("eval", AIRLINE, "--sweep", "--threshold", "0.65").stdout
    lines = table.rstrip("\n").splitlines()
    assert all(len(line) <= 80 for line in lines), table
    header = next(line for line in lines if line.startswith("T "))
    assert header.split() == ["T", "hit@1", "hit@3", "mrr", "paper", "hit@1", "paper", "hit@3",
                              "retrieved"]  # fmt: skip
    assert "…" not in table
    rows = _parse(
        "csv", run("eval", AIRLINE, "--sweep", "--threshold", "0.65", "--format", "csv").stdout
    )
    assert len(rows) == 1 and {"threshold", "paper_hit@1", "retrieval_share"} <= set(rows[0])


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_validate_takes_a_format_and_keeps_its_exit_status(store: Path, fmt: str) -> None:
    result = run("validate", "--store", store, "--format", fmt, ok=False)
    records = _parse(fmt, result.stdout) if result.stdout.strip() else []
    assert all(set(r) == {"workflow", "violation"} for r in records)
    assert result.exit_code == (1 if records else 0)
    assert ("workflows valid" in result.stderr) == (not records)  # the summary is on stderr


# ----------------------------------------------------------------- torch only with the extra


def _without_sentence_transformers(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any, **kwargs: Any) -> Any:
        return None if name == "sentence_transformers" else real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def test_without_the_minilm_extra_the_default_embedder_names_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _without_sentence_transformers(monkeypatch)
    monkeypatch.delenv("EM_PLUGIN_EMBEDDER")

    result = run("import", SAMPLE, "--store", tmp_path / "store", ok=False)

    assert result.exit_code == 4  # docs/cli.md: a missing extra
    assert "needs the 'minilm' extra" in result.stderr and "pip install" in result.stderr
    assert result.stderr.count("\n") == 1


def test_an_own_embedder_needs_no_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    from em_plugin import CallStep, EpisodicMemory, InstructionStep, Workflow
    from em_plugin.errors import ConfigurationError

    _without_sentence_transformers(monkeypatch)
    with pytest.raises(ConfigurationError, match="minilm"):
        EpisodicMemory(store="memory:")

    def bag_of_letters(texts: list[str]) -> np.ndarray:
        return np.array([[t.lower().count(c) + 0.1 for c in "aeiounrst"] for t in texts])

    with EpisodicMemory(store="memory:", embedder=bag_of_letters) as memory:
        extract = InstructionStep("Extract x", (CallStep("product_extractor"),))
        classify = InstructionStep("Classify", (CallStep("pfas_classifier"),))
        memory.save(Workflow(id="past", steps=(extract, classify)))
        found = memory.suggest(Workflow(id="now", steps=(extract,)))
    assert found and found[0].tool == "pfas_classifier"


# ------------------------------------------------------------------------- rough edges (24)


def test_ctrl_c_at_the_prompt_is_an_interruption(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_commands, "_stdin_is_terminal", lambda: True)

    def interrupted(*args: Any, **kwargs: Any) -> bool:
        raise KeyboardInterrupt

    monkeypatch.setattr(store_commands.click, "confirm", interrupted)
    result = run("delete", "--scope", "default", "--store", store, ok=False)
    assert result.exit_code == 130
    assert result.stderr.strip() == "interrupted"
    assert len(open_store(str(store), read_only=True)) == 7


def test_an_empty_directory_is_no_store(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    for command in (["list"], ["query", "workflows"], ["stats"]):
        result = run(*command, "--store", empty, ok=False)
        assert result.exit_code == 3, (command, result.output)
        assert f"no store at {empty}: the directory is empty" in result.stderr


def test_store_memory_without_colon_gets_a_hint(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = run("list", "--store", "memory", ok=False)
    assert result.exit_code == 3
    assert "did you mean 'memory:'" in result.stderr


def test_sparql_errors_point_at_the_text_as_typed(store: Path) -> None:
    bad = run("query", "--sparql", "SELECT * WHERE {\n ?s ?p ?o .\n ?x ?y }", "--store", store,
              ok=False)  # fmt: skip
    assert bad.exit_code == 1
    assert "line 3, column 8: the triple pattern `?x ?y` has no object" in bad.stderr
    first_line = run("query", "--sparql", "SELECT * WHERE { ?s ?p }", "--store", store, ok=False)
    assert "line 1, column 24: the triple pattern `?s ?p` has no object" in first_line.stderr
    unknown = run("query", "--sparql", "SELECT * WHERE { ?s foo:bar ?o }", "--store", store,
                  ok=False)  # fmt: skip
    assert "unknown prefix foo:" in unknown.stderr and "declared for you: prov:" in unknown.stderr
    assert "u{" not in unknown.stderr and len(unknown.stderr) < 400


def test_workflow_steps_at_80_columns_keep_the_text_readable(store: Path) -> None:
    result = run("query", "workflow-steps", "--bind", "workflow=sample/pfas-1", "--store", store)
    lines = result.stdout.splitlines()
    assert "workflow sample/pfas-1" in lines[0]  # one value for every row: in the title
    assert all(len(line) <= 80 for line in lines)
    body = "\n".join(lines)
    assert any(len(w) >= 15 for w in body.split()), body  # text is not cut to 6 characters


def test_steps_are_counted_alike_by_save_list_and_query(tmp_path: Path) -> None:
    from em_plugin.memory import EpisodicMemory
    from provenance.model import CallStep, InstructionStep, Workflow

    directory = tmp_path / "steps"
    workflow = Workflow(
        id="w",
        steps=(
            InstructionStep("a", (CallStep("x"), CallStep("y"))),
            InstructionStep("b", ()),
            InstructionStep("c", (CallStep("z"),)),
        ),
    )
    with EpisodicMemory(store=str(directory), embedder="fake") as memory:
        saved = memory.save(workflow)
    listed = json.loads(run("list", "--store", directory, "--format", "json").stdout)
    queried = json.loads(run("query", "workflows", "--store", directory, "--format", "json").stdout)
    assert len(saved.leaves()) == listed[0]["steps"] == int(queried[0]["steps"]) == 4
