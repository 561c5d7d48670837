"""PushConsumer controls over real TCP: suspend/resume, unsubscribe at runtime, consume hooks,
per-topic pull thresholds."""

from __future__ import annotations

import asyncio

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
from rocketpipe.client.consumer.orderly import ConsumeOrderlyContext, ConsumeOrderlyStatus
from rocketpipe.client.consumer.push_controls import CONSUME_CONTEXT_TYPE, ConsumeMessageContext
from rocketpipe.testing.cluster import LocalCluster
from waiting import wait_until

OK = ConsumeConcurrentlyStatus.CONSUME_SUCCESS
LATER = ConsumeConcurrentlyStatus.RECONSUME_LATER


async def create(cluster: LocalCluster, *topics: tuple[str, int]) -> None:
    async with Admin(cluster.namesrv_addr) as admin:
        for t, n in topics:
            await admin.create_topic(t, n)


def consumer_for(cluster: LocalCluster, group: str, **kw: object) -> PushConsumer:
    return PushConsumer(
        group, namesrv_addr=cluster.namesrv_addr, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, **kw
    )  # type: ignore[arg-type]


async def test_suspend_stops_pulling_and_resume_restarts(cluster: LocalCluster) -> None:
    topic = "PauseT"
    await create(cluster, (topic, 2))
    got: list[str] = []
    c = consumer_for(cluster, "cg-pause", broker_suspend_max_time=0.5, consumer_timeout_when_suspend=3.0)
    c.subscribe(topic)

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        got.extend(m.body.decode() for m in msgs)
        return OK

    c.register_message_listener(listener)
    async with Producer("pg-pause", namesrv_addr=cluster.namesrv_addr) as p, c:
        await p.send(Message.build(topic, "before"))
        await wait_until(lambda: got == ["before"], timeout=20)
        c.suspend()
        assert c.paused
        # a negative can only be observed over a window: long polls held before suspend() end
        # within broker_suspend_max_time (0.5 s); afterwards the loops re-check every 1 s
        loop = asyncio.get_running_loop()
        start = loop.time()
        await wait_until(lambda: loop.time() - start > 1.0, timeout=5, what="held polls ended")
        for i in range(3):
            await p.send(Message.build(topic, f"paused-{i}"))
        await wait_until(lambda: loop.time() - start > 3.0, timeout=5, what="paused window")
        assert got == ["before"]
        c.resume()
        await wait_until(
            lambda: sorted(got) == ["before", "paused-0", "paused-1", "paused-2"],
            timeout=20,
            what="delivery after resume",
        )


async def test_unsubscribe_at_runtime_drops_the_topics_queues(cluster: LocalCluster) -> None:
    await create(cluster, ("UnsubA", 2), ("UnsubB", 2))
    got: list[str] = []
    c = consumer_for(cluster, "cg-unsub")
    c.subscribe("UnsubA")
    c.subscribe("UnsubB")

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        got.extend(m.topic for m in msgs)
        return OK

    c.register_message_listener(listener)
    async with Producer("pg-unsub", namesrv_addr=cluster.namesrv_addr) as p, c:
        await wait_until(lambda: {q.topic for q in c.assigned_queues()} >= {"UnsubA", "UnsubB"}, timeout=20)
        c.unsubscribe("UnsubB")
        await wait_until(
            lambda: "UnsubB" not in {q.topic for q in c.assigned_queues()}, timeout=10, what="UnsubB queues dropped"
        )
        assert "UnsubB" not in c.subscriptions() and "UnsubA" in c.subscriptions()
        await p.send(Message.build("UnsubB", "b"))
        await p.send(Message.build("UnsubA", "a"))
        await wait_until(lambda: "UnsubA" in got, timeout=20)
        assert "UnsubB" not in got
        await wait_until(
            lambda: cluster.broker.clients.subscription("cg-unsub", "UnsubB") is None,
            timeout=10,
            what="heartbeat without B",
        )


class RecordingHook:
    def __init__(self) -> None:
        self.before: list[list[str]] = []
        self.after: list[tuple[list[str], str | None, bool, str]] = []

    def hook_name(self) -> str:
        return "recording"

    def consume_message_before(self, context: ConsumeMessageContext) -> None:
        self.before.append([m.body.decode() for m in context.msg_list])
        context.props["seen"] = "yes"

    def consume_message_after(self, context: ConsumeMessageContext) -> None:
        assert context.props["seen"] == "yes"
        self.after.append(
            (
                [m.body.decode() for m in context.msg_list],
                context.status,
                context.success,
                context.props[CONSUME_CONTEXT_TYPE],
            )
        )


class BrokenHook:
    def hook_name(self) -> str:
        return "broken"

    def consume_message_before(self, context: ConsumeMessageContext) -> None:
        raise RuntimeError("hook failure is ignored")

    def consume_message_after(self, context: ConsumeMessageContext) -> None:
        raise RuntimeError("hook failure is ignored")


async def test_consume_hooks_see_before_and_after(cluster: LocalCluster) -> None:
    topic = "HookT"
    await create(cluster, (topic, 1))
    hook = RecordingHook()
    c = consumer_for(cluster, "cg-hook", max_reconsume_times=0)
    c.subscribe(topic)
    c.register_consume_message_hook(BrokenHook())
    c.register_consume_message_hook(hook)

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:  # thread pool
        if msgs[0].body == b"raise":
            raise ValueError("x")
        return LATER if msgs[0].body == b"later" else OK

    c.register_message_listener(listener)
    async with Producer("pg-hook", namesrv_addr=cluster.namesrv_addr) as p, c:
        for body in ("ok", "later", "raise"):
            await p.send(Message.build(topic, body))
        await wait_until(lambda: len(hook.after) >= 3, timeout=20)
    # the three batches run concurrently: compare per message, not in call order
    assert sorted(hook.before[:3]) == [["later"], ["ok"], ["raise"]]
    assert sorted(hook.after[:3]) == [
        (["later"], "RECONSUME_LATER", False, "FAILED"),
        (["ok"], "CONSUME_SUCCESS", True, "SUCCESS"),
        (["raise"], "RECONSUME_LATER", False, "EXCEPTION"),
    ]


async def test_orderly_hooks_and_topic_threshold(cluster: LocalCluster) -> None:
    topic = "TopicLimit"
    await create(cluster, (topic, 2))
    release = asyncio.Event()
    hook = RecordingHook()
    c = consumer_for(cluster, "cg-topic-limit", pull_threshold_for_topic=10, pull_batch_size=4)
    c.subscribe(topic)
    c.register_consume_message_hook(hook)

    async def listener(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
        await release.wait()
        return ConsumeOrderlyStatus.SUCCESS

    c.register_message_listener(listener, orderly=True)
    async with Producer("pg-topic-limit", namesrv_addr=cluster.namesrv_addr) as p:
        for i in range(100):
            await p.send(Message.build(topic, f"m{i}"))
    async with c:
        await wait_until(lambda: c.controls.flow_control_times > 20, timeout=20, what="per-topic flow control engaged")
        cached = {mq.queue_id: r.pq.msg_count for mq, r in c._queues.items() if mq.topic == topic}
        # 10 per topic over 2 queues: each queue stops pulling once above 5 (one batch of 4 may overshoot)
        assert len(cached) == 2 and all(6 <= n <= 5 + 4 for n in cached.values()), cached
        release.set()
        await wait_until(
            lambda: sum(c.committed_offsets().get(mq, 0) for mq in c.assigned_queues() if mq.topic == topic) == 100,
            timeout=30,
        )
    assert hook.after and all(status == "SUCCESS" and ok for _, status, ok, _ in hook.after)
