"""Every page of a read-only panel in headless Chromium: it loads, its figures match the store."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from panel_support import OTHER, RECORDED_FROM, SCOPE, Panel, copy_store, screenshot, seed_workflows

from integrations.panel.provgraph import prov_drawing
from provenance.model import CallStep, Workflow
from provenance.workflow_json import workflow_from_json

pytestmark = pytest.mark.integration

WORKFLOWS = seed_workflows()
BY_ID = {w.id: w for w in WORKFLOWS}
PFAS = [w for w in WORKFLOWS if w.scope == SCOPE]


def _steps(workflow: Workflow) -> int:
    return sum(1 for _ in workflow.walk())


@pytest.fixture(scope="module")
def panel(
    start_panel: Any, store_template: Path, tmp_path_factory: pytest.TempPathFactory
) -> Panel:
    store = copy_store(store_template, tmp_path_factory.mktemp("read-only"))
    return start_panel(store)  # type: ignore[no-any-return]


def _cell(page: Any, row: str, column: str) -> str:
    return str(page.locator(f"{row} [data-col='{column}']").inner_text()).strip()


def test_scopes_page_counts_match_the_store(page: Any, panel: Panel) -> None:
    page.goto(panel.url + "/")
    assert page.title().startswith("Scopes")
    for scope in (SCOPE, OTHER):
        mine = [w for w in WORKFLOWS if w.scope == scope]
        tools = {s.name for w in mine for _, s in w.walk() if isinstance(s, CallStep)}
        row = f"tr[data-scope='{scope}']"
        assert _cell(page, row, "workflows") == str(len(mine))
        assert _cell(page, row, "steps") == str(sum(_steps(w) for w in mine))
        # The failed call's tool is one of the tools already called in the plan.
        assert _cell(page, row, "tools") == str(len(tools))
    assert "read-only" in page.inner_text("#mode")
    screenshot(page, "scopes")


def test_workflow_table_pages_sorts_and_narrows(page: Any, panel: Panel) -> None:
    page.goto(f"{panel.url}/workflows?scope={SCOPE}")
    assert page.locator("[data-total]").get_attribute("data-total") == str(len(PFAS))
    rows = page.locator("#workflows tbody tr")
    assert rows.count() == 50  # the page size
    newest = max(PFAS, key=lambda w: w.created or "")
    assert rows.first.get_attribute("data-id") == newest.id
    screenshot(page, "workflows")

    page.click("#next")
    assert page.locator("#workflows tbody tr").count() == len(PFAS) - 50

    page.goto(f"{panel.url}/workflows?scope={SCOPE}")
    page.fill("input[name=q]", "primer")
    page.click("button[type=submit]")
    expected = [w for w in PFAS if "primer" in (w.title or "").lower() + _texts(w)]
    assert 0 < len(expected) < len(PFAS)
    assert page.locator("[data-total]").get_attribute("data-total") == str(len(expected))
    shown = {
        page.locator("#workflows tbody tr").nth(i).get_attribute("data-id")
        for i in range(len(expected))
    }
    assert shown == {w.id for w in expected}
    screenshot(page, "workflows-search")


def test_workflow_filters_by_tool_agent_and_date(page: Any, panel: Panel) -> None:
    uses = [
        w
        for w in PFAS
        if any(isinstance(s, CallStep) and s.name == "hazard_assessment" for _, s in w.walk())
    ]
    page.goto(f"{panel.url}/workflows?scope={SCOPE}&tool=hazard_assessment")
    assert page.locator("[data-total]").get_attribute("data-total") == str(len(uses))
    agents = [
        w
        for w in PFAS
        if any(getattr(s, "agent", None) == "markdown_formatter_agent" for _, s in w.walk())
    ]
    page.goto(f"{panel.url}/workflows?scope={SCOPE}&agent=markdown_formatter_agent")
    assert page.locator("[data-total]").get_attribute("data-total") == str(len(agents))
    day = PFAS[4].created[:10]  # type: ignore[index]
    that_day = [w for w in PFAS if (w.created or "").startswith(day)]
    page.goto(f"{panel.url}/workflows?scope={SCOPE}&since={day}&until={day}")
    assert page.locator("[data-total]").get_attribute("data-total") == str(len(that_day))
    for outcome in ("failure", "unknown"):
        expected = [w for w in PFAS if (w.outcome or "unknown") == outcome]
        page.goto(f"{panel.url}/workflows?scope={SCOPE}")
        page.select_option("select[name=outcome]", outcome)
        page.click("button[type=submit]")
        assert 0 < len(expected) < len(PFAS)
        assert page.locator("[data-total]").get_attribute("data-total") == str(len(expected))
    page.goto(f"{panel.url}/workflows?scope={SCOPE}&sort=steps&dir=desc")
    first = page.locator("#workflows tbody tr").first
    assert int(first.locator("td").nth(2).inner_text()) == max(_steps(w) for w in PFAS)


def _texts(workflow: Workflow) -> str:
    return " ".join(getattr(s, "text", "") for _, s in workflow.walk()).lower()


def test_workflow_page_shows_tree_graph_records_and_downloads(page: Any, panel: Panel) -> None:
    workflow = PFAS[0]  # the one with a failed call
    page.goto(f"{panel.url}/workflow?scope={SCOPE}&id={workflow.id}")
    assert page.locator("[data-count=steps]").inner_text() == str(_steps(workflow))
    assert page.locator("[data-count=leaves]").inner_text() == str(len(workflow.leaves()))
    assert page.locator("[data-leaf]").count() == len(workflow.leaves())
    failed = page.locator("li.call.failed")
    assert failed.count() == 1 and "TimeoutError" in failed.inner_text()
    # The PROV drawing: every node the server sent is on the canvas.
    page.wait_for_selector("#prov[data-drawn]")
    drawn = int(page.locator("#prov").get_attribute("data-drawn") or 0)
    assert drawn == prov_drawing(workflow).nodes > 0
    kinds = {e["data"].get("kind") for e in json.loads(page.locator("#prov-data").inner_text())}
    assert {"entity", "activity", "agent"} <= kinds
    screenshot(page, "workflow", full=True)

    download = page.request.get(
        f"{panel.url}/workflow/download?scope={SCOPE}&id={workflow.id}&format=json"
    )
    assert download.ok and workflow_from_json(download.json()) == workflow
    turtle = page.request.get(
        f"{panel.url}/workflow/download?scope={SCOPE}&id={workflow.id}&format=ttl"
    )
    assert turtle.ok and "prov:" in turtle.text()
    provjson = page.request.get(
        f"{panel.url}/workflow/download?scope={SCOPE}&id={workflow.id}&format=provjson"
    )
    assert provjson.ok and "bundle" in provjson.json()


def test_workflow_page_lists_the_suggestions_it_shaped(page: Any, panel: Panel) -> None:
    page.goto(f"{panel.url}/workflow?scope={SCOPE}&id={RECORDED_FROM}")
    records = page.locator("#records tbody tr")
    assert records.count() == 1
    assert "session-1" in records.first.inner_text()
    assert "hazard_assessment" in records.first.inner_text()
    page.goto(f"{panel.url}/workflow?scope={SCOPE}&id={PFAS[10].id}")
    assert page.locator("#records tbody tr").count() == 0


def test_suggest_page_from_a_stored_workflow_and_from_json(page: Any, panel: Panel) -> None:
    # A prefix whose matches pass T with the fake embedder (only those are cited as evidence).
    workflow = PFAS[2]
    page.goto(f"{panel.url}/suggest?scope={SCOPE}&id={workflow.id}&step=2")
    rows = page.locator("#suggestions tbody tr")
    assert rows.count() >= 1
    evidence = page.locator("#suggestions a[data-evidence]")
    assert evidence.count() >= 1
    cited = evidence.first.get_attribute("data-evidence")
    assert cited in BY_ID and cited != workflow.id
    screenshot(page, "suggest")
    evidence.first.click()
    page.wait_for_url(lambda url: "/workflow?" in url)
    assert cited in page.inner_text("#meta")

    page.goto(f"{panel.url}/suggest?scope={SCOPE}")
    current = workflow.prefix(1).replace(id="pasted")
    from provenance.workflow_json import workflow_to_json

    page.fill("#paste-json", json.dumps(workflow_to_json(current)))
    page.click("#paste-go")
    assert page.locator("#current").inner_text() == "pasted"
    assert page.locator("#suggestions tbody tr").count() >= 1


def test_sparql_page_runs_named_and_typed_queries(page: Any, panel: Panel) -> None:
    page.goto(f"{panel.url}/sparql")
    page.click("#named a:text('tool-usage')")
    page.wait_for_selector("#results")
    calls = Counter(s.name for w in WORKFLOWS for _, s in w.walk() if isinstance(s, CallStep))
    rows = {r[0]: int(r[1]) for r in _table(page)}
    assert rows == dict(calls)
    screenshot(page, "sparql")

    page.fill(
        "#query", "SELECT (COUNT(DISTINCT ?w) AS ?n) WHERE { ?w a pl:Workflow ; wf:scope ?s }"
    )
    page.click("#run")
    assert _table(page) == [[str(len(WORKFLOWS))]]

    page.fill("input[name=scope]", OTHER)
    with page.expect_download() as info:
        page.click("#csv")
    text = Path(info.value.path()).read_text()
    assert list(csv.reader(io.StringIO(text))) == [["n"], ["2"]]

    page.fill("#query", "SELECT ?x WHERE { ?x ?y }")
    page.click("#run")
    message = page.inner_text("#error-message")
    assert message.startswith("error: ") and "Traceback" not in page.content()


def _table(page: Any) -> list[list[str]]:
    rows = page.locator("#results tbody tr")
    return [
        [c.strip() for c in rows.nth(i).locator("td").all_inner_texts()]
        for i in range(rows.count())
    ]


def test_tools_page_counts_failures_and_transitions(page: Any, panel: Panel) -> None:
    page.goto(f"{panel.url}/tools?scope={SCOPE}")
    calls = Counter(s.name for w in PFAS for _, s in w.walk() if isinstance(s, CallStep))
    failures = Counter(f.call.name for w in PFAS for f in w.failed)
    for tool, count in calls.items():
        row = f"tr[data-tool='{tool}']"
        assert _cell(page, row, "calls") == str(count + failures[tool])
        assert page.locator(row).get_attribute("data-tool") == tool
    failed_row = page.locator("tr[data-tool='pfas_classifier'] [data-col=failures]")
    assert failed_row.get_attribute("title") == "1 failed"
    after = page.locator("tr[data-tool='product_extractor'] .after").inner_text()
    assert "pfas_classifier" in after
    screenshot(page, "tools")


def test_procedures_page_loads(page: Any, panel: Panel) -> None:
    page.goto(f"{panel.url}/procedures?scope={SCOPE}")
    assert page.title().startswith("Procedures")
    assert page.locator("#lifecycle-missing").count() == 0
    rows = page.locator("#procedures tbody tr[data-procedure]")
    assert rows.count() >= 1
    assert "candidate" in rows.nth(0).inner_text()
    assert page.locator("#procedures button").count() == 0  # read-only: no actions
    screenshot(page, "procedures")


def test_errors_are_messages_and_writes_are_refused(page: Any, panel: Panel) -> None:
    answer = page.goto(f"{panel.url}/workflow?scope={SCOPE}&id=no-such-workflow")
    assert answer is not None and answer.status == 404
    assert "no-such-workflow" in page.inner_text("#error-message")
    answer = page.goto(f"{panel.url}/workflows?scope={SCOPE}&since=yesterday")
    assert answer is not None and answer.status == 400
    assert "2026-01-31" in page.inner_text("#error-message")
    answer = page.goto(f"{panel.url}/workflow/delete?scope={SCOPE}&id={PFAS[0].id}")
    assert answer is not None and answer.status == 403
    assert "--allow-write" in page.inner_text("#error-message")
    assert "Traceback" not in page.content()
    screenshot(page, "error")


def _get(url: str) -> tuple[int, str]:
    import urllib.error
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=60) as answer:
            return answer.status, answer.read().decode("utf-8")
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode("utf-8")


def test_error_pages_tell_the_panels_mode_and_4xx_log_no_traceback(panel: Panel) -> None:
    logged = panel.log.read_text(encoding="utf-8") if panel.log.exists() else ""
    for path, status in (
        (f"/workflow?scope={SCOPE}&id=no-such-workflow", 404),
        (f"/workflows?scope={SCOPE}&since=yesterday", 400),
        (f"/workflow/delete?scope={SCOPE}&id={PFAS[0].id}", 403),
        ("/no-such-page", 404),
    ):
        answer, body = _get(panel.url + path)
        assert answer == status, (path, answer)
        assert "read-only" in body and "writes allowed" not in body, path
    # docs/ui.md: the server's log holds tracebacks for 500s only.
    new = panel.log.read_text(encoding="utf-8")[len(logged) :]
    assert "Traceback" not in new, new


def test_an_unknown_scope_names_the_scopes_there_are(panel: Panel) -> None:
    answer, body = _get(panel.url + "/workflows?scope=nosuch")
    assert answer == 404
    assert "nosuch" in body and SCOPE in body and OTHER in body


_NAV = ("Scopes", "Workflows", "Suggest", "Procedures", "SPARQL", "Tools")


def _no_error(page: Any, answer: Any, where: str) -> None:
    assert answer is not None and answer.status == 200, f"{where}: HTTP {answer and answer.status}"
    assert page.locator("#error-message").count() == 0, f"{where}: {page.inner_text('main')}"


def _nav_hrefs(page: Any) -> dict[str, str]:
    links = page.locator("header nav a")
    return {links.nth(i).inner_text(): links.nth(i).get_attribute("href") for i in range(6)}


def test_every_navigation_link_works_with_two_scopes(page: Any, panel: Panel) -> None:
    """From the home page, each link of the navigation either shows its page or asks which
    scope (a link per scope); from there, the page of each scope and its own navigation links
    (which keep the scope in the URL) load without an error page, as does the header's scope
    chooser."""
    answer = page.goto(panel.url + "/")
    _no_error(page, answer, "/")
    home = _nav_hrefs(page)
    assert list(home) == list(_NAV)
    visited: set[str] = set()
    for name in _NAV:
        answer = page.goto(panel.url + home[name])
        _no_error(page, answer, home[name])
        choices = page.locator("#scope-choice a")
        if name in ("Scopes", "SPARQL"):  # pages of the whole store
            assert choices.count() == 0
            continue
        assert page.title().startswith("Choose a scope"), name
        assert [choices.nth(i).inner_text() for i in range(choices.count())] == [OTHER, SCOPE]
        for scope in (SCOPE, OTHER):
            page.goto(panel.url + home[name])
            with page.expect_navigation():
                page.click(f"#scope-choice a[data-scope='{scope}']")
            assert f"scope={scope}" in page.url and page.locator("#error-message").count() == 0
            assert f"scope <b>{scope}</b>" in page.inner_html("#mode")
            # The page's own navigation keeps the scope: every link works.
            for other_name, href in _nav_hrefs(page).items():
                if other_name != "Scopes":
                    assert f"scope={scope}" in href, (name, other_name, href)
                if href in visited:
                    continue
                visited.add(href)
                answer = page.goto(panel.url + href)
                _no_error(page, answer, href)
                assert page.locator("#scope-choice").count() == 0  # no question: it has one
    assert len(visited) >= 2 * (len(_NAV) - 1)

    # The header's chooser moves a page to the other scope (remembered in the URL).
    page.goto(f"{panel.url}/tools?scope={SCOPE}")
    page.select_option("#scope-chooser select", OTHER)
    with page.expect_navigation():
        page.click("#scope-chooser button")
    assert page.url.endswith(f"/tools?scope={OTHER}")
    assert page.locator("#error-message").count() == 0
    assert f"scope <b>{OTHER}</b>" in page.inner_html("#mode")
    screenshot(page, "scope-chooser")
