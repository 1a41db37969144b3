"""The deterministic offline "LLM" of the demo crew: routes instructions to tools by embedding.

No LLM API is reachable offline, so the demo crew's chat models (LangChain and BeeAI adapters in
``integrations.demo``) delegate their decisions here. The router is framework-neutral:

* :meth:`OfflineRouter.decide` picks the tool whose description is closest to the instruction
  (cosine of embeddings) and fills its arguments from the text (file names, CAS numbers) or from
  the structured result of an earlier step (``ingredients``/``results`` lists);
* below ``min_similarity`` it picks no tool, and the crew answers that it cannot help (the
  paper's Figure 4 case);
* :func:`render_answer` turns a tool's JSON result into a short readable answer followed by one
  ``DATA:`` line holding the JSON, so a coordinator can pass it on in the next turn;
* :meth:`OfflineRouter.respond` is one chat-model turn over a framework-neutral transcript
  (:class:`ChatTurn`): a new instruction gets a tool call (or a "no tool fits" answer), and the
  result of that call gets the final answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from em_plugin.embedding.embedders import Embedder

DATA_PREFIX = "DATA: "
CONTEXT_MARKER = "\n\nContext: "
_FILE = re.compile(r"[\w.\-]+\.(?:txt|pdf|xml)\b", re.IGNORECASE)
_CAS = re.compile(r"\b\d{2,7}-\d{2}-\d\b")
_RECORD_KEYS = (
    "name",
    "cas",
    "smiles",
    "concentration",
    "material",
    "is_pfas",
    "pbt",
    "vpvb",
    "conclusion",
)
_SMILES = re.compile(r"\bSMILES\s+([^\s,;]+)", re.IGNORECASE)


@dataclass(frozen=True)
class ToolSpec:
    """What the router knows of a tool: its name, description and parameter names."""

    name: str
    description: str
    parameters: tuple[str, ...] = ()
    required: tuple[str, ...] = ()

    @property
    def routing_text(self) -> str:
        """The text compared with instructions: the name's words, then the description."""
        return f"{self.name.replace('_', ' ')}: {self.description}"


@dataclass(frozen=True)
class ChatTurn:
    """One message of a conversation, as the offline model reads it."""

    role: Literal["user", "assistant", "tool"]
    text: str
    tool: str | None = None
    """For ``role="tool"``: the name of the tool whose result this is."""
    error: bool = False
    """For ``role="tool"``: the call failed and ``text`` is the error."""


@dataclass(frozen=True)
class Decision:
    """The router's choice: call ``tool`` with ``args``, or answer with ``answer``."""

    tool: str | None = None
    args: Mapping[str, Any] = field(default_factory=dict)
    answer: str | None = None
    similarity: float = 0.0


class OfflineRouter:
    """Chooses tools by embedding similarity between instruction and tool descriptions.

    Args:
        embedder: Any :class:`~em_plugin.embedding.Embedder`.
        min_similarity: Below this cosine, no tool is chosen.
    """

    def __init__(self, embedder: Embedder, min_similarity: float = 0.25) -> None:
        self._embedder = embedder
        self._min_similarity = min_similarity
        self._description_vectors: dict[str, Any] = {}

    def decide(
        self,
        instruction: str,
        tools: Sequence[ToolSpec],
        context: Mapping[str, Any] | None = None,
    ) -> Decision:
        """Pick the next tool call for an instruction.

        Args:
            instruction: The user's (or delegating agent's) instruction, possibly with a
                ``Context:`` block added by a coordinator.
            tools: The tools the agent may call.
            context: The latest structured result seen in the conversation, if any.

        Returns:
            A tool call, or an answer saying no tool fits.
        """
        text, embedded_context = split_context(instruction)
        context = embedded_context or context
        usable = [t for t in tools if t.name != "final_answer"]
        if not usable:
            return Decision(answer=_no_tool_answer(text))
        scores = self._similarities(text, usable)
        best = max(range(len(usable)), key=lambda i: (scores[i], -i))
        if scores[best] < self._min_similarity:
            return Decision(answer=_no_tool_answer(text), similarity=scores[best])
        tool = usable[best]
        args = _arguments(tool, text, context)
        missing = [p for p in tool.required if p not in args]
        if missing:
            answer = f"To run {tool.name} I need {', '.join(missing)}; please say which to use."
            return Decision(answer=answer, similarity=scores[best])
        return Decision(tool=tool.name, args=args, similarity=scores[best])

    def respond(self, turns: Sequence[ChatTurn], tools: Sequence[ToolSpec]) -> Decision:
        """One chat-model turn: route the latest instruction, or answer from its tool result.

        The instruction is the last ``user`` turn. When tool results follow it, the answer is
        built from the last one (:func:`final_answer`); otherwise the instruction is routed with
        :meth:`decide`, taking as context the latest ``DATA:`` block of the earlier turns (so
        "Classify them as PFAS" reaches the ingredients extracted in the previous turn).

        Args:
            turns: The conversation, oldest first (system prompts left out).
            tools: The tools the agent may call.

        Returns:
            A tool call, or the final answer.
        """
        last_user = max((i for i, turn in enumerate(turns) if turn.role == "user"), default=-1)
        if last_user < 0:
            return Decision(answer="What should I do? Please give me an instruction.")
        results = [turn for turn in turns[last_user + 1 :] if turn.role == "tool"]
        if results:
            return Decision(answer=final_answer(results[-1]))
        context = latest_data([turn.text for turn in turns[:last_user] if turn.role == "tool"])
        return self.decide(turns[last_user].text, tools, context)

    def _similarities(self, text: str, tools: Sequence[ToolSpec]) -> list[float]:
        missing = [t.routing_text for t in tools if t.routing_text not in self._description_vectors]
        if missing:
            for description, vector in zip(missing, self._embedder.embed(missing), strict=True):
                self._description_vectors[description] = vector
        query = self._embedder.embed([text])[0]
        return [float(query @ self._description_vectors[t.routing_text]) for t in tools]


def split_context(text: str) -> tuple[str, dict[str, Any] | None]:
    """Split ``"instruction\\n\\nContext: {json}"`` into the instruction and the context."""
    head, marker, tail = text.partition(CONTEXT_MARKER)
    if not marker:
        return text, None
    try:
        value = json.loads(tail)
    except json.JSONDecodeError:
        return text, None
    return head, value if isinstance(value, dict) else None


def with_context(instruction: str, context: Mapping[str, Any] | None) -> str:
    """Append a context block to a delegated task, so the sub-agent can use earlier results."""
    if not context:
        return instruction
    return instruction + CONTEXT_MARKER + json.dumps(context, ensure_ascii=False)


def latest_data(texts: Sequence[str]) -> dict[str, Any] | None:
    """Return the JSON of the last ``DATA:`` line found in the given texts (newest last)."""
    for text in reversed(texts):
        for line in reversed(text.splitlines()):
            if line.startswith(DATA_PREFIX):
                try:
                    value = json.loads(line[len(DATA_PREFIX) :])
                except json.JSONDecodeError:
                    continue
                if isinstance(value, dict):
                    return value
        try:
            value = json.loads(text)
        except (json.JSONDecodeError, TypeError):
            continue
        if isinstance(value, dict):
            return value
    return None


def strip_data(text: str) -> str:
    """Remove ``DATA:`` lines from an answer meant for the user."""
    return "\n".join(line for line in text.splitlines() if not line.startswith(DATA_PREFIX)).strip()


def final_answer(result: ChatTurn) -> str:
    """The answer an agent gives once its tool call returned ``result``.

    A domain tool's JSON becomes :func:`render_answer` (readable text plus the ``DATA:`` line a
    coordinator passes on); a sub-agent's text answer is passed on without its ``DATA:`` lines,
    since it goes to the user; a failed call is reported as such.
    """
    if result.error:
        return f"The {result.tool or 'tool'} call failed: {result.text.strip()}"
    try:
        data = json.loads(result.text)
    except json.JSONDecodeError:
        return strip_data(result.text) or f"{result.tool or 'The tool'} returned nothing."
    return render_answer(result.tool or "tool", data)


def render_answer(tool: str, result: Any) -> str:
    """Render a tool's result as a readable answer plus one ``DATA:`` line of JSON."""
    data = result if isinstance(result, dict) else {"result": result}
    lines = [_summary(tool, data)]
    lines.append(DATA_PREFIX + json.dumps(_compact(data), ensure_ascii=False))
    return "\n".join(lines)


def _summary(tool: str, data: Mapping[str, Any]) -> str:
    if "markdown" in data:
        return str(data["markdown"])
    if "ingredients" in data and "product" in data:
        items = "; ".join(
            f"{i.get('name')} (CAS {i.get('cas') or 'n/a'}, {i.get('concentration') or 'n/a'})"
            for i in data["ingredients"]
        )
        return f"{data['product']} contains {len(data['ingredients'])} ingredients: {items}."
    results = data.get("results")
    if isinstance(results, list) and results and all(isinstance(r, Mapping) for r in results):
        if all("is_pfas" in r for r in results):
            return _pfas_summary(results)
        if all("conclusion" in r for r in results):
            return (
                "PBT/vPvB screening (REACH Annex XIII): "
                + "; ".join(f"{_label(r)}: {r['conclusion']}" for r in results)
                + "."
            )
    summary = data.get("summary")
    if isinstance(summary, Mapping):
        parts = [
            f"{key.replace('_', ' ')}: {', '.join(map(str, names)) or 'none'}"
            for key, names in summary.items()
        ]
        return f"{tool} results - " + "; ".join(parts) + "."
    return f"{tool} returned: {json.dumps(data, ensure_ascii=False)[:400]}"


def _label(record: Mapping[str, Any]) -> str:
    return str(record.get("name") or record.get("cas") or record.get("smiles") or "?")


def _pfas_summary(results: Sequence[Mapping[str, Any]]) -> str:
    groups: dict[Any, list[str]] = {True: [], False: [], None: []}
    for record in results:
        groups[record.get("is_pfas")].append(_label(record))
    parts = [
        f"{len(groups[True])} of {len(results)} are PFAS under the OECD 2021 definition"
        + (f": {', '.join(groups[True])}" if groups[True] else "")
    ]
    if groups[False]:
        parts.append(f"not PFAS: {', '.join(groups[False])}")
    if groups[None]:
        parts.append(f"structure unknown: {', '.join(groups[None])}")
    return "; ".join(parts) + "."


def _compact(data: Mapping[str, Any]) -> dict[str, Any]:
    # Only the lists later steps consume; definitions, reasons and sources would bloat the prompt.
    keep = {k: v for k, v in data.items() if k in ("product", "file", "ingredients", "results")}
    for key in ("ingredients", "results"):
        if isinstance(keep.get(key), list):
            keep[key] = [
                {k: v for k, v in r.items() if k in _RECORD_KEYS} if isinstance(r, Mapping) else r
                for r in keep[key]
            ]
    return keep or dict(data)


def _arguments(tool: ToolSpec, text: str, context: Mapping[str, Any] | None) -> dict[str, Any]:
    args: dict[str, Any] = {}
    records = None
    if context:
        records = context.get("results") or context.get("ingredients")
    for name in tool.parameters:
        if name == "file" and (match := _FILE.search(text)):
            args["file"] = match.group(0)
        elif name == "cas" and (found := _CAS.findall(text)):
            args["cas"] = found[0] if len(found) == 1 else found
        elif name == "smiles" and (match := _SMILES.search(text)):
            args["smiles"] = match.group(1)
        elif name in ("ingredients", "rows") and records and not _CAS.search(text):
            args[name] = records
        elif name in ("task", "input", "query"):
            args[name] = with_context(text, context)
        elif name == "pfas_only" and records and "pfas" in text.lower():
            args["pfas_only"] = any(isinstance(r, Mapping) and "is_pfas" in r for r in records)
    return args


def _no_tool_answer(text: str) -> str:
    # The offline model has no knowledge of its own, unlike the paper's LLM (Figure 4).
    return (
        f"None of the crew's tools covers {text.strip()[:200]!r}, and this offline model has "
        "no general knowledge to answer it from (set EM_PLUGIN_LLM to use an LLM)."
    )
