"""A Redactor remembers strings that hold no secret, and only those."""

from __future__ import annotations

import pytest

from em_plugin.capture import redaction
from em_plugin.capture.redaction import REDACTED, Redactor

_SECRET = "use key sk-abcdefghijklmnopqrstuvwxyz012345 please"


def test_clean_strings_are_remembered_and_secrets_never() -> None:
    redactor = Redactor()
    assert redactor.text("Please verify the supplier options") == (
        "Please verify the supplier options"
    )
    assert "Please verify the supplier options" in redactor._clean
    for _ in range(2):  # redacted each time, never remembered
        out = redactor.text(_SECRET)
        assert REDACTED in out and "sk-abc" not in out
    assert not any("sk-" in s for s in redactor._clean)


def test_each_redactor_has_its_own_memory() -> None:
    plain, strict = Redactor(), Redactor(patterns=[r"supplier"])
    text = "Please verify the supplier options"
    assert plain.text(text) == text
    assert strict.text(text) == f"Please verify the {REDACTED} options"
    assert strict.text(text) == f"Please verify the {REDACTED} options"


def test_the_memory_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(redaction, "_CLEAN_ENTRIES", 3)
    redactor = Redactor()
    for i in range(7):
        assert redactor.text(f"text {i}") == f"text {i}"
        assert len(redactor._clean) <= 3
    long = "x" * (redaction._CLEAN_MAX_CHARS + 1)
    assert redactor.text(long) == long and long not in redactor._clean
