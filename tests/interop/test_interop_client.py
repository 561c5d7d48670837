"""rocketpipe's client against a broker: embedded (rocketpipe), Apache 5.x and Apache 4.x.

Every test runs three times (``target`` fixture). Against Apache, routes come from the Apache
name server and messages are stored by the Apache broker, so each assertion here is a claim
about wire compatibility of our client with the real thing.
"""

from __future__ import annotations

import time

from interop_support import Target, create_topic, unique

from rocketpipe import (
    Admin,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    Message,
    MessageExt,
    Producer,
    PullStatus,
    PushConsumer,
    SendStatus,
)
from rocketpipe.protocol.message import decode_records
from waiting import wait_until

OK = ConsumeConcurrentlyStatus.CONSUME_SUCCESS
LATER = ConsumeConcurrentlyStatus.RECONSUME_LATER


def collecting_consumer(
    t: Target, group: str, topic: str, expression: str = "*"
) -> tuple[PushConsumer, list[MessageExt]]:
    got: list[MessageExt] = []
    consumer = PushConsumer(
        group, namesrv_addr=t.namesrv_addr, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    )
    consumer.subscribe(topic, expression)

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        got.extend(msgs)
        return OK

    consumer.register_message_listener(listener)
    return consumer, got


async def test_route_send_and_consume(target: Target) -> None:
    """create_topic, topic_route through the name server, send with tags/keys/properties, consume."""
    topic = unique("Orders")
    async with Admin(target.namesrv_addr) as admin:
        await create_topic(admin, topic, 4)
        route = await admin.topic_route(topic)
        (bd,) = route.broker_datas
        assert bd.broker_name == target.broker_name
        assert bd.broker_addrs[0] == target.broker_addr
        (qd,) = route.queue_datas
        assert (qd.read_queue_nums, qd.write_queue_nums) == (4, 4)
        assert len(await admin.topic_queues(topic)) == 4

    sent: dict[str, int] = {}
    async with Producer(unique("pg"), namesrv_addr=target.namesrv_addr) as p:
        for i in range(20):
            msg = Message.build(
                topic,
                f"order-{i}",
                tags=f"T{i % 2}",
                keys=[f"k{i}", "shared"],
                properties={"idx": str(i), "ünï": "çødé"},
            )
            r = await p.send(msg)
            assert r.send_status is SendStatus.SEND_OK
            assert r.msg_id == msg.unique_key and r.offset_msg_id
            assert r.message_queue.topic == topic and r.message_queue.broker_name == target.broker_name
            sent[r.msg_id] = i
        big = Message.build(topic, b"z" * 10_000, tags="BIG")
        sent[(await p.send(big)).msg_id] = -1

    consumer, got = collecting_consumer(target, unique("cg"), topic)
    async with consumer:
        await wait_until(lambda: len({m.msg_id for m in got}) >= 21, timeout=40, what="all messages")
    by_id = {m.msg_id: m for m in got}
    assert set(by_id) == set(sent)
    for msg_id, i in sent.items():
        m = by_id[msg_id]
        assert m.topic == topic
        if i == -1:
            assert m.body == b"z" * 10_000 and m.tags == "BIG"
            continue
        assert m.body == f"order-{i}".encode()
        assert m.tags == f"T{i % 2}"
        assert m.keys == f"k{i} shared"
        assert m.properties["idx"] == str(i)
        assert m.properties["ünï"] == "çødé"
        assert m.reconsume_times == 0
        assert m.store_host == target.broker_addr


async def test_auto_created_topic_offsets_and_raw_pull(target: Target) -> None:
    """A topic created by the first send (autoCreateTopicEnable); max/min offset; raw pull."""
    topic = unique("Auto")
    async with Producer(unique("pg"), namesrv_addr=target.namesrv_addr) as p:
        first = await p.send(Message.build(topic, b"first"))
        assert first.send_status is SendStatus.SEND_OK
        results = [first] + [await p.send(Message.build(topic, f"m{i}")) for i in range(7)]
    async with Admin(target.namesrv_addr) as admin:
        queues = await admin.topic_queues(topic)
        assert queues
        assert sum([await admin.max_offset(mq) for mq in queues]) == 8
        assert all([await admin.min_offset(mq) == 0 for mq in queues])
        r = results[-1]
        raw = await admin.pull_raw(r.message_queue, r.queue_offset, 1)
        assert raw.status is PullStatus.FOUND
        (stored,) = decode_records(raw.body)
        assert stored.body == b"m6" and stored.msg_id == r.msg_id and stored.offset_msg_id == r.offset_msg_id
        assert stored.queue_offset == r.queue_offset
        # after the newest message: 5.x (and rocketpipe) answer the max offset, 4.9.x the last message's offset
        expected = r.queue_offset if target.kind == "apache-4" else r.queue_offset + 1
        assert await admin.search_offset(r.message_queue, int(time.time() * 1000) + 60_000) == expected


async def test_batch_send(target: Target) -> None:
    topic = unique("Batch")
    msgs = [Message.build(topic, f"b{i}", tags="B", properties={"n": str(i)}) for i in range(10)]
    async with Producer(unique("pg"), namesrv_addr=target.namesrv_addr) as p:
        await p.send(Message.build(topic, b"create"))
        r = await p.send_batch(msgs)
    assert r.send_status is SendStatus.SEND_OK
    ids = r.msg_id.split(",")
    assert ids == [m.unique_key for m in msgs]
    assert len(r.offset_msg_id.split(",")) == 10
    async with Admin(target.namesrv_addr) as admin:
        raw = await admin.pull_raw(r.message_queue, r.queue_offset, 32)
    stored = decode_records(raw.body)
    assert [m.body for m in stored] == [f"b{i}".encode() for i in range(10)]
    assert [m.queue_offset for m in stored] == list(range(r.queue_offset, r.queue_offset + 10))
    assert [m.msg_id for m in stored] == ids
    assert [m.properties["n"] for m in stored] == [str(i) for i in range(10)]
    assert {m.tags for m in stored} == {"B"}


async def test_oneway_and_delay_level(target: Target) -> None:
    topic = unique("Delayed")
    consumer, got = collecting_consumer(target, unique("cg"), topic)
    async with Producer(unique("pg"), namesrv_addr=target.namesrv_addr) as p:
        await p.send(Message.build(topic, b"warmup"))
        async with consumer:
            await wait_until(lambda: len(got) == 1, timeout=40, what="warm-up message")
            await p.send_oneway(Message.build(topic, b"oneway"))
            await wait_until(lambda: len(got) == 2, timeout=20, what="oneway message")
            t0 = time.monotonic()
            r = await p.send(Message.build(topic, b"later", delay_time_level=2, properties={"p": "v"}))
            assert r.send_status is SendStatus.SEND_OK
            await wait_until(lambda: len(got) == 3, timeout=30, what="delayed message")
            elapsed = time.monotonic() - t0
    assert [m.body for m in got] == [b"warmup", b"oneway", b"later"]
    later = got[2]
    assert later.topic == topic and later.properties["p"] == "v"
    assert later.msg_id == r.msg_id
    assert elapsed >= 0.9  # level 2 = 1 s on every target


async def test_tag_filter(target: Target) -> None:
    topic = unique("Tagged")
    async with Admin(target.namesrv_addr) as admin:
        await create_topic(admin, topic, 2)
    async with Producer(unique("pg"), namesrv_addr=target.namesrv_addr) as p:
        for i in range(12):
            await p.send(Message.build(topic, f"m{i}", tags=["TagA", "TagB", "TagC"][i % 3]))
        await p.send(Message.build(topic, b"untagged"))
        await p.send(Message.build(topic, b"last-a", tags="TagA"))
        await p.send(Message.build(topic, b"last-c", tags="TagC"))
    consumer, got = collecting_consumer(target, unique("cg"), topic, "TagA || TagC")
    expected = sorted([f"m{i}".encode() for i in range(12) if i % 3 != 1] + [b"last-a", b"last-c"])
    async with consumer:
        await wait_until(lambda: len(got) >= len(expected), timeout=40, what="filtered messages")
    assert sorted(m.body for m in got) == expected
    assert {m.tags for m in got} == {"TagA", "TagC"}


async def test_redelivery_after_reconsume_later(target: Target) -> None:
    """RECONSUME_LATER → CONSUMER_SEND_MSG_BACK → %RETRY%group → redelivered with reconsume_times 1."""
    topic = unique("Retry")
    group = unique("cg")
    seen: list[MessageExt] = []
    consumer = PushConsumer(
        group, namesrv_addr=target.namesrv_addr, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    )
    consumer.subscribe(topic, "*")

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        seen.extend(msgs)
        return LATER if all(m.reconsume_times == 0 for m in msgs) else OK

    consumer.register_message_listener(listener)
    async with Producer(unique("pg"), namesrv_addr=target.namesrv_addr) as p:
        r = await p.send(Message.build(topic, b"again", tags="R", keys="rk", properties={"x": "1"}))
        async with consumer:
            await wait_until(lambda: any(m.reconsume_times == 1 for m in seen), timeout=60, what="redelivery")
    first, again = seen[0], next(m for m in seen if m.reconsume_times == 1)
    assert first.reconsume_times == 0 and first.body == b"again"
    assert again.body == b"again" and again.msg_id == r.msg_id
    assert again.topic == topic  # the consumer restores the original topic
    assert again.tags == "R" and again.keys == "rk" and again.properties["x"] == "1"
