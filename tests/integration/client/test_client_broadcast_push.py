"""BROADCASTING PushConsumer over real TCP: every consumer gets every message, offsets live in
a local file (resume after restart), failures are dropped (no send-back), no broker offsets."""

from __future__ import annotations

from pathlib import Path

from rocketpipe import (
    Admin,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
)
from rocketpipe.client.config import ClientConfig
from rocketpipe.client.consumer.listener import MessageModel
from rocketpipe.client.consumer.local_offsets import decode_offsets, local_offsets_path
from rocketpipe.client.consumer.orderly import ConsumeOrderlyContext, ConsumeOrderlyStatus
from rocketpipe.testing.cluster import LocalCluster
from waiting import wait_until

OK = ConsumeConcurrentlyStatus.CONSUME_SUCCESS
LATER = ConsumeConcurrentlyStatus.RECONSUME_LATER


def broadcast_consumer(
    c: LocalCluster, group: str, topic: str, name: str, got: list[MessageExt], offsets_dir: Path, **kw: object
) -> PushConsumer:
    consumer = PushConsumer(
        group,
        config=ClientConfig(namesrv_addr=c.namesrv_addr, instance_name=name),
        message_model=MessageModel.BROADCASTING,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        offset_store_dir=str(offsets_dir),
        **kw,  # type: ignore[arg-type]
    )
    consumer.subscribe(topic)

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        got.extend(msgs)
        return OK

    consumer.register_message_listener(listener)
    return consumer


async def test_every_consumer_gets_every_message_and_restart_resumes_from_file(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    topic, group = "Bcast", "cg-bcast"
    offsets_dir = tmp_path / "offsets"
    async with Admin(cluster.namesrv_addr) as admin:
        await admin.create_topic(topic, 4)
    got_a: list[MessageExt] = []
    got_b: list[MessageExt] = []
    a = broadcast_consumer(cluster, group, topic, "bc-a", got_a, offsets_dir)
    b = broadcast_consumer(cluster, group, topic, "bc-b", got_b, offsets_dir)
    async with Producer("pg-bc", namesrv_addr=cluster.namesrv_addr) as p:
        first = {(await p.send(Message.build(topic, f"m{i}"))).msg_id for i in range(40)}
        async with a, b:
            await wait_until(
                lambda: {m.msg_id for m in got_a} >= first and {m.msg_id for m in got_b} >= first,
                timeout=20,
                what="both get all",
            )
            # every queue, no retry topic (Java subscribes %RETRY% only in CLUSTERING)
            assert (
                [q.queue_id for q in a.assigned_queues()] == [0, 1, 2, 3] == [q.queue_id for q in b.assigned_queues()]
            )
            assert all(q.topic == topic for q in a.assigned_queues())
            await wait_until(lambda: sum(a.committed_offsets().values()) == 40, timeout=10, what="a's offsets advanced")
        a_file = local_offsets_path("127.0.0.1@bc-a", group, offsets_dir)
        b_file = local_offsets_path("127.0.0.1@bc-b", group, offsets_dir)
        assert sum(decode_offsets(a_file.read_bytes()).values()) == 40
        assert sum(decode_offsets(b_file.read_bytes()).values()) == 40
        # the broker never got offsets of a broadcasting group
        assert all(cluster.broker.offsets.query(group, topic, q) == -1 for q in range(4))
        second = {(await p.send(Message.build(topic, f"n{i}"))).msg_id for i in range(10)}
    got_a2: list[MessageExt] = []
    a2 = broadcast_consumer(cluster, group, topic, "bc-a", got_a2, offsets_dir)
    async with a2:
        await wait_until(
            lambda: {m.msg_id for m in got_a2} >= second, timeout=20, what="restarted a gets the new messages"
        )
    assert {m.msg_id for m in got_a2} == second  # resumed from the file: nothing old again
    assert len(got_a) == 40 and len({m.msg_id for m in got_b}) == 40


async def test_failed_broadcast_messages_are_dropped_not_sent_back(cluster: LocalCluster, tmp_path: Path) -> None:
    topic, group = "BcastFail", "cg-bcast-fail"
    async with Admin(cluster.namesrv_addr) as admin:
        await admin.create_topic(topic, 1)
    calls: list[str] = []
    consumer = PushConsumer(
        group,
        config=ClientConfig(namesrv_addr=cluster.namesrv_addr, instance_name="bc-fail"),
        message_model=MessageModel.BROADCASTING,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        offset_store_dir=str(tmp_path),
    )
    consumer.subscribe(topic)

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        calls.extend(m.body.decode() for m in msgs)
        return LATER if msgs[0].body == b"bad" else OK

    consumer.register_message_listener(listener)
    async with Producer("pg-bcf", namesrv_addr=cluster.namesrv_addr) as p:
        for body in ("ok0", "bad", "ok1"):
            await p.send(Message.build(topic, body))
    async with consumer:
        await wait_until(
            lambda: sum(consumer.committed_offsets().values()) == 3, timeout=20, what="offset past every message"
        )
    assert sorted(calls) == ["bad", "ok0", "ok1"]  # consumed once each: the failure was dropped
    assert cluster.broker.store.get_max_offset(f"%RETRY%{group}", 0) <= 0


async def test_orderly_broadcast_needs_no_locks(cluster: LocalCluster, tmp_path: Path) -> None:
    topic, group = "BcastOrd", "cg-bcast-ord"
    async with Admin(cluster.namesrv_addr) as admin:
        await admin.create_topic(topic, 2)
    seen: list[tuple[int, int]] = []
    consumer = PushConsumer(
        group,
        config=ClientConfig(namesrv_addr=cluster.namesrv_addr, instance_name="bc-ord"),
        message_model=MessageModel.BROADCASTING,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        offset_store_dir=str(tmp_path),
    )
    consumer.subscribe(topic)

    async def listener(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
        seen.extend((m.queue_id, m.queue_offset) for m in msgs)
        return ConsumeOrderlyStatus.SUCCESS

    consumer.register_message_listener(listener, orderly=True)
    async with Producer("pg-bco", namesrv_addr=cluster.namesrv_addr) as p:
        for i in range(20):
            await p.send(Message.build(topic, f"m{i}"))
    async with consumer:
        await wait_until(lambda: len(seen) >= 20, timeout=20, what="all consumed")
        assert consumer.locked_queues() == []
        assert all(
            cluster.broker.locks.holder(group, q, cluster.broker.clock.now_ms()) is None
            for q in consumer.assigned_queues()
        )
    for q in (0, 1):
        offs = [o for qq, o in seen if qq == q]
        assert offs == sorted(offs) and len(offs) == len(set(offs))
