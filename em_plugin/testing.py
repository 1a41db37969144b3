"""Test doubles for code built on the memory: a fake memory and a scripted chat model.

As pydantic-ai ships ``TestModel``, the library ships what a test of an integration, an adapter
or an app needs to run without a store, an embedding model or a network:

- :class:`FakeMemory`: an in-process :class:`~em_plugin.session.port.MemoryPort` (what every
  integration takes as ``memory``); it keeps saved workflows in a dict, suggests the tools of
  saved workflows the current one has not used yet, records what it showed, and fails on
  demand (:meth:`FakeMemory.fail`) so a test checks that a memory failure never breaks the crew;
- :class:`ScriptedChat`: a chat model answering from a script, for the memory's LLM suggester
  (``EpisodicMemory(llm=ScriptedChat([...]))``); it records the prompts it was sent.

The frameworks' own chat models, scripted the same way, live with their integrations (this
package imports no framework): ``integrations.langgraph.testing.ScriptedChatModel`` (a LangChain
``BaseChatModel`` that accepts ``bind_tools``, for ``create_agent`` and LangGraph graphs) and
``integrations.beeai.testing.ScriptedChatModel`` (a BeeAI ``ChatModel``).

Example:
    >>> from em_plugin.session import SessionController
    >>> from em_plugin.capture.trajectory import Trajectory
    >>> memory = FakeMemory()
    >>> session = SessionController(memory, Trajectory("chat-1"))
    >>> _ = session.begin_turn("Extract the ingredients")
    >>> session.trajectory.call_start("c1", "product_extractor", {"file": "acme.pdf"})
    >>> session.trajectory.call_end("c1", "PFOA")
    >>> session.handle_command("/save")
    "Saved workflow session/chat-1 (1 step) in scope 'default'."
    >>> sorted(memory.saved)
    ['session/chat-1']
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from em_plugin.embedding.embedders import FakeEmbedder
from em_plugin.errors import ConfigurationError, EpisodicMemoryError
from em_plugin.retrieval.reference import Match
from em_plugin.suggest.chat import Messages
from em_plugin.suggest.types import Evidence, Suggestion
from provenance.model import DEFAULT_SCOPE, CallStep, Workflow

__all__ = ["OPERATIONS", "FakeMemory", "ScriptedChat"]

#: The operations :meth:`FakeMemory.fail` can make fail (their async twins fail with them).
OPERATIONS = ("record_suggestions", "retrieve", "save", "suggest")


class _Workflows:
    """The fake's store view: the saved workflows of one scope (the recall tool reads it)."""

    def __init__(self, saved: dict[tuple[str, str], Workflow]) -> None:
        self._saved = saved

    def iter_workflows(self, scope: str | None = None) -> list[Workflow]:
        return [w for (s, _), w in self._saved.items() if scope is None or s == scope]


class FakeMemory:
    """An in-process memory for tests: saves in a dict, suggests unused tools of saved workflows.

    Retrieval matches every other saved workflow of the scope with score ``0.9``; suggestions are
    the call steps of those workflows whose tool the current workflow has not called, in order.
    Views made with :meth:`with_scope` share the saved workflows, the records and the failures.

    Args:
        scope: The scope this view reads and writes.
        threshold: The retrieval threshold it reports.
    """

    def __init__(self, scope: str = DEFAULT_SCOPE, *, threshold: float = 0.65) -> None:
        self.scope = scope
        self.threshold = threshold
        self.embedder = FakeEmbedder(64)
        self._saved: dict[tuple[str, str], Workflow] = {}
        self.recorded: list[tuple[str, list[Suggestion]]] = []
        """``(session id, suggestions)`` for every time suggestions were shown."""
        self._failing: set[str] = set()
        self.store = _Workflows(self._saved)

    @property
    def saved(self) -> dict[str, Workflow]:
        """The workflows saved in this view's scope, by id."""
        return {wid: w for (scope, wid), w in self._saved.items() if scope == self.scope}

    def with_scope(self, scope: str) -> FakeMemory:
        """Return a view of the same memory that reads and writes ``scope``."""
        view = FakeMemory(scope, threshold=self.threshold)
        view._saved, view.recorded, view._failing = self._saved, self.recorded, self._failing
        view.store = self.store
        return view

    def fail(self, *operations: str) -> None:
        """Make ``operations`` raise an ``EpisodicMemoryError`` until :meth:`heal`.

        Raises:
            ConfigurationError: On an operation not in :data:`OPERATIONS` (listed).
        """
        unknown = sorted(set(operations) - set(OPERATIONS))
        if unknown:
            raise ConfigurationError(
                f"unknown operation(s) {unknown}; valid: {', '.join(OPERATIONS)}"
            )
        self._failing.update(operations)

    def heal(self) -> None:
        """Make every operation work again."""
        self._failing.clear()

    def _check(self, operation: str) -> None:
        if operation in self._failing:
            raise EpisodicMemoryError(f"{operation} failed (FakeMemory.fail)")

    def load(self, workflow_id: str) -> Workflow:
        """Return a saved workflow of this scope.

        Raises:
            KeyError: When none has that id.
        """
        return self._saved[(self.scope, workflow_id)]

    def save(self, workflow: Workflow) -> Workflow:
        """Save (or replace) ``workflow`` in this scope and return it."""
        self._check("save")
        stored = workflow.replace(scope=self.scope)
        self._saved[(self.scope, stored.id)] = stored
        return stored

    def retrieve(self, workflow: Workflow) -> list[Match]:
        """Return every other saved workflow of the scope, score ``0.9``."""
        self._check("retrieve")
        return [Match(w.id, 0.9, (0,)) for w in self.saved.values() if w.id != workflow.id]

    def suggest(self, workflow: Workflow, limit: int | None = 3) -> list[Suggestion]:
        """Suggest the tools of retrieved workflows that ``workflow`` has not called."""
        self._check("suggest")
        done = {s.name for s in workflow.leaves() if isinstance(s, CallStep)}
        found: list[Suggestion] = []
        for match in self.retrieve(workflow):
            for position, leaf in enumerate(self.load(match.workflow_id).leaves()):
                if isinstance(leaf, CallStep) and leaf.name not in done:
                    done.add(leaf.name)
                    evidence = (Evidence(match.workflow_id, position, match.score),)
                    found.append(
                        Suggestion(f"Run {leaf.name}", tool=leaf.name, score=0.9, evidence=evidence)
                    )
        return found if limit is None else found[:limit]

    def record_suggestions(self, session_id: str, suggestions: Sequence[Suggestion]) -> None:
        """Record that ``suggestions`` were shown in ``session_id``."""
        self._check("record_suggestions")
        self.recorded.append((session_id, list(suggestions)))

    async def asave(self, workflow: Workflow) -> Workflow:
        """Async :meth:`save`."""
        return self.save(workflow)

    async def aretrieve(self, workflow: Workflow) -> list[Match]:
        """Async :meth:`retrieve`."""
        return self.retrieve(workflow)

    async def asuggest(self, workflow: Workflow, limit: int | None = 3) -> list[Suggestion]:
        """Async :meth:`suggest`."""
        return self.suggest(workflow, limit)

    async def arecord_suggestions(self, session_id: str, suggestions: Sequence[Suggestion]) -> None:
        """Async :meth:`record_suggestions`."""
        self.record_suggestions(session_id, suggestions)


class ScriptedChat:
    """A chat model (``complete`` / ``acomplete``) that answers from a script, in order.

    Args:
        answers: The answers, one per call.

    Example:
        >>> chat = ScriptedChat(["1. Check which ingredients are PFAS [pfas_classifier]"])
        >>> chat.complete([("system", "..."), ("human", "What next?")])[:8]
        '1. Check'
        >>> chat.prompts[0][-1]
        ('human', 'What next?')
    """

    def __init__(self, answers: Iterable[str] = ()) -> None:
        self._answers = list(answers)
        self.prompts: list[list[tuple[str, str]]] = []
        """Every message list the model was sent, in order."""

    def extend(self, answers: Iterable[str]) -> None:
        """Append answers to the script."""
        self._answers.extend(answers)

    @property
    def remaining(self) -> int:
        """How many answers are left."""
        return len(self._answers)

    def complete(self, messages: Messages) -> str:
        """Record ``messages`` and return the next answer.

        Raises:
            RuntimeError: When the script is exhausted (the memory reports it as a suggester
                failure).
        """
        self.prompts.append([(str(role), str(text)) for role, text in messages])
        if not self._answers:
            raise RuntimeError(f"ScriptedChat: script exhausted at call #{len(self.prompts)}")
        return self._answers.pop(0)

    async def acomplete(self, messages: Messages) -> str:
        """Async :meth:`complete`."""
        return self.complete(messages)

    def __repr__(self) -> str:
        return f"ScriptedChat(remaining={self.remaining})"
