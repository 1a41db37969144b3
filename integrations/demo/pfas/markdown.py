"""The ``markdown_table`` tool: render rows of dicts as a GitHub-flavoured Markdown table."""

from __future__ import annotations

import json
from typing import Any


def markdown_table(
    rows: list[dict[str, Any]] | dict[str, Any],
    columns: list[str] | None = None,
    title: str | None = None,
) -> dict[str, str]:
    """Render records (ingredients, PFAS classifications, hazard results) as a Markdown table.

    ``rows`` is a list of dicts, one per table row; the output of another tool is accepted too
    (its ``ingredients`` or ``results`` list is used). ``columns`` picks and orders the columns;
    by default every key, in order of first appearance. ``title`` adds a heading above the
    table. Cells are made safe for Markdown: ``|`` is escaped and line breaks become ``<br>``;
    lists are joined with commas, nested dicts written as JSON, None left empty and booleans
    written yes/no. Returns ``{"markdown": "..."}``.

    Example:
        >>> markdown_table([{"name": "PFOA", "cas": "335-67-1"}])["markdown"]
        '| name | cas |\\n| --- | --- |\\n| PFOA | 335-67-1 |'
    """
    if isinstance(rows, dict):
        rows = rows.get("ingredients") or rows.get("results") or [rows]
    rows = [r for r in rows if isinstance(r, dict)]
    if columns is None:
        columns = list(dict.fromkeys(key for row in rows for key in row))
    lines = [f"### {escape_cell(title)}", ""] if title else []
    if not columns:
        return {"markdown": "\n".join([*lines, "_(no rows)_"])}
    lines.append("| " + " | ".join(escape_cell(c) for c in columns) + " |")
    lines.append("| " + " | ".join("---" for _ in columns) + " |")
    for row in rows:
        lines.append("| " + " | ".join(format_cell(row.get(c)) for c in columns) + " |")
    return {"markdown": "\n".join(lines)}


def format_cell(value: Any) -> str:
    """Write one value as the text of a table cell (see :func:`markdown_table`)."""
    return escape_cell(_text(value))


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        # A hazard criterion {"status", "reason"} reads best as its status.
        return str(value["status"]) if "status" in value else json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return ", ".join(_text(v) for v in value)
    return str(value)


def escape_cell(text: str) -> str:
    """Escape ``|`` and turn line breaks into ``<br>`` so the text stays in one cell."""
    text = text.replace("|", "\\|")
    return text.replace("\r\n", "<br>").replace("\n", "<br>").replace("\r", "<br>")
