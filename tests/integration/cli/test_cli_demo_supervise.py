"""The demo's query supervisor: transient Spark worker timeouts restart a query, others fail."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rocketpipe.cli.demo_pipeline import is_transient_spark_error, supervise

TRANSIENT = "[STREAM_FAILED] Query terminated with exception: Python worker failed to connect back. SQLSTATE: XXKST"


class FakeQuery:
    """Just the StreamingQuery surface `supervise` uses; ends after `polls` awaitTermination calls."""

    def __init__(self, name: str, polls: int, error: str | None = None) -> None:
        self.name = name
        self._polls = polls
        self._error = error
        self.stopped = False
        self.recentProgress: list[dict[str, int]] = [{"numInputRows": 10}]

    @property
    def isActive(self) -> bool:
        return self._polls > 0 and not self.stopped

    def awaitTermination(self, timeout: float) -> bool:
        self._polls -= 1
        return not self.isActive

    def exception(self) -> Exception | None:
        return None if self._error is None else RuntimeError(self._error)

    def stop(self) -> None:
        self.stopped = True


def starter(queue: list[FakeQuery], started: list[FakeQuery]) -> Callable[[], FakeQuery]:
    def start() -> FakeQuery:
        q = queue.pop(0)
        started.append(q)
        return q

    return start


def test_cli_supervise_restarts_a_query_after_a_worker_timeout() -> None:
    started: list[FakeQuery] = []
    ids = [FakeQuery("ids", 2, TRANSIENT), FakeQuery("ids", 3)]
    stats = [FakeQuery("stats", 4)]
    ticks: list[int] = []
    runs, restarts = supervise(
        {"ids": starter(ids, started), "stats": starter(stats, started)},
        timeout=30,
        poll_s=0,
        on_tick=lambda r: ticks.append(len(r["ids"])),
    )
    assert restarts == 1
    assert [len(runs["ids"]), len(runs["stats"])] == [2, 1]
    assert runs["ids"][1].exception() is None
    assert ticks and ticks[-1] == 2


def test_cli_supervise_raises_other_failures_and_stops_the_rest() -> None:
    started: list[FakeQuery] = []
    with pytest.raises(RuntimeError, match="AnalysisException"):
        supervise(
            {
                "ids": starter([FakeQuery("ids", 1, "AnalysisException: bad column")], started),
                "stats": starter([FakeQuery("stats", 100)], started),
            },
            timeout=30,
            poll_s=0,
        )
    assert started[1].stopped


def test_cli_supervise_gives_up_after_the_restart_budget() -> None:
    started: list[FakeQuery] = []
    failing = [FakeQuery("ids", 1, TRANSIENT) for _ in range(3)]
    with pytest.raises(RuntimeError, match="connect back"):
        supervise({"ids": starter(failing, started)}, timeout=30, poll_s=0, max_restarts=2)
    assert len(started) == 3


def test_cli_supervise_retries_a_start_that_times_out() -> None:
    calls = 0

    def flaky_start() -> FakeQuery:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("Timed out while waiting for the Python worker to connect back")
        return FakeQuery("ids", 1)

    runs, restarts = supervise({"ids": flaky_start}, timeout=30, poll_s=0)
    assert (calls, restarts, len(runs["ids"])) == (2, 1, 1)


def test_cli_transient_error_detection() -> None:
    assert is_transient_spark_error(RuntimeError(TRANSIENT))
    assert not is_transient_spark_error(RuntimeError("AnalysisException: cannot resolve column"))
