"""em-plugin eval: the docs/evaluation.md protocol, its metrics, the baselines and the sweep."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from em_plugin.errors import ConfigurationError
from em_plugin.evaluation import evaluate, sweep
from em_plugin.evaluation.baselines import bigram, longest_suffix
from provenance.errors import WorkflowFormatError
from provenance.workflow_json import read_jsonl
from tests.data_files import benchmark_file

KEYS = {"targets", "hit@1", "hit@3", "mrr", "ingest_seconds", "suggest_ms_p50", "suggest_ms_p95"}


def call(name: str) -> dict:
    return {"kind": "call", "name": name}


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def small(tmp_path: Path) -> Path:
    train = [
        {"id": f"t{i}", "split": "train", "steps": [call("a"), call("b"), call("c")]}
        for i in range(3)
    ]
    test = [
        # targets: b (j=1), c (j=2); the instruction leaf at j=3 is not a target.
        {"id": "q1", "split": "test", "steps": [call("a"), call("b"), call("c"),
                                               {"kind": "instruction", "text": "thanks"}]},
        # one target: x (never seen: ranked nowhere, counts 0).
        {"id": "q2", "split": "test", "steps": [call("a"), call("x")]},
        # nested: instruction with calls; targets are the calls after the first leaf.
        {"id": "q3", "split": "test", "steps": [
            {"kind": "instruction", "text": "do it", "steps": [call("a"), call("b")]}]},
    ]  # fmt: skip
    return write(tmp_path / "small.jsonl", [*train, *test])


def test_protocol_counts_targets_and_scores(small: Path) -> None:
    report = evaluate(small, embedder="fake:32")
    assert KEYS <= set(report)
    assert report["targets"] == 4  # b, c (q1), x (q2), b (q3)
    assert report["hits@1"] == 3 and report["hits@3"] == 3
    assert report["hit@1"] == pytest.approx(0.75) and report["mrr"] == pytest.approx(0.75)
    assert report["train_workflows"] == 3 and report["test_workflows"] == 3
    assert report["suggest_ms_p95"] >= report["suggest_ms_p50"] > 0
    assert report["baselines"]["bigram"]["hits@1"] == 3
    assert report["beats_baselines"] is True


def test_baselines_reproduce_the_readme_on_airline() -> None:
    path = benchmark_file("tau2_airline.jsonl")
    if not path.exists():
        pytest.skip("benchmark data not available")
    workflows = read_jsonl(path)
    train = [w for w in workflows if w.split == "train"]
    report = evaluate(path, embedder="fake:64", peers="lstm,transformer")
    assert report["targets"] == 40
    assert (report["baselines"]["bigram"]["hit@1"], report["baselines"]["bigram"]["hit@3"]) == (
        0.5,
        0.8,
    )
    suffix = report["baselines"]["longest_suffix"]
    assert (suffix["hit@1"], suffix["hit@3"]) == (0.3, 0.775)
    assert report["hit@3"] >= report["hit@1"] >= 0.5 and report["hit@3"] >= 0.8
    assert 0 < report["retrieval_share"] <= 1
    # The peers asked for are trained on the train split in the same run and scored beside them.
    for peer in ("lstm", "transformer"):
        tally = report["baselines"][peer]
        assert 0 < tally["hit@1"] <= tally["hit@3"] <= 1 and report[f"{peer}_epochs"] >= 1
        assert isinstance(report[f"beats_{peer}"], bool) and report[f"{peer}_seconds"] > 0
    assert report["chain"] == "continuation" and report["seconds"] >= report["ingest_seconds"]
    # The LSTM's figures in the README come out exactly (seeded, one thread).
    assert (report["baselines"]["lstm"]["hits@1"], report["baselines"]["lstm"]["hits@3"]) == (
        13,
        20,
    )
    # Peers are opt-in: the default run trains none, and the memory's figures do not change.
    default = evaluate(path, embedder="fake:64")
    assert set(default["baselines"]) == {"bigram", "longest_suffix", "paper_rule"}
    assert (default["hits@1"], default["hits@3"]) == (report["hits@1"], report["hits@3"])
    assert bigram(train).rank(["get_user_details"])[0] == "get_reservation_details"
    assert longest_suffix(train).max_order == 4


def test_ablation_and_sweep(small: Path) -> None:
    report = evaluate(small, embedder="fake:32", use_text=False, progress=True)
    assert report["use_text"] is False and report["targets"] == 4
    rows = sweep(small, (0.5, 0.9, 1.0), embedder="fake:32")
    assert [r["threshold"] for r in rows] == [0.5, 0.9, 1.0]
    assert rows[0]["retrieval_share"] >= rows[1]["retrieval_share"] >= rows[2]["retrieval_share"]
    assert rows[2]["retrieval_share"] == 0
    assert {"hit@1", "hit@3", "mrr", "paper_hit@1"} <= set(rows[0])


def test_bad_files(tmp_path: Path) -> None:
    only_train = write(tmp_path / "t.jsonl", [{"id": "a", "split": "train", "steps": [call("a")]}])
    with pytest.raises(ConfigurationError, match="train.*test"):
        evaluate(only_train, embedder="fake")
    broken = tmp_path / "b.jsonl"
    broken.write_text('{"id": "a", "steps": [{"kind": "nope"}]}\n', encoding="utf-8")
    with pytest.raises(WorkflowFormatError, match="b.jsonl:1"):
        evaluate(broken, embedder="fake")


def test_lstm_baseline_learns_the_call_sequence_deterministically() -> None:
    from em_plugin.evaluation.lstm import LSTMBaseline, LSTMConfig
    from provenance.model import CallStep, Workflow

    def flow(i: int, *names: str) -> Workflow:
        return Workflow(id=f"w{i}", steps=tuple(CallStep(n) for n in names))

    train = [flow(i, "open", "read", "close") for i in range(30)]
    train += [flow(100 + i, "open", "write", "save") for i in range(30)]
    config = LSTMConfig(max_epochs=15, patience=15)
    first = LSTMBaseline(config).fit(train)
    assert first.rank(["open", "read"])[0] == "close"
    assert first.rank(["open", "write"])[0] == "save"
    again = LSTMBaseline(config).fit(train)
    assert again.rank(["open"]) == first.rank(["open"])  # seeded: the same model twice
    with pytest.raises(ConfigurationError, match="before fit"):
        LSTMBaseline().rank(["open"])
    with pytest.raises(ConfigurationError, match="validation"):
        LSTMConfig(validation=1.5)
    with pytest.raises(ConfigurationError, match="monitor"):
        LSTMConfig(monitor="recall")
    by_accuracy = LSTMBaseline(LSTMConfig(max_epochs=15, monitor="accuracy")).fit(train)
    assert by_accuracy.rank(["open", "read"])[0] == "close"
    refit = LSTMBaseline(LSTMConfig(max_epochs=15, patience=3, refit=True)).fit(train)
    assert refit.rank(["open", "write"])[0] == "save"


def test_transformer_peer_learns_the_call_sequence_deterministically() -> None:
    from em_plugin.evaluation.transformer import TransformerBaseline, TransformerConfig
    from provenance.model import CallStep, InstructionStep, Workflow

    def flow(i: int, *names: str) -> Workflow:
        return Workflow(id=f"w{i}", steps=tuple(CallStep(n) for n in names))

    # The next call depends on the token two places back: the prefix, not the last token.
    train = [flow(i, "open", "read", "check", "close") for i in range(30)]
    train += [flow(100 + i, "open", "write", "check", "save") for i in range(30)]
    train += [Workflow(id="x", steps=(InstructionStep("go", steps=(CallStep("open"),)),))]
    config = TransformerConfig(max_epochs=30, patience=30)
    first = TransformerBaseline(config).fit(train)
    assert first.rank(["open", "read", "check"])[0] == "close"
    assert first.rank(["open", "write", "check"])[0] == "save"
    assert set(first.rank([])) == {"read", "write", "check", "close", "save"}  # the targets
    assert first.rank(["never seen"])  # unknown tokens rank too
    again = TransformerBaseline(config).fit(train)
    assert again.rank(["open"]) == first.rank(["open"]) and again.epochs == first.epochs
    with pytest.raises(ConfigurationError, match="before fit"):
        TransformerBaseline().rank(["open"])
    with pytest.raises(ConfigurationError, match="multiple of the heads"):
        TransformerConfig(embedding=30, heads=4)
    with pytest.raises(ConfigurationError, match="validation"):
        TransformerConfig(validation=0.0)
    with pytest.raises(ConfigurationError, match="at least two calls"):
        TransformerBaseline().fit([flow(1, "open")])


def test_peers_are_named_and_checked(small: Path) -> None:
    from em_plugin.evaluation.peers import PEERS, parse_peers

    assert parse_peers("transformer, LSTM,lstm") == ("lstm", "transformer") == PEERS
    assert parse_peers(None) == parse_peers("") == ()
    old_style = evaluate(small, embedder="fake:32", lstm=True)  # the same as peers="lstm"
    assert "lstm" in old_style["baselines"] and "transformer" not in old_style["baselines"]
    with pytest.raises(ConfigurationError, match="choose from lstm, transformer"):
        parse_peers("lstm,gru")
    with pytest.raises(ConfigurationError, match="'gru'"):
        evaluate(small, embedder="fake:32", peers=["gru"])


def test_each_named_chain_can_be_evaluated(small: Path) -> None:
    paper = evaluate(small, embedder="fake:32", chain="paper", peers=None)
    assert paper["chain"] == "paper" and "lstm" not in paper["baselines"]
    assert set(paper["top_source"]) <= {"paper", "fallback", "none"}
    answers: list[list[tuple[str, str]]] = []

    def scripted(messages: list[tuple[str, str]]) -> str:
        answers.append(messages)
        return "1. Continue with the next call [c]"

    llm = evaluate(small, embedder="fake:32", chain="llm", llm=scripted, peers=None)
    assert llm["chain"] == "llm" and llm["top_source"].get("llm", 0) > 0 and answers
    with pytest.raises(ConfigurationError, match="choose from"):
        evaluate(small, embedder="fake:32", chain="nope", peers=None)
