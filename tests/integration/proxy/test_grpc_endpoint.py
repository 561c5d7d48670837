"""The gRPC endpoint (``apache.rocketmq.v2.MessagingService``) driven by the official RocketMQ 5
Python SDK (``rocketmq-python-client`` from PyPI) over real TCP, in front of the embedded broker;
what it stored is read back with rocketpipe's remoting client."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from rocketmq import ClientConfiguration, Credentials, SendReceipt
from rocketmq import Message as SdkMessage
from rocketmq import Producer as SdkProducer

from rocketpipe import Admin, MessageExt
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
