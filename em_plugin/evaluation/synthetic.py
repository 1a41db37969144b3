"""A deterministic synthetic memory of realistic shape, for ``em-plugin bench``.

Workflows come from a fixed set of *task patterns*. A pattern is a few segments; a segment is
an intent (verb, noun, object) phrased with one of several paraphrase frames, served by a few
tools from the pattern's own pool. Each generated workflow perturbs its pattern the way real
sessions do: calls dropped, repeated or swapped for an unrelated tool, a sub-agent handoff
(nested calls), instructions answered without tools (instruction leaves), follow-ups. Leaf
counts are kept within 2–30. The same ``seed`` always gives the same workflows.

By default the instruction texts repeat: ``patterns`` intents times six frames, so a large
memory holds a few thousand distinct texts, far fewer than a real log of that size. With
``distinct_texts=True`` every instruction that states a task names what it is about, as real
requests do ("... - ticket 1234.2": the workflow's number and the instruction's position), so
each such text is distinct; the follow-ups ("ok, what next?") repeat, as they would in a real
log. The random choices are the same either way: only the texts differ.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

from provenance.model import CallStep, InstructionStep, Step, Workflow

SCOPE = "bench"
MIN_LEAVES, MAX_LEAVES = 2, 30

_VERBS = (
    "get search list create update delete check extract classify validate compute fetch send "
    "book cancel lookup summarize translate convert export"
).split()
_NOUNS = (
    "order customer product invoice flight ticket label supplier chemical report account "
    "payment shipment document image table dataset alignment variant sample reservation refund "
    "address policy plan"
).split()
_INTENT_VERBS = (
    "check find review compare update verify summarise extract list cancel book change "
    "analyse export classify estimate track submit prepare collect"
).split()
_INTENT_NOUNS = (
    "status price history details options balance schedule results contents composition "
    "warnings limits documents records totals coverage eligibility quality sources risks"
).split()
_OBJECTS = (
    "order 1042, my last flight, the new supplier, this product, the invoice batch, our "
    "customer account, the lab samples, the shipment to Lyon, the SDS sheet, the March report, "
    "the refund request, my reservation, the variant calls, the sequencing run, the PFAS list, "
    "the data plan, the return label, the billing address, the travel policy, the export file"
).split(", ")
_FRAMES = (
    "{v} the {n} of {o}",
    "please {v} {o} {n}",
    "can you {v} the {n} for {o}?",
    "I need to {v} the {n} of {o}",
    "{v} {n} ({o})",
    "could you {v} the {n} of {o} now",
)
_FOLLOW_UPS = ("thanks, anything else I should check?", "ok, what next?", "great, go on")


@dataclass(frozen=True)
class _Segment:
    intent: tuple[str, str, str]
    tools: tuple[str, ...]


def tool_names(count: int = 300, seed: int = 0) -> list[str]:
    """Return ``count`` distinct tool names like ``check_invoice``."""
    names = [f"{v}_{n}" for v in _VERBS for n in _NOUNS]
    return random.Random(seed).sample(names, min(count, len(names)))


class SyntheticMemory:
    """Generator of benchmark workflows.

    Args:
        seed: Makes the output reproducible.
        patterns: Number of task patterns.
        tools: Number of distinct tool names.
        distinct_texts: Give every task instruction a text of its own (see the module).
    """

    def __init__(
        self, seed: int = 0, patterns: int = 400, tools: int = 300, *, distinct_texts: bool = False
    ) -> None:
        rng = random.Random(seed)
        self.distinct_texts = distinct_texts
        self.tools = tool_names(tools, seed)
        self.seed = seed
        self.patterns = [self._pattern(rng) for _ in range(patterns)]

    def _pattern(self, rng: random.Random) -> list[_Segment]:
        pool = rng.sample(self.tools, rng.randint(4, 10))
        segments = []
        for _ in range(rng.randint(1, 6)):
            intent = (rng.choice(_INTENT_VERBS), rng.choice(_INTENT_NOUNS), rng.choice(_OBJECTS))
            served = rng.random() < 0.75
            count = rng.randint(1, 5) if served else 0
            segments.append(_Segment(intent, tuple(rng.choice(pool) for _ in range(count))))
        return segments

    def workflows(self, count: int, *, start: int = 0, prefix: str = "wf") -> Iterator[Workflow]:
        """Yield ``count`` workflows numbered from ``start`` (each from its own random stream)."""
        for number in range(start, start + count):
            rng = random.Random(f"{self.seed}:{prefix}:{number}")
            pattern = self.patterns[rng.randrange(len(self.patterns))]
            reference = f"{number}" if prefix == "wf" else f"{prefix}-{number}"
            yield self._workflow(f"{prefix}-{number:07d}", pattern, rng, reference)

    def queries(self, count: int) -> Iterator[Workflow]:
        """Yield current workflows: prefixes (at least 2 leaves) of held-out workflows."""
        for held_out in self.workflows(count, prefix="query"):
            rng = random.Random(f"{self.seed}:prefix:{held_out.id}")
            leaves = len(held_out.leaves())
            yield held_out.prefix(rng.randint(MIN_LEAVES, max(MIN_LEAVES, leaves - 1)))

    def _workflow(
        self, workflow_id: str, pattern: list[_Segment], rng: random.Random, reference: str
    ) -> Workflow:
        steps: list[Step] = []
        for position, segment in enumerate(pattern):
            verb, noun, obj = segment.intent
            text = rng.choice(_FRAMES).format(v=verb, n=noun, o=obj)
            if self.distinct_texts:
                text = f"{text} - ticket {reference}.{position}"
            calls = self._calls(segment.tools, rng)
            steps.append(InstructionStep(text[0].upper() + text[1:], tuple(calls)))
            if rng.random() < 0.15:
                steps.append(InstructionStep(rng.choice(_FOLLOW_UPS)))
        workflow = Workflow(workflow_id, tuple(steps), scope=SCOPE, source="synthetic:bench")
        leaves = len(workflow.leaves())
        if leaves > MAX_LEAVES:
            workflow = workflow.prefix(MAX_LEAVES)
        elif leaves < MIN_LEAVES:
            extra = CallStep(rng.choice(self.tools))
            workflow = workflow.replace(steps=(*workflow.steps, extra))
        return workflow

    def _calls(self, tools: tuple[str, ...], rng: random.Random) -> list[CallStep]:
        calls: list[CallStep] = []
        for tool in tools:
            roll = rng.random()
            if roll < 0.08:
                continue  # skipped this time
            name = rng.choice(self.tools) if roll < 0.14 else tool
            calls.append(CallStep(name, {"attempt": 1}))
            if rng.random() < 0.05:
                calls.append(CallStep(name, {"attempt": 2}))  # a retry
        if len(calls) >= 2 and rng.random() < 0.15:
            # A handoff: the last calls were made by a sub-agent.
            split = rng.randint(1, len(calls) - 1)
            agent = CallStep(
                "transfer_to_specialist", agent="coordinator", steps=tuple(calls[split:])
            )
            calls = [*calls[:split], agent]
        return calls
