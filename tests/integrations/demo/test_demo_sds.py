"""The product extractor reads every bundled sample exactly, and fails clearly on bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from integrations.demo.pfas import product_extractor, sample_names
from integrations.demo.pfas.data.make_pdf_sample import PDF_PATH, build_pdf
from integrations.demo.pfas.sds import parse_concentration
from integrations.demo.pfas.tables import SAMPLES_DIR, find_substance, is_valid_cas

EXPECTED = {
    "aquashield_spray_sds.txt": (
        "sds-text",
        "AquaShield Fabric & Leather Protector Spray",
        [
            ("Propan-2-ol", "67-63-0", "30 - 50 %"),
            ("Naphtha (petroleum), hydrotreated light", "64742-49-0", "10 - 30 %"),
            ("1,1,1,2-Tetrafluoroethane", "811-97-2", "10 - 30 %"),
            ("Fluorinated acrylic copolymer", None, "1 - 5 %"),
            ("3,3,4,4,5,5,6,6,7,7,8,8,8-Tridecafluorooctyl acrylate", "17527-29-6", "< 0.1 %"),
            ("3,3,4,4,5,5,6,6,7,7,8,8,8-Tridecafluorooctan-1-ol", "647-42-7", "< 0.1 %"),
        ],
    ),
    "firestop_afff3_sds.txt": (
        "sds-text",
        "FireStop AFFF 3% Aqueous Film-Forming Foam Concentrate",
        [
            ("Water", "7732-18-5", "60 - 70 %"),
            ("2-(2-Butoxyethoxy)ethanol", "112-34-5", "10 - 20 %"),
            ("2-Methylpentane-2,4-diol", "107-41-5", "5 - 10 %"),
            ("Sodium octyl sulfate", "142-31-4", "1 - 5 %"),
            (
                "3,3,4,4,5,5,6,6,7,7,8,8,8-Tridecafluorooctane-1-sulfonic acid (6:2 FTS)",
                "27619-97-2",
                "1 - 3 %",
            ),
            ("Perfluorohexanoic acid (PFHxA)", "307-24-4", "< 0.1 %"),
        ],
    ),
    "duraglide_nonstick_primer_sds.pdf": (
        "sds-pdf",
        "DuraGlide Non-Stick Coating Primer (waterborne, grey)",
        [
            ("Water", "7732-18-5", "40 - 60 %"),
            ("Polytetrafluoroethylene", "9002-84-0", "20 - 30 %"),
            ("1-Methyl-2-pyrrolidone", "872-50-4", "3 - 7 %"),
            ("Titanium dioxide", "13463-67-7", "1 - 5 %"),
            ("Carbon black", "1333-86-4", "< 1 %"),
            ("2,3,3,3-Tetrafluoro-2-(heptafluoropropoxy)propanoic acid", "13252-13-6", "< 0.1 %"),
        ],
    ),
    "citraclean_all_purpose_sds.txt": (
        "sds-text",
        "CitraClean All-Purpose Cleaner",
        [
            ("Ethanol", "64-17-5", "5 - 10 %"),
            ("Alcohols, C12-14, ethoxylated, sulfates, sodium salts", "68891-38-3", "1 - 5 %"),
            ("2-Butoxyethanol", "111-76-2", "1 - 5 %"),
            ("Citric acid", "77-92-9", "1 - 3 %"),
            ("(R)-p-Mentha-1,8-diene (d-limonene)", "5989-27-5", "≤ 0.5 %"),
        ],
    ),
    "precisionclean_fx_solvent_sds.txt": (
        "sds-text",
        "PrecisionClean FX Electronics Cleaning Solvent",
        [
            ("trans-1,2-Dichloroethylene", "156-60-5", "≥ 50 %"),
            ("Methyl nonafluorobutyl ether", "163702-07-6", "10 - 30 %"),
            ("Methyl nonafluoroisobutyl ether", "163702-08-7", "10 - 30 %"),
        ],
    ),
    "rg316_sma_cable_fmd.xml": (
        "ipc1752a",
        "RG-316 coaxial cable assembly, SMA plug to SMA plug, 0.5 m",
        [
            ("Copper", "7440-50-8", "98 %"),
            ("Silver", "7440-22-4", "2 %"),
            ("Polytetrafluoroethylene", "9002-84-0", "100 %"),
            ("Copper", "7440-50-8", "98 %"),
            ("Silver", "7440-22-4", "2 %"),
            ("Tetrafluoroethylene-hexafluoropropylene copolymer (FEP)", "25067-11-2", "99.5 %"),
            ("Iron(III) oxide", "1309-37-1", "0.5 %"),
            ("Copper", "7440-50-8", "58 %"),
            ("Zinc", "7440-66-6", "39 %"),
            ("Lead", "7439-92-1", "3 %"),
            ("Nickel", "7440-02-0", "100 %"),
            ("Gold", "7440-57-5", "100 %"),
            ("Polytetrafluoroethylene", "9002-84-0", "100 %"),
        ],
    ),
}


def test_every_sample_has_an_expectation() -> None:
    assert sorted(EXPECTED) == sample_names()


@pytest.mark.parametrize("sample", sorted(EXPECTED))
def test_sample_is_parsed_exactly(sample: str) -> None:
    fmt, product, ingredients = EXPECTED[sample]
    out = product_extractor(sample)
    assert (out["file"], out["format"], out["product"]) == (sample, fmt, product)
    assert [(i["name"], i["cas"], i["concentration"]) for i in out["ingredients"]] == ingredients
    assert out["warnings"] == []


@pytest.mark.parametrize("sample", sorted(EXPECTED))
def test_every_sample_substance_is_in_the_table_with_a_valid_cas(sample: str) -> None:
    for name, cas, _ in EXPECTED[sample][2]:
        row = find_substance(cas=cas, name=name)
        assert row is not None, f"{name} ({cas}) is missing from substances.csv"
        assert cas is None or is_valid_cas(cas)


def test_declaration_reports_the_material_of_each_substance() -> None:
    ingredients = product_extractor("rg316_sma_cable_fmd.xml")["ingredients"]
    assert ingredients[5]["material"] == "Jacket, FEP (brown)"


def test_file_resolution_by_stem_directory_prefix_and_path() -> None:
    by_stem = product_extractor("firestop_afff3_sds")
    by_prefix = product_extractor("samples/firestop_afff3_sds.txt")
    by_path = product_extractor(str(SAMPLES_DIR / "firestop_afff3_sds.txt"))
    assert by_stem["ingredients"] == by_prefix["ingredients"] == by_path["ingredients"]


def test_pdf_sample_is_reproducible_from_its_script() -> None:
    assert build_pdf() == PDF_PATH.read_bytes()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10 - 30 %", "10 - 30 %"),
        ("10-30%", "10 - 30 %"),
        ("0.1 – 1 %", "0.1 - 1 %"),
        ("<1 %", "< 1 %"),
        ("≥ 50%", "≥ 50 %"),
        (">= 50 %", "≥ 50 %"),
        ("<=0,5%", "≤ 0.5 %"),
        ("25 %", "25 %"),
        ("200-578-6", None),
        ("about ten", None),
    ],
)
def test_parse_concentration(text: str, expected: str | None) -> None:
    assert parse_concentration(text) == expected


def _write(tmp_path: Path, name: str, text: str | bytes) -> str:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return str(path)


def test_unknown_file_lists_the_samples() -> None:
    with pytest.raises(ValueError, match="Unknown file 'nope.pdf'.*aquashield_spray_sds.txt"):
        product_extractor("nope.pdf")


def test_text_without_section_3_lists_the_samples(tmp_path: Path) -> None:
    path = _write(tmp_path, "letter.txt", "Dear customer,\nSECTION 1: Identification\n")
    with pytest.raises(ValueError, match="No Section 3.*Available samples: aquashield"):
        product_extractor(path)


def test_section_3_without_ingredients(tmp_path: Path) -> None:
    text = (
        "SECTION 3: Composition/information on ingredients\nNot applicable.\nSECTION 4: First aid\n"
    )
    with pytest.raises(ValueError, match="lists no ingredient"):
        product_extractor(_write(tmp_path, "empty.txt", text))


def test_bad_cas_check_digit_is_a_warning(tmp_path: Path) -> None:
    text = "SECTION 3: Composition\nEthanol    64-17-6    5 - 10 %\nSECTION 4: First aid\n"
    out = product_extractor(_write(tmp_path, "typo.txt", text))
    assert out["ingredients"] == [
        {"name": "Ethanol", "cas": "64-17-6", "concentration": "5 - 10 %"}
    ]
    assert out["warnings"] == ["CAS number 64-17-6 of 'Ethanol' fails its check digit."]


def test_unsupported_type(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="Unsupported file type '.docx'"):
        product_extractor(_write(tmp_path, "sds.docx", "x"))


def test_not_a_pdf(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a readable PDF"):
        product_extractor(_write(tmp_path, "broken.pdf", b"this is not a pdf"))


def test_malformed_xml(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not well-formed XML"):
        product_extractor(_write(tmp_path, "broken.xml", "<MainDoc><Product>"))


def test_xml_that_is_not_ipc1752a(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"not an IPC-1752A declaration \(root element is <html>"):
        product_extractor(_write(tmp_path, "page.xml", "<html><body/></html>"))


def test_declaration_without_substances(tmp_path: Path) -> None:
    xml = '<MainDoc><Product><ProductID itemName="Empty"/></Product></MainDoc>'
    with pytest.raises(ValueError, match="lists no <Substance>"):
        product_extractor(_write(tmp_path, "empty.xml", xml))


def test_declaration_with_explicit_mass_percent_and_no_namespace(tmp_path: Path) -> None:
    xml = """<MainDoc version="1.1"><Product><ProductID itemNumber="P-1"/>
      <HomogeneousMaterialList><HomogeneousMaterial name="Seal">
        <Substance name="PTFE" massPercent="85">
          <SubstanceID authority="CAS" identity="9002-84-0"/></Substance>
        <Substance name="Glass fibre"><MassPercent value="15"/></Substance>
      </HomogeneousMaterial></HomogeneousMaterialList></Product></MainDoc>"""
    out = product_extractor(_write(tmp_path, "seal.xml", xml))
    assert out["product"] == "P-1"
    assert out["ingredients"] == [
        {"name": "PTFE", "cas": "9002-84-0", "concentration": "85 %", "material": "Seal"},
        {"name": "Glass fibre", "cas": None, "concentration": "15 %", "material": "Seal"},
    ]
