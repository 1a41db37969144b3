"""The PFAS classifier applies the OECD 2021 structural definition correctly."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from rdkit import Chem

from integrations.demo.pfas import pfas_classifier, product_extractor
from integrations.demo.pfas.pfas import OECD_PFAS_SMARTS

# (CAS, SMILES, expected is_pfas, reason) — each expectation says why under OECD 2021.
KNOWN = [
    pytest.param(
        "335-67-1",
        "OC(=O)C(F)(F)C(F)(F)C(F)(F)C(F)(F)C(F)(F)C(F)(F)C(F)(F)F",
        True,
        "perfluorinated C7 chain: one CF3 and six CF2 carbons",
        id="PFOA",
    ),
    pytest.param(
        "1763-23-1",
        "OS(=O)(=O)C(F)(F)C(F)(F)C(F)(F)C(F)(F)C(F)(F)C(F)(F)C(F)(F)C(F)(F)F",
        True,
        "perfluorinated C8 chain on the sulfonic acid",
        id="PFOS",
    ),
    pytest.param(
        "13252-13-6",
        "OC(=O)C(F)(C(F)(F)F)OC(F)(F)C(F)(F)C(F)(F)F",
        True,
        "two CF3 and two CF2 carbons (the CF(CF3) carbon has one F and does not count itself)",
        id="GenX-HFPO-DA",
    ),
    pytest.param(
        "355-42-0",
        "FC(F)(F)C(F)(F)C(F)(F)C(F)(F)C(F)(F)C(F)(F)F",
        True,
        "fully fluorinated alkane",
        id="perfluorohexane",
    ),
    pytest.param(
        "647-42-7",
        "OCCC(F)(F)C(F)(F)C(F)(F)C(F)(F)C(F)(F)C(F)(F)F",
        True,
        "C6F13 tail; the CH2CH2OH head does not matter",
        id="6:2-FTOH",
    ),
    pytest.param(
        "76-05-1",
        "OC(=O)C(F)(F)F",
        True,
        "a single CF3 group is enough under OECD 2021",
        id="trifluoroacetic-acid",
    ),
    pytest.param(
        "811-97-2",
        "FCC(F)(F)F",
        True,
        "CF3-CH2F: the CF3 carbon qualifies, the CH2F carbon does not",
        id="HFC-134a",
    ),
    pytest.param("64-17-5", "CCO", False, "no fluorine at all", id="ethanol"),
    pytest.param(
        "75-45-6",
        "FC(F)Cl",
        False,
        "CHClF2: the only carbon bears H and Cl",
        id="chlorodifluoromethane-HCFC-22",
    ),
    pytest.param(
        "462-06-6",
        "Fc1ccccc1",
        False,
        "aromatic (sp2) C-F only, one F per carbon",
        id="fluorobenzene",
    ),
]


@pytest.mark.parametrize(("cas", "smiles", "expected", "reason"), KNOWN)
def test_known_molecule_by_smiles(cas: str, smiles: str, expected: bool, reason: str) -> None:
    result = pfas_classifier(smiles=smiles)["results"][0]
    assert result["is_pfas"] is expected, reason
    assert result["smarts"] == OECD_PFAS_SMARTS
    assert result["reason"].startswith("PFAS" if expected else "Not PFAS")


@pytest.mark.parametrize(("cas", "smiles", "expected", "reason"), KNOWN)
def test_known_molecule_by_cas_lookup(cas: str, smiles: str, expected: bool, reason: str) -> None:
    result = pfas_classifier(cas=cas)["results"][0]
    assert result["is_pfas"] is expected, reason
    assert result["cas"] == cas
    assert result["smiles"] == Chem.MolToSmiles(Chem.MolFromSmiles(smiles))
    assert "pubchem.ncbi.nlm.nih.gov" in result["source"]


def test_cfc_with_chlorine_on_every_fluorinated_carbon_is_not_pfas() -> None:
    # CFC-113, ClCF2-CFCl2: the CF2 carbon also bears Cl, so it is not "fully fluorinated".
    result = pfas_classifier(smiles="ClC(F)(F)C(F)(Cl)Cl")["results"][0]
    assert result["is_pfas"] is False
    assert "Cl" in result["reason"]


def test_matched_atoms_are_the_fully_fluorinated_carbons_of_the_canonical_smiles() -> None:
    result = pfas_classifier(name="PFOA")["results"][0]
    mol = Chem.MolFromSmiles(result["smiles"])
    assert len(result["matched_atoms"]) == 7
    for index in result["matched_atoms"]:
        atom = mol.GetAtomWithIdx(index)
        fluorines = sum(n.GetSymbol() == "F" for n in atom.GetNeighbors())
        assert (atom.GetSymbol(), atom.GetTotalNumHs(), fluorines >= 2) == ("C", 0, True)
    assert "1 fully fluorinated methyl" in result["reason"]
    assert "6 fully fluorinated methylene" in result["reason"]


def test_hfc134a_matches_only_its_cf3_carbon() -> None:
    result = pfas_classifier(smiles="FCC(F)(F)F")["results"][0]
    assert result["smiles"] == "FCC(F)(F)F"
    assert result["matched_atoms"] == [2]


def test_lookup_by_name_and_synonym() -> None:
    by_synonym = pfas_classifier(name="GenX")["results"][0]
    by_name = pfas_classifier(name="perfluorohexanoic acid")["results"][0]
    assert (by_synonym["cas"], by_synonym["is_pfas"]) == ("13252-13-6", True)
    assert (by_name["cas"], by_name["is_pfas"]) == ("307-24-4", True)


def test_polymer_uses_a_representative_oligomer_and_says_so() -> None:
    result = pfas_classifier(cas="9002-84-0")["results"][0]
    assert result["is_pfas"] is True
    assert "*" in result["smiles"]
    assert "representative oligomer" in result["notes"]


def test_unknown_substance_is_null_with_a_plain_reason() -> None:
    result = pfas_classifier(cas="50-00-0")["results"][0]
    assert result["is_pfas"] is None
    assert "not in the bundled table" in result["reason"].lower()
    assert pfas_classifier(name="unobtainium")["summary"]["unknown"] == ["unobtainium"]


def test_table_entry_without_structure_is_null() -> None:
    result = pfas_classifier(name="Fluorinated acrylic copolymer")["results"][0]
    assert result["is_pfas"] is None
    assert "without a structure" in result["reason"]


def test_unparsable_smiles_is_null() -> None:
    result = pfas_classifier(smiles="C1CC(")["results"][0]
    assert result["is_pfas"] is None
    assert "cannot parse" in result["reason"]


def test_lists_of_smiles_are_separate_molecules() -> None:
    out = pfas_classifier(smiles=["OC(=O)C(F)(F)F", "CCO"])
    assert [r["is_pfas"] for r in out["results"]] == [True, False]


def test_classifies_extracted_ingredients() -> None:
    extracted = product_extractor("firestop_afff3_sds.txt")
    out = pfas_classifier(ingredients=extracted["ingredients"])
    assert out["summary"] == {
        "pfas": [
            "3,3,4,4,5,5,6,6,7,7,8,8,8-Tridecafluorooctane-1-sulfonic acid (6:2 FTS)",
            "Perfluorohexanoic acid (PFHxA)",
        ],
        "not_pfas": [
            "Water",
            "2-(2-Butoxyethoxy)ethanol",
            "2-Methylpentane-2,4-diol",
            "Sodium octyl sulfate",
        ],
        "unknown": [],
    }
    json.dumps(out)  # the result is JSON-serialisable
    # The whole extractor output is accepted too.
    assert pfas_classifier(ingredients=extracted)["summary"] == out["summary"]


def test_declaration_substances_are_classified_once_each() -> None:
    extracted = product_extractor("rg316_sma_cable_fmd.xml")
    out = pfas_classifier(ingredients=extracted["ingredients"])
    assert len(extracted["ingredients"]) == 13
    assert len(out["results"]) == 9  # copper, silver and PTFE appear in several materials
    assert out["summary"]["pfas"] == [
        "Polytetrafluoroethylene",
        "Tetrafluoroethylene-hexafluoropropylene copolymer (FEP)",
    ]


def test_nothing_to_classify_is_an_error() -> None:
    with pytest.raises(ValueError, match="Nothing to classify"):
        pfas_classifier()


def test_importing_the_demo_does_not_import_rdkit_or_pypdf() -> None:
    probe = (
        "import sys, integrations.demo.pfas; "
        "print(sorted(m for m in ('rdkit', 'pypdf') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True)
    assert done.stdout.strip() == "[]"
