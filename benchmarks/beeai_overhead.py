"""What the episodic memory adds to one BeeAI turn (median over 50 turns, scripted models).

Two identical crews run the same scripted turns: a ``coordinator`` RequirementAgent with two
``HandoffTool`` sub-agents (``extractor``, ``classifier``), driven by scripted chat models. One
crew runs bare, the other with :class:`~integrations.beeai.EpisodicMemoryMiddleware`. Each turn
hands off to ``extractor`` (which calls ``product_extractor``), then calls ``write_report`` and
answers, so the difference is the memory's own work: following the run tree at every depth,
compiling the session, retrieving similar workflows and appending suggestions. Memory holds
``--saved`` workflows in the same scope. Turns alternate between the two crews so both see the
same machine load.

Run::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/beeai_overhead.py            # FakeEmbedder
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/beeai_overhead.py --embedder minilm
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "integrations")]
os.environ.setdefault("BEEAI_LOG_LEVEL", "ERROR")

from beeai_support import Crew, build_crew  # noqa: E402

from em_plugin.embedding import FakeEmbedder, resolve_embedder  # noqa: E402
from em_plugin.memory import EpisodicMemory  # noqa: E402
from integrations.beeai import EpisodicMemoryMiddleware  # noqa: E402
from integrations.beeai.testing import call, final  # noqa: E402
from provenance.model import CallStep, InstructionStep, Workflow  # noqa: E402
from provenance.stores import open_store  # noqa: E402

TOOLS = ("product_extractor", "pfas_classifier", "write_report")


def script_turn(crew: Crew, turn: int) -> None:
    crew.coordinator_llm.extend(
        [
            call("extractor", task=f"Extract the ingredients of sds-{turn}.pdf"),
            call("write_report", summary=f"turn {turn}"),
            final(f"Turn {turn} done."),
        ]
    )
    crew.extractor_llm.extend([call("product_extractor", file=f"sds-{turn}.pdf"), final("PFOA")])


def seed(memory: EpisodicMemory, count: int) -> None:
    for i in range(count):
        steps = tuple(
            InstructionStep(
                text=f"Process safety data sheet number {i} step {k}",
                steps=(CallStep(name=TOOLS[(i + k) % 3], args={"n": i}),),
            )
            for k in range(4)
        )
        memory.save(Workflow(id=f"seed/{i}", steps=steps))


async def run_turn(
    crew: Crew, turn: int, session: str, *, new_session: bool
) -> tuple[float, float]:
    """Run one turn; return its wall time and its CPU time (all threads), in ms."""
    if new_session:  # a new conversation: the coordinator starts with an empty memory
        crew.coordinator.memory.reset()
    script_turn(crew, turn)
    text = f"Process safety data sheet number {turn} now"
    start, cpu = time.perf_counter(), time.process_time()
    await crew.coordinator.run(text).context({"session_id": session})
    return (time.perf_counter() - start) * 1000, (time.process_time() - cpu) * 1000


async def measure(args: argparse.Namespace, memory: EpisodicMemory) -> dict[str, Any]:
    plain = build_crew()
    with_em = build_crew(middlewares=[EpisodicMemoryMiddleware(memory)])
    for warm in range(3):  # imports, first prompt rendering, caches
        await run_turn(plain, 1000 + warm, "warm", new_session=warm == 0)
        await run_turn(with_em, 1000 + warm, "warm", new_session=warm == 0)
    base: list[tuple[float, float]] = []
    em: list[tuple[float, float]] = []
    for turn in range(args.turns):
        session = f"s{turn // args.turns_per_session}"
        new = turn % args.turns_per_session == 0
        base.append(await run_turn(plain, turn, session, new_session=new))
        em.append(await run_turn(with_em, turn, session, new_session=new))
    diffs = [b[0] - a[0] for a, b in zip(base, em, strict=True)]
    cpu_diffs = [b[1] - a[1] for a, b in zip(base, em, strict=True)]
    return {
        "turns": args.turns,
        "saved_workflows": args.saved,
        "median_turn_ms_without_memory": round(statistics.median(t for t, _ in base), 2),
        "median_turn_ms_with_memory": round(statistics.median(t for t, _ in em), 2),
        "median_overhead_ms": round(statistics.median(diffs), 2),
        "median_ratio_with_to_without": round(
            statistics.median(t for t, _ in em) / statistics.median(t for t, _ in base), 3
        ),
        "p90_overhead_ms": round(sorted(diffs)[int(0.9 * (len(diffs) - 1))], 2),
        # CPU time (all threads) is far less sensitive to other processes than wall time.
        "median_overhead_cpu_ms": round(statistics.median(cpu_diffs), 2),
        "load_average_1min": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--turns-per-session", type=int, default=5)
    parser.add_argument("--saved", type=int, default=200, help="workflows in memory")
    parser.add_argument("--embedder", default="fake", help="'fake', 'minilm' or an embedder spec")
    parser.add_argument("--store", default="memory:", help="store spec (memory: or a path)")
    args = parser.parse_args()
    logging.getLogger("beeai_framework").setLevel(logging.ERROR)

    embedder = (
        FakeEmbedder(384)
        if args.embedder == "fake"
        else resolve_embedder(None if args.embedder == "minilm" else args.embedder)
    )
    memory = EpisodicMemory(store=open_store(args.store), embedder=embedder)
    seed(memory, args.saved)
    result = asyncio.run(measure(args, memory))
    result = {"embedder": embedder.name, "store": args.store, **result}
    print(json.dumps(result, indent=2))
    memory.close()


if __name__ == "__main__":
    main()
