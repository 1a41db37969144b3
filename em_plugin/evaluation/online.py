"""``em-plugin eval --online``: the test split replayed as sessions on top of the train split.

The protocol is docs/evaluation.md, "Online evaluation". The memory holds the train split, as
offline. The offline figures are taken first, on that memory. Then every test workflow, in file
order, is a session: each of its targets is suggested for from the steps before it (the
replayed next step decides whether the suggestion was taken, and at which rank: the round's
acceptance), and once its targets are done the workflow is saved, so later sessions see it.
The bigram and longest-suffix baselines learn the same way: each replayed workflow is counted
after its targets. Online hit@k is the share of rounds whose taken rank is at most ``k``
(acceptance@k); MRR the mean reciprocal of the taken rank.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from em_plugin.evaluation.baselines import bigram, longest_suffix
from em_plugin.evaluation.protocol import (
    _memory,
    _progress_bar_total,
    _report,
    _score,
    _Tally,
    _targets,
)
from em_plugin.memory import EpisodicMemory
from em_plugin.retrieval.reference import DEFAULT_THRESHOLD
from em_plugin.suggest.feedback import context_of
from provenance.model import Workflow

__all__ = ["evaluate_online"]


def evaluate_online(
    path: str | Path,
    store: Any = "memory:",
    embedder: Any = None,
    use_text: bool = True,
    threshold: float | None = None,
    progress: bool | None = None,
) -> dict[str, Any]:
    """Evaluate a file offline and online (the test split replayed in order, saved as it goes).

    Args:
        path: The ``.jsonl`` file with train and test splits.
        store: Store spec for the memory (default: a fresh in-memory store).
        embedder: Embedder setting (``None``: the default model).
        use_text: ``False`` runs the ablation without instruction text.
        threshold: Retrieval threshold ``T`` (``None``: 0.65).
        progress: Show a progress bar on stderr (``None``: on a terminal, for long runs).

    Returns:
        The offline report of :func:`~em_plugin.evaluation.protocol.evaluate` (``hit@1``,
        ``hit@3``, ``mrr``, ``baselines``, ...) and ``online``: ``hit@1``, ``hit@3``, ``mrr``,
        ``hits@1``, ``hits@3``, the same for the two baselines learning as they go
        (``online["baselines"]``), ``saved`` (test workflows saved) and ``seconds``.

    Raises:
        WorkflowFormatError: When the file is malformed.
        ConfigurationError: When it lacks a train or a test split.
    """
    start = time.perf_counter()
    threshold = DEFAULT_THRESHOLD if threshold is None else threshold
    with _memory(path, store, embedder, use_text, threshold, progress) as opened:
        memory, train, test, ingest, bar = opened
        offline = _score(memory, train, test, bar)
        report = _report(
            offline,
            file=Path(path).name,
            chain="continuation",
            fail_fraction=0.0,
            ingest_seconds=round(ingest, 3),
            threshold=memory.threshold,
            use_text=use_text,
            embedder=memory.embedder.name,
            train_workflows=len(train),
            test_workflows=len(test),
        )
        replayed = time.perf_counter()
        report["online"] = _replay(memory, train, test, bar)
        report["online"]["seconds"] = round(time.perf_counter() - replayed, 3)
    report["seconds"] = round(time.perf_counter() - start, 3)
    return report


def _replay(
    memory: EpisodicMemory, train: list[Workflow], test: list[Workflow], bar: Any
) -> dict[str, Any]:
    """Replay the test split as sessions in order; return the online figures."""
    chain = _Tally()
    learners = {"bigram": bigram(train), "longest_suffix": longest_suffix(train)}
    tallies = {name: _Tally() for name in learners}
    total = _progress_bar_total(test)
    done = 0
    for workflow in test:
        for current, target, context in _targets([workflow]):
            found = memory.suggest_from(memory.request(current), None)
            ranked = list(dict.fromkeys(s.tool for s in found if s.tool))
            chain.add(ranked, target)
            # The replayed step judges the round: the scope's statistics learn from it.
            memory.acceptance.feedback.note(context_of(current), ranked[:3], target)
            for name, model in learners.items():
                tallies[name].add(model.rank(context), target)
            done += 1
            if bar is not None and (done % 20 == 0 or done == total):
                bar("online", done, total)
        memory.save(workflow)
        for model in learners.values():
            model.fit([workflow])
    report = chain.report()
    report["baselines"] = {name: tally.report() for name, tally in tallies.items()}
    report["saved"] = len(test)
    # Whether acceptance feedback moved anything: rankings whose first suggestion gave way.
    report["feedback_promotions"] = memory.acceptance.feedback.promotions
    return report
