"""Two broker groups in one cluster (local_cluster(brokers=2), and a second broker group as its own
`rocketpipe serve --broker-only` process): a topic on both, sends spread over both, push consumers
rebalanced over both with offsets kept per broker, orderly consumption with each broker's locks,
POP from both, and producer failover when one broker process is killed (SIGKILL), with and without
send latency fault tolerance."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rocketpipe import (
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    ConsumeInitMode,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
    SendStatus,
    SimpleConsumer,
)
from rocketpipe.client.consumer.orderly import ConsumeOrderlyContext, ConsumeOrderlyStatus, MessageListenerOrderly
from rocketpipe.testing.cluster import LocalCluster, create_topic_on_brokers, local_cluster
from rocketpipe.testing.serve_process import serve_process
from waiting import wait_until

QUEUES = 4  # per broker


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with local_cluster(tmp_path / "store", brokers=2) as c:
        yield c


async def _topic_on_both(c: LocalCluster, topic: str) -> None:
    await create_topic_on_brokers(c.namesrv_addr, topic, QUEUES, c.broker_addrs)


async def test_sends_spread_and_push_consumers_rebalance_over_both_brokers(cluster: LocalCluster) -> None:
    topic, group = "TwoBrokers", "cg-two"
    await _topic_on_both(cluster, topic)
    async with Producer("pg-two", namesrv_addr=cluster.namesrv_addr) as p:
        results = [await p.send(Message.build(topic, f"m{i}")) for i in range(80)]
    by_broker = {r.message_queue.broker_name for r in results}
    assert by_broker == {"broker-a", "broker-b"}
    got: dict[str, set[str]] = {"c1": set(), "c2": set()}
    queues: dict[str, set[tuple[str, int]]] = {"c1": set(), "c2": set()}

    def member(name: str) -> PushConsumer:
        consumer = PushConsumer(
            group,
            namesrv_addr=cluster.namesrv_addr,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            rebalance_interval=1.0,
        )
        consumer.subscribe(topic)

        async def listener(msgs: list[MessageExt], ctx: object) -> ConsumeConcurrentlyStatus:
            for m in msgs:
                got[name].add(m.msg_id)
                queues[name].add((m.broker_name, m.queue_id))
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        consumer.register_message_listener(listener)
        return consumer

    async with member("c1"), member("c2"):
        await wait_until(lambda: len(got["c1"] | got["c2"]) == 80, timeout=40, what="80 messages consumed")
        a, b = cluster.brokers

        def committed() -> bool:
            return (
                sum(a.offsets.queue_offsets(group, topic).values())
                + sum(b.offsets.queue_offsets(group, topic).values())
                == 80
            )

        await wait_until(committed, timeout=20, what="offsets committed on both brokers")
    assert got["c1"] | got["c2"] == {r.msg_id for r in results}
    # each broker keeps the offsets of its own queues only
    for broker in cluster.brokers:
        sent_here = sum(1 for r in results if r.message_queue.broker_name == broker.config.broker_name)
        assert sum(broker.offsets.queue_offsets(group, topic).values()) == sent_here
    all_queues = queues["c1"] | queues["c2"]
    assert {bn for bn, _ in all_queues} == {"broker-a", "broker-b"}


async def test_orderly_consumption_locks_queues_on_each_broker(cluster: LocalCluster) -> None:
    topic, group = "TwoBrokersOrderly", "cg-two-ord"
    await _topic_on_both(cluster, topic)
    async with Producer("pg-two-ord", namesrv_addr=cluster.namesrv_addr) as p:
        for i in range(40):
            await p.send(Message.build(topic, f"m{i}"))
    seen: list[tuple[str, int, int]] = []

    async def consume(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
        seen.extend((m.broker_name, m.queue_id, m.queue_offset) for m in msgs)
        return ConsumeOrderlyStatus.SUCCESS

    consumer = PushConsumer(
        group, namesrv_addr=cluster.namesrv_addr, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    )
    consumer.subscribe(topic)
    consumer.register_message_listener(MessageListenerOrderly(consume), orderly=True)
    async with consumer:
        await wait_until(lambda: len(seen) == 40, timeout=40, what="40 messages in order")
        locked = {(q.broker_name, q.queue_id) for q in consumer.locked_queues() if q.topic == topic}
        assert {bn for bn, _ in locked} == {"broker-a", "broker-b"}
        for broker in cluster.brokers:  # each broker holds the locks of its own queues
            now = broker.clock.now_ms()
            held = [
                q for q in consumer.locked_queues() if q.topic == topic and q.broker_name == broker.config.broker_name
            ]
            assert held and all(broker.locks.holder(group, q, now) is not None for q in held)
    per_queue: dict[tuple[str, int], list[int]] = {}
    for bn, qid, off in seen:
        per_queue.setdefault((bn, qid), []).append(off)
    assert all(offs == sorted(offs) for offs in per_queue.values())


async def test_pop_receives_from_both_brokers(cluster: LocalCluster) -> None:
    topic, group = "TwoBrokersPop", "cg-two-pop"
    await _topic_on_both(cluster, topic)
    async with Producer("pg-two-pop", namesrv_addr=cluster.namesrv_addr) as p:
        sent = {(await p.send(Message.build(topic, f"m{i}"))).msg_id for i in range(24)}
    received: dict[str, str] = {}
    async with SimpleConsumer(
        group,
        namesrv_addr=cluster.namesrv_addr,
        subscriptions={topic: "*"},
        await_duration=1.0,
        init_mode=ConsumeInitMode.MIN,
    ) as c:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while len(received) < 24 and loop.time() < deadline:
            for m in await c.receive(16, invisible_duration=30):
                received[m.msg_id] = m.broker_name
                await c.ack(m)
    assert set(received) == sent
    assert set(received.values()) == {"broker-a", "broker-b"}


@pytest.mark.parametrize("fault_tolerance", [True, False])
async def test_send_latency_fault_tolerance_stops_trying_a_dead_broker(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, fault_tolerance: bool
) -> None:
    """A producer keeps sending through the live broker after the other broker's process is
    killed (SIGKILL: the producer's cached route still lists it); with fault tolerance it stops
    trying the dead one after one failed attempt, as Java's ``MQFaultStrategy``."""
    topic = "FaultTolerance"
    async with local_cluster(tmp_path / "a") as c:
        with serve_process(tmp_path / "b", namesrv_addr=c.namesrv_addr, broker_name="broker-b") as b:
            await create_topic_on_brokers(c.namesrv_addr, topic, QUEUES, (c.broker_addr, b.broker_addr))
            async with Producer(
                "pg-fault", namesrv_addr=c.namesrv_addr, send_msg_timeout=3.0, send_latency_fault_enable=fault_tolerance
            ) as p:
                # only failures (counted as 10 s) isolate: a slow first connection on a loaded
                # machine (>= 550 ms: 2 s by default) must not take broker-b out before the kill
                p.mq_fault_strategy.not_available_duration = (0, 0, 0, 0, 0, 10_000, 30_000)
                before = [await p.send(Message.build(topic, f"before {i}")) for i in range(8)]
                assert {r.message_queue.broker_name for r in before} == {"broker-a", "broker-b"}
                assert p.mq_fault_strategy.is_available("broker-b")
                os.kill(b.pid, signal.SIGKILL)  # the producer's cached route still lists broker-b
                caplog.clear()
                after = [await p.send(Message.build(topic, f"after {i}")) for i in range(16)]
                retries = [r for r in caplog.records if r.getMessage().startswith("send failed, retrying")]
                isolated = not p.mq_fault_strategy.is_available("broker-b")
    assert {(r.message_queue.broker_name, r.send_status) for r in after} == {("broker-a", SendStatus.SEND_OK)}
    if fault_tolerance:  # one failed attempt isolates broker-b for 10 s: no send tries it again
        assert len(retries) == 1 and isolated
    else:  # plain round robin lands on broker-b's queues (until a route refresh drops broker-b)
        assert len(retries) >= 1 and not isolated
