"""NameServer over real TCP: register, routes in both JSON forms, cluster info, topic list,
unregister, expiry with a fake clock, channel close, crc, compressed bodies, KV, data version."""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator

import pytest

from rocketpipe.namesrv import NameServer
from rocketpipe.protocol.bodies.register import (
    DataVersion,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
)
from rocketpipe.protocol.bodies.route import ClusterInfo, KVTable, TopicList, TopicRouteData
from rocketpipe.protocol.codes import RequestCode, ResponseCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.protocol.headers.route import (
    GetRouteInfoRequestHeader,
    QueryDataVersionRequestHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnRegisterBrokerRequestHeader,
)
from rocketpipe.transport import Connection
from waiting import wait_until

T0 = 1_700_000_000_000


class FakeClock:
    """Wall clock the test moves by hand."""

    def __init__(self, now_ms: int = T0) -> None:
        self.now = now_ms

    def now_ms(self) -> int:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def ns(clock: FakeClock) -> AsyncIterator[NameServer]:
    async with NameServer(clock=clock, scan_interval_s=0.05) as server:
        yield server


@pytest.fixture
async def conn(ns: NameServer) -> AsyncIterator[Connection]:
    assert ns.address is not None
    c = await Connection.connect(ns.address)
    try:
        yield c
    finally:
        await c.close()


def wrapper(*topics: str, counter: int = 1) -> TopicConfigSerializeWrapper:
    return TopicConfigSerializeWrapper(
        topic_config_table={t: TopicConfig(t, 4, 4, 6) for t in topics},
        data_version=DataVersion(0, T0, counter),
    )


def register_cmd(
    name: str = "broker-a",
    addr: str = "127.0.0.1:10911",
    bid: int = 0,
    topics: tuple[str, ...] = ("TBW102", "T1"),
    *,
    compressed: bool = False,
    crc: bool = True,
    version: int | None = None,
    **header: object,
) -> RemotingCommand:
    body = RegisterBrokerBody(wrapper(*topics)).encode(compressed=compressed)
    h = RegisterBrokerRequestHeader(
        broker_name=name,
        broker_addr=addr,
        cluster_name="DefaultCluster",
        ha_server_addr=addr.replace("10911", "10912"),
        broker_id=bid,
        compressed=compressed,
        body_crc32=(zlib.crc32(body) & 0x7FFFFFFF) if crc else 0,
        **header,  # type: ignore[arg-type]
    )
    cmd = RemotingCommand.request(RequestCode.REGISTER_BROKER, h.to_ext_fields(), body)
    if version is not None:
        cmd.version = version
    return cmd


def route_cmd(topic: str, version: int = 409, accept_standard: bool | None = None) -> RemotingCommand:
    h = GetRouteInfoRequestHeader(topic=topic, accept_standard_json_only=accept_standard)
    cmd = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, h.to_ext_fields())
    cmd.version = version
    return cmd


async def call(conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
    return await conn.request(cmd, timeout=5)


async def test_register_then_route_in_both_json_forms(conn: Connection) -> None:
    resp = await call(conn, register_cmd())
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    assert RegisterBrokerResponseHeader.from_ext_fields(resp.ext_fields).master_addr is None

    std = await call(conn, route_cmd("T1", version=409))
    assert std.code == ResponseCode.SUCCESS
    assert b'"brokerAddrs":{"0":"127.0.0.1:10911"}' in std.body
    legacy = await call(conn, route_cmd("T1", version=317))
    assert b'"brokerAddrs":{0:"127.0.0.1:10911"}' in legacy.body
    forced = await call(conn, route_cmd("T1", version=317, accept_standard=True))
    assert b'{"0":' in forced.body

    routes = [TopicRouteData.decode(r.body) for r in (std, legacy, forced)]
    assert routes[0] == routes[1] == routes[2]
    (qd,) = routes[0].queue_datas
    assert (qd.broker_name, qd.read_queue_nums, qd.write_queue_nums, qd.perm) == ("broker-a", 4, 4, 6)
    (bd,) = routes[0].broker_datas
    assert (bd.cluster, bd.broker_addrs) == ("DefaultCluster", {0: "127.0.0.1:10911"})


async def test_unknown_topic_is_topic_not_exist(conn: Connection) -> None:
    resp = await call(conn, route_cmd("nope"))
    assert resp.code == ResponseCode.TOPIC_NOT_EXIST
    assert (resp.remark or "").startswith("No topic route info in name server for the topic: nope")
    assert resp.body == b""


async def test_cluster_info_and_topic_list(conn: Connection) -> None:
    await call(conn, register_cmd("broker-a", "127.0.0.1:10911"))
    await call(conn, register_cmd("broker-b", "127.0.0.2:10911", topics=("TBW102", "T2")))
    resp = await call(conn, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO))
    assert resp.code == 0
    assert b"{0:" in resp.body  # Java's fastjson default form
    ci = ClusterInfo.decode(resp.body)
    assert ci.cluster_addr_table == {"DefaultCluster": {"broker-a", "broker-b"}}
    assert ci.broker_addr_table["broker-b"].broker_addrs == {0: "127.0.0.2:10911"}
    resp = await call(conn, RemotingCommand.request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER))
    assert TopicList.decode(resp.body).topic_list == {"TBW102", "T1", "T2"}
    resp = await call(conn, RemotingCommand.request(RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": "DefaultCluster"}))
    assert TopicList.decode(resp.body).topic_list == {"TBW102", "T1", "T2"}


async def test_unregister_removes_route(conn: Connection) -> None:
    await call(conn, register_cmd())
    h = UnRegisterBrokerRequestHeader(
        broker_name="broker-a",
        broker_addr="127.0.0.1:10911",
        cluster_name="DefaultCluster",
        broker_id=0,
    )
    resp = await call(conn, RemotingCommand.request(RequestCode.UNREGISTER_BROKER, h.to_ext_fields()))
    assert resp.code == 0
    assert (await call(conn, route_cmd("T1"))).code == ResponseCode.TOPIC_NOT_EXIST
    ci = ClusterInfo.decode((await call(conn, RemotingCommand.request(106))).body)
    assert ci.broker_addr_table == {}


async def test_expiry_with_fake_clock(ns: NameServer, conn: Connection, clock: FakeClock) -> None:
    await call(conn, register_cmd("broker-a", "127.0.0.1:10911"))
    await call(conn, register_cmd("broker-b", "127.0.0.2:10911", heartbeat_timeout_millis=30_000))
    clock.now = T0 + 30_001  # broker-b's own timeout passed
    ns.scan_now()
    await wait_until(lambda: "broker-b" not in ns.routes.cluster_info().broker_addr_table, what="broker-b expired")
    assert "broker-a" in ns.routes.cluster_info().broker_addr_table
    assert (await call(conn, route_cmd("T1"))).code == 0
    clock.now = T0 + 120_001  # the periodic scan (every 0.05 s) picks this up by itself
    await wait_until(lambda: ns.routes.route("T1") is None, what="broker-a expired")
    assert (await call(conn, route_cmd("T1"))).code == ResponseCode.TOPIC_NOT_EXIST


async def test_broker_connection_close_removes_it(ns: NameServer) -> None:
    assert ns.address is not None
    broker = await Connection.connect(ns.address)
    await call(broker, register_cmd())
    assert ns.routes.route("T1") is not None
    await broker.close()
    await wait_until(lambda: ns.routes.route("T1") is None, what="route dropped on close")


async def test_slave_registration_returns_master_addresses(conn: Connection) -> None:
    await call(conn, register_cmd("broker-a", "127.0.0.1:10911", bid=0))
    resp = await call(conn, register_cmd("broker-a", "127.0.0.3:10911", bid=1))
    h = RegisterBrokerResponseHeader.from_ext_fields(resp.ext_fields)
    assert (h.master_addr, h.ha_server_addr) == ("127.0.0.1:10911", "127.0.0.1:10912")


async def test_crc_mismatch_and_single_topic_first_registration_fail(conn: Connection) -> None:
    bad = register_cmd()
    bad.ext_fields["bodyCrc32"] = "12345"
    resp = await call(conn, bad)
    assert (resp.code, resp.remark) == (ResponseCode.SYSTEM_ERROR, "crc32 not match")
    resp = await call(conn, register_cmd(topics=("OnlyOne",)))
    assert (resp.code, resp.remark) == (ResponseCode.SYSTEM_ERROR, "register broker failed")
    resp = await call(conn, register_cmd(crc=False))  # crc 0 = not checked
    assert resp.code == 0


async def test_compressed_and_old_version_bodies(conn: Connection) -> None:
    resp = await call(conn, register_cmd("broker-z", "127.0.0.9:10911", compressed=True, topics=("TBW102", "TZ")))
    assert resp.code == 0, resp.remark
    assert (await call(conn, route_cmd("TZ"))).code == 0
    # version < 37: the body is a bare TopicConfigSerializeWrapper
    h = RegisterBrokerRequestHeader(
        broker_name="broker-old",
        broker_addr="127.0.0.8:10911",
        cluster_name="C",
        ha_server_addr="127.0.0.8:10912",
        broker_id=0,
    )
    old = RemotingCommand.request(RequestCode.REGISTER_BROKER, h.to_ext_fields(), wrapper("TBW102", "TOLD").encode())
    old.version = 30
    assert (await call(conn, old)).code == 0
    route = TopicRouteData.decode((await call(conn, route_cmd("TOLD"))).body)
    assert route.broker_datas[0].broker_name == "broker-old"


async def test_bad_requests(conn: Connection) -> None:
    resp = await call(conn, RemotingCommand.request(RequestCode.REGISTER_BROKER, {"brokerName": "x"}))
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert "brokerAddr" in (resp.remark or "")
    resp = await call(conn, RemotingCommand.request(RequestCode.SEND_MESSAGE))
    assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert resp.remark == f" request type {int(RequestCode.SEND_MESSAGE)} not supported"
    garbage = register_cmd(crc=False)
    garbage.body = b"{not json"
    assert (await call(conn, garbage)).code == ResponseCode.SYSTEM_ERROR
    assert not conn.is_closed


async def test_query_data_version(conn: Connection) -> None:
    await call(conn, register_cmd())
    h = QueryDataVersionRequestHeader(
        broker_name="broker-a",
        broker_addr="127.0.0.1:10911",
        cluster_name="DefaultCluster",
        broker_id=0,
    )
    same = RemotingCommand.request(RequestCode.QUERY_DATA_VERSION, h.to_ext_fields(), DataVersion(0, T0, 1).encode())
    resp = await call(conn, same)
    assert resp.ext_fields["changed"] == "false"
    assert DataVersion.decode(resp.body) == DataVersion(0, T0, 1)
    newer = RemotingCommand.request(RequestCode.QUERY_DATA_VERSION, h.to_ext_fields(), DataVersion(0, T0, 2).encode())
    assert (await call(conn, newer)).ext_fields["changed"] == "true"


async def test_kv_config(conn: Connection) -> None:
    ns_key = {"namespace": "ORDER_TOPIC_CONFIG", "key": "T1"}
    resp = await call(conn, RemotingCommand.request(RequestCode.GET_KV_CONFIG, ns_key))
    assert resp.code == ResponseCode.QUERY_NOT_FOUND
    resp = await call(conn, RemotingCommand.request(RequestCode.PUT_KV_CONFIG, {**ns_key, "value": "broker-a:4"}))
    assert resp.code == 0
    resp = await call(conn, RemotingCommand.request(RequestCode.GET_KV_CONFIG, ns_key))
    assert resp.ext_fields["value"] == "broker-a:4"
    resp = await call(
        conn, RemotingCommand.request(RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "ORDER_TOPIC_CONFIG"})
    )
    assert KVTable.decode(resp.body).table == {"T1": "broker-a:4"}
    # brokers get the ORDER_TOPIC_CONFIG namespace back on registration
    resp = await call(conn, register_cmd())
    assert KVTable.decode(resp.body).table == {"T1": "broker-a:4"}
    await call(conn, RemotingCommand.request(RequestCode.DELETE_KV_CONFIG, ns_key))
    resp = await call(conn, RemotingCommand.request(RequestCode.GET_KV_CONFIG, ns_key))
    assert resp.code == ResponseCode.QUERY_NOT_FOUND


async def test_close_is_idempotent_and_stops_serving(clock: FakeClock) -> None:
    ns = NameServer(clock=clock)
    addr = await ns.start()
    c = await Connection.connect(addr)
    await ns.close()
    await ns.close()
    await wait_until(lambda: c.is_closed, what="client saw the close")
    await c.close()
