"""RECALL_MESSAGE (5.3.2+) on the embedded broker: recall handles in timer messages' send
responses, the delete timer message a recall stores, the timer dropping the recalled message
(and never delivering the delete message), Java's refusals; and ``Producer.recall_message``
over a name server. FakeClock-driven except the client test."""

from __future__ import annotations

import uuid
from pathlib import Path

from broker_testkit import send

from rocketpipe.broker import Broker, BrokerConfig
from rocketpipe.client import Message, Producer
from rocketpipe.errors import BrokerError, InvalidArgumentError
from rocketpipe.protocol import message as pm
from rocketpipe.protocol.codes import RequestCode, ResponseCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.protocol.headers.send import RecallMessageRequestHeader
from rocketpipe.protocol.recall import build_recall_handle, decode_recall_handle
from rocketpipe.testing import FakeClock
from rocketpipe.testing.cluster import local_cluster
from rocketpipe.transport import Connection
from waiting import wait_until

TIMER = "rmq_sys_wheel_timer"
T0 = 1_700_000_000_000


def _config(tmp_path: Path, **kw: object) -> BrokerConfig:
    return BrokerConfig(store_dir=tmp_path, mapped_file_size_commit_log=1 << 20, **kw)  # type: ignore[arg-type]


def _read(b: Broker, topic: str, queue_id: int = 0) -> list[pm.MessageExt]:
    res = b.store.get_message(topic, queue_id, 0, 1000)
    return [m for buf in res.buffers for m in pm.decode_records(buf)]


async def _recall(conn: Connection, topic: str, handle: str, group: str | None = "pg") -> RemotingCommand:
    h = RecallMessageRequestHeader(producer_group=group, topic=topic, recall_handle=handle)
    return await conn.request(RemotingCommand.request(RequestCode.RECALL_MESSAGE, h.to_ext_fields()), 5)


async def _send_timer(conn: Connection, topic: str, body: bytes, delay_ms: int) -> tuple[str, str]:
    uniq = uuid.uuid4().hex.upper()
    props = {pm.PROPERTY_TIMER_DELAY_MS: str(delay_ms), pm.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: uniq}
    r = await send(conn, topic, body, properties=props)
    assert r.code == ResponseCode.SUCCESS, r.remark
    return uniq, r.ext_fields["recallHandle"]


async def test_recalled_timer_message_is_never_delivered(tmp_path: Path) -> None:
    clock = FakeClock(T0 + 300)
    async with Broker(_config(tmp_path, recall_message_enable=True), clock=clock) as b:
        conn = await Connection.connect(b.address)
        try:
            a_id, a_handle = await _send_timer(conn, "TopicR", b"recalled", 5000)
            b_id, _ = await _send_timer(conn, "TopicR", b"kept", 5000)
            # the handle: v1, real topic, this broker, TIMER_OUT_MS + 1, UNIQ_KEY (attachRecallHandle)
            assert decode_recall_handle(a_handle) == decode_recall_handle(
                build_recall_handle("TopicR", b.config.broker_name, str(T0 + 5000 + 1), a_id)
            )
            r = await _recall(conn, "TopicR", a_handle)
            assert (r.code, r.ext_fields["msgId"], r.ext_fields["MSG_REGION"]) == (
                ResponseCode.SUCCESS,
                a_id,
                b.config.region_id,
            )
            marker = _read(b, TIMER)[-1]
            assert marker.body == b"0" and marker.tags == "_RECALL_TAG_"
            assert marker.properties[pm.PROPERTY_TIMER_DEL_UNIQKEY] == f"TopicR+{a_id}"
            assert marker.properties[pm.PROPERTY_TIMER_OUT_MS] == str(T0 + 5000)  # the original's step
            assert marker.properties[pm.PROPERTY_PRODUCER_GROUP] == "pg"
            clock.set(T0 + 6_000)
            await wait_until(lambda: b.timer.recalled + b.timer.delivered == 2, timeout=5, what="the step processed")
            assert [(m.body, m.msg_id) for m in _read(b, "TopicR")] == [(b"kept", b_id)]
            assert (b.timer.recalled, b.timer.delivered, b.timer.waiting) == (1, 1, 0)
        finally:
            await conn.close()


async def test_recall_refusals_are_javas(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    async with Broker(_config(tmp_path), clock=clock) as b:
        conn = await Connection.connect(b.address)
        try:
            uniq, handle = await _send_timer(conn, "TopicR", b"x", 10_000)
            r = await _recall(conn, "TopicR", handle)
            assert (r.code, r.remark) == (ResponseCode.NO_PERMISSION, "recall failed, operation is forbidden")
            # mqadmin updateBrokerConfig -k recallMessageEnable -v true
            update = RemotingCommand.request(RequestCode.UPDATE_BROKER_CONFIG, {}, b"recallMessageEnable=true\n")
            assert (await conn.request(update, 5)).code == ResponseCode.SUCCESS
            assert b.config.recall_message_enable
            cases = [
                ("NoSuchTopic", handle, ResponseCode.TOPIC_NOT_EXIST, "recall failed, the topic[NoSuchTopic] not exist"),
                ("TopicR", "not base64 !", ResponseCode.ILLEGAL_OPERATION, "recall handle is invalid"),
                ("TopicR", build_recall_handle("Other", "broker-a", "1", uniq), ResponseCode.ILLEGAL_OPERATION,
                 "recall failed, topic not match"),
                ("TopicR", build_recall_handle("TopicR", "broker-zz", str(T0 + 5001), uniq),
                 ResponseCode.ILLEGAL_OPERATION, "recall failed, broker service not available"),
            ]  # fmt: skip
            await send(conn, "Other", b"y")
            for topic, h, code, remark in cases:
                r = await _recall(conn, topic, h)
                assert (r.code, r.remark) == (code, remark), (topic, h)
            clock.set(T0 + 10_500)  # past the handle's time (TIMER_OUT_MS + 1)
            r = await _recall(conn, "TopicR", handle)
            assert (r.code, r.remark) == (ResponseCode.ILLEGAL_OPERATION, "recall failed, timestamp invalid")
            # no handle for a message that is not a timer message, nor for a batch
            plain = await send(conn, "TopicR", b"now")
            assert "recallHandle" not in plain.ext_fields
        finally:
            await conn.close()


async def test_producer_recall_message(tmp_path: Path) -> None:
    async with local_cluster(tmp_path, recall_message_enable=True) as cluster:
        broker = cluster.brokers[0]
        async with Producer("recall-producer", namesrv_addr=cluster.namesrv_addr) as p:
            kept = await p.send(Message.build("TopicR", b"kept", delay_time_ms=2000))
            gone = await p.send(Message.build("TopicR", b"gone", delay_time_ms=2000))
            assert gone.recall_handle and kept.recall_handle
            assert await p.recall_message("TopicR", gone.recall_handle) == gone.msg_id
            for bad, error in (("%RETRY%g", "topic is not supported"), ("TopicR", "recall handle is invalid")):
                try:
                    await p.recall_message(bad, "x")
                except InvalidArgumentError as exc:
                    assert error in str(exc)
                else:
                    raise AssertionError(f"recall on {bad} accepted")
            try:
                await p.recall_message("TopicR", gone.recall_handle.replace("=", ""))  # padding is optional
            except BrokerError as exc:
                raise AssertionError(f"the second recall of an unpadded handle was refused: {exc}") from exc
        await wait_until(lambda: broker.timer.recalled >= 1 and broker.timer.waiting == 0, timeout=10, what="step")
        queues = {kept.message_queue.queue_id, gone.message_queue.queue_id}
        assert [m.msg_id for q in sorted(queues) for m in _read(broker, "TopicR", q)] == [kept.msg_id]
