"""Redact secrets in tool arguments before anything is stored (DESIGN §11).

A value is replaced by :data:`REDACTED` when its key names a secret: the key is split into words
(``snake_case``, ``kebab-case``, ``camelCase``) and checked against :data:`SECRET_WORDS` and
:data:`SECRET_PAIRS`. Whole words, not substrings: ``access_token`` and ``apiKey`` are secrets,
``max_tokens`` and ``keyboard`` are not. Values that carry an HTTP credential scheme
(``"Bearer ..."``, ``"Basic ..."``) are redacted whatever their key. Nested objects and lists
are walked. Under a secret key, scalars and objects (credential records) are replaced, but a
list is walked: it is structure (Galaxy's ``token_set`` parameter), not a credential.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from provenance.model import CallStep, Step, Workflow

__all__ = [
    "REDACTED",
    "SECRET_PAIRS",
    "SECRET_WORDS",
    "is_secret_key",
    "redact_args",
    "redact_workflow",
]

REDACTED = "[REDACTED]"

#: A key containing one of these words is a secret.
SECRET_WORDS = frozenset(
    {
        "apikey",
        "authorization",
        "auth",
        "bearer",
        "cookie",
        "credential",
        "credentials",
        "passphrase",
        "passwd",
        "password",
        "secret",
        "token",
    }
)
#: Consecutive word pairs that make a secret (``api_key``, ``private-key``, ``client_secret``).
SECRET_PAIRS = frozenset({("api", "key"), ("private", "key"), ("secret", "key"), ("access", "key")})

_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_CREDENTIAL_VALUE = re.compile(r"^\s*(bearer|basic|token)\s+\S{8,}", re.IGNORECASE)


def is_secret_key(key: str) -> bool:
    """Return whether an argument name denotes a secret (see the module doc)."""
    words = [w.lower() for w in _WORDS.findall(key)]
    if any(w in SECRET_WORDS for w in words):
        return True
    return any(pair in SECRET_PAIRS for pair in zip(words, words[1:], strict=False))


def _redact(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {
            k: REDACTED
            if isinstance(k, str) and is_secret_key(k) and not isinstance(v, list | tuple)
            else _redact(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_redact(v) for v in value]
    if isinstance(value, str) and _CREDENTIAL_VALUE.match(value):
        return REDACTED
    return value


def redact_args(args: Mapping[str, Any]) -> dict[str, Any]:
    """Return a copy of tool arguments with secret values replaced by :data:`REDACTED`."""
    return _redact(args)


def _redact_step(step: Step) -> Step:
    children = tuple(_redact_step(s) for s in step.steps)
    same_children = all(a is b for a, b in zip(children, step.steps, strict=True))
    if isinstance(step, CallStep):
        args = redact_args(step.args)
        if args != dict(step.args) or not same_children:
            return dataclasses.replace(step, args=args, steps=children)
        return step
    return step if same_children else dataclasses.replace(step, steps=children)


def redact_workflow(workflow: Workflow) -> Workflow:
    """Return the workflow with secrets redacted in every call's args (failed calls too).

    The same object is returned when nothing needed redacting.
    """
    steps = tuple(_redact_step(s) for s in workflow.steps)
    failed = tuple(
        dataclasses.replace(f, call=_redact_step(f.call))  # type: ignore[arg-type]
        for f in workflow.failed
    )
    if all(a is b for a, b in zip(steps, workflow.steps, strict=True)) and all(
        a.call is b.call for a, b in zip(failed, workflow.failed, strict=True)
    ):
        return workflow
    return workflow.replace(steps=steps, failed=failed)
