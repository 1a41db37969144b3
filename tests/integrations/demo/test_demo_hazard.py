"""Hazard assessment screens P, B and T against REACH Annex XIII and never guesses."""

from __future__ import annotations

import json

import pytest

from integrations.demo.pfas import hazard_assessment, pfas_classifier, product_extractor
from integrations.demo.pfas.hazard import evaluate


def _one(**kwargs: object) -> dict:
    return hazard_assessment(**kwargs)["results"][0]  # type: ignore[arg-type]


def test_pfoa_is_pbt_with_its_reasons_and_source() -> None:
    result = _one(cas="335-67-1")
    assert result["conclusion"] == "PBT"
    assert (result["pbt"], result["vpvb"]) == (True, False)
    assert result["persistence"]["status"] == "vP"
    assert result["bioaccumulation"]["status"] == "B"
    assert result["toxicity"]["status"] == "T"
    assert "Repr. 1B" in result["toxicity"]["reason"]
    assert "Carc. 2" not in result["toxicity"]["reason"]  # category 2 is not a T criterion
    assert "ECHA" in result["source"]
    assert result["missing"] == []


def test_pfhxs_is_vpvb_although_toxicity_data_are_missing() -> None:
    result = _one(cas="355-46-4")
    assert result["conclusion"] == "vPvB"
    assert result["pbt"] is None
    assert result["missing"] == ["toxicity"]


def test_ethanol_is_not_pbt_because_it_is_readily_biodegradable() -> None:
    result = _one(name="ethanol")
    assert result["conclusion"] == "not PBT"
    assert result["persistence"] == {"status": "not P", "reason": "readily biodegradable"}
    assert result["bioaccumulation"]["status"] == "not B"  # log Kow -0.31 <= 4.5


def test_genx_is_not_pbt_because_it_is_not_b() -> None:
    result = _one(name="GenX")
    assert result["cas"] == "13252-13-6"
    assert result["conclusion"] == "not PBT"
    assert result["persistence"]["status"] == "vP"


def test_substance_missing_from_the_table_is_insufficient_data() -> None:
    result = _one(cas="647-42-7")  # 6:2 FTOH: deliberately absent
    assert result["name"] == "3,3,4,4,5,5,6,6,7,7,8,8,8-Tridecafluorooctan-1-ol"
    assert result["conclusion"] == "insufficient data"
    assert result["missing"] == ["persistence", "bioaccumulation", "toxicity"]
    assert result["bioaccumulation"]["reason"].startswith(
        "no bioaccumulation data in the bundled table"
    )


def test_partial_data_is_reported_as_missing_not_guessed() -> None:
    result = _one(cas="9002-84-0")  # PTFE: persistence only
    assert result["conclusion"] == "insufficient data"
    assert result["persistence"]["status"] == "vP"
    assert result["missing"] == ["bioaccumulation", "toxicity"]
    assert result["bioaccumulation"]["reason"] == "no bioaccumulation data in the bundled table"


def test_smiles_is_matched_to_the_table() -> None:
    pfoa = "OC(=O)C(F)(F)C(F)(F)C(F)(F)C(F)(F)C(F)(F)C(F)(F)C(F)(F)F"
    result = _one(smiles=pfoa)
    assert (result["cas"], result["conclusion"]) == ("335-67-1", "PBT")


def test_assesses_only_the_pfas_of_a_classifier_output() -> None:
    classified = pfas_classifier(ingredients=product_extractor("firestop_afff3_sds.txt"))
    out = hazard_assessment(ingredients=classified, pfas_only=True)
    assert [r["cas"] for r in out["results"]] == ["27619-97-2", "307-24-4"]
    assert out["summary"] == {
        "insufficient data": [
            "3,3,4,4,5,5,6,6,7,7,8,8,8-Tridecafluorooctane-1-sulfonic acid (6:2 FTS)"
        ],
        "not PBT": ["Perfluorohexanoic acid (PFHxA)"],
    }
    json.dumps(out)


def test_assesses_every_extracted_ingredient() -> None:
    out = hazard_assessment(ingredients=product_extractor("duraglide_nonstick_primer_sds.pdf"))
    conclusions = {r["cas"]: r["conclusion"] for r in out["results"]}
    assert conclusions["872-50-4"] == "not PBT"  # NMP: T (Repr. 1B) but readily biodegradable
    assert conclusions["13252-13-6"] == "not PBT"
    assert conclusions["7732-18-5"] == "insufficient data"


def test_nothing_to_assess_is_an_error() -> None:
    with pytest.raises(ValueError, match="Nothing to assess"):
        hazard_assessment()
    with pytest.raises(ValueError, match="none of them is marked is_pfas"):
        hazard_assessment(ingredients=[{"name": "Water", "cas": "7732-18-5"}], pfas_only=True)


# Synthetic records exercise the numeric Annex XIII thresholds, which the bundled table (mostly
# weight-of-evidence conclusions for PFAS) does not reach.
@pytest.mark.parametrize(
    ("column", "days", "expected"),
    [
        ("half_life_marine_water_d", "60", "not P"),  # the criterion is "> 60 d"
        ("half_life_marine_water_d", "61", "vP"),
        ("half_life_fresh_water_d", "50", "P"),  # > 40 d (P) but not > 60 d (vP)
        ("half_life_fresh_sediment_d", "150", "P"),
        ("half_life_marine_sediment_d", "150", "not P"),
        ("half_life_soil_d", "181", "vP"),
    ],
)
def test_persistence_thresholds(column: str, days: str, expected: str) -> None:
    assert evaluate({column: days})["persistence"]["status"] == expected


@pytest.mark.parametrize(
    ("bcf", "expected"), [("2000", "not B"), ("2500", "B"), ("5000", "B"), ("5001", "vB")]
)
def test_bioaccumulation_thresholds(bcf: str, expected: str) -> None:
    assert evaluate({"bcf_l_kg": bcf})["bioaccumulation"]["status"] == expected


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        ({"noec_mg_l": "0.005"}, "T"),
        ({"cmr": "Muta. 1B"}, "T"),
        ({"stot_re": "STOT RE 2"}, "T"),
        ({"noec_mg_l": "0.5", "cmr": "Carc. 2", "stot_re": "none"}, "not T"),
        ({"noec_mg_l": "0.5", "cmr": "none"}, "unknown"),  # STOT RE unknown: T not ruled out
    ],
)
def test_toxicity_criteria(record: dict[str, str], expected: str) -> None:
    assert evaluate(record)["toxicity"]["status"] == expected


def test_numeric_pbt_and_vpvb_conclusions() -> None:
    pbt = {"half_life_soil_d": "150", "bcf_l_kg": "3000", "noec_mg_l": "0.001"}
    both = {"half_life_soil_d": "400", "bcf_l_kg": "8000", "cmr": "Repr. 1A"}
    assert evaluate(pbt)["conclusion"] == "PBT"
    assert evaluate(both)["conclusion"] == "PBT and vPvB"
    assert evaluate({"bcf_l_kg": "8000"})["conclusion"] == "insufficient data"
