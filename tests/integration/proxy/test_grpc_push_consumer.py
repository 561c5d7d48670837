"""The PushConsumer's calls of the gRPC endpoint: the official Python SDK's ``PushConsumer``
(``rocketmq-python-client``) consuming through it — deliveries, redelivery of a listener
failure per the retry policy Telemetry hands out, the dead-letter queue after the group's max
attempts — and QueryAssignment / ForwardMessageToDeadLetterQueue as raw gRPC calls through the
generated stubs, over real TCP in front of embedded brokers."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from rocketmq import ClientConfiguration, ConsumeResult, Credentials, FilterExpression, MessageListener, PushConsumer
from rocketmq import Message as SdkMessage
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as spb
from rocketmq.grpc_protocol import service_pb2_grpc as sgrpc

from rocketpipe import Admin, Message, MessageExt, Producer
from rocketpipe.protocol.bodies.admin import SubscriptionGroupConfig
from rocketpipe.protocol.message import decode_records
from rocketpipe.proxy import ProxyServer
from rocketpipe.testing.cluster import LocalCluster, local_cluster
from waiting import wait_until

TOPIC = "GrpcPush"
GROUP = "GrpcPushGroup"


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with local_cluster(tmp_path / "store", brokers=2, auto_create_topic_enable=False) as c:
        async with Admin(c.namesrv_addr) as admin:
            for addr in c.broker_addrs:
                await admin.create_topic(TOPIC, 2, broker_addr=addr)
                # retryMaxTimes 1: two deliveries, then the dead-letter queue
                await admin.create_and_update_subscription_group_config(
                    addr, SubscriptionGroupConfig(GROUP, retry_max_times=1)
                )
            await wait_until(lambda: _routed(admin), timeout=30, what="topic on both brokers")
        yield c


async def _routed(admin: Admin) -> bool:
    return len(await admin.topic_queues(TOPIC)) == 4


@pytest.fixture
async def proxy(cluster: LocalCluster) -> AsyncIterator[ProxyServer]:
    async with ProxyServer(cluster.namesrv_addr, port=0) as p:
        yield p


async def stored(c: LocalCluster, topic: str) -> list[MessageExt]:
    async with Admin(c.namesrv_addr) as admin:
        out: list[MessageExt] = []
        try:
            queues = await admin.topic_queues(topic)
        except Exception:
            return []
        for q in queues:
            raw = await admin.pull_raw(q, 0, 64)
            if raw.body:
                out.extend(decode_records(raw.body))
    return out


class Recording(MessageListener):  # type: ignore[misc]
    """Records (body, delivery attempt); fails ``bad`` always and ``flaky`` on its first attempt."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: dict[str, list[int]] = {}

    def consume(self, message: SdkMessage) -> ConsumeResult:
        body = message.body.decode()
        with self.lock:
            self.seen.setdefault(body, []).append(message.delivery_attempt)
        if body == "bad" or (body == "flaky" and message.delivery_attempt == 1):
            raise RuntimeError(f"listener fails {body}")
        return ConsumeResult.SUCCESS

    def attempts(self, body: str) -> list[int]:
        with self.lock:
            return list(self.seen.get(body, []))


async def test_sdk_push_consumer_consumes_redelivers_and_dead_letters(
    cluster: LocalCluster, proxy: ProxyServer
) -> None:
    bodies = ["ok0", "ok1", "ok2", "ok3", "flaky", "bad"]
    async with Producer("pg", namesrv_addr=cluster.namesrv_addr) as p:
        sent = {b: (await p.send(Message.build(TOPIC, b, tags="TagA"))).msg_id for b in bodies}
    listener = Recording()
    consumer = PushConsumer(
        ClientConfiguration(proxy.address, Credentials()), GROUP, listener, {TOPIC: FilterExpression("TagA")}
    )
    await asyncio.to_thread(consumer.startup)
    try:
        await wait_until(
            lambda: all(listener.attempts(b) == [1] for b in bodies[:4]), timeout=60, what="the good messages"
        )
        # the failure is redelivered after the first backoff of the group's policy (1 s)
        await wait_until(lambda: listener.attempts("flaky") == [1, 2], timeout=60, what="flaky redelivered")

        async def dead_lettered() -> bool:
            return any(m.body == b"bad" for m in await stored(cluster, f"%DLQ%{GROUP}"))

        await wait_until(dead_lettered, timeout=90, interval=0.5, what="bad in %DLQ%")
    finally:
        await asyncio.to_thread(consumer.shutdown)
    # retryMaxTimes + 1 = 2 deliveries of the failing message, then the DLQ, not a third
    assert listener.attempts("bad") == [1, 2]
    assert listener.attempts("flaky") == [1, 2]
    [dlq] = [m for m in await stored(cluster, f"%DLQ%{GROUP}") if m.body == b"bad"]
    assert dlq.msg_id == sent["bad"]  # the same UNIQ_KEY: the message id the SDK saw


def _stub(proxy: ProxyServer) -> tuple[grpc.aio.Channel, sgrpc.MessagingServiceStub]:
    channel = grpc.aio.insecure_channel(proxy.address)
    return channel, sgrpc.MessagingServiceStub(channel)


def _endpoints(proxy: ProxyServer) -> pb.Endpoints:
    host, port = proxy.address.rsplit(":", 1)
    return pb.Endpoints(scheme=pb.AddressScheme.IPv4, addresses=[pb.Address(host=host, port=int(port))])


async def test_query_assignment_gives_one_pop_queue_per_readable_broker(
    cluster: LocalCluster, proxy: ProxyServer
) -> None:
    channel, stub = _stub(proxy)
    async with channel:
        ends = _endpoints(proxy)
        request = spb.QueryAssignmentRequest(
            topic=pb.Resource(name=TOPIC), group=pb.Resource(name=GROUP), endpoints=ends
        )
        response = await stub.QueryAssignment(request, timeout=10)
        assert response.status.code == pb.Code.OK
        queues = [a.message_queue for a in response.assignments]
        assert sorted(q.broker.name for q in queues) == ["broker-a", "broker-b"]
        for q in queues:
            assert q.id == -1 and q.permission == pb.Permission.READ_WRITE and q.topic.name == TOPIC
            assert q.broker.id == 0 and q.broker.endpoints == ends  # the endpoint itself, not the broker

        missing = spb.QueryAssignmentRequest(
            topic=pb.Resource(name="NoSuchTopic"), group=pb.Resource(name=GROUP), endpoints=ends
        )
        assert (await stub.QueryAssignment(missing, timeout=10)).status.code == pb.Code.TOPIC_NOT_FOUND
        bad_group = spb.QueryAssignmentRequest(
            topic=pb.Resource(name=TOPIC), group=pb.Resource(name="bad group!"), endpoints=ends
        )
        assert (await stub.QueryAssignment(bad_group, timeout=10)).status.code == pb.Code.ILLEGAL_CONSUMER_GROUP


async def _receive_one(stub: sgrpc.MessagingServiceStub, broker: str) -> pb.Message:
    request = spb.ReceiveMessageRequest(
        group=pb.Resource(name=GROUP),
        message_queue=pb.MessageQueue(topic=pb.Resource(name=TOPIC), id=-1, broker=pb.Broker(name=broker)),
        filter_expression=pb.FilterExpression(type=pb.FilterType.TAG, expression="*"),
        batch_size=1,
        auto_renew=False,
    )
    request.invisible_duration.FromSeconds(30)
    request.long_polling_timeout.FromSeconds(5)
    metadata = (("x-mq-client-id", f"raw-{uuid.uuid4()}"),)
    for _ in range(10):  # bounded: each receive long-polls at most 5 s
        got = [r async for r in stub.ReceiveMessage(request, timeout=20, metadata=metadata)]
        messages = [r.message for r in got if r.HasField("message")]
        if messages:
            return messages[0]
    raise AssertionError(f"nothing received from {broker}")


async def test_forward_message_to_dead_letter_queue_stores_it_in_the_dlq(
    cluster: LocalCluster, proxy: ProxyServer
) -> None:
    async with Producer("pg", namesrv_addr=cluster.namesrv_addr) as p:
        result = await p.send(Message.build(TOPIC, b"to-dlq", tags="TagA"))
    broker = result.message_queue.broker_name
    channel, stub = _stub(proxy)
    async with channel:
        m = await _receive_one(stub, broker)
        assert m.body == b"to-dlq" and m.system_properties.delivery_attempt == 1
        handle = m.system_properties.receipt_handle
        assert len(handle.split(" ")) == 9  # the broker's handle + the commit-log offset

        def forward(receipt_handle: str) -> spb.ForwardMessageToDeadLetterQueueRequest:
            return spb.ForwardMessageToDeadLetterQueueRequest(
                group=pb.Resource(name=GROUP),
                topic=pb.Resource(name=TOPIC),
                receipt_handle=receipt_handle,
                message_id=m.system_properties.message_id,
                delivery_attempt=1,
                max_delivery_attempts=2,
            )

        no_offset = " ".join(handle.split(" ")[:8])
        refused = await stub.ForwardMessageToDeadLetterQueue(forward(no_offset), timeout=10)
        assert refused.status.code == pb.Code.INVALID_RECEIPT_HANDLE
        assert (await stub.ForwardMessageToDeadLetterQueue(forward("junk"), timeout=10)).status.code == (
            pb.Code.INVALID_RECEIPT_HANDLE
        )
        response = await stub.ForwardMessageToDeadLetterQueue(forward(handle), timeout=10)
        assert response.status.code == pb.Code.OK
    [dlq] = await stored(cluster, f"%DLQ%{GROUP}")
    assert dlq.body == b"to-dlq" and dlq.msg_id == m.system_properties.message_id
    assert dlq.properties["RETRY_TOPIC"] == TOPIC  # the origin topic


async def _set_retry_max_times(cluster: LocalCluster, group: str, times: int) -> None:
    async with Admin(cluster.namesrv_addr) as admin:
        for addr in cluster.broker_addrs:
            await admin.create_and_update_subscription_group_config(
                addr, SubscriptionGroupConfig(group, retry_max_times=times)
            )


async def test_receive_forwards_a_message_past_the_clients_max_attempts_to_the_dlq(
    cluster: LocalCluster, proxy: ProxyServer
) -> None:
    """``PopMessageResultFilterImpl``'s TO_DLQ: the endpoint itself dead-letters a popped message
    whose reconsume times reached the max attempts it handed the client in its settings (here 1,
    while the broker's own limit is 16, so the broker would redeliver it)."""
    group = "GrpcProxyDlq"
    await _set_retry_max_times(cluster, group, 0)  # max attempts 1 in the settings below
    metadata = (("x-mq-client-id", f"raw-{uuid.uuid4()}"),)
    channel, stub = _stub(proxy)
    async with channel:
        telemetry = stub.Telemetry(metadata=metadata)
        settings = pb.Settings(
            client_type=pb.ClientType.SIMPLE_CONSUMER,
            subscription=pb.Subscription(
                group=pb.Resource(name=group),
                subscriptions=[pb.SubscriptionEntry(topic=pb.Resource(name=TOPIC), expression=pb.FilterExpression())],
            ),
        )
        await telemetry.write(spb.TelemetryCommand(settings=settings))
        answer = await telemetry.read()
        await telemetry.done_writing()
        assert answer.status.code == pb.Code.OK and answer.settings.backoff_policy.max_attempts == 1
        assert answer.settings.backoff_policy.customized_backoff.next[0].seconds == 1
        await _set_retry_max_times(cluster, group, 16)  # the broker redelivers from now on

        async with Producer("pg", namesrv_addr=cluster.namesrv_addr) as p:
            result = await p.send(Message.build(TOPIC, b"twice", tags="TagA"))
        broker = result.message_queue.broker_name
        request = spb.ReceiveMessageRequest(
            group=pb.Resource(name=group),
            message_queue=pb.MessageQueue(topic=pb.Resource(name=TOPIC), id=-1, broker=pb.Broker(name=broker)),
            filter_expression=pb.FilterExpression(type=pb.FilterType.TAG, expression="*"),
            batch_size=1,
        )
        request.invisible_duration.FromSeconds(30)
        request.long_polling_timeout.FromSeconds(5)
        first = [r async for r in stub.ReceiveMessage(request, timeout=20, metadata=metadata)]
        [m] = [r.message for r in first if r.HasField("message")]
        assert m.body == b"twice" and m.system_properties.delivery_attempt == 1
        assert first[-1].HasField("delivery_timestamp")  # Java's stream writer ends with it
        change = spb.ChangeInvisibleDurationRequest(
            group=pb.Resource(name=group),
            topic=pb.Resource(name=TOPIC),
            receipt_handle=m.system_properties.receipt_handle,
            message_id=m.system_properties.message_id,
        )
        change.invisible_duration.FromSeconds(1)
        assert (await stub.ChangeInvisibleDuration(change, timeout=10, metadata=metadata)).status.code == pb.Code.OK

        async def dead_lettered() -> bool:
            # each receive may pop the revived copy (reconsume times 1): the endpoint forwards it
            got = [r async for r in stub.ReceiveMessage(request, timeout=20, metadata=metadata)]
            assert not [r for r in got if r.HasField("message")], "delivered past the max attempts"
            return any(x.body == b"twice" for x in await stored(cluster, f"%DLQ%{group}"))

        await wait_until(dead_lettered, timeout=90, interval=0.1, what="twice in the DLQ")
    [dlq] = await stored(cluster, f"%DLQ%{group}")
    assert dlq.msg_id == m.system_properties.message_id
