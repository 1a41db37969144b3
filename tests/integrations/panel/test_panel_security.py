"""Who may reach the panel: loopback only without a token; with one, every request needs it."""

from __future__ import annotations

import http.client
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from panel_support import SCOPE, Panel, copy_store

from em_plugin.access import is_loopback
from em_plugin.cli import cli
from integrations.panel.command import ui
from integrations.panel.security import COOKIE, check_bind

pytestmark = pytest.mark.integration
TOKEN = "s3cret-panel-token"


@pytest.fixture(scope="module")
def store(store_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_store(store_template, tmp_path_factory.mktemp("security"))


@pytest.fixture(scope="module")
def open_panel(start_panel: Any, store: Path) -> Panel:
    return start_panel(store)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def token_panel(start_panel: Any, store: Path) -> Panel:
    return start_panel(store, "--token", TOKEN)  # type: ignore[no-any-return]


def test_a_non_loopback_host_without_a_token_is_refused() -> None:
    assert cli.get_command(None, "ui") is ui  # type: ignore[arg-type]
    result = CliRunner().invoke(cli, ["ui", "--host", "0.0.0.0", "--store", "memory:"])
    assert result.exit_code == 2
    assert "without --token" in result.output
    with pytest.raises(ValueError, match="--token"):
        check_bind("192.168.1.20", None)
    check_bind("192.168.1.20", TOKEN)
    check_bind("127.0.0.1", None)
    assert is_loopback("::1") and is_loopback("localhost") and not is_loopback("example.org")


def test_the_command_names_a_missing_store(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["ui", "--store", str(tmp_path / "nowhere")])
    assert result.exit_code == 1
    assert "no store at" in result.output


def test_a_request_for_another_host_name_is_refused(open_panel: Panel) -> None:
    status, _ = open_panel.get("/")
    assert status == 200
    port = int(open_panel.url.rsplit(":", 1)[1])
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        # A web page reaching 127.0.0.1 through a rebound DNS name sends that name as Host.
        connection.request("GET", "/", headers={"Host": f"attacker.example:{port}"})
        answer = connection.getresponse()
        assert answer.status == 403
        assert b"not loopback" in answer.read()
    finally:
        connection.close()


def test_a_cross_site_form_post_is_refused(open_panel: Panel) -> None:
    port = int(open_panel.url.rsplit(":", 1)[1])
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(
            "POST",
            "/sparql",
            body="query=ASK%20%7B%7D",
            headers={
                "Origin": "http://attacker.example",
                "Content-Type": "application/x-www-form-urlencoded",
            },
        )
        answer = connection.getresponse()
        assert answer.status == 403
        answer.read()
    finally:
        connection.close()


def test_every_request_needs_the_token(token_panel: Panel, page: Any) -> None:
    assert token_panel.get("/")[0] == 401
    assert token_panel.get("/static/panel.css")[0] == 401
    assert token_panel.get("/?token=wrong")[0] == 401
    assert token_panel.get("/", headers={"Authorization": "Bearer wrong"})[0] == 401
    assert token_panel.get("/", headers={"Authorization": f"Bearer {TOKEN}"})[0] == 200

    answer = page.goto(f"{token_panel.url}/?token={TOKEN}")
    assert answer is not None and answer.status == 200
    cookies = {c["name"]: c for c in page.context.cookies()}
    assert cookies[COOKIE]["httpOnly"] and cookies[COOKIE]["sameSite"] == "Strict"
    # The cookie carries the token from then on: links work without it in the URL.
    page.click(f"tr[data-scope='{SCOPE}'] a")
    assert page.locator("[data-total]").count() == 1
    page.context.clear_cookies()
    answer = page.goto(f"{token_panel.url}/workflows?scope={SCOPE}")
    assert answer is not None and answer.status == 401
