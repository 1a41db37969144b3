"""Engine commands of ``em-plugin``: reindex, suggest, eval, bench."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click

from em_plugin.cli import render
from em_plugin.cli.base import (
    cli,
    echo_json,
    embedder_setting,
    open_cli_memory,
    open_cli_store,
    store_options,
    store_path,
)

__all__ = [
    "bench",
    "eval_",
    "reindex",
    "suggest",
]


@cli.command()
@store_options
@click.pass_context
def reindex(ctx: click.Context, store_spec: str, update_url: str | None) -> None:
    """Rebuild the step index from the store alone.

    A disk store keeps its index beside it (STORE.em-index/); use this after copying a store,
    changing the embedding model, or writing to it without em-plugin. In-memory and remote
    stores have no persisted index: theirs is rebuilt whenever they are opened.

    \b
    Example:
      em-plugin reindex
    """
    from em_plugin.cli.io import rebuild_index

    start = time.perf_counter()
    with open_cli_store(store_spec, update_url) as store:
        count, where = rebuild_index(store, embedder=embedder_setting(ctx))
    where = "memory (not persisted for this store)" if where == "memory" else where
    click.echo(
        f"indexed {count} workflow{'s' if count != 1 else ''} into {where}"
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
@click.option("--json", "as_json", is_flag=True, help="Print Suggestion.to_json objects.")
@click.pass_context
def suggest(
    ctx: click.Context,
    file: Path,
    store_spec: str,
    update_url: str | None,
    scope: str | None,
    limit: int,
    as_json: bool,
) -> None:
    """Suggest next steps for the workflow in FILE (one Workflow JSON object or a one-line .jsonl).

    \b
    Example:
      em-plugin suggest current.json --limit 5
    """
    from em_plugin.cli.io import read_one_workflow
    from em_plugin.suggest.types import format_suggestions

    workflow = read_one_workflow(file)
    with open_cli_memory(ctx, store_spec, update_url, scope=scope or workflow.scope) as memory:
        suggestions = memory.suggest(workflow, limit=limit)
    if as_json:
        echo_json([s.to_json() for s in suggestions])
    else:
        click.echo(format_suggestions(suggestions, limit=limit) or "no suggestions")


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
@click.option("--no-text", is_flag=True, help="Ablation: instruction words carry nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def eval_(
    ctx: click.Context,
    file: Path,
    store_spec: str,
    threshold: float | None,
    sweep: bool,
    no_text: bool,
    as_json: bool,
) -> None:
    """Evaluate next-tool suggestions on a file with train/test splits (hit@1, hit@3, MRR).

    Memory is the file's train split; every call leaf of a test workflow is a target, predicted
    from the steps before it . Bigram and longest-suffix baselines run on the same
    targets.

    \b
    Example:
      em-plugin eval tau2_airline.jsonl --json
    """
    from em_plugin.evaluation import protocol as evaluation

    options: dict[str, Any] = {
        "store": store_path(store_spec),
        "embedder": embedder_setting(ctx),
        "use_text": not no_text,
    }
    if sweep:
        thresholds = (threshold,) if threshold is not None else evaluation.DEFAULT_SWEEP
        rows = evaluation.sweep(file, thresholds, **options)
        if as_json:
            echo_json(rows)
        else:
            columns = list(rows[0]) if rows else []
            render.make_console().print(render.records_table(columns, rows, title=file.name))
        return
    if threshold is not None:
        options["threshold"] = threshold
    report = evaluation.evaluate(file, **options)
    if as_json:
        echo_json(report)
    else:
        render.make_console().print(render.mapping_table(report, title=f"eval {file.name}"))


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
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def bench(
    ctx: click.Context,
    n_workflows: int,
    n_queries: int,
    seed: int,
    store_spec: str,
    as_json: bool,
) -> None:
    """Time saving and retrieval on synthetic workflows (fast vs reference matcher).

    The embedder is a fake 384-dimension one unless --embedder names a model ('default' for
    all-MiniLM-L6-v2), so the figures measure the matcher.

    \b
    Example:
      em-plugin bench --workflows 10000 --queries 50
    """
    from em_plugin.evaluation.bench import run_bench

    embedder = None
    if ctx.obj.embedder not in (None, ""):
        from em_plugin.embedding.embedders import resolve_embedder

        embedder = resolve_embedder(embedder_setting(ctx))
    report = run_bench(
        n_workflows, n_queries, seed=seed, store=store_path(store_spec), embedder=embedder
    )
    if as_json:
        echo_json(report)
    else:
        render.make_console().print(render.mapping_table(report, title="bench"))
