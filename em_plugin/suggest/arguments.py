"""A suggestion's arguments from the current workflow (data flow), or past values as examples.

A past call's argument often came from an earlier step's output (PROV records it as the call
``prov:used`` an entity another call ``prov:wasGeneratedBy``). When the cited memory workflow
shows that, the suggestion's argument is bound to the *current* workflow's corresponding output:
the most recent current call of the same tool, at the same place in its output. Three shapes of
flow are recognised, each at any place (dict key or list index path) of the earlier output:

* **the value itself**: the argument equals the output there;
* **a projection**: the argument is a list of mappings, each holding some of the keys of the
  output's list element at the same index (e.g. ``{name, cas}`` taken from ingredient records);
* **inside a text**: a string argument contains a string of the output (e.g. a product name in
  a table title); the current output's string takes its place.

An argument that cannot be bound is kept only as an example (:attr:`Suggestion.example_args`,
with :attr:`Suggestion.example_from`), never as the value to use. :attr:`Suggestion.args_from`
says which of the two the suggestion holds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from em_plugin.suggest.base import SuggestionRequest
from em_plugin.suggest.cited import CitedLeaf, CitedWorkflows
from em_plugin.suggest.types import ArgsFrom, Suggestion
from provenance.model import CallStep, Workflow

__all__ = ["bind_arguments", "bind_value"]

#: Nodes of an output that are searched (bounds the work on large outputs).
MAX_NODES = 400
#: Shortest output string that counts when found inside a text argument.
MIN_TEXT = 4

_Path = tuple[str | int, ...]
_MISSING = object()


def _nodes(value: Any, path: _Path = ()) -> Iterator[tuple[_Path, Any]]:
    stack = [(path, value)]
    seen = 0
    while stack and seen < MAX_NODES:
        here, node = stack.pop(0)
        seen += 1
        yield here, node
        if isinstance(node, Mapping):
            stack.extend(((*here, k), v) for k, v in node.items() if isinstance(k, str))
        elif isinstance(node, list | tuple):
            stack.extend(((*here, i), v) for i, v in enumerate(node))


def _get(value: Any, path: _Path) -> Any:
    for key in path:
        if isinstance(key, str) and isinstance(value, Mapping) and key in value:
            value = value[key]
        elif isinstance(key, int) and isinstance(value, list | tuple) and key < len(value):
            value = value[key]
        else:
            return _MISSING
    return value


def _projection_keys(value: Any, node: Any) -> tuple[str, ...] | None:
    """The keys when ``value`` is ``node`` with some keys of each record kept, else ``None``."""
    if not isinstance(value, list) or not isinstance(node, list | tuple) or not value:
        return None
    if len(value) != len(node):
        return None
    keys: dict[str, None] = {}
    for item, record in zip(value, node, strict=True):
        if not isinstance(item, Mapping) or not isinstance(record, Mapping) or not item:
            return None
        if any(k not in record or record[k] != v for k, v in item.items()):
            return None
        keys.update(dict.fromkeys(item))
    return tuple(keys)


def _rebind(value: Any, node: Any, current: Any) -> Any:
    """``value``'s counterpart in ``current`` when ``value`` flowed from ``node``, else missing."""
    if value == node:
        return current
    keys = _projection_keys(value, node)
    if keys is not None:
        if not isinstance(current, list | tuple) or not all(
            isinstance(r, Mapping) for r in current
        ):
            return _MISSING
        return [{k: r[k] for k in keys if k in r} for r in current]
    if (
        isinstance(value, str)
        and isinstance(node, str)
        and isinstance(current, str)
        and len(node) >= MIN_TEXT
        and node in value
    ):
        return value.replace(node, current)
    return _MISSING


def bind_value(
    value: Any, earlier: Sequence[CallStep], current: Mapping[str, CallStep]
) -> tuple[bool, Any]:
    """Bind one past argument value to the current workflow.

    Args:
        value: The past argument value.
        earlier: The past workflow's calls before the suggested one, most recent first.
        current: The current workflow's most recent call per tool.

    Returns:
        ``(True, bound value)``, or ``(False, None)`` when the value did not flow from an
        earlier output that the current workflow also produced.
    """
    for past in earlier:
        now = current.get(past.name)
        if now is None or past.output is None or now.output is None:
            continue
        for path, node in _nodes(past.output):
            counterpart = _get(now.output, path)
            if counterpart is _MISSING:
                continue
            bound = _rebind(value, node, counterpart)
            if bound is not _MISSING:
                return True, bound
    return False, None


def _current_calls(workflow: Workflow) -> dict[str, CallStep]:
    # Later calls overwrite: the most recent one wins.
    return {s.name: s for _, s in workflow.walk() if isinstance(s, CallStep)}


def _past_call(suggestion: Suggestion, leaf: CitedLeaf) -> CallStep | None:
    if isinstance(leaf.step, CallStep) and leaf.step.name == suggestion.tool:
        return leaf.step
    # A lifted suggestion names the handoff above the cited leaf.
    return next(
        (s for s in leaf.ancestors if isinstance(s, CallStep) and s.name == suggestion.tool), None
    )


def bind_arguments(
    request: SuggestionRequest, suggestion: Suggestion, cited: CitedWorkflows
) -> Suggestion:
    """Return the suggestion with arguments bound from the current workflow, or as examples.

    Args:
        request: The current workflow and memory.
        suggestion: A suggestion (its ``args``, when a suggester set any, are past values).
        cited: The chain's cache of cited workflows.

    Returns:
        The suggestion with ``args`` (bound values), ``example_args``, ``example_from`` and
        ``args_from`` set from its first cited workflow that holds the call; unchanged args are
        moved to ``example_args`` when no cited workflow holds it.
    """
    if suggestion.tool is None:
        return suggestion
    for evidence in suggestion.evidence:
        leaf = cited.leaf(request, evidence)
        past = _past_call(suggestion, leaf) if leaf is not None else None
        if leaf is None or past is None:
            continue
        if not past.args:
            return dataclasses.replace(
                suggestion, args=None, example_args=None, example_from=None, args_from=None
            )
        current = _current_calls(request.workflow)
        bound: dict[str, Any] = {}
        examples: dict[str, Any] = {}
        for key, value in past.args.items():
            ok, found = bind_value(value, leaf.earlier, current) if current else (False, None)
            if ok:
                bound[key] = found
            else:
                examples[key] = value
        kind: ArgsFrom = "current" if not examples else "example" if not bound else "mixed"
        return dataclasses.replace(
            suggestion,
            args=bound or None,
            example_args=examples or None,
            example_from=leaf.workflow.id if examples else None,
            args_from=kind,
        )
    if suggestion.args:  # past values from a suggester that does not know the data flow
        first_id = suggestion.evidence[0].workflow_id if suggestion.evidence else None
        return dataclasses.replace(
            suggestion,
            args=None,
            example_args={**(suggestion.example_args or {}), **suggestion.args},
            example_from=suggestion.example_from or first_id,
            args_from="example",
        )
    return suggestion
