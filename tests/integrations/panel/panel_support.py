"""Helpers of the panel's browser tests: a seeded disk store, panel servers, headless Chromium.

The store holds the PFAS bootstrap workflows (scope ``pfas``, with creation times, one failed
call and one round of recorded suggestions) and two workflows of a second scope. Panels run as
real ``em-plugin ui`` processes on 127.0.0.1 with a free port and the fake embedder; Chromium is
the distribution's (``/usr/bin/chromium``) driven by Playwright, which never downloads a
browser. Set ``EM_PLUGIN_UI_SCREENSHOTS=docs/ui`` to save each page's screenshot there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from provenance.model import OUTCOMES, CallStep, FailedCall, InstructionStep, Workflow
from provenance.workflow_json import read_jsonl
from tests.processes import accepts, wait_until_ready

ROOT = Path(__file__).resolve().parents[3]
BOOTSTRAP = ROOT / "integrations" / "demo" / "pfas" / "data" / "bootstrap.jsonl"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCOPE = "pfas"
OTHER = "other-team"
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
RECORDED_FROM = "bootstrap/0004"
"""The workflow cited as evidence by the one recorded round of suggestions."""
# The panel command is added to the group by importing its module (the entry point of an
# installed package does it for `em-plugin ui`).
LAUNCH = "import integrations.panel.command; from em_plugin.cli import main; main()"


def seed_workflows() -> list[Workflow]:
    """The workflows of the test store: bootstrap (dated, one with a failure) and two others."""
    workflows = []
    for number, workflow in enumerate(read_jsonl(BOOTSTRAP)):
        created = (START + timedelta(hours=6 * number)).isoformat()
        outcome = OUTCOMES[number % 4] if number % 4 < len(OUTCOMES) else None
        workflows.append(workflow.replace(scope=SCOPE, created=created, outcome=outcome))
    broken = workflows[0]
    failed = FailedCall(
        call=CallStep("pfas_classifier", {"ingredients": []}, agent="pfas_classifier_agent"),
        error="TimeoutError: the classifier did not answer",
        parent="0",
    )
    workflows[0] = broken.replace(failed=(failed,))
    others = [
        Workflow(
            id=f"other/{n}",
            scope=OTHER,
            title=f"Other team task {n}",
            steps=(InstructionStep("Summarise the report", (CallStep("summariser"),)),),
        )
        for n in range(2)
    ]
    return workflows + others


def copy_store(template: Path, target: Path) -> Path:
    """Copy a disk store and what lives beside it (its index directory)."""
    shutil.copytree(template, target / template.name)
    index = template.with_name(f"{template.name}.em-index")
    if index.exists():
        shutil.copytree(index, target / index.name)
    return target / template.name


@dataclass
class Panel:
    """A running ``em-plugin ui`` process."""

    url: str
    store: Path
    process: subprocess.Popen[bytes]
    log: Path

    def get(self, path: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
        """Return the status and body of a GET (errors included)."""
        request = urllib.request.Request(self.url + path, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()


def wait_until_up(panel: Panel) -> None:
    wait_until_ready(
        panel.process,
        lambda: accepts(int(panel.url.rsplit(":", 1)[1])),
        what="em-plugin ui",
        timeout=90,
        detail=lambda: panel.log.read_text(errors="replace"),
    )


def screenshot(page: Any, name: str, *, full: bool = False) -> None:
    """Save the page to $EM_PLUGIN_UI_SCREENSHOTS/NAME.png when that is set (docs/ui.md)."""
    folder = os.environ.get("EM_PLUGIN_UI_SCREENSHOTS")
    if not folder:
        return
    target = Path(folder)
    if not target.is_absolute():
        target = ROOT / target
    target.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(target / f"{name}.png"), full_page=full)
