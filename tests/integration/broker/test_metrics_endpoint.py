"""The Prometheus endpoint over real HTTP while a real producer and consumers run (local_cluster)."""

from __future__ import annotations

import asyncio
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from rocketpipe import Admin, ConsumeFromWhere, Message, MessageExt, MessageQueue, Producer
from rocketpipe.broker.metrics import BrokerCollector, MetricsServer
from rocketpipe.client.consumer.lite_pull import LitePullConsumer
from rocketpipe.namesrv.metrics import NamesrvCollector
from rocketpipe.testing.cluster import LocalCluster, local_cluster
from waiting import wait_until

TOPIC = "MetricsTopic"
N = 60
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with local_cluster(tmp_path / "store", mapped_file_size_commit_log=8 * 1024 * 1024) as c:
        yield c


@pytest.fixture
async def server(cluster: LocalCluster) -> AsyncIterator[MetricsServer]:
    registry = CollectorRegistry()
    registry.register(BrokerCollector(cluster.broker))
    registry.register(NamesrvCollector(cluster.namesrv))
    srv = MetricsServer("127.0.0.1", 0, registry)
    srv.start()
    yield srv
    await asyncio.to_thread(srv.close)


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10.0) as resp:
        return str(resp.read().decode())


async def scrape(srv: MetricsServer) -> Samples:
    text = await asyncio.to_thread(_get, f"http://{srv.address}/metrics")
    out: Samples = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def total(samples: Samples, name: str, **labels: str) -> float:
    """Sum of the samples of ``name`` whose labels include ``labels`` (0 when none)."""
    want = set(labels.items())
    return sum(v for (n, lab), v in samples.items() if n == name and want <= lab)


async def consume_and_commit(c: LocalCluster, group: str, queues: list[MessageQueue], k: int) -> LitePullConsumer:
    """Poll at least ``k`` messages as ``group`` and commit exactly the first ``k`` (every queue gets an offset)."""
    consumer = LitePullConsumer(
        group,
        namesrv_addr=c.namesrv_addr,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        auto_commit=False,
    )
    consumer.assign(queues)  # before start: the first heartbeat then reaches the topic's broker
    await consumer.start()
    got: list[MessageExt] = []

    async def enough() -> bool:
        got.extend(await consumer.poll(0.2))
        return len(got) >= k

    await wait_until(enough, timeout=20.0, what=f"{group} polls {k} messages")
    offsets = dict.fromkeys(queues, 0)
    for m in got[:k]:  # per queue, poll order is offset order from 0: the first k are a prefix of each queue
        offsets[m.message_queue] = max(offsets[m.message_queue], m.queue_offset + 1)
    assert sum(offsets.values()) == k
    await consumer.commit(offsets, persist=True)
    return consumer


async def test_scraped_counters_match_what_was_sent_and_consumed(cluster: LocalCluster, server: MetricsServer) -> None:
    async with Admin(cluster.namesrv_addr) as admin:
        await admin.create_topic(TOPIC, 4)
        queues = await admin.topic_queues(TOPIC)
    assert len(queues) == 4

    async def produce() -> None:
        async with Producer("metrics-pg", namesrv_addr=cluster.namesrv_addr) as p:
            for i in range(N):
                await p.send(Message.build(TOPIC, bytes([65 + i % 26]) * (40 * i + 1)))  # 1 B .. 2.4 KB

    producing = asyncio.create_task(produce())
    seen: list[float] = []

    async def all_in() -> bool:
        seen.append(total(await scrape(server), "rocketmq_messages_in_total", topic=TOPIC, message_type="normal"))
        return producing.done() and seen[-1] == N

    await wait_until(all_in, timeout=30.0, what=f"{N} messages in on the endpoint")
    await producing
    assert seen == sorted(seen), seen  # a counter never goes back, scrape after scrape
    samples = await scrape(server)

    # bytes in: the commit-log records of the topic, read back from the store
    records = [buf for q in range(4) for buf in cluster.broker.store.get_message(TOPIC, q, 0, N).buffers]
    assert len(records) == N
    sizes = [len(r) for r in records]
    labels = {"topic": TOPIC, "message_type": "normal", "is_system": "false", "node_id": "broker-a"}
    assert total(samples, "rocketmq_throughput_in_total", **labels) == sum(sizes)
    assert total(samples, "rocketmq_message_size_count", **labels) == N  # one put per send
    assert total(samples, "rocketmq_message_size_sum", **labels) == sum(sizes)
    assert total(samples, "rocketmq_message_size_bucket", le="1024.0", **labels) == sum(1 for s in sizes if s <= 1024)
    assert total(samples, "rocketmq_message_size_bucket", le="+Inf", **labels) == N

    # consumers: two groups, each commits a different number of messages; lag = N - committed
    a = await consume_and_commit(cluster, "metrics-cg-a", queues, 25)
    b = await consume_and_commit(cluster, "metrics-cg-b", queues, 7)
    try:

        async def lag_and_out() -> bool:
            s = await scrape(server)
            return (
                total(s, "rocketmq_consumer_lag_messages", topic=TOPIC, consumer_group="metrics-cg-a") == N - 25
                and total(s, "rocketmq_consumer_lag_messages", topic=TOPIC, consumer_group="metrics-cg-b") == N - 7
                # each group's fetcher pulls the whole topic ahead of the polls
                and total(s, "rocketmq_messages_out_total", topic=TOPIC, consumer_group="metrics-cg-a") == N
                and total(s, "rocketmq_messages_out_total", topic=TOPIC, consumer_group="metrics-cg-b") == N
            )

        await wait_until(lag_and_out, timeout=30.0, what="lag per group and messages out on the endpoint")
        s = await scrape(server)
        for group in ("metrics-cg-a", "metrics-cg-b"):  # bytes out: every record once per group
            assert total(s, "rocketmq_throughput_out_total", topic=TOPIC, consumer_group=group) == sum(sizes)
            conn = {"consumer_group": group, "consume_mode": "pull", "language": "python", "is_system": "false"}
            assert total(s, "rocketmq_consumer_connections", **conn) == 1
        assert total(s, "rocketmq_topic_number", node_type="broker") == len(cluster.broker.topics.topics)
        assert total(s, "rocketmq_namesrv_live_brokers", cluster="DefaultCluster", node_type="namesrv") == 1
        routed = cluster.namesrv.routes.topic_list().topic_list
        assert TOPIC in routed
        assert total(s, "rocketmq_namesrv_topic_number", node_id=cluster.namesrv_addr) == len(routed)
        assert total(s, "rocketmq_storage_size_bytes", node_id="broker-a") > 0
    finally:
        await a.close()
        await b.close()


async def test_metrics_server_binds_an_ephemeral_port_and_releases_it(cluster: LocalCluster) -> None:
    registry = CollectorRegistry()
    registry.register(BrokerCollector(cluster.broker))
    srv = MetricsServer("127.0.0.1", 0, registry)
    port = srv.start()
    try:
        assert port > 0 and srv.address == f"127.0.0.1:{port}"
        with pytest.raises(RuntimeError):
            srv.start()
        assert "rocketmq_topic_number" in await asyncio.to_thread(_get, f"http://{srv.address}/metrics")
    finally:
        await asyncio.to_thread(srv.close)
    await asyncio.to_thread(srv.close)  # idempotent
    with pytest.raises(urllib.error.URLError):
        await asyncio.to_thread(_get, f"http://127.0.0.1:{port}/metrics")
