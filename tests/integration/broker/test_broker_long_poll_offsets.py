"""Long polling (wake on arrival, expiry, tag mismatch) and offset requests over real TCP."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from broker_testkit import TIMEOUT, pull, records, send

from rocketpipe.broker import Broker, BrokerConfig
from rocketpipe.errors import ConnectionClosedError
from rocketpipe.protocol.codes import RequestCode, ResponseCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.protocol.headers.offset import (
    GetEarliestMsgStoretimeRequestHeader,
    GetMaxOffsetRequestHeader,
    GetMinOffsetRequestHeader,
    QueryConsumerOffsetRequestHeader,
    SearchOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketpipe.testing import FakeClock
from rocketpipe.transport import Connection
from waiting import wait_until


@pytest.fixture
async def broker(tmp_path: Path):
    async with Broker(BrokerConfig(store_dir=tmp_path, mapped_file_size_commit_log=1 << 20)) as b:
        yield b


@pytest.fixture
async def conn(broker: Broker):
    c = await Connection.connect(broker.address)
    yield c
    await c.close()


async def test_broker_held_pull_is_woken_by_arrival(conn: Connection, broker: Broker) -> None:
    assert (await send(conn, "TopicLP", b"first")).code == ResponseCode.SUCCESS
    task = asyncio.create_task(pull(conn, "g", "TopicLP", 0, 1, suspend_ms=15_000))
    await wait_until(lambda: len(broker.hold) == 1, timeout=5, what="pull parked")
    assert not task.done()
    assert (await send(conn, "TopicLP", b"second")).code == ResponseCode.SUCCESS
    # Woken at once by the arrival, far below the 15 s hold and the 5 s sweep.
    await wait_until(task.done, timeout=1.0, what="held pull answered")
    resp = task.result()
    assert resp.code == ResponseCode.SUCCESS
    assert [m.body for m in records(resp)] == [b"second"]
    assert len(broker.hold) == 0


async def test_broker_held_pull_expires_with_pull_not_found(conn: Connection, broker: Broker) -> None:
    await send(conn, "TopicLE", b"x")
    resp = await pull(conn, "g", "TopicLE", 0, 1, suspend_ms=300)
    assert resp.code == ResponseCode.PULL_NOT_FOUND
    assert resp.remark == "OFFSET_OVERFLOW_ONE"
    assert len(broker.hold) == 0


async def test_broker_held_pull_ignores_a_non_matching_tag(conn: Connection, broker: Broker) -> None:
    await send(conn, "TopicLT", b"x", tags="A")
    task = asyncio.create_task(pull(conn, "g", "TopicLT", 0, 1, suspend_ms=15_000, subscription="A"))
    await wait_until(lambda: len(broker.hold) == 1, timeout=5, what="pull parked")
    await send(conn, "TopicLT", b"b", tags="B")
    # the B message does not release the A pull; it is still parked after the send returned
    assert len(broker.hold) == 1 and not task.done()
    await send(conn, "TopicLT", b"a2", tags="A")
    await wait_until(task.done, timeout=1.0, what="held pull answered")
    assert [m.body for m in records(task.result())] == [b"a2"]


async def test_broker_held_pull_is_dropped_when_its_connection_closes(broker: Broker) -> None:
    c = await Connection.connect(broker.address)
    task = asyncio.create_task(pull(c, "g", "TopicLC", 0, 0, suspend_ms=15_000))
    await send(c, "TopicLC", b"x", queue_id=1)  # creates the topic; queue 0 stays empty
    await wait_until(lambda: len(broker.hold) == 1 or task.done(), timeout=5, what="pull parked")
    await c.close()
    await wait_until(lambda: len(broker.hold) == 0 and task.done(), timeout=5, what="held pull dropped")
    with pytest.raises(ConnectionClosedError):
        task.result()


def _req(code: int, header: object) -> RemotingCommand:
    return RemotingCommand.request(code, header.to_ext_fields())  # type: ignore[attr-defined]


async def test_broker_consumer_offsets_commit_query_and_piggy_back(conn: Connection, broker: Broker) -> None:
    for i in range(5):
        await send(conn, "TopicO", str(i).encode())
    # a new group on a young, non-empty queue starts from 0
    q = await conn.request(
        _req(
            RequestCode.QUERY_CONSUMER_OFFSET,
            QueryConsumerOffsetRequestHeader(consumer_group="g", topic="TopicO", queue_id=0),
        ),
        TIMEOUT,
    )
    assert (q.code, q.ext_fields["offset"]) == (ResponseCode.SUCCESS, "0")
    # empty queue: QUERY_NOT_FOUND
    q = await conn.request(
        _req(
            RequestCode.QUERY_CONSUMER_OFFSET,
            QueryConsumerOffsetRequestHeader(consumer_group="g", topic="TopicO", queue_id=3),
        ),
        TIMEOUT,
    )
    assert q.code == ResponseCode.QUERY_NOT_FOUND
    r = await conn.request(
        _req(
            RequestCode.UPDATE_CONSUMER_OFFSET,
            UpdateConsumerOffsetRequestHeader(consumer_group="g", topic="TopicO", queue_id=0, commit_offset=3),
        ),
        TIMEOUT,
    )
    assert r.code == ResponseCode.SUCCESS
    q = await conn.request(
        _req(
            RequestCode.QUERY_CONSUMER_OFFSET,
            QueryConsumerOffsetRequestHeader(consumer_group="g", topic="TopicO", queue_id=0),
        ),
        TIMEOUT,
    )
    assert q.ext_fields["offset"] == "3"
    # oneway update (how Java persists) then piggy-backed commit on a pull
    await conn.oneway(
        _req(
            RequestCode.UPDATE_CONSUMER_OFFSET,
            UpdateConsumerOffsetRequestHeader(consumer_group="g", topic="TopicO", queue_id=0, commit_offset=4),
        )
    )
    await wait_until(lambda: broker.offsets.query("g", "TopicO", 0) == 4, timeout=5, what="oneway commit")
    resp = await pull(conn, "g", "TopicO", 0, 4, commit_offset=2)
    assert resp.code == ResponseCode.SUCCESS
    assert broker.offsets.query("g", "TopicO", 0) == 2
    # unknown topic
    r = await conn.request(
        _req(
            RequestCode.UPDATE_CONSUMER_OFFSET,
            UpdateConsumerOffsetRequestHeader(consumer_group="g", topic="Nope", queue_id=0, commit_offset=1),
        ),
        TIMEOUT,
    )
    assert r.code == ResponseCode.TOPIC_NOT_EXIST


async def test_broker_piggy_back_commit_happens_once_for_a_held_pull(conn: Connection, broker: Broker) -> None:
    await send(conn, "TopicPB", b"a")
    task = asyncio.create_task(pull(conn, "g", "TopicPB", 0, 1, suspend_ms=15_000, commit_offset=1))
    await wait_until(lambda: len(broker.hold) == 1, timeout=5, what="pull parked")
    assert broker.offsets.query("g", "TopicPB", 0) == 1
    broker.offsets.commit("g", "TopicPB", 0, 0)  # a later commit; the re-run must not overwrite it
    await send(conn, "TopicPB", b"b")
    await wait_until(task.done, timeout=1.0, what="held pull answered")
    assert broker.offsets.query("g", "TopicPB", 0) == 0


async def test_broker_queue_offset_queries(tmp_path: Path) -> None:
    clock = FakeClock(1_700_000_000_000)
    async with Broker(BrokerConfig(store_dir=tmp_path, mapped_file_size_commit_log=1 << 20), clock=clock) as b:
        c = await Connection.connect(b.address)
        try:
            for i in range(4):
                await send(c, "TopicQ", str(i).encode())
                clock.advance(1.0)
            mx = await c.request(
                _req(RequestCode.GET_MAX_OFFSET, GetMaxOffsetRequestHeader(topic="TopicQ", queue_id=0)), TIMEOUT
            )
            mn = await c.request(
                _req(RequestCode.GET_MIN_OFFSET, GetMinOffsetRequestHeader(topic="TopicQ", queue_id=0)), TIMEOUT
            )
            assert (mx.ext_fields["offset"], mn.ext_fields["offset"]) == ("4", "0")
            s = await c.request(
                _req(
                    RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
                    SearchOffsetRequestHeader(topic="TopicQ", queue_id=0, timestamp=1_700_000_001_500),
                ),
                TIMEOUT,
            )
            assert s.ext_fields["offset"] == "2"
            e = await c.request(
                _req(
                    RequestCode.GET_EARLIEST_MSG_STORETIME,
                    GetEarliestMsgStoretimeRequestHeader(topic="TopicQ", queue_id=0),
                ),
                TIMEOUT,
            )
            assert e.ext_fields["timestamp"] == "1700000000000"
            unknown = await c.request(
                _req(RequestCode.GET_MAX_OFFSET, GetMaxOffsetRequestHeader(topic="Nope", queue_id=0)), TIMEOUT
            )
            assert unknown.ext_fields["offset"] == "0"
        finally:
            await c.close()


async def test_broker_periodic_sweep_releases_pulls_without_an_arrival_signal(tmp_path: Path) -> None:
    from rocketpipe.store import MessageInner

    cfg = BrokerConfig(store_dir=tmp_path, mapped_file_size_commit_log=1 << 20, long_polling_check_interval_ms=200)
    async with Broker(cfg) as b:
        c = await Connection.connect(b.address)
        try:
            await send(c, "TopicSW", b"a")
            task = asyncio.create_task(pull(c, "g", "TopicSW", 0, 1, suspend_ms=15_000))
            await wait_until(lambda: len(b.hold) == 1, timeout=5, what="pull parked")
            # written behind the broker's back: only the periodic sweep can notice it
            assert b.store.put_message(MessageInner(topic="TopicSW", queue_id=0, body=b"b", store_host=b.address)).is_ok
            await wait_until(task.done, timeout=5, what="sweep released the pull")
            assert [m.body for m in records(task.result())] == [b"b"]
        finally:
            await c.close()


async def test_broker_short_polling_holds_for_short_polling_time(tmp_path: Path) -> None:
    # Long polling off: the hold is short_polling_time_mills (100 ms). The client asks for 15 s
    # and the long-poll check interval is 60 s, so honouring either would hold >= 10 s.
    cfg = BrokerConfig(
        store_dir=tmp_path,
        mapped_file_size_commit_log=1 << 20,
        long_polling_enable=False,
        short_polling_time_mills=100,
        long_polling_check_interval_ms=60_000,
    )
    async with Broker(cfg) as b:
        c = await Connection.connect(b.address)
        try:
            await send(c, "TopicSH", b"a")
            task = asyncio.create_task(pull(c, "g", "TopicSH", 0, 1, suspend_ms=15_000))
            await wait_until(task.done, timeout=3, what="short-polling pull answered without a long hold")
            assert task.result().code == ResponseCode.PULL_NOT_FOUND
        finally:
            await c.close()


async def test_broker_batch_arrival_wakes_a_pull_held_on_any_of_its_tags(tmp_path: Path) -> None:
    from broker_testkit import send_cmd

    from rocketpipe.protocol import message as pm

    # the sweep runs once an hour and the hold lasts 25 s: only the arrival path can answer in time
    cfg = BrokerConfig(
        store_dir=tmp_path, mapped_file_size_commit_log=1 << 20, long_polling_check_interval_ms=3_600_000
    )
    async with Broker(cfg) as b:
        c = await Connection.connect(b.address)
        try:
            await send(c, "TopicBT", b"x", tags="A")
            task = asyncio.create_task(pull(c, "g", "TopicBT", 0, 1, suspend_ms=25_000, subscription="A"))
            await wait_until(lambda: len(b.hold) == 1, timeout=5, what="pull parked")
            batch = [
                pm.Message("TopicBT", b"a1", properties={"TAGS": "A"}),
                pm.Message("TopicBT", b"b1", properties={"TAGS": "B"}),
            ]
            r = await c.request(
                send_cmd(
                    "TopicBT", pm.encode_batch(batch), code=RequestCode.SEND_BATCH_MESSAGE, batch=True, queue_id=0
                ),
                TIMEOUT,
            )
            assert r.code == ResponseCode.SUCCESS, r.remark
            await wait_until(task.done, timeout=5, what="held pull answered by the batch arrival")
            resp = task.result()
            assert resp.code == ResponseCode.SUCCESS
            assert b"a1" in [m.body for m in records(resp)]
            assert len(b.hold) == 0
        finally:
            await c.close()


async def test_broker_parking_pulls_never_runs_the_full_sweep(tmp_path: Path) -> None:
    cfg = BrokerConfig(
        store_dir=tmp_path, mapped_file_size_commit_log=1 << 20, long_polling_check_interval_ms=3_600_000
    )
    async with Broker(cfg) as b:
        sweeps = 0
        real_sweep = b.hold.sweep

        def counting_sweep(*args: object, **kw: object) -> list:
            nonlocal sweeps
            sweeps += 1
            return real_sweep(*args, **kw)  # type: ignore[arg-type]

        b.hold.sweep = counting_sweep  # type: ignore[method-assign]
        c = await Connection.connect(b.address)
        try:
            await send(c, "TopicPK", b"x")
            held = [asyncio.create_task(pull(c, "g", "TopicPK", 0, 1, suspend_ms=25_000)) for _ in range(20)]
            await wait_until(lambda: len(b.hold) == 20, timeout=5, what="pulls parked")
            # an earlier deadline re-arms the timer and is answered when due, without a sweep
            short = await pull(c, "g", "TopicPK", 0, 1, suspend_ms=200)
            assert short.code == ResponseCode.PULL_NOT_FOUND
            assert sweeps == 0
            assert len(b.hold) == 20 and not any(t.done() for t in held)
            await send(c, "TopicPK", b"y")
            await wait_until(lambda: all(t.done() for t in held), timeout=5, what="held pulls answered by the arrival")
            assert all([m.body for m in records(t.result())] == [b"y"] for t in held)
        finally:
            await c.close()


async def test_broker_server_side_offset_reset(conn: Connection, broker: Broker) -> None:
    from rocketpipe.protocol.bodies.admin import ResetOffsetBody
    from rocketpipe.protocol.headers.consumer import ResetOffsetRequestHeader

    for i in range(6):
        await send(conn, "TopicRO", str(i).encode())
    await conn.request(
        _req(
            RequestCode.UPDATE_CONSUMER_OFFSET,
            UpdateConsumerOffsetRequestHeader(consumer_group="g", topic="TopicRO", queue_id=0, commit_offset=5),
        ),
        TIMEOUT,
    )
    h = ResetOffsetRequestHeader(group="g", topic="TopicRO", queue_id=0, offset=2, timestamp=0, is_force=True)
    r = await conn.request(_req(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, h), TIMEOUT)
    assert r.code == ResponseCode.SUCCESS
    assert list(ResetOffsetBody.decode(bytes(r.body)).offset_table.values()) == [2]
    # client commits are ignored until the next pull sees the reset
    await conn.request(
        _req(
            RequestCode.UPDATE_CONSUMER_OFFSET,
            UpdateConsumerOffsetRequestHeader(consumer_group="g", topic="TopicRO", queue_id=0, commit_offset=6),
        ),
        TIMEOUT,
    )
    assert broker.offsets.query("g", "TopicRO", 0) == 2
    moved = await pull(conn, "g", "TopicRO", 0, 6, commit_offset=6)
    assert (moved.code, moved.remark, moved.ext_fields["nextBeginOffset"]) == (
        ResponseCode.PULL_OFFSET_MOVED,
        "OFFSET_RESET",
        "2",
    )
    assert broker.offsets.query("g", "TopicRO", 0) == 2
    again = await pull(conn, "g", "TopicRO", 0, 2)
    assert [m.body for m in records(again)] == [b"2", b"3", b"4", b"5"]
    # isForce is ignored (Java 5.x resetOffsetInner): a reset to the end moves forward too
    h = ResetOffsetRequestHeader(group="g", topic="TopicRO", queue_id=0, timestamp=-1, is_force=False)
    r = await conn.request(_req(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, h), TIMEOUT)
    assert list(ResetOffsetBody.decode(bytes(r.body)).offset_table.values()) == [6]
