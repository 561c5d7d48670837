"""CONSUMER_SEND_MSG_BACK -> SCHEDULE_TOPIC_XXXX -> %RETRY%<group> -> %DLQ%<group>, driven by a fake clock."""

from __future__ import annotations

from pathlib import Path

import pytest
from broker_testkit import TIMEOUT, pull, records, send

from rocketpipe.broker import Broker, BrokerConfig
from rocketpipe.protocol import message as pm
from rocketpipe.protocol.codes import RequestCode, ResponseCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.protocol.headers.consumer import ConsumerSendMsgBackRequestHeader
from rocketpipe.testing import FakeClock
from rocketpipe.transport import Connection
from waiting import wait_until


@pytest.fixture
async def env(tmp_path: Path):
    clock = FakeClock()
    async with Broker(BrokerConfig(store_dir=tmp_path, mapped_file_size_commit_log=1 << 20), clock=clock) as b:
        c = await Connection.connect(b.address)
        yield b, clock, c
        await c.close()


async def _send_back(
    c: Connection, msg: pm.MessageExt, group: str, *, delay_level: int = 0, max_times: int | None = None
) -> RemotingCommand:
    h = ConsumerSendMsgBackRequestHeader(
        offset=msg.commit_log_offset,
        group=group,
        delay_level=delay_level,
        origin_msg_id=msg.msg_id,
        origin_topic=msg.topic,
        max_reconsume_times=max_times,
    )
    return await c.request(RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, h.to_ext_fields()), TIMEOUT)


async def _pull_one(c: Connection, topic: str, offset: int) -> list[pm.MessageExt]:
    r = await pull(c, "cg", topic, 0, offset)
    return records(r) if r.code == ResponseCode.SUCCESS else []


async def test_broker_send_back_retries_after_the_delay_then_dead_letters(env) -> None:
    broker, clock, c = env
    assert (await send(c, "TopicR", b"payload", tags="T1", properties={"KEYS": "k1"})).code == ResponseCode.SUCCESS
    original = (await _pull_one(c, "TopicR", 0))[0]

    # first failure: reconsumeTimes 0 -> level 3 (10 s) in SCHEDULE_TOPIC_XXXX queue 2
    assert (await _send_back(c, original, "cg", max_times=2)).code == ResponseCode.SUCCESS
    assert broker.store.get_max_offset("SCHEDULE_TOPIC_XXXX", 2) == 1
    assert broker.topics.get("%RETRY%cg") is not None
    clock.advance(9.0)
    # not due yet: the schedule loop runs every 100 ms; nothing lands while the fake clock stands
    assert broker.schedule.deliver_due(clock.now_ms()) == 0
    assert await _pull_one(c, "%RETRY%cg", 0) == []
    clock.advance(1.0)
    await wait_until(lambda: broker.store.get_max_offset("%RETRY%cg", 0) == 1, timeout=5, what="retry delivered")
    retry1 = (await _pull_one(c, "%RETRY%cg", 0))[0]
    assert retry1.body == b"payload" and retry1.reconsume_times == 1
    assert retry1.properties[pm.PROPERTY_RETRY_TOPIC] == "TopicR"
    assert retry1.properties[pm.PROPERTY_ORIGIN_MESSAGE_ID] == original.offset_msg_id
    assert retry1.properties["KEYS"] == "k1" and retry1.tags == "T1"
    # Java messageTimeup keeps the schedule record's properties string: DELAY stays in the copy
    assert retry1.properties[pm.PROPERTY_DELAY_TIME_LEVEL] == "3"
    assert retry1.properties[pm.PROPERTY_WAIT_STORE_MSG_OK] == "false"  # set by consumerSendMsgBack
    assert retry1.properties[pm.PROPERTY_REAL_TOPIC] == "%RETRY%cg"
    # ...and that DELAY is not taken as a new delay: nothing went back into SCHEDULE_TOPIC_XXXX
    broker.schedule.deliver_due(clock.now_ms() + 60_000)
    assert broker.store.get_max_offset("SCHEDULE_TOPIC_XXXX", 2) == 1
    assert broker.store.get_max_offset("%RETRY%cg", 0) == 1

    # second failure: reconsumeTimes 1 -> level 4 (30 s)
    assert (await _send_back(c, retry1, "cg", max_times=2)).code == ResponseCode.SUCCESS
    assert broker.store.get_max_offset("SCHEDULE_TOPIC_XXXX", 3) == 1
    clock.advance(30.0)
    await wait_until(lambda: broker.store.get_max_offset("%RETRY%cg", 0) == 2, timeout=5, what="second retry delivered")
    retry2 = (await _pull_one(c, "%RETRY%cg", 1))[0]
    assert retry2.reconsume_times == 2
    assert retry2.properties[pm.PROPERTY_RETRY_TOPIC] == "TopicR"  # still the first topic
    assert retry2.properties[pm.PROPERTY_ORIGIN_MESSAGE_ID] == original.offset_msg_id
    assert retry2.properties[pm.PROPERTY_DELAY_TIME_LEVEL] == "4"  # the send-back level, not retry1's 3

    # third failure: reconsumeTimes 2 >= max 2 -> %DLQ%cg at once
    assert (await _send_back(c, retry2, "cg", max_times=2)).code == ResponseCode.SUCCESS
    dlq_topic = broker.topics.get("%DLQ%cg")
    assert dlq_topic is not None and dlq_topic.read_queue_nums == 1 and dlq_topic.perm == 6
    dead = (await _pull_one(c, "%DLQ%cg", 0))[0]
    assert dead.body == b"payload" and dead.reconsume_times == 3
    # Java consumerSendMsgBack: msgExt.setDelayTimeLevel(0) -> the DLQ copy carries DELAY=0
    assert dead.properties[pm.PROPERTY_DELAY_TIME_LEVEL] == "0"


async def test_broker_send_back_default_max_is_sixteen_and_negative_level_dead_letters(env) -> None:
    broker, clock, c = env
    await send(c, "TopicR2", b"p")
    msg = (await _pull_one(c, "TopicR2", 0))[0]
    assert (await _send_back(c, msg, "cg", delay_level=-1)).code == ResponseCode.SUCCESS
    assert [m.body for m in await _pull_one(c, "%DLQ%cg", 0)] == [b"p"]
    # an explicit level is honoured: level 1 = 1 s
    assert (await _send_back(c, msg, "cg", delay_level=1)).code == ResponseCode.SUCCESS
    assert broker.store.get_max_offset("SCHEDULE_TOPIC_XXXX", 0) == 1
    clock.advance(1.0)
    await wait_until(
        lambda: broker.store.get_max_offset("%RETRY%cg", 0) == 1, timeout=5, what="level-1 retry delivered"
    )


async def test_broker_send_back_of_an_unknown_offset_is_a_system_error(env) -> None:
    _, _, c = env
    fake = pm.MessageExt(topic="X", body=b"", commit_log_offset=10**9)
    r = await _send_back(c, fake, "cg")
    assert r.code == ResponseCode.SYSTEM_ERROR and "look message by offset failed" in (r.remark or "")


async def test_broker_client_send_to_retry_topic_past_max_goes_to_dlq(env) -> None:
    broker, _, c = env
    r = await send(c, "%RETRY%cg5", b"again", reconsume_times=3, max_reconsume_times=3, properties={"DELAY": "5"})
    assert r.code == ResponseCode.SUCCESS
    assert broker.store.get_max_offset("SCHEDULE_TOPIC_XXXX", 4) == 1  # 3 > 3 is false (5.x rule): scheduled
    r = await send(c, "%RETRY%cg5", b"dead", reconsume_times=4, max_reconsume_times=3, properties={"DELAY": "5"})
    assert r.code == ResponseCode.SUCCESS
    dead = records(await pull(c, "cg5", "%DLQ%cg5", 0, 0))
    assert [m.body for m in dead] == [b"dead"]
    # 5.x handleRetryAndDLQ puts DELAY=-1 into the request's properties: stored at once, not scheduled
    assert dead[0].properties[pm.PROPERTY_DELAY_TIME_LEVEL] == "-1"
    assert broker.store.get_max_offset("SCHEDULE_TOPIC_XXXX", 4) == 1


async def test_broker_client_send_to_retry_topic_of_a_group_holding_queue_locks_goes_to_dlq(env) -> None:
    broker, clock, c = env
    mq = pm.MessageQueue("TopicOrd", broker.config.broker_name, 0)
    assert broker.locks.try_lock_batch("cgo", [mq], "client-1", clock.now_ms()) == {mq}
    # reconsume 1 is far below the max, but the group is consuming orderly (5.x): DLQ at once
    r = await send(c, "%RETRY%cgo", b"ordered", reconsume_times=1, max_reconsume_times=16, properties={"DELAY": "4"})
    assert r.code == ResponseCode.SUCCESS
    dead = records(await pull(c, "cgo", "%DLQ%cgo", 0, 0))
    assert [m.body for m in dead] == [b"ordered"] and dead[0].properties[pm.PROPERTY_DELAY_TIME_LEVEL] == "-1"
    assert broker.store.get_max_offset("SCHEDULE_TOPIC_XXXX", 3) == 0
    # once every lock of the group expired (60 s without renewal) the normal rule applies again
    clock.advance(61.0)
    r = await send(c, "%RETRY%cgo", b"retried", reconsume_times=1, max_reconsume_times=16, properties={"DELAY": "4"})
    assert r.code == ResponseCode.SUCCESS
    assert broker.store.get_max_offset("SCHEDULE_TOPIC_XXXX", 3) == 1
    assert broker.store.get_max_offset("%DLQ%cgo", 0) == 1


async def test_broker_delayed_send_is_delivered_when_due(env) -> None:
    broker, clock, c = env
    r = await send(c, "TopicD", b"later", properties={"DELAY": "2"}, queue_id=1)
    assert r.code == ResponseCode.SUCCESS
    assert broker.store.get_max_offset("TopicD", 1) == 0
    clock.advance(5.0)
    await wait_until(lambda: broker.store.get_max_offset("TopicD", 1) == 1, timeout=5, what="delayed message delivered")
    got = records(await pull(c, "g", "TopicD", 1, 0))
    assert got[0].body == b"later" and got[0].properties[pm.PROPERTY_REAL_QUEUE_ID] == "1"
    assert broker.schedule.offsets[2] == 1


async def test_broker_delivered_copy_keeps_delay_and_is_not_rescheduled(env) -> None:
    """Java ``messageTimeup`` stores the copy with the schedule record's properties string (built
    before ``setWaitStoreMsgOK(false)``/``clearProperty(DELAY)``): ``DELAY``, the producer's
    ``WAIT`` and ``REAL_TOPIC``/``REAL_QID`` stay. The delivery put must not redirect it again."""
    broker, clock, c = env
    r = await send(c, "TopicKeep", b"once", tags="tg", properties={"DELAY": "99", "KEYS": "k"}, queue_id=2)
    assert r.code == ResponseCode.SUCCESS
    last = len(broker.delay_levels)  # level above the table: clamped to the last one (2h)
    assert broker.store.get_max_offset("SCHEDULE_TOPIC_XXXX", last - 1) == 1
    clock.advance(broker.delay_levels[-1] / 1000.0)
    await wait_until(
        lambda: broker.store.get_max_offset("TopicKeep", 2) == 1, timeout=5, what="delayed message delivered"
    )
    # more schedule ticks, far in the future: still one schedule record, one delivered copy
    for _ in range(3):
        broker.schedule.deliver_due(clock.now_ms() + 10 * broker.delay_levels[-1])
    assert broker.store.get_max_offset("SCHEDULE_TOPIC_XXXX", last - 1) == 1
    assert broker.store.get_max_offset("TopicKeep", 2) == 1
    got = records(await pull(c, "g", "TopicKeep", 2, 0))
    assert [m.body for m in got] == [b"once"] and got[0].topic == "TopicKeep" and got[0].tags == "tg"
    props = got[0].properties
    assert props[pm.PROPERTY_DELAY_TIME_LEVEL] == str(last)
    assert props[pm.PROPERTY_WAIT_STORE_MSG_OK] == "true"
    assert props[pm.PROPERTY_REAL_TOPIC] == "TopicKeep" and props[pm.PROPERTY_REAL_QUEUE_ID] == "2"
    assert props["KEYS"] == "k"
    # the stored record of the copy matches what the pull returned (DELAY on disk, too)
    on_disk = broker.store.look_message_by_offset(got[0].commit_log_offset)
    assert on_disk is not None and on_disk.properties[pm.PROPERTY_DELAY_TIME_LEVEL] == str(last)
