"""The gRPC endpoint (``apache.rocketmq.v2.MessagingService``) driven by the official RocketMQ 5
Python SDK (``rocketmq-python-client`` from PyPI) over real TCP, in front of the embedded broker;
what it stored is read back with rocketpipe's remoting client."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from rocketmq import ClientConfiguration, Credentials, FilterExpression, SendReceipt, SimpleConsumer
from rocketmq import Message as SdkMessage
from rocketmq import Producer as SdkProducer

from rocketpipe import Admin, Message, MessageExt, Producer
from rocketpipe.protocol.message import decode_records
from rocketpipe.proxy import ProxyServer
from rocketpipe.testing.cluster import LocalCluster, local_cluster

TOPIC = "GrpcNormal"


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with local_cluster(tmp_path / "store", auto_create_topic_enable=False) as c:
        async with Admin(c.namesrv_addr) as admin:
            await admin.create_topic(TOPIC, 4)
        yield c


@pytest.fixture
async def proxy(cluster: LocalCluster) -> AsyncIterator[ProxyServer]:
    async with ProxyServer(cluster.namesrv_addr, port=0) as p:
        yield p


def sdk_send(endpoint: str, topic: str, messages: list[SdkMessage]) -> list[SendReceipt]:
    """Start the SDK's producer, send ``messages`` one by one (blocking), shut it down."""
    producer = SdkProducer(ClientConfiguration(endpoint, Credentials()), (topic,))
    producer.startup()
    try:
        return [producer.send(m) for m in messages]
    finally:
        producer.shutdown()


def sdk_message(topic: str, body: bytes, tag: str = "", key: str = "", **props: str) -> SdkMessage:
    m = SdkMessage()
    m.topic = topic
    m.body = body
    if tag:
        m.tag = tag
    if key:
        m.keys = key  # the SDK's setter takes one key
    for k, v in props.items():
        m.add_property(k, v)
    return m


async def stored(c: LocalCluster, topic: str) -> list[MessageExt]:
    async with Admin(c.namesrv_addr) as admin:
        out: list[MessageExt] = []
        for q in await admin.topic_queues(topic):
            raw = await admin.pull_raw(q, 0, 64)
            if raw.body:
                out.extend(decode_records(raw.body))
    return out


async def test_sdk_producer_stores_messages_with_tags_keys_and_properties(
    cluster: LocalCluster, proxy: ProxyServer
) -> None:
    messages = [sdk_message(TOPIC, f"m{i}".encode(), "TagA", f"k{i}", n=str(i)) for i in range(6)]
    receipts = await asyncio.to_thread(sdk_send, proxy.address, TOPIC, messages)
    got = {m.msg_id: m for m in await stored(cluster, TOPIC)}
    assert len(got) == 6
    for i, receipt in enumerate(receipts):
        m = got[receipt.message_id]  # the SDK's message id is the stored UNIQ_KEY
        assert m.body == f"m{i}".encode()
        assert m.tags == "TagA"
        assert m.keys == f"k{i}"
        assert m.properties["n"] == str(i)
        assert m.properties["PGROUP"] == TOPIC  # Java's proxy uses the topic as producer group
        assert m.queue_offset == receipt.offset
    # round-robin over the 4 write queues
    assert len({m.queue_id for m in got.values()}) == 4


async def test_sdk_send_to_an_unknown_topic_fails_with_topic_not_found(
    cluster: LocalCluster, proxy: ProxyServer, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(Exception, match="failed to fetch topic:NoSuchTopic route"):
        await asyncio.to_thread(sdk_send, proxy.address, "NoSuchTopic", [sdk_message("NoSuchTopic", b"x")])
    # the SDK logs the QueryRoute status it got: TOPIC_NOT_FOUND (40402) with the name server's words
    assert any("40402" in r.getMessage() and "NoSuchTopic" in r.getMessage() for r in caplog.records)
    assert await stored(cluster, TOPIC) == []


def sdk_consume(endpoint: str, group: str, topic: str, expression: str, want: int) -> dict[str, list[int]]:
    """The SDK's SimpleConsumer: receive until ``want`` distinct messages arrived, giving the
    first one back for redelivery (change invisible duration to 1 s) and acknowledging the rest;
    then wait for the redelivery and acknowledge it. Returns body → delivery attempts seen."""
    consumer = SimpleConsumer(
        ClientConfiguration(endpoint, Credentials()), group, {topic: FilterExpression(expression)}, await_duration=5
    )
    consumer.startup()
    seen: dict[str, list[int]] = {}
    try:
        gave_back = False
        for _ in range(20):  # bounded: each receive long-polls at most 5 s
            for m in consumer.receive(16, 15):
                body = m.body.decode()
                seen.setdefault(body, []).append(m.delivery_attempt)
                if not gave_back:
                    consumer.change_invisible_duration(m, 1)
                    gave_back = True
                else:
                    consumer.ack(m)
            if len(seen) == want and any(len(v) == 2 for v in seen.values()):
                return seen
        raise AssertionError(f"after 20 receives: {seen}")
    finally:
        consumer.shutdown()


async def test_sdk_simple_consumer_receives_filters_acks_and_redelivers(
    cluster: LocalCluster, proxy: ProxyServer
) -> None:
    async with Producer("pg", namesrv_addr=cluster.namesrv_addr) as p:
        for i in range(8):
            await p.send(Message.build(TOPIC, f"m{i}", tags="TagA" if i % 2 == 0 else "TagB", properties={"n": str(i)}))
    seen = await asyncio.to_thread(sdk_consume, proxy.address, "GrpcGroup", TOPIC, "TagA", 4)
    assert sorted(seen) == ["m0", "m2", "m4", "m6"]  # TagB filtered out
    redelivered = [body for body, attempts in seen.items() if len(attempts) == 2]
    assert len(redelivered) == 1 and seen[redelivered[0]] == [1, 2]
    assert all(attempts == [1] for body, attempts in seen.items() if body not in redelivered)
