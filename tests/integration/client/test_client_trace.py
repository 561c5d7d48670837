"""Message trace end to end on the embedded broker (real TCP): producers and consumers with
``enable_msg_trace`` write Java's trace records to ``RMQ_SYS_TRACE_TOPIC`` (created with
``trace_topic_enable``), and :meth:`Admin.query_trace` reads them back.

The same against Apache RocketMQ 5.3.3 and with the Java client / ``mqadmin
queryMsgTraceById``: tests/interop/test_interop_client_trace.py, test_interop_java_trace.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rocketpipe import (
    Admin,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    LitePullConsumer,
    LocalTransactionState,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
    TraceType,
    TraceView,
    TransactionProducer,
)
from rocketpipe.client.producer.producer import new_trace_dispatcher
from rocketpipe.client.trace import MessageType, TraceBean, TraceContext, decode_trace_data
from rocketpipe.clock import SYSTEM_CLOCK
from rocketpipe.testing.cluster import LocalCluster, local_cluster
from waiting import wait_until

FAST_DELAY_LEVELS = " ".join(["1s"] * 18)
OK = ConsumeConcurrentlyStatus.CONSUME_SUCCESS


@pytest.fixture
async def traced(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    """A cluster whose broker creates RMQ_SYS_TRACE_TOPIC (``traceTopicEnable``)."""
    async with local_cluster(tmp_path / "store", trace_topic_enable=True, message_delay_level=FAST_DELAY_LEVELS) as c:
        yield c


async def traces_of(
    admin: Admin, msg_id: str, want: dict[TraceType, int], topic: str = "RMQ_SYS_TRACE_TOPIC"
) -> list[TraceView]:
    """Wait (20 s at most) until ``msg_id`` has at least ``want[type]`` records of each type."""
    views: list[TraceView] = []

    async def enough() -> bool:
        nonlocal views
        views = await admin.query_trace(msg_id, topic)
        return all(sum(v.trace_type is t for v in views) >= n for t, n in want.items())

    await wait_until(enough, timeout=20, what=f"traces {want} of {msg_id}")
    return views


def only(views: list[TraceView], kind: TraceType) -> list[TraceView]:
    return [v for v in views if v.trace_type is kind]


def push_consumer(c: LocalCluster, group: str, topic: str, listener: object, **kw: object) -> PushConsumer:
    consumer = PushConsumer(
        group,
        namesrv_addr=c.namesrv_addr,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        enable_msg_trace=True,
        **kw,  # type: ignore[arg-type]
    )
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(listener)
    return consumer


async def test_pub_sub_before_sub_after_of_one_message(traced: LocalCluster) -> None:
    c = traced
    topic, got = "TraceT", []

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        got.extend(msgs)
        return OK

    async with Admin(c.namesrv_addr) as admin:
        await admin.create_topic(topic, 2)
        async with Producer("pg-trace", namesrv_addr=c.namesrv_addr, enable_msg_trace=True) as p:
            assert p.trace_dispatcher is not None
            assert p.trace_dispatcher.producer_group.startswith("_INNER_TRACE_PRODUCER-pg-trace-PRODUCE-")
            sent = await p.send(Message.build(topic, b"hello", tags="TagA", keys=["order-1", "k2"]))
        async with push_consumer(c, "cg-trace", topic, listener) as consumer:
            await wait_until(lambda: len(got) == 1, timeout=20, what="message consumed")
            dispatcher = consumer.trace_dispatcher
            assert dispatcher is not None
        assert (dispatcher.sent, dispatcher.dropped, dispatcher.failed) == (1, 0, 0)  # flushed at close, one message

        views = await traces_of(admin, sent.msg_id, {TraceType.Pub: 1, TraceType.SubBefore: 1, TraceType.SubAfter: 1})
        [pub], [before], [after] = (only(views, t) for t in (TraceType.Pub, TraceType.SubBefore, TraceType.SubAfter))
        assert (pub.group_name, pub.topic, pub.tags, pub.keys, pub.status) == (
            "pg-trace",
            topic,
            "TagA",
            "order-1 k2",
            "success",
        )
        assert (pub.offset_msg_id, pub.store_host) == (sent.offset_msg_id, c.broker_addr)
        assert pub.context.region_id == "DefaultRegion" and pub.context.trace_beans[0].body_length == 5
        assert pub.context.trace_beans[0].msg_type is MessageType.Normal_Msg and pub.cost_time >= 0
        assert pub.client_host.startswith("127.0.0.1:")  # the trace message's born host
        assert (before.group_name, before.keys, before.context.trace_beans[0].retry_times) == (
            "cg-trace",
            "order-1 k2",
            0,
        )
        assert before.context.region_id == "DefaultRegion"
        assert (after.group_name, after.status, after.context.context_code) == ("cg-trace", "success", 0)
        assert after.context.request_id == before.context.request_id != ""
        assert after.time_stamp >= before.time_stamp >= pub.time_stamp > 0
        assert await admin.query_trace("no-such-msg-id") == []

        # the trace messages: keyed by msg id and user keys; nothing traced the trace topic itself
        found = await admin.query_message("RMQ_SYS_TRACE_TOPIC", "order-1", 64, 0, 2**63 - 1)
        assert len(found.message_list) == 2
        for m in found.message_list:
            assert sent.msg_id in m.keys.split(" ")  # type: ignore[union-attr]
            assert all(ctx.trace_beans[0].topic in (topic, "") for ctx in decode_trace_data(m.body.decode()))


async def test_failed_listener_then_retry_records_failure_and_retry_times(traced: LocalCluster) -> None:
    c = traced
    topic = "TraceRetryT"
    calls: list[int] = []

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        # a plain function: the trace hook runs in the consumer's listener thread
        calls.append(msgs[0].reconsume_times)
        if msgs[0].reconsume_times == 0:
            raise RuntimeError("first delivery fails")
        return OK

    async with Admin(c.namesrv_addr) as admin:
        await admin.create_topic(topic, 1)
        async with Producer("pg-retry", namesrv_addr=c.namesrv_addr) as p:  # not traced: no Pub
            sent = await p.send(Message.build(topic, b"x", keys="rk"))
        async with push_consumer(c, "cg-retry", topic, listener):
            await wait_until(lambda: calls == [0, 1], timeout=30, what="failed delivery and its retry")
        views = await traces_of(admin, sent.msg_id, {TraceType.SubBefore: 2, TraceType.SubAfter: 2})
    assert only(views, TraceType.Pub) == []
    befores = sorted(only(views, TraceType.SubBefore), key=lambda v: v.time_stamp)
    afters = sorted(only(views, TraceType.SubAfter), key=lambda v: v.time_stamp)
    assert [v.context.trace_beans[0].retry_times for v in befores] == [0, 1]
    assert [(v.status, v.context.context_code) for v in afters] == [("failed", 2), ("success", 0)]  # EXCEPTION, SUCCESS
    assert [a.context.request_id for a in afters] == [b.context.request_id for b in befores]


async def test_customized_trace_topic_and_lite_pull(traced: LocalCluster) -> None:
    c = traced
    topic, trace_topic = "TraceLiteT", "MyTraceTopic"
    async with Admin(c.namesrv_addr) as admin:
        await admin.create_topic(topic, 1)
        await admin.create_topic(trace_topic, 1)
        async with Producer(
            "pg-custom", namesrv_addr=c.namesrv_addr, enable_msg_trace=True, customized_trace_topic=trace_topic
        ) as p:
            sent = await p.send(Message.build(topic, b"lite", tags="L"))
        consumer = LitePullConsumer(
            "lg-trace",
            namesrv_addr=c.namesrv_addr,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            enable_msg_trace=True,
            customized_trace_topic=trace_topic,
        )
        consumer.subscribe(topic, "*")
        polled: list[MessageExt] = []
        async with consumer:
            await wait_until(lambda: _poll_into(consumer, polled), timeout=20, what="the message polled")
        views = await traces_of(admin, sent.msg_id, {TraceType.Pub: 1, TraceType.SubAfter: 1}, topic=trace_topic)
        assert await admin.query_trace(sent.msg_id) == []  # nothing in the default trace topic
    [after] = only(views, TraceType.SubAfter)
    assert (after.group_name, after.status, after.cost_time) == ("lg-trace", "success", 0)
    [pub] = only(views, TraceType.Pub)
    assert (pub.tags, pub.keys) == ("L", "null")  # a message without keys: Java writes null
    assert len(only(views, TraceType.SubBefore)) == 1


async def _poll_into(consumer: LitePullConsumer, out: list[MessageExt]) -> bool:
    out.extend(await consumer.poll(0.2))
    return len(out) >= 1


class _Commit:
    def execute_local_transaction(self, msg: Message, arg: object) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE

    def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE


async def test_transaction_producer_records_half_pub_and_end_transaction(traced: LocalCluster) -> None:
    c = traced
    topic = "TraceTxT"
    async with Admin(c.namesrv_addr) as admin:
        await admin.create_topic(topic, 1)
        async with TransactionProducer(
            "tpg-trace", namesrv_addr=c.namesrv_addr, transaction_listener=_Commit(), enable_msg_trace=True
        ) as p:
            res = await p.send_message_in_transaction(Message.build(topic, b"tx", tags="TT", keys="txk"))
        assert res.local_transaction_state is LocalTransactionState.COMMIT_MESSAGE
        views = await traces_of(admin, res.msg_id, {TraceType.Pub: 1, TraceType.EndTransaction: 1})
    [pub], [end] = only(views, TraceType.Pub), only(views, TraceType.EndTransaction)
    assert pub.context.trace_beans[0].msg_type is MessageType.Trans_Msg_Half and pub.group_name == "tpg-trace"
    b = end.context.trace_beans[0]
    assert (end.group_name, end.topic, end.tags, end.keys, end.store_host) == (
        "tpg-trace",
        topic,
        "TT",
        "txk",
        c.broker_addr,
    )
    assert (b.msg_type, b.transaction_state, b.transaction_id, b.from_transaction_check) == (
        MessageType.Trans_msg_Commit,
        "COMMIT_MESSAGE",
        res.msg_id,
        False,
    )


async def test_dispatcher_drops_when_full_never_blocks_and_flushes_at_close(traced: LocalCluster) -> None:
    c = traced
    async with Producer("pg-host", namesrv_addr=c.namesrv_addr) as host:
        d = new_trace_dispatcher(host.runtime, "pg-host", "PRODUCE", None, SYSTEM_CLOCK)
        assert d.append(_ctx("early")) is False  # not started: dropped, counted
        d.queue_size, d.flush_interval = 5, 3600.0
        await d.start()
        accepted = [d.append(_ctx(f"id{i}")) for i in range(8)]  # no await: the worker cannot drain
        assert accepted == [True] * 5 + [False] * 3
        assert d.dropped == 4
        await d.close()
        assert (d.sent, d.failed) == (1, 0)  # five contexts of one business topic: one trace message
        assert d.append(_ctx("late")) is False and d.dropped == 5
    async with Admin(c.namesrv_addr) as admin:
        views = await traces_of(admin, "id4", {TraceType.Pub: 1})
        assert views[0].group_name == "pg-host"
        found = await admin.query_message("RMQ_SYS_TRACE_TOPIC", "id0", 64, 0, 2**63 - 1)
        [m] = found.message_list
        assert [x.trace_beans[0].msg_id for x in decode_trace_data(m.body.decode())] == [f"id{i}" for i in range(5)]


async def test_trace_failures_never_fail_the_users_send(tmp_path: Path) -> None:
    """No trace topic and no auto-creation: every trace send fails; the user's sends succeed."""
    async with local_cluster(tmp_path / "store", auto_create_topic_enable=False) as c:
        async with Admin(c.namesrv_addr) as admin:
            await admin.create_topic("TraceNoTopicT", 1)
        async with Producer("pg-nt", namesrv_addr=c.namesrv_addr, enable_msg_trace=True) as p:
            results = [await p.send(Message.build("TraceNoTopicT", f"m{i}")) for i in range(3)]
            d = p.trace_dispatcher
        assert d is not None and [r.send_status.name for r in results] == ["SEND_OK"] * 3
        assert (d.sent, d.failed, d.dropped) == (0, 1, 0)


def _ctx(msg_id: str) -> TraceContext:
    return TraceContext(
        TraceType.Pub,
        SYSTEM_CLOCK.now_ms(),
        "DefaultRegion",
        "pg-host",
        trace_beans=[TraceBean(topic="Biz", msg_id=msg_id)],
    )
