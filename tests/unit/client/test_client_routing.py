"""Route data → publish / subscribe queues, broker table, queue selection."""

from __future__ import annotations

import doctest

from rocketpipe.client import routing
from rocketpipe.client.routing import (
    RoundRobinSelector,
    broker_addr_table,
    default_topic_publish_queues,
    publish_queues,
    subscribe_queues,
)
from rocketpipe.protocol.bodies.route import BrokerData, QueueData, TopicRouteData
from rocketpipe.protocol.message import MessageQueue


def route() -> TopicRouteData:
    return TopicRouteData(
        queue_datas=[
            QueueData(broker_name="broker-b", read_queue_nums=2, write_queue_nums=3, perm=6),
            QueueData(broker_name="broker-a", read_queue_nums=4, write_queue_nums=2, perm=6),
            QueueData(broker_name="broker-c", read_queue_nums=1, write_queue_nums=1, perm=4),  # read only
            QueueData(broker_name="broker-d", read_queue_nums=1, write_queue_nums=1, perm=6),  # slave only
        ],
        broker_datas=[
            BrokerData(cluster="c", broker_name="broker-a", broker_addrs={0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}),
            BrokerData(cluster="c", broker_name="broker-b", broker_addrs={0: "10.0.0.3:10911"}),
            BrokerData(cluster="c", broker_name="broker-c", broker_addrs={0: "10.0.0.4:10911"}),
            BrokerData(cluster="c", broker_name="broker-d", broker_addrs={1: "10.0.0.5:10911"}),
        ],
    )


def test_doctests() -> None:
    assert doctest.testmod(routing).failed == 0


def test_publish_queues_sorted_writable_with_master() -> None:
    got = [(q.broker_name, q.queue_id) for q in publish_queues("T", route())]
    assert got == [("broker-a", 0), ("broker-a", 1), ("broker-b", 0), ("broker-b", 1), ("broker-b", 2)]


def test_order_topic_conf_wins() -> None:
    r = route()
    r.order_topic_conf = "broker-z:2;broker-y:1"
    assert [(q.broker_name, q.queue_id) for q in publish_queues("T", r)] == [
        ("broker-z", 0),
        ("broker-z", 1),
        ("broker-y", 0),
    ]


def test_subscribe_queues_readable_sorted() -> None:
    got = subscribe_queues("T", route())
    assert got == sorted(got)
    assert [(q.broker_name, q.queue_id) for q in got] == (
        [("broker-a", i) for i in range(4)] + [("broker-b", 0), ("broker-b", 1), ("broker-c", 0), ("broker-d", 0)]
    )


def test_broker_addr_table() -> None:
    t = broker_addr_table(route())
    assert t["broker-a"] == {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}
    assert t["broker-d"] == {1: "10.0.0.5:10911"}


def test_default_topic_queues_are_capped() -> None:
    tbw = TopicRouteData(
        queue_datas=[QueueData(broker_name="broker-a", read_queue_nums=8, write_queue_nums=8, perm=7)],
        broker_datas=[BrokerData(cluster="c", broker_name="broker-a", broker_addrs={0: "x:1"})],
    )
    got = default_topic_publish_queues("NewTopic", tbw, 4)
    assert got == [MessageQueue("NewTopic", "broker-a", i) for i in range(4)]


def test_selector_round_robin_and_avoid_last_broker() -> None:
    qs = publish_queues("T", route())
    sel = RoundRobinSelector(start=0)
    seen = [sel.select(qs) for _ in range(len(qs))]
    assert sorted(seen) == sorted(qs)  # one full cycle visits every queue once
    for _ in range(10):
        assert sel.select(qs, last_broker_name="broker-a").broker_name == "broker-b"
    only_a = [q for q in qs if q.broker_name == "broker-a"]
    assert sel.select(only_a, last_broker_name="broker-a").broker_name == "broker-a"  # no other broker: fall back
