"""A background save outlives the process's end: it is finished at exit and on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from provenance.stores import open_store

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, time

    import numpy as np

    from em_plugin import EpisodicMemory
    from em_plugin.embedding import FakeEmbedder
    from provenance.model import CallStep, InstructionStep, Workflow

    fake = FakeEmbedder(32)


    def slow(texts):  # a model that takes its time: the save is still running at the end
        time.sleep(1.0)
        return fake.embed(texts)


    memory = EpisodicMemory(store=sys.argv[1], embedder=slow)
    step = InstructionStep("Extract the SDS", (CallStep("product_extractor"),))
    memory.save_in_background(Workflow(id="late", steps=(step,)))
    print("submitted", flush=True)
    if sys.argv[2] == "sigterm":
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(60)
    # "exit": the script ends without memory.close()
    """
)


@pytest.mark.parametrize("ending", ["exit", "sigterm"])
def test_a_background_save_is_in_the_store_after_the_process_ends(
    ending: str, tmp_path: Path
) -> None:
    script = tmp_path / "late_save.py"
    script.write_text(SCRIPT, encoding="utf-8")
    store = tmp_path / "store"
    run = subprocess.run(
        [sys.executable, str(script), str(store), ending],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.stdout.startswith("submitted"), run.stderr[-2000:]
    assert run.returncode == (0 if ending == "exit" else 128 + signal.SIGTERM), run.stderr
    with open_store(str(store), read_only=True) as opened:
        assert opened.ids() == ["late"]
