"""Importing the packages is cheap: no torch, well under a second (models load lazily)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OPTIONAL = ("integrations.langgraph", "integrations.beeai")

_PROBE = """
import json, sys, time
start = time.perf_counter()
import em_plugin, integrations
core = time.perf_counter() - start
for name in sys.argv[1:]:
    __import__(name)
total = time.perf_counter() - start
heavy = sorted(m for m in ("torch", "sentence_transformers", "transformers") if m in sys.modules)
print(json.dumps({"core": core, "total": total, "heavy": heavy}))
"""


def _present(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:
        return False


def test_import_is_light_and_fast() -> None:
    extra = [name for name in OPTIONAL if _present(name)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    # Warm the bytecode cache of the timed packages, so the figure is import work, not
    # compilation (the optional submodules are checked for torch, not timed).
    warm = [sys.executable, "-c", _PROBE]
    subprocess.run(warm, cwd=ROOT, env=env, check=True, capture_output=True)
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *extra],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    print(
        f"import em_plugin+integrations: {result['core']:.3f} s; with {extra}: "
        f"{result['total']:.3f} s"
    )
    assert result["heavy"] == [], f"importing the packages pulled in {result['heavy']}"
    assert result["core"] < 1.0, f"import em_plugin, integrations took {result['core']:.2f} s"
