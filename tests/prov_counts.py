"""Standard PROV-O queries (no project vocabulary, no inference) and the answers the Workflow
JSON implies, shared by the store, export and ``em-plugin serve`` tests
(docs/provenance-mapping.md, "PROV-O types")."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from provenance.model import CallStep, InstructionStep, Step, Workflow, walk_steps
from provenance.workflow_json import read_jsonl

ROOT = Path(__file__).resolve().parents[1]
#: The dev data kept in the repo.
DEV_FILES = (
    *sorted((ROOT / "tests" / "data" / "workflows").glob("*.jsonl")),
    *sorted((ROOT / "notebooks" / "data").glob("*.jsonl")),
    ROOT / "integrations" / "demo" / "pfas" / "data" / "bootstrap.jsonl",
)

_PREFIX = "PREFIX prov: <http://www.w3.org/ns/prov#>\n"


def _distinct(pattern: str, *variables: str) -> str:
    # Distinct solutions: tool and agent nodes recur in every workflow graph, and a union
    # default graph may or may not repeat a triple held by several graphs.
    return (
        f"{_PREFIX}SELECT (COUNT(*) AS ?n) WHERE "
        f"{{ SELECT DISTINCT {' '.join(variables)} WHERE {{ {pattern} }} }}"
    )


#: name -> SPARQL giving one count ``?n``: what a PROV user asks first.
STANDARD_QUERIES: dict[str, str] = {
    "activities": _distinct("?x a prov:Activity", "?x"),
    "entities": _distinct("?x a prov:Entity", "?x"),
    "agents": _distinct("?x a prov:Agent", "?x"),
    "plans": _distinct("?x a prov:Plan", "?x"),
    "associations": _distinct("?x a prov:Association", "?x"),
    "wasAssociatedWith": _distinct("?a prov:wasAssociatedWith ?ag", "?a", "?ag"),
    "qualified agents": _distinct("?a prov:qualifiedAssociation/prov:agent ?ag", "?a", "?ag"),
    "activity-agent pairs": _distinct(
        "?a a prov:Activity ; prov:wasAssociatedWith ?ag . ?ag a prov:Agent", "?a", "?ag"
    ),
    "hadPlan": _distinct(
        "?a prov:qualifiedAssociation ?q . ?q prov:hadPlan ?p . ?p a prov:Plan", "?q", "?p"
    ),
    "startedAtTime": _distinct("?a a prov:Activity ; prov:startedAtTime ?t", "?a"),
    "endedAtTime": _distinct("?a a prov:Activity ; prov:endedAtTime ?t", "?a"),
    "used": _distinct("?a prov:used ?e . ?e a prov:Entity", "?a", "?e"),
    "wasGeneratedBy": _distinct("?e prov:wasGeneratedBy ?a . ?a a prov:Activity", "?e", "?a"),
    "actedOnBehalfOf": _distinct("?a prov:actedOnBehalfOf ?b", "?a", "?b"),
}

# What a store and the `prov` package accept as xsd:dateTime (the mapping writes the typed
# literal only for these; other times stay text).
_XSD_TIME = re.compile(
    r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-](?:(?:0\d|1[0-3]):[0-5]\d|14:00))?"
)


def dev_workflows() -> list[Workflow]:
    """Every workflow of the dev data files (their ids are distinct)."""
    workflows = [w for path in DEV_FILES for w in read_jsonl(path)]
    assert len({w.id for w in workflows}) == len(workflows)
    return workflows


def _executions(w: Workflow) -> Iterator[tuple[Step, bool, str | None]]:
    """(step, has a plan step, agent of the enclosing step) for every execution of a run."""

    def walk(steps: Sequence[Step], planned: bool, agent: str | None) -> Iterator[tuple]:
        agents: dict[str, str | None] = {}  # path -> the agent acting there
        for path, step in walk_steps(steps):
            parent = agents.get(path.rpartition(".")[0], agent)
            yield step, planned, parent
            agents[path] = step.agent if isinstance(step, CallStep) else parent

    yield from walk(w.steps, True, None)
    for failed in w.failed:
        # A failed call hangs under the step it was made for; its agent is that step's.
        parent = None if failed.parent is None else _agent_at(w, failed.parent)
        yield failed.call, False, parent
        yield from walk(failed.call.steps, False, failed.call.agent)
    for revised in w.revised:
        yield revised, False, None
        yield from walk(revised.steps, False, None)


def _agent_at(w: Workflow, path: str) -> str | None:
    """The agent acting at a main-tree path: the call's agent, else its nearest caller's."""
    parts = path.split(".")
    agent = None
    try:
        for n in range(1, len(parts) + 1):
            step = w.step_at(".".join(parts[:n]))
            agent = step.agent if isinstance(step, CallStep) else agent
    except KeyError:  # a parent path outside the tree: the call hangs under the run
        return None
    return agent


def expected_counts(workflows: Iterable[Workflow]) -> dict[str, int]:
    """The answers of :data:`STANDARD_QUERIES` that the Workflow JSON implies."""
    counts = dict.fromkeys(STANDARD_QUERIES, 0)
    tools: set[str] = set()
    agents: set[str] = set()
    delegations: set[tuple[str, str]] = set()

    def is_time(t: str | None) -> bool:
        return t is not None and bool(_XSD_TIME.fullmatch(t))

    for w in workflows:
        counts["activities"] += 1  # the run
        counts["plans"] += 1  # the workflow
        counts["wasGeneratedBy"] += 1  # the workflow, by its run
        has_user = False
        for step, planned, parent in _executions(w):
            counts["activities"] += 1
            if planned:
                counts["plans"] += 1
            if isinstance(step, InstructionStep):
                has_user = True
                associated = True
                counts["entities"] += 1  # its text
                counts["used"] += 1
                counts["startedAtTime"] += is_time(step.timestamp)
            else:
                tools.add(step.name)
                associated = step.agent is not None
                if step.agent is not None:
                    agents.add(step.agent)
                    if parent is not None and parent != step.agent:
                        delegations.add((step.agent, parent))
                counts["entities"] += len(step.args)
                counts["used"] += len(step.args)
                if step.output is not None:
                    counts["entities"] += 1
                    counts["wasGeneratedBy"] += 1
                counts["startedAtTime"] += is_time(step.started)
                counts["endedAtTime"] += is_time(step.ended)
            if associated:
                counts["associations"] += 1
                counts["hadPlan"] += planned
        counts["agents"] += has_user
    counts["entities"] += counts["plans"] + len(tools)
    counts["agents"] += len(agents)
    for name in ("wasAssociatedWith", "qualified agents", "activity-agent pairs"):
        counts[name] = counts["associations"]
    counts["actedOnBehalfOf"] = len(delegations)
    return counts
