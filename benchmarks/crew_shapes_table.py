"""Print the crew-shape table: shapes × the conformance kit's checks.

The checks: capture exact, failed calls kept, model context clean, streaming shows suggestions,
suggestions cite the saved workflow, suggestions at the user's level.

Each row runs the conformance kit's scenario (``integrations/conformance.py``) on one shape of
``tests/integrations/crew_shapes.py`` (real LangGraph,
langgraph-supervisor, langgraph-swarm and BeeAI objects driven by scripted models; an in-memory
store and the fake embedder). Exits 1 when any cell is false.

Run::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/crew_shapes_table.py
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "integrations")]

from crew_shapes import SHAPES, evaluate  # noqa: E402

from integrations.conformance import CHECKS  # noqa: E402

COLUMNS = tuple(check.name for check in CHECKS)


def main() -> int:
    """Run every shape and print the table; return 1 when a promise does not hold."""
    warnings.simplefilter("ignore", DeprecationWarning)
    width = max(len(shape.name) for shape in SHAPES)
    columns = COLUMNS
    print(" | ".join(["shape".ljust(width), *columns]))
    print("-+-".join(["-" * width, *("-" * len(c) for c in columns)]))
    ok = True
    for shape in SHAPES:
        result = evaluate(shape)
        cells = ["yes" if result[c] else "NO" for c in columns]
        ok = ok and all(result[c] for c in COLUMNS)
        padded = (v.ljust(len(c)) for v, c in zip(cells, columns, strict=True))
        print(" | ".join([shape.name.ljust(width), *padded]))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
