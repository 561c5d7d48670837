"""Request-reply over real TCP against the embedded broker: a PushConsumer answers each request
with ``create_reply_message`` + ``Producer.send`` (SEND_REPLY_MESSAGE_V2), the broker pushes the
reply to the requester (PUSH_REPLY_MESSAGE_TO_CLIENT) and stores it in
``DefaultCluster_REPLY_TOPIC``; ``Producer.request`` returns it, times out with
``ReplyTimeoutError`` when nobody answers, and matches concurrent requests to their replies."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from rocketpipe import (
    Admin,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    Message,
    MessageExt,
    MessageQueue,
    Producer,
    PushConsumer,
    ReplyTimeoutError,
    SendResult,
    SendStatus,
    SyncProducer,
    create_reply_message,
)
from rocketpipe.client.producer.selectors import select_by_hash
from rocketpipe.client.request_reply import PROPERTY_REPLY_MESSAGE_ARRIVE_TIME
from rocketpipe.errors import BrokerError
from rocketpipe.protocol.message import decode_records
from rocketpipe.testing.cluster import LocalCluster, local_cluster
from waiting import wait_until

REPLY_TOPIC = "DefaultCluster_REPLY_TOPIC"
OK = ConsumeConcurrentlyStatus.CONSUME_SUCCESS

#: Generous: the first request also waits for the replier's first rebalance.
FIRST_TIMEOUT = 20.0

Answer = Callable[[MessageExt], Awaitable[bytes | None]]


class Replier:
    """A PushConsumer + Producer that answers requests; records requests and reply results."""

    def __init__(self) -> None:
        self.requests: list[MessageExt] = []
        self.results: list[SendResult] = []
        self.errors: list[BaseException] = []


@asynccontextmanager
async def replier(c: LocalCluster, topic: str, answer: Answer | None = None) -> AsyncIterator[Replier]:
    """Answer every request on ``topic`` with ``answer(request)`` (default ``b"re:" + body``);
    None = no answer."""
    r = Replier()

    async def default(m: MessageExt) -> bytes | None:
        return b"re:" + m.body

    fn = answer or default
    async with Producer("replier-pg", namesrv_addr=c.namesrv_addr) as producer:
        consumer = PushConsumer(
            "replier-cg", namesrv_addr=c.namesrv_addr, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
        )
        consumer.subscribe(topic, "*")

        async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
            for m in msgs:
                r.requests.append(m)
                body = await fn(m)
                if body is None:
                    continue
                reply = create_reply_message(m, body)
                reply.properties["answeredBy"] = "replier"
                try:
                    r.results.append(await producer.send(reply))
                except BrokerError as exc:
                    r.errors.append(exc)
            return OK

        consumer.register_message_listener(listener)
        async with consumer:
            yield r


async def _topic(c: LocalCluster, name: str, queues: int = 4) -> str:
    async with Admin(c.namesrv_addr) as admin:
        await admin.create_topic(name, queues)
    return name


async def test_request_returns_the_reply(cluster: LocalCluster) -> None:
    topic = await _topic(cluster, "Ask")
    async with (
        Producer("requester-pg", namesrv_addr=cluster.namesrv_addr) as requester,
        replier(cluster, topic) as rep,
    ):
        msg = Message.build(topic, b"what time is it", tags="q", properties={"who": "me"})
        reply = await requester.request(msg, FIRST_TIMEOUT)

        # the request as the replier saw it: the three request properties, CLUSTER from the broker
        (req,) = rep.requests
        assert req.properties["CORRELATION_ID"] == msg.properties["CORRELATION_ID"]
        assert req.properties["REPLY_TO_CLIENT"] == requester.runtime.client_id
        assert req.properties["TTL"] == str(int(FIRST_TIMEOUT * 1000))
        assert req.properties["CLUSTER"] == "DefaultCluster" and req.properties["who"] == "me"

        # the reply as the requester got it
        assert reply.topic == REPLY_TOPIC and reply.body == b"re:what time is it"
        props = reply.properties
        assert props["MSG_TYPE"] == "reply" and props["answeredBy"] == "replier"
        for name in ("CORRELATION_ID", "REPLY_TO_CLIENT", "TTL"):
            assert props[name] == msg.properties[name]
        assert int(props["PUSH_REPLY_TIME"]) == reply.store_timestamp
        assert int(props[PROPERTY_REPLY_MESSAGE_ARRIVE_TIME]) >= reply.store_timestamp - 1000
        assert "CLUSTER" not in props and "TAGS" not in props
        assert reply.store_host == cluster.broker_addr and reply.born_host.startswith("127.0.0.1:")
        assert reply.queue_id == 0 and reply.reconsume_times == 0 and reply.sys_flag == 0

        # the reply's send went out as SEND_REPLY_MESSAGE_V2 and was stored in the reply topic
        # (the broker answers the replier after the push: the reply may arrive first)
        await wait_until(lambda: len(rep.results) == 1, timeout=10, what="the replier's send result")
        (sent,) = rep.results
        assert sent.send_status is SendStatus.SEND_OK and sent.message_queue.topic == REPLY_TOPIC
        assert sent.msg_id == reply.msg_id == props["UNIQ_KEY"]
        async with Admin(cluster.namesrv_addr) as admin:
            raw = await admin.pull_raw(sent.message_queue, sent.queue_offset, 1)
        (stored,) = decode_records(raw.body)
        assert stored.body == reply.body and stored.offset_msg_id == sent.offset_msg_id
        assert stored.properties["CORRELATION_ID"] == props["CORRELATION_ID"]
        assert len(requester.runtime.request_futures) == 0


async def test_a_request_nobody_answers_times_out(cluster: LocalCluster) -> None:
    topic = await _topic(cluster, "Nobody")
    async with Producer("requester-pg", namesrv_addr=cluster.namesrv_addr) as requester:
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        msg = Message.build(topic, b"hello?")
        with pytest.raises(
            ReplyTimeoutError, match=r"send request message to <Nobody> OK, but wait reply message timeout, 800 ms"
        ):
            await requester.request(msg, 0.8)
        assert 0.7 <= loop.time() - t0 < 5
        assert len(requester.runtime.request_futures) == 0
        async with Admin(cluster.namesrv_addr) as admin:  # the request itself was stored
            queues = await admin.topic_queues(topic)
            assert sum([await admin.max_offset(mq) for mq in queues]) == 1


async def test_concurrent_requests_get_their_own_replies(cluster: LocalCluster) -> None:
    topic = await _topic(cluster, "Many")

    async def shuffled(m: MessageExt) -> bytes:
        await asyncio.sleep(random.random() / 50)  # answers in another order than asked
        return b"re:" + m.body

    async with (
        Producer("requester-pg", namesrv_addr=cluster.namesrv_addr) as requester,
        replier(cluster, topic, shuffled) as rep,
    ):
        await requester.request(Message.build(topic, b"warm-up"), FIRST_TIMEOUT)
        msgs = [Message.build(topic, f"q{i}") for i in range(40)]
        replies = await asyncio.gather(*(requester.request(m, 15) for m in msgs))
        assert [r.body for r in replies] == [f"re:q{i}".encode() for i in range(40)]
        assert [r.properties["CORRELATION_ID"] for r in replies] == [m.properties["CORRELATION_ID"] for m in msgs]
        assert len({m.properties["CORRELATION_ID"] for m in msgs}) == 40
        await wait_until(lambda: len(rep.results) == 41, timeout=10, what="the replier's send results")
        assert not rep.errors


async def test_request_forms_compressed_reply_and_callback(cluster: LocalCluster) -> None:
    topic = await _topic(cluster, "Forms")
    big = b"x" * 10_000

    async def answer(m: MessageExt) -> bytes:
        return big if m.body == b"big" else b"re:" + m.body

    async with (
        Producer("requester-pg", namesrv_addr=cluster.namesrv_addr) as requester,
        replier(cluster, topic, answer) as rep,
    ):
        mq = MessageQueue(topic, cluster.broker.config.broker_name, 2)
        r1 = await requester.request(Message.build(topic, b"to-queue"), FIRST_TIMEOUT, queue=mq)
        r2 = await requester.request(Message.build(topic, b"selected"), 10, selector=select_by_hash, arg="order-7")
        assert (r1.body, r2.body) == (b"re:to-queue", b"re:selected")
        assert rep.requests[0].queue_id == 2

        r3 = await requester.request(Message.build(topic, b"big"), 10)  # the replier's producer compresses it
        assert r3.body == big and r3.sys_flag & 0x1 == 0

        got: list[MessageExt] = []
        errors: list[BaseException] = []

        class Callback:
            async def on_success(self, message: MessageExt) -> None:
                got.append(message)

            def on_exception(self, e: BaseException) -> None:
                errors.append(e)

        await requester.request_async(Message.build(topic, b"callback"), Callback(), 10)
        await wait_until(lambda: len(got) == 1, timeout=15, what="callback reply")
        assert got[0].body == b"re:callback" and not errors


async def test_request_async_times_out_through_the_scan(cluster: LocalCluster) -> None:
    topic = await _topic(cluster, "NobodyAsync")
    errors: list[BaseException] = []

    class Callback:
        def on_success(self, message: MessageExt) -> None:
            raise AssertionError("no reply expected")

        def on_exception(self, e: BaseException) -> None:
            errors.append(e)

    async with Producer("requester-pg", namesrv_addr=cluster.namesrv_addr) as requester:
        await requester.request_async(Message.build(topic, b"hello?"), Callback(), 0.5)
        # Java's housekeeping scan: first after 3 s, then every second
        await wait_until(lambda: len(errors) == 1, timeout=10, what="timeout callback")
        assert isinstance(errors[0], ReplyTimeoutError) and str(errors[0]) == "request timeout, no reply message."


async def test_a_late_reply_is_accepted_and_dropped(cluster: LocalCluster) -> None:
    topic = await _topic(cluster, "Late")
    timed_out = asyncio.Event()

    async def late(m: MessageExt) -> bytes:
        if m.body == b"slow":
            await timed_out.wait()
        return b"re:" + m.body

    async with (
        Producer("requester-pg", namesrv_addr=cluster.namesrv_addr) as requester,
        replier(cluster, topic, late) as rep,
    ):
        await requester.request(Message.build(topic, b"warm-up"), FIRST_TIMEOUT)
        with pytest.raises(ReplyTimeoutError):
            await requester.request(Message.build(topic, b"slow"), 0.5)
        timed_out.set()
        await wait_until(lambda: len(rep.results) + len(rep.errors) == 2, timeout=10, what="late reply sent")
        # the requester answered the push SUCCESS although nobody waits any more
        assert [r.send_status for r in rep.results] == [SendStatus.SEND_OK] * 2 and not rep.errors


async def test_a_reply_to_a_gone_requester_fails_with_java_remark(cluster: LocalCluster) -> None:
    fake = MessageExt(
        topic="X",
        body=b"",
        properties={"CLUSTER": "DefaultCluster", "REPLY_TO_CLIENT": "10.9.9.9@gone", "CORRELATION_ID": "c"},
    )
    async with Producer("replier-pg", namesrv_addr=cluster.namesrv_addr, retry_times_when_send_failed=0) as p:
        with pytest.raises(BrokerError, match=r"push reply message fail, channel of <10\.9\.9\.9@gone> not found\."):
            await p.send(create_reply_message(fake, b"nobody home"))


async def test_replies_through_every_broker_of_the_cluster(tmp_path: Path) -> None:
    """The request topic lives on broker-a only; the replier sends the replies round-robin to
    both brokers' DefaultCluster_REPLY_TOPIC. broker-b pushes them too: the requester learned
    it from TBW102's route and heartbeated it before its first request."""
    async with local_cluster(tmp_path / "store", brokers=2) as c:
        async with Admin(c.namesrv_addr) as admin:
            await admin.create_topic("OnA", 2, c.broker_addrs[0])
        async with Producer("requester-pg", namesrv_addr=c.namesrv_addr) as requester, replier(c, "OnA") as rep:
            for i in range(6):
                reply = await requester.request(Message.build("OnA", f"q{i}"), FIRST_TIMEOUT)
                assert reply.body == f"re:q{i}".encode()
            await wait_until(lambda: len(rep.results) == 6, timeout=10, what="the replier's send results")
        # without the heartbeat broker-b's pushes fail and the replier's retries all land on broker-a
        assert {r.message_queue.broker_name for r in rep.results} == {"broker-a", "broker-b"}
        assert not rep.errors


async def test_sync_producer_request(cluster: LocalCluster) -> None:
    topic = await _topic(cluster, "SyncAsk")
    async with replier(cluster, topic):
        p = SyncProducer("sync-requester-pg", cluster.namesrv_addr)
        try:  # blocking calls in a thread: the broker runs on this test's event loop
            reply = await asyncio.to_thread(p.request, Message.build(topic, b"sync"), FIRST_TIMEOUT)
        finally:
            await asyncio.to_thread(p.close)
        assert reply.body == b"re:sync" and reply.properties["MSG_TYPE"] == "reply"
