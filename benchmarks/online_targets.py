"""Per-target rankings of ``em-plugin eval --online``, and what acceptance feedback could gain.

``trace`` records, for every target of a file, the memory's ranked tools offline and in the online
replay (the protocol of :mod:`em_plugin.evaluation.online`: every test workflow suggested for step
by step, each round judged by the replayed step, then saved), with the longest-suffix peer's
ranking. ``compare`` prints the targets two traces rank differently (won / lost at hit@1), the
way a ranking change is judged (docs/evaluation.md). ``bound`` asks how much any rule that
follows the judged rounds could gain: per context (the last ``k`` tools), the tool the earlier
rounds took most often, against the memory's first, counting the misses it would fix and the
hits it would break. ``rules`` replays two such rules on a trace (exactly: neither changes what
the continuation model ranks nor what is saved): the judged rounds as votes, and as a correction
of the memory's calibration per context (docs/suggestions.md, "Learning from acceptance").

Usage::

    python benchmarks/online_targets.py trace FILE.jsonl OUT.json
    python benchmarks/online_targets.py compare BEFORE.json AFTER.json
    python benchmarks/online_targets.py bound TRACE.json [TRACE.json ...]
    python benchmarks/online_targets.py rules TRACE.json [TRACE.json ...]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from em_plugin.evaluation.baselines import longest_suffix
from em_plugin.evaluation.protocol import _memory, _targets
from em_plugin.memory import EpisodicMemory
from em_plugin.suggest.feedback import context_of
from provenance.model import Workflow

MODES = ("offline", "online")


def _rounds(
    memory: EpisodicMemory, train: list[Workflow], test: list[Workflow], online: bool
) -> list[dict[str, Any]]:
    peer = longest_suffix(train)
    rows = []
    for number, workflow in enumerate(test):
        for current, target, context in _targets([workflow]):
            found = memory.suggest_from(memory.request(current), None)
            scores: dict[str, float] = {}
            for suggestion in found:
                if suggestion.tool:
                    scores.setdefault(suggestion.tool, suggestion.score)
            ranked = list(scores)
            rows.append(
                {
                    "workflow": number,
                    "target": target,
                    "context": context[-4:],
                    "ranked": ranked[:8],
                    "scores": [round(scores[t], 6) for t in ranked[:8]],
                    "peer": peer.rank(context)[:3],
                }
            )
            if online:  # as the replay: the replayed step judges the round
                memory.acceptance.feedback.note(context_of(current), ranked[:3], target)
        if online:
            memory.save(workflow)
            peer.fit([workflow])
    return rows


def trace(path: Path, out: Path, embedder: str | None = None) -> dict[str, int]:
    """Write the offline and online rounds of a file; return their hits@1."""
    with _memory(path, "memory:", embedder, True, 0.65, False) as opened:
        memory, train, test, _, _ = opened
        # Offline first, on the train split alone; then the replay, which saves as it goes.
        found = {mode: _rounds(memory, train, test, mode == "online") for mode in MODES}
    out.write_text(json.dumps(found), encoding="utf-8")
    return {mode: sum(_hit(row) for row in rows) for mode, rows in found.items()}


def _hit(row: dict[str, Any]) -> bool:
    return row["ranked"][:1] == [row["target"]]


def compare(before: Path, after: Path) -> dict[str, tuple[int, int]]:
    """Return per mode the targets ``after`` ranks first and ``before`` not, and the reverse."""
    old, new = (json.loads(p.read_text(encoding="utf-8")) for p in (before, after))
    return {
        mode: (
            sum(_hit(b) and not _hit(a) for a, b in zip(old[mode], new[mode], strict=True)),
            sum(_hit(a) and not _hit(b) for a, b in zip(old[mode], new[mode], strict=True)),
        )
        for mode in MODES
    }


def bound(rows: list[dict[str, Any]], k: int) -> tuple[int, int]:
    """Return (fixed, broken): online misses the judged majority takes, hits it overrules."""
    taken: dict[tuple[str, ...], Counter[str]] = {}
    fixed = broken = 0
    for row in rows:
        key = tuple(row["context"][-k:])
        counts = taken.get(key)
        if counts:
            majority = counts.most_common(1)[0][0]
            fixed += majority == row["target"] and not _hit(row)
            broken += majority != row["target"] and _hit(row)
        taken.setdefault(key, Counter())[row["target"]] += 1
    return fixed, broken


def votes(rows: list[dict[str, Any]], k: int) -> int:
    """Return online hits@1 when the judged rounds vote like stored positions.

    Per context of 1 to ``k`` tools, the tools the earlier rounds took are counts blended over
    the memory's distribution by Witten-Bell interpolation, as the continuation model blends
    agreement levels: ``P = (c + u * P_model) / (n + u)``.
    """
    taken: dict[tuple[str, ...], Counter[str]] = {}
    hits = 0
    for row in rows:
        probability = dict(zip(row["ranked"], row["scores"], strict=True))
        levels = range(1, min(k, len(row["context"])) + 1)
        for level in levels:
            counts = taken.get(tuple(row["context"][-level:]))
            if not counts:
                continue
            n, u = sum(counts.values()), len(counts)
            probability = {
                t: (counts[t] + u * probability.get(t, 0.0)) / (n + u)
                for t in {*probability, *counts}
            }
        hits += max(probability, key=probability.__getitem__, default=None) == row["target"]
        for level in levels:
            taken.setdefault(tuple(row["context"][-level:]), Counter())[row["target"]] += 1
    return hits


def calibration(rows: list[dict[str, Any]], k: int) -> int:
    """Return online hits@1 when the judged rounds correct the memory's calibration.

    Per context of ``k`` tools, a tool's probability is multiplied by ``(taken + 1) /
    (expected + 1)``: how often the earlier rounds took it against the sum of the probabilities
    the memory gave it there (1 when the memory was calibrated in that context).
    """
    taken: dict[tuple[str, ...], Counter[str]] = {}
    expected: dict[tuple[str, ...], Counter[str]] = {}
    hits = 0
    for row in rows:
        key = tuple(row["context"][-k:])
        probability = dict(zip(row["ranked"], row["scores"], strict=True))
        seen, owed = taken.get(key, Counter()), expected.get(key, Counter())
        weighed = {t: p * (seen[t] + 1) / (owed[t] + 1) for t, p in probability.items()}
        hits += max(weighed, key=weighed.__getitem__, default=None) == row["target"]
        taken.setdefault(key, Counter())[row["target"]] += 1
        expected.setdefault(key, Counter()).update(probability)
    return hits


def main(argv: list[str] | None = None) -> None:
    """Run one of the four commands and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    one = commands.add_parser("trace")
    one.add_argument("file", type=Path)
    one.add_argument("out", type=Path)
    one.add_argument("--embedder", default=None)
    two = commands.add_parser("compare")
    two.add_argument("before", type=Path)
    two.add_argument("after", type=Path)
    three = commands.add_parser("bound")
    three.add_argument("traces", type=Path, nargs="+")
    four = commands.add_parser("rules")
    four.add_argument("traces", type=Path, nargs="+")
    args = parser.parse_args(argv)
    if args.command == "trace":
        hits = trace(args.file, args.out, args.embedder)
        print(f"{args.file.name}: hits@1 offline {hits['offline']}, online {hits['online']}")
    elif args.command == "compare":
        for mode, (won, lost) in compare(args.before, args.after).items():
            print(f"{mode}: won {won}, lost {lost}")
    elif args.command == "bound":
        for path in args.traces:
            rows = json.loads(path.read_text(encoding="utf-8"))["online"]
            cells = [f"k={k}: +{f} / -{b}" for k in (1, 2, 3) for f, b in [bound(rows, k)]]
            print(f"{path.name} ({len(rows)} targets): " + ", ".join(cells))
    else:
        for path in args.traces:
            rows = json.loads(path.read_text(encoding="utf-8"))["online"]
            base = sum(_hit(row) for row in rows)
            cells = [f"online {base}"]
            cells += [f"votes k={k} {votes(rows, k) - base:+d}" for k in (1, 2, 3)]
            cells += [f"calibration k={k} {calibration(rows, k) - base:+d}" for k in (1, 2, 3)]
            print(f"{path.name} ({len(rows)} targets): " + ", ".join(cells))


if __name__ == "__main__":
    main()
