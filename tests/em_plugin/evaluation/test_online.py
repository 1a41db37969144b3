"""em-plugin eval --online: the test split replayed in order, each session saved after its turns."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from em_plugin.cli import cli
from em_plugin.evaluation.online import evaluate_online


def call(name: str) -> dict:
    return {"kind": "call", "name": name}


def test_later_sessions_see_earlier_ones(tmp_path: Path) -> None:
    # Train: after "a" comes "b". Test: three sessions in which "a" is followed by "z", a tool
    # no train workflow has: offline it is never ranked; online the second and third sessions
    # find the first (saved), so they rank it.
    train = [{"id": f"t{i}", "split": "train", "steps": [call("a"), call("b")]} for i in range(2)]
    test = [{"id": f"q{i}", "split": "test", "steps": [call("a"), call("z")]} for i in range(3)]
    path = tmp_path / "f.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [*train, *test]), encoding="utf-8")

    report = evaluate_online(path, embedder="fake:32")

    assert report["targets"] == 3 and report["hits@3"] == 0  # offline: z is unknown
    online = report["online"]
    assert online["saved"] == 3
    assert online["hits@3"] == 2  # q1 and q2 rank z (q0 had nothing to learn from)
    assert online["baselines"]["bigram"]["hits@3"] == 2  # the baselines learn as they go
    assert online["mrr"] > report["mrr"]


def test_cli_online_table(tmp_path: Path) -> None:
    rows = [
        {"id": "t0", "split": "train", "steps": [call("a"), call("b")]},
        {"id": "q0", "split": "test", "steps": [call("a"), call("b")]},
    ]
    path = tmp_path / "f.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    env = {"EM_PLUGIN_EMBEDDER": "fake:32"}
    result = CliRunner().invoke(cli, ["eval", str(path), "--online"], env=env)
    assert result.exit_code == 0, result.output
    assert "episodic memory, online" in result.output and "bigram, online" in result.output
    bad = CliRunner().invoke(cli, ["eval", str(path), "--online", "--sweep"], env=env)
    assert bad.exit_code != 0 and "--online" in bad.output


def test_acceptance_feedback_moves_the_ranking_during_the_replay(tmp_path: Path) -> None:
    # Train: after "a" came "b" ten times. Test: seven sessions in which "a" is followed by "c".
    # Saved, the sessions teach the model "c", but ten "b" still outweigh them; the acceptance
    # counts see "b" shown first and "c" taken, 5 to 0 after five sessions (the sign test's
    # least evidence), so the sixth and seventh sessions get "c" first.
    train = [{"id": f"t{i}", "split": "train", "steps": [call("a"), call("b")]} for i in range(10)]
    test = [{"id": f"q{i}", "split": "test", "steps": [call("a"), call("c")]} for i in range(7)]
    path = tmp_path / "f.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [*train, *test]), encoding="utf-8")

    report = evaluate_online(path, embedder="fake:32")

    online = report["online"]
    assert report["hits@1"] == 0
    assert online["feedback_promotions"] == 2 and online["hits@1"] == 2
    assert online["baselines"]["bigram"]["hits@1"] == 0  # counts alone still say "b"
