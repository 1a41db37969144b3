"""The four integration classes share one base (policy, sessions, isolation) and spell their
settings the same way: ``memory`` plus a few keyword-only options, the session settings in one
``policy=SessionPolicy(...)``. The loose policy keywords of the previous release and
``crew=<name>`` of the node and middlewares still work, each with one DeprecationWarning."""

from __future__ import annotations

import inspect
import warnings

import pytest

pytest.importorskip("langgraph")
pytest.importorskip("beeai_framework")

from beeai_framework.agents.requirement import RequirementAgent
from lg_memory import make_memory

from em_plugin import SessionPolicy
from em_plugin.errors import ConfigurationError
from em_plugin.session.integration import MemoryIntegration
from integrations.beeai import EpisodicMemoryAgent
from integrations.beeai import EpisodicMemoryMiddleware as BeeAIMiddleware
from integrations.beeai.testing import ScriptedChatModel
from integrations.langgraph import (
    EpisodicMemoryMiddleware,
    EpisodicMemoryNode,
    with_episodic_memory,
)

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
    policy = SessionPolicy(**POLICY)
    for kind, integration in _all(memory, crew_name="pfas-crew", policy=policy).items():
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
        with pytest.raises(
            ConfigurationError, match=r"unknown option\(s\) stirct; valid: .*policy"
        ):
            make(stirct=True)
        with pytest.raises(ConfigurationError, match="max_sessions"):
            make(max_sessions=0)
        with pytest.raises(ConfigurationError, match="policy=...\\) must be an em_plugin.Session"):
            make(policy={"limit": 2})
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


# Each public class: its positional parameters, then its keyword-only ones (``**deprecated``
# carries the previous release's loose keywords for one release).
SIGNATURES = {
    EpisodicMemoryNode: (
        ["memory"],
        ["policy", "crew_name", "name", "max_sessions", "messages_key"],
    ),
    EpisodicMemoryMiddleware: (["memory"], ["policy", "crew_name", "max_sessions", "inject"]),
    BeeAIMiddleware: (
        ["memory"],
        ["policy", "crew_name", "max_sessions", "session_id", "scope", "journal"],
    ),
    EpisodicMemoryAgent: (
        ["crew", "memory"],
        [
            "policy",
            "crew_name",
            "name",
            "description",
            "max_sessions",
            "session_id",
            "scope",
            "journal",
            "middlewares",
        ],
    ),
    with_episodic_memory: (
        ["crew", "memory"],
        ["policy", "crew_name", "crew_node", "state_schema"],
    ),
}


@pytest.mark.parametrize(
    "target", list(SIGNATURES), ids=lambda t: f"{t.__module__.split('.')[1]}.{t.__qualname__}"
)
def test_signature_is_memory_and_a_few_keyword_only_options(target) -> None:
    parameters = list(inspect.signature(target).parameters.values())
    kinds = inspect.Parameter
    positional = [p.name for p in parameters if p.kind is kinds.POSITIONAL_OR_KEYWORD]
    keyword_only = [p.name for p in parameters if p.kind is kinds.KEYWORD_ONLY]
    rest = [
        (p.name, p.kind)
        for p in parameters
        if p.kind not in (kinds.POSITIONAL_OR_KEYWORD, kinds.KEYWORD_ONLY)
    ]
    assert (positional, keyword_only) == SIGNATURES[target]
    assert rest == [("deprecated", kinds.VAR_KEYWORD)]
    assert all(p.default is None for p in parameters if p.name == "policy")


def _makers(memory):
    return {
        "EpisodicMemoryNode": lambda **kw: EpisodicMemoryNode(memory, **kw),
        "EpisodicMemoryMiddleware": lambda **kw: EpisodicMemoryMiddleware(memory, **kw),
        "beeai EpisodicMemoryMiddleware": lambda **kw: BeeAIMiddleware(memory, **kw),
        "EpisodicMemoryAgent": lambda **kw: EpisodicMemoryAgent(_crew(), memory, **kw),
    }


@pytest.mark.parametrize("kind", list(_makers(None)))
def test_policy_is_the_new_spelling_and_warns_nothing(kind) -> None:
    memory = make_memory()
    policy = SessionPolicy(**POLICY)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        integration = _makers(memory)[kind](policy=policy)
    assert integration.policy is policy
    assert (integration.limit, integration.autosave, integration.strict) == (2, "on_success", True)
    assert _makers(memory)[kind]().policy == SessionPolicy()  # the defaults
    memory.close()


LOOSE = {
    "strict": True,
    "autosave": "on_success",
    "judge": lambda workflow, outcome: True,
    "save_command": "/keep",
    "suggest_command": "/next",
    "limit": 2,
    "turn_budget": None,
}


@pytest.mark.parametrize("kind", list(_makers(None)))
@pytest.mark.parametrize("name", list(LOOSE))
def test_each_loose_keyword_warns_once_and_still_works(kind, name) -> None:
    memory = make_memory()
    # A judge needs autosave="on_success": that one is passed too, and warns too.
    given = {name: LOOSE[name]} | ({"autosave": "on_success"} if name == "judge" else {})
    owner = kind.removeprefix("beeai ")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        integration = _makers(memory)[kind](**given)
    deprecations = [w for w in caught if w.category is DeprecationWarning]
    assert sorted(str(w.message).split(" is deprecated")[0] for w in deprecations) == sorted(
        f"{owner}({key}=...)" for key in given
    )
    assert all(f"use {owner}(policy=SessionPolicy(" in str(w.message) for w in deprecations)
    assert {w.filename for w in deprecations} == {__file__}
    assert getattr(integration.policy, name) == LOOSE[name]
    memory.close()


@pytest.mark.parametrize("kind", list(_makers(None)))
def test_policy_and_a_loose_keyword_together_is_an_error(kind) -> None:
    memory = make_memory()
    with pytest.raises(ConfigurationError, match=r"both policy= and the deprecated limit="):
        _makers(memory)[kind](policy=SessionPolicy(), limit=2)
    memory.close()


def test_with_episodic_memory_takes_the_policy_too() -> None:
    memory = make_memory()
    policy = SessionPolicy(limit=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        builder = with_episodic_memory(lambda state: {}, memory, policy=policy)
    node = builder.nodes["episodic_memory"].runnable
    assert node.policy is policy
    with pytest.deprecated_call(
        match=r"with_episodic_memory\(limit=...\) is deprecated.*"
        r"with_episodic_memory\(policy=SessionPolicy\(limit=...\)\)"
    ):
        builder = with_episodic_memory(lambda state: {}, memory, limit=2)
    assert builder.nodes["episodic_memory"].runnable.policy.limit == 2
    with pytest.raises(ConfigurationError, match="both policy= and the deprecated limit="):
        with_episodic_memory(lambda state: {}, memory, policy=policy, limit=2)
    with pytest.raises(ConfigurationError, match="not both"):
        with_episodic_memory(lambda state: {}, EpisodicMemoryNode(memory), policy=policy)
    memory.close()
