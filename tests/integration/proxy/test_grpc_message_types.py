"""Topic message types through the gRPC endpoint, with the topic message type check on (the
default, Java's ``enableTopicMessageTypeCheck``): QueryRoute gives each queue the
``accept_message_types`` of the topic's ``message.type`` attribute, read from the broker's topic
config, so the official RocketMQ 5 Python SDK sends FIFO / DELAY messages to topics created with
that type and refuses (itself, before any send) a message type its topic does not accept; the
endpoint refuses a mismatch too (raw SendMessage calls)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from rocketmq import ClientConfiguration, Credentials, SendReceipt
from rocketmq import Message as SdkMessage
from rocketmq import Producer as SdkProducer
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as spb

from grpc_raw import raw_message, raw_send
from rocketpipe import Admin, MessageExt
from rocketpipe.protocol.message import decode_records
from rocketpipe.protocol.names import TIMER_TOPIC
from rocketpipe.proxy import ProxyServer
from rocketpipe.testing.cluster import LocalCluster, local_cluster
from waiting import wait_until_sync

#: topic → ``message.type`` it is created with (None: no attribute)
TOPICS = {"GrpcFifo": "FIFO", "GrpcDelay": "DELAY", "GrpcTxType": "TRANSACTION", "GrpcNormal": None}


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with local_cluster(tmp_path / "store", auto_create_topic_enable=False) as c:
        async with Admin(c.namesrv_addr) as admin:
            for topic, kind in TOPICS.items():
                await admin.create_topic(topic, 4, attributes=f"+message.type={kind}" if kind else None)
        yield c


@pytest.fixture
async def proxy(cluster: LocalCluster) -> AsyncIterator[ProxyServer]:
    async with ProxyServer(cluster.namesrv_addr, port=0) as p:  # the type check stays on
        yield p


def start_producer(endpoint: str, topic: str) -> SdkProducer:
    """The SDK's producer of ``topic``, started with the endpoint's settings applied."""
    producer = SdkProducer(ClientConfiguration(endpoint, Credentials()), (topic,))
    producer.startup()
    wait_until_sync(producer._init_settings_event.is_set, timeout=10, what="the SDK got its settings")
    return producer


def message(topic: str, body: str, group: str = "", deliver_at: int = 0) -> SdkMessage:
    m = SdkMessage()
    m.topic = topic
    m.body = body.encode()
    if group:
        m.message_group = group
    if deliver_at:
        m.delivery_timestamp = deliver_at
    return m


def send_all(endpoint: str, topic: str, messages: list[SdkMessage]) -> list[SendReceipt]:
    producer = start_producer(endpoint, topic)
    try:
        return [producer.send(m) for m in messages]
    finally:
        producer.shutdown()


def send_refused(endpoint: str, topic: str, m: SdkMessage) -> Exception:
    """Send ``m``; return what the SDK raised (AssertionError when it was sent)."""
    producer = start_producer(endpoint, topic)
    try:
        producer.send(m)
    except Exception as exc:
        return exc
    finally:
        producer.shutdown()
    raise AssertionError(f"the SDK sent {m.body!r} to {topic}")


async def stored(c: LocalCluster, topic: str) -> list[MessageExt]:
    async with Admin(c.namesrv_addr) as admin:
        out: list[MessageExt] = []
        for q in await admin.topic_queues(topic):
            raw = await admin.pull_raw(q, 0, 64)
            if raw.body:
                out.extend(decode_records(raw.body))
    return out


async def test_query_route_gives_the_topics_message_type(cluster: LocalCluster, proxy: ProxyServer) -> None:
    assert proxy.service is not None
    expected = {
        "GrpcFifo": [pb.MessageType.FIFO],
        "GrpcDelay": [pb.MessageType.DELAY],
        "GrpcTxType": [pb.MessageType.TRANSACTION],
        "GrpcNormal": [pb.MessageType.NORMAL],  # unset: TopicConfig.getTopicMessageType says NORMAL
    }
    for topic, types in expected.items():
        request = spb.QueryRouteRequest(topic=pb.Resource(name=topic))
        resp = await proxy.service.QueryRoute(request, None)
        assert resp.status.code == pb.Code.OK
        assert len(resp.message_queues) == 4
        assert {tuple(q.accept_message_types) for q in resp.message_queues} == {tuple(types)}, topic


async def test_fifo_topic_accepts_message_group_messages(cluster: LocalCluster, proxy: ProxyServer) -> None:
    messages = [message("GrpcFifo", f"f{i}", group="order-1") for i in range(4)]
    receipts = await asyncio.to_thread(send_all, proxy.address, "GrpcFifo", messages)
    got = {m.msg_id: m for m in await stored(cluster, "GrpcFifo")}
    assert sorted(got) == sorted(r.message_id for r in receipts)
    assert {m.properties["__SHARDINGKEY"] for m in got.values()} == {"order-1"}
    assert len({m.queue_id for m in got.values()}) == 1  # one group, one queue
    assert [got[r.message_id].body for r in receipts] == [b"f0", b"f1", b"f2", b"f3"]


async def test_delay_topic_accepts_a_delivery_timestamp(cluster: LocalCluster, proxy: ProxyServer) -> None:
    # this SDK copies ``delivery_timestamp`` into the protobuf Timestamp's seconds as it is: pass
    # epoch seconds. An hour away: still parked when the test ends.
    deliver_at = int(time.time()) + 3600
    receipts = await asyncio.to_thread(
        send_all, proxy.address, "GrpcDelay", [message("GrpcDelay", "later", deliver_at=deliver_at)]
    )
    assert len(receipts) == 1 and receipts[0].message_id
    assert await stored(cluster, "GrpcDelay") == []  # not visible before its time
    assert cluster.broker.store.get_max_offset(TIMER_TOPIC, 0) == 1  # parked in the timer topic


async def test_sdk_refuses_types_the_topic_does_not_accept(cluster: LocalCluster, proxy: ProxyServer) -> None:
    refusals = [
        ("GrpcNormal", message("GrpcNormal", "fifo-on-normal", group="g"), "message_type:FIFO"),
        ("GrpcFifo", message("GrpcFifo", "normal-on-fifo"), "message_type:NORMAL"),
        ("GrpcDelay", message("GrpcDelay", "fifo-on-delay", group="g"), "message_type:FIFO"),
    ]
    for topic, m, kind in refusals:
        exc = await asyncio.to_thread(send_refused, proxy.address, topic, m)
        assert type(exc).__name__ == "IllegalArgumentException"
        assert "current message type not match with queue accept message types" in str(exc)
        assert kind in str(exc)
    assert await stored(cluster, "GrpcNormal") == []
    assert await stored(cluster, "GrpcFifo") == []


async def test_endpoint_refuses_a_type_the_topic_does_not_take(cluster: LocalCluster, proxy: ProxyServer) -> None:
    """Raw SendMessage calls (no SDK check before them): the endpoint checks the first message's
    type against its topic's, as Apache's proxy (``ProducerProcessor.sendMessage``), and stores
    nothing it refuses; a topic the name server does not know is UNSPECIFIED, as Java's."""
    cases = [
        ("GrpcFifo", raw_message("GrpcFifo", "normal-on-fifo"), "FIFO", "NORMAL"),
        ("GrpcNormal", raw_message("GrpcNormal", "fifo-on-normal", group="g"), "NORMAL", "FIFO"),
        ("GrpcTxType", raw_message("GrpcTxType", "delay-on-tx", deliver_at_ms=int(time.time() * 1000) + 60_000),
         "TRANSACTION", "DELAY"),
        ("NoSuchTopic", raw_message("NoSuchTopic", "nowhere"), "UNSPECIFIED", "NORMAL"),
    ]  # fmt: skip
    for topic, m, expected, actual in cases:
        response = await raw_send(proxy.address, [m])
        assert response.status.code == pb.Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, (topic, response)
        assert response.status.message == (
            "org.apache.rocketmq.proxy.common.ProxyException: TopicMessageType validate failed, "
            f"the expected type is {expected}, but actual type is {actual}"
        )
        assert list(response.entries) == []
    for topic in ("GrpcFifo", "GrpcNormal", "GrpcTxType"):
        assert await stored(cluster, topic) == []
    # a batch is checked by its first message
    batch = [raw_message("GrpcFifo", "f", group="g"), raw_message("GrpcFifo", "n")]
    response = await raw_send(proxy.address, batch)
    assert response.status.code == pb.Code.OK, response
    assert sorted(m.body for m in await stored(cluster, "GrpcFifo")) == [b"f", b"n"]


async def test_without_the_check_any_type_goes_to_any_topic(cluster: LocalCluster) -> None:
    async with ProxyServer(cluster.namesrv_addr, port=0, enable_topic_message_type_check=False) as p:
        response = await raw_send(p.address, [raw_message("GrpcFifo", "normal-on-fifo")])
    assert response.status.code == pb.Code.OK, response
    assert [m.body for m in await stored(cluster, "GrpcFifo")] == [b"normal-on-fifo"]
