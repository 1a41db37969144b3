"""The ``pfas_classifier`` tool: the OECD (2021) structural definition of PFAS, checked with RDKit.

OECD (2021), *Reconciling Terminology of the Universe of Per- and Polyfluoroalkyl Substances*
(Series on Risk Management No. 61): PFAS are "fluorinated substances that contain at least one
fully fluorinated methyl or methylene carbon atom (without any H/Cl/Br/I atom attached to it)".
As a SMARTS pattern over single atoms: a saturated carbon (four connections), no hydrogen, no
Cl/Br/I neighbour, and at least two fluorine neighbours (CF3- has three, -CF2- two).

RDKit is imported inside the functions: it takes about a second to import and most users of the
package never classify a molecule.
"""

from __future__ import annotations

from typing import Any

from .tables import find_substance, is_valid_cas

OECD_PFAS_SMARTS = "[CX4;H0;!$(C~[#1,Cl,Br,I]);$(C(F)F)]"
DEFINITION = (
    "OECD 2021: at least one fully fluorinated methyl (CF3-) or methylene (-CF2-) carbon atom, "
    "i.e. a saturated carbon with no H, Cl, Br or I attached and at least two F."
)


def pfas_classifier(
    smiles: str | list[str] | None = None,
    cas: str | list[str] | None = None,
    name: str | list[str] | None = None,
    ingredients: list[Any] | dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Classify molecules as PFAS or not under the OECD 2021 structural definition, using RDKit.

    A molecule is PFAS when it has at least one fully fluorinated methyl (CF3-) or methylene
    (-CF2-) carbon: a saturated carbon with no H, Cl, Br or I attached and at least two F. Give a
    ``smiles``, a ``cas`` number or a ``name`` (looked up in the bundled CAS-to-SMILES table;
    each may also be a list), or ``ingredients``, the list returned by ``product_extractor``.
    Returns ``{"definition", "results", "summary"}``: each result has ``name``, ``cas``,
    canonical ``smiles``, ``is_pfas`` (true, false, or null when the structure is unknown),
    ``matched_atoms`` (indices in the canonical SMILES), the ``smarts`` used and a ``reason``;
    ``summary`` lists the names that are PFAS, not PFAS and unknown.

    Example:
        >>> pfas_classifier(cas="335-67-1")["results"][0]["is_pfas"]
        True
    """
    queries = _queries(smiles, cas, name, ingredients)
    if not queries:
        raise ValueError("Nothing to classify: give smiles, cas, name or ingredients.")
    results = [classify_query(q) for q in _dedupe(queries)]
    summary: dict[str, list[str]] = {"pfas": [], "not_pfas": [], "unknown": []}
    for result in results:
        key = {True: "pfas", False: "not_pfas", None: "unknown"}[result["is_pfas"]]
        summary[key].append(result["name"] or result["cas"] or result["smiles"] or "?")
    return {"definition": DEFINITION, "results": results, "summary": summary}


def _as_list(value: str | list[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else [v for v in value if v]


def _scalar(value: str | list[str] | None) -> str | None:
    return value if isinstance(value, str) and value else None


def _queries(
    smiles: str | list[str] | None,
    cas: str | list[str] | None,
    name: str | list[str] | None,
    ingredients: list[Any] | dict[str, Any] | None,
) -> list[dict[str, str | None]]:
    """Turn the arguments into one ``{"smiles", "cas", "name"}`` query per molecule.

    Scalars describe a single molecule (the SMILES, when given, wins; CAS and name label it);
    each element of a list is a molecule of its own.
    """
    queries: list[dict[str, str | None]] = []
    if any(isinstance(v, list) for v in (smiles, cas, name)):
        queries += [{"smiles": s, "cas": None, "name": None} for s in _as_list(smiles)]
        queries += [{"smiles": None, "cas": c, "name": None} for c in _as_list(cas)]
        queries += [{"smiles": None, "cas": None, "name": n} for n in _as_list(name)]
    elif smiles or cas or name:
        queries.append({"smiles": _scalar(smiles), "cas": _scalar(cas), "name": _scalar(name)})
    if isinstance(ingredients, dict):  # the whole product_extractor / classifier output
        ingredients = ingredients.get("ingredients") or ingredients.get("results") or []
    for item in ingredients or []:
        if isinstance(item, str):
            is_cas = is_valid_cas(item.strip())
            queries.append(
                {"smiles": None, "cas": item if is_cas else None, "name": None if is_cas else item}
            )
        elif isinstance(item, dict):
            queries.append(
                {"smiles": item.get("smiles"), "cas": item.get("cas"), "name": item.get("name")}
            )
    return queries


def _dedupe(queries: list[dict[str, str | None]]) -> list[dict[str, str | None]]:
    # A declaration lists copper once per material; the answer is the same each time.
    seen: set[tuple[str | None, ...]] = set()
    unique = []
    for query in queries:
        key = (query["cas"] or query["name"] or "").casefold(), query["smiles"]
        if key not in seen:
            seen.add(key)
            unique.append(query)
    return unique


def classify_query(query: dict[str, str | None]) -> dict[str, Any]:
    """Classify one ``{"smiles", "cas", "name"}`` query; see :func:`pfas_classifier`."""
    row = None if query.get("smiles") else find_substance(query.get("cas"), query.get("name"))
    result: dict[str, Any] = {
        "name": query.get("name") or (row["name"] if row else None),
        "cas": query.get("cas") or (row["cas"] if row and row["cas"] else None),
        "smiles": None,
        "is_pfas": None,
        "matched_atoms": [],
        "smarts": OECD_PFAS_SMARTS,
        "reason": "",
    }
    if row is not None:
        result["source"] = row["source"]
        if row.get("notes"):
            result["notes"] = row["notes"]
    smiles = query.get("smiles") or (row["smiles"] if row else None)
    if not smiles:
        if row is None:
            what = ", ".join(f"{k} {v!r}" for k, v in query.items() if v)
            result["reason"] = f"Not in the bundled table ({what}): give a SMILES to classify it."
        else:
            result["reason"] = (
                f"In the bundled table but without a structure: {row.get('notes') or 'no SMILES'}"
            )
        return result
    result.update(classify_smiles(smiles))
    return result


def classify_smiles(smiles: str) -> dict[str, Any]:
    """Apply the OECD 2021 definition to one SMILES string.

    Args:
        smiles: Any SMILES RDKit can read; ``*`` atoms are allowed (polymer repeat units).

    Returns:
        ``{"smiles", "is_pfas", "matched_atoms", "reason"}``: the canonical SMILES, the verdict
        (None when RDKit cannot parse the input), the indices of the qualifying carbons in the
        canonical SMILES, and a sentence saying why.
    """
    from rdkit import Chem
    from rdkit.rdBase import BlockLogs

    block = BlockLogs()  # RDKit would print parse errors to stderr; the reason carries them
    mol = Chem.MolFromSmiles(smiles)
    del block
    if mol is None:
        return {
            "smiles": smiles,
            "is_pfas": None,
            "matched_atoms": [],
            "reason": f"RDKit cannot parse SMILES {smiles!r}.",
        }
    canonical = Chem.MolToSmiles(mol)
    mol = Chem.MolFromSmiles(canonical)  # re-read so atom indices follow the canonical string
    pattern = Chem.MolFromSmarts(OECD_PFAS_SMARTS)
    matched = sorted({match[0] for match in mol.GetSubstructMatches(pattern)})
    if matched:
        reason = _why_pfas(mol, matched)
    else:
        reason = _why_not(mol)
    return {
        "smiles": canonical,
        "is_pfas": bool(matched),
        "matched_atoms": matched,
        "reason": reason,
    }


def _fluorines(atom: Any) -> int:
    return sum(1 for n in atom.GetNeighbors() if n.GetSymbol() == "F")


def _why_pfas(mol: Any, matched: list[int]) -> str:
    cf3 = [i for i in matched if _fluorines(mol.GetAtomWithIdx(i)) >= 3]
    cf2 = [i for i in matched if i not in cf3]
    parts = []
    if cf3:
        parts.append(f"{len(cf3)} fully fluorinated methyl carbon(s) (CF3, atoms {cf3})")
    if cf2:
        parts.append(f"{len(cf2)} fully fluorinated methylene carbon(s) (CF2, atoms {cf2})")
    return "PFAS under OECD 2021: has " + " and ".join(parts) + "."


def _why_not(mol: Any) -> str:
    carbons = [
        a
        for a in mol.GetAtoms()
        if a.GetSymbol() == "C" and any(n.GetSymbol() == "F" for n in a.GetNeighbors())
    ]
    if not any(a.GetSymbol() == "F" for a in mol.GetAtoms()):
        return "Not PFAS: the molecule contains no fluorine."
    if not carbons:
        return "Not PFAS: no fluorine is bound to carbon."
    reasons = []
    for atom in carbons:
        why = []
        if atom.GetIsAromatic() or atom.GetDegree() + atom.GetTotalNumHs() < 4:
            why.append("is not saturated (sp2/sp, e.g. aromatic C-F)")
        if atom.GetTotalNumHs():
            why.append("bears H")
        halogens = sorted(
            {n.GetSymbol() for n in atom.GetNeighbors() if n.GetSymbol() in ("Cl", "Br", "I")}
        )
        if halogens:
            why.append("bears " + "/".join(halogens))
        if _fluorines(atom) < 2:
            why.append("has only one F")
        reasons.append(f"carbon {atom.GetIdx()} " + " and ".join(why))
    return "Not PFAS: no fully fluorinated CF3 or CF2 carbon; " + "; ".join(reasons) + "."
