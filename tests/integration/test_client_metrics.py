"""Client metrics (``ClientConfig(metrics=True)``) over real HTTP while a real producer and consumers run.

The embedded broker (``local_cluster``), a private ``CollectorRegistry`` served by
:class:`~rocketpipe.broker.metrics.MetricsServer`, scraped with httpx during the load and after.
Counts are checked against what the test sent and what its listeners saw and returned.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from rocketpipe import (
    Admin,
    BrokerError,
    ClientConfig,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    Message,
    MessageExt,
    MessageQueue,
    Producer,
    PushConsumer,
)
from rocketpipe.broker.metrics import MetricsServer
from rocketpipe.broker.pop import install
from rocketpipe.client.consumer.orderly import ConsumeOrderlyContext, ConsumeOrderlyStatus
from rocketpipe.client.consumer.simple import SimpleConsumer
from rocketpipe.client.metrics import AWAIT_TIME_BUCKETS_MS, PROCESS_TIME_BUCKETS_MS, SEND_COST_TIME_BUCKETS_MS
from rocketpipe.protocol.headers.pop import ConsumeInitMode
from rocketpipe.testing.cluster import LocalCluster, local_cluster
from waiting import wait_until

OK = ConsumeConcurrentlyStatus.CONSUME_SUCCESS
LATER = ConsumeConcurrentlyStatus.RECONSUME_LATER
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    # one-second delay levels: a RECONSUME_LATER message comes back quickly
    async with local_cluster(tmp_path / "store", message_delay_level=" ".join(["1s"] * 18)) as c:
        yield c


@pytest.fixture
async def served() -> AsyncIterator[tuple[CollectorRegistry, str]]:
    """A private registry and the URL it is served at."""
    registry = CollectorRegistry()
    srv = MetricsServer("127.0.0.1", 0, registry)
    srv.start()
    yield registry, f"http://{srv.address}/metrics"
    await asyncio.to_thread(srv.close)


async def scrape(url: str) -> Samples:
    async with httpx.AsyncClient() as http:
        resp = await http.get(url, timeout=10.0)
    resp.raise_for_status()
    out: Samples = {}
    for fam in text_string_to_metric_families(resp.text):
        for s in fam.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def total(samples: Samples, name: str, **labels: str) -> float:
    """Sum of the samples of ``name`` whose labels include ``labels`` (0 when none)."""
    want = set(labels.items())
    return sum(v for (n, lab), v in samples.items() if n == name and want <= lab)


def label_values(samples: Samples, name: str, label: str) -> set[str]:
    return {dict(lab)[label] for (n, lab) in samples if n == name}


def bucket_bounds(samples: Samples, name: str) -> set[str]:
    return label_values(samples, f"{name}_bucket", "le")


def les(bounds: tuple[float, ...]) -> set[str]:
    return {repr(b) for b in bounds} | {"+Inf"}


async def test_producer_and_concurrent_push_consumer_metrics(
    cluster: LocalCluster, served: tuple[CollectorRegistry, str]
) -> None:
    registry, url = served
    topic, group = "MetricsT", "cg-metrics"
    async with Admin(cluster.namesrv_addr) as admin:
        await admin.create_topic(topic, 2)
    config = ClientConfig(namesrv_addr=cluster.namesrv_addr, metrics=True, metrics_registry=registry)

    gate = asyncio.Event()
    calls = {"ok": 0, "later": 0}
    consumed: set[str] = set()

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        await gate.wait()
        body = msgs[0].body.decode()
        if int(body[1:]) % 5 == 0 and msgs[0].reconsume_times == 0:
            calls["later"] += 1
            return LATER
        calls["ok"] += 1
        consumed.add(body)
        return OK

    consumer = PushConsumer(group, config=config, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe(topic)
    consumer.register_message_listener(listener)
    producer = Producer("pg-metrics", config=config)
    bodies = [f"m{i:02d}" for i in range(25)]
    async with consumer, producer:
        assert consumer.client_id != producer.runtime.client_id  # two clients, one registry
        for body in bodies[:20]:
            await producer.send(Message.build(topic, body))
        await producer.send_batch([Message.build(topic, b) for b in bodies[20:]])  # one RPC, five messages
        with pytest.raises(BrokerError):  # queue 99 does not exist: the broker refuses the send
            await producer.send(Message.build(topic, "bad"), queue=MessageQueue(topic, "broker-a", 99))

        # during the load: the listener is held, so every pulled message is cached
        pid = producer.runtime.client_id
        during = await scrape(url)
        assert total(during, "rocketmq_send_cost_time_count", client_id=pid, invocation_status="success") == 25
        assert total(during, "rocketmq_send_cost_time_count", client_id=pid, invocation_status="failure") == 1
        assert total(during, "rocketmq_send_cost_time_bucket", client_id=pid, le="+Inf") == 26
        assert label_values(during, "rocketmq_send_cost_time_count", "topic") == {topic}
        assert bucket_bounds(during, "rocketmq_send_cost_time") == les(SEND_COST_TIME_BUCKETS_MS)

        cid = consumer.client_id

        async def all_cached() -> bool:
            s = await scrape(url)
            return total(s, "rocketmq_consumer_cached_messages", client_id=cid, topic=topic) == 25

        await wait_until(all_cached, timeout=20, what="25 messages cached while the listener is held")
        s = await scrape(url)
        assert total(s, "rocketmq_consumer_cached_bytes", client_id=cid, consumer_group=group, topic=topic) == sum(
            len(b) for b in bodies
        )
        assert total(s, "rocketmq_process_time_count", client_id=cid) == 0  # nothing finished yet

        gate.set()
        await wait_until(lambda: consumed == set(bodies), timeout=60, what="every message consumed, retries included")

        async def settled() -> bool:
            s = await scrape(url)
            done = total(s, "rocketmq_process_time_count", client_id=cid) == calls["ok"] + calls["later"]
            return done and total(s, "rocketmq_consumer_cached_messages", client_id=cid) == 0

        await wait_until(settled, timeout=20, what="every listener call recorded and the caches empty")
        after = await scrape(url)
        process = "rocketmq_process_time_count"
        assert calls["later"] == 5  # m00, m05, m10, m15, m20 failed once
        assert total(after, process, client_id=cid, consumer_group=group, invocation_status="failure") == 5
        assert total(after, process, client_id=cid, consumer_group=group, invocation_status="success") == calls["ok"]
        assert calls["ok"] == 25
        # retried messages are labelled with their topic, as the listener sees them (not %RETRY%)
        assert label_values(after, process, "topic") == {topic}
        assert total(after, "rocketmq_await_time_count", client_id=cid, topic=topic) == 30  # one per listener call
        assert bucket_bounds(after, "rocketmq_await_time") == les(AWAIT_TIME_BUCKETS_MS)
        assert bucket_bounds(after, "rocketmq_process_time") == les(PROCESS_TIME_BUCKETS_MS)
        # the held calls waited: their process time is in the sum
        assert total(after, "rocketmq_process_time_sum", client_id=cid) >= 0
        delivered = total(after, "rocketmq_delivery_latency_count", client_id=cid, consumer_group=group, topic=topic)
        assert 1 <= delivered <= 30  # one per pulled batch
        # the sends are unchanged by consumption
        assert total(after, "rocketmq_send_cost_time_count", client_id=pid) == 26
    closed = await scrape(url)
    assert total(closed, "rocketmq_send_cost_time_count") == 0  # a closed client's series are gone
    assert total(closed, "rocketmq_process_time_count") == 0
    assert total(closed, "rocketmq_consumer_cached_messages") == 0


async def test_plain_function_listener_batches(cluster: LocalCluster, served: tuple[CollectorRegistry, str]) -> None:
    """A plain-function listener (thread pool) with batches of up to 3: one await observation per
    call, one process observation per message."""
    registry, url = served
    topic, group = "MetricsSync", "cg-metrics-sync"
    async with Admin(cluster.namesrv_addr) as admin:
        await admin.create_topic(topic, 1)
    config = ClientConfig(namesrv_addr=cluster.namesrv_addr, metrics=True, metrics_registry=registry)
    async with Producer("pg-metrics-sync", namesrv_addr=cluster.namesrv_addr) as p:
        for i in range(9):
            await p.send(Message.build(topic, f"s{i}"))
    calls: list[int] = []

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        calls.append(len(msgs))
        return OK

    consumer = PushConsumer(
        group,
        config=config,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        consume_message_batch_max_size=3,
    )
    consumer.subscribe(topic)
    consumer.register_message_listener(listener)
    async with consumer:
        cid = consumer.client_id

        async def recorded() -> bool:
            return total(await scrape(url), "rocketmq_process_time_count", client_id=cid) == 9

        await wait_until(recorded, timeout=30, what="nine messages recorded")
        s = await scrape(url)
    assert sum(calls) == 9 and max(calls) <= 3
    labels = {"client_id": cid, "consumer_group": group, "topic": topic}
    assert total(s, "rocketmq_process_time_count", invocation_status="success", **labels) == 9
    assert total(s, "rocketmq_await_time_count", **labels) == len(calls)


async def test_orderly_push_consumer_metrics(cluster: LocalCluster, served: tuple[CollectorRegistry, str]) -> None:
    registry, url = served
    topic, group = "MetricsOrd", "cg-metrics-ord"
    async with Admin(cluster.namesrv_addr) as admin:
        await admin.create_topic(topic, 1)
    config = ClientConfig(namesrv_addr=cluster.namesrv_addr, metrics=True, metrics_registry=registry)
    async with Producer("pg-metrics-ord", config=config) as p:
        for i in range(4):
            await p.send(Message.build(topic, f"m{i}"))
    seen: list[tuple[str, int]] = []

    async def listener(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
        m = msgs[0]
        seen.append((m.body.decode(), m.reconsume_times))
        if m.body == b"m1" and m.reconsume_times < 2:
            ctx.suspend_current_queue_time_millis = 10
            return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        return ConsumeOrderlyStatus.SUCCESS

    consumer = PushConsumer(group, config=config, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe(topic)
    consumer.register_message_listener(listener, orderly=True)
    async with consumer:
        cid = consumer.client_id

        async def recorded() -> bool:
            return total(await scrape(url), "rocketmq_process_time_count", client_id=cid) == 6

        await wait_until(recorded, timeout=30, what="six orderly listener calls recorded")
        s = await scrape(url)
    assert seen == [("m0", 0), ("m1", 0), ("m1", 1), ("m1", 2), ("m2", 0), ("m3", 0)]
    labels = {"client_id": cid, "consumer_group": group, "topic": topic}
    assert total(s, "rocketmq_process_time_count", invocation_status="failure", **labels) == 2
    assert total(s, "rocketmq_process_time_count", invocation_status="success", **labels) == 4
    assert total(s, "rocketmq_await_time_count", **labels) == 6
    assert total(s, "rocketmq_delivery_latency_count", **labels) >= 1
    assert total(s, "rocketmq_consumer_cached_messages", **labels) == 0


async def test_pop_mode_push_consumer_metrics(cluster: LocalCluster, served: tuple[CollectorRegistry, str]) -> None:
    """PushConsumer(client_rebalance=False) on a POP group: delivery latency from the pop time,
    await and process time per listener call (Java 5's push consumer is POP-based)."""
    registry, url = served
    topic, group = "MetricsPopPush", "cg-metrics-pop-push"
    async with Admin(cluster.namesrv_addr) as admin:
        await admin.create_topic(topic, 1)
        await admin.set_message_request_mode(topic, group, "POP")
    config = ClientConfig(namesrv_addr=cluster.namesrv_addr, metrics=True, metrics_registry=registry)
    async with Producer("pg-metrics-pop-push", namesrv_addr=cluster.namesrv_addr) as p:
        for i in range(6):
            await p.send(Message.build(topic, f"q{i}"))
    calls = {"ok": 0, "later": 0}

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        if msgs[0].body == b"q0" and msgs[0].reconsume_times == 0:
            calls["later"] += 1
            return LATER
        calls["ok"] += 1
        return OK

    consumer = PushConsumer(
        group,
        config=config,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        client_rebalance=False,
    )
    consumer.subscribe(topic)
    consumer.register_message_listener(listener)
    async with consumer:
        cid = consumer.client_id
        labels = {"client_id": cid, "consumer_group": group, "topic": topic}

        async def recorded() -> bool:
            return total(await scrape(url), "rocketmq_process_time_count", **labels) == 6

        await wait_until(recorded, timeout=30, what="six popped messages recorded")
        s = await scrape(url)
    assert calls == {"ok": 5, "later": 1}
    assert total(s, "rocketmq_process_time_count", invocation_status="failure", **labels) == 1
    assert total(s, "rocketmq_process_time_count", invocation_status="success", **labels) == 5
    assert total(s, "rocketmq_await_time_count", **labels) == 6
    assert 1 <= total(s, "rocketmq_delivery_latency_count", **labels) <= 6  # one per popped batch


async def test_simple_consumer_records_delivery_latency(tmp_path: Path, served: tuple[CollectorRegistry, str]) -> None:
    registry, url = served
    topic, group = "MetricsPop", "cg-metrics-pop"
    async with local_cluster(tmp_path / "pop-store") as c:
        svc = install(c.broker)
        await svc.start()
        try:
            async with Admin(c.namesrv_addr) as admin:
                await admin.create_topic(topic, 2)
            config = ClientConfig(namesrv_addr=c.namesrv_addr, metrics=True, metrics_registry=registry)
            async with Producer("pg-metrics-pop", namesrv_addr=c.namesrv_addr) as p:
                for i in range(6):
                    await p.send(Message.build(topic, f"p{i}"))
            sc = SimpleConsumer(
                group, config=config, subscriptions={topic: "*"}, await_duration=0.3, init_mode=ConsumeInitMode.MIN
            )
            async with sc:
                got: list[MessageExt] = []
                receives = 0

                async def enough() -> bool:
                    nonlocal receives
                    msgs = await sc.receive(32, 30.0)
                    receives += 1 if msgs else 0
                    got.extend(msgs)
                    for m in msgs:
                        await sc.ack(m)
                    return len(got) >= 6

                await wait_until(enough, timeout=15, what="6 messages received")
                s = await scrape(url)
                labels = {"client_id": sc.client_id, "consumer_group": group, "topic": topic}
                assert total(s, "rocketmq_delivery_latency_count", **labels) == receives
                assert total(s, "rocketmq_delivery_latency_bucket", le="+Inf", **labels) == receives
                assert total(s, "rocketmq_send_cost_time_count") == 0  # that producer had metrics off
        finally:
            await svc.close()
