"""rocketpipe's message trace against Apache RocketMQ 5.3.3 and 4.9.7 (and rocketpipe's broker),
read by ``mqadmin queryMsgTraceById``.

A rocketpipe :class:`Producer`, :class:`TransactionProducer` and :class:`PushConsumer` with
``enable_msg_trace=True`` send to a broker started with ``traceTopicEnable=true`` (Apache 5.3.3
and 4.9.7: a cluster of this module each — the session's clusters have no trace topic;
rocketpipe: ``trace_topic_enable``). Then Java's own reader — ``mqadmin queryMsgTraceById`` of
rocketmq-tools 5.3.3 (4.9.7 against Apache 4.9.7), which queries ``RMQ_SYS_TRACE_TOPIC`` by
key = msg id and decodes with ``TraceDataEncoder`` — must print the Pub row (producer group,
success) and the Sub row (consumer group, success), and rocketpipe's :meth:`Admin.query_trace`
must agree, including SubBefore and the EndTransaction record of a committed transaction.
Apache 4.9.7 stores no ``MSG_REGION`` on messages: the consume records then carry rocketpipe's
fallback region ``DefaultRegion`` (the hooks of ``client/trace``).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from interop_support import TIMINGS, Target, create_topic, unique

from rocketpipe import (
    Admin,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    LocalTransactionState,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
    TraceType,
    TraceView,
    TransactionProducer,
)
from rocketpipe.testing.apache import (
    APACHE_VERSIONS,
    ApacheCluster,
    ApacheUnavailableError,
    apache_cluster,
    resolve_classpath,
    run_mqadmin,
)
from rocketpipe.testing.cluster import local_cluster
from waiting import wait_until

ALL_TRACES = {TraceType.Pub, TraceType.SubBefore, TraceType.SubAfter}


def _trace_cluster(label: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApacheCluster]:
    """Apache ``label`` with ``traceTopicEnable=true`` (the session's clusters have no trace topic)."""
    version = APACHE_VERSIONS[label]
    try:
        with apache_cluster(
            version, tmp_path_factory.mktemp(f"{label}-trace"), broker_conf={"traceTopicEnable": "true"}
        ) as c:
            TIMINGS[f"{label} (traceTopicEnable) start-up"] = c.startup_seconds
            yield c
    except ApacheUnavailableError as exc:
        pytest.fail(f"Apache RocketMQ {version} ({label}, trace) unavailable: {exc}", pytrace=False)


@pytest.fixture(scope="module")
def apache_5_trace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApacheCluster]:
    yield from _trace_cluster("apache-5", tmp_path_factory)


@pytest.fixture(scope="module")
def apache_4_trace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApacheCluster]:
    yield from _trace_cluster("apache-4", tmp_path_factory)


@pytest.fixture(params=["embedded", "apache-5", "apache-4"])
async def trace_target(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Target]:
    if request.param == "embedded":
        async with local_cluster(tmp_path / "store", trace_topic_enable=True) as c:
            yield Target("embedded", c.namesrv_addr, c.broker_addr, c.broker.config.broker_name)
        return
    ac: ApacheCluster = request.getfixturevalue(f"{request.param.replace('-', '_')}_trace")
    yield Target(request.param, ac.namesrv_addr, ac.broker_addr, ac.broker_name, ac)


async def mqadmin_trace(t: Target, msg_id: str, home: Path) -> str:
    """``mqadmin queryMsgTraceById -i msg_id`` (rocketmq-tools 5.3.3): its output."""

    def run() -> str:
        cp = t.apache.classpath if t.apache is not None else resolve_classpath(APACHE_VERSIONS["apache-5"])
        proc = run_mqadmin(cp, "queryMsgTraceById", "-i", msg_id, "-n", t.namesrv_addr, home=home)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout + proc.stderr

    out = await asyncio.to_thread(run)
    assert "Exception" not in out, out[-3000:]
    return out


def rows(out: str, kind: str) -> list[list[str]]:
    """mqadmin's ``Pub`` / ``Sub`` rows: type, group, client host, date, time, cost, status."""
    return [line.split() for line in out.splitlines() if re.match(rf"^{kind}\s", line)]


async def views_of(admin: Admin, msg_id: str, types: set[TraceType]) -> list[TraceView]:
    views: list[TraceView] = []

    async def complete() -> bool:
        nonlocal views
        views = await admin.query_trace(msg_id)
        return types <= {v.trace_type for v in views}

    await wait_until(complete, timeout=30, what=f"{sorted(t.value for t in types)} traces of {msg_id}")
    return views


async def test_trace_read_by_mqadmin(trace_target: Target, tmp_path: Path) -> None:
    t = trace_target
    topic, pg, cg = unique("RpTraceT"), unique("rtpg"), unique("rtcg")
    got: list[MessageExt] = []

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        got.extend(msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    async with Admin(t.namesrv_addr) as admin:
        await create_topic(admin, topic, 2)
        async with Producer(pg, namesrv_addr=t.namesrv_addr, enable_msg_trace=True) as p:
            sent = [await p.send(Message.build(topic, f"t{i}", tags="TagR", keys=[f"rk-{i}"])) for i in range(2)]
        consumer = PushConsumer(
            cg,
            namesrv_addr=t.namesrv_addr,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            enable_msg_trace=True,
        )
        consumer.subscribe(topic, "*")
        consumer.register_message_listener(listener)
        async with consumer:
            await wait_until(lambda: len(got) >= 2, timeout=30, what="both messages consumed")

        for i, s in enumerate(sent):
            views = await views_of(admin, s.msg_id, ALL_TRACES)
            pub = next(v for v in views if v.trace_type is TraceType.Pub)
            after = next(v for v in views if v.trace_type is TraceType.SubAfter)
            before = next(v for v in views if v.trace_type is TraceType.SubBefore)
            assert (pub.group_name, pub.topic, pub.tags, pub.keys, pub.status) == (
                pg,
                topic,
                "TagR",
                f"rk-{i}",
                "success",
            )
            assert pub.offset_msg_id == s.offset_msg_id and pub.store_host == t.broker_addr
            assert (after.group_name, after.status, before.group_name) == (cg, "success", cg)
            assert after.context.request_id == before.context.request_id
            # Apache 5.3.3 stores MSG_REGION DefaultRegion; 4.9.7 none, rocketpipe then falls back to it
            assert before.context.region_id == "DefaultRegion"

        out = await mqadmin_trace(t, sent[0].msg_id, tmp_path / "mqadmin")
        [pub_row], [sub_row] = rows(out, "Pub"), rows(out, "Sub")
        assert (pub_row[1], pub_row[-1]) == (pg, "success"), out
        assert (sub_row[1], sub_row[-1]) == (cg, "success"), out
        assert pub_row[5].endswith("ms") and sub_row[5].endswith("ms")


class _Commit:
    def execute_local_transaction(self, msg: Message, arg: object) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE

    def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE


async def test_trace_end_transaction(trace_target: Target, tmp_path: Path) -> None:
    t = trace_target
    topic, pg = unique("RpTraceTxT"), unique("rttx")
    async with Admin(t.namesrv_addr) as admin:
        await create_topic(admin, topic, 1)
        async with TransactionProducer(
            pg, namesrv_addr=t.namesrv_addr, transaction_listener=_Commit(), enable_msg_trace=True
        ) as p:
            res = await p.send_message_in_transaction(Message.build(topic, b"tx", tags="TX", keys="txk"))
        views = await views_of(admin, res.msg_id, {TraceType.Pub, TraceType.EndTransaction})
    end = next(v for v in views if v.trace_type is TraceType.EndTransaction)
    b = end.context.trace_beans[0]
    assert (end.group_name, end.topic, end.tags, end.keys) == (pg, topic, "TX", "txk")
    assert (b.transaction_state, b.transaction_id, b.from_transaction_check) == ("COMMIT_MESSAGE", res.msg_id, False)
    out = await mqadmin_trace(t, res.msg_id, tmp_path / "mqadmin")
    [pub_row] = rows(out, "Pub")  # mqadmin prints Pub and SubAfter only
    assert (pub_row[1], pub_row[-1]) == (pg, "success"), out
