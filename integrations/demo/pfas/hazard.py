"""The ``hazard_assessment`` tool: PBT / vPvB screening against REACH Annex XIII.

Criteria (Regulation (EC) No 1907/2006, Annex XIII, sections 1.1 and 1.2):

* P: degradation half-life > 60 d in marine water, > 40 d in fresh water, > 180 d in marine
  sediment, > 120 d in freshwater sediment or > 120 d in soil.
  vP: > 60 d in marine or fresh water, > 180 d in marine or freshwater sediment or in soil.
* B: BCF > 2000 L/kg.  vB: BCF > 5000 L/kg.
* T: long-term NOEC or EC10 < 0.01 mg/L for marine or freshwater organisms, or classified
  carcinogenic, germ cell mutagenic or toxic for reproduction category 1A or 1B, or STOT RE
  category 1 or 2.

Data come from the bundled ``properties.csv``; an empty cell means "no data" and is reported as
missing, never guessed. A row may carry an expert weight-of-evidence conclusion for P or B (as
ECHA's SVHC support documents give for PFAS, whose fish BCFs understate their bioaccumulation);
it takes precedence over the screening values and is reported with its source.
"""

from __future__ import annotations

from typing import Any

from .tables import find_properties, find_substance

CRITERIA = "REACH Annex XIII (Regulation (EC) No 1907/2006), sections 1.1 and 1.2"

# compartment column -> (label, P threshold in days, vP threshold in days)
HALF_LIFE_CRITERIA: dict[str, tuple[str, float, float]] = {
    "half_life_marine_water_d": ("marine water", 60, 60),
    "half_life_fresh_water_d": ("fresh water", 40, 60),
    "half_life_marine_sediment_d": ("marine sediment", 180, 180),
    "half_life_fresh_sediment_d": ("freshwater sediment", 120, 180),
    "half_life_soil_d": ("soil", 120, 180),
}
B_THRESHOLD, VB_THRESHOLD = 2000.0, 5000.0
NOEC_THRESHOLD = 0.01
_CMR_CATEGORY_1 = ("Carc. 1A", "Carc. 1B", "Muta. 1A", "Muta. 1B", "Repr. 1A", "Repr. 1B")


def hazard_assessment(
    cas: str | None = None,
    name: str | None = None,
    smiles: str | None = None,
    ingredients: list[Any] | dict[str, Any] | None = None,
    pfas_only: bool = False,
) -> dict[str, Any]:
    """Screen substances as PBT/vPvB (persistence, bioaccumulation, toxicity), REACH Annex XIII.

    Compares the bundled property table (degradation half-lives, BCF, chronic aquatic NOEC, CMR
    and STOT RE classification, each row with its source) with the Annex XIII criteria: P
    half-life > 60 d marine / > 40 d fresh water, > 180 d marine / > 120 d freshwater sediment,
    > 120 d soil; vP > 60 d water, > 180 d sediment or soil; B BCF > 2000, vB > 5000; T NOEC <
    0.01 mg/L, CMR category 1A/1B or STOT RE 1/2. Give one substance by ``cas``, ``name`` or
    ``smiles``, or several as ``ingredients`` (the product_extractor list or the pfas_classifier
    output; ``pfas_only=True`` keeps only entries marked ``is_pfas``). Each result says P, B and T
    with reasons, lists the data that are missing, and concludes "PBT", "vPvB", "PBT and vPvB",
    "not PBT" or "insufficient data".

    Example:
        >>> hazard_assessment(cas="335-67-1")["results"][0]["conclusion"]
        'PBT'
    """
    targets = _targets(cas, name, smiles, ingredients, pfas_only)
    if not targets:
        raise ValueError(
            "Nothing to assess: give cas, name or smiles, or ingredients"
            + (" (none of them is marked is_pfas)" if pfas_only and ingredients else "")
            + "."
        )
    results = [assess_substance(t["cas"], t["name"]) for t in targets]
    summary: dict[str, list[str]] = {}
    for result in results:
        summary.setdefault(result["conclusion"], []).append(result["name"] or result["cas"] or "?")
    return {"criteria": CRITERIA, "results": results, "summary": summary}


def _targets(
    cas: str | None,
    name: str | None,
    smiles: str | None,
    ingredients: list[Any] | dict[str, Any] | None,
    pfas_only: bool,
) -> list[dict[str, str | None]]:
    targets: list[dict[str, str | None]] = []
    if cas or name or smiles:
        found_cas = cas or _cas_from_smiles(smiles)
        targets.append({"cas": found_cas, "name": name or (smiles if not found_cas else None)})
    if isinstance(ingredients, dict):  # a whole product_extractor or pfas_classifier output
        ingredients = ingredients.get("results") or ingredients.get("ingredients") or []
    seen: set[str] = set()
    for item in ingredients or []:
        entry = {"cas": None, "name": item} if isinstance(item, str) else dict(item)
        if pfas_only and entry.get("is_pfas") is not True:
            continue
        key = (entry.get("cas") or entry.get("name") or "").casefold()
        if key in seen:
            continue
        seen.add(key)
        targets.append({"cas": entry.get("cas"), "name": entry.get("name")})
    return targets


def _cas_from_smiles(smiles: str | None) -> str | None:
    """Find a CAS number for a SMILES by canonical-SMILES match against the substance table."""
    if not smiles:
        return None
    from rdkit import Chem
    from rdkit.rdBase import BlockLogs

    from .tables import substances

    _block = BlockLogs()  # silences RDKit's parse errors until the function returns
    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        return None
    wanted = Chem.MolToSmiles(mol)
    for row in substances():
        other = Chem.MolFromSmiles(row["smiles"]) if row["smiles"] and row["cas"] else None
        if other is not None and Chem.MolToSmiles(other) == wanted:
            return row["cas"]
    return None


def assess_substance(cas: str | None, name: str | None = None) -> dict[str, Any]:
    """Assess one substance from its ``properties.csv`` row; see :func:`hazard_assessment`."""
    row = find_substance(cas=cas, name=name)
    if not cas and row and row["cas"]:
        cas = row["cas"]
    props = find_properties(cas)
    label = name or (row["name"] if row else None) or (props["name"] if props else None)
    if props is None:
        what = f"CAS {cas}" if cas else f"{label!r} (no CAS number)"
        missing = ["persistence", "bioaccumulation", "toxicity"]
        result: dict[str, Any] = {"name": label, "cas": cas}
        for criterion in missing:
            reason = f"no {criterion} data in the bundled table (no entry for {what})"
            result[criterion] = {"status": "unknown", "reason": reason}
        result.update(
            pbt=None,
            vpvb=None,
            conclusion="insufficient data",
            missing=missing,
            note=None,
            source=None,
        )
        return result
    return evaluate(props, label=label)


def evaluate(props: dict[str, str], label: str | None = None) -> dict[str, Any]:
    """Apply the Annex XIII criteria to one property record.

    Args:
        props: A ``properties.csv`` row (strings; empty means no data).
        label: The name to report; defaults to the row's name.

    Returns:
        ``{"name", "cas", "persistence", "bioaccumulation", "toxicity", "pbt", "vpvb",
        "conclusion", "missing", "note", "source"}``; the three criteria are ``{"status",
        "reason"}`` with status ``vP``/``P``/``not P``, ``vB``/``B``/``not B``, ``T``/``not T``
        or ``unknown``.
    """
    p, b, t = screen_persistence(props), screen_bioaccumulation(props), screen_toxicity(props)
    p_hit, b_hit = p["status"] in ("P", "vP"), b["status"] in ("B", "vB")
    pbt: bool | None = None
    if p_hit and b_hit and t["status"] == "T":
        pbt = True
    elif p["status"] == "not P" or b["status"] == "not B" or t["status"] == "not T":
        pbt = False
    vpvb: bool | None = None
    if p["status"] == "vP" and b["status"] == "vB":
        vpvb = True
    elif p["status"] in ("P", "not P") or b["status"] in ("B", "not B"):
        vpvb = False  # a measured P or B below the "very" thresholds rules vPvB out
    conclusion = _conclusion(pbt, vpvb)
    missing = [
        what
        for what, r in (("persistence", p), ("bioaccumulation", b), ("toxicity", t))
        if r["status"] == "unknown"
    ]
    return {
        "name": label or props.get("name") or None,
        "cas": props.get("cas") or None,
        "persistence": p,
        "bioaccumulation": b,
        "toxicity": t,
        "pbt": pbt,
        "vpvb": vpvb,
        "conclusion": conclusion,
        "missing": missing,
        "note": props.get("note") or None,
        "source": props.get("source") or None,
    }


def _conclusion(pbt: bool | None, vpvb: bool | None) -> str:
    if pbt and vpvb:
        return "PBT and vPvB"
    if pbt:
        return "PBT"
    if vpvb:
        return "vPvB"
    if pbt is False and vpvb is False:
        return "not PBT"
    return "insufficient data"


def _number(props: dict[str, str], column: str) -> float | None:
    value = (props.get(column) or "").strip()
    try:
        return float(value) if value else None
    except ValueError:
        return None


def screen_persistence(props: dict[str, str]) -> dict[str, str]:
    """Return the P status: weight of evidence, else half-lives, else ready biodegradability."""
    woe = (props.get("p_weight_of_evidence") or "").strip()
    if woe:
        return {"status": woe, "reason": f"{woe} by weight of evidence in the cited assessment"}
    over_vp, over_p, checked = [], [], []
    for column, (where, p_days, vp_days) in HALF_LIFE_CRITERIA.items():
        days = _number(props, column)
        if days is None:
            continue
        checked.append(f"{where} {days:g} d")
        if days > vp_days:
            over_vp.append(f"{where} {days:g} d > {vp_days:g} d")
        elif days > p_days:
            over_p.append(f"{where} {days:g} d > {p_days:g} d")
    if over_vp:
        return {"status": "vP", "reason": "half-life " + "; ".join(over_vp)}
    if over_p:
        return {
            "status": "P",
            "reason": "half-life " + "; ".join(over_p) + " (below the vP limits)",
        }
    if checked:
        return {"status": "not P", "reason": "half-lives below the P limits: " + "; ".join(checked)}
    if (props.get("readily_biodegradable") or "").strip().lower() == "yes":
        return {"status": "not P", "reason": "readily biodegradable"}
    return {"status": "unknown", "reason": "no persistence data in the bundled table"}


def screen_bioaccumulation(props: dict[str, str]) -> dict[str, str]:
    """Return the B status: weight of evidence, else BCF, else the log Kow <= 4.5 screen."""
    woe = (props.get("b_weight_of_evidence") or "").strip()
    if woe:
        return {"status": woe, "reason": f"{woe} by weight of evidence in the cited assessment"}
    bcf = _number(props, "bcf_l_kg")
    if bcf is not None:
        if bcf > VB_THRESHOLD:
            return {"status": "vB", "reason": f"BCF {bcf:g} L/kg > {VB_THRESHOLD:g}"}
        if bcf > B_THRESHOLD:
            return {
                "status": "B",
                "reason": f"BCF {bcf:g} L/kg > {B_THRESHOLD:g} (not > {VB_THRESHOLD:g})",
            }
        return {"status": "not B", "reason": f"BCF {bcf:g} L/kg <= {B_THRESHOLD:g}"}
    log_kow = _number(props, "log_kow")
    if log_kow is not None and log_kow <= 4.5:
        return {"status": "not B", "reason": f"log Kow {log_kow:g} <= 4.5 (Annex XIII screening)"}
    return {"status": "unknown", "reason": "no bioaccumulation data in the bundled table"}


def screen_toxicity(props: dict[str, str]) -> dict[str, str]:
    """Return the T status: NOEC < 0.01 mg/L, CMR 1A/1B or STOT RE 1/2; "not T" needs all three."""
    hits, negatives, missing = [], [], []
    noec = _number(props, "noec_mg_l")
    if noec is None:
        missing.append("no chronic aquatic NOEC/EC10")
    elif noec < NOEC_THRESHOLD:
        hits.append(f"NOEC {noec:g} mg/L < {NOEC_THRESHOLD:g}")
    else:
        negatives.append(f"NOEC {noec:g} mg/L >= {NOEC_THRESHOLD:g}")
    cmr = (props.get("cmr") or "").strip()
    if not cmr:
        missing.append("no CMR classification data")
    elif found := [c for c in _CMR_CATEGORY_1 if c.lower() in cmr.lower()]:
        hits.append("classified " + ", ".join(found))
    else:
        negatives.append(f"CMR: {cmr}" if cmr.lower() != "none" else "not classified CMR 1A/1B")
    stot = (props.get("stot_re") or "").strip()
    if not stot:
        missing.append("no STOT RE data")
    elif any(f"stot re {n}" in stot.lower() for n in ("1", "2")):
        hits.append(f"classified {stot}")
    else:
        negatives.append("not classified STOT RE 1/2")
    if hits:
        return {"status": "T", "reason": "; ".join(hits)}
    if not missing:
        return {"status": "not T", "reason": "; ".join(negatives)}
    return {"status": "unknown", "reason": "; ".join(negatives + missing) + " in the bundled table"}
