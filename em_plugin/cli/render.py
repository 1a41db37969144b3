"""Rendering helpers for the command-line interface: trees, tables, JSON and CSV.

Kept apart from :mod:`em_plugin.cli` so the command module stays "parse → API → print". Nothing
here touches a store. User-supplied strings are wrapped in :class:`rich.text.Text`, never parsed
as rich markup, so a step text such as ``"[red]x[/]"`` prints as written.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rich import box
from rich.console import Console, Group
from rich.padding import Padding
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from provenance.model import CallStep, InstructionStep, Step, Workflow

__all__ = [
    "cell",
    "fit_widths",
    "flatten",
    "make_console",
    "mapping_table",
    "query_listing",
    "records_table",
    "records_to_csv",
    "workflow_tree",
]

_MAX_VALUE_CHARS = 120


def records_to_csv(columns: Sequence[str], records: Iterable[Mapping[str, Any]]) -> str:
    """Return records as CSV text with a header row; ``None`` becomes an empty cell."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for record in records:
        writer.writerow(["" if record.get(c) is None else record.get(c) for c in columns])
    return out.getvalue()


def records_table(
    columns: Sequence[str],
    records: Iterable[Mapping[str, Any]],
    *,
    title: str | None = None,
    width: int = 80,
) -> Table:
    """Return a rich table of records that fits in ``width`` columns (``None`` shown blank).

    No value is ever cut. A column whose values are single words (numbers, times, ids, tool
    names, kinds) keeps its full width; prose (values with spaces) wraps at word boundaries.
    When the words and a readable width of prose do not fit, a column with one value in every
    row moves into the title, then columns are left out, the widest word column first, and the
    caption names them (``--format json`` has every column). Columns empty in every row are
    left out too (the machine-readable formats keep them).

    Args:
        columns: The columns, in display order.
        records: The rows.
        title: The table's title.
        width: The console width to fit.
    """
    records = list(records)
    if records:
        columns = [c for c in columns if any(r.get(c) not in (None, "") for r in records)]
    if len(records) > 1 and _needed_width(columns, records) > width:
        # A column with one value in every row (the workflow a query was bound to) goes into
        # the title, leaving its room to the others.
        same = [c for c in columns if len({cell(r.get(c)) for r in records}) == 1]
        if same and len(same) < len(columns):
            fixed = ", ".join(f"{c} {cell(records[0].get(c))}" for c in same)
            title = f"{title} ({fixed})" if title else fixed
            columns = [c for c in columns if c not in same]
    columns = list(columns)
    # Columns two spaces apart; one when that makes the table fit without leaving one out.
    gap = 2 if _needed_width(columns, records, 2) <= width else 1
    left_out: list[str] = []
    while len(columns) > 1 and _needed_width(columns, records, gap) > width:
        drop = _first_to_leave_out(columns, records)
        columns.remove(drop)
        left_out.append(drop)
    layout = _layout(columns, records)
    whole = sum(natural for _, natural, prose, _ in layout if not prose)
    available = width - gap * max(len(columns) - 1, 0) - whole
    prose_widths = iter(
        fit_widths(
            [natural for _, natural, prose, _ in layout if prose],
            available,
            floors=[floor for *_, prose, floor in layout if prose],
        )
    )
    caption = None
    if left_out:
        caption = (
            f"not shown at {width} columns: {', '.join(left_out)} "
            "(a wider terminal or --format json shows them)"
        )
    table = Table(
        title=title,
        caption=caption,
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, gap - 1, 0, 0),
        caption_justify="left",
    )
    for column, natural, prose, _ in layout:
        if prose:
            table.add_column(column, width=next(prose_widths), overflow="fold")
        else:
            # Whole, on one line: a number or a time cut short says nothing.
            table.add_column(column, width=natural, no_wrap=True, overflow="fold")
    for record in records:
        table.add_row(*(Text(cell(record.get(c))) for c in columns))
    return table


_PROSE_FLOOR = 16
# Columns that name what a row is about: left out last.
_IDENTIFIERS = frozenset({"id", "workflow", "name"})
_LONGEST_WORD = 40


def _is_prose(values: Iterable[str]) -> bool:
    """Whether a column holds prose (a value with a space): it may wrap at its words."""
    return any(" " in value.strip() for value in values)


def _layout(
    columns: Sequence[str], records: Sequence[Mapping[str, Any]]
) -> list[tuple[str, int, bool, int]]:
    """Each column's name, widest value (or header), whether it is prose, and its floor.

    A prose column's floor keeps its longest word whole (up to 40 characters) and lines
    readable; a word column's floor is its full width.
    """
    out = []
    for column in columns:
        values = [cell(r.get(column)) for r in records]
        natural = max([len(column), *(len(v) for v in values)])
        prose = _is_prose(values)
        if prose:
            word = max((len(w) for v in values for w in v.split()), default=0)
            floor = min(natural, max(_PROSE_FLOOR, len(column), min(word, _LONGEST_WORD)))
        else:
            floor = natural
        out.append((column, natural, prose, floor))
    return out


def _needed_width(
    columns: Sequence[str], records: Sequence[Mapping[str, Any]], gap: int = 1
) -> int:
    """The narrowest the table can be: word columns whole, prose at its floor."""
    floors = [floor for *_, floor in _layout(columns, records)]
    return sum(floors) + gap * max(len(columns) - 1, 0)


def _first_to_leave_out(columns: Sequence[str], records: Sequence[Mapping[str, Any]]) -> str:
    """Which column goes first when the table does not fit.

    A prose column after the first prose column (the arguments beside the text), then the
    widest word column (the rightmost of equals) that is no identifier, then the last.
    """
    layout = _layout(columns, records)
    prose = [c for c, _, is_prose, _ in layout if is_prose]
    if len(prose) > 1:
        return prose[-1]
    words = [
        (n, i, c)
        for i, (c, n, is_prose, _) in enumerate(layout)
        if not is_prose and c not in _IDENTIFIERS
    ]
    return max(words)[2] if words else columns[-1]


def fit_widths(
    natural: Sequence[int], available: int, *, floors: Sequence[int] | None = None
) -> list[int]:
    """Cap column widths so they sum to at most ``available``, cutting the widest first.

    Args:
        natural: Each column's widest value.
        available: The characters there are for the values.
        floors: Widths no column is cut below (default: 6 each).

    Returns:
        The width of each column.

    Example:
        >>> fit_widths([10, 50, 4], 40)
        [10, 26, 4]
    """
    floors = [min(n, max(f, 1)) for n, f in zip(natural, floors or [6] * len(natural), strict=True)]
    if sum(floors) > available:
        # Not even the floors fit: shrink them in proportion (headers get cut, rows stay one line).
        floors = [max(3, f * available // sum(floors)) for f in floors]
    widths = list(natural)
    cap = max(widths, default=0)
    # Lower one common cap until everything fits; a column never goes below its floor.
    while (
        cap > 1
        and sum(max(min(w, cap), f) for w, f in zip(widths, floors, strict=True)) > available
    ):
        cap -= 1
    return [max(min(w, cap), f) for w, f in zip(widths, floors, strict=True)]


def query_listing(records: Iterable[Mapping[str, Any]]) -> Group:
    """Return the named queries as readable entries: name and columns, description, parameters.

    Args:
        records: Objects with ``name``, ``description``, ``columns`` (list) and ``parameters``
            (list of ``"name (kind): description"`` strings).
    """
    parts: list[Any] = []
    for record in records:
        title = Text(record["name"], style="bold")
        title.append(f"  -> {', '.join(record['columns'])}", style="dim")
        parts.append(title)
        parts.append(Padding(Text(record["description"]), (0, 0, 0, 4), expand=False))
        for parameter in record["parameters"]:
            parts.append(
                Padding(Text(f"--bind {parameter}", style="cyan"), (0, 0, 0, 4), expand=False)
            )
        parts.append(Text(""))
    return Group(*parts)


def mapping_table(data: Mapping[str, Any], *, title: str | None = None) -> Table:
    """Return a two-column key/value table; nested mappings are flattened with dotted keys."""
    table = Table(title=title, show_header=False, box=box.SIMPLE, show_edge=False, pad_edge=False)
    table.add_column("key", style="bold", no_wrap=True)
    table.add_column("value", overflow="fold")
    for key, value in flatten(data):
        # An empty mapping (the scopes of an empty store) reads "none", not "{}".
        shown = "none" if isinstance(value, Mapping) and not value else cell(value)
        table.add_row(Text(key), Text(shown))
    return table


def workflow_tree(workflow: Workflow, width: int | None = None) -> Tree:
    """Return a workflow as an indented tree.

    Instructions show their text, calls show ``name(args)``, the agent and a short output;
    failed calls are listed under the step they were made in (marked ``FAILED``), and revised
    instructions are listed at the end.

    Args:
        workflow: The workflow.
        width: Fit every line into this many columns (cut with an ellipsis); ``None``: wrap.
    """

    def fit(label: Text, depth: int) -> Text:
        # Each tree level indents by 4 columns; one step stays one line.
        if width is not None:
            label.truncate(max(width - 4 * depth, 20), overflow="ellipsis")
        return label

    header = Text(workflow.id, style="bold")
    if workflow.title:
        header.append(f"  {_short(workflow.title)}", style="italic")
    meta = [f"scope={workflow.scope}"]
    meta += [
        f"{k}={getattr(workflow, k)}"
        for k in ("session", "framework", "created", "split")
        if getattr(workflow, k)
    ]
    header.append(f"  ({', '.join(meta)})", style="dim")
    root = Tree(fit(header, 0))
    failed_under: dict[str | None, list[Any]] = {}
    for failed in workflow.failed:
        failed_under.setdefault(failed.parent, []).append(failed)
    nodes: dict[str, Tree] = {}
    for path, step in workflow.walk():
        parent_path = path.rpartition(".")[0]
        parent = nodes[parent_path] if parent_path else root
        nodes[path] = parent.add(fit(_step_label(step), path.count(".") + 1))
    for failed_parent, failures in failed_under.items():
        parent = nodes.get(failed_parent or "", root)
        for failed in failures:
            label = Text("FAILED ", style="bold red")
            label.append_text(_step_label(failed.call))
            label.append(f"  error: {_short(failed.error)}", style="red")
            parent.add(fit(label, (failed_parent or "").count(".") + 2))
    if workflow.revised:
        revised = root.add(Text("revised instructions", style="dim"))
        for step in workflow.revised:
            revised.add(fit(_step_label(step), 2))
    return root


def _step_label(step: Step) -> Text:
    if isinstance(step, InstructionStep):
        label = Text("instruction ", style="bold cyan")
        label.append(_short(step.text))
        if step.revision_of:
            label.append(f"  (revises {step.revision_of})", style="dim")
        return label
    assert isinstance(step, CallStep)
    label = Text("call ", style="bold green")
    label.append(step.name, style="green")
    args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in step.args.items())
    label.append(f"({_short(args)})")
    if step.agent:
        label.append(f"  agent={step.agent}", style="magenta")
    if step.output is not None:
        output = (
            step.output
            if isinstance(step.output, str)
            else json.dumps(step.output, ensure_ascii=False)
        )
        label.append(f"  -> {_short(output)}", style="dim")
    return label


def _short(text: str, limit: int = _MAX_VALUE_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def cell(value: Any) -> str:
    """Return a value as one line of text for a table or CSV cell (``None`` is empty)."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, Mapping | list | tuple):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def flatten(data: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Return ``(dotted.key, value)`` pairs of a nested mapping, depth first."""
    out: list[tuple[str, Any]] = []
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.extend(flatten(value, f"{name}."))
        else:
            out.append((name, value))
    return out


def make_console(*, stderr: bool = False) -> Console:
    """Return a console writing to the current stdout/stderr (so click's test runner sees it)."""
    return Console(stderr=stderr, soft_wrap=False, highlight=False)
