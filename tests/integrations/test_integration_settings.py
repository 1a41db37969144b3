"""The four integration classes share one base (policy, sessions, isolation) and spell their
settings the same way; ``crew=<name>`` of the node and middlewares is deprecated for
``crew_name=``."""

from __future__ import annotations

import pytest

pytest.importorskip("langgraph")
pytest.importorskip("beeai_framework")

from beeai_framework.agents.requirement import RequirementAgent
from lg_memory import make_memory

from em_plugin.errors import ConfigurationError
from em_plugin.session import SessionPolicy
from em_plugin.session.integration import MemoryIntegration
from integrations.beeai import EpisodicMemoryAgent
from integrations.beeai import EpisodicMemoryMiddleware as BeeAIMiddleware
from integrations.beeai.testing import ScriptedChatModel
from integrations.langgraph import EpisodicMemoryMiddleware, EpisodicMemoryNode

POLICY = {"strict": True, "autosave": "on_success", "limit": 2, "turn_budget": None}


def _crew() -> RequirementAgent:
    return RequirementAgent(llm=ScriptedChatModel([]), tools=[], name="chemist")


def _all(memory, **settings):
    return {
        "node": EpisodicMemoryNode(memory, **settings),
        "langgraph middleware": EpisodicMemoryMiddleware(memory, **settings),
        "beeai middleware": BeeAIMiddleware(memory, **settings),
        "beeai agent": EpisodicMemoryAgent(_crew(), memory, **settings),
    }


def test_one_base_and_the_same_settings_everywhere() -> None:
    memory = make_memory()
    for kind, integration in _all(memory, crew_name="pfas-crew", **POLICY).items():
        assert isinstance(integration, MemoryIntegration), kind
        assert integration.policy == SessionPolicy(**POLICY), kind
        assert integration.crew_name == "pfas-crew", kind
        assert integration.strict is True and integration.sessions.isolation.strict, kind
        assert integration.sessions.memory is memory, kind
    memory.close()


def test_the_same_errors_everywhere() -> None:
    memory = make_memory()
    for make in (
        lambda **kw: EpisodicMemoryNode(memory, **kw),
        lambda **kw: EpisodicMemoryMiddleware(memory, **kw),
        lambda **kw: BeeAIMiddleware(memory, **kw),
        lambda **kw: EpisodicMemoryAgent(_crew(), memory, **kw),
    ):
        with pytest.raises(ConfigurationError, match="limit must be an integer >= 1"):
            make(limit=0)
        with pytest.raises(ConfigurationError, match="unknown option.*valid: autosave"):
            make(stirct=True)
        with pytest.raises(ConfigurationError, match="max_sessions"):
            make(max_sessions=0)
    for make_none in (
        lambda: EpisodicMemoryNode(None),  # type: ignore[arg-type]
        lambda: EpisodicMemoryMiddleware(None),  # type: ignore[arg-type]
        lambda: BeeAIMiddleware(None),  # type: ignore[arg-type]
        lambda: EpisodicMemoryAgent(_crew(), None),  # type: ignore[arg-type]
    ):
        with pytest.raises(ConfigurationError, match="memory is required"):
            make_none()
    memory.close()


@pytest.mark.parametrize(
    "make",
    [
        lambda memory: EpisodicMemoryNode(memory, crew="pfas-crew"),
        lambda memory: EpisodicMemoryMiddleware(memory, crew="pfas-crew"),
        lambda memory: BeeAIMiddleware(memory, crew="pfas-crew"),
    ],
    ids=["node", "langgraph middleware", "beeai middleware"],
)
def test_crew_as_a_name_is_deprecated_for_crew_name(make) -> None:
    memory = make_memory()
    with pytest.deprecated_call(match=r"\(crew=<name>\) is deprecated.*\(crew_name=<name>\)") as w:
        integration = make(memory)
    assert {x.filename for x in w if x.category is DeprecationWarning} == {__file__}
    assert integration.crew_name == "pfas-crew"
    with pytest.deprecated_call(match=r"\.crew is deprecated.*\.crew_name"):
        assert integration.crew == "pfas-crew"
    memory.close()


def test_the_agent_crew_is_the_crew_itself() -> None:
    memory = make_memory()
    crew = _crew()
    agent = EpisodicMemoryAgent(crew, memory)
    assert agent.crew is crew and agent.crew_name == "chemist"
    memory.close()
