"""Terminal rendering of the demo (rich): chat turns, suggestion provenance, query results.

User-supplied and model-produced strings are wrapped in :class:`rich.text.Text`, never parsed as
rich markup, so an answer containing ``[...]`` prints as written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console, Group
from rich.markdown import Markdown
from rich.panel import Panel
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from em_plugin.session import SEPARATOR
from em_plugin.suggest.types import Suggestion

_SOURCE_STYLE = {
    "episodic": "green",
    "procedural": "cyan",
    "llm": "magenta",
    "fallback": "yellow",
}
_MAX_EVIDENCE = 4
_MAX_CELL = 60


def section(console: Console, title: str, subtitle: str | None = None) -> None:
    """Print a section heading (a rule, then an optional dim line)."""
    console.print()
    console.print(Rule(Text(title, style="bold")))
    if subtitle:
        console.print(Text(subtitle, style="dim"))


def setup_table(
    *, store: str, workflows: int, loaded: int, embedder: str, model: str, chain: str
) -> Table:
    """Return the table that says what the demo runs on."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    seeded = f"{loaded} bootstrap workflows loaded now" if loaded else "bootstrap already loaded"
    table.add_row("store", Text(store))
    table.add_row("memory", Text(f"{workflows} workflows ({seeded})"))
    table.add_row("embedder", Text(embedder))
    table.add_row("crew model", Text(model))
    table.add_row("chain", Text(f"{chain} (suggestions)"))
    return table


def user_turn(console: Console, framework: str, session_id: str, text: str) -> None:
    """Print what the user typed."""
    console.print()
    label = Text.assemble(("user", "bold blue"), (f"  ({framework}, session {session_id})", "dim"))
    console.print(label)
    console.print(Text("> " + text, style="bold"))


def answer(console: Console, title: str, text: str, crew_answer: str | None = None) -> None:
    """Print an answer in a panel, the crew's result and the appended suggestions set apart.

    Args:
        console: Where to print.
        title: The panel title (e.g. ``"Chemist Agent + episodic memory"``).
        text: The whole answer, exactly as the user receives it.
        crew_answer: The crew's own result, when known; the rest of ``text`` is the suggestions.
    """
    head, tail = _split(text, crew_answer)
    parts: list[Any] = [_body(head)]
    if tail:
        parts.append(Text(SEPARATOR.rstrip("\n")))
        parts.append(Text(tail, style="green"))
    console.print(Panel(Group(*parts), title=Text(title), title_align="left", expand=True))


def suggestion_sources(console: Console, suggestions: Sequence[Suggestion]) -> None:
    """Print where each suggestion came from: its source, score and evidence workflows."""
    if not suggestions:
        console.print(Text("(no suggestions this turn)", style="dim"))
        return
    table = Table(title="where the suggestions came from", title_justify="left", expand=False)
    table.add_column("#", justify="right")
    table.add_column("suggestion", overflow="fold", max_width=46)
    table.add_column("tool")
    table.add_column("source")
    table.add_column("score", justify="right")
    table.add_column("evidence (memory workflow @ leaf position)", overflow="fold")
    for number, suggestion in enumerate(suggestions, start=1):
        table.add_row(
            str(number),
            Text(suggestion.text),
            Text(suggestion.tool or "-"),
            Text(suggestion.source, style=_SOURCE_STYLE.get(suggestion.source, "")),
            f"{suggestion.score:.2f}",
            Text(_evidence(suggestion)),
        )
    console.print(table)


def steps_table(console: Console, title: str, rows: Sequence[Mapping[str, Any]]) -> None:
    """Print ``workflow-steps`` query rows as a tree-like table (indented by nesting depth)."""
    table = Table(title=title, title_justify="left")
    table.add_column("seq", justify="right")
    table.add_column("step (indented by depth)", overflow="fold")
    table.add_column("agent")
    table.add_column("args", overflow="fold", max_width=48)
    for row in rows:
        depth = int(str(row.get("depth") or 0))
        if row.get("kind") == "instruction":
            step = Text("  " * depth + f"instruction: {row.get('text')}", style="bold")
        else:
            step = Text("  " * depth + f"call {row.get('tool')}", style="cyan")
        table.add_row(
            str(row.get("seq")), step, Text(_cell(row.get("agent"))), _cell(row.get("args"))
        )
    console.print(table)


def commands(console: Console, lines: Sequence[tuple[str, str]]) -> None:
    """Print the commands to explore further, each after a comment saying what it shows.

    Commands are printed whole (soft-wrapped, never cut), so they can be copied.
    """
    section(console, "explore further")
    for command, what in lines:
        console.print(Text(f"# {what}", style="dim"), soft_wrap=True)
        console.print(Text(command, style="bold cyan"), soft_wrap=True)


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= _MAX_CELL else text[: _MAX_CELL - 1] + "…"


def _split(text: str, crew_answer: str | None) -> tuple[str, str]:
    if crew_answer and text.startswith(crew_answer):
        return crew_answer, text[len(crew_answer) :].lstrip("\n")
    head, sep, tail = text.rpartition(SEPARATOR + "Suggested next steps")
    if sep:
        return head, tail and "Suggested next steps" + tail
    return text, ""


def _body(text: str) -> Any:
    # Markdown tables (the formatter agent's output) read better rendered.
    if "\n| ---" in text or text.lstrip().startswith("|"):
        return Markdown(text)
    return Text(text)


def _evidence(suggestion: Suggestion) -> str:
    if not suggestion.evidence:
        return "crew description" if suggestion.source == "fallback" else "-"
    shown = [f"{e.workflow_id} @{e.position}" for e in suggestion.evidence[:_MAX_EVIDENCE]]
    more = len(suggestion.evidence) - len(shown)
    return ", ".join(shown) + (f" (+{more} more)" if more > 0 else "")
