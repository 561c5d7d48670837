"""Broker -> client requests over real TCP, sent on the broker's own connection to the client:
RESET_CONSUMER_CLIENT_OFFSET (220), GET_CONSUMER_RUNNING_INFO (307), CONSUME_MESSAGE_DIRECTLY (309).

The embedded broker implements INVOKE_BROKER_TO_RESET_OFFSET server-side only (it does not
forward 220), so the tests play the broker's part with the connection the client opened."""

from __future__ import annotations

from rocketpipe import (
    Admin,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
)
from rocketpipe.client.consumer.orderly import ConsumeOrderlyContext, ConsumeOrderlyStatus
from rocketpipe.client.inbound import CMResult, ConsumeMessageDirectlyResult
from rocketpipe.protocol.bodies.admin import ResetOffsetBody
from rocketpipe.protocol.bodies.consumer import ConsumerRunningInfo
from rocketpipe.protocol.codes import RequestCode, ResponseCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.protocol.headers.consumer import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    ResetOffsetRequestHeader,
)
from rocketpipe.protocol.message import MessageQueue, encode_record
from rocketpipe.testing.cluster import LocalCluster
from rocketpipe.transport.connection import Connection
from waiting import wait_until

OK = ConsumeConcurrentlyStatus.CONSUME_SUCCESS


def client_conn(c: LocalCluster, group: str) -> Connection:
    chans = c.broker.clients.channels_of(group)
    assert len(chans) == 1
    return chans[0]  # type: ignore[return-value]


def reset_cmd(group: str, topic: str, table: dict[MessageQueue, int], *, oneway: bool) -> RemotingCommand:
    h = ResetOffsetRequestHeader(group=group, topic=topic, timestamp=0, is_force=True)
    return RemotingCommand.request(
        RequestCode.RESET_CONSUMER_CLIENT_OFFSET, h.to_ext_fields(), ResetOffsetBody(table).encode(), oneway=oneway
    )


async def setup(cluster: LocalCluster, topic: str, queues: int, n: int) -> None:
    async with Admin(cluster.namesrv_addr) as admin:
        await admin.create_topic(topic, queues)
    async with Producer("pg-reset", namesrv_addr=cluster.namesrv_addr) as p:
        for i in range(n):
            await p.send(Message.build(topic, f"m{i}"))


async def test_reset_offset_220_rewinds_without_restart(cluster: LocalCluster) -> None:
    topic, group = "ResetT", "cg-reset"
    await setup(cluster, topic, 2, 10)
    got: list[tuple[int, int]] = []
    consumer = PushConsumer(
        group, namesrv_addr=cluster.namesrv_addr, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    )
    consumer.subscribe(topic)

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        got.extend((m.queue_id, m.queue_offset) for m in msgs)
        return OK

    consumer.register_message_listener(listener)
    broker = cluster.broker.config.broker_name
    q0, q1 = MessageQueue(topic, broker, 0), MessageQueue(topic, broker, 1)
    async with consumer:
        await wait_until(lambda: len(got) == 10, timeout=20, what="first pass")
        await wait_until(
            lambda: consumer.committed_offsets().get(q0) == 5 and consumer.committed_offsets().get(q1) == 5, timeout=10
        )
        # the broker's call is oneway; rewind queue 0 to 2 and queue 1 to 0
        await client_conn(cluster, group).oneway(reset_cmd(group, topic, {q0: 2, q1: 0}, oneway=True))
        await wait_until(lambda: len(got) == 18, timeout=20, what="3 + 5 messages consumed again")
        await wait_until(
            lambda: (
                cluster.broker.offsets.query(group, topic, 0) == 5
                and cluster.broker.offsets.query(group, topic, 1) == 5
            ),
            timeout=15,
            what="broker offsets back at the end",
        )
        assert consumer.committed_offsets()[q0] == 5
    assert sorted(got[:10]) == [(q, o) for q in (0, 1) for o in range(5)]
    assert sorted(got[10:]) == [(0, 2), (0, 3), (0, 4)] + [(1, o) for o in range(5)]


async def test_reset_offset_orderly_and_forward_skip(cluster: LocalCluster) -> None:
    topic, group = "ResetOrd", "cg-reset-ord"
    await setup(cluster, topic, 1, 6)
    seen: list[int] = []
    consumer = PushConsumer(
        group, namesrv_addr=cluster.namesrv_addr, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    )
    consumer.subscribe(topic)

    async def listener(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
        seen.extend(m.queue_offset for m in msgs)
        return ConsumeOrderlyStatus.SUCCESS

    consumer.register_message_listener(listener, orderly=True)
    mq = MessageQueue(topic, cluster.broker.config.broker_name, 0)
    async with consumer:
        await wait_until(lambda: seen == list(range(6)), timeout=20, what="first pass")
        resp = await client_conn(cluster, group).request(reset_cmd(group, topic, {mq: 3}, oneway=False), 10)
        assert resp.code == ResponseCode.SUCCESS
        await wait_until(lambda: seen == [*list(range(6)), 3, 4, 5], timeout=20, what="replay from 3 in order")
        assert mq in consumer.locked_queues()
        # a reset of a queue this consumer does not hold changes nothing
        other = MessageQueue(topic, cluster.broker.config.broker_name, 7)
        resp = await client_conn(cluster, group).request(reset_cmd(group, topic, {other: 0}, oneway=False), 10)
        assert resp.code == ResponseCode.SUCCESS and other not in consumer.committed_offsets()


async def test_running_info_307_and_consume_directly_309(cluster: LocalCluster) -> None:
    topic, group = "InfoT", "cg-info"
    await setup(cluster, topic, 2, 4)
    direct: list[str] = []
    consumer = PushConsumer(
        group, namesrv_addr=cluster.namesrv_addr, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    )
    consumer.subscribe(topic, "*")

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        if msgs[0].body == b"boom":
            raise ValueError("bad body")
        direct.append(msgs[0].body.decode())
        return OK

    consumer.register_message_listener(listener)
    async with consumer:
        await wait_until(
            lambda: (
                sum(
                    consumer.committed_offsets().get(MessageQueue(topic, cluster.broker.config.broker_name, q), 0)
                    for q in (0, 1)
                )
                == 4
            ),
            timeout=20,
        )
        conn = client_conn(cluster, group)
        h = GetConsumerRunningInfoRequestHeader(consumer_group=group, client_id=consumer.client_id, jstack_enable=True)
        resp = await conn.request(RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, h.to_ext_fields()), 10)
        assert resp.code == ResponseCode.SUCCESS
        info = ConsumerRunningInfo.decode(bytes(resp.body))
        assert info.properties["PROP_CONSUMEORDERLY"] == "false"
        assert info.properties["consumerGroup"] == group and info.properties["messageModel"] == "CLUSTERING"
        assert info.properties["PROP_NAMESERVER_ADDR"] == cluster.namesrv_addr
        assert int(info.properties["PROP_CONSUMER_START_TIMESTAMP"]) > 0
        assert {s.topic for s in info.subscription_set} == {topic, f"%RETRY%{group}"}
        table = {mq.queue_id: v for mq, v in info.mq_table.items() if mq.topic == topic}
        assert set(table) == {0, 1} and all(v["commitOffset"] == 2 and v["droped"] is False for v in table.values())
        assert topic in info.status_table
        assert info.jstack and "MainThread" in info.jstack
        # unknown group
        bad = GetConsumerRunningInfoRequestHeader(consumer_group="nope", client_id=consumer.client_id)
        resp = await conn.request(
            RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, bad.to_ext_fields()), 10
        )
        assert resp.code == ResponseCode.SYSTEM_ERROR and "nope" in (resp.remark or "")

        before = consumer.committed_offsets()
        direct.clear()
        for body, expected in ((b"direct", CMResult.CR_SUCCESS), (b"boom", CMResult.CR_THROW_EXCEPTION)):
            record = encode_record(topic=topic, body=body, properties={}, queue_id=1, queue_offset=99)
            dh = ConsumeMessageDirectlyResultRequestHeader(
                consumer_group=group,
                client_id=consumer.client_id,
                msg_id="X",
                broker_name=cluster.broker.config.broker_name,
            )
            resp = await conn.request(
                RemotingCommand.request(RequestCode.CONSUME_MESSAGE_DIRECTLY, dh.to_ext_fields(), record), 10
            )
            assert resp.code == ResponseCode.SUCCESS
            result = ConsumeMessageDirectlyResult.decode(bytes(resp.body))
            assert result.consume_result is expected and result.order is False and result.auto_commit is True
            if expected is CMResult.CR_THROW_EXCEPTION:
                assert "bad body" in (result.remark or "")
        assert direct == ["direct"]
        assert consumer.committed_offsets() == before  # no offset effect
