"""``em-plugin eval``: next-tool suggestion quality on a file with train/test splits.

The protocol is docs/evaluation.md.

Protocol, exactly: memory is every ``"split": "train"`` workflow, saved through
:meth:`EpisodicMemory.save_many` (the normal save path: store, step index, suggestion state).
For every ``"split": "test"`` workflow with leaf sequence ``L`` and every ``j >= 1`` where
``L[j]`` is a call, the current workflow is the minimal sub-tree holding ``L[0..j-1]``
(:meth:`Workflow.prefix`) and the target is ``L[j]``'s tool. The ranked candidates are the tools
of :meth:`EpisodicMemory.suggest` with no limit (by default the ``continuation`` chain:
episodic -> procedural -> fallback; ``chain`` picks another named chain), in order, each tool
once. Reported: micro-averaged hit@1, hit@3 and MRR (a target missing from the ranking counts 0),
the number of targets, ingest time and suggestion latency percentiles, plus the same metrics for
the bigram, longest-suffix and paper-rule rankings (:mod:`em_plugin.evaluation.baselines`) on
the same targets. Learned peers are opt-in (``peers``, :mod:`em_plugin.evaluation.peers`): the
Tax-style LSTM and the ProcessTransformer-style encoder, each trained on the train split in the
same run and scored on the same targets.

``use_text=False`` is the ablation: every instruction text is replaced by one constant before
saving and querying, so instructions remain steps but their words carry nothing.
"""

from __future__ import annotations

import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from em_plugin.errors import ConfigurationError
from em_plugin.evaluation.baselines import bigram, longest_suffix, paper_rule, tokens
from em_plugin.evaluation.peers import make_peer, parse_peers
from em_plugin.memory import EpisodicMemory
from em_plugin.retrieval.reference import DEFAULT_THRESHOLD
from em_plugin.settings import RetrievalSettings
from provenance.model import CallStep, InstructionStep, Step, Workflow
from provenance.workflow_json import read_jsonl

__all__ = ["DEFAULT_SWEEP", "EVAL_SCOPE", "evaluate", "sweep"]

EVAL_SCOPE = "eval"
DEFAULT_SWEEP = (0.5, 0.6, 0.65, 0.7, 0.8, 0.9)
#: Show a progress bar (when stderr is a terminal and ``progress`` is left to ``None``) from
#: this many targets on.
PROGRESS_FROM = 200

Progress = Callable[[str, int, int], None]


@dataclass
class _Tally:
    hits1: int = 0
    hits3: int = 0
    reciprocal: float = 0.0
    targets: int = 0

    def add(self, ranked: Sequence[str], target: str) -> None:
        self.targets += 1
        if ranked[:1] == [target]:
            self.hits1 += 1
        if target in ranked[:3]:
            self.hits3 += 1
        if target in ranked:
            self.reciprocal += 1.0 / (list(ranked).index(target) + 1)

    def report(self) -> dict[str, Any]:
        n = max(self.targets, 1)
        return {
            "hit@1": round(self.hits1 / n, 4),
            "hit@3": round(self.hits3 / n, 4),
            "mrr": round(self.reciprocal / n, 4),
            "hits@1": self.hits1,
            "hits@3": self.hits3,
        }


@dataclass
class _Run:
    chain: _Tally = field(default_factory=_Tally)
    baselines: dict[str, _Tally] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    retrieved: int = 0
    top_source: Counter[str] = field(default_factory=Counter)
    # Suggestions (all ranked ones) whose cited workflows are mostly failed train workflows,
    # and how many of those did not say so (Suggestion.failures empty).
    mostly_failed: int = 0
    mostly_failed_unsaid: int = 0


def _strip_text(steps: Sequence[Step]) -> tuple[Step, ...]:
    out: list[Step] = []
    for step in steps:
        children = _strip_text(step.steps)
        if isinstance(step, InstructionStep):
            out.append(replace(step, text="instruction", steps=children))
        else:
            out.append(replace(step, steps=children))
    return tuple(out)


#: Seed of the train workflows ``--fail-fraction`` marks failed (the same ones every run).
FAIL_SEED = 21


def _mark_failed(train: list[Workflow], fraction: float) -> list[Workflow]:
    """Mark ``fraction`` of the train workflows (a seeded sample) failed.

    A marked workflow's outcome is "failure", and so is its last call's: a run that fails
    usually fails at the last step it tried.
    """
    if not 0.0 <= fraction <= 1.0:
        raise ConfigurationError(f"fail_fraction must be in [0, 1], got {fraction}")
    count = round(fraction * len(train))
    failed = set(random.Random(FAIL_SEED).sample(sorted(w.id for w in train), count))
    return [_failed(w) if w.id in failed else w for w in train]


def _failed(workflow: Workflow) -> Workflow:
    paths = [p for p, s in workflow.walk() if isinstance(s, CallStep) and not s.steps]
    steps = workflow.steps if not paths else _with_outcome(workflow.steps, paths[-1], "failure")
    return workflow.replace(outcome="failure", steps=steps)


def _with_outcome(steps: tuple[Step, ...], path: str, outcome: str) -> tuple[Step, ...]:
    head, _, rest = path.partition(".")
    index = int(head)
    step = steps[index]
    changed: Step
    if rest:
        changed = replace(step, steps=_with_outcome(step.steps, rest, outcome))
    else:
        assert isinstance(step, CallStep)  # the path names a call leaf
        changed = replace(step, outcome=outcome)
    return (*steps[:index], changed, *steps[index + 1 :])


def _load(
    path: str | Path, use_text: bool, fail_fraction: float = 0.0
) -> tuple[list[Workflow], list[Workflow]]:
    workflows = read_jsonl(path)
    if not use_text:
        workflows = [w.replace(steps=_strip_text(w.steps), title=None) for w in workflows]
    workflows = [w.replace(scope=EVAL_SCOPE) for w in workflows]
    train = [w for w in workflows if w.split == "train"]
    test = [w for w in workflows if w.split == "test"]
    if not train or not test:
        raise ConfigurationError(
            f'{path}: evaluation needs workflows with "split": "train" and "test"; '
            f"found {len(train)} train and {len(test)} test"
        )
    return _mark_failed(train, fail_fraction) if fail_fraction else train, test


def _progress_bar_total(test: Sequence[Workflow]) -> int:
    """Return the number of targets of a test split."""
    return sum(1 for _ in _targets(test))


def _targets(test: Sequence[Workflow]) -> Iterator[tuple[Workflow, str, list[str]]]:
    for workflow in test:
        leaves = workflow.leaves()
        sequence = tokens(workflow)
        for j in range(1, len(leaves)):
            if isinstance(leaves[j], CallStep):
                yield workflow.prefix(j), leaves[j].name, sequence[:j]  # type: ignore[union-attr]


@contextmanager
def _progress_bar(enabled: bool | None, total: int, label: str) -> Iterator[Progress | None]:
    if enabled is None:
        enabled = sys.stderr.isatty() and total >= PROGRESS_FROM
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import Progress as RichProgress

    with RichProgress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(label, total=total)

        def update(stage: str, done: int, count: int) -> None:
            bar.update(task, completed=done, total=count, description=f"{label}: {stage}")

        yield update


def _score(
    memory: EpisodicMemory,
    train: list[Workflow],
    test: list[Workflow],
    bar: Any,
    learned: dict[str, Any] | None = None,
) -> _Run:
    fitted = {"bigram": bigram(train), "longest_suffix": longest_suffix(train), **(learned or {})}
    state = memory.scope_memory()
    episodes = {w.id: state.episode(w.id) for w in train}
    failed = {w.id for w in train if w.outcome == "failure"}
    run = _Run(baselines={name: _Tally() for name in (*fitted, "paper_rule")})
    targets = list(_targets(test))
    for done, (current, target, context) in enumerate(targets, start=1):
        start = time.perf_counter()
        request = memory.request(current)
        suggestions = memory.suggest_from(request, None)
        run.latencies.append(time.perf_counter() - start)
        ranked = list(dict.fromkeys(s.tool for s in suggestions if s.tool))
        run.chain.add(ranked, target)
        run.top_source[suggestions[0].source if suggestions else "none"] += 1
        for shown in suggestions if failed else ():
            cited = {e.workflow_id for e in shown.evidence}
            if cited and 2 * len(cited & failed) > len(cited):
                run.mostly_failed += 1
                run.mostly_failed_unsaid += not shown.failures
        run.retrieved += bool(request.matches)
        fills = {name: model.rank(context) for name, model in fitted.items()}
        for name, ranking in fills.items():
            run.baselines[name].add(ranking, target)
        # The paper's rule as written matches the whole workflow, never a recent window.
        whole = request.matches if request.window is None else ()
        voted = paper_rule(whole, episodes, fills["bigram"])  # type: ignore[arg-type]
        run.baselines["paper_rule"].add(voted, target)
        if bar is not None and (done % 20 == 0 or done == len(targets)):
            bar("suggest", done, len(targets))
    return run


def _report(run: _Run, peers: Sequence[str] = (), **head: Any) -> dict[str, Any]:
    n = max(run.chain.targets, 1)
    ms = np.asarray(run.latencies) * 1000 if run.latencies else np.zeros(1)
    report = {**head, "targets": run.chain.targets, **run.chain.report()}
    report["suggest_ms_p50"] = round(float(np.percentile(ms, 50)), 3)
    report["suggest_ms_p95"] = round(float(np.percentile(ms, 95)), 3)
    report["retrieval_share"] = round(run.retrieved / n, 4)
    report["mostly_failed_shown"] = run.mostly_failed
    report["mostly_failed_unsaid"] = run.mostly_failed_unsaid
    report["top_source"] = {k: round(v / n, 4) for k, v in sorted(run.top_source.items())}
    report["baselines"] = {name: tally.report() for name, tally in run.baselines.items()}
    report["beats_baselines"] = all(
        run.chain.hits1 >= run.baselines[b].hits1 and run.chain.hits3 >= run.baselines[b].hits3
        for b in ("bigram", "longest_suffix")
    )
    for peer in peers:
        tally = run.baselines[peer]
        report[f"beats_{peer}"] = run.chain.hits1 >= tally.hits1 and run.chain.hits3 >= tally.hits3
    return report


@contextmanager
def _memory(
    path: str | Path,
    store: Any,
    embedder: Any,
    use_text: bool,
    threshold: float,
    progress: Any,
    chain: str = "continuation",
    llm: Any = None,
    fail_fraction: float = 0.0,
) -> Iterator[tuple[EpisodicMemory, list[Workflow], list[Workflow], float, Any]]:
    train, test = _load(path, use_text, fail_fraction)
    total = len(train) + sum(1 for _ in _targets(test))
    # The ablation without instruction text is an evaluation setting, not a user one.
    memory = EpisodicMemory(
        store, embedder=embedder, scope=EVAL_SCOPE, chain=chain, llm=llm,
        retrieval=RetrievalSettings(threshold=threshold), _use_text=use_text,
    )  # fmt: skip
    try:
        with _progress_bar(progress, total, Path(path).name) as bar:
            start = time.perf_counter()
            report = None if bar is None else (lambda done: bar("ingest", done, len(train)))
            memory.save_many(train, batch_size=500, progress=report)
            memory.scope_memory()  # built during the saves; counted in the ingest time
            yield memory, train, test, time.perf_counter() - start, bar
    finally:
        memory.close()


def evaluate(
    path: str | Path,
    store: Any = "memory:",
    embedder: Any = None,
    use_text: bool = True,
    threshold: float | None = None,
    progress: bool | None = None,
    *,
    chain: str = "continuation",
    llm: Any = None,
    peers: str | Sequence[str] | None = None,
    lstm: bool = False,
    fail_fraction: float = 0.0,
) -> dict[str, Any]:
    """Evaluate next-tool suggestions on a Workflow JSON file with train/test splits.

    Args:
        path: The ``.jsonl`` file.
        store: Store spec for the memory (default: a fresh in-memory store).
        embedder: Embedder setting (``None``: the default model).
        use_text: ``False`` runs the ablation without instruction text.
        threshold: Retrieval threshold ``T`` (``None``: 0.65).
        progress: Show a progress bar on stderr (``None``: when stderr is a terminal and the run
            is long).
        chain: The named suggestion chain evaluated (``continuation``, ``paper`` or ``llm``).
        llm: The chat model of the ``llm`` chain.
        peers: Learned peers to train and score beside the memory (``"lstm,transformer"`` or
            a list; :data:`~em_plugin.evaluation.peers.PEERS`); none by default. They need
            ``torch``.
        lstm: Also train the LSTM peer (the same as naming it in ``peers``).
        fail_fraction: Mark this share of the train workflows (a sample seeded with
            :data:`FAIL_SEED`) with outcome ``"failure"`` before they are stored.

    Returns:
        ``file, targets, hit@1, hit@3, mrr, ingest_seconds, suggest_ms_p50, suggest_ms_p95`` and
        ``hits@1, hits@3, retrieval_share, top_source, baselines, beats_baselines, threshold,
        use_text, embedder, train_workflows, test_workflows, chain, seconds`` (the whole run)
        and, per peer ``P``, ``beats_P``, ``P_epochs`` and ``P_seconds`` (its training).

    Raises:
        WorkflowFormatError: When the file is malformed.
        ConfigurationError: When it lacks a train or a test split, or names an unknown peer.
    """
    start = time.perf_counter()
    threshold = DEFAULT_THRESHOLD if threshold is None else threshold
    chosen = parse_peers([*parse_peers(peers), *(["lstm"] if lstm else [])])
    with _memory(
        path, store, embedder, use_text, threshold, progress, chain, llm, fail_fraction
    ) as opened:
        memory, train, test, ingest, bar = opened
        learned: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for name in chosen:
            trained = time.perf_counter()
            peer = make_peer(name)
            if bar is not None:
                peer.progress = partial(bar, f"train {name}")
                bar(f"train {name}", 0, peer.config.max_epochs)
            learned[name] = peer.fit(train)
            extra[f"{name}_epochs"] = peer.epochs
            extra[f"{name}_seconds"] = round(time.perf_counter() - trained, 3)
        run = _score(memory, train, test, bar, learned)
        report = _report(
            run,
            chosen,
            file=Path(path).name,
            chain=chain,
            fail_fraction=fail_fraction,
            **_head(memory, train, test, ingest, use_text),
            **extra,
        )
    report["seconds"] = round(time.perf_counter() - start, 3)
    return report


def sweep(
    path: str | Path,
    thresholds: Sequence[float] = DEFAULT_SWEEP,
    *,
    store: Any = "memory:",
    embedder: Any = None,
    use_text: bool = True,
    progress: bool | None = None,
    chain: str = "continuation",
    llm: Any = None,
) -> list[dict[str, Any]]:
    """Evaluate one file at several thresholds (memory is ingested once).

    ``chain`` and ``llm`` are as in :func:`evaluate`.

    Returns:
        One row per threshold: ``threshold``, the chain's ``hit@1, hit@3, mrr``, the paper
        rule's, and ``retrieval_share``.
    """
    rows = []
    with _memory(path, store, embedder, use_text, thresholds[0], progress, chain, llm) as opened:
        memory, train, test, _, bar = opened
        for threshold in thresholds:
            memory.threshold = threshold
            run = _score(memory, train, test, bar)
            paper = run.baselines["paper_rule"].report()
            rows.append(
                {
                    "threshold": threshold,
                    **{k: v for k, v in run.chain.report().items() if "@" in k or k == "mrr"},
                    "paper_hit@1": paper["hit@1"],
                    "paper_hit@3": paper["hit@3"],
                    "retrieval_share": round(run.retrieved / max(run.chain.targets, 1), 4),
                }
            )
    return rows


def _head(
    memory: EpisodicMemory, train: list[Workflow], test: list[Workflow], ingest: float, text: bool
) -> dict[str, Any]:
    return {
        "ingest_seconds": round(ingest, 3),
        "threshold": memory.threshold,
        "use_text": text,
        "embedder": memory.embedder.name,
        "train_workflows": len(train),
        "test_workflows": len(test),
    }
