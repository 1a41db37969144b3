"""The suggest page: the scope's online hit rate, and accepting a shown suggestion by a button."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from panel_support import SCOPE, Panel, copy_store, screenshot

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def panel(
    start_panel: Any, store_template: Path, tmp_path_factory: pytest.TempPathFactory
) -> Panel:
    store = copy_store(store_template, tmp_path_factory.mktemp("acceptance"))
    return start_panel(store, "--allow-write")  # type: ignore[no-any-return]


def test_accepting_a_shown_suggestion_counts_in_the_hit_rate(page: Any, panel: Panel) -> None:
    page.goto(f"{panel.url}/suggest?scope={SCOPE}")
    assert "No judged round yet" in page.locator("#acceptance").inner_text()
    row = page.locator("#recent-suggestions tbody tr[data-id]").nth(0)
    assert row.locator("td.acceptance").inner_text() == "undecided"
    assert "hazard_assessment" in row.inner_text()
    row.locator("button", has_text="Accept").click()
    page.wait_for_url(lambda url: "done=accepted" in url)
    row = page.locator("#recent-suggestions tbody tr[data-id]").nth(0)
    assert row.locator("td.acceptance").inner_text() == "accepted"
    assert row.locator("button").count() == 0
    rate = page.locator("#acceptance").inner_text()
    assert "acceptance@1 1.00, acceptance@3 1.00 (1 judged rounds, 0 dismissed)" in rate
    screenshot(page, "suggest-acceptance", full=True)
