"""Write a synthetic Workflow JSON file with a train/test split, for timing ``em-plugin eval``.

Usage::

    python benchmarks/eval_file.py OUT.jsonl [--workflows 10000] [--test-share 0.2]

The workflows are ``em-plugin bench``'s synthetic ones (:mod:`em_plugin.evaluation.synthetic`:
400 task patterns, paraphrased instructions, dropped, repeated and swapped calls, handoffs), the
same for the same arguments; every ``round(1 / test-share)``-th workflow is ``"split": "test"``,
the others ``"train"``; time ``em-plugin eval OUT.jsonl`` on it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from em_plugin.evaluation.synthetic import SyntheticMemory
from provenance.workflow_json import write_jsonl


def main(argv: list[str] | None = None) -> None:
    """Write the file and print how many workflows of each split it holds."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--workflows", type=int, default=10_000)
    parser.add_argument("--test-share", type=float, default=0.2)
    args = parser.parse_args(argv)
    if not 0 < args.test_share < 1:
        parser.error("--test-share must be between 0 and 1")
    every = max(2, round(1 / args.test_share))
    counts = {"train": 0, "test": 0}

    def split(number: int) -> str:
        name = "test" if number % every == every - 1 else "train"
        counts[name] += 1
        return name

    workflows = SyntheticMemory().workflows(args.workflows, prefix="eval")
    write_jsonl((w.replace(split=split(i)) for i, w in enumerate(workflows)), args.out)
    print(f"{args.out}: {counts['train']} train and {counts['test']} test workflows")


if __name__ == "__main__":
    main(sys.argv[1:])
