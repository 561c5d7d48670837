"""Consumer groups over real TCP: queue split + rebalance, retry via %RETRY%, offset resume."""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable

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
from rocketpipe.testing.cluster import LocalCluster
from waiting import wait_until

CaughtUp = Callable[..., Awaitable[bool]]

OK = ConsumeConcurrentlyStatus.CONSUME_SUCCESS
LATER = ConsumeConcurrentlyStatus.RECONSUME_LATER


def make_consumer(c: LocalCluster, group: str, topic: str, got: list[MessageExt], **kw: object) -> PushConsumer:
    consumer = PushConsumer(
        group, namesrv_addr=c.namesrv_addr, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, **kw
    )  # type: ignore[arg-type]
    consumer.subscribe(topic)

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        got.extend(msgs)
        return OK

    consumer.register_message_listener(listener)
    return consumer


def topic_queues(consumer: PushConsumer, topic: str) -> set[int]:
    return {q.queue_id for q in consumer.assigned_queues() if q.topic == topic}


async def test_two_consumers_split_queues_and_rebalance_when_one_leaves(cluster: LocalCluster) -> None:
    async with Admin(cluster.namesrv_addr) as admin:
        await admin.create_topic("Split", 4)
    got_a: list[MessageExt] = []
    got_b: list[MessageExt] = []
    a = make_consumer(cluster, "cg-split", "Split", got_a)
    b = make_consumer(cluster, "cg-split", "Split", got_b)
    sent: list[str] = []
    async with Producer("pg", namesrv_addr=cluster.namesrv_addr) as p:
        await a.start()
        await wait_until(lambda: topic_queues(a, "Split") == {0, 1, 2, 3}, timeout=20, what="a owns all queues")
        await b.start()
        # B's heartbeat makes the broker notify A; both rebalance to two queues each
        await wait_until(
            lambda: len(topic_queues(a, "Split")) == 2 and len(topic_queues(b, "Split")) == 2,
            timeout=20,
            what="2 + 2 split",
        )
        assert topic_queues(a, "Split").isdisjoint(topic_queues(b, "Split"))
        for i in range(40):
            sent.append((await p.send(Message.build("Split", f"s{i}"))).msg_id)
        await wait_until(lambda: {m.msg_id for m in got_a + got_b} >= set(sent), timeout=20, what="40 messages split")
        assert got_a and got_b  # both consumed part of the stream
        assert {m.queue_id for m in got_a}.isdisjoint({m.queue_id for m in got_b})

        await b.close()  # UNREGISTER_CLIENT → NOTIFY_CONSUMER_IDS_CHANGED → A takes every queue
        await wait_until(lambda: topic_queues(a, "Split") == {0, 1, 2, 3}, timeout=20, what="a owns all queues again")
        for i in range(40, 80):
            sent.append((await p.send(Message.build("Split", f"s{i}"))).msg_id)
        await wait_until(lambda: {m.msg_id for m in got_a + got_b} >= set(sent), timeout=20, what="all 80 delivered")
    await a.close()
    delivered = Counter(m.msg_id for m in got_a + got_b)
    assert set(delivered) == set(sent)  # nothing lost; duplicates only possible around a rebalance


async def test_reconsume_later_redelivers_through_retry_topic(cluster: LocalCluster, caught_up: CaughtUp) -> None:
    calls: list[tuple[str, str, int, str | None]] = []
    consumer = PushConsumer(
        "cg-retry", namesrv_addr=cluster.namesrv_addr, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    )
    consumer.subscribe("Flaky")

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        m = msgs[0]
        calls.append((m.msg_id, m.topic, m.reconsume_times, ctx.message_queue.topic))
        return LATER if m.reconsume_times == 0 else OK  # plain function: runs in the thread pool

    consumer.register_message_listener(listener)
    async with Producer("pg", namesrv_addr=cluster.namesrv_addr) as p:
        r = await p.send(Message.build("Flaky", b"try me", tags="X"))
        async with consumer:
            await wait_until(lambda: len(calls) >= 2, timeout=30, what="redelivery")
            await wait_until(lambda: caught_up(consumer, "Flaky", "%RETRY%cg-retry"), timeout=20, what="caught up")
    assert len(calls) == 2
    first, second = calls
    assert first == (r.msg_id, "Flaky", 0, "Flaky")
    assert second[0] == r.msg_id  # same UNIQ_KEY
    assert second[1] == "Flaky"  # real topic restored from RETRY_TOPIC
    assert second[2] == 1
    assert second[3] == "%RETRY%cg-retry"


async def test_offsets_persisted_and_resumed_after_restart(cluster: LocalCluster, caught_up: CaughtUp) -> None:
    async with Admin(cluster.namesrv_addr) as admin:
        await admin.create_topic("Resume", 2)
    got1: list[MessageExt] = []
    async with Producer("pg", namesrv_addr=cluster.namesrv_addr) as p:
        first = [(await p.send(Message.build("Resume", f"a{i}"))).msg_id for i in range(10)]
        c1 = make_consumer(cluster, "cg-resume", "Resume", got1)
        async with c1:
            await wait_until(lambda: {m.msg_id for m in got1} >= set(first), timeout=20, what="first batch")
        offsets_after_close = {q.queue_id: o for q, o in c1.committed_offsets().items() if q.topic == "Resume"}
        assert sum(offsets_after_close.values()) == 10
        second = [(await p.send(Message.build("Resume", f"b{i}"))).msg_id for i in range(10)]
        got2: list[MessageExt] = []
        c2 = make_consumer(cluster, "cg-resume", "Resume", got2)
        async with c2:
            await wait_until(lambda: {m.msg_id for m in got2} >= set(second), timeout=20, what="second batch")
            await wait_until(lambda: caught_up(c2, "Resume"), timeout=20, what="caught up")
    assert {m.msg_id for m in got2} == set(second)  # resumed at the persisted offsets: nothing old again
    assert Counter(m.msg_id for m in got2).most_common(1)[0][1] == 1


async def test_last_offset_on_a_young_queue_starts_at_zero(cluster: LocalCluster) -> None:
    """The broker answers 0 for a new group on a never-trimmed queue (RocketMQ behaviour)."""
    async with Admin(cluster.namesrv_addr) as admin:
        await admin.create_topic("Young", 1)
    got: list[MessageExt] = []
    async with Producer("pg", namesrv_addr=cluster.namesrv_addr) as p:
        old = (await p.send(Message.build("Young", b"old"))).msg_id
        consumer = make_consumer(cluster, "cg-young", "Young", got)
        consumer.consume_from_where = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
        async with consumer:
            await wait_until(lambda: any(m.msg_id == old for m in got), timeout=20, what="old message")


async def test_subscribe_after_start_and_failing_listener(cluster: LocalCluster) -> None:
    """A topic subscribed while running is consumed; an exception means RECONSUME_LATER."""
    seen: list[tuple[str, int]] = []

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        m = msgs[0]
        seen.append((m.topic, m.reconsume_times))
        if m.topic == "Late" and m.reconsume_times == 0:
            raise RuntimeError("boom")
        return OK

    consumer = PushConsumer(
        "cg-late", namesrv_addr=cluster.namesrv_addr, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    )
    consumer.subscribe("Early")
    consumer.register_message_listener(listener)
    async with Producer("pg", namesrv_addr=cluster.namesrv_addr) as p:
        await p.send(Message.build("Early", b"e"))
        await p.send(Message.build("Late", b"l"))
        async with consumer:
            await wait_until(lambda: ("Early", 0) in seen, timeout=20, what="early topic")
            consumer.subscribe("Late")
            await wait_until(lambda: ("Late", 1) in seen, timeout=30, what="late topic, redelivered")
            assert "Late" in consumer.subscriptions()
    assert seen.count(("Late", 0)) == 1


async def test_ack_index_sends_back_only_the_tail(cluster: LocalCluster, caught_up: CaughtUp) -> None:
    async with Admin(cluster.namesrv_addr) as admin:
        await admin.create_topic("Acks", 1)
    calls: list[list[bytes]] = []

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        calls.append([m.body for m in msgs])
        if len(msgs) > 1:
            ctx.ack_index = 0  # only the first of the batch succeeded
        return OK

    consumer = PushConsumer(
        "cg-acks",
        namesrv_addr=cluster.namesrv_addr,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        consume_message_batch_max_size=3,
    )
    consumer.subscribe("Acks")
    consumer.register_message_listener(listener)
    async with Producer("pg", namesrv_addr=cluster.namesrv_addr) as p:
        await p.send_batch([Message.build("Acks", f"a{i}") for i in range(3)])
        async with consumer:
            await wait_until(lambda: sum(len(c) for c in calls) >= 5, timeout=30, what="tail redelivered")
            await wait_until(lambda: caught_up(consumer, "Acks", "%RETRY%cg-acks"), timeout=20, what="caught up")
    first = calls[0]
    assert first == [b"a0", b"a1", b"a2"]
    redelivered = sorted(b for c in calls[1:] for b in c)
    assert redelivered == [b"a1", b"a2"]


async def test_stuck_listener_message_is_sent_back_after_consume_timeout(cluster: LocalCluster) -> None:
    import threading

    release = threading.Event()
    seen: list[int] = []

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        seen.append(msgs[0].reconsume_times)
        if msgs[0].reconsume_times == 0:
            release.wait(20)  # stuck far beyond consume_timeout
        return OK

    consumer = PushConsumer(
        "cg-stuck",
        namesrv_addr=cluster.namesrv_addr,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        consume_timeout=1.0,
    )
    consumer.subscribe("Stuck")
    consumer.register_message_listener(listener)
    async with Producer("pg", namesrv_addr=cluster.namesrv_addr) as p:
        await p.send(Message.build("Stuck", b"slow"))
        try:
            async with consumer:
                await wait_until(lambda: 1 in seen, timeout=30, what="redelivery of the stuck message")
                release.set()
        finally:
            release.set()
    assert seen[:2] == [0, 1]
