"""The scale benchmarks' timing: every query asked once, percentiles from the call times."""

from __future__ import annotations

import threading

import pytest

from em_plugin.evaluation.latency import load_average, summary, time_calls


@pytest.mark.parametrize("threads", [1, 4])
def test_every_query_is_asked_once_and_timed(threads: int) -> None:
    seen: list[int] = []
    names: set[str] = set()

    def call(query: int) -> None:
        seen.append(query)
        names.add(threading.current_thread().name)

    times, wall = time_calls(call, list(range(20)), threads)
    assert sorted(seen) == list(range(20))
    assert len(times) == 20 and all(t >= 0 for t in times)
    assert wall >= max(times)
    assert (names == {threading.main_thread().name}) == (threads == 1)


def test_summary_reads_percentiles_in_ms() -> None:
    found = summary([i / 1000 for i in range(1, 101)], wall=2.0)
    assert found["p50"] == pytest.approx(50.5)
    assert found["p95"] == pytest.approx(95.05)
    assert found["p99"] == pytest.approx(99.01)
    assert found["per_s"] == 50.0


def test_load_average_gives_three_figures_or_a_question_mark() -> None:
    found = load_average()
    assert found == "?" or [float(x) >= 0 for x in found.split()] == [True] * 3
