"""markdown_table renders rows safely."""

from __future__ import annotations

from integrations.demo.pfas import markdown_table


def test_renders_header_separator_and_rows_in_key_order() -> None:
    rows = [{"name": "PFOA", "cas": "335-67-1"}, {"name": "Ethanol", "is_pfas": False}]
    assert markdown_table(rows)["markdown"] == (
        "| name | cas | is_pfas |\n| --- | --- | --- |\n| PFOA | 335-67-1 |  |\n| Ethanol |  | no |"
    )


def test_escapes_pipes_and_newlines_in_cells_and_title() -> None:
    rows = [{"name": "a|b", "note": "line 1\nline 2\r\nline 3"}]
    out = markdown_table(rows, title="PBT | screen")["markdown"]
    assert out.splitlines() == [
        "### PBT \\| screen",
        "",
        "| name | note |",
        "| --- | --- |",
        "| a\\|b | line 1<br>line 2<br>line 3 |",
    ]


def test_columns_select_and_order() -> None:
    rows = [{"name": "PFOA", "cas": "335-67-1", "smiles": "x"}]
    assert markdown_table(rows, columns=["cas", "name"])["markdown"].splitlines()[2] == (
        "| 335-67-1 | PFOA |"
    )


def test_lists_dicts_and_criteria_are_flattened() -> None:
    rows = [
        {
            "atoms": [1, 2],
            "persistence": {"status": "vP", "reason": "..."},
            "extra": {"a|b": 1},
        }
    ]
    line = markdown_table(rows)["markdown"].splitlines()[2]
    assert line == '| 1, 2 | vP | {"a\\|b": 1} |'


def test_accepts_a_tool_output_and_empty_rows() -> None:
    out = markdown_table({"product": "x", "ingredients": [{"name": "Water"}]})
    assert out["markdown"].splitlines()[-1] == "| Water |"
    assert markdown_table([])["markdown"] == "_(no rows)_"
    assert markdown_table([], columns=["name"])["markdown"] == "| name |\n| --- |"
