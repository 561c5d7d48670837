"""`rocketpipe admin <mqadmin command>` against rocketpipe's own name server and broker.

Each test sets state up with the real Producer / PushConsumer / Admin on a local cluster
(127.0.0.1), runs the commands through typer's CliRunner (in a worker thread, so the cluster's
loop keeps serving) both as tables and with ``--json``, and checks the output against that state.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from rocketpipe import (
    Admin,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
    SendResult,
)
from rocketpipe.cli.errors import EXIT_BROKER, EXIT_NOT_FOUND, EXIT_USAGE
from rocketpipe.cli.main import app
from rocketpipe.protocol.codes import RequestCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.testing.cluster import LocalCluster, local_cluster
from waiting import wait_until

runner = CliRunner()
CLUSTER = "DefaultCluster"


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with local_cluster(tmp_path / "store") as c:
        yield c


async def cli(c: LocalCluster, *args: str, code: int = 0) -> str:
    """Run `rocketpipe admin ARGS -n <namesrv>` and return its stdout."""
    result = await asyncio.to_thread(runner.invoke, app, ["admin", *args, "-n", c.namesrv_addr])
    assert result.exit_code == code, f"exit {result.exit_code}: {result.output}"
    return result.stdout


async def cli_json(c: LocalCluster, *args: str) -> Any:
    return orjson.loads(await cli(c, *args, "--json"))


async def routed(c: LocalCluster, topic: str, queues: int) -> None:
    async with Admin(c.namesrv_addr) as admin:

        async def ok() -> bool:
            try:
                return len(await admin.topic_queues(topic)) == queues
            except Exception:
                return False

        await wait_until(ok, what=f"route of {topic}")


async def send(c: LocalCluster, topic: str, n: int, group: str = "pg_admin_cli") -> list[SendResult]:
    async with Producer(group, namesrv_addr=c.namesrv_addr) as p:
        return [await p.send(Message.build(topic, f"body-{i}", tags="TA", keys=["KK", f"k{i}"])) for i in range(n)]


async def request_mode(c: LocalCluster, topic: str, group: str) -> dict[str, Any]:
    """The broker's stored mode of (topic, group), read with GET_ALL_MESSAGE_REQUEST_MODE (402)."""
    async with Admin(c.namesrv_addr) as admin:
        cmd = RemotingCommand.request(RequestCode.GET_ALL_MESSAGE_REQUEST_MODE)
        resp = await admin.runtime.pool.request(c.broker_addr, cmd, 5.0)
    table: dict[str, Any] = orjson.loads(bytes(resp.body))["messageRequestModeMap"]
    return dict(table[topic][group])


def per_queue(results: list[SendResult]) -> dict[int, int]:
    out: dict[int, int] = {}
    for r in results:
        out[r.message_queue.queue_id] = out.get(r.message_queue.queue_id, 0) + 1
    return out


# ---------------------------------------------------------------------------------------- (a)


async def test_update_topic_list_route_status_delete(cluster: LocalCluster) -> None:
    c = cluster
    out = await cli(c, "updateTopic", "-c", CLUSTER, "-t", "AdmT1", "-r", "4", "-w", "4")
    assert f"create topic to {c.broker_addr} success." in out
    assert "readQueueNums=4, writeQueueNums=4, perm=RW-" in out
    data = await cli_json(
        c, "updateTopic", "--brokerAddr", c.broker_addr, "--topic", "AdmT2", "-r", "2", "-w", "3", "-p", "4"
    )
    assert data["brokerAddrs"] == [c.broker_addr]
    assert c.broker.topics.get("AdmT2") is not None and c.broker.topics.get("AdmT2").perm == 4  # type: ignore[union-attr]
    await cli(c, "updateTopic", "-t", "AdmT3", code=EXIT_USAGE)  # neither -b nor -c
    # an order topic: the name servers get its orderConf (brokerName:writeQueueNums)
    out = await cli(c, "updateTopic", "-c", CLUSTER, "-t", "AdmOrd", "-w", "2", "-r", "2", "-o", "true")
    assert "set cluster orderConf. isOrder=true, orderConf=[broker-a:2]" in out
    data = await cli_json(c, "updateTopic", "-b", c.broker_addr, "-t", "AdmOrd", "-w", "3", "-r", "3", "-o", "true")
    assert data["orderConf"] == "broker-a:3" and data["topicConfig"]["order"] is True
    async with Admin(c.namesrv_addr) as admin:  # the name server's KV store, as Java's orderMessageEnable reads it
        assert await admin.get_kv_config("ORDER_TOPIC_CONFIG", "AdmOrd") == "broker-a:3"
        out = await cli(c, "updateKvConfig", "-s", "ORDER_TOPIC_CONFIG", "-k", "AdmOrd", "-v", "broker-a:5")
        assert "create or update kv config to namespace success." in out
        assert await admin.get_kv_config("ORDER_TOPIC_CONFIG", "AdmOrd") == "broker-a:5"
        data = await cli_json(c, "deleteKvConfig", "--namespace", "ORDER_TOPIC_CONFIG", "--key", "AdmOrd")
        assert data == {"namespace": "ORDER_TOPIC_CONFIG", "key": "AdmOrd"}
        assert await admin.get_kv_config("ORDER_TOPIC_CONFIG", "AdmOrd") is None
    await routed(c, "AdmT1", 4)

    out = await cli(c, "topicList")
    assert {"AdmT1", "AdmT2"} <= set(out.split())
    data = await cli_json(c, "topicList")
    assert {"AdmT1", "AdmT2", "TBW102"} <= set(data["topicList"])
    rows = await cli_json(c, "topicList", "-c")
    assert {"clusterName": CLUSTER, "topic": "AdmT1", "consumerGroup": ""} in rows

    route = await cli_json(c, "topicRoute", "-t", "AdmT2")
    (qd,) = route["queueDatas"]
    assert (qd["brokerName"], qd["readQueueNums"], qd["writeQueueNums"], qd["perm"]) == ("broker-a", 2, 3, 4)
    assert route["brokerDatas"][0]["brokerAddrs"] == {"0": c.broker_addr}
    out = await cli(c, "topicRoute", "-t", "AdmT2", "-l")
    assert "broker-a" in out and "R--" in out and c.broker_addr in out and CLUSTER in out

    assert await cli_json(c, "topicClusterList", "-t", "AdmT1") == [CLUSTER]
    assert (await cli(c, "topicClusterList", "-t", "AdmT1")).split() == [CLUSTER]
    out = await cli(c, "updateTopicPerm", "-b", c.broker_addr, "-t", "AdmT2", "-p", "6")
    assert f"update topic perm from 4 to 6 in {c.broker_addr} success." in out
    tc = c.broker.topics.get("AdmT2")
    assert tc is not None and (tc.perm, tc.read_queue_nums, tc.write_queue_nums) == (6, 2, 3)
    await routed(c, "AdmT2", 2)
    changes = await cli_json(c, "updateTopicPerm", "-c", CLUSTER, "-t", "AdmT2", "-p", "6")
    assert changes == [{"brokerAddr": c.broker_addr, "oldPerm": 6, "perm": 6, "changed": False}]

    results = await send(c, "AdmT1", 7)
    rows = await cli_json(c, "topicStatus", "-t", "AdmT1")
    assert len(rows) == 4 and all(r["brokerName"] == "broker-a" and r["minOffset"] == 0 for r in rows)
    assert {r["queueId"]: r["maxOffset"] for r in rows if r["maxOffset"]} == per_queue(results)
    assert all(r["lastUpdateTimestamp"] > 0 for r in rows if r["maxOffset"])
    out = await cli(c, "topicStatus", "-t", "AdmT1")
    lines = [line.split() for line in out.splitlines() if line.strip().startswith("broker-a")]
    assert {int(row[1]): int(row[3]) for row in lines if int(row[3])} == per_queue(results)

    out = await cli(c, "deleteTopic", "-t", "AdmT1", "-c", CLUSTER)
    assert "delete topic [AdmT1] from cluster [DefaultCluster] success." in out
    assert "delete topic [AdmT1] from NameServer success." in out
    assert c.broker.topics.get("AdmT1") is None
    await cli(c, "topicRoute", "-t", "AdmT1", code=EXIT_NOT_FOUND)
    data = await cli_json(c, "deleteTopic", "-t", "AdmT2", "-c", CLUSTER)
    assert data["brokerAddrs"] == [c.broker_addr] and c.broker.topics.get("AdmT2") is None


async def test_cluster_list_and_broker_status(cluster: LocalCluster) -> None:
    c = cluster
    await send(c, "AdmCL", 3)
    (row,) = await cli_json(c, "clusterList")
    assert (row["clusterName"], row["brokerName"], row["brokerId"], row["brokerAddr"]) == (
        CLUSTER,
        "broker-a",
        0,
        c.broker_addr,
    )
    assert row["version"].startswith("V") and row["msgPutTotalTodayNow"] >= 3 and row["activated"] is True
    out = await cli(c, "clusterList", "-c", CLUSTER)
    assert c.broker_addr in out and "broker-a" in out
    assert await cli_json(c, "clusterList", "-c", "NoSuchCluster") == []
    kv = await cli_json(c, "brokerStatus", "-b", c.broker_addr)
    assert int(kv[c.broker_addr]["msgPutTotalTodayNow"]) >= 3
    out = await cli(c, "brokerStatus", "-c", CLUSTER)
    assert "brokerVersionDesc" in out and "putTps" in out
    await cli(c, "brokerStatus", code=EXIT_USAGE)
    (row,) = await cli_json(c, "statsAll", "-t", "AdmCL")
    assert (row["consumerGroup"], row["outMsg24Hour"], row["accumulation"]) == (None, None, 0)
    assert "NO_CONSUMER" in await cli(c, "statsAll", "-t", "AdmCL")

    cfg = await cli_json(c, "getBrokerConfig", "-b", c.broker_addr)
    assert cfg[c.broker_addr]["brokerName"] == "broker-a"
    assert cfg[c.broker_addr]["brokerClusterName"] == CLUSTER
    out = await cli(c, "getBrokerConfig", "-c", CLUSTER)
    assert "brokerClusterName" in out and CLUSTER in out
    # UPDATE_BROKER_CONFIG (25): a run-time key is applied and read back; a start-time key
    # (flushDiskType) is refused and nothing changes
    await cli(c, "updateBrokerConfig", "-b", c.broker_addr, "-k", "maxMessageSize", "-v", "1048576")
    cfg = await cli_json(c, "getBrokerConfig", "-b", c.broker_addr)
    assert cfg[c.broker_addr]["maxMessageSize"] == "1048576"
    await cli(c, "updateBrokerConfig", "-b", c.broker_addr, "-k", "flushDiskType", "-v", "SYNC_FLUSH", code=EXIT_BROKER)
    cfg = await cli_json(c, "getBrokerConfig", "-b", c.broker_addr)
    assert cfg[c.broker_addr]["flushDiskType"] == "ASYNC_FLUSH"
    # CLEAN_EXPIRED_CONSUMEQUEUE (306): answered per broker of the cluster
    out = await cli(c, "cleanExpiredCQ", "-c", CLUSTER)
    assert f"success: {c.broker_addr}" in out


async def test_update_and_delete_sub_group(cluster: LocalCluster) -> None:
    c = cluster
    data = await cli_json(c, "updateSubGroup", "-c", CLUSTER, "-g", "admGroupA", "-r", "3", "-q", "2", "-s", "false")
    assert data["brokerAddrs"] == [c.broker_addr]
    assert data["subscriptionGroupConfig"]["retryMaxTimes"] == 3
    cfg = c.broker.groups_config.groups["admGroupA"]
    assert (cfg.retry_max_times, cfg.retry_queue_nums, cfg.consume_enable) == (3, 2, False)
    assert (cfg.consume_broadcast_enable, cfg.consume_from_min_enable) == (False, False)  # mqadmin's defaults
    out = await cli(c, "updateSubGroup", "-b", c.broker_addr, "--groupName", "admGroupB", "-m", "true", "-d", "TRUE")
    assert f"create subscription group to {c.broker_addr} success." in out
    cfg = c.broker.groups_config.groups["admGroupB"]
    assert (cfg.consume_from_min_enable, cfg.consume_broadcast_enable, cfg.consume_enable) == (True, True, True)

    out = await cli(c, "deleteSubGroup", "-b", c.broker_addr, "-g", "admGroupB")
    assert f"delete subscription group [admGroupB] from broker [{c.broker_addr}] success." in out
    assert "admGroupB" not in c.broker.groups_config.groups
    data = await cli_json(c, "deleteSubGroup", "-c", CLUSTER, "-g", "admGroupA", "-r", "true")
    assert data["brokerAddrs"] == [c.broker_addr]
    assert "admGroupA" not in c.broker.groups_config.groups
    await cli(c, "deleteSubGroup", "-g", "admGroupA", code=EXIT_USAGE)


# ---------------------------------------------------------------------------------------- (b)


async def test_consumer_progress_connections_and_reset(cluster: LocalCluster) -> None:
    c = cluster
    topic, group, pgroup = "AdmProgress", "admProgressGroup", "admProducerGroup"
    await cli(c, "updateTopic", "-c", CLUSTER, "-t", topic, "-r", "4", "-w", "4")
    await routed(c, topic, 4)
    got: list[MessageExt] = []
    consumer = PushConsumer(
        group, namesrv_addr=c.namesrv_addr, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    )
    consumer.subscribe(topic, "TA || TB")

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        got.extend(msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer.register_message_listener(listener)
    async with Producer(pgroup, namesrv_addr=c.namesrv_addr) as producer:
        first = [await producer.send(Message.build(topic, f"m{i}", tags="TA")) for i in range(6)]
        async with consumer:
            await wait_until(lambda: len(got) >= 6, timeout=30, what="6 messages consumed")
            await consumer.persist_offsets()
            await wait_until(lambda: group in c.broker.clients.consumers, what="consumer registered")
            await wait_until(lambda: pgroup in c.broker.clients.producers, what="producer registered")

            (entry,) = await cli_json(c, "queryMsgById", "-t", topic, "-i", first[0].offset_msg_id)
            assert entry["tracks"] == [{"consumerGroup": group, "trackType": "CONSUMED", "exceptionDesc": None}]
            # -g/-d: the broker pushes the message to that client (consumeMessageDirectly)
            client_id = c.broker.clients.consumers[group].client_ids()[0]
            before = len(got)
            (entry,) = await cli_json(
                c, "queryMsgById", "-t", topic, "-i", first[1].offset_msg_id, "-g", group, "-d", client_id
            )
            assert entry["consumeResult"]["consumeResult"] == "CR_SUCCESS"
            assert len(got) == before + 1 and got[-1].msg_id == first[1].msg_id
            data = await cli_json(
                c, "queryMsgByUniqueKey", "-t", topic, "-i", first[2].msg_id, "-g", group, "-d", client_id
            )
            assert data["consumeResult"]["consumeResult"] == "CR_SUCCESS" and got[-1].msg_id == first[2].msg_id

            data = await cli_json(c, "consumerConnection", "-g", group)
            (conn,) = data["connectionSet"]
            assert conn["clientId"] == c.broker.clients.consumers[group].client_ids()[0]
            assert conn["language"] == "PYTHON"
            assert data["subscriptionTable"][topic] == "TA || TB"
            assert data["messageModel"] == "CLUSTERING"
            out = await cli(c, "consumerConnection", "--consumerGroup", group, "-b", c.broker_addr)
            assert conn["clientId"] in out and "TA || TB" in out and "MessageModel: CLUSTERING" in out
            assert conn["versionDesc"] == "V4_9_8" and "V4_9_8" in out

            (info,) = await cli_json(c, "consumerStatus", "-g", group)
            assert info["clientId"] == conn["clientId"]
            assert {(q["topic"], q["queueId"]) for q in info["mqTable"] if q["topic"] == topic} == {
                (topic, q) for q in range(4)
            }
            out = await cli(c, "consumerStatus", "-g", group, "-i", conn["clientId"])
            assert conn["clientId"] in out and topic in out

            rows = await cli_json(c, "producerConnection", "-g", pgroup, "-t", topic)
            assert len(rows) == 1 and rows[0]["language"] == "PYTHON" and rows[0]["clientId"]
            out = await cli(c, "producerConnection", "--producerGroup", pgroup, "--topic", topic)
            assert rows[0]["clientId"] in out and "0001" in out and rows[0]["versionDesc"] == "V4_9_8" in out
            await cli(c, "producerConnection", "-g", "noSuchProducerGroup", "-t", topic, code=EXIT_BROKER)

            data = await cli_json(c, "setConsumeMode", "-c", CLUSTER, "-t", topic, "-g", group, "-m", "POP", "-q", "1")
            assert data["brokerAddrs"] == [c.broker_addr] and data["mode"] == "POP"
            mode = await request_mode(c, topic, group)
            assert (mode["mode"], mode["popShareQueueNum"]) == ("POP", 1)
            out = await cli(c, "setConsumeMode", "-b", c.broker_addr, "-t", topic, "-g", group, "-m", "PULL")
            assert f"set consume mode to {c.broker_addr} success." in out
            assert (await request_mode(c, topic, group))["mode"] == "PULL"

            data = await cli_json(c, "consumerProgress", "-g", group, "-s", "true")
            assert all(r["clientIP"] != "N/A" for r in data["queues"])
        # the consumer is gone: what is produced now is lag
        second = [await producer.send(Message.build(topic, f"n{i}", tags="TA")) for i in range(4)]

    (entry,) = await cli_json(c, "queryMsgById", "-t", topic, "-i", second[0].offset_msg_id)
    assert [(t["consumerGroup"], t["trackType"]) for t in entry["tracks"]] == [(group, "NOT_ONLINE")]
    out = await cli(c, "queryMsgByUniqueKey", "-t", topic, "-i", second[0].msg_id)
    assert "NOT_ONLINE" in out and group in out

    data = await cli_json(c, "consumerProgress", "-g", group)
    assert data["diffTotal"] == 4  # produced 10, consumed 6
    rows = {r["queueId"]: r for r in data["queues"] if r["topic"] == topic}
    assert set(rows) == {0, 1, 2, 3}
    assert {q: r["brokerOffset"] for q, r in rows.items() if r["brokerOffset"]} == per_queue(first + second)
    assert {q: r["consumerOffset"] for q, r in rows.items() if r["consumerOffset"]} == per_queue(first)
    assert all(r["diff"] == r["brokerOffset"] - r["consumerOffset"] for r in rows.values())
    out = await cli(c, "consumerProgress", "-g", group, "-t", topic)
    assert "Consume Diff Total: 4" in out and "#Diff" in out
    groups = {g["group"]: g for g in await cli_json(c, "consumerProgress")}
    assert groups[group]["diffTotal"] == 4 and groups[group]["count"] == 0  # offline now
    out = await cli(c, "consumerProgress")
    assert group in out and "OFFLINE" in out

    (row,) = await cli_json(c, "statsAll", "-t", topic)
    assert (row["consumerGroup"], row["accumulation"]) == (group, 4)  # rates: 0, the broker has no stats items
    out = await cli(c, "statsAll")
    assert any(line.split()[:3] == [topic, group, "4"] for line in out.splitlines() if line.strip())

    # resetOffsetByTime: to now (nothing left), then back to the start (everything again)
    out = await cli(c, "resetOffsetByTime", "-g", group, "-t", topic, "-s", "now")
    assert "#offset" in out
    assert (await cli_json(c, "consumerProgress", "-g", group))["diffTotal"] == 0
    data = await cli_json(c, "resetOffsetByTime", "-g", group, "-t", topic, "-s", "0", "-f", "true")
    assert {r["queueId"]: r["offset"] for r in data["offsets"]} == dict.fromkeys(range(4), 0)
    assert (await cli_json(c, "consumerProgress", "-g", group))["diffTotal"] == 10
    await cli(c, "resetOffsetByTime", "-g", group, "-t", topic, "-s", "yesterday", code=EXIT_USAGE)

    # one queue (-b/-q): to an explicit offset, then to the timestamp's offset
    busiest = max(rows, key=lambda q: rows[q]["brokerOffset"])
    out = await cli(
        c,
        "resetOffsetByTime",
        "-g",
        group,
        "-t",
        topic,
        "-s",
        "now",
        "-b",
        c.broker_addr,
        "-q",
        str(busiest),
        "-o",
        "1",
    )
    assert "reset consumer offset to 1" in out
    progress = {r["queueId"]: r for r in (await cli_json(c, "consumerProgress", "-g", group))["queues"]}
    assert progress[busiest]["consumerOffset"] == 1
    assert all(progress[q]["consumerOffset"] == 0 for q in progress if q != busiest)
    data = await cli_json(
        c, "resetOffsetByTime", "-g", group, "-t", topic, "-s", "now", "-b", c.broker_addr, "-q", str(busiest)
    )
    assert data["offset"] == rows[busiest]["brokerOffset"]
    progress = {r["queueId"]: r for r in (await cli_json(c, "consumerProgress", "-g", group))["queues"]}
    assert progress[busiest]["consumerOffset"] == rows[busiest]["brokerOffset"]


# ---------------------------------------------------------------------------------------- (c)


async def test_query_print_send_consume_messages(cluster: LocalCluster) -> None:
    c = cluster
    topic = "AdmMsg"
    await cli(c, "updateTopic", "-b", c.broker_addr, "-t", topic, "-r", "2", "-w", "2")
    await routed(c, topic, 2)
    t0 = int(time.time() * 1000)
    results = await send(c, topic, 5)
    r0 = results[0]

    # by key (the broker indexes in the background)
    async def by_key() -> bool:
        return len(await cli_json(c, "queryMsgByKey", "-t", topic, "-k", "KK")) == 5

    await wait_until(by_key, what="5 messages indexed under KK")
    rows = await cli_json(c, "queryMsgByKey", "-t", topic, "-k", "k3", "-b", str(t0 - 60_000), "-m", "10")
    assert [r["msgId"] for r in rows] == [results[3].msg_id]
    out = await cli(c, "queryMsgByKey", "-t", topic, "-k", "k3")
    assert results[3].msg_id in out

    # by id: offset msg id and unique key
    (entry,) = await cli_json(c, "queryMsgById", "-t", topic, "-i", r0.offset_msg_id, "-f", "UTF-8")
    m = entry["message"]
    assert (m["topic"], m["queueId"], m["queueOffset"], m["body"], m["tags"]) == (
        topic,
        r0.message_queue.queue_id,
        r0.queue_offset,
        "body-0",
        "TA",
    )
    assert m["msgId"] == r0.msg_id and m["offsetMsgId"] == r0.offset_msg_id
    entries = await cli_json(c, "queryMsgById", "-t", topic, "-i", f"{r0.msg_id},{results[1].offset_msg_id}")
    assert [e["message"]["queueOffset"] for e in entries] == [r0.queue_offset, results[1].queue_offset]
    out = await cli(c, "queryMsgById", "-t", topic, "-i", r0.offset_msg_id, "-f", "UTF-8")
    assert "OffsetID:" in out and r0.offset_msg_id in out and "body-0" in out and "KK k0" in out
    assert "WARN: No Consumer" in out and entry["tracks"] == []
    await cli(c, "queryMsgById", "-t", topic, "-i", "0A0000000000000000000000DEADBEEF", code=EXIT_BROKER)

    data = await cli_json(c, "queryMsgByUniqueKey", "-i", results[2].msg_id, "-t", topic)
    assert [x["queueOffset"] for x in data["messages"]] == [results[2].queue_offset]
    out = await cli(c, "queryMsgByUniqueKey", "--msgId", results[2].msg_id, "--topic", topic, "-a")
    assert results[2].offset_msg_id in out

    r4 = results[4]
    q, o = str(r4.message_queue.queue_id), str(r4.queue_offset)
    m = await cli_json(c, "queryMsgByOffset", "-t", topic, "-b", "broker-a", "-i", q, "-o", o, "-f", "UTF-8")
    assert (m["msgId"], m["body"]) == (r4.msg_id, "body-4")
    out = await cli(c, "queryMsgByOffset", "-t", topic, "-b", "broker-a", "-i", q, "-o", o)
    assert r4.offset_msg_id in out
    await cli(c, "queryMsgByOffset", "-t", topic, "-b", "broker-a", "-i", q, "-o", "999", code=EXIT_NOT_FOUND)

    # printMsg: every queue, all messages
    queues = await cli_json(c, "printMsg", "-t", topic)
    bodies = sorted(mm["body"] for qq in queues for mq in [qq] for mm in mq["messages"])
    assert bodies == [f"body-{i}" for i in range(5)]
    assert await cli_json(c, "printMsg", "-t", topic, "-s", "TB") == [{**qq, "messages": []} for qq in queues]
    out = await cli(c, "printMsg", "-t", topic, "-d", "false")
    assert "5 message(s) in 2 queue(s)" in out and "body-1" not in out

    # sendMessage to a chosen queue, then read it back with consumeMessage
    sent = await cli_json(
        c, "sendMessage", "-t", topic, "-p", "hello admin", "-k", "sk", "-c", "TZ", "-b", "broker-a", "-i", "1"
    )
    assert sent["sendStatus"] == "SEND_OK" and sent["queueId"] == 1 and sent["brokerName"] == "broker-a"
    out = await cli(c, "sendMessage", "--topic", topic, "--body", "second")
    assert "SEND_OK" in out
    rows = await cli_json(
        c, "consumeMessage", "-t", topic, "-b", "broker-a", "-i", "1", "-o", str(sent["queueOffset"]), "-c", "1"
    )
    assert [(r["body"], r["tags"], r["keys"]) for r in rows] == [("hello admin", "TZ", "sk")]
    rows = await cli_json(c, "consumeMessage", "-t", topic, "-c", "3")
    assert len(rows) == 3
    rows = await cli_json(c, "consumeMessage", "-t", topic)
    assert len(rows) == 7
    out = await cli(c, "consumeMessage", "-t", topic, "-c", "2")
    assert "Consume ok: 2 message(s)" in out


async def test_resend_from_dlq(cluster: LocalCluster) -> None:
    c = cluster
    topic, group = "AdmDlq", "admDlqGroup"
    await cli(c, "updateTopic", "-b", c.broker_addr, "-t", topic, "-r", "1", "-w", "1")
    await routed(c, topic, 1)
    (sent,) = await send(c, topic, 1)

    failing = PushConsumer(
        group,
        namesrv_addr=c.namesrv_addr,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        max_reconsume_times=0,
    )
    failing.subscribe(topic, "*")
    attempts: list[MessageExt] = []

    async def fail_all(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        attempts.extend(msgs)
        return ConsumeConcurrentlyStatus.RECONSUME_LATER

    failing.register_message_listener(fail_all)
    dlq = f"%DLQ%{group}"
    async with failing:
        await wait_until(lambda: c.broker.store.get_max_offset(dlq, 0) == 1, timeout=30, what="message in the DLQ")

    await routed(c, dlq, 1)
    (entry,) = await cli_json(c, "queryMsgById", "-t", dlq, "-i", sent.msg_id)
    assert entry["message"]["topic"] == dlq and entry["message"]["properties"]["RETRY_TOPIC"] == topic
    dlq_offset_id = entry["message"]["offsetMsgId"]

    # mqadmin's own resend (queryMsgById -s true) sends the message to its topic: the DLQ again
    (entry,) = await cli_json(c, "queryMsgById", "-t", dlq, "-i", dlq_offset_id, "-s", "true")
    assert entry["sendResult"]["sendStatus"] == "SEND_OK"
    assert c.broker.store.get_max_offset(dlq, 0) == 2

    # resendMsgById: back to %RETRY%<group>; the group's consumers see the original topic
    rows = await cli_json(c, "resendMsgById", "-t", dlq, "-i", dlq_offset_id)
    assert rows[0]["toTopic"] == f"%RETRY%{group}" and rows[0]["sendStatus"] == "SEND_OK"
    got: list[MessageExt] = []
    ok = PushConsumer(group, namesrv_addr=c.namesrv_addr, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    ok.subscribe(topic, "*")

    async def take(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        got.extend(msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    ok.register_message_listener(take)
    async with ok:
        await wait_until(lambda: any(m.body == b"body-0" for m in got), timeout=30, what="resent message consumed")
    resent = next(m for m in got if m.body == b"body-0")
    assert resent.topic == topic and resent.msg_id == sent.msg_id

    # with -o it goes to the original topic instead (every group sees it)
    before = c.broker.store.get_max_offset(topic, 0)
    out = await cli(c, "resendMsgById", "-t", dlq, "-i", dlq_offset_id, "-o")
    assert "SEND_OK" in out and topic in out
    assert c.broker.store.get_max_offset(topic, 0) == before + 1


async def test_query_msg_trace_by_id(tmp_path: Path) -> None:
    async with local_cluster(tmp_path / "store", trace_topic_enable=True) as c:
        topic = "AdmTrace"
        await cli(c, "updateTopic", "-b", c.broker_addr, "-t", topic, "-r", "1", "-w", "1")
        await routed(c, topic, 1)
        async with Producer("pg-admin-trace", namesrv_addr=c.namesrv_addr, enable_msg_trace=True) as p:
            sent = await p.send(Message.build(topic, "traced", tags="TT"))
        rows: list[dict[str, Any]] = []

        async def traced() -> bool:
            nonlocal rows
            rows = await cli_json(c, "queryMsgTraceById", "-i", sent.msg_id)
            return any(r["type"] == "Pub" for r in rows)

        await wait_until(traced, timeout=20, what="the Pub trace")
        (pub,) = [r for r in rows if r["type"] == "Pub"]
        assert (pub["groupName"], pub["status"], pub["topic"]) == ("pg-admin-trace", "success", topic)
        out = await cli(c, "queryMsgTraceById", "--msgId", sent.msg_id, "--traceTopic", "RMQ_SYS_TRACE_TOPIC")
        assert "#ProducerGroup" in out and "pg-admin-trace" in out and "success" in out
        assert await cli_json(c, "queryMsgTraceById", "-i", "no-such-id") == []
