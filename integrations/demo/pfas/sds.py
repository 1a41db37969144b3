"""The ``product_extractor`` tool: ingredients from Safety Data Sheets and material declarations.

An SDS lists a mixture's ingredients in Section 3, "Composition/information on ingredients". Real
sheets lay that section out in many ways; this parser handles the two common ones:

* rows, one ingredient per line (space-aligned columns or a ``|`` table): the CAS number anchors
  the row, the name is the text before it, the concentration is found after it;
* blocks of ``Chemical name: ...`` / ``CAS number: ...`` / ``Concentration: ...`` lines.

A concentration must carry a ``%`` sign. PDF sheets are read with pypdf (text PDFs only; a scanned
sheet has no text to read). IPC-1752A material declarations are handled in :mod:`.ipc1752`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .ipc1752 import parse_ipc1752a
from .tables import SAMPLES_DIR, is_valid_cas, resolve_sample, sample_names

_NUM = r"\d+(?:[.,]\d+)?"
_RANGE = re.compile(rf"(?P<lo>{_NUM})\s*%?\s*(?:-|–|—|to)\s*(?P<hi>{_NUM})\s*%")
_BOUND = re.compile(rf"(?P<op><=|>=|≤|≥|<|>)\s*(?P<val>{_NUM})\s*%")
_SINGLE = re.compile(rf"(?P<val>{_NUM})\s*%")
_OPS = {"<=": "≤", ">=": "≥"}

_CAS_TOKEN = re.compile(r"(?<![\d-])\d{2,7}-\d{2}-\d(?![\d-])")
# EC numbers (NNN-NNN-N) sit between the CAS number and the concentration in many tables.
_EC_TOKEN = re.compile(r"(?<![\d-])\d{3}-\d{3}-\d(?![\d-])")
_WITHHELD = re.compile(r"\b(proprietary|trade secret|confidential|withheld|not available)\b", re.I)

_SECTION3 = re.compile(r"^[ \t]*(?:section[ \t]*)?3\b[^\n]{0,12}?composition", re.I | re.M)
_SECTION4 = re.compile(
    r"^[ \t]*(?:section[ \t]*)?4\b[^\n]{0,12}?first[ \t-]*aid"
    r"|^[ \t]*section[ \t]*(?:[4-9]|1[0-6])\b",
    re.I | re.M,
)
_PRODUCT = re.compile(
    r"^\s*(?:product name|trade name|product identifier)\s*:\s*(\S.*?)\s*$", re.I | re.M
)

_KEY_NAME = re.compile(
    r"^\s*(?:chemical|substance|component|ingredient)(?:\s+name)?\s*:\s*(.+?)\s*$", re.I
)
_KEY_CAS = re.compile(r"^\s*CAS(?:[\s-]*(?:no\.?|number|rn|#))?\s*:\s*(.+?)\s*$", re.I)
_KEY_CONC = re.compile(
    r"^\s*(?:concentration|content|weight\s*%|%\s*w/w|amount)[^:]*:\s*(.+?)\s*$", re.I
)


def product_extractor(file: str) -> dict[str, Any]:
    """Extract the product name and ingredients from a Safety Data Sheet or material declaration.

    Reads Section 3 ("Composition/information on ingredients") of an SDS given as plain text
    (``.txt``) or as a text PDF (``.pdf``), or the substances of every homogeneous material in an
    IPC-1752A Full Material Declaration (``.xml``). ``file`` is a path or the name of a bundled
    sample (with or without extension). Returns ``{"product", "file", "format", "ingredients",
    "warnings"}``: ``format`` is ``"sds-text"``, ``"sds-pdf"`` or ``"ipc1752a"``; each ingredient
    has ``name``, ``cas`` (None when withheld) and ``concentration`` as written, e.g.
    ``"10 - 30 %"``, ``"< 1 %"`` or ``"≥ 50 %"`` (declarations add the ``material`` it is in).
    Raises ValueError for an unknown file, an unsupported type or a sheet without Section 3.

    Example:
        >>> product_extractor("firestop_afff3_sds.txt")["ingredients"][0]
        {'name': 'Water', 'cas': '7732-18-5', 'concentration': '60 - 70 %'}
    """
    path = resolve_sample(file)
    label = path.name if path.parent == SAMPLES_DIR else str(file)
    suffix = path.suffix.lower()
    warnings: list[str] = []
    if suffix == ".xml":
        product, ingredients = parse_ipc1752a(path.read_bytes(), label)
        fmt = "ipc1752a"
    elif suffix in (".txt", ".pdf"):
        fmt = "sds-pdf" if suffix == ".pdf" else "sds-text"
        text = _pdf_text(path, label) if suffix == ".pdf" else path.read_text(encoding="utf-8")
        product = _product_name(text)
        ingredients = parse_section3(text, label, warnings)
    else:
        raise ValueError(
            f"Unsupported file type {path.suffix!r} for {label!r}: expected an SDS as .txt or "
            f".pdf, or an IPC-1752A declaration as .xml. Available samples: "
            f"{', '.join(sample_names())}."
        )
    return {
        "product": product or Path(label).stem,
        "file": label,
        "format": fmt,
        "ingredients": ingredients,
        "warnings": warnings,
    }


def _pdf_text(path: Path, label: str) -> str:
    from pypdf import PdfReader  # imported here: only PDF sheets need it
    from pypdf.errors import PdfReadError

    try:
        text = "\n".join(page.extract_text() or "" for page in PdfReader(path).pages)
    except (PdfReadError, ValueError, KeyError) as exc:
        raise ValueError(f"{label}: not a readable PDF ({exc})") from exc
    if not text.strip():
        raise ValueError(f"{label}: the PDF has no extractable text (a scanned sheet?)")
    return text


def _product_name(text: str) -> str | None:
    match = _PRODUCT.search(text)
    return match.group(1) if match else None


def section3(text: str) -> str | None:
    """Return the body of Section 3 of an SDS, or None when the text has no such heading."""
    start = _SECTION3.search(text)
    if start is None:
        return None
    body = text[start.end() :]
    end = _SECTION4.search(body)
    return body[: end.start()] if end else body


def parse_section3(
    text: str, label: str = "SDS", warnings: list[str] | None = None
) -> list[dict[str, Any]]:
    """Parse the ingredient rows of Section 3 of an SDS's text.

    Args:
        text: The whole SDS as text.
        label: The file name used in error messages.
        warnings: When given, gets a message for each CAS number with a wrong check digit.

    Returns:
        Ingredients in document order, each ``{"name", "cas", "concentration"}``.

    Raises:
        ValueError: No Section 3 heading, or no ingredient in it.
    """
    body = section3(text)
    if body is None:
        raise ValueError(
            f"No Section 3 'Composition/information on ingredients' found in {label}: is it a "
            f"Safety Data Sheet? Available samples: {', '.join(sample_names())}."
        )
    lines = body.splitlines()
    if any(_KEY_NAME.match(line) for line in lines):
        ingredients = _parse_blocks(lines)
    else:
        ingredients = [row for line in lines if (row := _parse_row(line)) is not None]
    if not ingredients:
        raise ValueError(f"Section 3 of {label} lists no ingredient with a concentration in %.")
    for item in ingredients:
        if item["cas"] and not is_valid_cas(item["cas"]) and warnings is not None:
            warnings.append(f"CAS number {item['cas']} of {item['name']!r} fails its check digit.")
    return ingredients


def _parse_row(line: str) -> dict[str, Any] | None:
    cas = _CAS_TOKEN.search(line)
    anchor = cas or _WITHHELD.search(line)
    if anchor is None:
        return None
    concentration = parse_concentration(_EC_TOKEN.sub(" ", line[anchor.end() :]))
    name = line[: anchor.start()].strip().strip("|").strip()
    if "|" in name:  # a markdown row: the name is the first cell
        name = name.split("|")[0].strip()
    if not name or concentration is None:
        return None
    return {"name": name, "cas": cas.group(0) if cas else None, "concentration": concentration}


def _parse_blocks(lines: list[str]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for line in lines:
        if match := _KEY_NAME.match(line):
            items.append({"name": match.group(1), "cas": None, "concentration": None})
        elif items and (match := _KEY_CAS.match(line)):
            token = _CAS_TOKEN.search(match.group(1))
            items[-1]["cas"] = token.group(0) if token else None
        elif items and (match := _KEY_CONC.match(line)):
            items[-1]["concentration"] = parse_concentration(match.group(1))
    return items


def parse_concentration(text: str) -> str | None:
    """Find the first concentration in ``text`` and write it in one house form.

    Args:
        text: Text such as ``"10-30%"``, ``"<1 %"``, ``">= 50 %"`` or ``"0,5 %"``.

    Returns:
        ``"10 - 30 %"``, ``"< 1 %"``, ``"≥ 50 %"``, ``"0.5 %"``; None when there is no number
        followed by ``%``.
    """
    found = [m for pattern in (_RANGE, _BOUND, _SINGLE) if (m := pattern.search(text))]
    if not found:
        return None
    # The earliest match wins; at the same position a range beats a bare number.
    match = min(found, key=lambda m: m.start())
    groups = {k: v.replace(",", ".") for k, v in match.groupdict().items() if k != "op" and v}
    if "lo" in groups:
        return f"{groups['lo']} - {groups['hi']} %"
    if match.re is _BOUND:
        op = match.group("op")
        return f"{_OPS.get(op, op)} {groups['val']} %"
    return f"{groups['val']} %"
