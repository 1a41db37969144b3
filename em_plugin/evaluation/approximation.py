"""How close a large scope's clustered ranking is to the exact one (docs/suggestions.md).

``benchmarks/ladder.py`` and ``benchmarks/clusters.py`` rank the same queries with the
continuation model as configured (level 0 by context clusters in a large scope) and with
``exact=True``, and report the share of queries whose top tool and top-3 set are the exact
model's and the recall of the exact top 10 tools in the approximate top 10.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from provenance.model import Workflow

__all__ = ["agreement", "describe", "ranking"]

#: What :func:`describe` says of a scope that ranks exactly.
EXACT = "exact (approximate_from unset or not reached)"


def ranking(*, approximate_from: int | None = None, probes: int | None = None) -> Any:
    """Return the default ranking settings with the continuation model's clusters set.

    Args:
        approximate_from: Contexts from which level 0 is approximated (``None``: the default).
        probes: Clusters weighed exactly (``None``: the default).
    """
    from dataclasses import replace

    from em_plugin.settings import RankingSettings

    settings = RankingSettings()
    config = settings.continuation
    if approximate_from is not None:
        config = replace(config, approximate_from=approximate_from)
    if probes is not None:
        config = replace(config, probes=probes)
    return replace(settings, continuation=config)


def describe(found: dict[str, Any] | None) -> str:
    """Return one line for an :func:`agreement` result (the benchmarks print it)."""
    if found is None:
        return EXACT
    return (
        f"{found['clusters']:,} context clusters (built in {found['build_s']} s); against exact "
        f"on {found['queries']} queries: top-1 {found['top1']:.3f}, top-3 set "
        f"{found['top3']:.3f}, recall@10 {found['recall10']:.4f}; rank {found['rank_ms']} ms "
        f"against {found['exact_rank_ms']} ms exact"
    )


def agreement(memory: Any, scope: str, workflows: Sequence[Workflow]) -> dict[str, Any] | None:
    """Rank each workflow's next step both ways; ``None`` when the scope ranks exactly anyway.

    Waits for the scope's clusters first (their build time is in the result).

    Args:
        memory: An :class:`~em_plugin.memory.EpisodicMemory`.
        scope: The scope ranked.
        workflows: The current workflows.

    Returns:
        ``clusters``, ``build_s``, ``queries``, ``top1``, ``top3``, ``recall10`` (shares of the
        queries) and the mean ``rank_ms`` and ``exact_rank_ms``.
    """
    view = memory.with_scope(scope).scope_memory()
    model = view.model("continuation")
    start = time.perf_counter()
    if not model.approximate_ready(timeout=3600):
        return None
    built = time.perf_counter() - start
    top1 = top3 = 0
    recall = approximate_s = exact_s = 0.0
    for workflow in workflows:
        query = view.query(workflow)
        start = time.perf_counter()
        fast = [c.tool for c in model.rank(query)]
        approximate_s += time.perf_counter() - start
        start = time.perf_counter()
        exact = [c.tool for c in model.rank(query, exact=True)]
        exact_s += time.perf_counter() - start
        top1 += fast[:1] == exact[:1]
        top3 += set(fast[:3]) == set(exact[:3])
        recall += len(set(fast[:10]) & set(exact[:10])) / max(1, len(exact[:10]))
    n = max(1, len(workflows))
    return {
        "clusters": model.cluster_count,
        "build_s": round(built, 2),
        "queries": len(workflows),
        "top1": top1 / n,
        "top3": top3 / n,
        "recall10": recall / n,
        "rank_ms": round(1000 * approximate_s / n, 2),
        "exact_rank_ms": round(1000 * exact_s / n, 2),
    }
