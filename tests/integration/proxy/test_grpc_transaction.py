"""Transactional messages through the gRPC endpoint, driven by the official RocketMQ 5 Python SDK
(``rocketmq-python-client``'s ``Producer`` with a ``TransactionChecker``) over real TCP in front
of the embedded broker: half messages, EndTransaction commit / rollback from the client, and the
broker's check-back of an unresolved transaction forwarded to the SDK over Telemetry and
answered by its checker. What became visible is read with rocketpipe's remoting PushConsumer.

The topic is created with ``message.type=TRANSACTION`` and the endpoint keeps its topic message
type check on (Java's ``enableTopicMessageTypeCheck``, the default): the route's queues accept
TRANSACTION messages, so the SDK sends the halves."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from rocketmq import ClientConfiguration, Credentials, SendReceipt, TransactionChecker, TransactionResolution
from rocketmq import Message as SdkMessage
from rocketmq import Producer as SdkProducer

from rocketpipe import (
    Admin,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    MessageExt,
    PushConsumer,
)
from rocketpipe.protocol.message import decode_records
from rocketpipe.proxy import ProxyServer
from rocketpipe.testing.cluster import LocalCluster, local_cluster
from waiting import wait_until, wait_until_sync

TOPIC = "GrpcTx"


@asynccontextmanager
async def tx_cluster(store: Path, **broker: Any) -> AsyncIterator[LocalCluster]:
    """A one-broker cluster with ``TOPIC`` (4 queues, ``message.type=TRANSACTION``)."""
    async with local_cluster(store, auto_create_topic_enable=False, **broker) as c:
        async with Admin(c.namesrv_addr) as admin:
            await admin.create_topic(TOPIC, 4, attributes="+message.type=TRANSACTION")
        yield c


def endpoint(c: LocalCluster) -> ProxyServer:
    return ProxyServer(c.namesrv_addr, port=0)


class Checker(TransactionChecker):  # type: ignore[misc]
    """Answers by body: ``commit*`` → COMMIT, anything else → ROLLBACK; records what it was asked."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.asked: list[tuple[str, str]] = []  # (body, message id)

    def check(self, message: SdkMessage) -> TransactionResolution:
        body = bytes(message.body).decode()
        with self.lock:
            self.asked.append((body, message.message_id))
        return TransactionResolution.COMMIT if body.startswith("commit") else TransactionResolution.ROLLBACK

    def bodies(self) -> list[str]:
        with self.lock:
            return sorted(b for b, _ in self.asked)


def sdk_message(body: str) -> SdkMessage:
    m = SdkMessage()
    m.topic = TOPIC
    m.body = body.encode()
    return m


def start_sdk_producer(endpoint: str, checker: Checker) -> SdkProducer:
    """Start the SDK's producer and wait until it applied the endpoint's settings (its startup
    does not wait for them; before them it checks message types against the route)."""
    producer = SdkProducer(ClientConfiguration(endpoint, Credentials()), (TOPIC,), checker)
    producer.startup()
    wait_until_sync(producer._init_settings_event.is_set, timeout=10, what="the SDK got its settings")
    return producer


def send_in_transactions(producer: SdkProducer, plan: list[tuple[str, str]]) -> list[SendReceipt]:
    """For each (body, action): begin a transaction, send the half, then ``commit``, ``rollback``
    or (``none``) leave it unresolved."""
    receipts = []
    for body, action in plan:
        transaction = producer.begin_transaction()
        receipts.append(producer.send(sdk_message(body), transaction))
        if action == "commit":
            transaction.commit()
        elif action == "rollback":
            transaction.rollback()
    return receipts


@asynccontextmanager
async def consumer(c: LocalCluster, got: list[MessageExt]) -> AsyncIterator[PushConsumer]:
    """rocketpipe's PushConsumer of ``TOPIC`` from the first offset, appending what it consumes."""
    pc = PushConsumer(
        "GrpcTxConsumer", namesrv_addr=c.namesrv_addr, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    )
    pc.subscribe(TOPIC, "*")

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        got.extend(msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    pc.register_message_listener(listener)
    async with pc:
        yield pc


async def stored_bodies(c: LocalCluster) -> list[str]:
    """Bodies stored on ``TOPIC``'s queues (what consumers can see), sorted."""
    async with Admin(c.namesrv_addr) as admin:
        out: list[str] = []
        for q in await admin.topic_queues(TOPIC):
            raw = await admin.pull_raw(q, 0, 64)
            if raw.body:
                out.extend(m.body.decode() for m in decode_records(raw.body))
    return sorted(out)


def counted(c: LocalCluster, committed: int, rolled_back: int) -> Callable[[], bool]:
    tx = c.broker.transactions
    return lambda: tx.committed == committed and tx.rolled_back == rolled_back


async def test_commit_is_visible_once_and_rollback_never(tmp_path: Path) -> None:
    checker = Checker()
    got: list[MessageExt] = []
    async with tx_cluster(tmp_path / "store") as c, endpoint(c) as proxy:
        producer = await asyncio.to_thread(start_sdk_producer, proxy.address, checker)
        try:
            plan = [("commit-1", "commit"), ("rollback-1", "rollback"), ("commit-2", "commit")]
            receipts = await asyncio.to_thread(send_in_transactions, producer, plan)
        finally:
            await asyncio.to_thread(producer.shutdown)
        # the transaction id the SDK ends with is the broker's (the half's UNIQ_KEY = message id)
        assert [r.transaction_id for r in receipts] == [r.message_id for r in receipts]
        await wait_until(counted(c, 2, 1), timeout=10, what="2 commits and 1 rollback on the broker")
        async with consumer(c, got):
            await wait_until(lambda: len(got) >= 2, timeout=20, what="the committed messages consumed")
        assert sorted(m.body.decode() for m in got) == ["commit-1", "commit-2"]
        committed = {m.body.decode(): m for m in got}
        assert committed["commit-1"].msg_id == receipts[0].message_id
        assert committed["commit-1"].properties["PGROUP"] == TOPIC  # the topic is the producer group
        assert await stored_bodies(c) == ["commit-1", "commit-2"]
        assert checker.asked == []  # ended in time: no check-back
        assert proxy.service is not None and len(proxy.service.transactions.data) == 0  # every half ended


async def test_unresolved_transactions_are_settled_by_the_sdk_checker(tmp_path: Path) -> None:
    checker = Checker()
    got: list[MessageExt] = []
    fast = {"transaction_timeout": 1_000, "transaction_check_interval": 500}
    async with tx_cluster(tmp_path / "store", **fast) as c, endpoint(c) as proxy:
        assert proxy.service is not None
        producer = await asyncio.to_thread(start_sdk_producer, proxy.address, checker)
        try:
            plan = [("commit-orphan", "none"), ("rollback-orphan", "none")]
            receipts = await asyncio.to_thread(send_in_transactions, producer, plan)
            # the first half made the endpoint heartbeat the producer group (the topic) to the broker
            await wait_until(lambda: TOPIC in c.broker.clients.producers, timeout=10, what="group on the broker")
            await wait_until(counted(c, 1, 1), timeout=30, what="both halves settled by check-backs")
        finally:
            await asyncio.to_thread(producer.shutdown)
        ids = dict(checker.asked)  # a half may be asked again before its answer lands
        assert ids == {"commit-orphan": receipts[0].message_id, "rollback-orphan": receipts[1].message_id}
        assert c.broker.transactions.check.checked >= 2
        async with consumer(c, got):
            await wait_until(lambda: len(got) >= 1, timeout=20, what="the committed orphan consumed")
        assert [m.body.decode() for m in got] == ["commit-orphan"]
        assert await stored_bodies(c) == ["commit-orphan"]
        assert TOPIC not in proxy.service.transactions.transaction_groups()  # the SDK producer left
