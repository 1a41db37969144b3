"""Standard PROV-O queries (no project vocabulary, no inference) and the answers the Workflow
JSON implies, shared by the store, export and ``em-plugin serve`` tests
(docs/provenance-mapping.md, "PROV-O types")."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from provenance.model import CallStep, InstructionStep, Step, Workflow, walk_steps
from provenance.workflow_json import read_jsonl

ROOT = Path(__file__).resolve().parents[1]
#: The dev data kept in the repo.
DEV_FILES = (
    *sorted((ROOT / "tests" / "data" / "workflows").glob("*.jsonl")),
    *sorted((ROOT / "notebooks" / "data").glob("*.jsonl")),
    ROOT / "integrations" / "demo" / "pfas" / "data" / "bootstrap.jsonl",
)

_PREFIX = (
    "PREFIX prov: <http://www.w3.org/ns/prov#>\nPREFIX p-plan: <http://purl.org/net/p-plan#>\n"
)


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
    "p-plan plans": _distinct("?x a p-plan:Plan", "?x"),
    "p-plan steps": _distinct("?x a p-plan:Step", "?x"),
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
#: The nine PROV-O and P-Plan counts that must be equal in a live store and in its export
#: (issue 30, item 4): classes and the three core relations.
NINE_COUNTS: tuple[str, ...] = (
    "activities",
    "entities",
    "agents",
    "plans",
    "p-plan plans",
    "p-plan steps",
    "wasAssociatedWith",
    "used",
    "wasGeneratedBy",
)

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
        counts["plans"] += 1  # the workflow (its steps are p-plan:Steps, not prov:Plans)
        counts["p-plan plans"] += 1
        counts["wasGeneratedBy"] += 1  # the workflow, by its run
        has_user = False
        for step, planned, parent in _executions(w):
            counts["activities"] += 1
            if planned:
                counts["p-plan steps"] += 1
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
                counts["hadPlan"] += 1  # every association names the workflow
        counts["agents"] += has_user
    counts["entities"] += counts["plans"] + counts["p-plan steps"] + len(tools)
    counts["agents"] += len(agents)
    for name in ("wasAssociatedWith", "qualified agents", "activity-agent pairs"):
        counts[name] = counts["associations"]
    counts["actedOnBehalfOf"] = len(delegations)
    return counts


# -- a store with lifecycle records, live and exported ------------------------------------------

#: The scopes of :func:`lifecycle_memory`: the PFAS bootstrap, and 30 τ²-airline sessions.
PFAS, AIRLINE = "pfas", "airline"
#: The bootstrap workflow saved twice, the one retired, and the accepted procedure's name.
REVISED, RETIRED, PROCEDURE_NAME = "bootstrap/0001", "bootstrap/0002", "PFAS report"


def lifecycle_memory(spec: str) -> Any:
    """Open an ``EpisodicMemory`` on ``spec`` holding what `em-plugin import` and use make.

    Scope ``pfas``: the PFAS bootstrap, :data:`REVISED` saved again with one more call,
    :data:`RETIRED` retired with a reason, the best supported mined procedure accepted as
    :data:`PROCEDURE_NAME`. Scope ``airline``: 30 τ²-airline workflows.
    """
    from em_plugin import EpisodicMemory

    memory = EpisodicMemory(spec, embedder="fake:32", scope=PFAS)
    try:
        _fill(memory)
    except BaseException:
        memory.close()
        raise
    return memory


def _fill(memory: Any) -> None:
    bootstrap = read_jsonl(DEV_FILES[-1])
    memory.save_many(bootstrap)
    airline = ROOT / "notebooks" / "data" / "tau2_airline.jsonl"
    memory.save_many([w.replace(scope=AIRLINE) for w in read_jsonl(airline)][:30])
    first = next(w for w in bootstrap if w.id == REVISED)
    last = first.steps[-1]
    assert isinstance(last, InstructionStep)
    extra = CallStep("report_writer", args={"format": "pdf"}, agent="reporter_agent")
    revised = replace(last, steps=(*last.steps, extra))
    memory.save(first.replace(steps=(*first.steps[:-1], revised)))
    memory.lifecycle.retire(RETIRED, reason="the SDS was withdrawn", agent="auditor")
    candidate = memory.lifecycle.procedures()[0]
    memory.lifecycle.accept_procedure(candidate.id, name=PROCEDURE_NAME, agent="auditor")


def live_counts(store: Any, scope: str | None) -> dict[str, int]:
    """The :data:`NINE_COUNTS` through ``WorkflowStore.query`` (one scope, or all)."""
    return {
        name: int(next(iter(store.query(STANDARD_QUERIES[name], scope=scope)))[0])
        for name in NINE_COUNTS
    }


def export_counts(store: Any, scope: str | None) -> dict[str, int]:
    """The :data:`NINE_COUNTS` on the TriG export of the same scope, loaded into a fresh store."""
    import pyoxigraph as ox

    from provenance.export import export, store_items

    text = export(store_items(store, scope=scope), "trig")
    exported = ox.Store()
    exported.load(text, format=ox.RdfFormat.TRIG)
    return {
        name: int(
            next(iter(exported.query(STANDARD_QUERIES[name], use_default_graph_as_union=True)))[
                0
            ].value
        )
        for name in NINE_COUNTS
    }


def main() -> None:
    """Print the nine counts, live and exported, per scope, for a store built in a temp dir."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp, lifecycle_memory(f"{tmp}/store") as memory:
        for scope in (PFAS, AIRLINE, None):
            live, exported = live_counts(memory.store, scope), export_counts(memory.store, scope)
            print(f"\nscope: {scope or 'all'}")
            print("| count | live store | export (TriG) | equal |\n|---|---|---|---|")
            for name in NINE_COUNTS:
                same = "yes" if live[name] == exported[name] else "NO"
                print(f"| {name} | {live[name]} | {exported[name]} | {same} |")


if __name__ == "__main__":
    main()
