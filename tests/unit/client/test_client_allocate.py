"""Allocation strategies (AllocateMessageQueueAveragely / ByCircle)."""

from __future__ import annotations

import doctest

import pytest

from rocketpipe.client.consumer import allocate
from rocketpipe.client.consumer.allocate import allocate_averagely, allocate_averagely_by_circle
from rocketpipe.protocol.message import MessageQueue


def qs(n: int, topic: str = "T", broker: str = "broker-a") -> list[MessageQueue]:
    return [MessageQueue(topic, broker, i) for i in range(n)]


def ids(mqs: list[MessageQueue]) -> list[int]:
    return [m.queue_id for m in mqs]


def test_doctests() -> None:
    result = doctest.testmod(allocate)
    assert result.attempted >= 3 and result.failed == 0


@pytest.mark.parametrize(
    ("n", "m", "expected"),
    [
        (8, 3, [[0, 1, 2], [3, 4, 5], [6, 7]]),
        (8, 2, [[0, 1, 2, 3], [4, 5, 6, 7]]),
        (2, 3, [[0], [1], []]),  # more consumers than queues
        (1, 4, [[0], [], [], []]),
        (4, 4, [[0], [1], [2], [3]]),
        (5, 2, [[0, 1, 2], [3, 4]]),
    ],
)
def test_averagely_blocks(n: int, m: int, expected: list[list[int]]) -> None:
    cids = [f"10.0.0.{i}@{i}" for i in range(m)]
    got = [ids(allocate_averagely("g", c, qs(n), cids)) for c in sorted(cids)]
    assert got == expected


@pytest.mark.parametrize(("n", "m"), [(n, m) for n in range(17) for m in range(1, 7)])
def test_averagely_partitions_every_queue_once(n: int, m: int) -> None:
    cids = [f"c{i}" for i in range(m)]
    parts = [allocate_averagely("g", c, qs(n), cids) for c in cids]
    flat = [q for p in parts for q in p]
    assert sorted(flat) == qs(n)
    assert len(flat) == len(set(flat))


def test_inputs_are_sorted_before_allocating() -> None:
    queues = qs(4, broker="b") + qs(4, broker="a")
    got = allocate_averagely("g", "c1", list(reversed(queues)), ["c2", "c1"])
    assert got == [MessageQueue("T", "a", i) for i in range(4)]


def test_unknown_client_gets_nothing() -> None:
    assert allocate_averagely("g", "zz", qs(4), ["a", "b"]) == []
    assert allocate_averagely_by_circle("g", "zz", qs(4), ["a", "b"]) == []
    assert allocate_averagely("g", "a", [], ["a"]) == []


def test_circle() -> None:
    cids = ["c0", "c1", "c2"]
    assert [ids(allocate_averagely_by_circle("g", c, qs(8), cids)) for c in cids] == [[0, 3, 6], [1, 4, 7], [2, 5]]
    assert [ids(allocate_averagely_by_circle("g", c, qs(2), cids)) for c in cids] == [[0], [1], []]
