"""The test crews' tools, framework-neutral: each scaffold wraps them with its framework's ``tool``.

They are the conformance kit's (``integrations/conformance.py``): ``FLAKY.fail_once(name)`` makes
the next call of that tool raise ``TimeoutError``, like a flaky service.
``tests/integrations/conftest.py`` resets ``FLAKY`` around every test.
"""

from __future__ import annotations

from integrations.conformance import (
    FLAKY,
    Flaky,
    pfas_classifier,
    product_extractor,
    write_report,
)

__all__ = ["FLAKY", "Flaky", "pfas_classifier", "product_extractor", "write_report"]
