"""`rocketpipe admin` against Apache RocketMQ brokers, checked against what the real ``mqadmin``
prints for the same state: the 5.3.3 broker with mqadmin (rocketmq-tools) 5.3.3, and the 4.9.7
broker with mqadmin 4.9.8 (and 5.3.3 where its behaviour there is the point).

Each test sets state up with rocketpipe's Producer / PushConsumer (or with `rocketpipe admin`
itself), runs a `rocketpipe admin` command with ``--json`` (or as text where mqadmin's lines are
the same) and the matching mqadmin command, and compares the key facts (queues, offsets, lag,
versions, ids, properties).
"""

from __future__ import annotations

import asyncio
import re
import uuid
from typing import Any

import orjson
import pytest
from interop_support import JavaClient, consumed, send_some
from typer.testing import CliRunner

from rocketpipe import (
    Admin,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    Message,
    MessageExt,
    MessageQueue,
    Producer,
    PushConsumer,
)
from rocketpipe.cli.main import app
from rocketpipe.errors import TopicNotExistError
from rocketpipe.testing.apache import ApacheCluster
from waiting import wait_until

runner = CliRunner()

#: mqadmin of rocketmq-tools 5.3.3 (``java-5``) or 4.9.8 (``java-4``), chosen per test
mqadmin_5 = pytest.mark.parametrize("java_client", ["java-5"], indirect=True)
mqadmin_4 = pytest.mark.parametrize("java_client", ["java-4"], indirect=True)
#: a topic name as mqadmin's topicList prints it, one a line (log lines have spaces)
TOPIC_LINE = re.compile(r"^[%|\w-]+$")


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


async def ours(ac: ApacheCluster, *args: str) -> Any:
    """`rocketpipe admin ARGS --json -n <apache namesrv>`, parsed."""
    result = await asyncio.to_thread(runner.invoke, app, ["admin", *args, "--json", "-n", ac.namesrv_addr])
    assert result.exit_code == 0, f"exit {result.exit_code}: {result.output}"
    return orjson.loads(result.stdout)


async def ours_text(ac: ApacheCluster, *args: str) -> list[str]:
    """`rocketpipe admin ARGS -n <apache namesrv>` as text: its non-blank lines, stripped."""
    result = await asyncio.to_thread(runner.invoke, app, ["admin", *args, "-n", ac.namesrv_addr])
    assert result.exit_code == 0, f"exit {result.exit_code}: {result.output}"
    return [line.strip() for line in result.stdout.splitlines() if line.strip()]


async def ours_fails(ac: ApacheCluster, *args: str) -> tuple[int, str]:
    """`rocketpipe admin ARGS -n <apache namesrv>` that must fail: (exit code, stdout + stderr with
    runs of whitespace made one space: the error line is wrapped at the terminal width)."""
    result = await asyncio.to_thread(runner.invoke, app, ["admin", *args, "-n", ac.namesrv_addr])
    assert result.exit_code != 0, result.output
    return result.exit_code, " ".join(result.output.split())


def lines_of(out: str) -> list[str]:
    """mqadmin's non-blank output lines, stripped."""
    return [line.strip() for line in out.splitlines() if line.strip()]


def section(out: str, title: str) -> str:
    """The text of mqadmin's ``#<title>#`` section (up to the next ``#...#`` title line)."""
    m = re.search(rf"^#{re.escape(title)}#\s*$(.*?)(?=^#[^#\n]+#\s*$|\Z)", out, re.M | re.S)
    assert m is not None, f"no #{title}# in {out[-3000:]}"
    return m.group(1)


async def theirs(java_client: JavaClient, ac: ApacheCluster, *args: str) -> str:
    _, out = await java_client.mqadmin(ac.namesrv_addr, *args)
    assert "Exception" not in out, out[-3000:]
    return out


async def same_topic_status(java_client: JavaClient, ac: ApacheCluster, topic: str, sent: int) -> None:
    """``topicStatus -t topic``: our rows and mqadmin's give every queue the same min and max
    offsets, and the max offsets add up to the ``sent`` messages."""
    rows = await ours(ac, "topicStatus", "-t", topic)
    out = await theirs(java_client, ac, "topicStatus", "-t", topic)
    their_rows = {
        int(m[1]): (int(m[2]), int(m[3]))
        for m in re.finditer(rf"^{re.escape(ac.broker_name)}\s+(\d+)\s+(\d+)\s+(\d+)", out, re.M)
    }
    assert {r["queueId"]: (r["minOffset"], r["maxOffset"]) for r in rows} == their_rows
    assert sum(mx for _, mx in their_rows.values()) == sent


@mqadmin_5
async def test_cluster_list_and_broker_config(java_client: JavaClient, apache_5: ApacheCluster) -> None:
    ac = apache_5
    seen: dict[str, Any] = {}

    async def both_listed() -> bool:
        # Either side leaves the version blank (mqadmin with a stack trace) when the broker's
        # runtime stats time out (3 s), which a just-started broker on a loaded machine can do.
        rows = await ours(ac, "clusterList")
        _, out = await java_client.mqadmin(ac.namesrv_addr, "clusterList")
        seen.update(row=next(r for r in rows if r["brokerAddr"] == ac.broker_addr), out=out)
        return bool(seen["row"]["version"]) and "Exception" not in out

    await wait_until(both_listed, timeout=60, interval=1, what="clusterList with versions from both tools")
    row, out = seen["row"], seen["out"]
    line = next(line for line in out.splitlines() if ac.broker_addr in line)
    cluster, broker, bid, addr, version = line.split()[:5]
    assert (row["clusterName"], row["brokerName"], str(row["brokerId"]), row["brokerAddr"], row["version"]) == (
        cluster,
        broker,
        bid,
        addr,
        version,
    )
    cfg = (await ours(ac, "getBrokerConfig", "-b", ac.broker_addr))[ac.broker_addr]
    out = await theirs(java_client, ac, "getBrokerConfig", "-b", ac.broker_addr)
    theirs_cfg = dict(re.findall(r"^(\w+)\s+=\s+(.*?)\s*$", out, re.M))
    for key in ("brokerName", "brokerClusterName", "listenPort", "flushDiskType", "autoCreateTopicEnable"):
        assert cfg[key] == theirs_cfg[key], key


@mqadmin_5
async def test_update_topic_route_status(java_client: JavaClient, apache_5: ApacheCluster) -> None:
    ac = apache_5
    topic = unique("AdmCliT")
    data = await ours(ac, "updateTopic", "-c", ac.cluster_name, "-t", topic, "-r", "3", "-w", "3")
    assert data["brokerAddrs"] == [ac.broker_addr]

    async def routed() -> bool:
        _, out = await java_client.mqadmin(ac.namesrv_addr, "topicRoute", "-t", topic)
        return '"readQueueNums":3' in out

    await wait_until(routed, timeout=40, interval=1, what="mqadmin sees the topic")
    route = await ours(ac, "topicRoute", "-t", topic)
    (qd,) = route["queueDatas"]
    assert (qd["brokerName"], qd["readQueueNums"], qd["writeQueueNums"], qd["perm"]) == (ac.broker_name, 3, 3, 6)

    results = await send_some(ac.namesrv_addr, topic, 5)
    await same_topic_status(java_client, ac, topic, len(results))

    # queryMsgById: the same message facts
    r = results[2]
    (entry,) = await ours(ac, "queryMsgById", "-t", topic, "-i", r.offset_msg_id)
    out = await theirs(java_client, ac, "queryMsgById", "-t", topic, "-i", r.offset_msg_id)
    m = entry["message"]
    assert f"Queue ID:            {m['queueId']}" in out
    assert f"Queue Offset:        {m['queueOffset']}" in out
    assert f"CommitLog Offset:    {m['commitLogOffset']}" in out
    assert f"UNIQ_KEY={m['msgId']}" in out and m["msgId"] == r.msg_id


@mqadmin_5
async def test_consumer_progress_lag(java_client: JavaClient, apache_5: ApacheCluster) -> None:
    ac = apache_5
    topic, group = unique("AdmCliLag"), unique("admclilag")
    await ours(ac, "updateTopic", "-b", ac.broker_addr, "-t", topic, "-r", "2", "-w", "2")
    await send_some(ac.namesrv_addr, topic, 4)
    async with consumed(ac.namesrv_addr, group, topic, 4):
        conn = await ours(ac, "consumerConnection", "-g", group)
        out = await theirs(java_client, ac, "consumerConnection", "-g", group)
        assert conn["connectionSet"][0]["clientId"] in out
    await send_some(ac.namesrv_addr, topic, 3)

    data = await ours(ac, "consumerProgress", "-g", group)
    assert data["diffTotal"] == 3
    out = await theirs(java_client, ac, "consumerProgress", "-g", group)
    assert f"Consume Diff Total: {data['diffTotal']}" in out
    their_rows = {
        int(m[1]): (int(m[2]), int(m[3]))
        for m in re.finditer(rf"^{re.escape(topic)}\s+\S+\s+(\d+)\s+(\d+)\s+(\d+)", out, re.M)
    }
    assert {r["queueId"]: (r["brokerOffset"], r["consumerOffset"]) for r in data["queues"]} == their_rows


@mqadmin_5
async def test_sub_group_producer_connection_stats_and_key(java_client: JavaClient, apache_5: ApacheCluster) -> None:
    ac = apache_5
    group = unique("admclisub")
    data = await ours(ac, "updateSubGroup", "-b", ac.broker_addr, "-g", group, "-r", "5", "-q", "2")
    assert data["brokerAddrs"] == [ac.broker_addr]
    out = await theirs(java_client, ac, "getConsumerConfig", "-g", group)
    fields = dict(re.findall(r"^(\w+)\s*=\s+(.*?)\s*$", out, re.M))
    assert (fields["groupName"], fields["retryMaxTimes"], fields["retryQueueNums"]) == (group, "5", "2")
    data = await ours(ac, "deleteSubGroup", "-b", ac.broker_addr, "-g", group)
    assert data["brokerAddrs"] == [ac.broker_addr]
    _, out = await java_client.mqadmin(ac.namesrv_addr, "getConsumerConfig", "-g", group)
    assert f"groupName{' ' * 31}=  {group}" not in out and "retryMaxTimes" not in out, out[-2000:]

    topic, pgroup = unique("AdmCliPc"), unique("admclipg")
    await ours(ac, "updateTopic", "-b", ac.broker_addr, "-t", topic, "-r", "2", "-w", "2")
    async with Producer(pgroup, namesrv_addr=ac.namesrv_addr) as p:
        results = [await p.send(Message.build(topic, f"p{i}", keys=["PK"])) for i in range(3)]

        async def listed() -> bool:
            result = await asyncio.to_thread(
                runner.invoke,
                app,
                ["admin", "producerConnection", "-g", pgroup, "-t", topic, "--json", "-n", ac.namesrv_addr],
            )
            return result.exit_code == 0 and len(orjson.loads(result.stdout)) == 1

        await wait_until(listed, timeout=40, interval=0.5, what="producer registered on the broker")
        (row,) = await ours(ac, "producerConnection", "-g", pgroup, "-t", topic)
        out = await theirs(java_client, ac, "producerConnection", "-g", pgroup, "-t", topic)
        assert row["clientId"] in out and "PYTHON" in out and row["language"] == "PYTHON"

    # the broker samples its TOPIC_PUT_NUMS stats item on a timer: wait until the 3 puts show
    seen: list[dict[str, object]] = []

    async def counted() -> bool:
        (row,) = await ours(ac, "statsAll", "-t", topic)
        seen[:] = [row]
        return row["inMsg24Hour"] == len(results)

    await wait_until(counted, timeout=120, interval=1.0, what="the broker's put stats of the topic")
    (stats,) = seen
    out = await theirs(java_client, ac, "statsAll", "-t", topic)
    line = next(line for line in out.splitlines() if line.startswith(topic))
    assert line.split()[-1] == "NO_CONSUMER" and stats["outMsg24Hour"] is None
    assert int(line.split()[-2]) == stats["inMsg24Hour"]  # the broker's TOPIC_PUT_NUMS item

    async def indexed() -> bool:
        return len(await ours(ac, "queryMsgByKey", "-t", topic, "-k", "PK")) == 3

    await wait_until(indexed, timeout=40, interval=0.5, what="3 messages indexed under PK")
    rows = await ours(ac, "queryMsgByKey", "-t", topic, "-k", "PK")
    out = await theirs(java_client, ac, "queryMsgByKey", "-t", topic, "-k", "PK")
    assert sorted(r["msgId"] for r in rows) == sorted(r.msg_id for r in results)
    assert all(r["msgId"] in out for r in rows)


@mqadmin_5
async def test_resend_from_dlq(java_client: JavaClient, apache_5: ApacheCluster) -> None:
    ac = apache_5
    topic, group = unique("AdmCliDlq"), unique("admclidlq")
    await ours(ac, "updateTopic", "-b", ac.broker_addr, "-t", topic, "-r", "1", "-w", "1")
    (sent,) = await send_some(ac.namesrv_addr, topic, 1)
    failing = PushConsumer(
        group,
        namesrv_addr=ac.namesrv_addr,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        max_reconsume_times=0,
    )
    failing.subscribe(topic, "*")

    async def fail_all(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        return ConsumeConcurrentlyStatus.RECONSUME_LATER

    failing.register_message_listener(fail_all)
    dlq = f"%DLQ%{group}"

    async def in_dlq() -> bool:
        result = await asyncio.to_thread(
            runner.invoke,
            app,
            ["admin", "queryMsgByUniqueKey", "-i", sent.msg_id, "-t", dlq, "--json", "-n", ac.namesrv_addr],
        )
        return result.exit_code == 0

    async with failing:
        await wait_until(in_dlq, timeout=60, interval=1, what="message in the DLQ")
    (entry,) = await ours(ac, "queryMsgById", "-t", dlq, "-i", sent.msg_id)
    out = await theirs(java_client, ac, "queryMsgById", "-t", dlq, "-i", sent.msg_id)
    assert f"Topic:               {dlq}" in out and f"Queue Offset:        {entry['message']['queueOffset']}" in out

    (row,) = await ours(ac, "resendMsgById", "-t", dlq, "-i", entry["message"]["offsetMsgId"])
    assert row["toTopic"] == f"%RETRY%{group}" and row["sendStatus"] == "SEND_OK"
    got: list[MessageExt] = []
    ok = PushConsumer(
        group, namesrv_addr=ac.namesrv_addr, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    )
    ok.subscribe(topic, "*")

    async def take(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        got.extend(msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    ok.register_message_listener(take)
    async with ok:
        await wait_until(lambda: any(m.body == b"m0" for m in got), timeout=60, what="resent message consumed")
    resent = next(m for m in got if m.body == b"m0")
    assert resent.topic == topic and resent.msg_id == sent.msg_id


@mqadmin_5
async def test_reset_offset_without_consumer_on_apache_4(java_client: JavaClient, apache_4: ApacheCluster) -> None:
    """A 4.x broker answers CONSUMER_NOT_ONLINE when nobody of the group is connected; the
    command then commits the offsets itself, as mqadmin's ResetOffsetByTimeOldCommand."""
    ac = apache_4
    topic, group = unique("AdmCliReset"), unique("admclireset")
    await ours(ac, "updateTopic", "-b", ac.broker_addr, "-t", topic, "-r", "2", "-w", "2")
    await send_some(ac.namesrv_addr, topic, 4)
    async with consumed(ac.namesrv_addr, group, topic, 4):
        pass

    async def caught_up() -> bool:
        return bool((await ours(ac, "consumerProgress", "-g", group))["diffTotal"] == 0)

    # the consumer commits its offsets one-way, as Java's persistAll; the 4.9 broker handles those
    # and consumerProgress's GET_CONSUME_STATS on different executors, so the query may come first
    await wait_until(caught_up, timeout=15, interval=0.2, what="the group's committed offsets on the broker")

    data = await ours(ac, "resetOffsetByTime", "-g", group, "-t", topic, "-s", "0")
    assert data["old"] is True
    assert {r["queueId"]: r["offset"] for r in data["offsets"]} == {0: 0, 1: 0}
    assert sum(r["consumerOffset"] for r in data["offsets"]) == 4
    assert (await ours(ac, "consumerProgress", "-g", group))["diffTotal"] == 4
    # mqadmin 5.3.3's consumerProgress cannot check this on a 4.9 broker: it asks for
    # GET_TOPIC_CONFIG (351), which 4.9 does not support; rocketpipe's command does not need it
    _, out = await java_client.mqadmin(ac.namesrv_addr, "consumerProgress", "-g", group)
    assert "request type 351 not supported" in out


@mqadmin_5
async def test_message_commands_and_broker_status(java_client: JavaClient, apache_5: ApacheCluster) -> None:
    ac = apache_5
    topic = unique("AdmCliMsg")
    await ours(ac, "updateTopic", "-b", ac.broker_addr, "-t", topic, "-r", "2", "-w", "2")
    results = await send_some(ac.namesrv_addr, topic, 4)
    sent = await ours(
        ac, "sendMessage", "-t", topic, "-p", "from-admin", "-c", "TZ", "-k", "AK", "-b", ac.broker_name, "-i", "1"
    )
    assert sent["sendStatus"] == "SEND_OK" and sent["queueId"] == 1

    # printMsg: the same messages (ids and bodies) as mqadmin's
    queues = await ours(ac, "printMsg", "-t", topic)
    our_msgs = {m["msgId"]: m["body"] for q in queues for m in q["messages"]}
    out = await theirs(java_client, ac, "printMsg", "-t", topic)
    their_msgs = dict(re.findall(r"^MSGID: (\S+) .* BODY: (.*)$", out, re.M))
    assert our_msgs == their_msgs and len(our_msgs) == 5
    assert our_msgs[sent["msgId"]] == "from-admin"

    # queryMsgByOffset of the sent message; consumeMessage reads it back
    m = await ours(ac, "queryMsgByOffset", "-t", topic, "-b", ac.broker_name, "-i", "1", "-o", str(sent["queueOffset"]))
    out = await theirs(
        java_client,
        ac,
        "queryMsgByOffset",
        "-t",
        topic,
        "-b",
        ac.broker_name,
        "-i",
        "1",
        "-o",
        str(sent["queueOffset"]),
    )
    assert (m["tags"], m["keys"]) == ("TZ", "AK") and f"UNIQ_KEY={m['msgId']}" in out
    rows = await ours(
        ac, "consumeMessage", "-t", topic, "-b", ac.broker_name, "-i", "1", "-o", str(sent["queueOffset"]), "-c", "1"
    )
    assert [r["body"] for r in rows] == ["from-admin"]
    assert len(await ours(ac, "consumeMessage", "-t", topic)) == 5

    # queryMsgByUniqueKey: the same queue offset as mqadmin's
    r = results[0]
    data = await ours(ac, "queryMsgByUniqueKey", "-t", topic, "-i", r.msg_id)
    out = await theirs(java_client, ac, "queryMsgByUniqueKey", "-t", topic, "-i", r.msg_id)
    assert data["messages"][0]["queueOffset"] == r.queue_offset
    assert f"Queue Offset:        {r.queue_offset}" in out

    # brokerStatus: the same version and the same key set as mqadmin's
    kv = (await ours(ac, "brokerStatus", "-b", ac.broker_addr))[ac.broker_addr]
    out = await theirs(java_client, ac, "brokerStatus", "-b", ac.broker_addr)
    theirs_kv = dict(re.findall(r"^(\w+)\s*: (.*)$", out, re.M))
    assert kv["brokerVersionDesc"] == theirs_kv["brokerVersionDesc"]
    assert set(theirs_kv) <= set(kv) | {k for k in theirs_kv if k.startswith("commitLogDiskRatio_")}

    # cleanExpiredCQ: the Apache broker answers it
    assert (await ours(ac, "cleanExpiredCQ", "-b", ac.broker_addr))["result"] is True


@mqadmin_5
async def test_topic_perm_and_cluster_list(java_client: JavaClient, apache_5: ApacheCluster) -> None:
    ac = apache_5
    topic = unique("AdmCliPerm")
    await ours(ac, "updateTopic", "-b", ac.broker_addr, "-t", topic, "-r", "2", "-w", "2")
    assert await ours(ac, "topicClusterList", "-t", topic) == [ac.cluster_name]
    out = await theirs(java_client, ac, "topicClusterList", "-t", topic)
    assert ac.cluster_name in out.split()

    (change,) = await ours(ac, "updateTopicPerm", "-b", ac.broker_addr, "-t", topic, "-p", "4")
    assert (change["oldPerm"], change["perm"], change["changed"]) == (6, 4, True)

    async def perm_4() -> bool:
        _, out = await java_client.mqadmin(ac.namesrv_addr, "topicRoute", "-t", topic)
        return '"perm":4' in out and '"readQueueNums":2' in out

    await wait_until(perm_4, timeout=40, interval=1, what="mqadmin sees perm 4")


async def listed_topics(java_client: JavaClient, ac: ApacheCluster) -> tuple[set[str], set[str]]:
    """(rocketpipe's topicList, mqadmin's topicList) of the cluster."""
    mine = set((await ours(ac, "topicList"))["topicList"])
    _, out = await java_client.mqadmin(ac.namesrv_addr, "topicList")
    return mine, {line for line in lines_of(out) if TOPIC_LINE.match(line)}


@mqadmin_5
async def test_topic_list_and_delete_topic(java_client: JavaClient, apache_5: ApacheCluster) -> None:
    ac = apache_5
    topic, group = unique("AdmCliList"), unique("admclilist")
    await ours(ac, "updateTopic", "-c", ac.cluster_name, "-t", topic, "-r", "2", "-w", "2")
    await send_some(ac.namesrv_addr, topic, 3)
    async with consumed(ac.namesrv_addr, group, topic, 3):
        pass

    # topicList: the same set of topics (system topics included) as mqadmin's
    seen: dict[str, set[str]] = {}

    async def same_list() -> bool:
        seen["ours"], seen["theirs"] = await listed_topics(java_client, ac)
        return topic in seen["ours"] and seen["ours"] == seen["theirs"]

    await wait_until(same_list, timeout=60, interval=1, what="the same topicList from both tools")
    assert {"TBW102", ac.cluster_name, ac.broker_name, topic} <= seen["ours"]

    # topicList -c: cluster, topic and consumer group rows of the topic as mqadmin's
    rows = [r for r in await ours(ac, "topicList", "-c") if r["topic"] == topic]
    out = await theirs(java_client, ac, "topicList", "-c")
    their_rows = {(m[1], m[2], m[3]) for m in re.finditer(rf"^(\S+)\s+({re.escape(topic)})\s+(\S+)\s*$", out, re.M)}
    assert {(r["clusterName"], r["topic"], r["consumerGroup"]) for r in rows} == their_rows
    assert (ac.cluster_name, topic, group) in their_rows

    # deleteTopic: mqadmin's two lines; gone from the broker and the name server for both tools
    other = unique("AdmCliDel")
    await ours(ac, "updateTopic", "-c", ac.cluster_name, "-t", other, "-r", "1", "-w", "1")
    printed = await ours_text(ac, "deleteTopic", "-t", topic, "-c", ac.cluster_name)
    out = await theirs(java_client, ac, "deleteTopic", "-t", other, "-c", ac.cluster_name)
    assert printed == [line.replace(other, topic) for line in lines_of(out)]
    assert printed == [
        f"delete topic [{topic}] from cluster [{ac.cluster_name}] success.",
        f"delete topic [{topic}] from NameServer success.",
    ]
    data = await ours(ac, "deleteTopic", "-t", other, "-c", ac.cluster_name)  # deleting twice is no error
    assert data == {"topic": other, "clusterName": ac.cluster_name, "brokerAddrs": [ac.broker_addr]}

    mine, theirs_now = await listed_topics(java_client, ac)
    assert topic not in mine and topic not in theirs_now and other not in mine | theirs_now
    code, out = await ours_fails(ac, "topicRoute", "-t", topic)
    assert code == 5, out
    _, out = await java_client.mqadmin(ac.namesrv_addr, "topicRoute", "-t", topic)
    assert f"No topic route info in name server for the topic: {topic}" in out, out[-2000:]
    async with Admin(ac.namesrv_addr) as admin:  # the broker dropped its topic config too
        with pytest.raises(TopicNotExistError):
            await admin.examine_topic_config(ac.broker_addr, topic)


@mqadmin_5
async def test_consumer_status(java_client: JavaClient, apache_5: ApacheCluster) -> None:
    """consumerStatus asks the rocketpipe consumer for its running info through the Apache broker;
    mqadmin's does the same and must be able to read what the client answered."""
    ac = apache_5
    topic, group = unique("AdmCliStat"), unique("admclistat")
    await ours(ac, "updateTopic", "-b", ac.broker_addr, "-t", topic, "-r", "2", "-w", "2")
    await send_some(ac.namesrv_addr, topic, 4)
    async with consumed(ac.namesrv_addr, group, topic, 4):
        seen: dict[str, Any] = {}

        async def all_committed() -> bool:
            (info,) = await ours(ac, "consumerStatus", "-g", group)
            seen["info"] = info
            return sum(q["commitOffset"] for q in info["mqTable"] if q["topic"] == topic) == 4

        await wait_until(all_committed, timeout=40, interval=0.5, what="commit offsets of the 4 messages")
        info = seen["info"]
        client_id = info["clientId"]
        assert f"{topic}:*" in info["subscriptionSet"] and info["properties"]["consumerGroup"] == group
        ours_offsets = {q["queueId"]: q["commitOffset"] for q in info["mqTable"] if q["topic"] == topic}
        assert set(ours_offsets) == {0, 1}

        # without -i: mqadmin lists the client and finds the group's running infos consistent
        out = await theirs(java_client, ac, "consumerStatus", "-g", group)
        assert client_id in out
        assert "Same subscription in the same group of consumer" in out and "Rebalance OK" in out

        # with -i: the same properties, subscription and commit offsets as ours
        out = await theirs(java_client, ac, "consumerStatus", "-g", group, "-i", client_id)
        props = dict(re.findall(r"^(\S+)\s+: (.*?)\s*$", section(out, "Consumer Properties"), re.M))
        assert props == info["properties"]
        subs = re.findall(r"Topic: (\S+)\s+ClassFilter: \w+\s+SubExpression: (.*?)\s*$", out, re.M)
        assert sorted(f"{t}:{e}" for t, e in subs) == info["subscriptionSet"]
        their_offsets = {
            int(m[1]): int(m[2])
            for m in re.finditer(
                rf"^{re.escape(topic)}\s+{re.escape(ac.broker_name)}\s+(\d+)\s+(-?\d+)\s*$",
                section(out, "Consumer Offset"),
                re.M,
            )
        }
        assert their_offsets == ours_offsets


def pop_mode_consumer(ac: ApacheCluster, group: str, topic: str, got: list[MessageExt]) -> PushConsumer:
    """A push consumer that takes its queues from the broker (QUERY_ASSIGNMENT): POP or PULL as
    the broker's request mode for the group says."""
    c = PushConsumer(
        group,
        namesrv_addr=ac.namesrv_addr,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        client_rebalance=False,
    )
    c.subscribe(topic, "*")

    async def take(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        got.extend(msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    c.register_message_listener(take)
    return c


@mqadmin_5
async def test_set_consume_mode(java_client: JavaClient, apache_5: ApacheCluster) -> None:
    ac = apache_5
    topic, group = unique("AdmCliMode"), unique("admclimode")
    await ours(ac, "updateTopic", "-b", ac.broker_addr, "-t", topic, "-r", "2", "-w", "2")
    args = ("setConsumeMode", "-b", ac.broker_addr, "-t", topic, "-g", group, "-m", "POP", "-q", "0")
    printed = await ours_text(ac, *args)
    assert printed == lines_of(await theirs(java_client, ac, *args))  # mqadmin sets the same mode again
    assert printed == [
        f"set consume mode to {ac.broker_addr} success.",
        f"topic[{topic}] group[{group}] consume mode[POP] popShareQueueNum[0]",
    ]

    # the Apache broker now assigns the group POP: one shared assignment, messages popped
    results = await send_some(ac.namesrv_addr, topic, 4)
    got: list[MessageExt] = []
    async with pop_mode_consumer(ac, group, topic, got) as consumer:
        await wait_until(lambda: len(got) >= 4, timeout=60, what="4 messages popped")
        assert consumer.pop_queues() == [MessageQueue(topic, ac.broker_name, -1)]
    assert sorted(m.msg_id for m in got) == sorted(r.msg_id for r in results)
    assert all("POP_CK" in m.properties for m in got)

    # back to PULL, on every master of the cluster (-c): real queues, pulled
    data = await ours(ac, "setConsumeMode", "-c", ac.cluster_name, "-t", topic, "-g", group, "-m", "PULL")
    assert (data["brokerAddrs"], data["mode"]) == ([ac.broker_addr], "PULL")
    await send_some(ac.namesrv_addr, topic, 2)
    got.clear()
    async with pop_mode_consumer(ac, group, topic, got) as consumer:
        await wait_until(lambda: len(got) >= 2, timeout=60, what="2 messages pulled")
        assert consumer.pop_queues() == []
        assert {mq.queue_id for mq in consumer.assigned_queues() if mq.topic == topic} == {0, 1}
    assert not any("POP_CK" in m.properties for m in got)


@mqadmin_5
async def test_update_broker_config(java_client: JavaClient, apache_5: ApacheCluster) -> None:
    ac = apache_5
    key = "commercialBaseCount"  # read back by getBrokerConfig; used only in commercial statistics
    before = (await ours(ac, "getBrokerConfig", "-b", ac.broker_addr))[ac.broker_addr][key]

    async def their_value() -> str:
        out = await theirs(java_client, ac, "getBrokerConfig", "-b", ac.broker_addr)
        return dict(re.findall(r"^(\w+)\s+=\s+(.*?)\s*$", out, re.M))[key]

    try:
        printed = await ours_text(ac, "updateBrokerConfig", "-b", ac.broker_addr, "-k", key, "-v", "7")
        assert printed == [f"update broker config success, {ac.broker_addr}"]
        assert await their_value() == "7"
        assert (await ours(ac, "getBrokerConfig", "-b", ac.broker_addr))[ac.broker_addr][key] == "7"
        out = await theirs(java_client, ac, "updateBrokerConfig", "-b", ac.broker_addr, "-k", key, "-v", "9")
        assert lines_of(out) == printed
        assert (await ours(ac, "getBrokerConfig", "-b", ac.broker_addr))[ac.broker_addr][key] == "9"
    finally:
        data = await ours(ac, "updateBrokerConfig", "-c", ac.cluster_name, "-k", key, "-v", before)
    assert data == {"brokerAddrs": [ac.broker_addr], "key": key, "value": before}
    assert await their_value() == before

    # a key on the broker's black list: both tools get NO_PERMISSION (16) from the broker
    code, output = await ours_fails(ac, "updateBrokerConfig", "-b", ac.broker_addr, "-k", "brokerConfigPath", "-v", "x")
    assert code == 6 and "code=16" in output and "black list" in output, output
    _, out = await java_client.mqadmin(
        ac.namesrv_addr, "updateBrokerConfig", "-b", ac.broker_addr, "-k", "brokerConfigPath", "-v", "x"
    )
    assert "CODE: 16" in out and "Can not update config in black list." in out, out[-2000:]


@mqadmin_4
async def test_cluster_topic_progress_and_message_on_apache_4(java_client: JavaClient, apache_4: ApacheCluster) -> None:
    """The 4.9.7 broker with mqadmin 4.9.8: clusterList, topicList, topicRoute, topicStatus,
    consumerProgress and queryMsgById print the same facts; setConsumeMode (5.x) fails on both."""
    ac = apache_4
    seen: dict[str, Any] = {}

    async def both_listed() -> bool:  # runtime stats of a just-started broker may time out
        rows = await ours(ac, "clusterList")
        _, out = await java_client.mqadmin(ac.namesrv_addr, "clusterList")
        seen.update(row=next(r for r in rows if r["brokerAddr"] == ac.broker_addr), out=out)
        return bool(seen["row"]["version"]) and "Exception" not in out and ac.broker_addr in out

    await wait_until(both_listed, timeout=60, interval=1, what="clusterList with versions from both tools")
    row = seen["row"]
    line = next(line for line in seen["out"].splitlines() if ac.broker_addr in line)
    assert line.split()[:5] == [
        row["clusterName"],
        row["brokerName"],
        str(row["brokerId"]),
        row["brokerAddr"],
        "V4_9_7",
    ]
    assert row["version"] == "V4_9_7"

    topic, group = unique("AdmCli4"), unique("admcli4")
    data = await ours(ac, "updateTopic", "-b", ac.broker_addr, "-t", topic, "-r", "2", "-w", "2")
    assert data["brokerAddrs"] == [ac.broker_addr]

    async def same_list() -> bool:
        seen["ours"], seen["theirs"] = await listed_topics(java_client, ac)
        return topic in seen["ours"] and seen["ours"] == seen["theirs"]

    await wait_until(same_list, timeout=60, interval=1, what="the same topicList from both tools")

    route = await ours(ac, "topicRoute", "-t", topic)
    out = await theirs(java_client, ac, "topicRoute", "-t", topic)
    (qd,) = route["queueDatas"]
    (bd,) = route["brokerDatas"]
    for field in ("brokerName", "readQueueNums", "writeQueueNums", "perm"):
        assert f'"{field}":{orjson.dumps(qd[field]).decode()}' in out, field
    assert f'"cluster":"{bd["cluster"]}"' in out and f'"{ac.broker_addr}"' in out
    assert (qd["readQueueNums"], qd["writeQueueNums"], qd["perm"], bd["brokerAddrs"]) == (
        2,
        2,
        6,
        {"0": ac.broker_addr},
    )

    results = await send_some(ac.namesrv_addr, topic, 4)
    await same_topic_status(java_client, ac, topic, len(results))

    # queryMsgById (mqadmin 4.9.8 has no -t: the offset msg id names the broker)
    r = results[1]
    (entry,) = await ours(ac, "queryMsgById", "-t", topic, "-i", r.offset_msg_id)
    out = await theirs(java_client, ac, "queryMsgById", "-i", r.offset_msg_id)
    m = entry["message"]
    assert (m["msgId"], m["topic"], m["queueId"], m["queueOffset"]) == (
        r.msg_id,
        topic,
        r.message_queue.queue_id,
        r.queue_offset,
    )
    assert f"Topic:               {topic}" in out
    assert f"Queue ID:            {m['queueId']}" in out
    assert f"Queue Offset:        {m['queueOffset']}" in out
    assert f"CommitLog Offset:    {m['commitLogOffset']}" in out
    assert f"UNIQ_KEY={m['msgId']}" in out

    # consumerProgress: lag per queue and in total, as mqadmin 4.9.8 prints it
    async with consumed(ac.namesrv_addr, group, topic, 4):
        pass
    await send_some(ac.namesrv_addr, topic, 3)
    data = await ours(ac, "consumerProgress", "-g", group)
    assert data["diffTotal"] == 3
    out = await theirs(java_client, ac, "consumerProgress", "-g", group)
    assert f"Diff Total: {data['diffTotal']}" in out
    their_rows = {
        int(m[1]): (int(m[2]), int(m[3]))
        for m in re.finditer(rf"^{re.escape(topic)}\s+\S+\s+(\d+)\s+(\d+)\s+(\d+)", out, re.M)
    }
    assert {q["queueId"]: (q["brokerOffset"], q["consumerOffset"]) for q in data["queues"] if q["topic"] == topic} == (
        their_rows
    )
    assert sum(b - c for b, c in their_rows.values()) == 3

    # setConsumeMode is 5.x only: the 4.9 broker does not know SET_MESSAGE_REQUEST_MODE
    code, output = await ours_fails(ac, "setConsumeMode", "-b", ac.broker_addr, "-t", topic, "-g", group, "-m", "POP")
    assert code == 6, output
    _, out = await java_client.mqadmin(
        ac.namesrv_addr, "setConsumeMode", "-b", ac.broker_addr, "-t", topic, "-g", group, "-m", "POP"
    )
    assert "The sub command setConsumeMode not exist." in out, out
