"""Orderly PushConsumer over real TCP: broker locks, per-queue order across rebalances,
SUSPEND redelivery, max reconsume times -> DLQ, unlock at shutdown."""

from __future__ import annotations

import asyncio
from collections import defaultdict

from rocketpipe import Admin, ConsumeFromWhere, Message, MessageExt, Producer, PushConsumer
from rocketpipe.client.consumer.orderly import ConsumeOrderlyContext, ConsumeOrderlyStatus, MessageListenerOrderly
from rocketpipe.protocol.message import MessageQueue
from rocketpipe.testing.cluster import LocalCluster
from waiting import wait_until

SUCCESS = ConsumeOrderlyStatus.SUCCESS
SUSPEND = ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT


def orderly_consumer(c: LocalCluster, group: str, topic: str, listener: object, **kw: object) -> PushConsumer:
    consumer = PushConsumer(
        group,
        namesrv_addr=c.namesrv_addr,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        **kw,  # type: ignore[arg-type]
    )
    consumer.subscribe(topic)
    consumer.register_message_listener(listener, orderly=True)
    return consumer


def holder(c: LocalCluster, group: str, mq: MessageQueue) -> str | None:
    return c.broker.locks.holder(group, mq, c.broker.clock.now_ms())


def topic_locked(consumer: PushConsumer, topic: str) -> set[int]:
    return {q.queue_id for q in consumer.locked_queues() if q.topic == topic}


async def test_order_preserved_while_queues_move_between_two_consumers(cluster: LocalCluster) -> None:
    topic, group = "OrdMove", "cg-ord-move"
    async with Admin(cluster.namesrv_addr) as admin:
        await admin.create_topic(topic, 4)
    completed: list[tuple[int, int, str]] = []  # (queue id, queue offset, consumer) in completion order

    def listener_for(name: str) -> MessageListenerOrderly:
        async def consume(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
            await asyncio.sleep(0.002)  # some work, so that batches are in flight during rebalances
            for m in msgs:
                assert m.queue_id == ctx.message_queue.queue_id
                completed.append((m.queue_id, m.queue_offset, name))
            return SUCCESS

        return MessageListenerOrderly(consume)

    interval = 1.0
    a = orderly_consumer(
        cluster, group, topic, listener_for("a"), rebalance_interval=interval, lock_renew_interval=interval
    )
    b = orderly_consumer(
        cluster, group, topic, listener_for("b"), rebalance_interval=interval, lock_renew_interval=interval
    )
    sent: set[tuple[int, int]] = set()
    total = 400

    async with Producer("pg-ord", namesrv_addr=cluster.namesrv_addr) as p:

        async def produce() -> None:
            for i in range(total):
                r = await p.send(Message.build(topic, f"m{i}"))
                sent.add((r.message_queue.queue_id, r.queue_offset))
                if i % 20 == 0:
                    await asyncio.sleep(0.01)  # spread the load over the rebalance

        await a.start()
        await wait_until(lambda: topic_locked(a, topic) == {0, 1, 2, 3}, timeout=10, what="a locks every queue")
        for q in range(4):
            assert holder(cluster, group, MessageQueue(topic, cluster.broker.config.broker_name, q)) == a.client_id
        producer = asyncio.create_task(produce())
        await wait_until(lambda: len(completed) >= 50, timeout=20, what="a consumes under load")
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        await b.start()
        await wait_until(
            lambda: len(topic_locked(a, topic)) == 2 and len(topic_locked(b, topic)) == 2,
            timeout=interval + 5,
            what="queues split 2 + 2 with locks",
        )
        moved_after = loop.time() - t0
        await producer
        try:
            await wait_until(
                lambda: {(q, o) for q, o, _ in completed} >= sent, timeout=30, what="every message consumed"
            )
            # locks on the broker follow the split
            for mq in a.locked_queues():
                if mq.topic == topic:
                    assert holder(cluster, group, mq) == a.client_id
            for mq in b.locked_queues():
                if mq.topic == topic:
                    assert holder(cluster, group, mq) == b.client_id
        finally:
            await b.close()
            await a.close()
    assert moved_after < interval + 5
    per_queue: dict[int, list[int]] = defaultdict(list)
    for q, off, _ in completed:
        per_queue[q].append(off)
    for q, offs in per_queue.items():
        assert offs == sorted(set(offs)), f"queue {q}: completions out of order or duplicated"
        assert offs == list(range(len(offs))), f"queue {q}: gap"
    assert {name for _, _, name in completed} == {"a", "b"}
    # the queues b took over continued where a stopped
    b_queues = {q for q, _, name in completed if name == "b"}
    assert b_queues and any(name == "a" for q, _, name in completed if q in b_queues)
    # shutdown released every lock
    for q in range(4):
        assert holder(cluster, group, MessageQueue(topic, cluster.broker.config.broker_name, q)) is None


async def test_suspend_redelivers_same_batch_in_order(cluster: LocalCluster) -> None:
    topic, group = "OrdSuspend", "cg-ord-suspend"
    async with Admin(cluster.namesrv_addr) as admin:
        await admin.create_topic(topic, 1)
    calls: list[tuple[list[str], list[int], float]] = []
    suspended = False
    loop = asyncio.get_running_loop()

    def consume(
        msgs: list[MessageExt], ctx: ConsumeOrderlyContext
    ) -> ConsumeOrderlyStatus:  # plain function: thread pool
        nonlocal suspended
        bodies = [m.body.decode() for m in msgs]
        calls.append((bodies, [m.reconsume_times for m in msgs], loop.time()))
        if "m3" in bodies and not suspended:
            suspended = True
            ctx.suspend_current_queue_time_millis = 300
            return SUSPEND
        return SUCCESS

    consumer = orderly_consumer(cluster, group, topic, consume, consume_message_batch_max_size=3, pull_batch_size=32)
    async with Producer("pg-ord-s", namesrv_addr=cluster.namesrv_addr) as p:
        for i in range(9):
            await p.send(Message.build(topic, f"m{i}"))
    async with consumer:
        await wait_until(lambda: sum(len(b) for b, _, t in calls) >= 12, timeout=20, what="all batches")
    flat = [b for bodies, _, _ in calls for b in bodies]
    # the suspended batch comes again, immediately after itself, with the same messages
    i = next(k for k, (bodies, _, _) in enumerate(calls) if "m3" in bodies)
    assert calls[i + 1][0] == calls[i][0]
    assert calls[i][1] == [0] * len(calls[i][0]) and calls[i + 1][1] == [1] * len(calls[i][0])
    assert calls[i + 1][2] - calls[i][2] >= 0.25  # waited the suspend time
    # completed order is the send order
    done = [b for k, (bodies, _, _) in enumerate(calls) if k != i for b in bodies]
    assert done == [f"m{n}" for n in range(9)]
    assert len(flat) == 9 + len(calls[i][0])


async def test_max_reconsume_times_sends_to_dlq_and_moves_on(cluster: LocalCluster) -> None:
    topic, group = "OrdDlq", "cg-ord-dlq"
    async with Admin(cluster.namesrv_addr) as admin:
        await admin.create_topic(topic, 1)
    seen: list[tuple[str, int]] = []

    async def consume(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
        ctx.suspend_current_queue_time_millis = 10
        seen.extend((m.body.decode(), m.reconsume_times) for m in msgs)
        return SUSPEND if any(m.body == b"bad" for m in msgs) else SUCCESS

    consumer = orderly_consumer(cluster, group, topic, MessageListenerOrderly(consume), max_reconsume_times=2)
    async with Producer("pg-ord-d", namesrv_addr=cluster.namesrv_addr) as p:
        for body in ("ok0", "bad", "ok1"):
            await p.send(Message.build(topic, body))
    async with consumer:
        await wait_until(lambda: ("ok1", 0) in seen, timeout=20, what="consumption moves past the bad message")
        store = cluster.broker.store
        await wait_until(
            lambda: store.get_max_offset(f"%DLQ%{group}", 0) == 1, timeout=10, what="bad message in the DLQ"
        )
    assert [s for s in seen if s[0] == "bad"] == [("bad", 0), ("bad", 1), ("bad", 2)]
    assert [s[0] for s in seen] == ["ok0", "bad", "bad", "bad", "ok1"]


async def test_lock_renewal_and_client_side_expiry_gate(cluster: LocalCluster) -> None:
    """A queue whose lock the broker refuses (another holder) is neither pulled nor consumed."""
    topic, group = "OrdGate", "cg-ord-gate"
    async with Admin(cluster.namesrv_addr) as admin:
        await admin.create_topic(topic, 1)
    mq = MessageQueue(topic, cluster.broker.config.broker_name, 0)
    # an outsider holds the queue lock (a live lock of another client)
    assert cluster.broker.locks.try_lock_batch(group, [mq], "outsider@1", cluster.broker.clock.now_ms()) == {mq}
    got: list[str] = []

    async def consume(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
        got.extend(m.body.decode() for m in msgs)
        return SUCCESS

    consumer = orderly_consumer(cluster, group, topic, consume, rebalance_interval=0.5, lock_renew_interval=0.5)
    async with Producer("pg-ord-g", namesrv_addr=cluster.namesrv_addr) as p:
        await p.send(Message.build(topic, "x"))
    async with consumer:
        await wait_until(lambda: consumer.rebalance_count >= 3, timeout=10, what="a few rebalances")
        assert mq not in consumer.assigned_queues() and got == []
        cluster.broker.locks.unlock_batch(group, [mq], "outsider@1")
        await wait_until(lambda: got == ["x"], timeout=10, what="consumed once the lock is free")
        assert holder(cluster, group, mq) == consumer.client_id
    assert holder(cluster, group, mq) is None
