"""The push consumer's POP mode (``client_rebalance=False``) against a broker.

Against Apache 5.3.3 (the authority) and the embedded broker: ``Admin.set_message_request_mode``
puts the group in POP mode (SET_MESSAGE_REQUEST_MODE), the consumer gets its queues from the
broker (QUERY_ASSIGNMENT: one POP assignment per broker with queue id −1, shared by the whole
group) and consumes with POP_MESSAGE / ACK_MESSAGE / CHANGE_MESSAGE_INVISIBLETIME. Against
Apache 4.9.7, which has neither command: the admin call raises
:class:`RequestCodeNotSupportedError` and the consumer falls back to client-side rebalancing
and PULL (``RebalanceImpl.tryQueryAssignment`` of the Java client 5.0–5.3.1).
"""

from __future__ import annotations

import pytest
from interop_support import Target, create_topic, unique

from rocketpipe import (
    Admin,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    Message,
    MessageExt,
    MessageQueue,
    Producer,
    PushConsumer,
    SendStatus,
)
from rocketpipe.client.consumer.assignment import MessageRequestMode
from rocketpipe.errors import RequestCodeNotSupportedError
from waiting import wait_until

OK = ConsumeConcurrentlyStatus.CONSUME_SUCCESS
LATER = ConsumeConcurrentlyStatus.RECONSUME_LATER


def has_pop(t: Target) -> bool:
    """Brokers with POP + QUERY_ASSIGNMENT: Apache 5.x and the embedded one."""
    return t.kind != "apache-4"


async def _topic_with_pop_group(t: Target, topic: str, group: str, queues: int) -> None:
    """Create ``topic``; put ``group`` in POP mode (or check that a 4.x broker refuses it)."""
    async with Admin(t.namesrv_addr) as admin:
        await create_topic(admin, topic, queues)
        if has_pop(t):
            addrs = await admin.set_message_request_mode(topic, group, MessageRequestMode.POP)
            assert addrs == [t.broker_addr]
        else:
            with pytest.raises(RequestCodeNotSupportedError):
                await admin.set_message_request_mode(topic, group, "POP")


def pop_consumer(t: Target, group: str, topic: str, **kw: object) -> PushConsumer:
    c = PushConsumer(
        group,
        namesrv_addr=t.namesrv_addr,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        client_rebalance=False,
        **kw,  # type: ignore[arg-type]
    )
    c.subscribe(topic, "*")
    return c


def assert_mode(t: Target, c: PushConsumer, topic: str, queues: int) -> None:
    """POP: one shared assignment (queue id −1); 4.x fallback: real queues pulled."""
    mine = [mq for mq in c.assigned_queues() if mq.topic == topic]
    if has_pop(t):
        assert c.pop_queues() == [MessageQueue(topic, t.broker_name, -1)]
        assert mine == [MessageQueue(topic, t.broker_name, -1)]
    else:
        assert c.pop_queues() == []
        assert {mq.queue_id for mq in mine} <= set(range(queues)) and mine


async def test_pop_push_consumes_all_messages(target: Target) -> None:
    """POP mode: every message consumed exactly once, with its content and a receipt handle."""
    topic, group = unique("PopPush"), unique("cg")
    await _topic_with_pop_group(target, topic, group, 2)
    got: list[MessageExt] = []

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        got.extend(msgs)
        return OK

    consumer = pop_consumer(target, group, topic)
    consumer.register_message_listener(listener)
    sent: dict[str, int] = {}
    async with consumer:
        await wait_until(
            lambda: any(mq.topic == topic for mq in consumer.assigned_queues()), timeout=30, what="an assignment"
        )
        assert_mode(target, consumer, topic, 2)
        async with Producer(unique("pg"), namesrv_addr=target.namesrv_addr) as p:
            for i in range(24):
                r = await p.send(
                    Message.build(topic, f"pop-{i}", tags=f"T{i % 3}", keys=f"k{i}", properties={"i": str(i)})
                )
                assert r.send_status is SendStatus.SEND_OK
                sent[r.msg_id] = i
        await wait_until(lambda: {m.msg_id for m in got} >= set(sent), timeout=60, what="all messages")
        assert_mode(target, consumer, topic, 2)
        st = consumer.running_info().status_table[topic]  # ConsumerStatsManager, either mode
        assert st["pullTPS"] > 0 and st["consumeOKTPS"] > 0 and st["consumeFailedMsgs"] == 0
    assert sorted(m.msg_id for m in got) == sorted(sent)  # exactly once
    for m in got:
        i = sent[m.msg_id]
        assert m.topic == topic
        assert (
            m.body == f"pop-{i}".encode()
            and m.tags == f"T{i % 3}"
            and m.keys == f"k{i}"
            and m.properties["i"] == str(i)
        )
        assert m.reconsume_times == 0
        assert ("POP_CK" in m.properties) is has_pop(target)


async def test_pop_push_reconsume_later_and_ack(target: Target) -> None:
    """RECONSUME_LATER → back with reconsume_times + 1 (POP: after the 10 s of level 0);
    acknowledged messages are not delivered again (with a 5 s invisible time they would have
    come back before the 10 s retry)."""
    topic, group = unique("PopRetry"), unique("cg")
    await _topic_with_pop_group(target, topic, group, 1)
    seen: list[MessageExt] = []

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        seen.extend(msgs)
        return LATER if any(m.body == b"fail-once" and m.reconsume_times == 0 for m in msgs) else OK

    consumer = pop_consumer(target, group, topic, pop_invisible_time=5.0)
    consumer.register_message_listener(listener)
    async with consumer:
        await wait_until(
            lambda: any(mq.topic == topic for mq in consumer.assigned_queues()), timeout=30, what="an assignment"
        )
        async with Producer(unique("pg"), namesrv_addr=target.namesrv_addr) as p:
            failing = await p.send(Message.build(topic, b"fail-once", tags="F", keys="fk", properties={"x": "1"}))
            oks = [await p.send(Message.build(topic, f"ok-{i}")) for i in range(5)]
        await wait_until(
            lambda: any(m.msg_id == failing.msg_id and m.reconsume_times >= 1 for m in seen),
            timeout=90,
            what="the redelivery",
        )
        assert_mode(target, consumer, topic, 1)
    first = [m for m in seen if m.msg_id == failing.msg_id]
    assert [m.reconsume_times for m in first] == [0, 1]
    again = first[1]
    assert again.body == b"fail-once" and again.topic == topic
    assert again.tags == "F" and again.keys == "fk" and again.properties["x"] == "1"
    ok_ids = [m.msg_id for m in seen if m.msg_id != failing.msg_id]
    assert sorted(ok_ids) == sorted(r.msg_id for r in oks)  # each acked message exactly once


async def test_pop_push_consumers_share_one_queue(target: Target) -> None:
    """Two POP push consumers of one group share a topic with one queue: both consume, no
    message twice. (4.x fallback: client rebalancing gives the queue to one of them.)"""
    topic, group = unique("PopShare"), unique("cg")
    await _topic_with_pop_group(target, topic, group, 1)
    got: dict[str, list[MessageExt]] = {"a": [], "b": []}

    def listener_for(name: str):  # type: ignore[no-untyped-def]
        def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
            got[name].extend(msgs)
            return OK

        return listener

    a = pop_consumer(target, group, topic, pop_batch_nums=2)
    b = pop_consumer(target, group, topic, pop_batch_nums=2)
    a.register_message_listener(listener_for("a"))
    b.register_message_listener(listener_for("b"))
    sent: set[str] = set()
    async with a, b:

        async def settled() -> bool:
            await a.rebalance()
            await b.rebalance()
            held = [mq for c in (a, b) for mq in c.assigned_queues() if mq.topic == topic]
            return len(held) == (2 if has_pop(target) else 1)

        await wait_until(settled, timeout=60, interval=0.5, what="both consumers assigned")
        async with Producer(unique("pg"), namesrv_addr=target.namesrv_addr) as p:
            for i in range(40):
                sent.add((await p.send(Message.build(topic, f"s{i}"))).msg_id)
        await wait_until(lambda: {m.msg_id for ms in got.values() for m in ms} >= sent, timeout=60, what="all messages")
        if has_pop(target):
            for c in (a, b):
                assert c.pop_queues() == [MessageQueue(topic, target.broker_name, -1)]
    all_ids = [m.msg_id for ms in got.values() for m in ms]
    assert sorted(all_ids) == sorted(sent)  # each message once, by one of them
    if has_pop(target):
        assert got["a"] and got["b"], {k: len(v) for k, v in got.items()}
    else:
        assert sorted(bool(v) for v in got.values()) == [False, True]


async def test_pop_push_switches_mode_at_runtime(target: Target) -> None:
    """POP → PULL → POP for a running consumer (``updateMessageQueueAssignment``): PULL mode
    pulls the real queues and also subscribes ``%RETRY%<group>_<topic>``; back in POP mode the
    broker pops from where the pulls committed (Apache: ``max(pop buffer offset, consumer
    offset)``), so no message is delivered twice as a first delivery."""
    topic, group = unique("PopSwitch"), unique("cg")
    pop_retry = f"%RETRY%{group}_{topic}"
    await _topic_with_pop_group(target, topic, group, 2)
    got: list[MessageExt] = []

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        got.extend(msgs)
        return OK

    consumer = pop_consumer(target, group, topic, pop_invisible_time=5.0)
    consumer.register_message_listener(listener)
    pulled = [MessageQueue(topic, target.broker_name, q) for q in (0, 1)]
    sent: list[str] = []
    async with (
        Admin(target.namesrv_addr) as admin,
        consumer,
        Producer(unique("pg"), namesrv_addr=target.namesrv_addr) as p,
    ):

        async def send(n: int) -> None:
            for i in range(n):
                sent.append((await p.send(Message.build(topic, f"m{len(sent)}-{i}"))).msg_id)

        def all_consumed() -> bool:
            return {m.msg_id for m in got} >= set(sent)

        async def switch(mode: str) -> None:
            if has_pop(target):
                await admin.set_message_request_mode(topic, group, mode)
            else:
                with pytest.raises(RequestCodeNotSupportedError):
                    await admin.set_message_request_mode(topic, group, mode)
            await consumer.rebalance()

        def mine() -> list[MessageQueue]:
            return [mq for mq in consumer.assigned_queues() if mq.topic == topic]

        await wait_until(lambda: bool(mine()), timeout=30, what="an assignment")
        assert mine() == ([MessageQueue(topic, target.broker_name, -1)] if has_pop(target) else pulled)
        await send(6)
        await wait_until(all_consumed, timeout=30, what="phase 1 consumed")

        await switch("PULL")
        assert consumer.pop_queues() == [] and mine() == pulled
        assert (pop_retry in consumer.subscribed_topics()) is has_pop(target)
        await send(6)
        await wait_until(all_consumed, timeout=30, what="phase 2 (PULL) consumed")
        assert all("POP_CK" not in m.properties for m in got if m.msg_id in sent[6:12])

        await switch("POP")
        assert mine() == ([MessageQueue(topic, target.broker_name, -1)] if has_pop(target) else pulled)
        assert pop_retry not in consumer.subscribed_topics()
        await send(6)
        await wait_until(all_consumed, timeout=30, what="phase 3 consumed")
    first_deliveries = sorted(m.msg_id for m in got if m.reconsume_times == 0)
    assert first_deliveries == sorted(sent)  # no message delivered twice as a first delivery
