"""What an agent itself sees of memory: the recall tool's answer and the prompt block.

:func:`recall_text` answers the recall tools of both integrations (an agent looks past workflows
up deliberately, by describing a task in words); :func:`prompt_block_text` renders the
"Relevant past workflows / suggested next tools" block that ``inject=True`` puts in the system
prompt (the way n8n and H-EPM guide the agent itself).
"""

from __future__ import annotations

from collections.abc import Sequence

from em_plugin.retrieval.reference import Match
from em_plugin.session.isolation import FaultIsolation
from em_plugin.session.port import MemoryPort
from em_plugin.suggest.types import Suggestion
from provenance.model import CallStep, InstructionStep, Workflow

__all__ = [
    "RECALL_DESCRIPTION",
    "instruction_matches",
    "prompt_block_text",
    "recall_answer",
    "recall_text",
]

#: What the model is told about the recall tool (both integrations).
RECALL_DESCRIPTION = (
    "Look up past workflows similar to a task before doing it. Input: a short description of the "
    "task. Returns the most similar saved workflows and the steps they took."
)


def recall_answer(memory: MemoryPort, query: str, *, limit: int, isolation: FaultIsolation) -> str:
    """Answer a recall tool call: :func:`recall_text`, or a short apology when memory fails.

    Args:
        memory: The memory view of the run's scope.
        query: The agent's query.
        limit: How many workflows to describe.
        isolation: Raises the failure in strict mode, else logs it.

    Returns:
        The tool's answer.
    """
    try:
        return recall_text(memory, query, limit=limit)
    except Exception as exc:  # noqa: BLE001 - isolation boundary: the crew never breaks
        isolation.failed("recall", exc)
        return f"Episodic memory is unavailable right now ({type(exc).__name__})."


def recall_text(
    memory: MemoryPort,
    query: str,
    *,
    scope: str | None = None,
    limit: int = 3,
    min_similarity: float | None = None,
) -> str:
    """Look past workflows up deliberately; the text a recall tool returns to the agent.

    Two routes are merged, best score per workflow: the paper's retrieval with the query as a
    one-instruction workflow, and the cosine between the query and every instruction of the
    scope's workflows (at any depth: instructions with calls under them are not leaves, so the
    paper's rule alone would never see them). The second route reads the scope's workflows from
    the store; embeddings come from the memory's cache.

    Args:
        memory: The episodic memory (a view of the scope to search).
        query: What the agent is about to do, in words.
        scope: The scope to search (default: the memory's).
        limit: How many workflows to describe.
        min_similarity: Instruction cosine a workflow must exceed (default: the memory's
            retrieval threshold).

    Returns:
        A short description of the most similar past workflows and their steps.
    """
    if not isinstance(query, str) or not query.strip():
        return "Give a non-empty query describing the task."
    scope = scope or memory.scope
    threshold = min_similarity if min_similarity is not None else memory.threshold
    probe = Workflow(id="recall/query", steps=(InstructionStep(text=query),), scope=scope)
    scores: dict[str, float] = {m.workflow_id: m.score for m in memory.retrieve(probe)}
    found: dict[str, Workflow] = {}
    for workflow_id, score, workflow in instruction_matches(
        memory, query, scope=scope, threshold=threshold
    ):
        found[workflow_id] = workflow
        scores[workflow_id] = max(score, scores.get(workflow_id, score))
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:limit]
    if not ranked:
        return f"No past workflow is similar to {query!r}."
    lines = [f"Past workflows similar to {query!r}:"]
    for number, (workflow_id, score) in enumerate(ranked, start=1):
        lines.append(f"{number}. {workflow_id} (similarity {score:.2f})")
        described = found.get(workflow_id) or _load(memory, workflow_id)
        if described is not None:
            lines.append("   steps: " + " -> ".join(_leaf_label(s) for s in described.leaves()))
    return "\n".join(lines)


def instruction_matches(
    memory: MemoryPort,
    query: str,
    *,
    scope: str | None = None,
    threshold: float | None = None,
) -> list[tuple[str, float, Workflow]]:
    """Find the workflows with an instruction, at any depth, close to a task in words.

    Instructions with calls under them are not leaves, so the paper's retrieval never compares
    them; this compares the query with every instruction of the scope's workflows (read from the
    store, embedded once per distinct text) and keeps each workflow's best cosine.

    Args:
        memory: The episodic memory.
        query: The task in words.
        scope: The scope to search (default: the memory's).
        threshold: The cosine a workflow's best instruction must exceed (default: the memory's
            retrieval threshold).

    Returns:
        ``(workflow id, best cosine, workflow)`` for each match, in the store's order.
    """
    scope = scope or memory.scope
    threshold = memory.threshold if threshold is None else threshold
    workflows = list(memory.store.iter_workflows(scope))
    texts = {
        w.id: [s.text for _, s in w.walk() if isinstance(s, InstructionStep)] for w in workflows
    }
    distinct = list(dict.fromkeys(t for ts in texts.values() for t in ts))
    if not distinct:
        return []
    vectors = memory.embedder.embed([query, *distinct])
    cosine = dict(zip(distinct, (vectors[1:] @ vectors[0]).tolist(), strict=True))
    out: list[tuple[str, float, Workflow]] = []
    for workflow in workflows:
        best = max((cosine[t] for t in texts[workflow.id]), default=-1.0)
        if best > threshold:
            out.append((workflow.id, float(best), workflow))
    return out


def _load(memory: MemoryPort, workflow_id: str) -> Workflow | None:
    try:
        return memory.load(workflow_id)
    except Exception:  # noqa: BLE001 - the description is best effort; the id already helps
        return None


def _leaf_label(step: CallStep | InstructionStep) -> str:
    if isinstance(step, CallStep):
        return step.name
    text = " ".join(step.text.split())
    return f'"{text[:60]}"'


def prompt_block_text(
    matches: Sequence[Match], suggestions: Sequence[Suggestion], limit: int = 3
) -> str:
    """Render the system-prompt block from retrieved matches and suggestions.

    Args:
        matches: Retrieved memory workflows (:class:`~em_plugin.retrieval.reference.Match`),
            best first.
        suggestions: Suggestions for the current workflow.
        limit: How many workflows and steps to name.

    Returns:
        The block, or ``""`` when there is nothing to say.
    """
    if not matches and not suggestions:
        return ""
    lines = ["Relevant past workflows (episodic memory):"]
    for match in list(matches)[:limit]:
        lines.append(f"- {match.workflow_id} (similarity {match.score:.2f})")
    if not matches:
        lines.append("- none similar enough")
    tools = [s.tool for s in suggestions if s.tool]
    if tools:
        lines.append("Suggested next tools: " + ", ".join(dict.fromkeys(tools)))
    steps = [s.text for s in suggestions if not s.tool]
    if steps:
        lines.append("Suggested next steps: " + "; ".join(steps[:limit]))
    return "\n".join(lines)
