"""Admin calls that go through the embedded broker (real TCP): GET_CONSUMER_RUNNING_INFO and
CONSUME_MESSAGE_DIRECTLY forwarded to the consumer client (``AdminBrokerProcessor.callConsumer``),
INVOKE_BROKER_TO_RESET_OFFSET, GET_CONSUME_STATS, GET_CONSUMER_CONNECTION_LIST, QUERY_MESSAGE,
VIEW_MESSAGE_BY_ID and GET_TOPIC_STATS_INFO through :class:`rocketpipe.Admin`.

The same calls against Apache RocketMQ 5.3.3 / 4.9.7: tests/interop/test_interop_client_admin.py.
"""

from __future__ import annotations

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
    PushConsumer,
)
from rocketpipe.client.inbound import CMResult
from rocketpipe.errors import BrokerError
from rocketpipe.protocol.codes import RequestCode, ResponseCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.testing.cluster import LocalCluster
from waiting import wait_until

OK = ConsumeConcurrentlyStatus.CONSUME_SUCCESS


async def _consumer(cluster: LocalCluster, group: str, topic: str, got: list[MessageExt]) -> PushConsumer:
    c = PushConsumer(
        group, namesrv_addr=cluster.namesrv_addr, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    )
    c.subscribe(topic, "*")

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        got.extend(msgs)
        return OK

    c.register_message_listener(listener)
    return c


async def test_running_info_and_consume_directly_forwarded_by_the_broker(cluster: LocalCluster) -> None:
    topic, group = "AdmCallT", "cg-admcall"
    async with Admin(cluster.namesrv_addr) as admin:
        await admin.create_topic(topic, 1)
    got: list[MessageExt] = []
    consumer = await _consumer(cluster, group, topic, got)
    mq = MessageQueue(topic, cluster.broker.config.broker_name, 0)
    async with (
        Producer("pg-admcall", namesrv_addr=cluster.namesrv_addr) as p,
        consumer,
        Admin(cluster.namesrv_addr) as admin,
    ):
        sent = [await p.send(Message.build(topic, f"m{i}", keys=f"k{i}")) for i in range(3)]
        await wait_until(
            lambda: len(got) == 3 and consumer.committed_offsets().get(mq) == 3, timeout=20, what="3 consumed"
        )
        info = await admin.get_consumer_running_info(group, consumer.client_id)
        assert {s.topic for s in info.subscription_set} == {topic, f"%RETRY%{group}"}
        assert info.mq_table[mq]["commitOffset"] == 3
        assert info.status_table[topic]["consumeOKTPS"] > 0 and info.jstack is None
        assert (await admin.get_consumer_running_info(group, consumer.client_id, jstack=True)).jstack
        with pytest.raises(BrokerError) as err:
            await admin.get_consumer_running_info(group, "nobody@x")
        assert (err.value.response_code, err.value.remark) == (
            ResponseCode.SYSTEM_ERROR,
            f"The Consumer <{group}> <nobody@x> not online",
        )

        result = await admin.consume_message_directly(group, consumer.client_id, topic, sent[1].offset_msg_id)
        assert result.consume_result is CMResult.CR_SUCCESS and result.order is False
        assert len(got) == 4 and got[3].msg_id == sent[1].msg_id and got[3].body == b"m1"
        assert consumer.committed_offsets().get(mq) == 3

        # CONSUME_MESSAGE_DIRECTLY: the broker adds brokerName and the stored record
        h = {"consumerGroup": group, "clientId": consumer.client_id, "msgId": sent[2].offset_msg_id, "topic": topic}
        resp = await admin.runtime.pool.request(
            cluster.broker_addr, RemotingCommand.request(RequestCode.CONSUME_MESSAGE_DIRECTLY, h), 5.0
        )
        assert (
            resp.code == ResponseCode.SUCCESS
            and got[4].body == b"m2"
            and got[4].broker_name == cluster.broker.config.broker_name
        )

        cc = await admin.examine_consumer_connection_info(group)
        assert [c.client_id for c in cc.connection_set] == [consumer.client_id]
        assert set(cc.subscription_table) == {topic, f"%RETRY%{group}"}

        res = await admin.query_message(topic, "k0", 32, 0, 2**63 - 1)
        assert [m.msg_id for m in res.message_list] == [sent[0].msg_id]
        assert (await admin.query_message(topic, "nokey", 32, 0, 2**63 - 1)).message_list == []
        viewed = await admin.view_message(sent[2].offset_msg_id)
        assert (viewed.body, viewed.queue_offset, viewed.msg_id) == (b"m2", 2, sent[2].msg_id)

        stats = await admin.examine_topic_stats(topic)
        assert (stats.offset_table[mq].min_offset, stats.offset_table[mq].max_offset) == (0, 3)
        await wait_until(
            lambda: cluster.broker.offsets.query(group, topic, 0) == 3, timeout=10, what="offset committed"
        )
        cs = await admin.examine_consume_stats(group, topic)
        assert (cs.offset_table[mq].broker_offset, cs.offset_table[mq].consumer_offset, cs.compute_total_diff()) == (
            3,
            3,
            0,
        )

        # server-side reset: the running consumer consumes 1..2 again
        t = got[1].store_timestamp
        start = min(m.queue_offset for m in got[:3] if m.store_timestamp >= t)  # m0 may share m1's millisecond
        table = await admin.reset_offset_by_timestamp(topic, group, t)
        assert table == {mq: start}
        await wait_until(lambda: len(got) == 5 + 3 - start, timeout=30, what="reset re-consumption")
        assert sorted(m.body for m in got[5:]) == [f"m{i}".encode() for i in range(start, 3)]
        with pytest.raises(BrokerError) as err:
            await admin.reset_offset_by_timestamp(topic, "cg-never-seen", -1)
        assert err.value.response_code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
    async with Admin(cluster.namesrv_addr) as admin:
        with pytest.raises(BrokerError) as err:
            await admin.examine_consumer_connection_info(group)
        assert err.value.response_code == ResponseCode.CONSUMER_NOT_ONLINE


async def test_server_side_reset_explicit_offset_range(cluster: LocalCluster) -> None:
    """INVOKE_BROKER_TO_RESET_OFFSET with ``queueId`` and ``offset`` (Java 5.x ``resetOffsetInner``):
    an offset outside [min, max + 1] is SYSTEM_ERROR and resets nothing; inside, it is taken as is."""
    from rocketpipe.protocol.bodies.admin import ResetOffsetBody
    from rocketpipe.protocol.headers.consumer import ResetOffsetRequestHeader

    topic, group = "AdmResetT", "cg-admreset"
    cluster.broker.groups_config.find(group)  # the group exists (as after a heartbeat)
    async with Admin(cluster.namesrv_addr) as admin:
        await admin.create_topic(topic, 1)
        async with Producer("pg-admreset", namesrv_addr=cluster.namesrv_addr) as p:
            for i in range(3):
                await p.send(Message.build(topic, f"m{i}"))

        async def reset(offset: int) -> RemotingCommand:
            h = ResetOffsetRequestHeader(
                group=group, topic=topic, queue_id=0, offset=offset, timestamp=0, is_force=True
            )
            cmd = RemotingCommand.request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, h.to_ext_fields())
            return await admin.runtime.pool.request(cluster.broker_addr, cmd, 5.0)

        bad = await reset(5)
        assert (bad.code, bad.remark) == (ResponseCode.SYSTEM_ERROR, "Target offset 5 not in consume queue range [0-3]")
        assert cluster.broker.offsets.query(group, topic, 0) == -1
        ok = await reset(4)  # max + 1 is accepted, as in Java
        assert ok.code == ResponseCode.SUCCESS
        assert ResetOffsetBody.decode(bytes(ok.body)).offset_table == {
            MessageQueue(topic, cluster.broker.config.broker_name, 0): 4
        }
