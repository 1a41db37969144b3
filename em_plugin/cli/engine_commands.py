"""Engine commands of ``em-plugin``: reindex, suggest, eval, bench."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click

from em_plugin.cli import render
from em_plugin.cli.base import (
    check_scope,
    cli,
    embedder_setting,
    open_cli_memory,
    open_cli_store,
    store_options,
    store_path,
)
from em_plugin.cli.output import emit_mapping, emit_records, format_option
from em_plugin.cli.progress import progress_bar, stderr_is_terminal

__all__ = [
    "bench",
    "eval_",
    "reindex",
    "suggest",
]


@cli.command()
@store_options
@click.option(
    "--force",
    is_flag=True,
    help="Rebuild for --embedder even if the store was indexed with another embedder.",
)
@click.pass_context
def reindex(ctx: click.Context, store_spec: str, update_url: str | None, force: bool) -> None:
    """Rebuild the step index from the store alone.

    A disk store keeps its index beside it (STORE.em-index/); use this after copying a store
    or writing to it without em-plugin. The store records the embedder it was indexed with,
    and reindex uses it; to switch the store to another embedder, pass --embedder and --force
    (every app on the store must then use the new one). In-memory and remote stores have no
    persisted index: theirs is rebuilt whenever they are opened.

    \b
    Example:
      em-plugin reindex
      em-plugin --embedder myapp.embeddings:embed reindex --force
    """
    from em_plugin.state.reindex import reindex_store

    start = time.perf_counter()
    with open_cli_store(store_spec, update_url) as store, progress_bar("reindex") as progress:
        embedder = embedder_setting(ctx, None if force else store)
        done = reindex_store(store, embedder=embedder, force=force, progress=progress)
    where = "memory (not persisted for this store)" if done.path is None else done.path
    click.echo(
        f"indexed {done.workflows} workflow{'s' if done.workflows != 1 else ''} into {where}"
        f" in {time.perf_counter() - start:.2f} s"
    )


# --------------------------------------------------------------------------- suggest / eval / bench


@cli.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@store_options
@click.option("--scope", default=None, help="Retrieve from this scope (default: the workflow's).")
@click.option(
    "--limit",
    default=3,
    show_default=True,
    type=click.IntRange(min=1),
    help="How many suggestions.",
)
@format_option()
@click.pass_context
def suggest(
    ctx: click.Context,
    file: Path,
    store_spec: str,
    update_url: str | None,
    scope: str | None,
    limit: int,
    fmt: str,
) -> None:
    """Suggest next steps for the workflow in FILE, from the similar workflows of its scope.

    FILE holds one Workflow JSON object (docs/workflow-json.md), pretty-printed or on one line.
    The table shows each suggestion's rank, source, tool and text; json, jsonl and csv add the
    score and the evidence (which stored workflows and steps it came from).

    \b
    Example:
      em-plugin suggest current.json --limit 5
    """
    from provenance.workflow_files import read_one_workflow

    workflow = read_one_workflow(file)
    scope = scope or workflow.scope
    with open_cli_memory(ctx, store_spec, update_url, scope=scope, must_exist=True) as memory:
        check_scope(memory.store, scope)
        suggestions = memory.suggest(workflow, limit=limit)
    records = [s.to_json() for s in suggestions]
    if fmt == "table":
        ranked = [{"rank": i, **r} for i, r in enumerate(records, start=1)]
        footer = None if records else f"no suggestions from scope {scope!r}"
        emit_records(["rank", "source", "tool", "text"], ranked, fmt, footer=footer)
    else:
        columns = list(dict.fromkeys(k for r in records for k in r)) or ["tool"]
        emit_records(columns, records, fmt)


@cli.command("eval")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--store",
    "store_spec",
    metavar="S",
    default="memory:",
    show_default=True,
    help="Store for the train split (its 'eval' scope is overwritten).",
)
@click.option(
    "--threshold",
    type=click.FloatRange(0.0, 1.0),
    default=None,
    help="Similarity threshold T. [default: 0.65]",
)
@click.option("--sweep", is_flag=True, help="Evaluate at several thresholds (0.5 ... 0.9).")
@click.option(
    "--online",
    is_flag=True,
    help="Also replay the test split in order as sessions, each saved after its turns "
    "(online hit@k = acceptance@k; docs/evaluation.md).",
)
@click.option("--no-text", is_flag=True, help="Ablation: instruction words carry nothing.")
@click.option(
    "--chain",
    type=click.Choice(("continuation", "llm", "paper")),
    default="continuation",
    show_default=True,
    help="Suggestion chain to evaluate.",
)
@click.option(
    "--llm",
    "llm_factory",
    metavar="MODULE:FUNCTION",
    default=None,
    help="Chat model of --chain llm: a function returning one "
    "(e.g. integrations.llm:local_chat_model).",
)
@click.option(
    "--peers",
    metavar="NAMES",
    default="",
    help="Learned peers to train in the run and score beside the memory, comma-separated: "
    "lstm, transformer (default: none; they need torch and take minutes on large files).",
)
@click.option("--no-lstm", is_flag=True, hidden=True, help="Kept for old scripts: no-op.")
@click.option(
    "--fail-fraction",
    type=click.FloatRange(0.0, 1.0),
    default=0.0,
    show_default=True,
    help="Mark this share of the train workflows failed (a fixed seeded sample).",
)
@format_option()
@click.pass_context
def eval_(
    ctx: click.Context,
    file: Path,
    store_spec: str,
    threshold: float | None,
    sweep: bool,
    online: bool,
    no_text: bool,
    chain: str,
    llm_factory: str | None,
    peers: str,
    no_lstm: bool,
    fail_fraction: float,
    fmt: str,
) -> None:
    """Evaluate next-tool suggestions on a file with train/test splits (hit@1, hit@3, MRR).

    The memory holds the file's train split; every call leaf of a test workflow is a target,
    predicted from the steps before it. The bigram and longest-suffix baselines and the paper's
    rule run on the same targets; --peers adds learned models trained in the same run (an LSTM,
    a transformer); the table puts them side by side (docs/evaluation.md).

    \b
    Example:
      em-plugin eval tau2_airline.jsonl --format json
      em-plugin eval tau2_airline.jsonl --peers lstm,transformer
      em-plugin eval tau2_airline.jsonl --online
    """
    from em_plugin.errors import ConfigurationError
    from em_plugin.evaluation import protocol as evaluation
    from em_plugin.evaluation.peers import parse_peers

    del no_lstm  # peers are opt-in: there is no LSTM to skip
    try:
        chosen = parse_peers(peers)
    except ConfigurationError as exc:
        raise click.BadParameter(str(exc), param_hint="--peers") from exc

    options: dict[str, Any] = {
        "store": store_path(store_spec),
        "embedder": embedder_setting(ctx),
        "use_text": not no_text,
        "progress": stderr_is_terminal(),
    }
    if chain != "continuation" or llm_factory is not None:
        options.update(chain=chain, llm=_chat_model(llm_factory) if llm_factory else None)
    if online:
        if sweep or chosen or fail_fraction or chain != "continuation":
            raise click.UsageError(
                "--online runs the continuation chain alone: no --sweep, --peers, "
                "--fail-fraction or --chain"
            )
        from em_plugin.evaluation.online import evaluate_online

        report = evaluate_online(file, threshold=threshold, **options)
        if fmt == "table":
            _print_eval_table(report, file.name)
            rows = [
                {k: f"{v:.3f}" if isinstance(v, float) else v for k, v in row.items()}
                for row in online_rows(report)
            ]
            emit_records(list(EVAL_COLUMNS), rows, "table", title=f"online {file.name}")
        elif fmt in ("json", "jsonl"):
            emit_mapping(report, fmt)
        else:
            emit_records(list(EVAL_COLUMNS), eval_rows(report) + online_rows(report), fmt)
        return
    if sweep and fail_fraction:
        raise click.UsageError("--fail-fraction applies to one evaluation, not to --sweep")
    if sweep:
        if chosen:
            raise click.BadParameter(
                "peers are scored by eval without --sweep", param_hint="--peers"
            )
        thresholds = (threshold,) if threshold is not None else evaluation.DEFAULT_SWEEP
        rows = evaluation.sweep(file, thresholds, **options)
        if fmt == "table":
            emit_records(SWEEP_COLUMNS, sweep_rows(rows), fmt, title=f"eval --sweep {file.name}")
        else:
            emit_records(list(rows[0]) if rows else ["threshold"], rows, fmt)
        return
    if threshold is not None:
        options["threshold"] = threshold
    if fail_fraction:
        options["fail_fraction"] = fail_fraction
    report = evaluation.evaluate(file, peers=chosen, **options)
    if fmt == "table":
        _print_eval_table(report, file.name)
    elif fmt in ("json", "jsonl"):
        emit_mapping(report, fmt)
    else:
        emit_records(list(EVAL_COLUMNS), eval_rows(report), fmt)


def _chat_model(factory: str) -> Any:
    """Call ``MODULE:FUNCTION`` and return the chat model it builds."""
    import importlib

    module, _, function = factory.partition(":")
    try:
        return getattr(importlib.import_module(module), function)()
    except (ImportError, AttributeError, ValueError) as exc:
        raise click.BadParameter(
            f"{factory!r}: {exc}; give MODULE:FUNCTION, e.g. integrations.llm:local_chat_model",
            param_hint="--llm",
        ) from exc


SWEEP_COLUMNS = ("T", "hit@1", "hit@3", "mrr", "paper hit@1", "paper hit@3", "retrieved")
"""Columns of the ``eval --sweep`` table (json, jsonl and csv keep every key)."""


def sweep_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return sweep results as rows of :data:`SWEEP_COLUMNS`, rates with three decimals."""
    keys = ("threshold", "hit@1", "hit@3", "mrr", "paper_hit@1", "paper_hit@3", "retrieval_share")

    def shown(value: Any) -> Any:
        return f"{value:.3f}" if isinstance(value, float) else value

    return [
        {column: shown(row.get(key)) for column, key in zip(SWEEP_COLUMNS, keys, strict=True)}
        for row in rows
    ]


EVAL_COLUMNS = ("method", "hit@1", "hit@3", "mrr", "hits@1", "hits@3")
"""Columns of the side-by-side comparison printed by ``eval``."""


def eval_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Return the memory and each baseline as one row of :data:`EVAL_COLUMNS`."""
    rows = [{"method": "episodic memory", **{k: report[k] for k in EVAL_COLUMNS[1:]}}]
    for name, tally in report.get("baselines", {}).items():
        rows.append({"method": name.replace("_", " "), **{k: tally[k] for k in EVAL_COLUMNS[1:]}})
    return rows


def online_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Return the online figures (``eval --online``) as rows of :data:`EVAL_COLUMNS`."""
    online = report["online"]
    rows = [{"method": "episodic memory, online", **{k: online[k] for k in EVAL_COLUMNS[1:]}}]
    for name, tally in online.get("baselines", {}).items():
        method = f"{name.replace('_', ' ')}, online"
        rows.append({"method": method, **{k: tally[k] for k in EVAL_COLUMNS[1:]}})
    return rows


def _print_eval_table(report: dict[str, Any], name: str) -> None:
    console = render.make_console()
    title = f"eval {name}: {report['targets']} targets, T={report['threshold']}"
    rows = [
        {k: f"{v:.3f}" if isinstance(v, float) else v for k, v in row.items()}
        for row in eval_rows(report)
    ]
    console.print(render.records_table(EVAL_COLUMNS, rows, title=title, width=console.width))
    beats = "yes" if report.get("beats_baselines") else "no"
    console.print(
        f"train {report['train_workflows']} / test {report['test_workflows']} workflows, "
        f"ingest {report['ingest_seconds']:.1f} s, suggest p50 {report['suggest_ms_p50']:.1f} ms, "
        f"run {report['seconds']:.1f} s"
    )
    console.print(
        f"retrieval share {report['retrieval_share']:.3f}; beats bigram and longest suffix: {beats}"
    )


@cli.command()
@click.option(
    "--workflows",
    "n_workflows",
    type=click.IntRange(min=1),
    required=True,
    help="How many synthetic workflows to store.",
)
@click.option(
    "--queries",
    "n_queries",
    type=click.IntRange(min=1),
    default=50,
    show_default=True,
    help="How many retrievals to time.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the synthetic data.")
@click.option(
    "--store",
    "store_spec",
    metavar="S",
    default="memory:",
    show_default=True,
    help="Store to save the synthetic workflows into.",
)
@click.option(
    "--baseline/--no-baseline",
    default=None,
    help="Also run the memory: store in a new process, for comparison "
    "(default: when --store is another store).",
)
@format_option()
@click.pass_context
def bench(
    ctx: click.Context,
    n_workflows: int,
    n_queries: int,
    seed: int,
    store_spec: str,
    baseline: bool | None,
    fmt: str,
) -> None:
    """Time saving and retrieval on synthetic workflows (fast vs reference matcher).

    The embedder is a fake 384-dimension one unless --embedder names a model ('default' for
    all-MiniLM-L6-v2), so the figures measure the matcher.

    \b
    Example:
      em-plugin bench --workflows 10000 --queries 50
      em-plugin bench --workflows 100000 --store /tmp/bench-store --no-baseline
    """
    from em_plugin.evaluation.bench import run_bench

    embedder = None
    if ctx.obj.embedder not in (None, ""):
        from em_plugin.embedding.embedders import resolve_embedder

        embedder = resolve_embedder(embedder_setting(ctx))
    with progress_bar("bench") as progress:
        report = run_bench(
            n_workflows,
            n_queries,
            seed=seed,
            store=store_path(store_spec),
            embedder=embedder,
            progress=progress,
            baseline=baseline,
        )
    emit_mapping(report, fmt, title="bench")
