"""LangChain and BeeAI chat models reach the engine through the ChatModel protocol.

The adapters live in the integrations (``integrations/langgraph/_chat.py``,
``integrations/beeai/_chat.py``); the engine finds them through the ``em_plugin.chat_models``
entry points declared in pyproject.toml, or by registration when an integration is imported.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from em_plugin.errors import ConfigurationError
from em_plugin.memory import EpisodicMemory
from em_plugin.suggest.chat import ENTRY_POINT_GROUP, ChatModel, as_chat_model
from integrations.beeai import _chat as beeai_chat
from integrations.beeai.testing import ScriptedChatModel, say
from integrations.langgraph import _chat as langchain_chat
from provenance.model import CallStep, InstructionStep, Workflow

ROOT = Path(__file__).resolve().parents[2]
CREW = {
    "name": "chemists",
    "goal": "Find PFAS in products",
    "agents": [
        {
            "name": "chemist",
            "tools": [
                {"name": "product_extractor", "description": "Extract ingredients."},
                {"name": "pfas_classifier", "description": "Classify PFAS."},
            ],
        }
    ],
}
CURRENT = Workflow(
    id="now",
    steps=(InstructionStep("extract beta.pdf", (CallStep("product_extractor", {"file": "b"}),)),),
)
ANSWER = "1. Classify the ingredients [pfas_classifier]"


def _suggest_both_ways(llm: object) -> None:
    with EpisodicMemory("memory:", "fake:32", llm=llm, crew=CREW) as memory:
        found = memory.suggest(CURRENT)
        assert (found[0].source, found[0].tool) == ("llm", "pfas_classifier")
        found = asyncio.run(memory.asuggest(CURRENT))
        assert (found[0].source, found[0].tool) == ("llm", "pfas_classifier")


def test_a_langchain_chat_model_suggests_sync_and_async() -> None:
    # Content blocks, as Anthropic-style models answer, are joined into the text.
    blocks = [{"type": "text", "text": "1. Classify the ingredients "}, "[pfas_classifier]"]
    model = GenericFakeChatModel(
        messages=iter([AIMessage(content=blocks), AIMessage(content=ANSWER)])  # type: ignore[arg-type]
    )
    assert isinstance(as_chat_model(model), langchain_chat.LangChainChat)
    _suggest_both_ways(model)


def test_a_beeai_chat_model_suggests_sync_and_async() -> None:
    model = ScriptedChatModel([say(ANSWER), say(ANSWER)], name="suggester")
    adapted = as_chat_model(model)
    assert isinstance(adapted, beeai_chat.BeeAIChat) and isinstance(adapted, ChatModel)
    _suggest_both_ways(model)
    assert model.remaining == 0  # both calls reached the BeeAI model


def test_no_adapter_fits_names_the_protocol_and_the_adapters() -> None:
    with pytest.raises(ConfigurationError, match=r"ChatModel \(complete/acomplete\).*beeai"):
        EpisodicMemory("memory:", "fake", llm=42)


def test_entry_points_adapt_models_without_importing_the_integration(tmp_path: Path) -> None:
    """A fresh interpreter finds the adapters pyproject.toml declares, and only through them."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    group = declared[ENTRY_POINT_GROUP]
    assert group == {
        "beeai": "integrations.beeai._chat:adapt",
        "langchain": "integrations.langgraph._chat:adapt",
    }
    # The declared group, as an installed distribution's metadata (the editable install may
    # predate it): importlib.metadata reads it from sys.path like any installed package's.
    info = tmp_path / "em_plugin_chat_adapters-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: em-plugin-chat-adapters\n")
    lines = [f"[{ENTRY_POINT_GROUP}]", *(f"{k} = {v}" for k, v in group.items())]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    script = textwrap.dedent(
        f"""
        import sys
        sys.path[:0] = [{str(tmp_path)!r}, {str(ROOT)!r}]
        from langchain_core.language_models.fake_chat_models import FakeListChatModel
        from beeai_framework.backend.chat import ChatModel
        from em_plugin.suggest.chat import as_chat_model
        assert "integrations.langgraph" not in sys.modules
        lc = as_chat_model(FakeListChatModel(responses=["1. x"]))
        print(type(lc).__module__, lc.complete([("human", "hi")]))
        class Bee(ChatModel):
            model_id = "bee"
            provider_id = "bee"
            async def _create(self, input, run): ...
            async def _create_stream(self, input, run): yield None
        print(type(as_chat_model(Bee())).__module__)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == [
        "integrations.langgraph._chat 1. x",
        "integrations.beeai._chat",
    ]
