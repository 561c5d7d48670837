"""The gRPC endpoint's topic message type check (pure parts) and its cache of topics' types,
with an injected clock: Java 5.3.3's ``TopicMessageType.parseFromMessageProperty``,
``DefaultTopicMessageTypeValidator`` and ``ClusterMetadataService.topicConfigCache``."""

from __future__ import annotations

import asyncio

import pytest

from rocketpipe.protocol.topic_attributes import TopicMessageType as T
from rocketpipe.proxy.message_type import (
    TopicMessageTypeCache,
    TopicMessageTypeMismatchError,
    message_type_of_properties,
    needs_check,
    validate,
)
from waiting import wait_until


@pytest.mark.parametrize(
    ("properties", "expected"),
    [
        ({}, T.NORMAL),
        ({"TAGS": "a", "KEYS": "k"}, T.NORMAL),
        ({"__SHARDINGKEY": "g"}, T.FIFO),
        ({"DELAY": "3"}, T.DELAY),
        ({"TIMER_DELIVER_MS": "1"}, T.DELAY),
        ({"TIMER_DELAY_SEC": "1"}, T.DELAY),
        ({"TIMER_DELAY_MS": "1"}, T.DELAY),
        ({"TIMER_DELIVER_MS": "1", "__SHARDINGKEY": "g"}, T.DELAY),  # DELAY is looked at before FIFO
        ({"TRAN_MSG": "true", "__SHARDINGKEY": "g", "DELAY": "1"}, T.TRANSACTION),  # and TRANSACTION first
        ({"TRAN_MSG": "false"}, T.NORMAL),  # only "true" makes a half message
    ],
)
def test_message_type_of_properties(properties: dict[str, str], expected: T) -> None:
    assert message_type_of_properties(properties) is expected


def test_validate_as_java() -> None:
    for kind in (T.NORMAL, T.FIFO, T.DELAY, T.TRANSACTION):
        validate(kind, kind)
        validate(T.MIXED, kind)  # a MIXED topic takes every type
    with pytest.raises(TopicMessageTypeMismatchError) as info:
        validate(T.FIFO, T.NORMAL)
    assert str(info.value) == "TopicMessageType validate failed, the expected type is FIFO, but actual type is NORMAL"
    with pytest.raises(TopicMessageTypeMismatchError, match="expected type is UNSPECIFIED, but actual type is NORMAL"):
        validate(T.UNSPECIFIED, T.NORMAL)  # a topic without config (Java's EMPTY_TOPIC_CONFIG)
    with pytest.raises(TopicMessageTypeMismatchError, match="actual type is UNSPECIFIED"):
        validate(T.MIXED, T.UNSPECIFIED)


def test_needs_check_skips_transfers_retry_and_dlq() -> None:
    assert needs_check("Orders", {})
    assert not needs_check("Orders", {"TRANSFER_FLAG": "true"})
    assert not needs_check("%RETRY%cg", {})
    assert not needs_check("%DLQ%cg", {})


class Loader:
    def __init__(self) -> None:
        self.answers: dict[str, T | Exception] = {}
        self.calls: list[str] = []
        self.gate: asyncio.Event | None = None

    async def __call__(self, topic: str) -> T:
        self.calls.append(topic)
        if self.gate is not None:
            await self.gate.wait()
        answer = self.answers[topic]
        if isinstance(answer, Exception):
            raise answer
        return answer


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_cache_refreshes_after_20s_and_keeps_the_old_value_when_a_refresh_fails() -> None:
    load, clock = Loader(), Clock()
    cache = TopicMessageTypeCache(load, clock=clock)
    load.answers["T"] = T.FIFO
    assert await cache.get("T") is T.FIFO
    load.answers["T"] = T.NORMAL
    clock.now += 20.0
    assert await cache.get("T") is T.FIFO  # not due yet: no load
    assert load.calls == ["T"]
    clock.now += 0.5
    assert await cache.get("T") is T.NORMAL  # due: the reader loads it again
    assert load.calls == ["T", "T"]
    load.answers["T"] = RuntimeError("broker down")
    clock.now += 21.0
    assert await cache.get("T") is T.NORMAL  # AbstractCacheLoader.reload: the old value
    assert await cache.get("T") is T.NORMAL  # and written again: no second load at once
    assert load.calls == ["T", "T", "T"]


async def test_cache_expires_unread_entries_after_300s_and_does_not_keep_failures() -> None:
    load, clock = Loader(), Clock()
    cache = TopicMessageTypeCache(load, clock=clock, refresh_s=1000.0)
    load.answers["T"] = RuntimeError("no route")
    with pytest.raises(RuntimeError):
        await cache.get("T")
    assert len(cache) == 0
    load.answers["T"] = T.DELAY
    assert await cache.get("T") is T.DELAY
    clock.now += 299.0
    assert await cache.get("T") is T.DELAY  # read: stays
    load.answers["T"] = RuntimeError("no route")
    clock.now += 300.5
    with pytest.raises(RuntimeError):  # unread for 300.5 s: gone, loaded afresh, and that load fails
        await cache.get("T")
    assert len(cache) == 0
    assert load.calls == ["T", "T", "T"]


async def test_cache_shares_one_load_between_concurrent_misses_and_bounds_its_size() -> None:
    load, clock = Loader(), Clock()
    cache = TopicMessageTypeCache(load, clock=clock, max_entries=2)
    load.answers.update({"A": T.FIFO, "B": T.NORMAL, "C": T.DELAY})
    load.gate = asyncio.Event()
    readers = [asyncio.create_task(cache.get("A")) for _ in range(5)]
    await wait_until(lambda: load.calls == ["A"], what="the first reader loading A")
    assert not any(r.done() for r in readers)  # all waiting on that one load
    load.gate.set()
    assert await asyncio.gather(*readers) == [T.FIFO] * 5
    assert load.calls == ["A"]
    load.gate = None
    await cache.get("B")
    await cache.get("A")  # A read last: B is the least recently read
    await cache.get("C")
    assert len(cache) == 2
    await cache.get("A")
    assert load.calls == ["A", "B", "C"]  # A still cached
    await cache.get("B")
    assert load.calls == ["A", "B", "C", "B"]  # B was evicted
