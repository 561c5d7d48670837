"""Consume statistics over real TCP: GET_CONSUMER_RUNNING_INFO (307) reports the pull / consume
RT and TPS and the failed counts of ``ConsumerStatsManager`` in its ``statusTable``.

Asked as ``mqadmin consumerStatus`` does: ``Admin.get_consumer_running_info`` → the broker →
the client's connection."""

from __future__ import annotations

from typing import Any

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
from rocketpipe.protocol.bodies.consumer import ConsumerRunningInfo
from rocketpipe.testing.cluster import LocalCluster
from waiting import wait_until

OK = ConsumeConcurrentlyStatus.CONSUME_SUCCESS
LATER = ConsumeConcurrentlyStatus.RECONSUME_LATER


async def running_info(c: LocalCluster, consumer: PushConsumer) -> ConsumerRunningInfo:
    """GET_CONSUMER_RUNNING_INFO through the broker (what ``mqadmin consumerStatus`` does)."""
    async with Admin(c.namesrv_addr) as admin:
        return await admin.get_consumer_running_info(consumer.group, consumer.client_id)


async def send_all(c: LocalCluster, topic: str, queues: int, n: int) -> None:
    async with Admin(c.namesrv_addr) as admin:
        await admin.create_topic(topic, queues)
    async with Producer("pg-stats", namesrv_addr=c.namesrv_addr) as p:
        for i in range(n):
            await p.send(Message.build(topic, f"m{i}"))


async def test_running_info_reports_consume_and_pull_statistics(cluster: LocalCluster) -> None:
    topic, group = "StatsT", "cg-stats"
    retry = f"%RETRY%{group}"
    await send_all(cluster, topic, 2, 20)
    done: set[str] = set()
    failed_first: set[str] = set()
    consumer = PushConsumer(
        group,
        namesrv_addr=cluster.namesrv_addr,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        consume_message_batch_max_size=2,
    )
    consumer.subscribe(topic)

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        bodies = [m.body.decode() for m in msgs]
        # the first delivery of m0, m5, m10, m15 fails (the whole batch when it is in one)
        if any(int(b[1:]) % 5 == 0 for b in bodies) and msgs[0].reconsume_times == 0:
            failed_first.update(bodies)
            return LATER
        done.update(bodies)
        return OK

    consumer.register_message_listener(listener)
    async with consumer:
        await wait_until(lambda: len(done) == 20, timeout=60, what="every message consumed, retries included")
        info = await running_info(cluster, consumer)
    assert {f"m{i}" for i in range(0, 20, 5)} <= failed_first
    st: dict[str, Any] = info.status_table[topic]
    assert sorted(st) == ["consumeFailedMsgs", "consumeFailedTPS", "consumeOKTPS", "consumeRT", "pullRT", "pullTPS"]
    n_failed = len(failed_first)
    assert st["consumeFailedMsgs"] == n_failed  # the last hour's failures, exact
    assert st["consumeFailedTPS"] >= n_failed / 60  # per second over (at most) the last minute
    assert st["consumeOKTPS"] >= (20 - n_failed) / 60
    assert st["pullTPS"] >= 20 / 60 and st["pullRT"] > 0.0
    assert st["consumeRT"] > 0.0
    rs: dict[str, Any] = info.status_table[retry]  # redeliveries are counted under the retry topic
    assert rs["consumeOKTPS"] >= n_failed / 60 and rs["consumeFailedMsgs"] == 0 and rs["pullTPS"] > 0.0


async def test_orderly_suspend_counts_as_failed(cluster: LocalCluster) -> None:
    topic, group = "StatsOrd", "cg-stats-ord"
    await send_all(cluster, topic, 1, 4)
    seen: list[tuple[str, int]] = []
    consumer = PushConsumer(
        group, namesrv_addr=cluster.namesrv_addr, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    )
    consumer.subscribe(topic)

    async def listener(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
        m = msgs[0]
        seen.append((m.body.decode(), m.reconsume_times))
        if m.body == b"m1" and m.reconsume_times < 2:
            ctx.suspend_current_queue_time_millis = 10
            return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        return ConsumeOrderlyStatus.SUCCESS

    consumer.register_message_listener(listener, orderly=True)
    async with consumer:
        await wait_until(lambda: [b for b, _ in seen][-1:] == ["m3"], timeout=30, what="m0..m3 consumed in order")
        info = await running_info(cluster, consumer)
    assert seen == [("m0", 0), ("m1", 0), ("m1", 1), ("m1", 2), ("m2", 0), ("m3", 0)]
    st = info.status_table[topic]
    assert st["consumeFailedMsgs"] == 2 and st["consumeFailedTPS"] >= 2 / 60
    assert st["consumeOKTPS"] >= 4 / 60 and st["consumeRT"] > 0.0 and st["pullTPS"] >= 4 / 60
