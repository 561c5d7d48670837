"""RouteTable (pure, injected now_ms): RouteInfoManager semantics.

(Pure tests; they live here because this engineer owns tests/integration/namesrv only.)
"""

from __future__ import annotations

from rocketpipe.namesrv import RouteTable
from rocketpipe.protocol.bodies.register import DataVersion, TopicConfig, TopicConfigSerializeWrapper
from rocketpipe.protocol.sysflag import PERM_WRITE

T0 = 1_700_000_000_000


def wrapper(*topics: str, counter: int = 1, queues: int = 4, perm: int = 6) -> TopicConfigSerializeWrapper:
    return TopicConfigSerializeWrapper(
        topic_config_table={t: TopicConfig(t, queues, queues, perm) for t in topics},
        data_version=DataVersion(0, 1000 + counter, counter),
    )


def register(
    rt: RouteTable,
    name: str = "broker-a",
    bid: int = 0,
    addr: str = "10.0.0.1:10911",
    w: TopicConfigSerializeWrapper | None = None,
    now: int = T0,
    cluster: str = "C",
    **kw: object,
):
    return rt.register_broker(
        cluster_name=cluster,
        broker_addr=addr,
        broker_name=name,
        broker_id=bid,
        ha_server_addr=addr.replace("10911", "10912"),
        topic_config_wrapper=w if w is not None else wrapper("TBW102", "T1"),
        now_ms=now,
        **kw,  # type: ignore[arg-type]
    )


def test_register_then_route_cluster_and_topics() -> None:
    rt = RouteTable()
    assert register(rt) is not None
    route = rt.route("T1")
    assert route is not None
    (qd,) = route.queue_datas
    assert (qd.broker_name, qd.read_queue_nums, qd.write_queue_nums, qd.perm) == ("broker-a", 4, 4, 6)
    (bd,) = route.broker_datas
    assert (bd.cluster, bd.broker_name, bd.broker_addrs) == ("C", "broker-a", {0: "10.0.0.1:10911"})
    assert rt.route("nope") is None
    ci = rt.cluster_info()
    assert ci.cluster_addr_table == {"C": {"broker-a"}}
    assert ci.broker_addr_table["broker-a"].broker_addrs == {0: "10.0.0.1:10911"}
    assert rt.topic_list().topic_list == {"TBW102", "T1"}
    assert rt.topics_by_cluster("C").topic_list == {"TBW102", "T1"}
    assert rt.topics_by_cluster("other").topic_list == set()


def test_topic_changes_apply_only_with_a_new_data_version_or_new_topic() -> None:
    rt = RouteTable()
    register(rt, w=wrapper("TBW102", "T1", counter=1, queues=4))
    # same DataVersion, changed queue count: ignored; new topic: added
    register(rt, w=wrapper("TBW102", "T1", "T2", counter=1, queues=8))
    assert rt.route("T1").queue_datas[0].read_queue_nums == 4  # type: ignore[union-attr]
    assert rt.route("T2").queue_datas[0].read_queue_nums == 8  # type: ignore[union-attr]
    # bumped DataVersion: applied
    register(rt, w=wrapper("TBW102", "T1", counter=2, queues=8))
    assert rt.route("T1").queue_datas[0].read_queue_nums == 8  # type: ignore[union-attr]


def test_two_broker_groups_share_a_topic_and_unregister_keeps_the_other() -> None:
    rt = RouteTable()
    register(rt, "broker-a", addr="10.0.0.1:10911")
    register(rt, "broker-b", addr="10.0.0.2:10911")
    route = rt.route("T1")
    assert [q.broker_name for q in route.queue_datas] == ["broker-a", "broker-b"]  # type: ignore[union-attr]
    assert [b.broker_name for b in route.broker_datas] == ["broker-a", "broker-b"]  # type: ignore[union-attr]
    rt.unregister_broker("C", "10.0.0.1:10911", "broker-a", 0)
    route = rt.route("T1")
    assert [q.broker_name for q in route.queue_datas] == ["broker-b"]  # type: ignore[union-attr]
    assert rt.cluster_info().cluster_addr_table == {"C": {"broker-b"}}
    rt.unregister_broker("C", "10.0.0.2:10911", "broker-b", 0)
    assert rt.route("T1") is None
    assert rt.topic_list().topic_list == set()
    assert rt.cluster_info().cluster_addr_table == {}
    rt.unregister_broker("C", "10.0.0.9:1", "ghost", 0)  # unknown: ignored


def test_slave_does_not_change_queues_and_learns_its_master() -> None:
    rt = RouteTable()
    register(rt, bid=0, addr="10.0.0.1:10911", w=wrapper("TBW102", "T1", queues=4))
    result = register(rt, bid=1, addr="10.0.0.3:10911", w=wrapper("TBW102", "T1", "T9", queues=16))
    assert result is not None
    assert result.master_addr == "10.0.0.1:10911"
    assert result.ha_server_addr == "10.0.0.1:10912"
    assert rt.route("T9") is None
    route = rt.route("T1")
    assert route.queue_datas[0].read_queue_nums == 4  # type: ignore[union-attr]
    assert route.broker_datas[0].broker_addrs == {0: "10.0.0.1:10911", 1: "10.0.0.3:10911"}  # type: ignore[union-attr]
    # master leaves: the slave keeps the group (and its topics) alive
    rt.unregister_broker("C", "10.0.0.1:10911", "broker-a", 0)
    assert rt.route("T1").broker_datas[0].broker_addrs == {1: "10.0.0.3:10911"}  # type: ignore[union-attr]


def test_prime_slave_of_a_5x_acting_master_broker_registers_without_write_perm() -> None:
    rt = RouteTable()
    register(rt, bid=1, addr="10.0.0.3:10911", enable_acting_master=True)
    route = rt.route("T1")
    assert route is not None
    assert route.queue_datas[0].perm & PERM_WRITE == 0
    assert route.broker_datas[0].enable_acting_master is True


def test_first_registration_with_exactly_one_topic_is_rejected() -> None:
    rt = RouteTable()
    assert register(rt, w=wrapper("T1")) is None
    assert rt.route("T1") is None
    assert rt.cluster_info().broker_addr_table == {}
    assert register(rt, w=wrapper("TBW102", "T1")) is not None
    assert register(rt, w=wrapper("T3", counter=2)) is not None  # later single-topic is fine
    assert rt.route("T3") is not None


def test_same_address_under_another_id_replaces_the_old_entry() -> None:
    rt = RouteTable()
    register(rt, bid=1, addr="10.0.0.3:10911")
    register(rt, bid=0, addr="10.0.0.3:10911")
    assert rt.cluster_info().broker_addr_table["broker-a"].broker_addrs == {0: "10.0.0.3:10911"}


def test_scan_expired_uses_the_injected_time_and_per_broker_timeout() -> None:
    rt = RouteTable()
    register(rt, "broker-a", addr="10.0.0.1:10911", now=T0)
    register(rt, "broker-b", addr="10.0.0.2:10911", now=T0, timeout_ms=10_000)
    assert rt.scan_expired(T0 + 10_000) == []
    assert rt.scan_expired(T0 + 10_001) == ["10.0.0.2:10911"]
    assert [q.broker_name for q in rt.route("T1").queue_datas] == ["broker-a"]  # type: ignore[union-attr]
    register(rt, "broker-a", addr="10.0.0.1:10911", now=T0 + 60_000)  # refresh
    assert rt.scan_expired(T0 + 120_001) == []
    assert rt.scan_expired(T0 + 180_001) == ["10.0.0.1:10911"]
    assert rt.route("T1") is None
    assert rt.live_brokers() == {}


def test_channel_close_removes_brokers_registered_on_it() -> None:
    rt = RouteTable()
    chan_a, chan_b = object(), object()
    register(rt, "broker-a", addr="10.0.0.1:10911", channel=chan_a)
    register(rt, "broker-b", addr="10.0.0.2:10911", channel=chan_b)
    assert rt.on_channel_closed(object()) == []
    assert rt.on_channel_closed(chan_a) == ["10.0.0.1:10911"]
    assert set(rt.cluster_info().broker_addr_table) == {"broker-b"}


def test_data_version_queries() -> None:
    rt = RouteTable()
    w = wrapper("TBW102", "T1", counter=5)
    register(rt, w=w)
    assert not rt.is_broker_topic_config_changed("C", "10.0.0.1:10911", DataVersion(0, 1005, 5))
    assert rt.is_broker_topic_config_changed("C", "10.0.0.1:10911", DataVersion(0, 1006, 6))
    assert rt.is_broker_topic_config_changed("C", "10.9.9.9:1", DataVersion(0, 1005, 5))
    assert rt.query_broker_data_version("C", "10.0.0.1:10911") == DataVersion(0, 1005, 5)
    rt.refresh_broker("C", "10.0.0.1:10911", T0 + 100_000)
    assert rt.scan_expired(T0 + 200_000) == []


def test_delete_topic_of_one_cluster_or_everywhere() -> None:
    """RouteInfoManager.deleteTopic(topic, clusterName) / deleteTopic(topic)."""
    rt = RouteTable()
    register(rt, "broker-a", addr="10.0.0.1:10911", w=wrapper("TBW102", "T1", "T2"), cluster="C")
    register(rt, "broker-b", addr="10.0.0.2:10911", w=wrapper("TBW102", "T1", "T2"), cluster="D")
    rt.delete_topic("T1", "C")
    route = rt.route("T1")
    assert route is not None and [q.broker_name for q in route.queue_datas] == ["broker-b"]
    rt.delete_topic("T1", "no-such-cluster")
    assert rt.route("T1") is not None
    rt.delete_topic("T1", "D")  # last broker gone: the topic goes
    assert rt.route("T1") is None and "T1" not in rt.topic_list().topic_list
    rt.delete_topic("T2")
    assert rt.route("T2") is None
    rt.delete_topic("never-there")
    assert rt.topic_list().topic_list == {"TBW102"}
