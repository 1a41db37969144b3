"""Generate the synthetic workflows that seed the episodic memory of the PFAS demo.

The paper (§3) bootstrapped its memory by asking an LLM for plausible workflows over the crew's
tools, with two kinds of user instructions: single-tool ones ("Extract all ingredients from
X", "Classify them as PFAS", "Assess the hazards of the PFAS found", "Show the results as a
markdown table") and multi-step ones ("Check whether product X contains PFAS") that need
several tools. This module does the same without an LLM, so the memory is reproducible: fixed
scenarios (sequences of intents), committed paraphrase templates for each intent, a seeded
``random.Random`` to pick files, molecules and wordings, and the real tools run on the bundled
samples to fill in arguments and (summarised) outputs.

Every workflow is a Workflow JSON v1 dict marked ``"source": "synthetic:em-plugin-bootstrap"``
and ``"synthetic": true``. Regenerate the committed file with::

    python -m integrations.demo.pfas.bootstrap
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .crew import CREW_DESCRIPTION, TOOLS, agent_for_tool
from .tables import DATA_DIR, find_substance

SOURCE = "synthetic:em-plugin-bootstrap"
BOOTSTRAP_JSONL = DATA_DIR / "bootstrap.jsonl"

# Paraphrases per intent. Placeholders: {file} sample file name, {doc} "SDS" or "material
# declaration", {subject} a molecule as a name, "CAS ..." or a SMILES.
TEMPLATES: dict[str, tuple[str, ...]] = {
    "extract": (
        "Extract all ingredients from {file}",
        "Extract all ingredients from the {doc} {file}",
        "List the ingredients of the product in {file}",
        "What is in {file}? Give me its composition",
        "Read the {doc} {file} and list its substances with CAS numbers",
        "Get the composition of {file}",
        "Which substances does the {doc} {file} declare?",
        "Parse {file} and extract the ingredient list",
    ),
    "classify_ingredients": (
        "Classify them as PFAS",
        "Which of these ingredients are PFAS?",
        "Check the ingredients against the OECD PFAS definition",
        "Are any of them PFAS?",
        "Run the PFAS classifier on the ingredients",
        "Now classify the ingredients as PFAS or not",
        "Tell me which of the substances are per- or polyfluoroalkyl substances",
    ),
    "classify_molecule": (
        "Is {subject} a PFAS?",
        "Classify {subject} as PFAS or not",
        "Check whether {subject} falls under the OECD PFAS definition",
        "Does {subject} count as a PFAS?",
    ),
    "hazard_pfas": (
        "Assess the hazards of the PFAS found",
        "Do a hazard assessment of those PFAS",
        "Are the PFAS persistent, bioaccumulative or toxic?",
        "Run a PBT assessment on the PFAS",
        "Screen the PFAS for PBT and vPvB properties",
        "Evaluate the PBT hazard of the fluorinated substances",
    ),
    "hazard_ingredients": (
        "Assess the hazards of all ingredients",
        "Screen every ingredient for PBT properties",
        "Do a PBT/vPvB assessment of the ingredients",
        "Which ingredients are persistent, bioaccumulative and toxic?",
    ),
    "hazard_molecule": (
        "Assess the hazards of {subject}",
        "Is {subject} a PBT substance?",
        "Run a PBT assessment for {subject}",
        "How persistent, bioaccumulative and toxic is {subject}?",
    ),
    "hazard_it": (
        "Now assess its hazards",
        "Is it a PBT substance?",
        "Check its persistence, bioaccumulation and toxicity",
        "Run a hazard assessment on it",
    ),
    "table": (
        "Show the results as a markdown table",
        "Put that in a markdown table",
        "Format the results as a table",
        "Make a markdown table of the results",
        "Give me a table of that",
        "Summarise the results in a table",
    ),
    "check_pfas": (
        "Check whether product {file} contains PFAS",
        "Does {file} contain any PFAS?",
        "Screen {file} for PFAS",
        "Find the PFAS in {file}",
        "Is there any PFAS in the product described by {file}?",
    ),
    "screen_product": (
        "Do a full PFAS hazard screening of {file}",
        "Find the PFAS in {file} and assess their hazards",
        "Check {file} for PFAS and tell me whether any of them is PBT",
        "Run the whole PFAS and PBT assessment on {file}",
    ),
    "pfas_report": (
        "Give me a PFAS report for {file} as a table",
        "Make a table of the ingredients of {file} marking which are PFAS",
        "Tabulate which substances in {file} are PFAS",
    ),
    "molecule_profile": (
        "Is {subject} a PFAS, and is it PBT?",
        "Classify {subject} and assess its hazards",
        "Tell me whether {subject} is a PFAS and how hazardous it is",
    ),
}

# The tools each intent calls, in order.
INTENT_TOOLS: dict[str, tuple[str, ...]] = {
    "extract": ("product_extractor",),
    "classify_ingredients": ("pfas_classifier",),
    "classify_molecule": ("pfas_classifier",),
    "hazard_pfas": ("hazard_assessment",),
    "hazard_ingredients": ("hazard_assessment",),
    "hazard_molecule": ("hazard_assessment",),
    "hazard_it": ("hazard_assessment",),
    "table": ("markdown_table",),
    "check_pfas": ("product_extractor", "pfas_classifier"),
    "screen_product": ("product_extractor", "pfas_classifier", "hazard_assessment"),
    "pfas_report": ("product_extractor", "pfas_classifier", "markdown_table"),
    "molecule_profile": ("pfas_classifier", "hazard_assessment"),
}

# (title, intents). Scenarios that assess "the PFAS found" only use products that contain PFAS.
SCENARIOS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("PFAS hazard report for {file}", ("extract", "classify_ingredients", "hazard_pfas", "table")),
    ("PFAS table for {file}", ("extract", "classify_ingredients", "table")),
    ("Ingredient table for {file}", ("extract", "table")),
    ("PFAS hazard screening of {file}", ("extract", "classify_ingredients", "hazard_pfas")),
    ("PFAS classification of {file}", ("extract", "classify_ingredients")),
    ("PFAS check and hazard table for {file}", ("check_pfas", "hazard_pfas", "table")),
    ("PFAS check of {file} as a table", ("check_pfas", "table")),
    ("PFAS check and hazards of {file}", ("check_pfas", "hazard_pfas")),
    ("PBT screening of all ingredients of {file}", ("extract", "hazard_ingredients", "table")),
    ("Full PFAS screening of {file}", ("screen_product", "table")),
    ("PFAS report for {file}", ("pfas_report",)),
    ("PFAS report and hazards for {file}", ("pfas_report", "hazard_pfas")),
    ("Is {subject} a PFAS and PBT?", ("classify_molecule", "hazard_it")),
    ("PFAS and PBT profile of {subject}", ("molecule_profile", "table")),
    ("PBT assessment of {subject}", ("hazard_molecule", "table")),
    ("PFAS check of {subject}", ("classify_molecule", "table")),
)
_NEEDS_PFAS = {"hazard_pfas", "screen_product"}

# Single molecules for the molecule scenarios: (CAS, short name).
MOLECULES: tuple[tuple[str, str], ...] = (
    ("335-67-1", "PFOA"),
    ("1763-23-1", "PFOS"),
    ("355-46-4", "PFHxS"),
    ("307-24-4", "PFHxA"),
    ("13252-13-6", "GenX"),
    ("647-42-7", "6:2 FTOH"),
    ("76-05-1", "trifluoroacetic acid"),
    ("811-97-2", "HFC-134a"),
    ("355-42-0", "perfluorohexane"),
    ("64-17-5", "ethanol"),
    ("872-50-4", "NMP"),
    ("75-45-6", "chlorodifluoromethane"),
    ("462-06-6", "fluorobenzene"),
)


def generate_bootstrap(n: int = 64, seed: int = 0) -> list[dict[str, Any]]:
    """Generate ``n`` synthetic Workflow JSON v1 dicts, the same ones for the same arguments.

    Scenarios are used in turn (each block of ``len(SCENARIOS)`` workflows is a shuffled round
    of all of them), so every scenario appears once n reaches that size.

    Args:
        n: How many workflows.
        seed: Seed of the ``random.Random`` that picks scenarios' order, files, molecules and
            wordings.

    Returns:
        Workflows with ids ``bootstrap/0001`` ... in order.

    Example:
        >>> generate_bootstrap(2)[0]["source"]
        'synthetic:em-plugin-bootstrap'
    """
    rng = random.Random(seed)
    runner = _Runner()
    workflows: list[dict[str, Any]] = []
    order: list[int] = []
    for number in range(1, n + 1):
        if not order:
            order = list(range(len(SCENARIOS)))
            rng.shuffle(order)
        title, intents = SCENARIOS[order.pop(0)]
        workflows.append(_workflow(number, title, intents, rng, runner))
    return workflows


def dumps_jsonl(workflows: list[dict[str, Any]]) -> str:
    """Serialise workflows as JSON Lines, exactly as :func:`write_bootstrap` writes them."""
    return "".join(json.dumps(wf, ensure_ascii=False) + "\n" for wf in workflows)


def write_bootstrap(path: str | Path = BOOTSTRAP_JSONL, n: int = 64, seed: int = 0) -> Path:
    """Write :func:`generate_bootstrap` ``(n, seed)`` to ``path`` as UTF-8 JSON Lines.

    Returns:
        The path written.
    """
    path = Path(path)
    path.write_text(dumps_jsonl(generate_bootstrap(n, seed)), encoding="utf-8")
    return path


class _Runner:
    """Runs the real tools once per distinct call and remembers the answers."""

    def __init__(self) -> None:
        self._cache: dict[str, dict[str, Any]] = {}
        self.samples = self._samples()

    def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        key = tool + json.dumps(args, sort_keys=True)
        if key not in self._cache:
            function: Callable[..., dict[str, Any]] = TOOLS[tool]
            self._cache[key] = function(**args)
        return self._cache[key]

    def _samples(self) -> list[tuple[str, bool]]:
        from .tables import sample_names

        samples = []
        for name in sample_names():
            ingredients = self.call("product_extractor", {"file": name})["ingredients"]
            classified = self.call("pfas_classifier", {"ingredients": _ids(ingredients)})
            samples.append((name, bool(classified["summary"]["pfas"])))
        return samples


def _ids(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The name and CAS of each row, once each: what an agent passes on to the next tool."""
    seen, out = set(), []
    for row in rows:
        key = (row.get("name"), row.get("cas"))
        if key not in seen:
            seen.add(key)
            out.append({"name": row.get("name"), "cas": row.get("cas")})
    return out


def _workflow(
    number: int, title: str, intents: tuple[str, ...], rng: random.Random, runner: _Runner
) -> dict[str, Any]:
    needs_pfas = any(i in _NEEDS_PFAS for i in intents)
    files = [name for name, has_pfas in runner.samples if has_pfas or not needs_pfas]
    file = rng.choice(files)
    cas, short = rng.choice(MOLECULES)
    subject, molecule_args = _subject(cas, short, rng)
    context = {
        "file": file,
        "doc": "material declaration" if file.endswith(".xml") else "SDS",
        "subject": subject,
    }
    state: dict[str, Any] = {"file": file, "molecule": molecule_args}
    steps = []
    for intent in intents:
        text = rng.choice(TEMPLATES[intent]).format(**context)
        calls = [_call(tool, intent, state, runner) for tool in INTENT_TOOLS[intent]]
        steps.append({"kind": "instruction", "text": text, "steps": calls})
    return {
        "id": f"bootstrap/{number:04d}",
        "title": title.format(**context),
        "source": SOURCE,
        "crew": CREW_DESCRIPTION.name,
        "synthetic": True,
        "steps": steps,
    }


def _subject(cas: str, short: str, rng: random.Random) -> tuple[str, dict[str, str]]:
    """Pick how the user names a molecule: short name, CAS number or SMILES."""
    form = rng.choice(("name", "cas", "smiles"))
    if form == "cas":
        return f"CAS {cas}", {"cas": cas}
    if form == "smiles":
        row = find_substance(cas=cas)
        if row is None or not row["smiles"]:
            raise ValueError(f"MOLECULES lists {cas}, which has no SMILES in substances.csv")
        return row["smiles"], {"smiles": row["smiles"]}
    return short, {"name": short}


def _call(tool: str, intent: str, state: dict[str, Any], runner: _Runner) -> dict[str, Any]:
    """Build one call step, run the tool, and record what later steps refer to in ``state``."""
    args = _args(tool, intent, state)
    result = runner.call(tool, args)
    if tool == "product_extractor":
        state["rows"] = state["ingredients"] = _ids(result["ingredients"])
        state["table_title"] = f"Ingredients of {result['product']}"
        output: Any = {
            "product": result["product"],
            "format": result["format"],
            "ingredients": [
                {k: row[k] for k in ("name", "cas", "concentration")}
                for row in result["ingredients"]
            ],
        }
    elif tool == "pfas_classifier":
        state["pfas"] = [
            {"name": r["name"], "cas": r["cas"]} for r in result["results"] if r["is_pfas"]
        ]
        state["rows"] = [
            {"name": r["name"], "cas": r["cas"], "is_pfas": r["is_pfas"]} for r in result["results"]
        ]
        output = result["summary"]
        state["table_title"] = "PFAS classification (OECD 2021)"
    elif tool == "hazard_assessment":
        state["rows"] = [
            {"name": r["name"], "cas": r["cas"], "conclusion": r["conclusion"]}
            for r in result["results"]
        ]
        output = {"results": state["rows"]}
        state["table_title"] = "PBT/vPvB screening (REACH Annex XIII)"
    else:
        output = result
    return {
        "kind": "call",
        "name": tool,
        "args": args,
        "output": output,
        "agent": agent_for_tool(tool),
    }


def _args(tool: str, intent: str, state: dict[str, Any]) -> dict[str, Any]:
    if tool == "product_extractor":
        return {"file": state["file"]}
    if tool == "pfas_classifier":
        if intent in ("classify_molecule", "molecule_profile"):
            return dict(state["molecule"])
        return {"ingredients": state["ingredients"]}
    if tool == "hazard_assessment":
        if intent in ("hazard_molecule", "hazard_it", "molecule_profile"):
            return dict(state["molecule"])
        if intent == "hazard_ingredients":
            return {"ingredients": state["ingredients"]}
        return {"ingredients": state["pfas"]}
    rows = state["rows"]
    return {"rows": rows, "columns": list(rows[0]) if rows else [], "title": state["table_title"]}


if __name__ == "__main__":
    print(f"wrote {write_bootstrap()}")
