"""Write ``notebooks/data/tau_airline_sessions.jsonl``: long multi-instruction airline sessions.

The source is τ-bench's public airline trajectories (``historical_trajectories/gpt-4o-airline.json``
of <https://github.com/sierra-research/tau-bench>, MIT): 50 tasks, 4 trials each, a gpt-4o agent
talking with a simulated customer. Every customer message becomes an instruction step and the
agent's tool calls until the next customer message nest under it, so one workflow holds all the
requests of one conversation (7.5 on average, up to 30). The split is τ²-bench's official airline
split (the same 50 tasks, ids as in ``notebooks/data/tau2_airline.jsonl``): every trial of a task
falls on the side of its task, so no test conversation has a twin in memory.

Usage::

    python benchmarks/airline_sessions.py gpt-4o-airline.json notebooks/data/tau2_airline.jsonl \\
        notebooks/data/tau_airline_sessions.jsonl
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

SOURCE = "sierra-research/tau-bench historical_trajectories/gpt-4o-airline.json (MIT)"
STOP = ("###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###")


def _splits(tau2_file: Path) -> dict[str, str]:
    """Task id -> split, from the τ²-bench airline file (``tau2/airline/N``)."""
    found = {}
    for line in tau2_file.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            found[row["id"].rsplit("/", 1)[1]] = row["split"]
    return found


def _text(content: str | None) -> str:
    text = content or ""
    for token in STOP:
        text = text.replace(token, "")
    return text.strip()


def _session(run: dict[str, Any], split: str) -> dict[str, Any]:
    """One conversation as a workflow: customer messages with the calls that served them."""
    steps: list[dict[str, Any]] = []
    for message in run["traj"]:
        if message["role"] == "user":
            text = _text(message.get("content"))
            if text:
                steps.append({"kind": "instruction", "text": text, "steps": []})
        elif message["role"] == "assistant" and steps:
            for call in message.get("tool_calls") or []:
                function = call["function"]
                args = json.loads(function["arguments"] or "{}")
                steps[-1]["steps"].append({"kind": "call", "name": function["name"], "args": args})
    for step in steps:
        if not step["steps"]:
            del step["steps"]
    return {
        "id": f"tau/airline/{run['task_id']}/trial{run['trial']}",
        "source": SOURCE,
        "split": split,
        "steps": steps,
    }


def main(argv: list[str]) -> None:
    """Convert the trajectories file (argv[0]) with the split of argv[1] into argv[2]."""
    runs = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    splits = _splits(Path(argv[1]))
    rows = [
        _session(run, splits[str(run["task_id"])])
        for run in sorted(runs, key=lambda r: (r["task_id"], r["trial"]))
    ]
    with Path(argv[2]).open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
