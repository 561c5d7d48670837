"""rocketpipe's request-reply against a broker: embedded (rocketpipe), Apache 5.3.3 and 4.9.7.

``Producer.request`` sends the request (CORRELATION_ID, REPLY_TO_CLIENT, TTL); a rocketpipe
PushConsumer answers with ``create_reply_message`` (topic ``<CLUSTER>_REPLY_TOPIC`` from the
CLUSTER property the broker stored) and ``Producer.send``, which goes out as
SEND_REPLY_MESSAGE_V2; the broker pushes the reply to the requester's connection
(PUSH_REPLY_MESSAGE_TO_CLIENT) and, by default (``storeReplyMessageEnable``), stores it in the
reply topic too. Every broker must accept our requester's heartbeat as the channel to push to,
decode our reply send, and push a reply our client decodes.

What the requester receives: the properties the replier sent (MSG_TYPE, CORRELATION_ID,
REPLY_TO_CLIENT, TTL, UNIQ_KEY and its own) plus the broker's PUSH_REPLY_TIME and the client's
ARRIVE_TIME, never CLUSTER. Apache 5.3.3 also adds MSG_REGION and TRACE_ON (its
``buildMsgContext`` rewrites every send header's properties, the reply's included, before the
push), and so does rocketpipe's broker; Apache 4.9.7 does that only when a send-message hook is
registered (none by default). The stored copy has no PUSH_REPLY_TIME.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from interop_support import Target, create_topic_on, unique

from rocketpipe import (
    Admin,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
    ReplyTimeoutError,
    SendResult,
    SendStatus,
    create_reply_message,
)
from rocketpipe.protocol.message import decode_records
from rocketpipe.testing.apache import CLUSTER_NAME
from waiting import wait_until

OK = ConsumeConcurrentlyStatus.CONSUME_SUCCESS

#: The first request also waits for the replier's first rebalance (up to 20 s on Apache).
FIRST_TIMEOUT = 40.0

#: What a reply carries when it reaches the requester, on every broker.
REPLY_PROPERTIES = {
    "MSG_TYPE",
    "CORRELATION_ID",
    "REPLY_TO_CLIENT",
    "TTL",
    "UNIQ_KEY",
    "PUSH_REPLY_TIME",
    "ARRIVE_TIME",
    "answeredBy",
}


#: Added by Apache 5.3.3 and rocketpipe, not by Apache 4.9.7 (see the module docstring).
APACHE5_REPLY_PROPERTIES = {"MSG_REGION", "TRACE_ON"}


def cluster_of(t: Target) -> str:
    return CLUSTER_NAME if t.is_apache else "DefaultCluster"


class Replier:
    def __init__(self) -> None:
        self.requests: list[MessageExt] = []
        self.results: list[SendResult] = []


@asynccontextmanager
async def replier(t: Target, topic: str) -> AsyncIterator[Replier]:
    """A PushConsumer that answers each request on ``topic`` with ``b"re:" + body``."""
    r = Replier()
    async with Producer(unique("replier"), namesrv_addr=t.namesrv_addr) as producer:
        consumer = PushConsumer(
            unique("replier"),
            namesrv_addr=t.namesrv_addr,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        )
        consumer.subscribe(topic, "*")

        async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
            for m in msgs:
                r.requests.append(m)
                reply = create_reply_message(m, b"re:" + m.body)
                reply.properties["answeredBy"] = "rocketpipe"
                r.results.append(await producer.send(reply))
            return OK

        consumer.register_message_listener(listener)
        async with consumer:
            yield r


async def test_request_reply_round_trip(target: Target) -> None:
    topic = unique("Ask")
    await create_topic_on(target, topic, 4)
    reply_topic = f"{cluster_of(target)}_REPLY_TOPIC"
    async with (
        Producer(unique("requester"), namesrv_addr=target.namesrv_addr) as requester,
        replier(target, topic) as rep,
    ):
        msg = Message.build(topic, b"ping", tags="q", properties={"who": "me"})
        reply = await requester.request(msg, FIRST_TIMEOUT)

        (req,) = rep.requests
        assert req.properties["CLUSTER"] == cluster_of(target)
        assert req.properties["REPLY_TO_CLIENT"] == requester.runtime.client_id
        assert req.properties["TTL"] == str(int(FIRST_TIMEOUT * 1000))

        assert reply.topic == reply_topic and reply.body == b"re:ping"
        expected = REPLY_PROPERTIES | (APACHE5_REPLY_PROPERTIES if target.kind != "apache-4" else set())
        assert set(reply.properties) == expected, sorted(reply.properties)
        for name in ("CORRELATION_ID", "REPLY_TO_CLIENT", "TTL"):
            assert reply.properties[name] == msg.properties[name]
        assert reply.properties["MSG_TYPE"] == "reply" and reply.properties["answeredBy"] == "rocketpipe"
        assert reply.store_host == target.broker_addr and reply.born_host.startswith("127.0.0.1:")
        assert abs(int(reply.properties["PUSH_REPLY_TIME"]) - reply.store_timestamp) < 1000
        assert reply.queue_id == 0 and reply.reconsume_times == 0

        # the broker answered the reply's send SEND_OK with the stored copy's id and offset
        await wait_until(lambda: len(rep.results) == 1, timeout=10, what="the replier's send result")
        (sent,) = rep.results
        assert sent.send_status is SendStatus.SEND_OK and sent.message_queue.topic == reply_topic
        assert sent.msg_id == reply.msg_id and sent.offset_msg_id not in ("", "0")
        async with Admin(target.namesrv_addr) as admin:
            raw = await admin.pull_raw(sent.message_queue, sent.queue_offset, 1)
        (stored,) = decode_records(raw.body)
        assert stored.body == b"re:ping" and stored.offset_msg_id == sent.offset_msg_id
        assert stored.properties["CORRELATION_ID"] == msg.properties["CORRELATION_ID"]
        assert "PUSH_REPLY_TIME" not in stored.properties
        assert set(stored.properties) == expected - {"PUSH_REPLY_TIME", "ARRIVE_TIME"}

        # several requests at once, each matched to its own reply
        msgs = [Message.build(topic, f"q{i}") for i in range(10)]
        replies = await asyncio.gather(*(requester.request(m, 30) for m in msgs))
        assert [r.body for r in replies] == [f"re:q{i}".encode() for i in range(10)]
        assert [r.properties["CORRELATION_ID"] for r in replies] == [m.properties["CORRELATION_ID"] for m in msgs]


async def test_request_nobody_answers_times_out(target: Target) -> None:
    topic = unique("Nobody")
    await create_topic_on(target, topic, 2)
    async with Producer(unique("requester"), namesrv_addr=target.namesrv_addr) as requester:
        with pytest.raises(ReplyTimeoutError, match="OK, but wait reply message timeout, 1500 ms"):
            await requester.request(Message.build(topic, b"hello?"), 1.5)
        assert len(requester.runtime.request_futures) == 0
