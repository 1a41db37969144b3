"""Suggestions at the user's level (issue 10.5) and arguments from the current workflow (14.2)."""

from __future__ import annotations

from em_plugin.memory import EpisodicMemory
from em_plugin.suggest import FallbackSuggester, SuggestionRequest
from em_plugin.suggest.arguments import bind_value
from em_plugin.suggest.crew import AgentDescription, CrewDescription, ToolDescription
from em_plugin.suggest.user_level import handoff_routes
from provenance.model import CallStep, InstructionStep, Workflow

CREW = CrewDescription(
    "office",
    "Writes and sends reports",
    (
        AgentDescription(
            "supervisor",
            "talks to the user",
            (ToolDescription("summarise"), ToolDescription("transfer_to_email_agent")),
        ),
        AgentDescription("email_agent", "sends mail", (ToolDescription("send_email"),)),
    ),
)


def _handoff_workflow(i: int) -> Workflow:
    return Workflow(
        id=f"past{i}",
        steps=(
            InstructionStep(
                f"Summarise report {i}.pdf",
                (CallStep("summarise", {"file": f"{i}.pdf"}, output=f"summary {i}"),),
            ),
            InstructionStep(
                "Email the summary to the team",
                (
                    CallStep(
                        "transfer_to_email_agent",
                        {"task": "email the summary"},
                        agent="supervisor",
                        steps=(CallStep("send_email", {"to": "team@x.org"}, agent="email_agent"),),
                    ),
                ),
            ),
        ),
    )


def test_a_sub_agents_tool_is_never_suggested_on_its_own() -> None:
    memory = EpisodicMemory(store="memory:", embedder="fake", crew_description=CREW)
    try:
        memory.save_many([_handoff_workflow(i) for i in range(3)])
        current = Workflow(
            id="now",
            steps=(
                InstructionStep(
                    "Summarise report 9.pdf",
                    (CallStep("summarise", {"file": "9.pdf"}, output="summary 9"),),
                ),
            ),
        )
        found = memory.suggest(current, limit=None)
        tools = [s.tool for s in found]
        assert "send_email" not in tools
        top = found[0]
        # The next instruction of the past workflows, reached through the coordinator's handoff,
        # with the tools that served it as detail.
        assert top.text == "Email the summary to the team"
        assert top.tool == "transfer_to_email_agent"
        assert top.detail == ("transfer_to_email_agent", "send_email")
        assert top.evidence and top.evidence[0].workflow_id.startswith("past")
        assert top.to_json()["detail"] == ["transfer_to_email_agent", "send_email"]
    finally:
        memory.close()


def test_crew_routes_and_fallback_without_memory() -> None:
    assert handoff_routes(CREW) == {"send_email": "transfer_to_email_agent"}
    assert handoff_routes(None) == {}
    request = SuggestionRequest(Workflow(id="now"), crew=CREW)
    tools = [s.tool for s in FallbackSuggester().suggest(request)]
    assert tools == ["summarise", "transfer_to_email_agent"]


SDS = {
    "product": "AquaShield Spray",
    "ingredients": [
        {"name": "Water", "cas": "7732-18-5", "concentration": "60 %"},
        {"name": "PTFE", "cas": "9002-84-0", "concentration": "5 %"},
    ],
}
NEW_SDS = {
    "product": "CitraClean",
    "ingredients": [{"name": "Limonene", "cas": "5989-27-5", "concentration": "10 %"}],
}


def _sds_workflow() -> Workflow:
    return Workflow(
        id="aqua",
        steps=(
            InstructionStep(
                "Classify spray_sds.txt",
                (
                    CallStep("product_extractor", {"file": "spray_sds.txt"}, output=SDS),
                    CallStep(
                        "pfas_classifier",
                        {
                            "ingredients": [
                                {"name": "Water", "cas": "7732-18-5"},
                                {"name": "PTFE", "cas": "9002-84-0"},
                            ]
                        },
                        output={"pfas": ["PTFE"]},
                    ),  # fmt: skip
                    CallStep(
                        "markdown_table",
                        {"title": "Ingredients of AquaShield Spray", "rows": [["PTFE", True]]},
                        output="| PTFE | yes |",
                    ),
                ),
            ),
        ),
    )


def test_arguments_are_bound_to_the_current_workflows_outputs() -> None:
    memory = EpisodicMemory(store="memory:", embedder="fake")
    try:
        memory.save(_sds_workflow())
        extracted = CallStep("product_extractor", {"file": "citra.txt"}, output=NEW_SDS)
        current = Workflow(id="now", steps=(InstructionStep("Classify citra.txt", (extracted,)),))
        top = memory.suggest(current, limit=1)[0]
        assert top.tool == "pfas_classifier"
        # The past ingredients came from product_extractor's output: bound to today's output.
        assert top.args_from == "current"
        assert top.args == {"ingredients": [{"name": "Limonene", "cas": "5989-27-5"}]}
        assert top.example_args is None and top.example_from is None

        classified = CallStep(
            "pfas_classifier", {"ingredients": top.args["ingredients"]}, output={"pfas": []}
        )
        later = Workflow(
            id="now", steps=(InstructionStep("Classify citra.txt", (extracted, classified)),)
        )
        table = memory.suggest(later, limit=1)[0]
        assert table.tool == "markdown_table" and table.args_from == "mixed"
        # The product name inside the title flows from the extractor; the rows do not.
        assert table.args == {"title": "Ingredients of CitraClean"}
        assert table.example_args == {"rows": [["PTFE", True]]}
        assert table.example_from == "aqua"
    finally:
        memory.close()


def test_unbindable_arguments_are_examples_never_values_to_use() -> None:
    memory = EpisodicMemory(store="memory:", embedder="fake")
    try:
        memory.save(_sds_workflow())
        # Nothing extracted yet in the current workflow: the past file name is only an example.
        current = Workflow(id="now", steps=(InstructionStep("Classify citra.txt"),))
        found = memory.suggest(current, limit=None)
        first = next(s for s in found if s.tool == "product_extractor")
        assert first.args is None and first.args_from == "example"
        assert first.example_args == {"file": "spray_sds.txt"} and first.example_from == "aqua"
    finally:
        memory.close()


def test_bind_value_shapes() -> None:
    past = (CallStep("x", output={"a": [1, 2], "b": {"c": "Acme Corp"}}),)
    now = {"x": CallStep("x", output={"a": [3], "b": {"c": "Beta Ltd"}})}
    assert bind_value([1, 2], past, now) == (True, [3])
    assert bind_value("Report on Acme Corp", past, now) == (True, "Report on Beta Ltd")
    assert bind_value("unrelated", past, now) == (False, None)
    assert bind_value([1, 2], past, {}) == (False, None)


def test_a_crew_without_description_never_gets_a_sub_agents_tool_alone() -> None:
    """The handoffs the stored and current workflows show stand in for a crew description."""
    from em_plugin.memory import EpisodicMemory
    from provenance.model import CallStep, InstructionStep, Workflow

    handoff = CallStep(
        "transfer_to_mailer",
        {"task": "mail it"},
        agent="coordinator",
        steps=(CallStep("send_email", {"to": "a@example.org"}, agent="mailer"),),
    )
    past = Workflow(
        id="past",
        steps=(
            InstructionStep("Look the report up", (CallStep("search", agent="coordinator"),)),
            InstructionStep("Mail the report to the team", (handoff,)),
        ),
    )
    now = Workflow(
        id="now",
        steps=(InstructionStep("Look the budget up", (CallStep("search", agent="coordinator"),)),),
    )
    with EpisodicMemory(store="memory:", embedder="fake") as memory:
        memory.save(past)
        suggestions = memory.suggest(now, limit=None)
    tools = [s.tool for s in suggestions]
    assert "send_email" not in tools, [(s.source, s.tool) for s in suggestions]
    assert "transfer_to_mailer" in tools
