"""A panel started with --allow-write: destructive actions ask first, then take effect."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from panel_support import SCOPE, Panel, copy_store, screenshot, seed_workflows

from em_plugin.memory import EpisodicMemory
from provenance.model import CallStep, InstructionStep

pytestmark = pytest.mark.integration

PFAS = [w for w in seed_workflows() if w.scope == SCOPE]
REVISED = PFAS[2]
"""Saved a second time, with one more step, before the panel starts: it has two versions."""


@pytest.fixture(scope="module")
def panel(
    start_panel: Any, store_template: Path, tmp_path_factory: pytest.TempPathFactory
) -> Panel:
    store = copy_store(store_template, tmp_path_factory.mktemp("writable"))
    extra = InstructionStep("Double-check the report", (CallStep("report_checker"),))
    with EpisodicMemory(store=str(store), embedder="fake", scope=SCOPE) as memory:
        memory.save(REVISED.replace(steps=(*REVISED.steps, extra)))
    return start_panel(store, "--allow-write")  # type: ignore[no-any-return]


def _evidence(page: Any) -> list[str]:
    links = page.locator("#suggestions a[data-evidence]")
    return [links.nth(i).get_attribute("data-evidence") for i in range(links.count())]


def _listed(page: Any) -> list[str]:
    rows = page.locator("#workflows tbody tr[data-id]")
    return [rows.nth(i).get_attribute("data-id") for i in range(rows.count())]


def test_the_table_lists_current_versions_and_the_page_links_each(page: Any, panel: Panel) -> None:
    page.goto(f"{panel.url}/workflows?scope={SCOPE}")
    assert page.locator("[data-total]").get_attribute("data-total") == str(len(PFAS))
    listed = _listed(page)
    assert not [i for i in listed if "@v" in i]
    page.goto(f"{panel.url}/workflows?scope={SCOPE}&q={REVISED.id}")
    assert f"{REVISED.id}@v1" not in _listed(page)
    row = page.locator(f"#workflows tr[data-id='{REVISED.id}']")
    assert row.locator("[data-versions]").get_attribute("data-versions") == "2"
    row.locator("a").first.click()
    versions = page.locator("#versions tr[data-version]")
    assert versions.count() == 2
    page.wait_for_selector("#prov[data-drawn]")
    page.locator("#versions").evaluate("section => section.scrollIntoView()")
    screenshot(page, "versions")
    versions.nth(0).locator("a").first.click()
    page.wait_for_url(lambda url: "%40v1" in url or "@v1" in url)
    assert f"{REVISED.id}@v1" in page.inner_text("#meta")
    assert page.locator("[data-count=leaves]").inner_text() == str(len(REVISED.leaves()))
    assert page.locator("#retire").count() == 0  # an older version is not retired on its own


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
    page.click("#cancel")  # asking first: nothing changed yet
    page.goto(f"{panel.url}/suggest?scope={SCOPE}&id={current.id}&step=2")
    assert victim in _evidence(page)

    page.goto(f"{panel.url}/workflow/retire?scope={SCOPE}&id={victim}")
    page.fill("#reason", "outdated procedure")
    page.click("#confirm-button")
    page.wait_for_url(lambda url: "done=retire" in url)
    assert page.locator("#retired-badge").count() == 1
    page.goto(f"{panel.url}/suggest?scope={SCOPE}&id={current.id}&step=2")
    assert victim not in _evidence(page)
    page.goto(f"{panel.url}/workflow?scope={SCOPE}&id={victim}")
    assert "outdated procedure" in page.inner_text("#versions")

    page.goto(f"{panel.url}/workflows?scope={SCOPE}&q={victim}")
    assert page.locator(f"tr[data-id='{victim}'][data-retired] .badge.retired").count() == 1
    page.select_option("#retired-filter", "hide")
    page.click("#filters button[type=submit]")
    page.wait_for_url(lambda url: "retired=hide" in url)
    assert victim not in _listed(page)
    page.goto(f"{panel.url}/workflows?scope={SCOPE}&retired=only")
    assert _listed(page) == [victim]
    screenshot(page, "retired-only")

    page.goto(f"{panel.url}/workflow?scope={SCOPE}&id={victim}")
    page.click("#restore")
    page.wait_for_url(lambda url: "done=restore" in url)
    assert page.locator("#retired-badge").count() == 0
    page.goto(f"{panel.url}/suggest?scope={SCOPE}&id={current.id}&step=2")
    assert victim in _evidence(page)


def test_procedures_accept_with_a_name_and_retire(page: Any, panel: Panel) -> None:
    page.goto(f"{panel.url}/procedures?scope={SCOPE}&status=candidate")
    rows = page.locator("#procedures tbody tr[data-procedure]")
    assert rows.count() >= 2
    first = rows.nth(0)
    chosen = first.get_attribute("data-procedure")
    support = int(first.locator("td.num").nth(0).inner_text())
    assert support >= 2 and first.locator("td a").count() >= 2  # source workflows
    first.locator("input[name=name]").fill("classify then assess")
    first.locator("button", has_text="Accept").click()
    page.wait_for_url(lambda url: "/procedures?" in url)
    page.goto(f"{panel.url}/procedures?scope={SCOPE}&status=active")
    accepted = page.locator(f"#procedures tr[data-procedure='{chosen}']")
    assert "classify then assess" in accepted.inner_text()
    assert "active" in accepted.inner_text()
    screenshot(page, "procedure-accepted")

    page.on("dialog", lambda dialog: dialog.accept())
    accepted.locator("input[name=reason]").fill("superseded by a better tool")
    accepted.locator("button", has_text="Retire").click()
    page.wait_for_url(lambda url: "/procedures?" in url and "status" not in url)
    page.goto(f"{panel.url}/procedures?scope={SCOPE}&status=retired")
    retired = page.locator(f"#procedures tr[data-procedure='{chosen}']")
    assert "superseded by a better tool" in retired.inner_text()
    page.goto(f"{panel.url}/procedures?scope={SCOPE}&status=active")
    assert page.locator(f"#procedures tr[data-procedure='{chosen}']").count() == 0
