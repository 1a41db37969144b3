"""A panel started with --allow-write: destructive actions ask first, then take effect."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from panel_support import SCOPE, Panel, copy_store, screenshot, seed_workflows

from integrations.panel.state import lifecycle_available

pytestmark = pytest.mark.integration

PFAS = [w for w in seed_workflows() if w.scope == SCOPE]
LIFECYCLE = lifecycle_available()


@pytest.fixture(scope="module")
def panel(
    start_panel: Any, store_template: Path, tmp_path_factory: pytest.TempPathFactory
) -> Panel:
    store = copy_store(store_template, tmp_path_factory.mktemp("writable"))
    return start_panel(store, "--allow-write")  # type: ignore[no-any-return]


def _evidence(page: Any) -> list[str]:
    links = page.locator("#suggestions a[data-evidence]")
    return [links.nth(i).get_attribute("data-evidence") for i in range(links.count())]


def test_delete_asks_first_and_shows_what_will_go(page: Any, panel: Panel) -> None:
    victim = PFAS[-1]
    page.goto(f"{panel.url}/workflow?scope={SCOPE}&id={victim.id}")
    assert "writes allowed" in page.inner_text("#mode")
    page.click("#delete")
    listed = page.inner_text("#will-go")
    assert victim.id in listed and f"{len(victim.leaves())} step" in listed
    screenshot(page, "confirm-delete")
    page.click("#cancel")
    page.goto(f"{panel.url}/workflows?scope={SCOPE}")
    assert page.locator("[data-total]").get_attribute("data-total") == str(len(PFAS))

    page.goto(f"{panel.url}/workflow/delete?scope={SCOPE}&id={victim.id}")
    page.click("#confirm-button")
    page.wait_for_url(lambda url: "/workflows?" in url)
    assert page.locator("[data-total]").get_attribute("data-total") == str(len(PFAS) - 1)
    answer = page.goto(f"{panel.url}/workflow?scope={SCOPE}&id={victim.id}")
    assert answer is not None and answer.status == 404


@pytest.mark.skipif(not LIFECYCLE, reason="the lifecycle API (EpisodicMemory.retire) is missing")
def test_retire_asks_first_then_leaves_the_suggestions(page: Any, panel: Panel) -> None:
    current = PFAS[1]
    page.goto(f"{panel.url}/suggest?scope={SCOPE}&id={current.id}&step=2")
    cited = _evidence(page)
    assert cited
    victim = cited[0]
    page.goto(f"{panel.url}/workflow?scope={SCOPE}&id={victim}")
    page.click("#retire")
    assert victim in page.inner_text("#will-go")
    screenshot(page, "confirm-retire")
    page.fill("#reason", "outdated procedure")
    page.click("#confirm-button")
    page.wait_for_url(lambda url: "done=retire" in url)
    page.goto(f"{panel.url}/suggest?scope={SCOPE}&id={current.id}&step=2")
    assert victim not in _evidence(page)
    page.goto(f"{panel.url}/workflow?scope={SCOPE}&id={victim}")
    assert "outdated procedure" in page.inner_text("#versions")


@pytest.mark.skipif(LIFECYCLE, reason="the lifecycle API is present")
def test_without_the_lifecycle_api_the_pages_say_so(page: Any, panel: Panel) -> None:
    page.goto(f"{panel.url}/workflow?scope={SCOPE}&id={PFAS[0].id}")
    assert "lifecycle API" in page.inner_text("#lifecycle-missing")
    assert page.locator("#retire").count() == 0
    answer = page.goto(f"{panel.url}/workflow/retire?scope={SCOPE}&id={PFAS[0].id}")
    assert answer is not None and answer.status == 501
    assert "lifecycle API" in page.inner_text("#error-message")
