"""Request-reply between the official Java clients (5.3.x and 4.9.8) and rocketpipe, through
rocketpipe's name server and broker.

``RequestReplyScenario`` (tests/interop/java) is either the requester (``DefaultMQProducer.request``)
or the replier (a ``DefaultMQPushConsumer`` answering with ``MessageUtil.createReplyMessage`` and
``DefaultMQProducer.send``, i.e. SEND_REPLY_MESSAGE_V2). The other side is rocketpipe's client:

* Java requester ↔ rocketpipe replier: our broker finds the Java client's channel by the
  REPLY_TO_CLIENT id of its heartbeat and pushes the reply built by rocketpipe's
  ``create_reply_message``; Java's ``receiveReplyMessage`` decodes our PUSH_REPLY_MESSAGE_TO_CLIENT.
  Twice: the blocking ``request(msg, timeout)`` and ``request(msg, selector, arg, callback,
  timeout)``. Clients 5.3.1 to 5.3.3 return from the blocking form once the request's send is
  acknowledged (apache/rocketmq#8272, reverted upstream by #9608 after 5.3.3), so a reply that
  arrives after that acknowledgement — nearly always — ends in an immediate
  RequestTimeoutException; the test accepts exactly that outcome from a 5.x client, and the
  callback form must succeed on both;
* a Java request nobody answers: ``RequestTimeoutException`` with code 10006;
* rocketpipe requester ↔ Java replier: Java reads our request's CLUSTER / CORRELATION_ID /
  REPLY_TO_CLIENT / TTL, and our client decodes the push of the Java reply.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from interop_support import JavaClient, create_topic, unique

from rocketpipe import (
    Admin,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
    SendResult,
    SendStatus,
    create_reply_message,
)
from rocketpipe.errors import BrokerError
from rocketpipe.testing.cluster import LocalCluster, local_cluster
from waiting import wait_until

CLUSTER = "RocketPipeCluster"
REPLY_TOPIC = f"{CLUSTER}_REPLY_TOPIC"
UTF8_KEY, UTF8_VALUE = "\u00fcn\u00ef", "\u00e7\u00f8d\u00e9"
N = 5


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with local_cluster(tmp_path / "store", broker_cluster_name=CLUSTER) as c:
        yield c


async def new_topic(c: LocalCluster, prefix: str) -> str:
    topic = unique(prefix)
    async with Admin(c.namesrv_addr) as admin:
        await create_topic(admin, topic, 4)
    return topic


@dataclass
class RocketpipeReplier:
    requests: list[MessageExt] = field(default_factory=list)
    results: list[SendResult] = field(default_factory=list)
    errors: list[BrokerError] = field(default_factory=list)


@asynccontextmanager
async def rocketpipe_replier(c: LocalCluster, topic: str) -> AsyncIterator[tuple[RocketpipeReplier, PushConsumer]]:
    """A PushConsumer answering each request with ``b"re:" + body`` (one send attempt each)."""
    rep = RocketpipeReplier()
    async with Producer(unique("rp-replier"), namesrv_addr=c.namesrv_addr, retry_times_when_send_failed=0) as producer:
        consumer = PushConsumer(
            unique("rp-replier"),
            namesrv_addr=c.namesrv_addr,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        )
        consumer.subscribe(topic, "*")

        async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
            for m in msgs:
                rep.requests.append(m)
                reply = create_reply_message(m, b"re:" + m.body)
                reply.properties["answeredBy"] = "rocketpipe"
                try:
                    rep.results.append(await producer.send(reply))
                except BrokerError as exc:
                    rep.errors.append(exc)
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        consumer.register_message_listener(listener)
        async with consumer:
            yield rep, consumer


async def java_requests_to_rocketpipe(
    java_client: JavaClient, cluster: LocalCluster, mode: str
) -> tuple[dict[str, Any], list[dict[str, Any]], RocketpipeReplier]:
    """Run the Java requester (``mode``) against a rocketpipe replier; check the requests."""
    topic = await new_topic(cluster, "JavaAsk")
    async with rocketpipe_replier(cluster, topic) as (rep, consumer):
        await wait_until(lambda: len(consumer.assigned_queues()) > 0, timeout=20, what="replier's queues")
        res = await java_client.run(
            "RequestReplyScenario", cluster.namesrv_addr, topic, unique("jreq"), mode, str(N), "30", timeout=120
        )
        await wait_until(lambda: len(rep.results) + len(rep.errors) == N, timeout=10, what="every reply sent")
    assert res["ok"], res.get("error")
    outcomes: list[dict[str, Any]] = res["results"]
    assert len(outcomes) == len(rep.requests) == N
    by_idx = {int(m.properties["idx"]): m for m in rep.requests}
    for i, o in enumerate(outcomes):
        m = by_idx[i]
        assert m.body == f"request-{i}".encode() and m.tags == f"Tag{i % 3}" and m.keys == f"key-{i}"
        assert m.properties[UTF8_KEY] == UTF8_VALUE and m.properties["CLUSTER"] == CLUSTER
        assert m.properties["CORRELATION_ID"] == o["correlationId"]
        assert m.properties["REPLY_TO_CLIENT"] == o["replyToClient"] == res["clientId"]
        assert m.properties["TTL"] == o["ttl"] == "30000"
    assert {r.send_status for r in rep.results} <= {SendStatus.SEND_OK}
    assert {r.message_queue.topic for r in rep.results} <= {REPLY_TOPIC}
    return res, outcomes, rep


def check_java_reply(o: dict[str, Any], i: int, cluster: LocalCluster) -> None:
    """One reply as Java's ``DefaultMQProducer.request`` returned it."""
    reply = o["reply"]
    assert reply["class"] == "MessageExt" and reply["topic"] == REPLY_TOPIC
    assert reply["body"] == f"re:request-{i}"
    props = reply["properties"]
    assert props["MSG_TYPE"] == "reply" and props["answeredBy"] == "rocketpipe"
    assert props["CORRELATION_ID"] == o["correlationId"]
    assert props["REPLY_TO_CLIENT"] == o["replyToClient"] and props["TTL"] == o["ttl"]
    assert int(props["PUSH_REPLY_TIME"]) == reply["storeTimestamp"]
    assert int(props["ARRIVE_TIME"]) >= reply["storeTimestamp"] - 1000  # added by the Java client
    assert "CLUSTER" not in props and props["UNIQ_KEY"]
    assert reply["storeHost"].endswith(cluster.broker_addr) and reply["queueId"] == 0


async def test_java_requester_to_rocketpipe_replier(java_client: JavaClient, cluster: LocalCluster) -> None:
    """DefaultMQProducer.request(msg, timeout), one request after the other."""
    res, outcomes, rep = await java_requests_to_rocketpipe(java_client, cluster, "request")
    for i, o in enumerate(outcomes):
        if not o["ok"] and java_client.major == 5:
            # 5.3.1+: the call ended when the request's send was acknowledged, before the reply
            assert o["timeout"] and o["responseCode"] == 10006 and o["elapsedMs"] < 10_000, o
            continue
        assert o["ok"], o.get("error")
        check_java_reply(o, i, cluster)
    if java_client.major == 5:
        # the 5.x requester may be gone (its JVM ended) before the last replies: Java's remarks
        # for a channel already unregistered, or one still registered whose push then failed
        gone = {
            f"push reply message fail, channel of <{res['clientId']}> not found.",
            f"push reply message to {res['clientId']}fail.",
        }
        assert all(e.remark in gone for e in rep.errors), rep.errors
    else:
        assert not rep.errors, rep.errors


async def test_java_request_callback_to_rocketpipe_replier(java_client: JavaClient, cluster: LocalCluster) -> None:
    """DefaultMQProducer.request(msg, selector, arg, RequestCallback, timeout), all at once."""
    res, outcomes, rep = await java_requests_to_rocketpipe(java_client, cluster, "request-callback")
    assert res["allCalledBack"] and not rep.errors and len(rep.results) == N
    assert [o["ok"] for o in outcomes] == [True] * N, [o.get("error") for o in outcomes]
    for i, o in enumerate(outcomes):
        check_java_reply(o, i, cluster)


async def test_java_request_nobody_answers_times_out(java_client: JavaClient, cluster: LocalCluster) -> None:
    topic = await new_topic(cluster, "JavaNobody")
    res = await java_client.run(
        "RequestReplyScenario", cluster.namesrv_addr, topic, unique("jreq"), "request", "1", "2", timeout=90
    )
    assert res["ok"], res.get("error")
    (o,) = res["results"]
    assert not o["ok"] and o["timeout"] and o["responseCode"] == 10006, o
    assert "OK, but wait reply message timeout, 2000 ms." in o["error"]


async def test_java_replier_to_rocketpipe_requester(java_client: JavaClient, cluster: LocalCluster) -> None:
    topic = await new_topic(cluster, "JavaReplier")
    java = asyncio.create_task(
        java_client.run(
            "RequestReplyScenario", cluster.namesrv_addr, topic, unique("jrep"), "reply", str(N), "60", timeout=120
        )
    )
    try:
        async with Producer(unique("rp-requester"), namesrv_addr=cluster.namesrv_addr) as requester:
            msgs = [Message.build(topic, f"ask-{i}", tags="q", properties={"idx": str(i)}) for i in range(N)]
            # the first waits for the JVM to start and the Java consumer to rebalance
            first = await requester.request(msgs[0], 60)
            rest = await asyncio.gather(*(requester.request(m, 30) for m in msgs[1:]))
            client_id = requester.runtime.client_id
        res = await java
    finally:
        if not java.done():
            java.cancel()
            await asyncio.gather(java, return_exceptions=True)
    replies = [first, *rest]
    for i, (m, reply) in enumerate(zip(msgs, replies, strict=True)):
        assert reply.topic == REPLY_TOPIC and reply.body == f"re:ask-{i}".encode()
        props = reply.properties
        assert props["MSG_TYPE"] == "reply" and props["answeredBy"] == "java"
        for name in ("CORRELATION_ID", "REPLY_TO_CLIENT", "TTL"):
            assert props[name] == m.properties[name]
        assert props["UNIQ_KEY"] and "PUSH_REPLY_TIME" in props and "ARRIVE_TIME" in props
        assert reply.store_host == cluster.broker_addr
    assert res["ok"] and res["done"], res.get("error")
    assert not res["errors"], res["errors"]
    seen = {r["properties"]["idx"]: r for r in res["requests"]}
    assert sorted(seen) == [str(i) for i in range(N)]
    for i, m in enumerate(msgs):
        props = seen[str(i)]["properties"]
        assert props["CLUSTER"] == CLUSTER and props["REPLY_TO_CLIENT"] == client_id
        assert props["CORRELATION_ID"] == m.properties["CORRELATION_ID"] and props["TTL"] == m.properties["TTL"]
    assert [s["status"] for s in res["sends"]] == ["SEND_OK"] * N
    assert {s["queue"]["topic"] for s in res["sends"]} == {REPLY_TOPIC}
    assert {s["replyToClient"] for s in res["sends"]} == {client_id}
