"""The demo crew's offline chat models really call tools, through each framework's own API."""

from __future__ import annotations

import json
import sys

import pytest
from beeai_framework.agents.requirement import RequirementAgent
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import StructuredTool

from em_plugin.embedding import FakeEmbedder
from em_plugin.errors import ConfigurationError
from integrations.demo import _llm_env
from integrations.demo._beeai_model import OfflineBeeAIChatModel
from integrations.demo._langchain_model import OfflineChatModel
from integrations.demo.crews import _beeai_tool
from integrations.demo.pfas import TOOLS
from integrations.demo.router import (
    DATA_PREFIX,
    ChatTurn,
    OfflineRouter,
    ToolSpec,
    latest_data,
    strip_data,
    with_context,
)

EXTRACT = "Extract all ingredients from firestop_afff3_sds.txt"
OFF_TOPIC = "Who won the football world cup in 1998?"


@pytest.fixture(scope="module")
def router() -> OfflineRouter:
    return OfflineRouter(FakeEmbedder())


def _lc_tools() -> list[StructuredTool]:
    return [StructuredTool.from_function(f, name=n) for n, f in TOOLS.items()]


# ----------------------------------------------------------------------------- LangChain


def test_bind_tools_binds_openai_schemas_and_the_model_returns_a_tool_call(router) -> None:
    model = OfflineChatModel(router=router)
    bound = model.bind_tools(_lc_tools())
    tools = bound.kwargs["tools"]
    assert [t["function"]["name"] for t in tools] == list(TOOLS)
    assert "file" in tools[0]["function"]["parameters"]["properties"]

    reply = bound.invoke([HumanMessage(EXTRACT)])

    assert reply.content == ""
    [call] = reply.tool_calls
    assert call["name"] == "product_extractor"
    assert call["args"] == {"file": "firestop_afff3_sds.txt"}
    assert call["id"].startswith("call_")


def test_after_the_tool_message_the_model_answers_from_the_result(router) -> None:
    bound = OfflineChatModel(router=router).bind_tools(_lc_tools())
    call = {"name": "product_extractor", "args": {"file": "x.txt"}, "id": "c1"}
    result = {"product": "Foam", "ingredients": [{"name": "Water", "cas": "7732-18-5"}]}
    messages = [
        HumanMessage(EXTRACT),
        AIMessage("", tool_calls=[call]),
        ToolMessage(json.dumps(result), tool_call_id="c1", name="product_extractor"),
    ]

    reply = bound.invoke(messages)

    assert not reply.tool_calls
    assert reply.content.startswith("Foam contains 1 ingredients: Water (CAS 7732-18-5")
    assert latest_data([reply.content]) == result


def test_without_a_fitting_tool_the_model_answers_in_plain_text(router) -> None:
    reply = (
        OfflineChatModel(router=router).bind_tools(_lc_tools()).invoke([HumanMessage(OFF_TOPIC)])
    )
    assert not reply.tool_calls
    assert "None of the crew's tools covers" in reply.content


def test_create_agent_runs_the_tool_and_streams_without_losing_tool_calls(router) -> None:
    agent = create_agent(OfflineChatModel(router=router), tools=_lc_tools()[:1])

    chunks = list(agent.stream({"messages": [HumanMessage(EXTRACT)]}, stream_mode="messages"))

    tool_messages = [m for m, _ in chunks if isinstance(m, ToolMessage)]
    assert [m.name for m in tool_messages] == ["product_extractor"]
    final = [m for m, _ in chunks if isinstance(m, AIMessage) and m.content][-1]
    assert "FireStop AFFF" in final.content and DATA_PREFIX in final.content


# ---------------------------------------------------------------------------------- BeeAI


async def test_beeai_model_calls_the_tool_then_final_answer(router) -> None:
    agent = RequirementAgent(
        llm=OfflineBeeAIChatModel(router), tools=[_beeai_tool("product_extractor")], name="x"
    )

    output = await agent.run(EXTRACT)

    assert [s.tool.name for s in output.state.steps] == ["product_extractor", "final_answer"]
    assert output.state.steps[0].input == {"file": "firestop_afff3_sds.txt"}
    assert output.last_message.text.startswith("FireStop AFFF 3% Aqueous Film-Forming Foam")


async def test_beeai_model_reads_context_through_the_escaped_task_prompt(router) -> None:
    # RequirementAgent HTML-escapes the task; the JSON context must survive it.
    agent = RequirementAgent(
        llm=OfflineBeeAIChatModel(router), tools=[_beeai_tool("pfas_classifier")], name="x"
    )
    task = with_context(
        "Classify them as PFAS", {"ingredients": [{"name": "PFOA", "cas": "335-67-1"}]}
    )

    output = await agent.run(task)

    assert output.state.steps[0].input["ingredients"] == [{"name": "PFOA", "cas": "335-67-1"}]
    assert strip_data(output.last_message.text).startswith("1 of 1 are PFAS")


async def test_beeai_model_answers_off_topic_questions_with_final_answer_only(router) -> None:
    agent = RequirementAgent(
        llm=OfflineBeeAIChatModel(router), tools=[_beeai_tool("pfas_classifier")], name="x"
    )
    output = await agent.run(OFF_TOPIC)
    assert [s.tool.name for s in output.state.steps] == ["final_answer"]


async def test_beeai_model_clone_shares_the_router(router) -> None:
    model = OfflineBeeAIChatModel(router)
    twin = await model.clone()
    assert twin is not model and twin.router is router


# ---------------------------------------------------------------------------------- router


def test_respond_routes_the_new_instruction_with_the_previous_turns_data(router) -> None:
    tools = [ToolSpec("pfas_classifier_agent", "Classify molecules as PFAS", ("task",), ("task",))]
    earlier = 'Foam contains 1 ingredients.\nDATA: {"ingredients": [{"name": "PFOA"}]}'
    turns = [
        ChatTurn("user", EXTRACT),
        ChatTurn("tool", earlier, tool="product_extractor_agent"),
        ChatTurn("assistant", "Foam contains 1 ingredients."),
        ChatTurn("user", "Classify them as PFAS"),
    ]

    decision = router.respond(turns, tools)

    assert decision.tool == "pfas_classifier_agent"
    assert decision.args["task"] == with_context(
        "Classify them as PFAS", {"ingredients": [{"name": "PFOA"}]}
    )


def test_respond_passes_a_sub_agents_answer_on_without_data_lines(router) -> None:
    turns = [
        ChatTurn("user", EXTRACT),
        ChatTurn("tool", 'Foam.\nDATA: {"a": 1}', tool="product_extractor_agent"),
    ]
    assert router.respond(turns, []).answer == "Foam."
    failed = [ChatTurn("user", EXTRACT), ChatTurn("tool", "no such file", tool="t", error=True)]
    assert router.respond(failed, []).answer == "The t call failed: no such file"


# ---------------------------------------------------------------------------------- EM_PLUGIN_LLM


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (None, _llm_env.LLMSpec()),
        ("offline", _llm_env.LLMSpec()),
        ("ollama:llama3.1", _llm_env.LLMSpec("ollama", "llama3.1")),
        (
            "openai:qwen2.5@http://127.0.0.1:8000/v1",
            _llm_env.LLMSpec("openai", "qwen2.5", "http://127.0.0.1:8000/v1"),
        ),
    ],
)
def test_llm_specs_parse(text, expected) -> None:
    assert _llm_env.parse_llm_spec(text) == expected


@pytest.mark.parametrize("text", ["gpt-4o", "claude:x", "ollama:", "openai:m@ftp://host"])
def test_bad_llm_specs_list_the_accepted_forms(text) -> None:
    with pytest.raises(ConfigurationError, match="EM_PLUGIN_LLM"):
        _llm_env.parse_llm_spec(text)


def test_a_missing_provider_package_is_named(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "langchain_ollama", None)  # import fails
    spec = _llm_env.parse_llm_spec("ollama:llama3.1")
    with pytest.raises(ConfigurationError, match="pip install 'langchain-ollama'"):
        _llm_env.langchain_chat_model(spec)


def test_the_env_var_selects_real_beeai_models(monkeypatch) -> None:
    monkeypatch.setenv("EM_PLUGIN_LLM", "ollama:llama3.1@http://127.0.0.1:11434")
    model = _llm_env.beeai_chat_model(_llm_env.llm_spec_from_env())
    assert model.provider_id == "ollama" and model.model_id == "llama3.1"  # no request is made
    offline = _llm_env.beeai_chat_model(_llm_env.LLMSpec(), OfflineRouter(FakeEmbedder()))
    assert isinstance(offline, OfflineBeeAIChatModel)
    with pytest.raises(ConfigurationError, match="router"):
        _llm_env.langchain_chat_model(_llm_env.LLMSpec())
