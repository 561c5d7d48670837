"""SET_MESSAGE_REQUEST_MODE (401), GET_ALL_MESSAGE_REQUEST_MODE (402) and QUERY_ASSIGNMENT (400)
over real TCP against ``local_cluster`` (name server + broker), with raw remoting requests.

Expected answers follow ``QueryAssignmentProcessor`` / ``MessageRequestModeManager`` of
apache/rocketmq 5.x (see rocketpipe.broker.processors.assignment).
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest
from broker_testkit import TIMEOUT, heartbeat_cmd

from rocketpipe import Admin
from rocketpipe.protocol.bodies.assignment import (
    MessageModel,
    MessageQueueAssignment,
    MessageRequestMode,
    MessageRequestModeSerializeWrapper,
    QueryAssignmentRequestBody,
    QueryAssignmentResponseBody,
    SetMessageRequestModeRequestBody,
)
from rocketpipe.protocol.bodies.register import (
    DataVersion,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
)
from rocketpipe.protocol.codes import RequestCode, ResponseCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.protocol.headers.route import RegisterBrokerRequestHeader
from rocketpipe.protocol.message import MessageQueue
from rocketpipe.store.json_file import load_json
from rocketpipe.testing.cluster import LocalCluster, local_cluster
from rocketpipe.transport import Connection
from waiting import wait_until

TOPIC, GROUP = "ModeTopic", "mode-cg"
POP, PULL = MessageRequestMode.POP, MessageRequestMode.PULL


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with local_cluster(tmp_path / "store") as c:
        async with Admin(c.namesrv_addr) as admin:
            await admin.create_topic(TOPIC, 4)
        yield c


async def call(conn: Connection, code: int, body: bytes) -> RemotingCommand:
    return await conn.request(RemotingCommand.request(code, {}, body), TIMEOUT)


async def set_mode(
    conn: Connection, topic: str, group: str, mode: MessageRequestMode, share: int = 0
) -> RemotingCommand:
    return await call(
        conn, RequestCode.SET_MESSAGE_REQUEST_MODE, SetMessageRequestModeRequestBody(topic, group, mode, share).encode()
    )


async def query(
    conn: Connection,
    client_id: str,
    *,
    topic: str = TOPIC,
    strategy: str = "AVG",
    model: MessageModel = MessageModel.CLUSTERING,
) -> QueryAssignmentResponseBody:
    body = QueryAssignmentRequestBody(topic, GROUP, client_id, strategy, model).encode()
    resp = await call(conn, RequestCode.QUERY_ASSIGNMENT, body)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    return QueryAssignmentResponseBody.decode(bytes(resp.body))


def queues(r: QueryAssignmentResponseBody) -> set[tuple[int, MessageRequestMode]]:
    assert r.message_queue_assignments is not None
    return {(a.message_queue.queue_id, a.mode) for a in r.message_queue_assignments}


async def members(cluster: LocalCluster, n: int) -> list[Connection]:
    """``n`` raw client connections registered in GROUP (ids c0..c{n-1}) subscribed to TOPIC."""
    conns = []
    for i in range(n):
        conn = await Connection.connect(cluster.broker_addr)
        assert (await conn.request(heartbeat_cmd(f"c{i}", GROUP, {TOPIC: "*"}), TIMEOUT)).code == ResponseCode.SUCCESS
        conns.append(conn)
    return conns


async def test_set_mode_is_listed_persisted_and_survives_a_restart(tmp_path: Path) -> None:
    store = tmp_path / "store"
    async with local_cluster(store) as c:
        async with Admin(c.namesrv_addr) as admin:
            await admin.create_topic(TOPIC, 4)
        conn = await Connection.connect(c.broker_addr)
        try:
            r = await call(conn, RequestCode.GET_ALL_MESSAGE_REQUEST_MODE, b"")
            assert r.code == ResponseCode.SUCCESS and bytes(r.body) == b'{"messageRequestModeMap":{}}'
            assert (await set_mode(conn, TOPIC, GROUP, POP, 2)).code == ResponseCode.SUCCESS
            assert (await set_mode(conn, TOPIC, "other-cg", PULL)).code == ResponseCode.SUCCESS
            r = await call(conn, RequestCode.GET_ALL_MESSAGE_REQUEST_MODE, b"")
            assert r.code == ResponseCode.SUCCESS
            assert bytes(r.body) == (
                b'{"messageRequestModeMap":{"ModeTopic":{'
                b'"mode-cg":{"consumerGroup":"mode-cg","mode":"POP","popShareQueueNum":2,"topic":"ModeTopic"},'
                b'"other-cg":{"consumerGroup":"other-cg","mode":"PULL","popShareQueueNum":0,"topic":"ModeTopic"}}}}'
            )
            # written before the answer, in Java's file and shape
            on_disk = load_json(store / "config" / "messageRequestMode.json")
            assert on_disk == orjson.loads(bytes(r.body))
        finally:
            await conn.close()
    async with local_cluster(store) as c:
        conn = await Connection.connect(c.broker_addr)
        try:
            r = await call(conn, RequestCode.GET_ALL_MESSAGE_REQUEST_MODE, b"")
            table = MessageRequestModeSerializeWrapper.decode(bytes(r.body)).message_request_mode_map
            assert table[TOPIC][GROUP] == SetMessageRequestModeRequestBody(TOPIC, GROUP, POP, 2)
            assert table[TOPIC]["other-cg"].mode is PULL
            # and QUERY_ASSIGNMENT uses it after the restart
            assert (await conn.request(heartbeat_cmd("c0", GROUP, {TOPIC: "*"}), TIMEOUT)).code == ResponseCode.SUCCESS
            assert queues(await query(conn, "c0")) == {(-1, POP)}
        finally:
            await conn.close()


async def test_set_mode_rejections_and_bad_bodies(cluster: LocalCluster, tmp_path: Path) -> None:
    conn = await Connection.connect(cluster.broker_addr)
    try:
        r = await set_mode(conn, "%RETRY%" + GROUP, GROUP, POP)
        assert (r.code, r.remark) == (ResponseCode.NO_PERMISSION, "retry topic is not allowed to set mode")
        r = await set_mode(conn, "NoSuchTopic", GROUP, POP)
        assert (r.code, r.remark) == (ResponseCode.TOPIC_NOT_EXIST, "topic[NoSuchTopic] not exist")
        for bad in (
            b"",
            b"{not json",
            b"[]",
            b'{"topic":"ModeTopic","consumerGroup":"g","mode":"PUSH"}',
            b'{"consumerGroup":"g"}',
        ):
            r = await call(conn, RequestCode.SET_MESSAGE_REQUEST_MODE, bad)
            assert r.code == ResponseCode.SYSTEM_ERROR, bad
        r = await call(conn, RequestCode.GET_ALL_MESSAGE_REQUEST_MODE, b"")
        assert bytes(r.body) == b'{"messageRequestModeMap":{}}'  # nothing recorded by the failures
    finally:
        await conn.close()
    # a group that is unknown and may not be auto-created
    async with local_cluster(tmp_path / "strict", auto_create_subscription_group=False) as c:
        async with Admin(c.namesrv_addr) as admin:
            await admin.create_topic(TOPIC, 4)
        conn = await Connection.connect(c.broker_addr)
        try:
            r = await set_mode(conn, TOPIC, "unknown-cg", POP)
            assert (r.code, r.remark) == (
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                "subscription group does not exist",
            )
        finally:
            await conn.close()


async def test_query_assignment_pull_mode_runs_the_named_strategy(cluster: LocalCluster) -> None:
    conns = await members(cluster, 2)
    try:
        a, b = await query(conns[0], "c0"), await query(conns[1], "c1")
        assert queues(a) == {(0, PULL), (1, PULL)} and queues(b) == {(2, PULL), (3, PULL)}
        for r in (a, b):
            assert {x.message_queue.topic for x in r.message_queue_assignments or []} == {TOPIC}
            assert {x.message_queue.broker_name for x in r.message_queue_assignments or []} == {
                cluster.broker.config.broker_name
            }
        assert queues(await query(conns[0], "c0", strategy="AVG_BY_CIRCLE")) == {(0, PULL), (2, PULL)}
        # not registered in the group: release everything; broadcasting: every queue
        assert queues(await query(conns[0], "stranger")) == set()
        assert queues(await query(conns[0], "c0", model=MessageModel.BROADCASTING)) == {(i, PULL) for i in range(4)}
        # no valid result ({}): strategy the broker does not run, unknown topic
        assert await query(conns[0], "c0", strategy="CONSISTENT_HASH") == QueryAssignmentResponseBody(None)
        assert await query(conns[0], "c0", topic="NoSuchTopic") == QueryAssignmentResponseBody(None)
        # the group's retry topic (created by the heartbeat) is assigned too, always PULL
        retry = await query(conns[0], "c0", topic="%RETRY%" + GROUP)
        assert queues(retry) == {(0, PULL)}
        # the second member leaves: the first gets every queue
        await conns[1].close()
        await _until_members(conns[0], 1)
        assert queues(await query(conns[0], "c0")) == {(i, PULL) for i in range(4)}
    finally:
        for c in conns:
            await c.close()


async def _until_members(conn: Connection, n: int) -> None:
    async def ok() -> bool:
        r = await call(
            conn,
            RequestCode.QUERY_ASSIGNMENT,
            QueryAssignmentRequestBody(TOPIC, GROUP, "c0", "AVG", MessageModel.CLUSTERING).encode(),
        )
        got = QueryAssignmentResponseBody.decode(bytes(r.body)).message_queue_assignments or []
        return len(got) == 4 // n

    await wait_until(ok, timeout=10, what=f"{n} member(s) left in the group")


async def test_query_assignment_pop_mode(cluster: LocalCluster) -> None:
    conns = await members(cluster, 3)
    try:
        # popShareQueueNum 0: every client pops every queue of the broker (queue id -1)
        assert (await set_mode(conns[0], TOPIC, GROUP, POP, 0)).code == ResponseCode.SUCCESS
        for i, c in enumerate(conns):
            r = await query(c, f"c{i}")
            assert r.message_queue_assignments == [
                MessageQueueAssignment(MessageQueue(TOPIC, cluster.broker.config.broker_name, -1), POP)
            ]
        # popShareQueueNum 1 of 3 clients, 4 queues: own AVG share + the next client's
        assert (await set_mode(conns[0], TOPIC, GROUP, POP, 1)).code == ResponseCode.SUCCESS
        got = [queues(await query(c, f"c{i}")) for i, c in enumerate(conns)]
        assert got == [{(0, POP), (1, POP), (2, POP)}, {(2, POP), (3, POP)}, {(3, POP), (0, POP), (1, POP)}]
        # the retry topic stays PULL whatever the topic's mode
        assert queues(await query(conns[0], "c0", topic="%RETRY%" + GROUP)) == {(0, PULL)}
        # back to PULL
        assert (await set_mode(conns[0], TOPIC, GROUP, PULL)).code == ResponseCode.SUCCESS
        assert queues(await query(conns[0], "c0")) == {(0, PULL), (1, PULL)}
    finally:
        for c in conns:
            await c.close()


async def test_query_assignment_bad_bodies_answer_errors(cluster: LocalCluster) -> None:
    conn = await Connection.connect(cluster.broker_addr)
    try:
        for bad in (
            b"",
            b"\xff\xfe",
            b"{not json",
            b'"text"',
            b'{"topic":"ModeTopic","consumerGroup":"g","clientId":"c","strategyName":"AVG"}',  # no messageModel
            b'{"topic":"ModeTopic","consumerGroup":"g","messageModel":"SOMETIMES"}',
            b'{"consumerGroup":"g","messageModel":"CLUSTERING"}',  # no topic
        ):
            r = await call(conn, RequestCode.QUERY_ASSIGNMENT, bad)
            assert r.code == ResponseCode.SYSTEM_ERROR, bad
        # the connection and the broker still serve
        assert (await query(conn, "c0")) == QueryAssignmentResponseBody(None)  # no member registered
    finally:
        await conn.close()


async def test_query_assignment_uses_every_broker_of_the_name_server_route(cluster: LocalCluster) -> None:
    """The topic's queues come from the name server's route (TopicRouteInfoManager), so a second
    broker's queues are assigned too, and POP share-all gives one queue -1 per broker."""
    # (a first registration with one topic only is refused, as Java's RouteInfoManager does)
    topics = {t: TopicConfig(t, n, n, 6) for t, n in (("TBW102", 8), (TOPIC, 2))}
    wrapper = TopicConfigSerializeWrapper(
        topic_config_table=topics, data_version=DataVersion(0, cluster.broker.clock.now_ms(), 1)
    )
    body = RegisterBrokerBody(wrapper).encode()
    header = RegisterBrokerRequestHeader(
        broker_name="broker-z",
        broker_addr="127.0.0.9:10911",
        cluster_name="DefaultCluster",
        ha_server_addr="127.0.0.9:10912",
        broker_id=0,
        compressed=False,
        body_crc32=zlib.crc32(body) & 0x7FFFFFFF,
    )
    # the name server forgets a broker when its registering connection closes: keep it open
    ns = await Connection.connect(cluster.namesrv_addr)
    resp = await ns.request(RemotingCommand.request(RequestCode.REGISTER_BROKER, header.to_ext_fields(), body), TIMEOUT)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    (conn,) = await members(cluster, 1)
    try:
        r = await query(conn, "c0", model=MessageModel.BROADCASTING)
        got = {(a.message_queue.broker_name, a.message_queue.queue_id) for a in r.message_queue_assignments or []}
        assert got == {("broker-a", q) for q in range(4)} | {("broker-z", q) for q in range(2)}
        assert (await set_mode(conn, TOPIC, GROUP, POP, 0)).code == ResponseCode.SUCCESS
        r = await query(conn, "c0")
        assert {
            (a.message_queue.broker_name, a.message_queue.queue_id, a.mode) for a in r.message_queue_assignments or []
        } == {
            ("broker-a", -1, POP),
            ("broker-z", -1, POP),
        }
    finally:
        await conn.close()
        await ns.close()
