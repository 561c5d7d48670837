"""rocketpipe client features that go through the broker's admin paths, against embedded, Apache
5.x and Apache 4.x.

Every test runs three times (``target`` fixture); the Apache brokers run with
``enablePropertyFilter=true``. Covered:

* SQL92 property filters of a PushConsumer (delivered set = matching set, including the Java
  evaluation corner cases: absent property → NULL, a non-numeric string compared with a number
  → no match) and the rejection of expressions that do not compile (SUBSCRIPTION_PARSE_FAILED on
  CHECK_CLIENT_CONFIG);
* ``Admin.reset_offset_by_timestamp`` (INVOKE_BROKER_TO_RESET_OFFSET, ``mqadmin resetOffsetByTime``)
  while the consumer runs: 4.9.7 forwards RESET_CONSUMER_CLIENT_OFFSET to the client, 5.3.3 and
  rocketpipe reset server-side and answer the next pull with PULL_OFFSET_MOVED;
* the broker → client callbacks ``Admin.get_consumer_running_info`` (GET_CONSUMER_RUNNING_INFO)
  and ``Admin.consume_message_directly`` (CONSUME_MESSAGE_DIRECTLY), forwarded by the broker
  (``AdminBrokerProcessor.callConsumer``);
* admin queries: QUERY_MESSAGE by key, VIEW_MESSAGE_BY_ID, GET_TOPIC_STATS_INFO,
  GET_CONSUME_STATS, GET_CONSUMER_CONNECTION_LIST, the topic list and cluster info, and
  ``delete_topic`` (DELETE_TOPIC_IN_BROKER + DELETE_TOPIC_IN_NAMESRV).
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import pytest
from interop_support import Target, create_topic_on, unique

from rocketpipe import (
    Admin,
    ClientConfig,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    Message,
    MessageExt,
    MessageQueue,
    MessageSelector,
    Producer,
    PushConsumer,
)
from rocketpipe.client import rpc
from rocketpipe.client.inbound import CMResult
from rocketpipe.errors import BrokerError, SubscriptionError, TopicNotExistError
from rocketpipe.protocol.codes import CURRENT_VERSION, RequestCode, ResponseCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.protocol.message import create_offset_msg_id, decode_offset_msg_id
from rocketpipe.testing.apache import CLUSTER_NAME
from waiting import wait_until

OK = ConsumeConcurrentlyStatus.CONSUME_SUCCESS
LATER = ConsumeConcurrentlyStatus.RECONSUME_LATER
FAST = {"rebalance_interval": 1.0}


def now_ms() -> int:
    return int(time.time() * 1000)


def cluster_name(t: Target) -> str:
    return CLUSTER_NAME if t.is_apache else "DefaultCluster"


def fast_config(t: Target) -> ClientConfig:
    """Route refresh and offset persistence every second; a lenient RPC timeout (shared machine)."""
    return ClientConfig(
        namesrv_addr=t.namesrv_addr,
        poll_name_server_interval=1.0,
        persist_consumer_offset_interval=1.0,
        request_timeout=10.0,
    )


def push_consumer(t: Target, group: str, topic: str, expression: str | MessageSelector, listener: Any) -> PushConsumer:
    consumer = PushConsumer(
        group, config=fast_config(t), consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, **FAST
    )
    consumer.subscribe(topic, expression)
    consumer.register_message_listener(listener)
    return consumer


def collector(got: list[MessageExt]) -> Any:
    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        got.extend(msgs)
        return OK

    return listener


async def committed_offset(t: Target, group: str, mq: MessageQueue) -> int | None:
    """QUERY_CONSUMER_OFFSET straight to the broker (None: nothing committed)."""
    async with Admin(t.namesrv_addr) as admin:
        try:
            return await rpc.query_consumer_offset(admin.runtime.pool, t.broker_addr, group, mq, 5.0)
        except BrokerError:
            return None


async def broker_offsets_reach(t: Target, group: str, mqs: list[MessageQueue], offset: int) -> None:
    async def reached() -> bool:
        return all([await committed_offset(t, group, mq) == offset for mq in mqs])

    await wait_until(reached, timeout=30, interval=0.5, what=f"committed offsets {offset} of {mqs}")


async def send_spaced(p: Producer, msgs: list[Message], queue: MessageQueue | None = None) -> list[Any]:
    """Send one by one; each message is stored at a later millisecond than the one before (the
    next send starts only once the wall clock has passed the previous send's answer)."""
    out = []
    for m in msgs:
        r = await p.send(m, queue=queue) if queue is not None else await p.send(m)
        out.append(r)
        done = now_ms()
        await wait_until(lambda done=done: now_ms() > done, timeout=5, interval=0.001, what="next millisecond")
    return out


# ------------------------------------------------------------------------------ SQL92 filter


#: name -> (properties, tag) of the messages of the SQL92 test, sent in this order to one queue.
SQL_MESSAGES: dict[str, tuple[dict[str, str], str]] = {
    "m0": ({"a": "1", "region": "eu"}, "TagA"),
    "m1": ({"a": "3", "region": "us", "x": "1"}, "TagB"),
    "m2": ({"a": "5", "region": "cn"}, "TagA"),
    "m3": ({"a": "6", "region": "eu", "x": "2"}, "TagA"),
    "m4": ({"region": "eu", "x": "3"}, "TagB"),
    "m5": ({"a": "abc", "region": "us"}, "TagA"),  # a number expected: Java's evaluation throws -> no match
    "m6": ({"a": "2.5", "region": "eu"}, "TagA"),  # Long/Integer.valueOf("2.5") throws -> no match
    "m7": ({"a": "0", "region": "us"}, "TagA"),
    "m8": ({"a": "4", "region": "EU", "x": "4"}, "TagB"),  # IN is case-sensitive
}

#: selector -> the names it must deliver (Java's SQL92 semantics: properties are strings,
#: converted to the constant's number type; an absent property is NULL; AND/OR short-circuit).
SQL_SELECTORS: dict[str, set[str]] = {
    "a BETWEEN 1 AND 5 AND region IN ('eu','us')": {"m0", "m1"},
    "x IS NULL": {"m0", "m2", "m5", "m6", "m7"},
    "region = 'eu'": {"m0", "m3", "m4", "m6"},
    "x IS NOT NULL AND x > 2": {"m4", "m8"},
    "TAGS = 'TagB' AND a > 3 OR region = 'cn'": {"m2", "m8"},
    "region NOT IN ('eu', 'us') AND a <> 6": {"m2", "m8"},
}


async def test_sql92_property_filter(target: Target) -> None:
    """One PushConsumer per SQL92 selector (each its own group) over the same 9 messages of one
    queue: once a consumer's offset has reached the end of the queue, the delivered set is
    exactly the matching set, each message once, with its properties intact."""
    await _sql92_property_filter(target)


async def _sql92_property_filter(target: Target) -> None:
    topic = unique("Sql")
    await create_topic_on(target, topic, 1)
    mq = MessageQueue(topic, target.broker_name, 0)
    async with Producer(unique("pg"), namesrv_addr=target.namesrv_addr) as p:
        sent = {}
        for name, (props, tag) in SQL_MESSAGES.items():
            r = await p.send(Message.build(topic, name, tags=tag, properties=props), queue=mq)
            sent[name] = r.msg_id
    got: dict[str, list[MessageExt]] = {sql: [] for sql in SQL_SELECTORS}
    consumers = [
        push_consumer(target, unique("cgsql"), topic, MessageSelector.by_sql(sql), collector(got[sql]))
        for sql in SQL_SELECTORS
    ]
    try:
        for c in consumers:
            await c.start()
        for c, sql in zip(consumers, SQL_SELECTORS, strict=True):
            await wait_until(
                lambda c=c: c.committed_offsets().get(mq) == len(SQL_MESSAGES),
                timeout=60,
                what=f"offset of {sql!r} at the end",
            )
    finally:
        for c in consumers:
            await c.close()
    for sql, expected in SQL_SELECTORS.items():
        names = Counter(m.body.decode() for m in got[sql])
        assert names == Counter(expected), (target.kind, sql, names)
        for m in got[sql]:
            props, tag = SQL_MESSAGES[m.body.decode()]
            assert m.msg_id == sent[m.body.decode()] and m.tags == tag
            assert {k: m.properties.get(k) for k in props} == props


#: Selectors that do not compile, with what Java's parser says.
BAD_SQL = [
    "a >",  # syntax error
    "region = 'eu",  # unterminated string
    "region > 'eu'",  # "Value 'eu' cannot be compared." (ComparisonExpression.checkLessThanOperand)
    "a BETWEEN 5 AND 1",  # "Illegal values of between, left value(5) must less than or equal to right value(1)"
]


async def test_sql92_invalid_expression_rejected(target: Target) -> None:
    """A selector that does not compile: ``start()`` fails with SUBSCRIPTION_PARSE_FAILED (23), the
    broker's answer to CHECK_CLIENT_CONFIG (``ClientManageProcessor.checkClientConfig``), as the
    Java client's ``start()`` does (``MQClientInstance.checkClientInBroker``)."""
    topic = unique("SqlBad")
    await create_topic_on(target, topic, 1)
    for sql in BAD_SQL:
        consumer = push_consumer(target, unique("cgbad"), topic, MessageSelector.by_sql(sql), collector([]))
        with pytest.raises(SubscriptionError) as info:
            await consumer.start()
        assert info.value.response_code == ResponseCode.SUBSCRIPTION_PARSE_FAILED, (sql, info.value)
        await consumer.close()


# ------------------------------------------------------------------------------ reset offset


async def test_reset_offset_by_timestamp_running_consumer(target: Target) -> None:
    """``Admin.reset_offset_by_timestamp`` to the store time of the 6th message of a queue while the
    consumer runs: the broker answers the new offset table {q: 5} and the running consumer
    consumes messages 5..9 a second time (and 0..4 not again), without a restart; afterwards the
    committed offset is back at 10. Apache 4.9.7 delivers the reset as RESET_CONSUMER_CLIENT_OFFSET
    to the client (``Broker2Client.resetOffset``); 5.3.3 (``useServerSideResetOffset``) and
    rocketpipe reset server-side, so the client's ``reset_offset`` is not called there."""
    topic, group = unique("Reset"), unique("cgreset")
    await create_topic_on(target, topic, 1)
    mq = MessageQueue(topic, target.broker_name, 0)
    got: list[MessageExt] = []
    consumer = push_consumer(target, group, topic, "*", collector(got))
    client_resets: list[tuple[str, dict[MessageQueue, int]]] = []
    original_reset = consumer.reset_offset

    async def spy_reset(topic_: str, table: dict[MessageQueue, int]) -> None:
        client_resets.append((topic_, dict(table)))
        await original_reset(topic_, table)

    consumer.reset_offset = spy_reset  # type: ignore[method-assign]
    async with Producer(unique("pg"), namesrv_addr=target.namesrv_addr) as p, consumer:
        first = await send_spaced(p, [Message.build(topic, f"a{i}") for i in range(5)], mq)
        await wait_until(lambda: len(got) == 5, timeout=40, what="first 5")
        second = await send_spaced(p, [Message.build(topic, f"b{i}") for i in range(5)], mq)
        await wait_until(lambda: len(got) == 10, timeout=40, what="second 5")
        await broker_offsets_reach(target, group, [mq], 10)
        b0 = next(m for m in got if m.body == b"b0")
        assert b0.queue_offset == 5 and b0.store_timestamp > max(
            m.store_timestamp for m in got if m.body.startswith(b"a")
        )
        async with Admin(target.namesrv_addr) as admin:
            table = await admin.reset_offset_by_timestamp(topic, group, b0.store_timestamp, True)
        assert table == {mq: 5}
        await wait_until(lambda: len(got) == 15, timeout=60, what="5..9 consumed again")
        await wait_until(lambda: consumer.committed_offsets().get(mq) == 10, timeout=30, what="offset back at 10")
        await broker_offsets_reach(target, group, [mq], 10)
    ids = Counter(m.msg_id for m in got)
    assert ids == Counter({r.msg_id: 1 for r in first} | {r.msg_id: 2 for r in second})
    assert sorted(m.queue_offset for m in got[10:]) == [5, 6, 7, 8, 9]
    if target.kind == "apache-4":
        assert client_resets == [(topic, {mq: 5})]
    else:
        assert client_resets == []


async def test_reset_offset_by_timestamp_errors(target: Target) -> None:
    """Error answers of a reset: an unknown topic has no route (TopicNotExistError from the name
    server, no broker asked); a group that never consumed the topic: 4.9.7 answers SYSTEM_ERROR
    "THe consumer group <g> not exist" (``Broker2Client.resetOffset``: no committed offset),
    5.3.3 and rocketpipe SUBSCRIPTION_GROUP_NOT_EXIST "Group g does not exist"
    (``resetOffsetInner``: no subscription group config)."""
    topic, group = unique("ResetErr"), unique("cgnever")
    await create_topic_on(target, topic, 2)
    async with Admin(target.namesrv_addr) as admin:
        with pytest.raises(TopicNotExistError):
            await admin.reset_offset_by_timestamp(unique("NoSuchTopic"), group, -1)
        with pytest.raises(BrokerError) as info:
            await admin.reset_offset_by_timestamp(topic, group, -1)
    if target.kind == "apache-4":
        assert info.value.response_code == ResponseCode.SYSTEM_ERROR
        assert info.value.remark == f"THe consumer group <{group}> not exist"
    else:
        assert info.value.response_code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
        assert info.value.remark == f"Group {group} does not exist"


# ------------------------------------------------------------------------------ broker -> client callbacks


async def test_consumer_running_info_via_broker(target: Target) -> None:
    """``Admin.get_consumer_running_info`` (GET_CONSUMER_RUNNING_INFO to the broker, forwarded to the
    client by ``AdminBrokerProcessor.callConsumer``): the consumer's settings, its subscriptions
    (topic + ``%RETRY%<group>``), the process queues it holds with their committed offsets, and
    non-zero pull / consume-OK TPS for the topic after consuming; ``jstack=True`` adds a thread
    dump; an unknown client id is answered SYSTEM_ERROR "The Consumer <g> <id> not online" by
    the broker itself."""
    topic, group = unique("RunInfo"), unique("cgrun")
    await create_topic_on(target, topic, 2)
    got: list[MessageExt] = []
    consumer = push_consumer(target, group, topic, "TagA || TagB", collector(got))
    async with Producer(unique("pg"), namesrv_addr=target.namesrv_addr) as p, consumer:
        for i in range(10):
            await p.send(
                Message.build(topic, f"r{i}", tags="TagA"), queue=MessageQueue(topic, target.broker_name, i % 2)
            )
        await wait_until(lambda: len(got) == 10, timeout=40, what="10 consumed")
        mqs = [MessageQueue(topic, target.broker_name, q) for q in (0, 1)]
        await wait_until(
            lambda: all(consumer.committed_offsets().get(mq) == 5 for mq in mqs), timeout=20, what="offsets 5"
        )
        async with Admin(target.namesrv_addr) as admin:
            info = await admin.get_consumer_running_info(group, consumer.client_id)
            with_stack = await admin.get_consumer_running_info(group, consumer.client_id, jstack=True)
            with pytest.raises(BrokerError) as err:
                await admin.get_consumer_running_info(group, "127.0.0.1@nobody")
    assert err.value.response_code == ResponseCode.SYSTEM_ERROR
    assert err.value.remark == f"The Consumer <{group}> <127.0.0.1@nobody> not online"
    retry = f"%RETRY%{group}"
    props = info.properties
    assert props["PROP_CONSUME_TYPE"] == "CONSUME_PASSIVELY"
    assert props["PROP_CONSUMEORDERLY"] == "false"
    assert props["PROP_NAMESERVER_ADDR"] == target.namesrv_addr
    assert props["consumerGroup"] == group and props["messageModel"] == "CLUSTERING"
    assert props["consumeFromWhere"] == "CONSUME_FROM_FIRST_OFFSET"
    assert {s.topic: s.sub_string for s in info.subscription_set} == {topic: "TagA || TagB", retry: "*"}
    assert {s.topic: s.tags_set for s in info.subscription_set}[topic] == {"TagA", "TagB"}
    topic_queues = {mq: pq for mq, pq in info.mq_table.items() if mq.topic == topic}
    assert set(topic_queues) == set(mqs)
    assert {mq.topic for mq in info.mq_table} == {topic, retry}
    for pq in topic_queues.values():
        assert pq["commitOffset"] == 5 and pq["droped"] is False and pq["cachedMsgCount"] == 0
        assert pq["lastPullTimestamp"] > 0
    status = info.status_table[topic]
    assert status["consumeOKTPS"] > 0 and status["pullTPS"] > 0 and status["consumeRT"] >= 0
    assert status["consumeFailedTPS"] == 0 and status["consumeFailedMsgs"] == 0
    assert set(info.status_table) == {topic, retry}
    assert info.jstack is None
    assert with_stack.jstack is not None and len(with_stack.jstack) > 100


async def test_consume_message_directly_via_broker(target: Target) -> None:
    """``Admin.consume_message_directly`` (CONSUME_MESSAGE_DIRECTLY to the message's store host,
    which attaches the stored record and forwards it to the client): the listener gets that one
    message again (same msg id, body, queue offset) and its outcome comes back as CR_SUCCESS /
    CR_LATER / CR_THROW_EXCEPTION (remark = the exception); nothing is sent back and the
    committed offset does not move; an unknown client id gives SYSTEM_ERROR "not online"."""
    topic, group = unique("Direct"), unique("cgdirect")
    await create_topic_on(target, topic, 1)
    mq = MessageQueue(topic, target.broker_name, 0)
    got: list[MessageExt] = []
    mode = {"value": "ok"}

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        got.extend(msgs)
        if mode["value"] == "later":
            return LATER
        if mode["value"] == "raise":
            raise RuntimeError("boom from the listener")
        return OK

    consumer = push_consumer(target, group, topic, "*", listener)
    async with Producer(unique("pg"), namesrv_addr=target.namesrv_addr) as p, consumer:
        results = [await p.send(Message.build(topic, f"d{i}", tags="T", keys=f"dk{i}"), queue=mq) for i in range(3)]
        await wait_until(lambda: len(got) == 3, timeout=40, what="3 consumed")
        await broker_offsets_reach(target, group, [mq], 3)
        r1 = results[1]
        async with Admin(target.namesrv_addr) as admin:
            ok = await admin.consume_message_directly(group, consumer.client_id, topic, r1.offset_msg_id)
            assert len(got) == 4
            mode["value"] = "later"
            later = await admin.consume_message_directly(group, consumer.client_id, topic, r1.offset_msg_id)
            mode["value"] = "raise"
            thrown = await admin.consume_message_directly(group, consumer.client_id, topic, results[2].offset_msg_id)
            mode["value"] = "ok"
            with pytest.raises(BrokerError) as err:
                await admin.consume_message_directly(group, "127.0.0.1@nobody", topic, r1.offset_msg_id)
        assert consumer.committed_offsets().get(mq) == 3
        assert await committed_offset(target, group, mq) == 3
    assert ok.consume_result is CMResult.CR_SUCCESS and ok.order is False and ok.auto_commit is True
    assert later.consume_result is CMResult.CR_LATER
    assert thrown.consume_result is CMResult.CR_THROW_EXCEPTION and "boom from the listener" in (thrown.remark or "")
    assert ok.spent_time_mills >= 0
    assert err.value.response_code == ResponseCode.SYSTEM_ERROR
    assert err.value.remark == f"The Consumer <{group}> <127.0.0.1@nobody> not online"
    direct = got[3:]
    assert [m.body for m in direct] == [b"d1", b"d1", b"d2"]
    assert all(m.topic == topic and m.queue_id == 0 for m in direct)
    assert [m.msg_id for m in direct] == [r1.msg_id, r1.msg_id, results[2].msg_id]
    assert [m.queue_offset for m in direct] == [1, 1, 2]
    assert direct[0].keys == "dk1" and direct[0].tags == "T"
    # nothing was sent back: no retry topic records
    async with Admin(target.namesrv_addr) as admin:
        try:
            retry_queues = await admin.topic_queues(f"%RETRY%{group}")
        except Exception:
            retry_queues = []
        assert sum([await admin.max_offset(q) for q in retry_queues]) == 0


# ------------------------------------------------------------------------------ admin queries


async def _query_ids(admin: Admin, topic: str, key: str) -> set[str]:
    res = await admin.query_message(topic, key, 32, 0, 2**63 - 1)
    return {m.msg_id for m in res.message_list}


async def test_query_message_by_key_and_view_message(target: Target) -> None:
    """QUERY_MESSAGE (``queryMsgByKey``) returns exactly the messages carrying the key (one of
    several keys counts; another topic's message with the same key does not); an unknown key
    gives nothing. VIEW_MESSAGE_BY_ID of an offset msg id returns the stored message (topic,
    body, keys, tags, properties, queue id / offset, UNIQ_KEY); an offset with nothing stored
    is SYSTEM_ERROR."""
    topic, other = unique("Query"), unique("QueryOther")
    await create_topic_on(target, topic, 2)
    await create_topic_on(target, other, 1)
    k1, k2 = unique("k1"), unique("k2")
    async with Producer(unique("pg"), namesrv_addr=target.namesrv_addr) as p:
        a = await p.send(Message.build(topic, "a", tags="TA", keys=k1, properties={"p": "1"}))
        b = await p.send(Message.build(topic, "b", tags="TB", keys=["zz", k1]))
        c = await p.send(Message.build(topic, "c", keys=k2))
        d = await p.send(Message.build(other, "d", keys=k1))
    async with Admin(target.namesrv_addr) as admin:

        async def indexed() -> bool:
            return await _query_ids(admin, topic, k1) == {a.msg_id, b.msg_id}

        await wait_until(indexed, timeout=30, what="key index of k1")
        assert await _query_ids(admin, topic, k2) == {c.msg_id}
        assert await _query_ids(admin, other, k1) == {d.msg_id}
        assert await _query_ids(admin, topic, unique("nokey")) == set()
        res = await admin.query_message(topic, k1, 32, 0, 2**63 - 1)
        assert res.index_last_update_timestamp > 0
        assert sorted(m.body for m in res.message_list) == [b"a", b"b"]
        m = await admin.view_message(a.offset_msg_id, topic)
        assert (m.topic, m.body, m.keys, m.tags, m.properties.get("p")) == (topic, b"a", k1, "TA", "1")
        assert (m.queue_id, m.queue_offset) == (a.message_queue.queue_id, a.queue_offset)
        assert m.msg_id == a.msg_id and m.offset_msg_id == a.offset_msg_id
        assert m.store_host == decode_offset_msg_id(a.offset_msg_id)[0]
        mb = await admin.view_message(b.offset_msg_id)
        assert mb.keys == f"zz {k1}" and mb.body == b"b"
        host, offset = decode_offset_msg_id(d.offset_msg_id)
        with pytest.raises(BrokerError) as err:
            await admin.view_message(create_offset_msg_id(host, offset + 10**9))
        assert err.value.response_code == ResponseCode.SYSTEM_ERROR


async def test_topic_stats_and_consume_stats(target: Target) -> None:
    """GET_TOPIC_STATS_INFO: min 0 / max 3 per queue of a 3-queue topic with 3 messages each and
    the store time of each queue's last message; GET_CONSUME_STATS of the group that consumed
    them: broker offset 3, consumer offset 3, lag 0, last timestamp = that store time; after 2
    more messages on queue 1 with the consumer gone: broker offset 5 there, lag 2. The 4.9.7
    broker has no pull offset (0); 5.3.3 and rocketpipe report max(consumer, pull offset)."""
    topic, group = unique("Stats"), unique("cgstats")
    await create_topic_on(target, topic, 3)
    mqs = [MessageQueue(topic, target.broker_name, q) for q in range(3)]
    before = now_ms()
    async with Producer(unique("pg"), namesrv_addr=target.namesrv_addr) as p:
        for i in range(9):
            await p.send(Message.build(topic, f"s{i}"), queue=mqs[i % 3])
        after = now_ms()
        async with Admin(target.namesrv_addr) as admin:
            stats = await admin.examine_topic_stats(topic)
            assert set(stats.offset_table) == set(mqs)
            for mq in mqs:
                o = stats.offset_table[mq]
                assert (o.min_offset, o.max_offset) == (0, 3)
                assert before <= o.last_update_timestamp <= after
            with pytest.raises(TopicNotExistError):
                await admin.examine_topic_stats(unique("NoSuchTopic"))
            got: list[MessageExt] = []
            async with push_consumer(target, group, topic, "*", collector(got)):
                await wait_until(lambda: len(got) == 9, timeout=40, what="9 consumed")
                await broker_offsets_reach(target, group, mqs, 3)
                cs = await admin.examine_consume_stats(group, topic)
            assert set(cs.offset_table) == set(mqs)
            for mq in mqs:
                w = cs.offset_table[mq]
                assert (w.broker_offset, w.consumer_offset) == (3, 3)
                assert w.last_timestamp == stats.offset_table[mq].last_update_timestamp
                assert w.pull_offset == (0 if target.kind == "apache-4" else 3)
            assert cs.compute_total_diff() == 0
            await p.send(Message.build(topic, "late-1"), queue=mqs[1])
            await p.send(Message.build(topic, "late-2"), queue=mqs[1])
            cs2 = await admin.examine_consume_stats(group, topic)
            assert {mq.queue_id: (w.broker_offset, w.consumer_offset) for mq, w in cs2.offset_table.items()} == {
                0: (3, 3),
                1: (5, 3),
                2: (3, 3),
            }
            assert cs2.compute_total_diff() == 2
            # without a topic: every topic the group has offsets on (here: the topic; the retry
            # topic has no committed offset yet, so it is absent or at 0/0)
            cs3 = await admin.examine_consume_stats(group)
            assert {
                mq: (w.broker_offset, w.consumer_offset) for mq, w in cs3.offset_table.items() if mq.topic == topic
            } == {mq: (w.broker_offset, w.consumer_offset) for mq, w in cs2.offset_table.items()}
            assert all(
                (w.broker_offset, w.consumer_offset) == (0, 0)
                for mq, w in cs3.offset_table.items()
                if mq.topic != topic
            )


async def test_consumer_connection_list(target: Target) -> None:
    """GET_CONSUMER_CONNECTION_LIST (``examineConsumerConnectionInfo``): the running consumer's
    client id, language PYTHON and version, the group's consume type / model / from-where and its
    subscriptions (topic with its tags, ``%RETRY%<group>``); once it has left: CONSUMER_NOT_ONLINE."""
    topic, group = unique("Conn"), unique("cgconn")
    await create_topic_on(target, topic, 2)
    consumer = push_consumer(target, group, topic, "TagA || TagB", collector([]))
    async with Admin(target.namesrv_addr) as admin:
        async with consumer:
            cc = await admin.examine_consumer_connection_info(group)
            (conn,) = cc.connection_set
            assert conn.client_id == consumer.client_id
            assert conn.language == "PYTHON" and conn.version == CURRENT_VERSION
            assert conn.client_addr.startswith("127.0.0.1:")
            assert (cc.consume_type, cc.message_model, cc.consume_from_where) == (
                "CONSUME_PASSIVELY",
                "CLUSTERING",
                "CONSUME_FROM_FIRST_OFFSET",
            )
            assert set(cc.subscription_table) == {topic, f"%RETRY%{group}"}
            sd = cc.subscription_table[topic]
            assert (sd.sub_string, sd.tags_set, sd.expression_type) == ("TagA || TagB", {"TagA", "TagB"}, "TAG")
        with pytest.raises(BrokerError) as err:
            await admin.examine_consumer_connection_info(group)
    assert err.value.response_code == ResponseCode.CONSUMER_NOT_ONLINE


async def test_topic_list_and_cluster_info(target: Target) -> None:
    """GET_ALL_TOPIC_LIST_FROM_NAMESERVER lists a created topic and TBW102 (Apache: also the
    cluster's and the broker's own topics); GET_BROKER_CLUSTER_INFO names the cluster, the broker
    and its master address."""
    topic = unique("List")
    await create_topic_on(target, topic, 1)
    async with Admin(target.namesrv_addr) as admin:
        topics = await admin.fetch_all_topic_list()
        info = await admin.examine_broker_cluster_info()
    assert topic in topics
    # Java brokers also create topics named after their cluster and broker (clusterTopicEnable,
    # brokerTopicEnable); the embedded broker does not
    assert {"TBW102"} | ({cluster_name(target), target.broker_name} if target.is_apache else set()) <= topics
    assert target.broker_name in info.cluster_addr_table[cluster_name(target)]
    bd = info.broker_addr_table[target.broker_name]
    assert bd.broker_addrs == {0: target.broker_addr} and bd.cluster == cluster_name(target)


async def test_delete_topic(target: Target) -> None:
    """``delete_topic`` (``DefaultMQAdminExt.deleteTopic``: DELETE_TOPIC_IN_BROKER on the cluster's
    brokers, DELETE_TOPIC_IN_NAMESRV on the name servers): the topic leaves the name server's
    list and routes, and the broker no longer knows it (GET_TOPIC_STATS_INFO → TOPIC_NOT_EXIST)."""
    topic = unique("Del")
    await create_topic_on(target, topic, 2)
    async with Producer(unique("pg"), namesrv_addr=target.namesrv_addr) as p:
        await p.send(Message.build(topic, "x"))
    async with Admin(target.namesrv_addr) as admin:
        assert topic in await admin.fetch_all_topic_list()
        assert await admin.delete_topic(topic, cluster_name(target)) == [target.broker_addr]
        assert topic not in await admin.fetch_all_topic_list()
        with pytest.raises(TopicNotExistError):
            await admin.topic_route(topic)
        with pytest.raises(TopicNotExistError):
            await admin.examine_topic_stats(topic)
        resp = await admin.runtime.pool.request(
            target.broker_addr, RemotingCommand.request(RequestCode.GET_TOPIC_STATS_INFO, {"topic": topic}), 5.0
        )
        assert resp.code == ResponseCode.TOPIC_NOT_EXIST
