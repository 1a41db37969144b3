"""Redact secrets before anything is stored (``docs/provenance-mapping.md``, "Secrets").

Two rules, applied to every text a workflow stores (tool args and outputs, instruction texts,
error messages of failed calls, ``extra`` fields, titles and sources):

* **By key.** A value is replaced by :data:`REDACTED` when its key names a secret: the key is
  split into words (``snake_case``, ``kebab-case``, ``camelCase``, dotted paths) and checked
  against :data:`SECRET_WORDS` and :data:`SECRET_PAIRS`. Whole words, not substrings:
  ``access_token``, ``apiKey``, ``pwd`` and ``api_keys`` are secrets, ``max_tokens`` and
  ``keyboard`` are not. Under a secret key, scalars and objects (credential records) are
  replaced; a list is walked, its scalars replaced and its objects redacted key by key (Galaxy's
  ``token_set`` is a list of records, and a list of API keys is a list of secrets).
* **By pattern.** Inside any string, the well-known credential formats of :data:`PATTERNS`
  (``sk-...`` keys, AWS key ids, GitHub and Slack tokens, JWTs, PEM private-key blocks,
  ``user:pass@`` in URLs, ``Authorization:`` headers, ``password=...`` assignments, ...) are
  replaced, keeping the text around them. A value that is a whole HTTP credential (``"Bearer
  ..."``) is replaced entirely.

Users add their own patterns with :class:`Redactor` (``EpisodicMemory(redact_patterns=...)``):
each match is replaced, or only its ``secret`` group when the pattern names one.

Identifiers (workflow, step and session ids, tool and agent names, scopes) are never rewritten:
they are the workflow's identity, and a credential has no business there.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from em_plugin.errors import ConfigurationError
from provenance.model import CallStep, FailedCall, InstructionStep, Step, Workflow

__all__ = [
    "PATTERNS",
    "REDACTED",
    "SECRET_PAIRS",
    "SECRET_WORDS",
    "Redactor",
    "is_secret_key",
    "redact_args",
    "redact_text",
    "redact_workflow",
]

REDACTED = "[REDACTED]"

#: A key containing one of these words is a secret.
SECRET_WORDS = frozenset(
    {
        "apikey",
        "apikeys",
        "authorization",
        "auth",
        "bearer",
        "cookie",
        "cookies",
        "credential",
        "credentials",
        "jwt",
        "passphrase",
        "passwd",
        "password",
        "passwords",
        "privatekey",
        "pwd",
        "secret",
        "secrets",
        "token",
    }
)
#: Consecutive word pairs that make a secret (``api_key``, ``private-key``, ``ssh_keys``).
SECRET_PAIRS = frozenset(
    (first, second)
    for first in ("api", "private", "secret", "access", "ssh", "account", "signing", "encryption")
    for second in ("key", "keys")
)

_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_CREDENTIAL_VALUE = re.compile(r"^\s*(bearer|basic|token)\s+\S{8,}", re.IGNORECASE)

#: Well-known credential formats, found inside any stored string. Each is (name, regex, hints):
#: the regex runs only on texts holding one of the hints (a cheap substring test, on the
#: lowercased text), and a ``secret`` group, when present, is the only part replaced (so the
#: user of a URL and the name of a header stay readable).
PATTERNS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "PEM private key block",
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----[\s\S]*?"
        r"(?:-----END[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|$)",
        ("-----begin",),
    ),
    (
        "JSON web token",
        r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
        ("eyj",),
    ),
    ("OpenAI / Anthropic style key", r"\bsk-[A-Za-z0-9_-]{16,}", ("sk-",)),
    ("Stripe key", r"\b[rsp]k_(?:live|test)_[A-Za-z0-9]{16,}", ("k_live_", "k_test_")),
    (
        "AWS access key id",
        r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b",
        ("akia", "asia", "abia", "acca", "a3t"),
    ),
    (
        "GitHub token",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    ("GitLab token", r"\bglpat-[A-Za-z0-9_-]{20,}", ("glpat-",)),
    ("Slack token", r"\bxox[abposre]-[A-Za-z0-9-]{10,}", ("xox",)),
    (
        "Slack webhook",
        r"https://hooks\.slack\.com/services/(?P<secret>[A-Za-z0-9/]{20,})",
        ("hooks.slack.com",),
    ),
    ("Google API key", r"\bAIza[0-9A-Za-z_-]{35}", ("aiza",)),
    ("Hugging Face token", r"\bhf_[A-Za-z0-9]{30,}", ("hf_",)),
    ("npm token", r"\bnpm_[A-Za-z0-9]{36}", ("npm_",)),
    ("SendGrid key", r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}", ("sg.",)),
    ("Telegram bot token", r"\b\d{8,10}:AA[A-Za-z0-9_-]{30,}", (":aa",)),
    (
        "password in a URL",
        r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/@:\"'<>]*:(?P<secret>[^\s/@\"'<>]+)@",
        ("://",),
    ),
    (
        "token in a URL",
        r"\b[A-Za-z][A-Za-z0-9+.-]*://(?P<secret>[A-Za-z0-9_.~-]{20,})@",
        ("://",),
    ),
    (
        "HTTP authorization header",
        r"(?i)\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?"
        r"(?P<secret>(?:(?:bearer|basic|token|digest|negotiate)\s+)?[^\s\"',;]+)",
        ("authorization",),
    ),
    ("bearer credential", r"(?i)\bbearer\s+(?P<secret>[A-Za-z0-9._~+/-]{8,}=*)", ("bearer",)),
)
# Substrings one of which a secret-looking key holds (a prefilter for the assignment rules).
_KEY_HINTS = ("pass", "pwd", "secret", "token", "key", "auth", "cookie", "credential", "jwt")

# ``key=value``, ``key: value`` and ``"key": "value"`` in free text, and ``--key value`` flags on
# command lines. The key is checked with is_secret_key, so ``max_tokens=100`` stays and
# ``aws_secret_access_key=...`` goes.
_VALUE = r"(?P<secret>(?:(?:bearer|basic|token)\s+)?[^\s\"',;&)}\]]+)"
_ASSIGNMENT = re.compile(
    r"(?<![A-Za-z0-9_.-])(?P<key>[A-Za-z_][A-Za-z0-9_.-]{1,60})[\"']?\s*[:=]\s*[\"']?" + _VALUE,
    re.IGNORECASE,
)
_FLAG = re.compile(
    r"(?<!\S)--?(?P<key>[A-Za-z][A-Za-z0-9_.-]{1,60})\s+[\"']?" + _VALUE, re.IGNORECASE
)
_HINTS = tuple(sorted({*_KEY_HINTS, *(h for *_, hints in PATTERNS for h in hints)}))
_ANY_HINT = re.compile("|".join(re.escape(h) for h in _HINTS))


# Bounds of a Redactor's set of strings known to hold no secret.
_CLEAN_ENTRIES = 50_000
_CLEAN_MAX_CHARS = 2_000


def _has_hint(lower: str) -> bool:
    # Measured on the benchmark files: one regex scan wins on short strings, and substring
    # tests (each a fast C search) win on long ones.
    if len(lower) > 256:
        return any(h in lower for h in _HINTS)
    return _ANY_HINT.search(lower) is not None


@lru_cache(maxsize=4096)
def is_secret_key(key: str) -> bool:
    """Return whether an argument name denotes a secret (see the module doc)."""
    words = [w.lower() for w in _WORDS.findall(key)]
    if any(w in SECRET_WORDS for w in words):
        return True
    return any(pair in SECRET_PAIRS for pair in zip(words, words[1:], strict=False))


class Redactor:
    """Redacts secrets by key and by pattern (see the module doc), with optional user patterns.

    Args:
        patterns: Extra regular expressions (text or compiled). Each match is replaced by
            :data:`REDACTED`, or only its ``secret`` group when the pattern has one.

    Raises:
        ConfigurationError: When a pattern is not a valid regular expression or matches the
            empty string.
    """

    def __init__(self, patterns: Iterable[str | re.Pattern[str]] = ()) -> None:
        if isinstance(patterns, str | re.Pattern):
            patterns = [patterns]
        compiled: list[tuple[re.Pattern[str], tuple[str, ...]]] = [
            (re.compile(regex), hints) for _, regex, hints in PATTERNS
        ]
        # User patterns come last and always run (they have no hints).
        compiled.extend((_compile_user_pattern(p), ()) for p in patterns)
        self.patterns: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = tuple(compiled)
        # Strings already found clean: instruction texts and argument values repeat across
        # workflows (the bench: 40k instructions, 2.4k distinct texts). Only clean strings are
        # kept, so no secret outlives the call that redacted it.
        self._clean: set[str] = set()

    # ------------------------------------------------------------------------- values

    def text(self, value: str) -> str:
        """Return ``value`` with every credential found by pattern replaced."""
        if value in self._clean:
            return value
        out = self._redact(value)
        if out == value and len(value) <= _CLEAN_MAX_CHARS:
            if len(self._clean) >= _CLEAN_ENTRIES:
                self._clean.clear()  # bounded memory; the next strings refill it
            self._clean.add(value)
        return out

    def _redact(self, value: str) -> str:
        if _CREDENTIAL_VALUE.match(value):
            return REDACTED
        out = value
        # One C-speed scan for every hint: most stored strings hold none and skip all patterns.
        lower = value.lower()
        if _has_hint(lower):
            for pattern, hints in self.patterns[: len(PATTERNS)]:
                if any(h in lower for h in hints):
                    out = pattern.sub(_replace, out)
            if any(h in lower for h in _KEY_HINTS):
                if ":" in out or "=" in out:
                    out = _ASSIGNMENT.sub(_replace_assignment, out)
                if "-" in out:
                    out = _FLAG.sub(_replace_assignment, out)
        for pattern, _ in self.patterns[len(PATTERNS) :]:
            out = pattern.sub(_replace, out)
        return out

    def value(self, value: Any) -> Any:
        """Return a JSON value with secrets redacted by key (in objects) and by pattern."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {k: self._keyed(k, v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value

    def _keyed(self, key: Any, value: Any) -> Any:
        if not (isinstance(key, str) and is_secret_key(key)):
            return self.value(value)
        if isinstance(value, list | tuple):
            # Records in the list are walked; bare values in it are secrets themselves.
            return [
                self.value(v) if isinstance(v, Mapping | list | tuple) else _gone(v) for v in value
            ]
        return _gone(value)

    def args(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """Return a copy of tool arguments with secrets redacted."""
        return self.value(dict(args))

    def suggestion(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """Return a suggestion's JSON record with its free-text and argument fields redacted.

        Suggestions can quote the live conversation, which no save has redacted yet. Tool names,
        scores and the workflow ids of the evidence are identity and stay as they are.
        """
        out = dict(record)
        for key in _SUGGESTION_TEXT_FIELDS:
            if out.get(key) is not None:
                out[key] = self.value(out[key])
        return out

    # ------------------------------------------------------------------------- workflows

    def workflow(self, workflow: Workflow) -> Workflow:
        """Return the workflow with secrets redacted wherever text is stored.

        The same object is returned when nothing needed redacting.
        """
        steps = tuple(self._step(s) for s in workflow.steps)
        failed = tuple(self._failed(f) for f in workflow.failed)
        revised = tuple(self._step(r) for r in workflow.revised)
        changes: dict[str, Any] = {}
        for name in ("title", "source"):
            value = getattr(workflow, name)
            if value is not None and self.text(value) != value:
                changes[name] = self.text(value)
        extra = self.value(dict(workflow.extra))
        if extra != dict(workflow.extra):
            changes["extra"] = extra
        if not _same(steps, workflow.steps):
            changes["steps"] = steps
        if not _same(failed, workflow.failed):
            changes["failed"] = failed
        if not _same(revised, workflow.revised):
            changes["revised"] = revised
        return workflow.replace(**changes) if changes else workflow

    def _failed(self, failed: FailedCall) -> FailedCall:
        call = self._step(failed.call)
        error = self.text(failed.error)
        if call is failed.call and error == failed.error:
            return failed
        return dataclasses.replace(failed, call=call, error=error)

    def _step(self, step: Step) -> Any:
        children = tuple(self._step(s) for s in step.steps)
        changes: dict[str, Any] = {}
        if not _same(children, step.steps):
            changes["steps"] = children
        extra = self.value(dict(step.extra))
        if extra != dict(step.extra):
            changes["extra"] = extra
        if isinstance(step, CallStep):
            args = self.args(step.args)
            if args != dict(step.args):
                changes["args"] = args
            output = self.value(step.output)
            if output != step.output:
                changes["output"] = output
        elif isinstance(step, InstructionStep):
            text = self.text(step.text)
            if text != step.text:
                changes["text"] = text
        return dataclasses.replace(step, **changes) if changes else step


_SUGGESTION_TEXT_FIELDS = ("text", "args", "example_args", "detail")


def _compile_user_pattern(pattern: str | re.Pattern[str]) -> re.Pattern[str]:
    if isinstance(pattern, re.Pattern):
        compiled = pattern
    elif isinstance(pattern, str):
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise ConfigurationError(
                f"redact pattern {pattern!r} is not a valid regular expression: {exc}"
            ) from None
    else:
        raise ConfigurationError(
            f"a redact pattern must be a string or a compiled regex, not {type(pattern).__name__}"
        )
    if not isinstance(compiled.pattern, str):
        raise ConfigurationError(f"redact pattern {compiled.pattern!r} must be a text pattern")
    if compiled.fullmatch(""):
        raise ConfigurationError(f"redact pattern {compiled.pattern!r} matches the empty string")
    return compiled


def _replace(match: re.Match[str]) -> str:
    if "secret" in match.re.groupindex and match.group("secret") is not None:
        start, end = match.span("secret")
        base = match.start()
        whole = match.group(0)
        return whole[: start - base] + REDACTED + whole[end - base :]
    return REDACTED


def _replace_assignment(match: re.Match[str]) -> str:
    if match.string.startswith(REDACTED, match.start("secret")) or not is_secret_key(
        match.group("key")
    ):
        return match.group(0)
    return _replace(match)


def _gone(value: Any) -> Any:
    # null and booleans carry no secret ("password": null says none was given).
    return value if value is None or isinstance(value, bool) else REDACTED


def _same(new: tuple[Any, ...], old: tuple[Any, ...]) -> bool:
    return all(a is b for a, b in zip(new, old, strict=True))


_DEFAULT = Redactor()


def redact_text(text: str) -> str:
    """Return ``text`` with the credentials of :data:`PATTERNS` replaced by :data:`REDACTED`."""
    return _DEFAULT.text(text)


def redact_args(args: Mapping[str, Any]) -> dict[str, Any]:
    """Return a copy of tool arguments with secret values replaced by :data:`REDACTED`."""
    return _DEFAULT.args(args)


def redact_workflow(
    workflow: Workflow, *, patterns: Iterable[str | re.Pattern[str]] = ()
) -> Workflow:
    """Return the workflow with secrets redacted wherever text is stored (failed calls too).

    Args:
        workflow: The workflow.
        patterns: Extra regular expressions, as :class:`Redactor` takes them.

    Returns:
        The redacted workflow; the same object when nothing needed redacting.

    Raises:
        ConfigurationError: When a pattern is invalid.
    """
    redactor = _DEFAULT if not patterns else Redactor(patterns)
    return redactor.workflow(workflow)
