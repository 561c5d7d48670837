"""System topics as Apache 5.3.3 creates them: rocketpipe's broker registers the same names with
the same queue counts and permissions (read through each cluster's name server)."""

from __future__ import annotations

from pathlib import Path

from rocketpipe import Admin
from rocketpipe.errors import RocketMQError
from rocketpipe.testing.apache import ApacheCluster
from rocketpipe.testing.cluster import local_cluster

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


async def _shapes(namesrv: str, cluster: str, broker: str) -> dict[str, tuple[int, int, int] | str]:
    out: dict[str, tuple[int, int, int] | str] = {}
    async with Admin(namesrv) as admin:
        for pattern in SYSTEM_TOPICS:
            name = pattern.format(cluster=cluster, broker=broker)
            try:
                route = await admin.topic_route(name)
            except RocketMQError as exc:
                out[pattern] = type(exc).__name__
                continue
            (qd,) = route.queue_datas
            out[pattern] = (qd.read_queue_nums, qd.write_queue_nums, qd.perm)
    return out


async def test_system_topics_match_apache_5(apache_5: ApacheCluster, tmp_path: Path) -> None:
    theirs = await _shapes(apache_5.namesrv_addr, apache_5.cluster_name, apache_5.broker_name)
    async with local_cluster(tmp_path / "store", broker_cluster_name=apache_5.cluster_name) as c:
        ours = await _shapes(c.namesrv_addr, apache_5.cluster_name, c.broker.config.broker_name)
    assert ours == theirs
