"""Bundled data of the PFAS demo: sample files, the substance table and the property table.

Everything lives in ``integrations/demo/pfas/data/`` (see its README for sources). The CSV
tables are read once and cached; lookups are by CAS number first, then by name or synonym.
"""

from __future__ import annotations

import csv
import re
from functools import cache
from pathlib import Path

DATA_DIR = Path(__file__).parent / "data"
SAMPLES_DIR = DATA_DIR / "samples"
SUBSTANCES_CSV = DATA_DIR / "substances.csv"
PROPERTIES_CSV = DATA_DIR / "properties.csv"

SAMPLE_SUFFIXES = (".txt", ".pdf", ".xml")

_CAS_SHAPE = re.compile(r"^\d{2,7}-\d{2}-\d$")


def is_valid_cas(cas: str) -> bool:
    """Tell whether ``cas`` is a CAS Registry Number with a correct check digit.

    Args:
        cas: A string such as ``"335-67-1"``.

    Returns:
        True when the shape is ``NNNNNNN-NN-N`` and the check digit matches: the last digit is
        the sum of the other digits, each times its position counted from the right, modulo 10.
    """
    if not _CAS_SHAPE.match(cas):
        return False
    digits = cas.replace("-", "")
    body, check = digits[:-1], int(digits[-1])
    total = sum(position * int(d) for position, d in enumerate(reversed(body), start=1))
    return total % 10 == check


def sample_names() -> list[str]:
    """Return the file names of the bundled samples, sorted."""
    return sorted(p.name for p in SAMPLES_DIR.iterdir() if p.suffix in SAMPLE_SUFFIXES)


def resolve_sample(file: str) -> Path:
    """Find ``file`` as a path, or as a bundled sample name with or without its extension.

    Args:
        file: A path, or a bundled sample's file name (``"firestop_afff3_sds.txt"``) or stem,
            optionally after a directory (``"samples/firestop_afff3_sds.txt"``).

    Returns:
        The path of an existing file.

    Raises:
        ValueError: Nothing matches; the message lists the bundled sample names.
    """
    path = Path(file).expanduser()
    if path.is_file():
        return path
    # Agents often prefix a directory ("samples/x.txt", "uploads/x.txt"): match the base name.
    for name in sample_names():
        if path.name in (name, Path(name).stem):
            return SAMPLES_DIR / name
    raise ValueError(
        f"Unknown file {file!r}: it is not an existing path and not a bundled sample. "
        f"Available samples: {', '.join(sample_names())}."
    )


def _normalise_name(name: str) -> str:
    return " ".join(name.casefold().split())


def _name_keys(name: str) -> list[str]:
    """Keys to try for a free-text name: itself, without a trailing "(...)", and its contents.

    SDSs often write "Perfluorohexanoic acid (PFHxA)": either half may be the table's name.
    """
    keys = [_normalise_name(name)]
    match = re.match(r"^(.*?)\s*\(([^()]*)\)\s*$", name)
    if match:
        keys += [_normalise_name(match.group(1)), _normalise_name(match.group(2))]
    return [k for k in keys if k]


@cache
def _substances() -> tuple[dict[str, str], ...]:
    with SUBSTANCES_CSV.open(encoding="utf-8", newline="") as f:
        return tuple(dict(row) for row in csv.DictReader(f))


@cache
def _substance_index() -> tuple[dict[str, dict[str, str]], dict[str, dict[str, str]]]:
    by_cas: dict[str, dict[str, str]] = {}
    by_name: dict[str, dict[str, str]] = {}
    for row in _substances():
        if row["cas"]:
            by_cas[row["cas"]] = row
        names = [row["name"], *filter(None, row.get("synonyms", "").split(";"))]
        for name in names:
            by_name.setdefault(_normalise_name(name), row)
    return by_cas, by_name


def find_substance(cas: str | None = None, name: str | None = None) -> dict[str, str] | None:
    """Look a substance up in ``substances.csv``: by CAS number first, then by name or synonym.

    Args:
        cas: A CAS number; surrounding spaces are ignored.
        name: A name as written on an SDS; case and spacing are ignored, and a trailing
            parenthesised abbreviation is tried on its own.

    Returns:
        The table row (``cas``, ``name``, ``smiles``, ``source``, ``synonyms``, ``notes``), or
        None when neither key is in the table.
    """
    by_cas, by_name = _substance_index()
    if cas and cas.strip() in by_cas:
        return by_cas[cas.strip()]
    for key in _name_keys(name or ""):
        if key in by_name:
            return by_name[key]
    return None


def substances() -> list[dict[str, str]]:
    """Return a copy of every row of ``substances.csv``."""
    return [dict(row) for row in _substances()]


@cache
def _properties() -> dict[str, dict[str, str]]:
    with PROPERTIES_CSV.open(encoding="utf-8", newline="") as f:
        return {row["cas"]: dict(row) for row in csv.DictReader(f)}


def find_properties(cas: str | None) -> dict[str, str] | None:
    """Return the ``properties.csv`` row of a CAS number, or None when it has none."""
    if not cas:
        return None
    row = _properties().get(cas.strip())
    return dict(row) if row else None
