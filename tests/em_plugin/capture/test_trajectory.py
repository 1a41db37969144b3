"""The workflow compiler: trajectory events -> Workflow (docs/capture.md)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from em_plugin.capture.trajectory import (
    MAX_OUTPUT_CHARS,
    CallEnd,
    CallStart,
    Instruction,
    Trajectory,
    compile_workflow,
    is_command,
    looks_like_revision,
    without_run_details,
)
from em_plugin.errors import TrajectoryError
from provenance.model import CallStep, InstructionStep
from provenance.workflow_json import workflow_from_json, workflow_to_json


def leaf_names(workflow) -> list[str]:
    return [s.name if isinstance(s, CallStep) else f"<{s.text}>" for s in workflow.leaves()]


# -- commands and revision cues ---------------------------------------------------------------


@pytest.mark.parametrize("text", ["/save", " /save ", "/suggest 5", "/forget all", "/SAVE"])
def test_commands_are_recognised(text: str) -> None:
    assert is_command(text)


@pytest.mark.parametrize(
    "text", ["save", "/tmp/acme.pdf extract it", "please /save", "/", "/ save", "//save", ""]
)
def test_non_commands(text: str) -> None:
    assert not is_command(text)


@pytest.mark.parametrize(
    "text",
    [
        "Actually use mushrooms",
        "no, use the EPA list",
        "Use the OECD list instead",
        "Scratch that, classify acme.pdf",
        "Correction: the file is b.pdf",
        "Wait, do it for b.pdf",
        "I meant the second file",
        "use pandas rather than polars",
    ],
)
def test_revision_cues(text: str) -> None:
    assert looks_like_revision(text)


@pytest.mark.parametrize(
    "text", ["Extract the ingredients", "Notice the instructions", "Now classify them"]
)
def test_ordinary_instructions_are_not_revisions(text: str) -> None:
    assert not looks_like_revision(text)


# -- compilation rules ----------------------------------------------------------------------


def test_calls_nest_under_their_instruction_and_failed_calls_are_kept_aside() -> None:
    t = Trajectory("s1", scope="alice", framework="langgraph")
    assert t.instruction("Extract ingredients from acme.pdf") == "i1"
    t.call_start("c1", "product_extractor", {"file": "acme.pdf"}, agent="extractor")
    t.call_error("c1", "TimeoutError: slow")
    t.call_start("c2", "product_extractor", {"file": "acme.pdf"}, agent="extractor")
    t.call_end("c2", {"ingredients": ["PFOA"]})
    t.final_answer("PFOA")
    assert t.instruction("/save") is None
    assert t.instruction("Classify them") == "i2"
    t.call_start("c3", "pfas_classifier", {"names": ["PFOA"]})
    t.call_end("c3", "PFAS")

    wf = t.compile(crew="pfas-crew")
    assert wf.id == "session/s1"
    assert (wf.scope, wf.session, wf.framework, wf.crew) == (
        "alice",
        "s1",
        "langgraph",
        "pfas-crew",
    )
    assert wf.title == "Extract ingredients from acme.pdf"
    assert [type(s) for s in wf.steps] == [InstructionStep, InstructionStep]
    assert leaf_names(wf) == ["product_extractor", "pfas_classifier"]
    first = wf.steps[0].steps[0]
    assert (first.id, first.output, first.agent) == ("c2", {"ingredients": ["PFOA"]}, "extractor")
    assert len(wf.failed) == 1
    assert wf.failed[0].call.id == "c1"
    assert wf.failed[0].error == "TimeoutError: slow"
    assert wf.failed[0].parent == "0"
    assert wf.step_at(wf.failed[0].parent).text.startswith("Extract")


def test_instruction_answered_without_tools_is_a_leaf() -> None:
    t = Trajectory("s")
    t.instruction("What can you do?")
    t.final_answer("I can extract and classify.")
    wf = t.compile()
    assert leaf_names(wf) == ["<What can you do?>"]


def test_sub_agent_calls_nest_under_the_handoff() -> None:
    t = Trajectory("s")
    t.instruction("Check acme.pdf for PFAS")
    t.call_start("h1", "handoff_chemist", {"task": "check"}, agent="coordinator")
    t.call_start(
        "c1", "product_extractor", {"file": "acme.pdf"}, agent="chemist", parent_call_id="h1"
    )
    t.call_end("c1", "PFOA")
    t.call_start("c2", "pfas_classifier", {"x": 1}, agent="chemist", parent_call_id="h1")
    t.call_error("c2", "bad input")
    t.call_start("c3", "pfas_classifier", {"x": 2}, agent="chemist", parent_call_id="h1")
    t.call_end("c3", "yes")
    t.call_end("h1", "done")
    t.call_start("c4", "report", {})
    t.call_end("c4", "ok")
    wf = t.compile()
    handoff = wf.steps[0].steps[0]
    assert handoff.name == "handoff_chemist"
    assert [s.name for s in handoff.steps] == ["product_extractor", "pfas_classifier"]
    assert leaf_names(wf) == ["product_extractor", "pfas_classifier", "report"]
    assert wf.failed[0].parent == "0.0"
    assert wf.step_at("0.0").name == "handoff_chemist"


def test_a_failed_handoff_keeps_its_successful_sub_calls_inside_the_failed_record() -> None:
    t = Trajectory("s")
    t.instruction("Do it")
    t.call_start("h", "handoff", {})
    t.call_start("a", "inner_ok", {}, parent_call_id="h")
    t.call_end("a", 1)
    t.call_start("b", "inner_bad", {}, parent_call_id="h")
    t.call_error("b", "boom")
    t.call_error("h", "sub-agent gave up")
    wf = t.compile()
    assert leaf_names(wf) == ["<Do it>"]
    by_name = {f.call.name: f for f in wf.failed}
    assert set(by_name) == {"handoff", "inner_bad"}
    assert [s.name for s in by_name["handoff"].call.steps] == ["inner_ok"]
    assert by_name["inner_bad"].parent == "0"
    assert by_name["handoff"].parent == "0"


def test_reasoning_tools_are_dropped_and_their_sub_calls_move_up() -> None:
    t = Trajectory("s")
    t.instruction("Go")
    t.call_start("t1", "think", {"thoughts": "hmm"})
    t.call_end("t1", "ok")
    t.call_start("x", "outer", {})
    t.call_start("y", "think", {}, parent_call_id="x")
    t.call_start("z", "inner", {}, parent_call_id="y")
    t.call_end("z", 1)
    t.call_end("y", None)
    t.call_end("x", 2)
    t.call_start("f", "final_answer", {"response": "done"})
    t.call_end("f", "done")
    wf = t.compile()
    assert [s.name for s in wf.steps[0].steps] == ["outer"]
    assert leaf_names(wf) == ["inner"]


def test_unfinished_calls_are_failed_and_calls_before_any_instruction_are_top_level() -> None:
    t = Trajectory("s")
    t.call_start("a", "warmup", {})
    t.call_end("a", "ok")
    t.instruction("Go")
    t.call_start("b", "hangs", {})
    wf = t.compile()
    assert isinstance(wf.steps[0], CallStep)
    assert leaf_names(wf) == ["warmup", "<Go>"]
    assert wf.failed[0].error == "the call did not finish"
    assert wf.failed[0].parent == "1"


def test_revision_sets_revision_of_and_moves_the_old_instruction_to_revised() -> None:
    t = Trajectory("s")
    t.instruction("Find a pasta recipe")
    t.call_start("a", "search_recipes", {"q": "pasta"})
    t.call_end("a", ["carbonara"])
    t.instruction("Actually, use mushrooms instead")
    t.call_start("b", "search_recipes", {"q": "mushroom pasta"})
    t.call_end("b", ["funghi"])
    t.instruction("Now write the shopping list")
    wf = t.compile()
    assert [s.text for s in wf.steps] == [
        "Actually, use mushrooms instead",
        "Now write the shopping list",
    ]
    assert wf.steps[0].revision_of == "i1"
    assert [r.id for r in wf.revised] == ["i1"]
    assert wf.revised[0].steps[0].args == {"q": "pasta"}
    assert leaf_names(wf) == ["search_recipes", "<Now write the shopping list>"]
    assert wf.title == "Actually, use mushrooms instead"


def test_revision_chains_and_explicit_revision_of() -> None:
    t = Trajectory("s", revision_detector=None)
    t.instruction("A")
    t.instruction("Actually B")  # detection is off: a plain instruction
    t.instruction("C", revision_of="i1")
    wf = t.compile()
    assert [s.id for s in wf.steps] == ["i2", "i3"]
    assert [r.id for r in wf.revised] == ["i1"]
    with pytest.raises(TrajectoryError, match="not an earlier instruction"):
        t.instruction("D", revision_of="i9")

    chain = Trajectory("c")
    chain.instruction("A")
    chain.instruction("no, B")
    chain.instruction("no, C")
    wf = chain.compile()
    assert [(s.id, s.revision_of) for s in wf.steps] == [("i3", "i2")]
    assert [r.id for r in wf.revised] == ["i1", "i2"]


def test_the_first_instruction_is_never_a_revision() -> None:
    t = Trajectory("s")
    t.instruction("Actually, start with acme.pdf")
    assert t.compile().steps[0].revision_of is None


def test_the_workflow_is_the_whole_session_and_turn_state_resets() -> None:
    t = Trajectory("s")
    t.instruction("one")
    t.call_start("a", "x", {})
    t.call_error("a", "e")
    assert t.turn_failures == ("e",)
    assert t.turn_call_count == 1
    t.instruction("two")
    assert t.turn_failures == ()
    assert t.turn_call_count == 0
    assert len(t.compile().steps) == 2
    assert t.instruction_ids == ("i1", "i2")


def test_non_json_values_become_text_and_long_outputs_are_cut() -> None:
    t = Trajectory("s")
    t.instruction("go")
    when = datetime(2026, 1, 1)
    t.call_start("a", "x", {"when": when, "n": float("nan"), "tags": ("a", "b"), 3: {1, 2}})
    t.call_end("a", "y" * (MAX_OUTPUT_CHARS + 10))
    t.call_start("b", "big", {})
    t.call_end("b", {"rows": ["z" * 100] * 500})
    wf = t.compile()
    a, b = wf.steps[0].steps
    assert a.args["when"] == str(when)
    assert a.args["n"] == "nan"
    assert a.args["tags"] == ["a", "b"]
    assert sorted(a.args["3"]) == [1, 2]
    assert len(a.output) == MAX_OUTPUT_CHARS + 1 and a.output.endswith("…")
    assert isinstance(b.output, str) and len(b.output) == MAX_OUTPUT_CHARS + 1


@pytest.mark.parametrize(
    ("action", "message"),
    [
        (lambda t: t.call_start("c", "x", {}), "started twice"),
        (lambda t: t.call_start("d", "x", {}, parent_call_id="zz"), "unknown parent"),
        (lambda t: t.call_end("zz"), "never started"),
        (lambda t: (t.call_end("c"), t.call_end("c")), "already ended"),
        (lambda t: t.call_start("", "x", {}), "non-empty"),
        (lambda t: t.call_start("d", " ", {}), "tool name"),
        (lambda t: t.call_start("d", "x", ["a"]), "mapping"),
        (lambda t: t.instruction("   "), "non-empty"),
        (lambda t: t.instruction("x", timestamp="yesterday"), "ISO 8601"),
    ],
)
def test_inconsistent_events_raise_trajectory_error(action, message: str) -> None:
    t = Trajectory("s")
    t.instruction("go")
    t.call_start("c", "x", {})
    with pytest.raises(TrajectoryError, match=message):
        action(t)


def test_bad_session_or_scope_fails_at_construction() -> None:
    with pytest.raises(TrajectoryError, match="session_id"):
        Trajectory("")
    with pytest.raises(TrajectoryError, match="scope"):
        Trajectory("s", scope=" ")


def test_compile_workflow_validates_hand_written_events() -> None:
    with pytest.raises(TrajectoryError, match="never started"):
        compile_workflow([CallEnd("x")], workflow_id="w")
    with pytest.raises(TrajectoryError, match="revises unknown"):
        compile_workflow([Instruction("i1", "a", revision_of="i0")], workflow_id="w")
    with pytest.raises(TrajectoryError, match="unknown parent"):
        compile_workflow([CallStart("a", "x", parent_call_id="p")], workflow_id="w")
    with pytest.raises(TrajectoryError, match="unknown trajectory event"):
        compile_workflow(["nope"], workflow_id="w")  # type: ignore[list-item]


def test_appends_from_many_threads_are_all_recorded() -> None:
    t = Trajectory("s")
    t.instruction("go")

    def work(k: int) -> None:
        for i in range(50):
            t.call_start(f"{k}-{i}", "x", {"i": i})
            t.call_end(f"{k}-{i}", i)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(t.compile().leaves()) == 200


def test_without_run_details_equates_two_runs_of_the_same_session() -> None:
    def run(prefix: str, stamp: str) -> Trajectory:
        t = Trajectory("s", framework=prefix)
        t.instruction("Extract", timestamp=stamp)
        t.call_start(f"{prefix}-1", "extract", {"f": "a"}, agent="ex", timestamp=stamp)
        t.call_error(f"{prefix}-1", f"{prefix} error", timestamp=stamp)
        t.call_start(f"{prefix}-2", "extract", {"f": "a"}, agent="ex", timestamp=stamp)
        t.call_end(f"{prefix}-2", "ok", timestamp=stamp)
        return t

    a = run("langgraph", "2026-01-01T00:00:00+00:00").compile()
    b = run("beeai", "2026-02-02T00:00:00+00:00").compile()
    assert a != b
    assert without_run_details(a) == without_run_details(b)


# -- property: the compiled leaf sequence is the successful calls in order ---------------------


@dataclass
class CallSpec:
    name: str
    ok: bool
    children: list[CallSpec] = field(default_factory=list)


call_specs = st.recursive(
    st.builds(CallSpec, st.sampled_from(["a", "b", "c", "handoff"]), st.booleans(), st.just([])),
    lambda kids: st.builds(
        CallSpec,
        st.sampled_from(["handoff", "delegate"]),
        st.booleans(),
        st.lists(kids, max_size=3),
    ),
    max_leaves=8,
)
sessions = st.lists(st.lists(call_specs, max_size=4), min_size=1, max_size=4)


def _expected_leaves(spec: CallSpec) -> list[str]:
    if not spec.ok:
        return []
    inner = [leaf for child in spec.children for leaf in _expected_leaves(child)]
    return inner or [spec.name]


def _count(spec: CallSpec, failed: bool) -> int:
    return (spec.ok != failed) + sum(_count(c, failed) for c in spec.children)


@settings(max_examples=150, deadline=None)
@given(sessions)
def test_leaves_are_the_successful_calls_in_order_with_sub_calls_nested(turns) -> None:
    t = Trajectory("prop", revision_detector=None)
    counter = iter(range(10_000))

    def emit(spec: CallSpec, parent: str | None) -> None:
        call_id = f"c{next(counter)}"
        t.call_start(call_id, spec.name, {"n": call_id}, parent_call_id=parent)
        for child in spec.children:
            emit(child, call_id)
        if spec.ok:
            t.call_end(call_id, call_id)
        else:
            t.call_error(call_id, f"{call_id} failed")

    expected: list[str] = []
    for number, specs in enumerate(turns):
        t.instruction(f"instruction {number}")
        for spec in specs:
            emit(spec, None)
        served = [leaf for spec in specs for leaf in _expected_leaves(spec)]
        expected.extend(served or [f"<instruction {number}>"])

    wf = t.compile()
    assert leaf_names(wf) == expected
    all_specs = [s for specs in turns for s in specs]
    assert len(wf.failed) == sum(_count(s, failed=True) for s in all_specs)
    for failure in wf.failed:
        assert failure.parent is not None
        assert wf.step_at(failure.parent) is not None
    # every failed call's parent path is an instruction or a kept call; the workflow is valid JSON
    assert workflow_from_json(workflow_to_json(wf)) == wf
