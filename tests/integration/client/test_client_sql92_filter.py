"""SQL92 subscriptions end to end: PushConsumer / LitePullConsumer / raw pulls against local_cluster."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rocketpipe import (
    Admin,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    Message,
    MessageExt,
    MessageQueue,
    Producer,
    PullStatus,
    PushConsumer,
)
from rocketpipe.client import MessageSelector, rpc
from rocketpipe.client.consumer.lite_pull import LitePullConsumer
from rocketpipe.errors import BrokerError, SubscriptionError
from rocketpipe.protocol import sysflag as sf
from rocketpipe.protocol.codes import ResponseCode
from rocketpipe.protocol.message import decode_records
from rocketpipe.testing.cluster import LocalCluster, local_cluster
from waiting import wait_until

FIRST = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
OK = ConsumeConcurrentlyStatus.CONSUME_SUCCESS
SQL = "a > 5 AND TAGS IN ('x','y')"
TAGS = ("x", "y", "z")


@pytest.fixture
async def filter_cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with local_cluster(tmp_path / "store", enable_property_filter=True) as c:
        yield c


@pytest.fixture
async def plain_cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with local_cluster(tmp_path / "store-plain") as c:
        yield c


async def make_topic(c: LocalCluster, topic: str, queues: int = 4) -> list[MessageQueue]:
    async with Admin(c.namesrv_addr) as admin:
        await admin.create_topic(topic, queues)
        return await admin.topic_queues(topic)


async def send_mix(c: LocalCluster, topic: str, n: int = 60) -> set[str]:
    """Send ``n`` messages with a = i % 10, tag cycling x/y/z (one without ``a``); return the bodies matching SQL."""
    want: set[str] = set()
    async with Producer("sql-pg", namesrv_addr=c.namesrv_addr) as p:
        for i in range(n):
            tag = TAGS[i % 3]
            props = {"a": str(i % 10)} if i % 7 else {}
            body = f"m-{i}"
            await p.send(Message.build(topic, body, tags=tag, properties=props))
            if props and int(props["a"]) > 5 and tag in ("x", "y"):
                want.add(body)
    return want


def collecting(
    c: LocalCluster, group: str, topic: str, selector: MessageSelector | str, **kw: object
) -> tuple[PushConsumer, list[MessageExt]]:
    got: list[MessageExt] = []
    consumer = PushConsumer(group, namesrv_addr=c.namesrv_addr, consume_from_where=FIRST)
    if isinstance(selector, MessageSelector):
        consumer.subscribe(topic, selector)
    else:
        consumer.subscribe(topic, selector, **kw)  # type: ignore[arg-type]

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        got.extend(msgs)
        return OK

    consumer.register_message_listener(listener)
    return consumer, got


async def test_push_consumer_gets_exactly_the_matching_messages(filter_cluster: LocalCluster) -> None:
    queues = await make_topic(filter_cluster, "SqlPush")
    want = await send_mix(filter_cluster, "SqlPush")
    assert 5 < len(want) < 30
    consumer, got = collecting(filter_cluster, "cg-sql", "SqlPush", MessageSelector.by_sql(SQL))
    async with consumer, Admin(filter_cluster.namesrv_addr) as admin:
        await wait_until(lambda: len(got) >= len(want), timeout=20, what="matching messages")

        async def committed_to_end() -> bool:
            offs = consumer.committed_offsets()
            for mq in queues:
                if offs.get(mq, -1) < await admin.max_offset(mq):
                    return False
            return True

        # filtered-out ranges are skipped and committed too
        await wait_until(committed_to_end, timeout=20, what="offsets at queue ends")
        info = filter_cluster.broker.clients.consumer_group("cg-sql")
        assert info is not None and info.subscriptions["SqlPush"].expression_type == "SQL92"
        assert filter_cluster.broker.consumer_filters.get("SqlPush", "cg-sql") is not None
    bodies = [m.body.decode() for m in got]
    assert sorted(bodies) == sorted(want)  # exactly, and each once
    for m in got:
        assert int(m.properties["a"]) > 5 and m.tags in ("x", "y")


async def test_push_consumer_expression_type_keyword(filter_cluster: LocalCluster) -> None:
    await make_topic(filter_cluster, "SqlPushKw", 2)
    want = await send_mix(filter_cluster, "SqlPushKw", 30)
    consumer, got = collecting(filter_cluster, "cg-sql-kw", "SqlPushKw", SQL, expression_type="SQL92")
    async with consumer:
        await wait_until(lambda: len(got) >= len(want), timeout=20, what="matching messages")
    assert sorted(m.body.decode() for m in got) == sorted(want)


async def test_push_consumer_sql92_rejected_when_filter_disabled(plain_cluster: LocalCluster) -> None:
    await make_topic(plain_cluster, "SqlOff", 2)
    consumer, _ = collecting(plain_cluster, "cg-sql-off", "SqlOff", MessageSelector.by_sql("a > 5"))
    with pytest.raises(BrokerError) as info:
        await consumer.start()
    assert info.value.response_code == ResponseCode.SYSTEM_ERROR
    assert "does not support" in str(info.value) and "SQL92" in str(info.value)
    await consumer.close()


async def test_push_consumer_bad_sql_fails_to_start(filter_cluster: LocalCluster) -> None:
    await make_topic(filter_cluster, "SqlBad", 2)
    consumer, _ = collecting(filter_cluster, "cg-sql-bad", "SqlBad", MessageSelector.by_sql("a > 'x'"))
    with pytest.raises(SubscriptionError) as info:
        await consumer.start()
    assert info.value.response_code == ResponseCode.SUBSCRIPTION_PARSE_FAILED


async def test_lite_pull_consumer_sql92(filter_cluster: LocalCluster) -> None:
    await make_topic(filter_cluster, "SqlLite", 2)
    want = await send_mix(filter_cluster, "SqlLite", 40)
    got: list[MessageExt] = []
    async with LitePullConsumer("lp-sql", namesrv_addr=filter_cluster.namesrv_addr, consume_from_where=FIRST) as c:
        c.subscribe("SqlLite", SQL, expression_type="SQL92")

        async def enough() -> bool:
            got.extend(await c.poll(0.2))
            return len(got) >= len(want)

        await wait_until(enough, timeout=20, what="matching messages")
    assert sorted(m.body.decode() for m in got) == sorted(want)


async def _raw_pull(
    c: LocalCluster, admin: Admin, mq: MessageQueue, offset: int, sql: str, *, max_nums: int = 32
) -> rpc.PullRaw:
    return await rpc.pull_message(
        admin.runtime.pool,
        c.broker_addr,
        consumer_group="raw-sql",
        mq=mq,
        queue_offset=offset,
        max_msg_nums=max_nums,
        sys_flag=sf.build_pull_sys_flag(commit_offset=False, suspend=False, subscription=True),
        commit_offset=0,
        suspend_timeout=0,
        subscription=sql,
        sub_version=0,
        expression_type="SQL92",
        timeout=5,
    )


async def test_raw_pull_status_rules(filter_cluster: LocalCluster) -> None:
    (mq,) = await make_topic(filter_cluster, "SqlRaw", 1)
    async with Producer("sql-pg", namesrv_addr=filter_cluster.namesrv_addr) as p:
        for i in range(10):
            await p.send(Message.build("SqlRaw", f"m-{i}", tags="x", properties={"a": str(i)}))
    async with Admin(filter_cluster.namesrv_addr) as admin:
        r = await _raw_pull(filter_cluster, admin, mq, 0, "a >= 7")
        assert r.status is PullStatus.FOUND and r.next_begin_offset == 10
        assert [m.body for m in decode_records(r.body)] == [b"m-7", b"m-8", b"m-9"]
        # max_msg_nums counts matching messages; next offset is one past the last scanned entry
        r = await _raw_pull(filter_cluster, admin, mq, 0, "a >= 2", max_nums=2)
        assert [m.body for m in decode_records(r.body)] == [b"m-2", b"m-3"] and r.next_begin_offset == 4
        # nothing matches in range: PULL_RETRY_IMMEDIATELY with the offset advanced
        r = await _raw_pull(filter_cluster, admin, mq, 0, "a > 100")
        assert r.status is PullStatus.NO_MATCHED_MSG and r.next_begin_offset == 10
        # caught up
        r = await _raw_pull(filter_cluster, admin, mq, 10, "a > 100")
        assert r.status is PullStatus.NO_NEW_MSG
        with pytest.raises(SubscriptionError) as info:
            await _raw_pull(filter_cluster, admin, mq, 0, "a >")
        assert info.value.response_code == ResponseCode.SUBSCRIPTION_PARSE_FAILED


async def test_raw_pull_sql92_disabled_is_system_error(plain_cluster: LocalCluster) -> None:
    (mq,) = await make_topic(plain_cluster, "SqlRawOff", 1)
    async with Admin(plain_cluster.namesrv_addr) as admin:
        with pytest.raises(BrokerError) as info:
            await _raw_pull(plain_cluster, admin, mq, 0, "a > 1")
    assert info.value.response_code == ResponseCode.SYSTEM_ERROR
    assert "does not support consumer to filter message by SQL92" in str(info.value)


async def _heartbeat(c: LocalCluster, admin: Admin, group: str, sd: object) -> None:
    from rocketpipe.protocol.bodies.heartbeat import ConsumerData, HeartbeatData

    data = HeartbeatData(
        client_id="sql-raw@1", consumer_data_set=[ConsumerData(group_name=group, subscription_data_set=[sd])]
    )  # type: ignore[list-item]
    await rpc.heart_beat(admin.runtime.pool, c.broker_addr, data.encode(), 5)


async def _registered_pull(
    c: LocalCluster, admin: Admin, group: str, mq: MessageQueue, sub_version: int
) -> rpc.PullRaw:
    return await rpc.pull_message(
        admin.runtime.pool,
        c.broker_addr,
        consumer_group=group,
        mq=mq,
        queue_offset=0,
        max_msg_nums=32,
        sys_flag=sf.build_pull_sys_flag(commit_offset=False, suspend=False, subscription=False),
        commit_offset=0,
        suspend_timeout=0,
        subscription=None,
        sub_version=sub_version,
        expression_type="SQL92",
        timeout=5,
    )


async def test_heartbeat_registered_filter_data_rules(filter_cluster: LocalCluster) -> None:
    from rocketpipe.protocol.bodies.heartbeat import SubscriptionData

    (mq,) = await make_topic(filter_cluster, "SqlHb", 1)
    async with Producer("sql-pg", namesrv_addr=filter_cluster.namesrv_addr) as p:
        for i in range(4):
            await p.send(Message.build("SqlHb", f"m-{i}", properties={"a": str(i)}))
    async with Admin(filter_cluster.namesrv_addr) as admin:
        # a heartbeat with an SQL expression that does not compile registers no filter data
        await _heartbeat(
            filter_cluster, admin, "hb-bad", SubscriptionData.build("SqlHb", "a >", "SQL92", sub_version=5)
        )
        with pytest.raises(SubscriptionError) as info:
            await _registered_pull(filter_cluster, admin, "hb-bad", mq, 5)
        assert info.value.response_code == ResponseCode.FILTER_DATA_NOT_EXIST
        # a good one filters on the broker with the registered expression
        await _heartbeat(
            filter_cluster, admin, "hb-ok", SubscriptionData.build("SqlHb", "a >= 2", "SQL92", sub_version=5)
        )
        r = await _registered_pull(filter_cluster, admin, "hb-ok", mq, 5)
        assert [m.body for m in decode_records(r.body)] == [b"m-2", b"m-3"]
        # a pull announcing a newer subscription than the broker knows
        with pytest.raises(SubscriptionError) as info:
            await _registered_pull(filter_cluster, admin, "hb-ok", mq, 6)
        assert info.value.response_code == ResponseCode.SUBSCRIPTION_NOT_LATEST
        # subscription registry updated but filter data older -> FILTER_DATA_NOT_LATEST
        fd = filter_cluster.broker.consumer_filters.get("SqlHb", "hb-ok")
        assert fd is not None
        fd.client_version = 4
        with pytest.raises(SubscriptionError) as info:
            await _registered_pull(filter_cluster, admin, "hb-ok", mq, 5)
        assert info.value.response_code == ResponseCode.FILTER_DATA_NOT_LATEST


async def test_check_client_config_rules(filter_cluster: LocalCluster, plain_cluster: LocalCluster) -> None:
    from rocketpipe.protocol.bodies.heartbeat import SubscriptionData

    good = SubscriptionData.build("T", "a > 1", "SQL92")
    bad = SubscriptionData.build("T", "a >", "SQL92")
    tag = SubscriptionData.build("T", "x || y")
    async with Admin(filter_cluster.namesrv_addr) as admin:
        pool = admin.runtime.pool
        await rpc.check_client_config(pool, filter_cluster.broker_addr, "c@1", "g", good, 5)
        await rpc.check_client_config(pool, filter_cluster.broker_addr, "c@1", "g", tag, 5)
        with pytest.raises(SubscriptionError):
            await rpc.check_client_config(pool, filter_cluster.broker_addr, "c@1", "g", bad, 5)
        await rpc.check_client_config(pool, plain_cluster.broker_addr, "c@1", "g", tag, 5)
        with pytest.raises(BrokerError) as info:
            await rpc.check_client_config(pool, plain_cluster.broker_addr, "c@1", "g", good, 5)
        assert info.value.response_code == ResponseCode.SYSTEM_ERROR


async def test_raw_pull_respects_the_byte_cap(filter_cluster: LocalCluster) -> None:
    import os

    (mq,) = await make_topic(filter_cluster, "SqlBig", 1)
    async with Producer("sql-pg", namesrv_addr=filter_cluster.namesrv_addr) as p:
        for i in range(6):
            # odd ones are filtered out; even ones (~100 KB, incompressible) match
            await p.send(Message.build("SqlBig", os.urandom(100_000), properties={"a": str(i % 2)}))
    async with Admin(filter_cluster.namesrv_addr) as admin:
        r = await _raw_pull(filter_cluster, admin, mq, 0, "a = 0")
        got = decode_records(r.body)
        assert [m.queue_offset for m in got] == [0, 2]  # a third would pass 256 KiB
        assert r.next_begin_offset == 4  # the capped record is read again next time
        r = await _raw_pull(filter_cluster, admin, mq, r.next_begin_offset, "a = 0")
        assert [m.queue_offset for m in decode_records(r.body)] == [4] and r.next_begin_offset == 6
