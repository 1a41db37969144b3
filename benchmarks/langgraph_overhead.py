"""What the episodic memory adds to one LangGraph turn (median over 50 turns, scripted model).

Two graphs run the same scripted turns: ``START -> crew -> END`` and
``START -(commands?)-> crew -> episodic_memory -> END``. The crew is a ``create_agent`` agent
driven by a scripted chat model (two tool calls and an answer per turn), so the difference is the
memory's own work: collecting the turn's calls from the run hierarchy, compiling the session from
the thread, retrieving similar workflows from the store and appending suggestions. The capture of
the run hierarchy, once the first node installs it, serves every LangChain run of the process,
so the plain graph's CPU time is also measured before that. Memory holds ``--saved`` workflows
(one per past session) in the same scope. Turns alternate between the two graphs so both see
the same machine load.

Run::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/langgraph_overhead.py            # FakeEmbedder
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/langgraph_overhead.py --embedder minilm
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/langgraph_overhead.py --store /tmp/em-store
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "integrations")]

from langchain_core.messages import AIMessage, HumanMessage  # noqa: E402
from lg_scaffold import (  # noqa: E402
    ScriptedChatModel,
    agent_crew,
    call,
    with_memory,
    without_memory,
)

from em_plugin.embedding import FakeEmbedder, resolve_embedder  # noqa: E402
from em_plugin.memory import EpisodicMemory  # noqa: E402
from em_plugin.session import DEFAULT_TURN_BUDGET, SessionPolicy  # noqa: E402
from integrations.langgraph import EpisodicMemoryNode  # noqa: E402
from provenance.model import CallStep, InstructionStep, Workflow  # noqa: E402
from provenance.stores import open_store  # noqa: E402

TOOLS = ("product_extractor", "pfas_classifier", "write_report")


def turn_script(turn: int) -> list[AIMessage]:
    first, second = TOOLS[turn % 2], TOOLS[(turn % 2) + 1]
    return [
        call(first, _args(first, turn), f"a{turn}"),
        call(second, _args(second, turn), f"b{turn}"),
        AIMessage(f"Turn {turn} done."),
    ]


def _args(tool: str, turn: int) -> dict[str, Any]:
    return {
        "product_extractor": {"file": f"sds-{turn}.pdf"},
        "pfas_classifier": {"names": ["PFOA"]},
        "write_report": {"summary": f"turn {turn}"},
    }[tool]


def seed(memory: EpisodicMemory, count: int) -> None:
    workflows = []
    for i in range(count):
        steps = tuple(
            InstructionStep(
                text=f"Process safety data sheet number {i} step {k}",
                steps=(CallStep(name=TOOLS[(i + k) % 3], args={"n": i}),),
            )
            for k in range(4)
        )
        workflows.append(Workflow(id=f"seed/{i}", steps=steps))
    memory.save_many(workflows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--turns-per-session", type=int, default=5)
    parser.add_argument("--saved", type=int, default=200, help="workflows in memory")
    parser.add_argument("--embedder", default="fake", help="'fake' or an embedder spec")
    parser.add_argument("--store", default="memory:", help="store spec (memory: or a path)")
    parser.add_argument(
        "--torch-threads",
        type=int,
        default=1,
        help="torch threads for a real embedder (on a shared machine more threads contend)",
    )
    parser.add_argument(
        "--turn-budget",
        type=lambda v: None if v == "none" else float(v),
        default=DEFAULT_TURN_BUDGET,
        help="the memory's per-turn budget in seconds, or 'none'",
    )
    args = parser.parse_args()
    if args.embedder != "fake":
        import torch

        torch.set_num_threads(args.torch_threads)

    embedder = (
        FakeEmbedder(384)
        if args.embedder == "fake"
        else resolve_embedder(None if args.embedder == "minilm" else args.embedder)
    )
    memory = EpisodicMemory(store=open_store(args.store), embedder=embedder)
    seed(memory, args.saved)

    plain_model = ScriptedChatModel(messages=iter([]))
    memory_model = ScriptedChatModel(messages=iter([]))
    plain = without_memory(agent_crew(plain_model))
    cpu: dict[int, list[float]] = {id(plain): []}

    def run(graph: Any, model: ScriptedChatModel, turn: int) -> float:
        model.load(turn_script(turn))
        session = f"s{turn // args.turns_per_session}"
        text = f"Process safety data sheet number {turn} now"
        start, start_cpu = time.perf_counter(), time.process_time()
        graph.invoke({"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": session}})
        # Process CPU time (all threads): what the turn costs whatever else loads the machine.
        cpu[id(graph)].append((time.process_time() - start_cpu) * 1000)
        return (time.perf_counter() - start) * 1000

    # The first memory node installs the capture of the run hierarchy for every LangChain run
    # of the process: measure the plain graph before it exists too (CPU time; the rest of this
    # run alternates the two graphs under the same load).
    for warm in range(3):
        run(plain, plain_model, 900 + warm)
    cpu[id(plain)] = []
    for turn in range(args.turns // 2):
        run(plain, plain_model, 500 + turn)
    plain_cpu_before_hook = statistics.median(cpu[id(plain)])

    node = EpisodicMemoryNode(memory, policy=SessionPolicy(turn_budget=args.turn_budget))
    with_em = with_memory(agent_crew(memory_model), node)
    cpu = {id(plain): [], id(with_em): []}

    for warm in range(3):  # imports, first compilation, caches
        run(plain, plain_model, 1000 + warm)
        run(with_em, memory_model, 1000 + warm)
    cpu = {key: [] for key in cpu}
    base: list[float] = []
    em: list[float] = []
    for turn in range(args.turns):
        base.append(run(plain, plain_model, turn))
        em.append(run(with_em, memory_model, turn))
    diffs = [b - a for a, b in zip(base, em, strict=True)]
    result = {
        "turns": args.turns,
        "saved_workflows": args.saved,
        "embedder": embedder.name,
        "store": args.store,
        "turns_per_session": args.turns_per_session,
        "median_turn_ms_without_memory": round(statistics.median(base), 2),
        "median_turn_ms_with_memory": round(statistics.median(em), 2),
        "turn_budget_s": args.turn_budget,
        "median_overhead_ms": round(statistics.median(diffs), 2),
        "median_ratio_with_to_without": round(statistics.median(em) / statistics.median(base), 3),
        "p90_overhead_ms": round(sorted(diffs)[int(0.9 * (len(diffs) - 1))], 2),
        "median_cpu_ms_without_memory_before_capture_hook": round(plain_cpu_before_hook, 2),
        "median_cpu_ms_without_memory": round(statistics.median(cpu[id(plain)]), 2),
        "median_cpu_ms_with_memory": round(statistics.median(cpu[id(with_em)]), 2),
        "median_overhead_cpu_ms": round(
            statistics.median(b - a for a, b in zip(cpu[id(plain)], cpu[id(with_em)], strict=True)),
            2,
        ),
        "load_average_1min": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(result, indent=2))
    memory.close()


if __name__ == "__main__":
    main()
