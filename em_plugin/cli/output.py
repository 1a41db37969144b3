"""One ``--format table|json|jsonl|csv`` option for every command, and the printing behind it.

``table`` is for people: rich tables that fit the terminal (cells are cut with an ellipsis,
never wrapped). ``json`` is one document, ``jsonl`` one object per line, ``csv`` a header row
and one row per record. ``--json`` stays as a hidden alias of ``--format json``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import click
from rich.text import Text

from em_plugin.cli import render

__all__ = ["FORMATS", "echo_json", "emit_mapping", "emit_records", "format_option"]

FORMATS = ("table", "json", "jsonl", "csv")
"""The output formats, in the order ``--help`` lists them."""

_F = TypeVar("_F", bound=Callable[..., Any])


def format_option(*choices: str, default: str = "table") -> Callable[[_F], _F]:
    """Add ``--format`` (passed as ``fmt``) and its hidden ``--json`` alias to a command.

    Args:
        *choices: The formats the command offers (default: :data:`FORMATS`).
        default: The format without the option.

    Returns:
        The decorator.
    """
    offered = choices or FORMATS

    def decorate(function: _F) -> _F:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if kwargs.pop("as_json", False):
                kwargs["fmt"] = "json"
            return function(*args, **kwargs)

        wrapper = click.option("--json", "as_json", is_flag=True, hidden=True)(wrapper)
        wrapper = click.option(
            "--format",
            "fmt",
            type=click.Choice(offered),
            default=default,
            show_default=True,
            help="Output format.",
        )(wrapper)
        return wrapper  # type: ignore[return-value]

    return decorate


def echo_json(data: Any) -> None:
    """Print ``data`` as indented JSON (non-ASCII kept as is)."""
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def _echo_jsonl(records: Sequence[Any]) -> None:
    for record in records:
        click.echo(json.dumps(record, ensure_ascii=False, default=str))


def emit_records(
    columns: Sequence[str],
    records: Sequence[Mapping[str, Any]],
    fmt: str,
    *,
    title: str | None = None,
    footer: str | None = None,
) -> None:
    """Print records (rows keyed by column) in ``fmt``.

    Args:
        columns: The columns, in display order.
        records: The rows.
        fmt: One of :data:`FORMATS`.
        title: The table's title (``table`` only).
        footer: A line printed under the table (``table`` only), e.g. a row count.
    """
    if fmt == "json":
        echo_json(list(records))
    elif fmt == "jsonl":
        _echo_jsonl(records)
    elif fmt == "csv":
        flat = [{c: _csv_value(r.get(c)) for c in columns} for r in records]
        click.echo(render.records_to_csv(columns, flat), nl=False)
    else:
        console = render.make_console()
        console.print(render.records_table(columns, records, title=title, width=console.width))
        if footer:
            console.print(footer)


def emit_mapping(data: Mapping[str, Any], fmt: str, *, title: str | None = None) -> None:
    """Print one result object in ``fmt`` (csv and the table flatten nested keys with dots)."""
    if fmt == "json":
        echo_json(data)
    elif fmt == "jsonl":
        _echo_jsonl([data])
    elif fmt == "csv":
        rows = [{"key": k, "value": _csv_value(v)} for k, v in render.flatten(data)]
        click.echo(render.records_to_csv(["key", "value"], rows), nl=False)
    else:
        console = render.make_console()
        if title:
            # Above the table, not in it: a long store path would wrap to the table's width.
            console.print(Text(title, style="bold"))
        console.print(render.mapping_table(data))


def _csv_value(value: Any) -> Any:
    # Numbers keep their full precision in CSV; lists and objects become JSON text.
    if isinstance(value, Mapping | list | tuple):
        return json.dumps(value, ensure_ascii=False, default=str)
    return value
