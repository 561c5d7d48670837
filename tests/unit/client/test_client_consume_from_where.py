"""ConsumeFromWhere table (RebalancePushImpl.computePullFromWhere)."""

from __future__ import annotations

import asyncio
from datetime import datetime

import pytest

from rocketpipe.client.consumer.offsets import (
    ConsumeFromWhere as W,
)
from rocketpipe.client.consumer.offsets import (
    StartAction as A,
)
from rocketpipe.client.consumer.offsets import (
    compute_pull_from_where,
    decide_start_offset,
    default_consume_timestamp,
    parse_consume_timestamp,
)
from rocketpipe.errors import SystemError_
from rocketpipe.protocol.message import MessageQueue

LAST_LIKE = [
    W.CONSUME_FROM_LAST_OFFSET,
    W.CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST,
    W.CONSUME_FROM_MIN_OFFSET,
    W.CONSUME_FROM_MAX_OFFSET,
]


@pytest.mark.parametrize("where", list(W))
@pytest.mark.parametrize("topic", ["T", "%RETRY%g"])
def test_stored_offset_wins(where: W, topic: str) -> None:
    d = decide_start_offset(where, 42, topic)
    assert (d.action, d.offset) == (A.USE_OFFSET, 42)
    assert decide_start_offset(where, 0, topic).offset == 0


@pytest.mark.parametrize("where", list(W))
def test_error_skips_queue(where: W) -> None:
    assert decide_start_offset(where, -2, "T").action is A.SKIP


@pytest.mark.parametrize(
    ("where", "topic", "action", "offset"),
    [(w, "T", A.QUERY_MAX_OFFSET, -1) for w in LAST_LIKE]
    + [(w, "%RETRY%g", A.USE_OFFSET, 0) for w in LAST_LIKE]
    + [
        (W.CONSUME_FROM_FIRST_OFFSET, "T", A.USE_OFFSET, 0),
        (W.CONSUME_FROM_FIRST_OFFSET, "%RETRY%g", A.USE_OFFSET, 0),
        (W.CONSUME_FROM_TIMESTAMP, "T", A.SEARCH_TIMESTAMP, -1),
        (W.CONSUME_FROM_TIMESTAMP, "%RETRY%g", A.QUERY_MAX_OFFSET, -1),
    ],
)
def test_no_stored_offset(where: W, topic: str, action: A, offset: int) -> None:
    d = decide_start_offset(where, -1, topic)
    assert d.action is action
    assert d.offset == offset


def test_default_consume_timestamp_is_30_minutes_ago() -> None:
    assert default_consume_timestamp(datetime(2024, 1, 1, 0, 10, 0)) == "20231231234000"
    assert parse_consume_timestamp("20240101000000") == int(datetime(2024, 1, 1).timestamp() * 1000)


def run_compute(where: W, stored: int, topic: str = "T", *, max_raises: bool = False) -> tuple[int, list[str]]:
    calls: list[str] = []
    mq = MessageQueue(topic, "b", 0)

    async def read(q: MessageQueue) -> int:
        calls.append("read")
        return stored

    async def max_offset(q: MessageQueue) -> int:
        calls.append("max")
        if max_raises:
            raise SystemError_("boom")
        return 77

    async def search(q: MessageQueue, ts: int) -> int:
        calls.append(f"search:{ts}")
        return 5

    result = asyncio.run(
        compute_pull_from_where(
            where,
            mq,
            read_store_offset=read,
            max_offset=max_offset,
            search_offset=search,
            consume_timestamp="20240101000000",
        )
    )
    return result, calls


def test_compute_applies_decision() -> None:
    assert run_compute(W.CONSUME_FROM_LAST_OFFSET, -1) == (77, ["read", "max"])
    assert run_compute(W.CONSUME_FROM_LAST_OFFSET, 9) == (9, ["read"])
    assert run_compute(W.CONSUME_FROM_FIRST_OFFSET, -1) == (0, ["read"])
    ts = parse_consume_timestamp("20240101000000")
    assert run_compute(W.CONSUME_FROM_TIMESTAMP, -1) == (5, ["read", f"search:{ts}"])
    assert run_compute(W.CONSUME_FROM_TIMESTAMP, -1, "%RETRY%g") == (77, ["read", "max"])
    assert run_compute(W.CONSUME_FROM_LAST_OFFSET, -2) == (-1, ["read"])
    assert run_compute(W.CONSUME_FROM_LAST_OFFSET, -1, max_raises=True) == (-1, ["read", "max"])
