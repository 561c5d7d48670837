"""POP_MESSAGE / ACK_MESSAGE / BATCH_ACK / CHANGE_MESSAGE_INVISIBLETIME and revive, over raw
remoting requests against a broker with :func:`rocketpipe.broker.pop.install`, driven by a fake
clock (invisible deadlines and revive use the broker's wall clock)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from broker_testkit import TIMEOUT, send

from rocketpipe.broker import Broker, BrokerConfig
from rocketpipe.broker.pop import CHECKPOINT_FILE, PopService, install
from rocketpipe.broker.topics import SubscriptionGroupConfig
from rocketpipe.protocol import message as pm
from rocketpipe.protocol.codes import RequestCode, ResponseCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.protocol.headers.pop import (
    AckMessageRequestHeader,
    BatchAckMessageRequestBody,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    ExtraInfo,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
    parse_msg_offset_info,
    parse_start_offset_info,
)
from rocketpipe.store.json_file import load_json
from rocketpipe.testing import FakeClock
from rocketpipe.transport import Connection
from waiting import wait_until

GROUP = "pop-cg"
INVISIBLE_MS = 10_000


@asynccontextmanager
async def pop_broker(store_dir: Path, clock: FakeClock, **config: Any) -> AsyncIterator[tuple[Broker, PopService]]:
    """A started broker with POP installed (started after the broker, closed before it);
    ``config``: more :class:`BrokerConfig` fields."""
    async with Broker(
        BrokerConfig(store_dir=store_dir, mapped_file_size_commit_log=1 << 20, **config), clock=clock
    ) as b:
        svc = install(b)
        await svc.start()
        try:
            yield b, svc
        finally:
            await svc.close()


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[tuple[Broker, PopService, FakeClock, Connection]]:
    clock = FakeClock()
    async with pop_broker(tmp_path, clock) as (b, svc):
        c = await Connection.connect(b.address)
        try:
            yield b, svc, clock, c
        finally:
            await c.close()


def _popped(resp: RemotingCommand) -> list[pm.MessageExt]:
    """Decode a POP response and attach the handles as the Java client does (processPopResponse)."""
    if resp.code != ResponseCode.SUCCESS:
        return []
    rh = PopMessageResponseHeader.from_ext_fields(resp.ext_fields)
    starts = parse_start_offset_info(rh.start_offset_info)
    offsets = parse_msg_offset_info(rh.msg_offset_info)
    msgs = pm.decode_records(bytes(resp.body))
    for m in msgs:
        if "POP_CK" not in m.properties:
            key = f"0@{m.queue_id}"
            assert m.queue_offset in offsets[key]
            m.properties["POP_CK"] = ExtraInfo.of(
                starts[key],
                rh.pop_time or 0,
                rh.invisible_time or 0,
                rh.revive_qid or 0,
                m.topic,
                "broker-a",
                m.queue_id,
                m.queue_offset,
            ).build()
    return msgs


async def pop(
    c: Connection,
    clock: FakeClock,
    topic: str,
    *,
    queue_id: int = -1,
    max_nums: int = 32,
    invisible_ms: int = INVISIBLE_MS,
    poll_ms: int = 0,
    exp: str | None = None,
    init_mode: int = 0,
    group: str = GROUP,
    born_time: int | None = None,
) -> RemotingCommand:
    h = PopMessageRequestHeader(
        consumer_group=group,
        topic=topic,
        queue_id=queue_id,
        max_msg_nums=max_nums,
        invisible_time=invisible_ms,
        poll_time=poll_ms,
        born_time=clock.now_ms() if born_time is None else born_time,
        init_mode=init_mode,
        exp_type="TAG" if exp else None,
        exp=exp,
    )
    return await c.request(
        RemotingCommand.request(RequestCode.POP_MESSAGE, h.to_ext_fields()), TIMEOUT + poll_ms / 1000
    )


async def ack(
    c: Connection, msg: pm.MessageExt, topic: str, group: str = GROUP, handle: str | None = None
) -> RemotingCommand:
    ei = ExtraInfo.parse(handle or msg.properties["POP_CK"])
    h = AckMessageRequestHeader(
        consumer_group=group,
        topic=ei.real_topic(topic, group),
        queue_id=ei.queue_id,
        extra_info=ei.build(),
        offset=ei.queue_offset,
    )
    return await c.request(RemotingCommand.request(RequestCode.ACK_MESSAGE, h.to_ext_fields()), TIMEOUT)


async def change(
    c: Connection, msg: pm.MessageExt, topic: str, invisible_ms: int, handle: str | None = None
) -> RemotingCommand:
    ei = ExtraInfo.parse(handle or msg.properties["POP_CK"])
    h = ChangeInvisibleTimeRequestHeader(
        consumer_group=GROUP,
        topic=ei.real_topic(topic, GROUP),
        queue_id=ei.queue_id,
        extra_info=ei.build(),
        offset=ei.queue_offset,
        invisible_time=invisible_ms,
    )
    return await c.request(
        RemotingCommand.request(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, h.to_ext_fields()), TIMEOUT
    )


async def produce(
    c: Connection, topic: str, n: int, *, queue_id: int = 0, tags: str | None = None, prefix: str = "m"
) -> None:
    for i in range(n):
        r = await send(c, topic, f"{prefix}{i}".encode(), queue_id=queue_id, tags=tags)
        assert r.code == ResponseCode.SUCCESS, r.remark


# ---------------------------------------------------------------------------------- pop / ack


async def test_broker_pop_then_ack_is_never_redelivered(env) -> None:
    b, svc, clock, c = env
    await produce(c, "PopT", 3)
    r = await pop(c, clock, "PopT")
    msgs = _popped(r)
    assert [m.body for m in msgs] == [b"m0", b"m1", b"m2"]
    rh = PopMessageResponseHeader.from_ext_fields(r.ext_fields)
    assert rh.pop_time == clock.now_ms() and rh.invisible_time == INVISIBLE_MS and rh.rest_num == 0
    assert rh.start_offset_info == "0 0 0" and rh.msg_offset_info == "0 0 0,1,2"
    assert b.offsets.query(GROUP, "PopT", 0) == 3  # offset advanced at pop time (and committed)
    assert svc.table.in_flight(GROUP) == 3
    # nothing else to pop while they are invisible
    assert (await pop(c, clock, "PopT")).code == ResponseCode.POLLING_TIMEOUT
    for m in msgs:
        assert (await ack(c, m, "PopT")).code == ResponseCode.SUCCESS
    assert svc.table.in_flight(GROUP) == 0
    assert (await ack(c, msgs[0], "PopT")).code == ResponseCode.NO_MESSAGE  # second ack: unknown handle
    clock.advance(INVISIBLE_MS / 1000 + 1)
    assert svc.revive_due() == 0
    assert (await pop(c, clock, "PopT")).code == ResponseCode.POLLING_TIMEOUT
    assert b.topics.get("%RETRY%pop-cg_PopT") is None


async def test_broker_pop_without_ack_becomes_visible_again_through_the_retry_topic(env) -> None:
    b, svc, clock, c = env
    await produce(c, "PopT", 2, tags="TagA")
    first = _popped(await pop(c, clock, "PopT"))
    assert [m.reconsume_times for m in first] == [0, 0]
    assert (await ack(c, first[0], "PopT")).code == ResponseCode.SUCCESS
    clock.advance(INVISIBLE_MS / 1000 - 1)
    assert svc.revive_due() == 0  # not yet
    clock.advance(1)
    # the revive loop (every 200 ms) moves the unacked message into %RETRY%<group>_<topic>
    await wait_until(lambda: b.store.get_max_offset("%RETRY%pop-cg_PopT", 0) == 1, timeout=5, what="revived")
    r = await pop(c, clock, "PopT")
    again = _popped(r)
    assert len(again) == 1
    m = again[0]
    assert m.body == b"m1" and m.topic == "PopT" and m.reconsume_times == 1 and m.tags == "TagA"
    assert m.msg_id == first[1].msg_id  # UNIQ_KEY kept
    assert m.properties["1ST_POP_TIME"] == str(clock.now_ms() - INVISIBLE_MS)
    ei = ExtraInfo.parse(m.properties["POP_CK"])  # set by the broker for a retry-topic message
    assert ei.retry == "1" and ei.queue_offset == 0 and ei.pop_time == clock.now_ms()
    assert PopMessageResponseHeader.from_ext_fields(r.ext_fields).start_offset_info == "1 0 0"
    assert (await ack(c, m, "PopT")).code == ResponseCode.SUCCESS
    clock.advance(60)
    assert svc.revive_due() == 0 and svc.table.in_flight(GROUP) == 0


async def test_broker_pop_change_invisible_time_moves_the_deadline(env) -> None:
    _b, svc, clock, c = env
    await produce(c, "PopT", 2)
    msgs = _popped(await pop(c, clock, "PopT"))
    clock.advance(2)
    r = await change(c, msgs[0], "PopT", 30_000)
    assert r.code == ResponseCode.SUCCESS
    rh = ChangeInvisibleTimeResponseHeader.from_ext_fields(r.ext_fields)
    assert rh.pop_time == clock.now_ms() and rh.invisible_time == 30_000
    old = ExtraInfo.parse(msgs[0].properties["POP_CK"])
    new = ExtraInfo(
        msgs[0].queue_offset,
        rh.pop_time,
        rh.invisible_time,
        rh.revive_qid,
        "0",
        old.broker_name,
        old.queue_id,
        msgs[0].queue_offset,
    )
    # the old handle is gone
    assert (await ack(c, msgs[0], "PopT")).code == ResponseCode.NO_MESSAGE
    assert (await change(c, msgs[0], "PopT", 1000)).code == ResponseCode.NO_MESSAGE
    # past the first deadline only the unchanged message comes back
    clock.advance(INVISIBLE_MS / 1000)
    assert svc.revive_due() == 1
    back = _popped(await pop(c, clock, "PopT"))
    assert [m.body for m in back] == [b"m1"]
    assert (await ack(c, back[0], "PopT")).code == ResponseCode.SUCCESS
    # the changed one comes back 30 s after the change, unless acked with the new handle
    clock.advance(30 - INVISIBLE_MS / 1000 - 1)
    assert svc.revive_due() == 0
    assert (await ack(c, msgs[0], "PopT", handle=new.build())).code == ResponseCode.SUCCESS
    clock.advance(5)
    assert svc.revive_due() == 0 and svc.table.in_flight(GROUP) == 0


async def test_broker_pop_dead_letters_after_max_retries(env) -> None:
    b, svc, clock, c = env
    await produce(c, "PopT", 1)
    deliveries = []
    for _ in range(17):
        got = _popped(await pop(c, clock, "PopT"))
        assert len(got) == 1
        deliveries.append(got[0].reconsume_times)
        clock.advance(INVISIBLE_MS / 1000)
        assert svc.revive_due() == 1
    assert deliveries == list(range(17))  # 1 delivery + 16 retries (retryMaxTimes)
    assert (await pop(c, clock, "PopT")).code == ResponseCode.POLLING_TIMEOUT
    assert b.store.get_max_offset("%DLQ%pop-cg", 0) == 1
    dlq = pm.decode_records(b.store.get_message("%DLQ%pop-cg", 0, 0, 1).buffers[0])[0]
    assert dlq.body == b"m0" and dlq.reconsume_times == 17
    assert dlq.properties[pm.PROPERTY_RETRY_TOPIC] == "PopT"
    assert svc.reviver.dead_lettered == 1 and svc.table.in_flight(GROUP) == 0


async def test_broker_pop_dead_letter_honours_the_group_retry_max_times(env) -> None:
    b, svc, clock, c = env
    b.groups_config.put(SubscriptionGroupConfig("pop-cg", retry_max_times=1))
    await produce(c, "PopT", 1)
    for expected in (0, 1):
        got = _popped(await pop(c, clock, "PopT"))
        assert [m.reconsume_times for m in got] == [expected]
        clock.advance(INVISIBLE_MS / 1000)
        svc.revive_due()
    assert b.store.get_max_offset("%DLQ%pop-cg", 0) == 1


async def test_broker_pop_two_consumers_on_one_queue_get_disjoint_messages(env) -> None:
    b, svc, clock, c = env
    await produce(c, "PopOne", 70)  # queue 0 only
    c2 = await Connection.connect(b.address)
    try:
        results = await asyncio.gather(
            *[pop(conn, clock, "PopOne", queue_id=0, max_nums=3) for conn in (c, c2) for _ in range(10)]
        )
    finally:
        await c2.close()
    seen = [m.queue_offset for r in results for m in _popped(r)]
    assert len(seen) == len(set(seen)) == 60  # 20 pops x 3, no message twice
    assert sorted(seen) == list(range(60))
    assert svc.table.in_flight(GROUP) == 60
    assert b.offsets.query(GROUP, "PopOne", 0) == 60


async def test_broker_pop_filters_by_tag_and_skips_filtered_offsets(env) -> None:
    b, _svc, clock, c = env
    for i, tag in enumerate(["a", "b", "a", "c"]):
        assert (await send(c, "PopTag", f"{tag}{i}".encode(), queue_id=0, tags=tag)).code == ResponseCode.SUCCESS
    msgs = _popped(await pop(c, clock, "PopTag", exp="a || c"))
    assert [m.body for m in msgs] == [b"a0", b"a2", b"c3"]
    assert b.offsets.query(GROUP, "PopTag", 0) == 4
    r = await pop(c, clock, "PopTag", exp="SQL", init_mode=0)
    assert r.code == ResponseCode.POLLING_TIMEOUT  # TAG "SQL": nothing left to match


async def test_broker_pop_init_mode_max_starts_at_0_while_the_first_message_is_in_memory(env) -> None:
    """Java's ``initPopOffsetByCheckMsgInMem`` (on by default): a new group asking for MAX on a
    queue that still starts at 0, its first message within 40 % of the memory from the end of
    the commit log, starts at 0; once that message is no longer "in memory" (here: the ratio at
    0), it pops the last message only ("pop last one")."""
    b, _svc, clock, c = env
    await produce(c, "PopMax", 3)
    msgs = _popped(await pop(c, clock, "PopMax", init_mode=1, group="g-max"))
    assert [m.body for m in msgs] == [b"m0", b"m1", b"m2"]
    b.store.config = dataclasses.replace(b.store.config, access_message_in_memory_max_ratio=0)
    assert not b.store.check_in_mem_by_consume_offset("PopMax", 0, 0)
    msgs = _popped(await pop(c, clock, "PopMax", init_mode=1, group="g-max-2"))
    assert [m.body for m in msgs] == [b"m2"]


async def test_broker_pop_init_mode_max_starts_at_the_last_message_when_the_check_is_off(tmp_path: Path) -> None:
    clock = FakeClock()
    async with pop_broker(tmp_path, clock, init_pop_offset_by_check_msg_in_mem=False) as (b, _svc):
        c = await Connection.connect(b.address)
        try:
            await produce(c, "PopMax", 3)
            msgs = _popped(await pop(c, clock, "PopMax", init_mode=1, group="g-max"))
            assert [m.body for m in msgs] == [b"m2"]
        finally:
            await c.close()


async def test_broker_pop_long_polling_returns_when_a_message_arrives(env) -> None:
    _b, svc, clock, c = env
    await produce(c, "PopLP", 1)
    _popped(await pop(c, clock, "PopLP"))  # drain
    task = asyncio.ensure_future(pop(c, clock, "PopLP", poll_ms=8000))
    await wait_until(lambda: svc.polling_count == 1, timeout=5, what="pop held")
    await produce(c, "PopLP", 1, prefix="late")
    r = await asyncio.wait_for(task, 7)
    assert [m.body for m in _popped(r)] == [b"late0"]
    assert svc.polling_count == 0
    # nothing arrives: POLLING_TIMEOUT after the poll time
    r = await pop(c, clock, "PopLP", poll_ms=200)
    assert r.code == ResponseCode.POLLING_TIMEOUT and r.remark == "NO_MESSAGE_IN_QUEUE"


async def test_broker_pop_rejects_bad_requests(env) -> None:
    _b, svc, clock, c = env
    await produce(c, "PopT", 1)
    assert (await pop(c, clock, "PopT", max_nums=33)).code == ResponseCode.INVALID_PARAMETER
    assert (await pop(c, clock, "NoSuchTopic")).code == ResponseCode.TOPIC_NOT_EXIST
    assert (await pop(c, clock, "PopT", queue_id=99)).code == ResponseCode.INVALID_PARAMETER
    assert (await pop(c, clock, "PopT", born_time=clock.now_ms() - 5000)).code == ResponseCode.POLLING_TIMEOUT
    msg = _popped(await pop(c, clock, "PopT"))[0]
    bad = AckMessageRequestHeader(consumer_group=GROUP, topic="PopT", queue_id=0, extra_info="garbage", offset=0)
    r = await c.request(RemotingCommand.request(RequestCode.ACK_MESSAGE, bad.to_ext_fields()), TIMEOUT)
    assert r.code == ResponseCode.MESSAGE_ILLEGAL
    far = AckMessageRequestHeader(
        consumer_group=GROUP, topic="PopT", queue_id=0, extra_info=msg.properties["POP_CK"], offset=99
    )
    r = await c.request(RemotingCommand.request(RequestCode.ACK_MESSAGE, far.to_ext_fields()), TIMEOUT)
    assert r.code == ResponseCode.NO_MESSAGE
    r = await c.request(RemotingCommand.request(RequestCode.BATCH_ACK_MESSAGE, None, b""), TIMEOUT)
    assert r.code == ResponseCode.NO_MESSAGE
    assert svc.table.in_flight(GROUP) == 1


async def test_broker_pop_batch_ack_settles_every_listed_offset(env) -> None:
    _b, svc, clock, c = env
    await produce(c, "PopT", 4)
    msgs = _popped(await pop(c, clock, "PopT"))
    handles = [ExtraInfo.parse(m.properties["POP_CK"]) for m in msgs[:3]]
    body = BatchAckMessageRequestBody.from_handles("PopT", GROUP, handles)
    r = await c.request(RemotingCommand.request(RequestCode.BATCH_ACK_MESSAGE, None, body.encode()), TIMEOUT)
    assert r.code == ResponseCode.SUCCESS
    assert svc.table.in_flight(GROUP) == 1
    clock.advance(INVISIBLE_MS / 1000)
    assert svc.revive_due() == 1
    assert [m.body for m in _popped(await pop(c, clock, "PopT"))] == [b"m3"]


# ---------------------------------------------------------------------------------- restart


async def test_broker_pop_restart_keeps_checkpoints_and_pop_offsets(tmp_path: Path) -> None:
    clock = FakeClock()
    async with pop_broker(tmp_path, clock) as (b, svc):
        c = await Connection.connect(b.address)
        await produce(c, "PopR", 3)
        msgs = _popped(await pop(c, clock, "PopR"))
        assert len(msgs) == 3
        assert (await ack(c, msgs[0], "PopR")).code == ResponseCode.SUCCESS
        await c.close()
    saved = load_json(tmp_path / "config" / CHECKPOINT_FILE)
    assert [ck["po"] for ck in saved["checkpoints"]] == [[1, 2]]
    assert saved["popOffsetTable"]["PopR@pop-cg"]["0"] == 3
    async with pop_broker(tmp_path, clock) as (b, svc):
        assert svc.table.in_flight(GROUP) == 2
        c = await Connection.connect(b.address)
        try:
            # popped offsets are not handed out again
            assert (await pop(c, clock, "PopR")).code == ResponseCode.POLLING_TIMEOUT
            # a handle from before the restart still acks
            assert (await ack(c, msgs[1], "PopR")).code == ResponseCode.SUCCESS
            clock.advance(INVISIBLE_MS / 1000)
            assert svc.revive_due() == 1
            again = _popped(await pop(c, clock, "PopR"))
            assert [(m.body, m.reconsume_times) for m in again] == [(b"m2", 1)]
        finally:
            await c.close()


async def test_broker_pop_checkpoints_are_persisted_while_running(env) -> None:
    b, svc, clock, c = env
    assert install(b) is svc  # idempotent
    await produce(c, "PopP", 2)
    msgs = _popped(await pop(c, clock, "PopP"))
    path = b.config.store_dir / "config" / CHECKPOINT_FILE

    def saved_pending() -> list[list[int]]:
        obj = load_json(path) if path.exists() else None
        return [ck["po"] for ck in obj["checkpoints"]] if obj else []

    await wait_until(lambda: saved_pending() == [[0, 1]], timeout=5, what="checkpoint written by the persist loop")
    assert (await ack(c, msgs[0], "PopP")).code == ResponseCode.SUCCESS
    await wait_until(lambda: saved_pending() == [[1]], timeout=5, what="ack persisted")
