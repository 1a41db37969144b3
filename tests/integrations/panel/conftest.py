"""Fixtures of the panel's browser tests (helpers and the seed data: panel_support.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from panel_support import (
    CHROMIUM,
    CHROMIUM_ARGS,
    LAUNCH,
    RECORDED_FROM,
    ROOT,
    SCOPE,
    START,
    Panel,
    seed_workflows,
    wait_until_up,
)

from em_plugin.memory import EpisodicMemory
from em_plugin.suggest.types import Evidence, Suggestion
from tests.processes import free_port, stop_process


@pytest.fixture(scope="session")
def store_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A disk store with the seed workflows and their step index (fake embedder). Copy it."""
    path = tmp_path_factory.mktemp("panel") / "store"
    workflows = seed_workflows()
    with EpisodicMemory(store=str(path), embedder="fake", scope=SCOPE) as memory:
        memory.save_many(workflows)
        shown = Suggestion(
            "Assess the hazards of the PFAS found",
            tool="hazard_assessment",
            score=0.75,
            evidence=(Evidence(RECORDED_FROM, 2, 0.9),),
        )
        memory.record_suggestions("session-1", [shown], time=START)
    return path


@pytest.fixture(scope="module")
def start_panel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Start panels (``start_panel(store, *options)``); all are stopped after the module."""
    started: list[Panel] = []

    def start(store: Path, *options: str) -> Panel:
        port = free_port()
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        }
        env["HF_HUB_OFFLINE"] = "1"
        command = [sys.executable, "-c", LAUNCH, "--embedder", "fake", "ui"]
        command += ["--store", str(store), "--port", str(port), *options]
        log = tmp_path_factory.mktemp("panel-log") / "stderr.txt"
        with log.open("wb") as stderr:
            process = subprocess.Popen(command, env=env, stderr=stderr, stdout=subprocess.DEVNULL)
        panel = Panel(url=f"http://127.0.0.1:{port}", store=store, process=process, log=log)
        started.append(panel)
        wait_until_up(panel)
        return panel

    yield start
    for panel in started:
        stop_process(panel.process)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium from the distribution (the tests skip without it)."""
    if not CHROMIUM.exists():
        pytest.skip("Chromium is not installed (make chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        instance = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield instance
        finally:
            instance.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh browser page (its own cookies)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        yield context.new_page()
    finally:
        context.close()
