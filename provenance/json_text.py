"""JSON text exactly as ``json.dumps(value, ensure_ascii=False, ...)`` writes it, made faster.

A save writes JSON text several times per call step (each argument value as an RDF literal, the
step index's argument key, the local copy of the workflow). ``json.dumps`` with any option set
builds a new encoder on every call, which costs more than encoding a small value; most values are
a string or an integer. :func:`json_writer` builds the encoder once and writes those scalars
directly, with the very functions ``json`` uses for them, so the text is identical (a test
compares the two on arbitrary JSON values).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json.encoder import encode_basestring
from typing import Any

__all__ = ["json_text", "json_writer"]


def json_writer(
    *,
    sort_keys: bool = False,
    default: Callable[[Any], Any] | None = None,
    allow_nan: bool = True,
) -> Callable[[Any], str]:
    """Return a function equal to ``json.dumps(value, ensure_ascii=False, ...)`` with these options.

    Args:
        sort_keys: As ``json.dumps``.
        default: As ``json.dumps``.
        allow_nan: As ``json.dumps``.

    Returns:
        The function; it raises what ``json.dumps`` raises.
    """
    encode = json.JSONEncoder(
        ensure_ascii=False, sort_keys=sort_keys, default=default, allow_nan=allow_nan
    ).encode

    def scalar(value: Any) -> str | None:
        kind = type(value)
        if kind is str:
            return encode_basestring(value)
        if kind is int:
            return int.__repr__(value)
        if value is None:
            return "null"
        if value is True:
            return "true"
        if value is False:
            return "false"
        return None  # floats and containers: the encoder's own rules

    def write(value: Any) -> str:
        text = scalar(value)
        if text is not None:
            return text
        # Tool arguments are mostly a few string or integer fields: written here with json's
        # separators; anything else (nesting, floats, non-string keys) goes to the encoder.
        if type(value) is dict and all(type(key) is str for key in value):
            parts = []
            for key in sorted(value) if sort_keys else value:
                item = scalar(value[key])
                if item is None:
                    return encode(value)
                parts.append(f"{encode_basestring(key)}: {item}")
            return "{" + ", ".join(parts) + "}"
        return encode(value)

    return write


#: ``json.dumps(value, ensure_ascii=False)``.
json_text: Callable[[Any], str] = json_writer()
