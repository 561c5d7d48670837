"""System topics and auto-creation as Apache 5.3.3 does them: the same rocketpipe client against
rocketpipe's broker and against Apache's (the control), results compared.

* the system topics each broker registers: same names, queue counts and permissions (read
  through each cluster's name server; the session's ``apache_5``);
* a client that looks a system topic up directly with ``autoCreateTopicEnable`` on (the
  default) and ``traceTopicEnable`` off (the default): a tracing producer's first trace message
  finds no route for ``RMQ_SYS_TRACE_TOPIC``, goes through the ``TBW102`` template and the broker
  creates the topic on that send (4 read / 4 write queues — the client's
  ``defaultTopicQueueNums`` capping TBW102's 8 — perm RW without INHERIT, registered with the
  name server); the trace is then readable (:meth:`Admin.query_trace`);
* a producer sending straight to system topics: forbidden ones (``SCHEDULE_TOPIC_XXXX``, the
  transaction topics …) refused by the client, writable ones accepted as they are, a
  system-named topic the name server does not know auto-created like any other (4 / 4 / RW), and
  ``rmq_sys_SYNC_BROKER_MEMBER_<broker>`` (perm INHERIT only, no writable queue) refused by the
  client with "no route info" as Java's ``tryToFindTopicPublishInfo`` does: a routed topic is
  never sent through the TBW102 template. (rocketpipe's producer used to fall back to TBW102
  there and hit the broker with queue ids the topic does not have; fixed in
  ``client/producer/producer.py``.)

The auto-creation tests run against an Apache 5.3.3 cluster of this module, with the defaults
(``apache_fresh``), so that no other test has created a topic before them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from interop_support import TIMINGS, create_topic, has_route, unique

from rocketpipe import Admin, Message, Producer, TraceType
from rocketpipe.errors import RocketMQError
from rocketpipe.testing.apache import APACHE_VERSIONS, ApacheCluster, ApacheUnavailableError, apache_cluster
from rocketpipe.testing.cluster import local_cluster
from waiting import wait_until

SYSTEM_TOPICS = [
    "SELF_TEST_TOPIC",
    "TBW102",
    "BenchmarkTest",
    "OFFSET_MOVED_EVENT",
    "SCHEDULE_TOPIC_XXXX",
    "rmq_sys_SYNC_BROKER_MEMBER_{broker}",
    "RMQ_SYS_TRANS_HALF_TOPIC",
    "RMQ_SYS_TRANS_OP_HALF_TOPIC",
    "rmq_sys_wheel_timer",
    "{cluster}_REPLY_TOPIC",
    "rmq_sys_REVIVE_LOG_{cluster}",
    "{cluster}",
    "{broker}",
    "RMQ_SYS_TRACE_TOPIC",  # traceTopicEnable is false by default: no route on either
]

TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"

#: Topics a producer sends to directly (besides the trace topic): every kind of system topic.
DIRECT_SENDS = [
    "SCHEDULE_TOPIC_XXXX",
    "RMQ_SYS_TRANS_HALF_TOPIC",
    "RMQ_SYS_TRANS_OP_HALF_TOPIC",
    "TRANS_CHECK_MAX_TIME_TOPIC",
    "SELF_TEST_TOPIC",
    "OFFSET_MOVED_EVENT",
    "TBW102",
    "BenchmarkTest",
    "rmq_sys_wheel_timer",
    "{cluster}_REPLY_TOPIC",
    "rmq_sys_REVIVE_LOG_{cluster}",
    "{cluster}",
    "{broker}",
    "rmq_sys_SYNC_BROKER_MEMBER_{broker}",
    "rmq_sys_NEW_{n}",
    "%RETRY%new_{n}",
    "%DLQ%new_{n}",
]

Shape = tuple[int, int, int] | str


@pytest.fixture(scope="module")
def apache_fresh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApacheCluster]:
    """Apache 5.3.3 with the defaults (autoCreateTopicEnable on, traceTopicEnable off), used only here."""
    version = APACHE_VERSIONS["apache-5"]
    try:
        with apache_cluster(version, tmp_path_factory.mktemp("apache-5-systopics")) as c:
            TIMINGS["apache-5 (system topics) start-up"] = c.startup_seconds
            yield c
    except ApacheUnavailableError as exc:
        pytest.fail(f"Apache RocketMQ {version} (apache-5, system topics) unavailable: {exc}", pytrace=False)


async def _shape(admin: Admin, topic: str) -> Shape:
    """(read queues, write queues, perm) of ``topic``'s one queue data, or the lookup's error type."""
    try:
        route = await admin.topic_route(topic)
    except RocketMQError as exc:
        return type(exc).__name__
    (qd,) = route.queue_datas
    return (qd.read_queue_nums, qd.write_queue_nums, qd.perm)


async def _shapes(namesrv: str, cluster: str, broker: str) -> dict[str, Shape]:
    async with Admin(namesrv) as admin:
        return {p: await _shape(admin, p.format(cluster=cluster, broker=broker)) for p in SYSTEM_TOPICS}


async def test_system_topics_match_apache_5(apache_5: ApacheCluster, tmp_path: Path) -> None:
    theirs = await _shapes(apache_5.namesrv_addr, apache_5.cluster_name, apache_5.broker_name)
    async with local_cluster(tmp_path / "store", broker_cluster_name=apache_5.cluster_name) as c:
        ours = await _shapes(c.namesrv_addr, apache_5.cluster_name, c.broker.config.broker_name)
    assert ours == theirs


async def _first_trace(namesrv: str) -> dict[str, object]:
    """Look RMQ_SYS_TRACE_TOPIC up, send one traced message, and report what the name server
    routes for the trace topic afterwards and whether the Pub record can be read back."""
    out: dict[str, object] = {}
    topic, group = unique("SysTraceT"), unique("stpg")
    async with Admin(namesrv) as admin:
        out["before"] = await _shape(admin, TRACE_TOPIC)
        await create_topic(admin, topic, 2)
        async with Producer(group, namesrv_addr=namesrv, enable_msg_trace=True) as p:
            sent = await p.send(Message.build(topic, b"traced", keys="sys-k"))
        # close() flushed the trace dispatcher: its send created the topic on the broker, which
        # registers it with the name server
        await wait_until(lambda: has_route(admin, TRACE_TOPIC), timeout=30, what=f"a route of {TRACE_TOPIC}")
        out["after"] = await _shape(admin, TRACE_TOPIC)
        pubs: list[tuple[bool, bool, str, str]] = []

        async def pub_found() -> bool:
            views = await admin.query_trace(sent.msg_id)
            pubs[:] = [
                (v.group_name == group, v.topic == topic, v.keys, v.status)
                for v in views
                if v.trace_type is TraceType.Pub
            ]
            return bool(pubs)

        await wait_until(pub_found, timeout=30, what=f"the Pub trace of {sent.msg_id}")
        out["pub"] = pubs
    return out


async def test_trace_topic_auto_created_like_apache_5(apache_fresh: ApacheCluster, tmp_path: Path) -> None:
    theirs = await _first_trace(apache_fresh.namesrv_addr)
    async with local_cluster(tmp_path / "store", broker_cluster_name=apache_fresh.cluster_name) as c:
        ours = await _first_trace(c.namesrv_addr)
    assert theirs == {
        "before": "TopicNotExistError",
        "after": (4, 4, 6),  # min(defaultTopicQueueNums 4, TBW102's 8); PERM_READ | PERM_WRITE
        "pub": [(True, True, "sys-k", "success")],
    }
    assert ours == theirs


async def _direct_sends(namesrv: str, cluster: str, broker: str) -> dict[str, tuple[str, Shape]]:
    """Send one message to each of DIRECT_SENDS: (outcome, route shape afterwards) per pattern."""
    n = unique("x").removeprefix("x_")
    out: dict[str, tuple[str, Shape]] = {}
    async with Admin(namesrv) as admin, Producer(unique("dspg"), namesrv_addr=namesrv) as p:
        for pattern in DIRECT_SENDS:
            topic = pattern.format(cluster=cluster, broker=broker, n=n)
            try:
                res = await asyncio.wait_for(p.send(Message.build(topic, b"direct")), 30)
                outcome = res.send_status.name
            except RocketMQError as exc:
                outcome = f"{type(exc).__name__} {exc.code}"
            out[pattern] = (outcome, await _shape(admin, topic))
    return out


async def test_send_to_system_topics_like_apache_5(apache_fresh: ApacheCluster, tmp_path: Path) -> None:
    cluster = apache_fresh.cluster_name
    theirs = await _direct_sends(apache_fresh.namesrv_addr, cluster, apache_fresh.broker_name)
    async with local_cluster(tmp_path / "store", broker_cluster_name=cluster) as c:
        ours = await _direct_sends(c.namesrv_addr, cluster, c.broker.config.broker_name)
    forbidden = ("InvalidArgumentError 29", (1, 1, 6))
    assert theirs["SCHEDULE_TOPIC_XXXX"] == ("InvalidArgumentError 29", (18, 18, 6))
    assert theirs["RMQ_SYS_TRANS_HALF_TOPIC"] == theirs["SELF_TEST_TOPIC"] == forbidden
    assert theirs["rmq_sys_SYNC_BROKER_MEMBER_{broker}"] == ("RouteNotFoundError 17", (1, 1, 1))
    assert theirs["rmq_sys_NEW_{n}"] == theirs["%RETRY%new_{n}"] == ("SEND_OK", (4, 4, 6))  # auto-created
    assert theirs["TBW102"] == ("SEND_OK", (8, 8, 7))
    assert ours == theirs
