"""HEART_BEAT, GET_CONSUMER_LIST_BY_GROUP, NOTIFY_CONSUMER_IDS_CHANGED, UNREGISTER_CLIENT, expiry."""

from __future__ import annotations

from pathlib import Path

import pytest
from broker_testkit import TIMEOUT, heartbeat_cmd, pull, records, send

from rocketpipe.broker import Broker, BrokerConfig
from rocketpipe.protocol.bodies import javajson as jj
from rocketpipe.protocol.codes import RequestCode, ResponseCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.protocol.headers.consumer import GetConsumerListByGroupRequestHeader, UnregisterClientRequestHeader
from rocketpipe.testing import FakeClock
from rocketpipe.transport import Connection, Router
from waiting import wait_until


class Client:
    """A raw connection that records the NOTIFY_CONSUMER_IDS_CHANGED it receives."""

    def __init__(self) -> None:
        self.notified: list[str] = []
        self.router = Router()
        self.router.register(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, self._on_notify)
        self.conn: Connection | None = None

    async def _on_notify(self, cmd: RemotingCommand, conn: Connection) -> None:
        self.notified.append(cmd.ext_fields.get("consumerGroup", ""))
        return None

    async def connect(self, addr: str) -> Connection:
        self.conn = await Connection.connect(addr, router=self.router)
        return self.conn


async def _consumer_ids(conn: Connection, group: str) -> RemotingCommand:
    return await conn.request(
        RemotingCommand.request(
            RequestCode.GET_CONSUMER_LIST_BY_GROUP,
            GetConsumerListByGroupRequestHeader(consumer_group=group).to_ext_fields(),
        ),
        TIMEOUT,
    )


@pytest.fixture
async def clock_broker(tmp_path: Path):
    clock = FakeClock()
    async with Broker(BrokerConfig(store_dir=tmp_path, mapped_file_size_commit_log=1 << 20), clock=clock) as b:
        yield b, clock


async def test_broker_heartbeat_list_and_notify_second_client(clock_broker) -> None:
    broker, _clock = clock_broker
    a, b = Client(), Client()
    ca, cb = await a.connect(broker.address), await b.connect(broker.address)
    try:
        r = await _consumer_ids(ca, "cg")
        assert r.code == ResponseCode.SYSTEM_ERROR and "no consumer" in (r.remark or "")
        assert (await ca.request(heartbeat_cmd("ip@a", "cg", {"TopicN": "*"}), TIMEOUT)).code == ResponseCode.SUCCESS
        assert broker.topics.get("%RETRY%cg") is not None  # created by the heartbeat
        r = await _consumer_ids(ca, "cg")
        assert jj.loads(bytes(r.body)) == {"consumerIdList": ["ip@a"]}
        await wait_until(lambda: a.notified == ["cg"], timeout=5, what="first notify to a")
        # b joins: every member (a included) is told
        assert (await cb.request(heartbeat_cmd("ip@b", "cg", {"TopicN": "*"}), TIMEOUT)).code == ResponseCode.SUCCESS
        await wait_until(
            lambda: a.notified == ["cg", "cg"] and b.notified == ["cg"], timeout=5, what="notify after join"
        )
        r = await _consumer_ids(cb, "cg")
        assert sorted(jj.loads(bytes(r.body))["consumerIdList"]) == ["ip@a", "ip@b"]
        # a repeated heartbeat without change notifies nobody
        await cb.request(heartbeat_cmd("ip@b", "cg", {"TopicN": "*"}), TIMEOUT)
        # a subscription change does
        await cb.request(heartbeat_cmd("ip@b", "cg", {"TopicN": "*", "TopicN2": "x"}), TIMEOUT)
        await wait_until(lambda: len(a.notified) == 3, timeout=5, what="notify after subscription change")
        assert len(b.notified) == 2
        # b unregisters: a is told, list shrinks
        unreg = UnregisterClientRequestHeader(client_id="ip@b", consumer_group="cg").to_ext_fields()
        assert (
            await cb.request(RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, unreg), TIMEOUT)
        ).code == ResponseCode.SUCCESS
        await wait_until(lambda: len(a.notified) == 4, timeout=5, what="notify after unregister")
        assert jj.loads(bytes((await _consumer_ids(ca, "cg")).body))["consumerIdList"] == ["ip@a"]
    finally:
        await ca.close()
        await cb.close()


async def test_broker_closed_channel_leaves_group_and_notifies(clock_broker) -> None:
    broker, _ = clock_broker
    a, b = Client(), Client()
    ca, cb = await a.connect(broker.address), await b.connect(broker.address)
    try:
        await ca.request(heartbeat_cmd("ip@a", "cg2", {"T": "*"}), TIMEOUT)
        await cb.request(heartbeat_cmd("ip@b", "cg2", {"T": "*"}), TIMEOUT)
        await wait_until(lambda: len(a.notified) == 2, timeout=5, what="join notifications")
        await cb.close()
        await wait_until(lambda: len(a.notified) == 3, timeout=5, what="notify after close")
        assert broker.clients.consumer_group("cg2").client_ids() == ["ip@a"]  # type: ignore[union-attr]
    finally:
        await ca.close()


async def test_broker_expires_channels_without_heartbeat(clock_broker) -> None:
    broker, clock = clock_broker
    a, b = Client(), Client()
    ca, cb = await a.connect(broker.address), await b.connect(broker.address)
    try:
        await ca.request(heartbeat_cmd("ip@a", "cg3", {"T": "*"}), TIMEOUT)
        await cb.request(heartbeat_cmd("ip@b", "cg3", {"T": "*"}), TIMEOUT)
        await wait_until(lambda: len(a.notified) == 2, timeout=5, what="join notifications")
        clock.advance(100)
        await ca.request(heartbeat_cmd("ip@a", "cg3", {"T": "*"}), TIMEOUT)  # a stays alive
        clock.advance(21)  # b: 121 s since its last heartbeat
        await broker.scan_expired_channels()
        await wait_until(lambda: cb.is_closed, timeout=5, what="expired channel closed")
        await wait_until(lambda: len(a.notified) == 3, timeout=5, what="notify after expiry")
        assert broker.clients.consumer_group("cg3").client_ids() == ["ip@a"]  # type: ignore[union-attr]
    finally:
        await ca.close()
        await cb.close()


async def test_broker_pull_uses_the_heartbeat_subscription_and_sub_version(clock_broker) -> None:
    broker, _ = clock_broker
    c = await Connection.connect(broker.address)
    try:
        await send(c, "TopicV", b"a", tags="A")
        await send(c, "TopicV", b"b", tags="B")
        await c.request(heartbeat_cmd("ip@c", "cgv", {"TopicV": "B"}, sub_version=10), TIMEOUT)
        r = await pull(c, "cgv", "TopicV", 0, 0, subscription=None, sub_version=10)
        assert [m.body for m in records(r)] == [b"b"]
        r = await pull(c, "cgv", "TopicV", 0, 0, subscription=None, sub_version=11)
        assert r.code == ResponseCode.SUBSCRIPTION_NOT_LATEST
        r = await pull(c, "cgv", "OtherTopic", 0, 0, subscription=None)
        assert r.code in (ResponseCode.SUBSCRIPTION_NOT_EXIST, ResponseCode.TOPIC_NOT_EXIST)
        await send(c, "OtherTopic", b"x")
        r = await pull(c, "cgv", "OtherTopic", 0, 0, subscription=None)
        assert r.code == ResponseCode.SUBSCRIPTION_NOT_EXIST
    finally:
        await c.close()


async def test_broker_notify_is_not_sent_for_broadcasting_groups(clock_broker) -> None:
    broker, _ = clock_broker
    from rocketpipe.protocol.bodies.heartbeat import ConsumerData, HeartbeatData, SubscriptionData

    a = Client()
    ca = await a.connect(broker.address)
    try:
        data = HeartbeatData(
            "ip@a",
            consumer_data_set=[
                ConsumerData(
                    "bg", message_model="BROADCASTING", subscription_data_set=[SubscriptionData.build("T", "*")]
                )
            ],
        )
        await ca.request(RemotingCommand.request(RequestCode.HEART_BEAT, {}, data.encode()), TIMEOUT)
        await ca.request(heartbeat_cmd("ip@a", "cg4", {"T": "*"}), TIMEOUT)  # a clustering group as a marker
        await wait_until(lambda: "cg4" in a.notified, timeout=5, what="marker notification")
        assert "bg" not in a.notified
        assert broker.clients.consumer_group("bg") is not None
    finally:
        await ca.close()


async def test_broker_lock_and_unlock_batch_mq(clock_broker) -> None:
    from rocketpipe.protocol.bodies.consumer import LockBatchRequestBody, LockBatchResponseBody, UnlockBatchRequestBody
    from rocketpipe.protocol.message import MessageQueue

    broker, clock = clock_broker
    c = await Connection.connect(broker.address)
    try:
        mqs = {MessageQueue("TopicL", "broker-a", 0), MessageQueue("TopicL", "broker-a", 1)}

        async def lock(client: str, which: set[MessageQueue]) -> set[MessageQueue]:
            body = LockBatchRequestBody(consumer_group="og", client_id=client, mq_set=which).encode()
            r = await c.request(RemotingCommand.request(RequestCode.LOCK_BATCH_MQ, {}, body), TIMEOUT)
            assert r.code == ResponseCode.SUCCESS
            return LockBatchResponseBody.decode(bytes(r.body)).lock_ok_mq_set

        assert await lock("c1", mqs) == mqs
        assert await lock("c2", mqs) == set()
        unlock = UnlockBatchRequestBody(
            consumer_group="og", client_id="c1", mq_set={MessageQueue("TopicL", "broker-a", 0)}
        ).encode()
        assert (
            await c.request(RemotingCommand.request(RequestCode.UNLOCK_BATCH_MQ, {}, unlock), TIMEOUT)
        ).code == ResponseCode.SUCCESS
        assert await lock("c2", mqs) == {MessageQueue("TopicL", "broker-a", 0)}
        clock.advance(61)
        assert await lock("c2", mqs) == mqs  # c1's lock on queue 1 expired
        r = await c.request(RemotingCommand.request(RequestCode.LOCK_BATCH_MQ, {}, b"nope"), TIMEOUT)
        assert r.code == ResponseCode.SYSTEM_ERROR
    finally:
        await c.close()
