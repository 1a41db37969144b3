"""The Python work of the save path, part by part: CPU ms per workflow of each part.

Usage::

    python benchmarks/save_python_work.py [--workflows N] [--batch B]

Saves ``em-plugin bench``'s synthetic workflows into a fresh disk store with ``save_many``, one
call per batch (no pipeline, so no part runs beside the store engine and the CPU times are the
parts' own), and prints the thread CPU time of each part of a save per workflow:

* ``redaction``: ``EpisodicMemory._prepare``, the secrets redaction of each workflow;
* ``staging``: embedding (fake 384-d embedder, through the cache), versions and the PROV text
  (``BatchWrites._stage``);
* ``indexing``: the step index, the suggestion state and the local copies
  (``BatchWrites._index``);
* ``python work``: the three together, what a pipelined ``save_many`` does beside the engine;
* ``engine write (calling thread)``: the store write on the calling thread, for reference
  (Oxigraph parses there; its other threads are not counted).

The parts are timed by wrapping those methods for the run; nothing else changes.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from em_plugin.embedding.embedders import FakeEmbedder
from em_plugin.evaluation.synthetic import SCOPE, SyntheticMemory
from em_plugin.memory import EpisodicMemory
from em_plugin.state.batch_writes import BatchWrites
from provenance.stores.workflow_store import WorkflowStore

#: (row name, class, method) of each timed part.
PARTS: tuple[tuple[str, type, str], ...] = (
    ("redaction", EpisodicMemory, "_prepare"),
    ("staging", BatchWrites, "_stage"),
    ("indexing", BatchWrites, "_index"),
    ("engine write (calling thread)", WorkflowStore, "commit_staged"),
)


def _timing(seconds: Counter[str], name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.thread_time()
        try:
            return method(*args, **kwargs)
        finally:
            seconds[name] += time.thread_time() - start

    return timed


def measure(workflows: int, batch: int) -> dict[str, float]:
    """Return CPU milliseconds per workflow of each part (and ``python work``, their sum)."""
    items = list(SyntheticMemory().workflows(workflows))
    seconds: Counter[str] = Counter()
    originals = [(owner, attr, getattr(owner, attr)) for _, owner, attr in PARTS]
    root = Path(tempfile.mkdtemp(prefix="em-python-work-"))
    try:
        for name, owner, attr in PARTS:
            setattr(owner, attr, _timing(seconds, name, getattr(owner, attr)))
        memory = EpisodicMemory(store=str(root / "store"), embedder=FakeEmbedder(384), scope=SCOPE)
        try:
            for start in range(0, len(items), batch):
                memory.save_many(items[start : start + batch], batch_size=batch)
        finally:
            memory.close()
    finally:
        for owner, attr, method in originals:
            setattr(owner, attr, method)
        shutil.rmtree(root, ignore_errors=True)
    per = {name: seconds[name] / workflows * 1000 for name, _, _ in PARTS}
    per["python work"] = per["redaction"] + per["staging"] + per["indexing"]
    return per


def main(argv: list[str] | None = None) -> None:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workflows", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=1000)
    args = parser.parse_args(argv)
    per = measure(args.workflows, args.batch)
    print(f"{args.workflows} workflows, batches of {args.batch}, CPU ms per workflow")
    for name in ("redaction", "staging", "indexing", "python work"):
        print(f"{name:32} {per[name]:7.3f}")
    name = "engine write (calling thread)"
    print(f"{name:32} {per[name]:7.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
