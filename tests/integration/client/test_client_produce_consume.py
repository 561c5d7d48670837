"""Producer → broker → PushConsumer over real TCP: content, batches, delay, tags, admin."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

import pytest

from rocketpipe import (
    Admin,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    Message,
    MessageExt,
    MessageQueue,
    Producer,
    PullStatus,
    PushConsumer,
    SendStatus,
)
from rocketpipe.errors import InvalidArgumentError
from rocketpipe.protocol.message import decode_records
from rocketpipe.testing.cluster import LocalCluster
from waiting import wait_until

OK = ConsumeConcurrentlyStatus.CONSUME_SUCCESS


def collecting_consumer(
    c: LocalCluster, group: str, topic: str, expression: str = "*", **kw: object
) -> tuple[PushConsumer, list[MessageExt]]:
    got: list[MessageExt] = []
    consumer = PushConsumer(
        group, namesrv_addr=c.namesrv_addr, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, **kw
    )  # type: ignore[arg-type]
    consumer.subscribe(topic, expression)

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        got.extend(msgs)
        return OK

    consumer.register_message_listener(listener)
    return consumer, got


async def test_send_and_receive_with_tags_keys_properties(cluster: LocalCluster) -> None:
    async with Admin(cluster.namesrv_addr) as admin:
        await admin.create_topic("Orders", 4)
    sent = {}
    async with Producer("pg", namesrv_addr=cluster.namesrv_addr) as p:
        for i in range(20):
            msg = Message.build(
                "Orders", f"order-{i}", tags=f"T{i % 2}", keys=[f"k{i}", "shared"], properties={"idx": str(i)}
            )
            r = await p.send(msg)
            assert r.send_status is SendStatus.SEND_OK
            assert r.msg_id == msg.unique_key and r.offset_msg_id
            assert r.message_queue.topic == "Orders"
            sent[r.msg_id] = i
        big = Message.build("Orders", b"z" * 10_000, tags="BIG")
        r_big = await p.send(big)
        sent[r_big.msg_id] = -1
    queues_used = set(sent)
    assert len(queues_used) == 21

    consumer, got = collecting_consumer(cluster, "cg-content", "Orders")
    async with consumer:
        await wait_until(lambda: len({m.msg_id for m in got}) >= 21, timeout=20, what="all messages")
        assert len(consumer.assigned_queues()) == 5  # 4 queues + the retry queue
    by_id = {m.msg_id: m for m in got}
    assert set(by_id) == set(sent)
    for msg_id, i in sent.items():
        m = by_id[msg_id]
        assert m.topic == "Orders"
        if i == -1:
            assert m.body == b"z" * 10_000 and m.tags == "BIG"  # decompressed transparently
            assert m.sys_flag & 0x1 == 0
            continue
        assert m.body == f"order-{i}".encode()
        assert m.tags == f"T{i % 2}"
        assert m.keys == f"k{i} shared"
        assert m.properties["idx"] == str(i)
        assert m.reconsume_times == 0
        assert m.properties["MAX_OFFSET"].isdigit()


async def test_big_body_is_compressed_on_the_wire(cluster: LocalCluster) -> None:
    async with Producer("pg", namesrv_addr=cluster.namesrv_addr) as p, Admin(cluster.namesrv_addr) as admin:
        r = await p.send(Message.build("Zip", b"a" * 5000))
        raw = await admin.pull_raw(r.message_queue, r.queue_offset, 1)
    assert raw.status is PullStatus.FOUND
    (stored,) = decode_records(raw.body, decompress_body=False)
    assert stored.sys_flag & 0x1 == 1
    assert len(stored.body) < 200


async def test_batch_send(cluster: LocalCluster) -> None:
    msgs = [Message.build("Batch", f"b{i}", tags="B", properties={"n": str(i)}) for i in range(10)]
    async with Producer("pg", namesrv_addr=cluster.namesrv_addr) as p:
        r = await p.send_batch(msgs)
    assert r.send_status is SendStatus.SEND_OK
    ids = r.msg_id.split(",")
    assert ids == [m.unique_key for m in msgs] and len(set(ids)) == 10
    assert len(r.offset_msg_id.split(",")) == 10
    async with Admin(cluster.namesrv_addr) as admin:
        raw = await admin.pull_raw(r.message_queue, r.queue_offset, 32)
    stored = decode_records(raw.body)
    assert [m.body for m in stored] == [f"b{i}".encode() for i in range(10)]
    assert [m.queue_offset for m in stored] == list(range(r.queue_offset, r.queue_offset + 10))
    assert [m.msg_id for m in stored] == ids  # per-message UNIQ_KEY survives


async def test_delay_level(cluster: LocalCluster) -> None:
    consumer, got = collecting_consumer(cluster, "cg-delay", "Delayed")
    async with Producer("pg", namesrv_addr=cluster.namesrv_addr) as p:
        await p.send(Message.build("Delayed", b"warmup"))  # creates the topic
        async with consumer:
            await wait_until(lambda: len(got) == 1, timeout=20, what="warm-up message")
            t0 = time.monotonic()
            r = await p.send(Message.build("Delayed", b"later", delay_time_level=2))
            assert r.send_status is SendStatus.SEND_OK
            await wait_until(lambda: len(got) == 2, timeout=20, what="delayed message")
            elapsed = time.monotonic() - t0
    assert got[1].body == b"later"
    assert got[1].topic == "Delayed"
    assert elapsed >= 0.9  # level 2 = 1 s in this cluster


async def test_tag_filter(cluster: LocalCluster, caught_up: Callable[..., Awaitable[bool]]) -> None:
    async with Admin(cluster.namesrv_addr) as admin:
        await admin.create_topic("Tagged", 4)
    async with Producer("pg", namesrv_addr=cluster.namesrv_addr) as p:
        for i in range(12):
            await p.send(Message.build("Tagged", f"m{i}", tags=["TagA", "TagB", "TagC"][i % 3]))
        await p.send(Message.build("Tagged", b"untagged"))
        for i in range(12, 16):  # round robin: the last message of every queue matches
            await p.send(Message.build("Tagged", f"m{i}", tags="TagC"))
    consumer, got = collecting_consumer(cluster, "cg-tags", "Tagged", "TagA || TagC")
    async with consumer:
        await wait_until(lambda: caught_up(consumer, "Tagged"), timeout=20, what="every queue consumed")
    assert sorted(m.body for m in got) == sorted(f"m{i}".encode() for i in range(16) if i >= 12 or i % 3 != 1)
    assert {m.tags for m in got} == {"TagA", "TagC"}


async def test_invalid_messages_are_refused_before_sending(cluster: LocalCluster) -> None:
    async with Producer("pg", namesrv_addr=cluster.namesrv_addr) as p:
        for bad in (
            Message("Bad Topic", b"x"),
            Message("T", b""),
            Message("T", b"x" * (4 * 1024 * 1024 + 1)),
            Message("SCHEDULE_TOPIC_XXXX", b"x"),
        ):
            try:
                await p.send(bad)
            except InvalidArgumentError:
                continue
            raise AssertionError(f"{bad.topic!r} / {len(bad.body)} bytes was accepted")


async def test_admin_offsets_and_queues(cluster: LocalCluster) -> None:
    async with Admin(cluster.namesrv_addr) as admin, Producer("pg", namesrv_addr=cluster.namesrv_addr) as p:
        await admin.create_topic("Meta", 2)
        before = int(time.time() * 1000) - 1
        results = [await p.send(Message.build("Meta", f"x{i}")) for i in range(6)]
        queues = await admin.topic_queues("Meta")
        assert [(q.topic, q.queue_id) for q in queues] == [("Meta", 0), ("Meta", 1)]
        total = 0
        for q in queues:
            mx, mn = await admin.max_offset(q), await admin.min_offset(q)
            assert mn == 0
            total += mx
            assert await admin.search_offset(q, before) == 0
            raw = await admin.pull_raw(q, 0, 32)
            assert raw.status is PullStatus.FOUND and raw.next_begin_offset == mx
            assert len(decode_records(raw.body)) == mx
            empty = await admin.pull_raw(q, mx, 32)
            assert empty.status is not PullStatus.FOUND and empty.body == b""
        assert total == 6
        route = await admin.topic_route("Meta")
        assert route.queue_datas[0].read_queue_nums == 2
        assert {r.message_queue for r in results} <= set(queues)


async def test_send_with_selector_or_queue_goes_to_that_queue(cluster: LocalCluster) -> None:
    """``send(msg, selector=select_by_hash, arg=order_id)`` keeps each order on one queue (Java's sendSelectImpl)."""
    from rocketpipe.client import select_by_hash

    async with Admin(cluster.namesrv_addr) as admin:
        await admin.create_topic("Sel", 4)
        queues = await admin.topic_queues("Sel")
    async with Producer("pg-sel", namesrv_addr=cluster.namesrv_addr) as p:
        placed: dict[str, set[MessageQueue]] = {}
        for step in range(5):
            for order in ("o1", "o2", "o3", "o4", "o5"):
                r = await p.send(Message.build("Sel", f"{order}:{step}"), selector=select_by_hash, arg=order)
                placed.setdefault(order, set()).add(r.message_queue)
        assert all(len(qs) == 1 for qs in placed.values())
        assert {next(iter(qs)) for qs in placed.values()} == {
            select_by_hash(queues, Message.build("Sel", b""), o) for o in placed
        }
        q2 = next(q for q in queues if q.queue_id == 2)
        r = await p.send(Message.build("Sel", b"pinned"), queue=q2)
        assert r.message_queue == q2
        with pytest.raises(InvalidArgumentError, match="not a queue of the message's topic"):
            await p.send(Message.build("Other", b"x"), queue=q2)
        with pytest.raises(InvalidArgumentError, match="either queue= or selector="):
            await p.send(Message.build("Sel", b"x"), queue=q2, selector=select_by_hash, arg="a")
        with pytest.raises(InvalidArgumentError, match="selector raised ZeroDivisionError"):
            await p.send(Message.build("Sel", b"x"), selector=lambda qs, m, a: qs[1 // 0])
        with pytest.raises(InvalidArgumentError, match="selector returned None"):
            await p.send(Message.build("Sel", b"x"), selector=lambda qs, m, a: None)  # type: ignore[arg-type,return-value]
        raw = await admin_pull_all(cluster, q2)
        assert b"pinned" in raw


async def admin_pull_all(cluster: LocalCluster, mq: MessageQueue) -> list[bytes]:
    async with Admin(cluster.namesrv_addr) as admin:
        got = await admin.pull_raw(mq, 0, 64)
        return [m.body for m in decode_records(got.body)]


async def test_send_batch_to_one_queue(cluster: LocalCluster) -> None:
    """``send_batch(msgs, queue=mq)`` stores the whole batch on ``mq`` (Java's send(Collection, MessageQueue))."""
    async with Admin(cluster.namesrv_addr) as admin:
        await admin.create_topic("SelB", 4)
        q3 = next(q for q in await admin.topic_queues("SelB") if q.queue_id == 3)
    async with Producer("pg-selb", namesrv_addr=cluster.namesrv_addr) as p:
        r = await p.send_batch([Message.build("SelB", f"b{i}") for i in range(5)], queue=q3)
        assert r.message_queue == q3 and r.queue_offset == 0
        with pytest.raises(InvalidArgumentError, match="not a queue of the batch's topic"):
            await p.send_batch([Message.build("Other", b"x")], queue=q3)
    assert await admin_pull_all(cluster, q3) == [f"b{i}".encode() for i in range(5)]
