"""mqadmin (rocketmq-tools 5.3.x and 4.9.8) against rocketpipe's name server and broker.

Every command also runs against the Apache broker of the same major version (``server`` =
``apache``), which proves the expectations: what passes there and fails on ``rocketpipe`` is a
rocketpipe gap. mqadmin exits 0 even when a command fails (it prints the stack trace), so the
tests look at the output.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from interop_support import JavaClient, Target, consumed, send_some

from rocketpipe.testing.apache import FAST_DELAY_LEVELS
from rocketpipe.testing.cluster import local_cluster
from waiting import wait_until

CLUSTER = "RocketPipeCluster"


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


@pytest.fixture(params=["rocketpipe", "apache"])
async def server(request: pytest.FixtureRequest, java_client: JavaClient, tmp_path: Path) -> AsyncIterator[Target]:
    """rocketpipe's local cluster, or the Apache cluster of the tools' major version."""
    if request.param == "rocketpipe":
        async with local_cluster(
            tmp_path / "store", message_delay_level=FAST_DELAY_LEVELS, broker_cluster_name=CLUSTER
        ) as c:
            yield Target("rocketpipe", c.namesrv_addr, c.broker_addr, c.broker.config.broker_name)
        return
    ac = request.getfixturevalue("apache_5" if java_client.major >= 5 else "apache_4")
    yield Target(f"apache-{ac.major}", ac.namesrv_addr, ac.broker_addr, ac.broker_name, ac)


def cluster_name(t: Target) -> str:
    return t.apache.cluster_name if t.apache is not None else CLUSTER


def no_exception(out: str) -> None:
    assert "Exception" not in out, out[-3000:]


async def test_mqadmin_update_topic_list_and_route(java_client: JavaClient, server: Target) -> None:
    by_cluster, by_broker = unique("AdmC"), unique("AdmB")
    code, out = await java_client.mqadmin(
        server.namesrv_addr, "updateTopic", "-c", cluster_name(server), "-t", by_cluster, "-r", "4", "-w", "4"
    )
    assert code == 0 and f"create topic to {server.broker_addr} success." in out, out
    assert f"TopicConfig [topicName={by_cluster}, readQueueNums=4, writeQueueNums=4, perm=RW-" in out
    code, out = await java_client.mqadmin(
        server.namesrv_addr, "updateTopic", "-b", server.broker_addr, "-t", by_broker, "-r", "2", "-w", "3"
    )
    assert code == 0 and f"create topic to {server.broker_addr} success." in out, out

    async def listed() -> bool:
        _, out = await java_client.mqadmin(server.namesrv_addr, "topicList")
        return {by_cluster, by_broker} <= set(out.split())

    await wait_until(listed, timeout=40, interval=1, what="topicList shows both topics")
    code, out = await java_client.mqadmin(server.namesrv_addr, "topicRoute", "-t", by_broker)
    no_exception(out)
    assert f'"brokerName":"{server.broker_name}"' in out
    assert f'"cluster":"{cluster_name(server)}"' in out
    assert re.search(r'"brokerAddrs":\{0:"' + re.escape(server.broker_addr) + '"', out), out
    assert '"readQueueNums":2' in out and '"writeQueueNums":3' in out and '"perm":6' in out


async def test_mqadmin_topic_status(java_client: JavaClient, server: Target) -> None:
    topic = unique("AdmStatus")
    results = await send_some(server.namesrv_addr, topic, 6)
    _, out = await java_client.mqadmin(server.namesrv_addr, "topicStatus", "-t", topic)
    no_exception(out)
    per_queue: dict[int, int] = {}
    for r in results:
        per_queue[r.message_queue.queue_id] = per_queue.get(r.message_queue.queue_id, 0) + 1
    rows = {
        int(m[1]): (int(m[2]), int(m[3]))
        for m in re.finditer(rf"^{re.escape(server.broker_name)}\s+(\d+)\s+(\d+)\s+(\d+)", out, re.M)
    }
    assert rows, out
    assert {q: mx for q, (_, mx) in rows.items() if mx} == per_queue
    assert all(mn == 0 for mn, _ in rows.values())


async def test_mqadmin_cluster_list(java_client: JavaClient, server: Target) -> None:
    _, out = await java_client.mqadmin(server.namesrv_addr, "clusterList")
    no_exception(out)
    row = next((line for line in out.splitlines() if server.broker_addr in line), None)
    assert row is not None, out
    assert row.split()[:4] == [cluster_name(server), server.broker_name, "0", server.broker_addr]
    assert re.search(r"V\d+_\d+_\d+", row), row  # the broker's version (from GET_BROKER_RUNTIME_INFO)


async def test_mqadmin_consumer_progress(java_client: JavaClient, server: Target) -> None:
    topic, group = unique("AdmProgress"), unique("admgroup")
    results = await send_some(server.namesrv_addr, topic, 6)
    async with consumed(server.namesrv_addr, group, topic, 6):
        pass
    _, out = await java_client.mqadmin(server.namesrv_addr, "consumerProgress", "-g", group)
    no_exception(out)
    rows = [line.split() for line in out.splitlines() if line.startswith(topic)]
    assert rows, out
    per_queue: dict[int, int] = {}
    for r in results:
        per_queue[r.message_queue.queue_id] = per_queue.get(r.message_queue.queue_id, 0) + 1
    seen = {int(row[2]): (int(row[3]), int(row[4]), int(row[5])) for row in rows}
    assert {q: b for q, (b, _, _) in seen.items() if b} == per_queue
    assert all(broker == consumer and diff == 0 for broker, consumer, diff in seen.values())
    assert "Diff Total: 0" in out


async def test_mqadmin_query_msg_by_id(java_client: JavaClient, server: Target) -> None:
    topic = unique("AdmQuery")
    results = await send_some(server.namesrv_addr, topic, 3)
    if java_client.major >= 5:  # 5.x made -t mandatory and looks UNIQ_KEY ids up in the index
        topic_opt, ids = ["-t", topic], ((results[0], results[0].offset_msg_id), (results[1], results[1].msg_id))
    else:  # 4.x without a topic decodes the id as an offset id only
        topic_opt, ids = [], ((results[0], results[0].offset_msg_id),)
    for r, msg_id in ids:
        _, out = await java_client.mqadmin(server.namesrv_addr, "queryMsgById", *topic_opt, "-i", msg_id)
        assert f"Topic:               {topic}" in out, out[-3000:]
        assert "Tags:                [TA]" in out
        assert f"Queue ID:            {r.message_queue.queue_id}" in out
        assert f"Queue Offset:        {r.queue_offset}" in out
        assert f"UNIQ_KEY={r.msg_id}" in out
        assert f"Store Host:          {server.broker_addr}" in out
        no_exception(out)  # includes the message track (QUERY_TOPIC_CONSUME_BY_WHO)
