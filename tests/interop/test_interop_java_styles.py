"""The official Java client's other consumption styles (5.3.x and 4.9.8) against rocketpipe's broker.

* orderly: DefaultMQPushConsumer + MessageListenerOrderly (``OrderlyConsumerScenario``): queue
  locks (LOCK_BATCH_MQ / UNLOCK_BATCH_MQ) as rocketpipe's broker records them, per-queue order,
  SUSPEND_CURRENT_QUEUE_A_MOMENT;
* server-side rebalance in POP mode (``PopConsumerScenario``): mqadmin ``setConsumeMode``
  (SET_MESSAGE_REQUEST_MODE), QUERY_ASSIGNMENT, POP_MESSAGE / ACK_MESSAGE /
  CHANGE_MESSAGE_INVISIBLETIME from the 5.x client; the 4.9.8 client (no POP, no
  ``setClientRebalance``, no ``setConsumeMode`` in its mqadmin) keeps consuming by PULL in the
  same setup.

Each test function is one row of the conformance matrix (``java_client`` = java-5 / java-4).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from interop_support import JavaClient

from rocketpipe import Admin, Message, Producer, SendStatus
from rocketpipe.protocol.bodies.assignment import MessageRequestMode, SetMessageRequestModeRequestBody
from rocketpipe.protocol.bodies.consumer import LockBatchRequestBody, LockBatchResponseBody
from rocketpipe.protocol.codes import RequestCode, ResponseCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.protocol.headers.pop import ExtraInfo
from rocketpipe.protocol.message import MessageQueue
from rocketpipe.testing.apache import FAST_DELAY_LEVELS, remoting_request
from rocketpipe.testing.cluster import LocalCluster, local_cluster
from rocketpipe.transport import Connection
from waiting import wait_until

#: DefaultMQPushConsumerImpl.popDelayLevel[0]: the invisible time of a first RECONSUME_LATER in POP mode (s).
POP_FIRST_RETRY_DELAY_S = 10
#: DefaultMQPushConsumer.popInvisibleTime default (ms).
JAVA_POP_INVISIBLE_MS = 60_000


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with local_cluster(
        tmp_path / "store", message_delay_level=FAST_DELAY_LEVELS, broker_cluster_name="RocketPipeCluster"
    ) as c:
        yield c


async def committed_offset(cluster: LocalCluster, group: str, topic: str, queue_id: int) -> int:
    ext = {"consumerGroup": group, "topic": topic, "queueId": str(queue_id)}
    reply = await asyncio.to_thread(remoting_request, cluster.broker_addr, RequestCode.QUERY_CONSUMER_OFFSET, ext)
    assert reply.code == ResponseCode.SUCCESS, reply.remark
    return int(reply.ext_fields["offset"])


# ------------------------------------------------------------------------------ orderly


async def test_java_orderly_consumer(java_client: JavaClient, cluster: LocalCluster, tmp_path: Path) -> None:
    """MessageListenerOrderly: the Java client holds the broker's queue locks while it runs
    (another client cannot take them), consumes every queue in offset order, a
    SUSPEND_CURRENT_QUEUE_A_MOMENT message comes again first in its queue with reconsumeTimes 1,
    and shutting down releases the locks and commits the offsets."""
    topic, group = unique("JavaOrderly"), unique("jorderly")
    orders, per_order, suspend = 8, 6, "o3-s2"
    broker = cluster.broker
    name = broker.config.broker_name
    async with Admin(cluster.namesrv_addr) as admin:
        await admin.create_topic(topic, 4)
    gate = tmp_path / "gate"
    gate.mkdir()
    run = asyncio.create_task(
        java_client.run(
            "OrderlyConsumerScenario",
            cluster.namesrv_addr,
            topic,
            group,
            str(orders),
            str(per_order),
            suspend,
            str(gate),
            "100",
            timeout=150,
        )
    )
    try:
        await wait_until(
            lambda: (gate / "locked").exists() or run.done(),
            timeout=60,
            interval=0.1,
            what="the Java consumer locked its queues",
        )
        assert not run.done(), run.result()
        info = json.loads((gate / "locked").read_text())
        client_id = info["clientId"]
        assert sorted(info["lockedQueues"]) == [0, 1, 2, 3]
        # rocketpipe's lock table: every queue of the topic held by the Java client
        mqs = [MessageQueue(topic, name, q) for q in range(4)]
        now = broker.clock.now_ms()
        assert [broker.locks.holder(group, mq, now) for mq in mqs] == [client_id] * 4
        # ... and over the wire: another client of the group is refused every one of them
        conn = await Connection.connect(cluster.broker_addr)
        try:
            body = LockBatchRequestBody(group, "10.9.9.9@intruder", set(mqs)).encode()
            resp = await conn.request(RemotingCommand.request(RequestCode.LOCK_BATCH_MQ, {}, body), 10.0)
            assert resp.code == ResponseCode.SUCCESS
            assert LockBatchResponseBody.decode(bytes(resp.body)).lock_ok_mq_set == set()
        finally:
            await conn.close()
        (gate / "go").touch()
        res = await run
    finally:
        (gate / "go").touch()
        if not run.done():
            await asyncio.wait((run,))
    assert res["ok"], res.get("error")
    assert res["done"], f"distinct={res['distinct']} of {orders * per_order}"
    assert res["clientId"] == client_id

    # the selector placed each order in one queue, in sequence
    placed: dict[str, tuple[int, int]] = {}
    for r in res["sent"]:
        assert r["status"] == "SEND_OK"
        placed[r["body"]] = (r["queue"]["queueId"], r["queueOffset"])
    for o in range(orders):
        qs = [placed[f"o{o}-s{s}"] for s in range(per_order)]
        assert {q for q, _ in qs} == {o % 4}
        assert [off for _, off in qs] == sorted(off for _, off in qs)

    deliveries: list[dict[str, Any]] = [d for d in res["deliveries"] if d["topic"] == topic]
    assert {d["body"] for d in deliveries} == set(placed)
    for d in deliveries:
        assert (d["queueId"], d["queueOffset"]) == placed[d["body"]]
        assert d["brokerName"] == name
    # per queue: consumed in offset order; the suspended message twice in a row (0 then 1)
    for q in range(4):
        got = [(d["queueOffset"], d["reconsumeTimes"]) for d in deliveries if d["queueId"] == q]
        offsets = sorted(off for qq, off in placed.values() if qq == q)
        expected = [(off, 0) for off in offsets]
        if q == placed[suspend][0]:
            i = offsets.index(placed[suspend][1])
            expected.insert(i + 1, (offsets[i], 1))
        assert got == expected, f"queue {q}"
    # per order: seq order
    for o in range(orders):
        seqs = [
            int(d["properties"]["seq"])
            for d in deliveries
            if d["properties"]["order"] == str(o) and d["reconsumeTimes"] == 0
        ]
        assert seqs == list(range(per_order))

    # shutdown: the locks are released (UNLOCK_BATCH_MQ) and the offsets committed
    now = broker.clock.now_ms()
    assert [broker.locks.holder(group, mq, now) for mq in mqs] == [None] * 4
    for q in range(4):
        assert await committed_offset(cluster, group, topic, q) == orders * per_order // 4


# ------------------------------------------------------------------------------ POP (server-side rebalance)


async def _set_mode_over_the_wire(cluster: LocalCluster, topic: str, group: str) -> None:
    conn = await Connection.connect(cluster.broker_addr)
    try:
        body = SetMessageRequestModeRequestBody(topic, group, MessageRequestMode.POP, 0).encode()
        resp = await conn.request(RemotingCommand.request(RequestCode.SET_MESSAGE_REQUEST_MODE, {}, body), 10.0)
        assert resp.code == ResponseCode.SUCCESS, resp.remark
    finally:
        await conn.close()


async def test_java_pop_consumer(java_client: JavaClient, cluster: LocalCluster) -> None:
    """The group's mode is set to POP on rocketpipe's broker, then a DefaultMQPushConsumer with
    setClientRebalance(false) consumes.

    java-5: mqadmin setConsumeMode sets it; the client gets one POP assignment (queue id -1)
    from QUERY_ASSIGNMENT, pops every message, acks it (no checkpoint left on the broker), and
    a RECONSUME_LATER comes back after popDelayLevel[0] (10 s) with reconsumeTimes 1.
    java-4: its mqadmin has no setConsumeMode and its client neither POP nor server-side
    rebalance; with the mode set over the wire it still consumes everything by PULL and the
    redelivery goes through %RETRY%."""
    topic, group, n = unique("JavaPop"), unique("jpop"), 12
    broker = cluster.broker
    name = broker.config.broker_name
    async with Admin(cluster.namesrv_addr) as admin:
        await admin.create_topic(topic, 4)
    if java_client.major >= 5:
        code, out = await java_client.mqadmin(
            cluster.namesrv_addr,
            "setConsumeMode",
            "-b",
            cluster.broker_addr,
            "-t",
            topic,
            "-g",
            group,
            "-m",
            "POP",
            "-q",
            "0",
        )
        assert code == 0 and f"set consume mode to {cluster.broker_addr} success." in out, out
        assert f"topic[{topic}] group[{group}] consume mode[POP] popShareQueueNum[0]" in out
    else:
        code, out = await java_client.mqadmin(
            cluster.namesrv_addr, "setConsumeMode", "-b", cluster.broker_addr, "-t", topic, "-g", group, "-m", "POP"
        )
        assert "The sub command setConsumeMode not exist." in out, out  # MQAdminStartup of tools 4.9.8
        await _set_mode_over_the_wire(cluster, topic, group)
    mode = broker.assignment.table.get(topic, group)
    assert mode is not None and (mode.mode, mode.pop_share_queue_num) == (MessageRequestMode.POP, 0)

    sent: dict[str, int] = {}
    async with Producer(unique("pg"), namesrv_addr=cluster.namesrv_addr) as p:
        for i in range(n):
            props = {"idx": str(i)}
            if i in (2, 9):
                props["redeliver"] = "1"
            r = await p.send(Message.build(topic, f"pop-{i}", tags="TP", keys=f"k{i}", properties=props))
            assert r.send_status is SendStatus.SEND_OK
            sent[r.msg_id] = i
    redeliver_ids = {m for m, i in sent.items() if i in (2, 9)}

    res = await java_client.run("PopConsumerScenario", cluster.namesrv_addr, topic, group, str(n), "100", timeout=150)
    assert res["done"], f"distinct={res['distinct']} toRedeliver={res['toRedeliver']} redelivered={res['redelivered']}"
    deliveries = [d for d in res["deliveries"] if d["topic"] == topic]
    first = {d["msgId"]: d for d in deliveries if d["reconsumeTimes"] == 0}
    assert set(first) == set(sent)
    for msg_id, i in sent.items():
        assert (first[msg_id]["body"], first[msg_id]["properties"]["idx"]) == (f"pop-{i}", str(i))
    again = [d for d in deliveries if d["reconsumeTimes"] >= 1]
    assert set(res["toRedeliver"]) == set(res["redelivered"]) == redeliver_ids
    assert {d["msgId"] for d in again} == redeliver_ids
    assert all(d["reconsumeTimes"] == 1 and d["body"] in ("pop-2", "pop-9") for d in again)

    if java_client.major >= 5:
        assert res["serverRebalanceApi"] is True
        # QUERY_ASSIGNMENT gave one POP queue: "any queue of this broker"
        assert res["popQueues"] == [f"{topic}/{name}/-1"]
        assert not [q for q in res["pullQueues"] if q.startswith(f"{topic}/")]  # the retry topic only is pulled
        # everything came through POP_MESSAGE (the client gets the checkpoint in POP_CK)
        assert all("POP_CK" in d["properties"] for d in deliveries)
        for d in deliveries:
            ck = ExtraInfo.parse(d["properties"]["POP_CK"])
            assert ck.broker_name == name and ck.invisible_time == JAVA_POP_INVISIBLE_MS
            assert ck.retry == (
                "0" if d["reconsumeTimes"] == 0 else "1"
            )  # the redelivery was popped from %RETRY%<group>_<topic>
        for d in again:
            # RECONSUME_LATER -> CHANGE_MESSAGE_INVISIBLETIME by popDelayLevel[0]: revived, popped again no sooner
            first_ck, again_ck = (ExtraInfo.parse(x["properties"]["POP_CK"]) for x in (first[d["msgId"]], d))
            assert again_ck.pop_time - first_ck.pop_time >= POP_FIRST_RETRY_DELAY_S * 1000
        # every message acked: no checkpoint left; pop offsets at the end of every queue
        await wait_until(lambda: broker.pop.table.in_flight(group) == 0, timeout=15, what="every popped message acked")
        for q in range(4):
            assert broker.pop.table.pop_offset(group, topic, q) == broker.store.get_max_offset(topic, q)
    else:
        assert res["serverRebalanceApi"] is False and res["popQueues"] == []
        assert sorted(q for q in res["pullQueues"] if q.startswith(f"{topic}/")) == [
            f"{topic}/{name}/{q}" for q in range(4)
        ]
        assert not [d for d in deliveries if "POP_CK" in d["properties"]]
        assert all(d["properties"].get("RETRY_TOPIC") == topic for d in again)  # via %RETRY%<group>
        assert broker.pop.table.in_flight(group) == 0
        assert [broker.pop.table.pop_offset(group, topic, q) for q in range(4)] == [None] * 4
        for q in range(4):
            assert await committed_offset(cluster, group, topic, q) == broker.store.get_max_offset(topic, q)
