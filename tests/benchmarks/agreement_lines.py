"""The line both scale benchmarks print for the clustered ranking against the exact one."""

from __future__ import annotations

import re

#: ``em_plugin.evaluation.approximation.describe``'s line after its prefix: clusters, queries,
#: top-1, top-3 set and recall@10.
AGREEMENT = (
    r"([\d,]+) context clusters \(built in [\d.]+ s\); against exact on (\d+) queries: "
    r"top-1 ([\d.]+), top-3 set ([\d.]+), recall@10 ([\d.]+); rank [\d.]+ ms against "
    r"[\d.]+ ms exact"
)


def agreements(prefix: str, out: str) -> list[tuple[str, ...]]:
    """Return ``(prefix groups..., clusters, queries, top1, top3, recall10)`` per line."""
    return re.findall(prefix + AGREEMENT, out)
