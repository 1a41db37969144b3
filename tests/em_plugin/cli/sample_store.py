"""Copying a disk store with its derived data, for tests that each need a fresh one."""

from __future__ import annotations

import shutil
from pathlib import Path


def copy_store(template: Path, target: Path) -> Path:
    """Copy a disk store and its derived-data directory to ``target``; return ``target``."""
    for suffix in ("", ".em-index"):
        source = template.with_name(template.name + suffix)
        if source.exists():
            shutil.copytree(source, target.with_name(target.name + suffix))
    return target
