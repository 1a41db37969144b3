"""Acceptance of shown suggestions: judged by the session's next turn, said by users, in PROV."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from em_plugin.cli import cli
from em_plugin.errors import SuggestionError
from em_plugin.memory import EpisodicMemory
from em_plugin.suggest.acceptance import Taken, acceptance_rates, judge, next_turn, store_stats
from em_plugin.suggest.types import Suggestion
from provenance.model import CallStep, InstructionStep, Workflow

PAST = [
    Workflow(
        id=f"past-{i}",
        steps=(
            InstructionStep("Extract the ingredients of the SDS", (CallStep("extractor"),)),
            InstructionStep("Classify them as PFAS", (CallStep("classifier"),)),
            InstructionStep("Show a table", (CallStep("table"),)),
        ),
    )
    for i in range(3)
]
EXTRACT = InstructionStep("Extract the ingredients of the SDS", (CallStep("extractor"),))


def session(sid: str, *turns: InstructionStep) -> Workflow:
    return Workflow(id=f"session/{sid}", session=sid, steps=(EXTRACT, *turns))


def rows(memory: EpisodicMemory, sid: str) -> list[dict[str, str]]:
    found = memory.store.query("suggestion-acceptance", {"session": sid}).dicts()
    return [{k: str(v) for k, v in row.items()} for row in found]


def test_judge_takes_the_first_matching_step_at_its_best_rank() -> None:
    shown = [Suggestion("Classify them", "classifier"), Suggestion("Make a table", "table")]
    turn = [("1", InstructionStep("Now a table", (CallStep("table"),))), ("1.0", CallStep("table"))]
    assert judge(shown, turn, None, 0.65) == Taken(2, "1.0")
    # An instruction whose embedding meets T against a suggestion's text takes it.
    same = lambda a, b: 1.0 if "table" in a.lower() and "table" in b.lower() else 0.0  # noqa: E731
    assert judge(shown, turn, same, 0.65) == Taken(2, "1")
    assert judge(shown, [("1.0", CallStep("other"))], None, 0.65) == Taken(None)


def test_next_turn_stops_at_the_instruction_after_it() -> None:
    before = session("s")
    seen = frozenset(p for p, _ in before.walk())
    later = session(
        "s",
        InstructionStep("Classify", (CallStep("classifier"),)),
        InstructionStep("Table", (CallStep("table"),)),
    )
    assert [p for p, _ in next_turn(later, seen)] == ["1", "1.0"]


def test_a_taken_and_a_dismissed_suggestion_in_prov() -> None:
    with EpisodicMemory(store="memory:", embedder="fake") as memory:
        memory.save_many(PAST)
        # Session a: suggestions after the extraction, then the user classifies: rank 1 taken.
        first = memory.suggest(session("a"))
        assert first[0].tool == "classifier"
        memory.record_suggestions("a", first)
        second = session("a", InstructionStep("Classify them as PFAS", (CallStep("classifier"),)))
        memory.record_suggestions("a", memory.suggest(second))
        taken = [r for r in rows(memory, "a") if r.get("acceptance") == "taken"]
        assert [(r["rank"], r["tool"], r["taken_rank"]) for r in taken] == [
            ("1", "classifier", "1")
        ]
        # The next instruction matched the suggestion's text first: its execution took it.
        assert taken[0]["step"].endswith("workflow/session%2Fa#exec-1")
        # Session b: the user dismisses the first suggestion; it is not suggested again there.
        shown = memory.suggest(session("b"))
        memory.record_suggestions("b", shown)
        first_id = rows(memory, "b")[0]["id"]
        assert memory.dismiss_suggestion(first_id) == first_id
        assert [r.get("acceptance") for r in rows(memory, "b")][0] == "dismissed"
        assert shown[0].tool not in [s.tool for s in memory.suggest(session("b"))]
        # Only session b's dismissal counts: a new session is offered it again.
        assert memory.suggest(session("c"))[0].tool == shown[0].tool
        # A next turn that matches nothing: the round is not taken.
        memory.record_suggestions("b", memory.suggest(session("b")))
        other = session("b", InstructionStep("Something else", (CallStep("lookup"),)))
        memory.record_suggestions("b", memory.suggest(other))
        verdicts = {r["time"]: r.get("acceptance") for r in rows(memory, "b") if r["rank"] == "1"}
        assert "not-taken" in verdicts.values()


def test_accept_and_dismiss_check_the_id() -> None:
    with EpisodicMemory(store="memory:", embedder="fake") as memory:
        with pytest.raises(SuggestionError, match="not a suggestion id"):
            memory.accept_suggestion("nonsense")
        with pytest.raises(SuggestionError, match="no suggestion"):
            memory.dismiss_suggestion("s1/2026-12-07T10%3A00%3A00#1")
        with pytest.raises(SuggestionError, match="belongs to scope 'other'"):
            memory.dismiss_suggestion("other/s1/2026-12-07T10%3A00%3A00#1")


def test_cli_accept_and_dismiss(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with EpisodicMemory(store=str(store), embedder="fake") as memory:
        memory.save_many(PAST)
        memory.record_suggestions("s1", memory.suggest(session("s1")))
        ids = [r["id"] for r in rows(memory, "s1")]
    env = {"EM_PLUGIN_EMBEDDER": "fake"}
    runner = CliRunner()
    done = runner.invoke(cli, ["accept", ids[0], "--store", str(store)], env=env)
    assert done.exit_code == 0, done.output
    assert done.output.strip() == f"{ids[0]}: accepted"
    done = runner.invoke(cli, ["dismiss", ids[1], "--store", str(store)], env=env)
    assert done.exit_code == 0, done.output
    bad = runner.invoke(cli, ["accept", "s1/x#0", "--store", str(store)], env=env)
    assert bad.exit_code != 0 and "not a suggestion id" in bad.output
    shown = runner.invoke(
        cli,
        ["query", "suggestion-acceptance", "--store", str(store), "--format", "json"],
        env=env,
    )
    import json

    verdicts = [(r["rank"], r["acceptance"], r["taken_rank"]) for r in json.loads(shown.output)]
    assert verdicts[:2] == [(1, "accepted", 1), (2, "dismissed", 1)]


def test_acceptance_per_scope_in_stats_and_as_a_metric(tmp_path: Path) -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from em_plugin import telemetry

    reader = InMemoryMetricReader()
    telemetry.configure(meter_provider=MeterProvider(metric_readers=[reader]))
    store = tmp_path / "store"
    try:
        with EpisodicMemory(store=str(store), embedder="fake", scope="team") as memory:
            memory.save_many(PAST)
            memory.record_suggestions("s1", memory.suggest(session("s1")))
            turn = InstructionStep("Classify them as PFAS", (CallStep("classifier"),))
            memory.record_suggestions("s1", memory.suggest(session("s1", turn)))
            memory.record_suggestions("s2", memory.suggest(session("s2")))
            other = InstructionStep("Something else", (CallStep("lookup"),))
            memory.record_suggestions("s2", memory.suggest(session("s2", other)))
    finally:
        telemetry.configure()
    points = [
        (dict(p.attributes), p.value)
        for m in reader.get_metrics_data().resource_metrics[0].scope_metrics[0].metrics
        if m.name == telemetry.ACCEPTANCE_METRIC
        for p in m.data.data_points
    ]
    assert sorted((a["em_plugin.suggestion.taken_rank"], v) for a, v in points) == [(0, 1), (1, 1)]
    assert {a["em_plugin.scope"] for a, _ in points} == {"team"}
    done = CliRunner().invoke(
        cli,
        ["stats", "--store", str(store), "--format", "json"],
        env={"EM_PLUGIN_EMBEDDER": "fake"},
    )
    assert done.exit_code == 0, done.output
    import json

    rates = json.loads(done.output)["acceptance"]["team"]
    # Two judged rounds (one taken at rank 1, one not taken); the last round of each is open.
    assert rates["rounds"] == 2 and rates["sessions"] == 2
    assert rates["acceptance@1"] == 0.5 and rates["acceptance@3"] == 0.5


def test_a_chat_session_judges_its_rounds_through_the_controller() -> None:
    from em_plugin.capture.trajectory import Trajectory
    from em_plugin.session.controller import SessionController

    with EpisodicMemory(store="memory:", embedder="fake") as memory:
        memory.save_many(PAST)
        ctl = SessionController(memory, Trajectory("chat-1"))

        def turn(text: str, tool: str) -> str:
            ctl.begin_turn(text)
            ctl.trajectory.call_start(f"{tool}-id", tool, {})
            ctl.trajectory.call_end(f"{tool}-id", "ok")
            return ctl.suggestion_suffix("done")

        assert "classifier" in turn("Extract the ingredients of the SDS", "extractor")
        turn("Now run the classifier", "classifier")  # the first round's rank 1, taken
        taken = [r for r in rows(memory, "chat-1") if r.get("acceptance") == "taken"]
        assert [(r["rank"], r["tool"]) for r in taken] == [("1", "classifier")]
        assert taken[0]["step"].endswith("workflow/session%2Fchat-1#exec-1.0")


def test_store_stats_adds_the_hit_rates_only_when_suggestions_were_shown() -> None:
    with EpisodicMemory(store="memory:", embedder="fake", scope="team") as memory:
        memory.save_many(PAST)
        assert store_stats(memory.store) == memory.store.stats()  # no "acceptance" key
        memory.record_suggestions("s1", memory.suggest(session("s1")))
        turn = InstructionStep("Classify them as PFAS", (CallStep("classifier"),))
        memory.record_suggestions("s1", memory.suggest(session("s1", turn)))
        data = store_stats(memory.store)
        assert data["workflows"] == 3 and data["scopes"] == {"team": 3}
        assert data["acceptance"] == acceptance_rates(memory.store)
        assert data["acceptance"]["team"]["rounds"] == 1
        assert store_stats(memory.store, last=0)["acceptance"]["team"]["sessions"] == 0
