"""Name-server registration (local_cluster) and the admin/statistics requests."""

from __future__ import annotations

from pathlib import Path

from broker_testkit import TIMEOUT, heartbeat_cmd, pull, send

from rocketpipe.protocol import message as pm
from rocketpipe.protocol.bodies import javajson as jj
from rocketpipe.protocol.bodies.route import TopicRouteData
from rocketpipe.protocol.codes import RequestCode, ResponseCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.protocol.headers.admin import (
    CreateTopicRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumeStatsRequestHeader,
    GetTopicStatsInfoRequestHeader,
    ViewMessageRequestHeader,
)
from rocketpipe.protocol.headers.route import GetRouteInfoRequestHeader
from rocketpipe.protocol.headers.send import SendMessageResponseHeader
from rocketpipe.testing import local_cluster
from rocketpipe.transport import Connection
from waiting import wait_until


async def _route(ns: Connection, topic: str) -> RemotingCommand:
    return await ns.request(
        RemotingCommand.request(
            RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic=topic).to_ext_fields()
        ),
        TIMEOUT,
    )


async def test_broker_registers_with_name_server_and_new_topics_appear_in_routes(tmp_path: Path) -> None:
    async with local_cluster(tmp_path, mapped_file_size_commit_log=1 << 20) as cl:
        ns = await Connection.connect(cl.namesrv_addr)
        bc = await Connection.connect(cl.broker_addr)
        try:
            r = await _route(ns, "TBW102")
            assert r.code == ResponseCode.SUCCESS
            route = TopicRouteData.decode(bytes(r.body))
            assert route.broker_datas[0].broker_addrs[0] == cl.broker_addr
            assert route.queue_datas[0].perm == 7 and route.queue_datas[0].read_queue_nums == 8
            assert (await _route(ns, "TopicNew")).code == ResponseCode.TOPIC_NOT_EXIST
            h = CreateTopicRequestHeader(topic="TopicNew", read_queue_nums=3, write_queue_nums=3, perm=6)
            assert (
                await bc.request(
                    RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, h.to_ext_fields()), TIMEOUT
                )
            ).code == 0

            async def visible() -> bool:
                return (await _route(ns, "TopicNew")).code == ResponseCode.SUCCESS

            await wait_until(visible, timeout=5, what="new topic in the route table")
            qd = TopicRouteData.decode(bytes((await _route(ns, "TopicNew")).body)).queue_datas[0]
            assert (qd.read_queue_nums, qd.write_queue_nums, qd.perm) == (3, 3, 6)
            # auto-created by a send through TBW102, then registered as well
            assert (await send(bc, "TopicAuto", b"x")).code == ResponseCode.SUCCESS

            async def auto_visible() -> bool:
                return (await _route(ns, "TopicAuto")).code == ResponseCode.SUCCESS

            await wait_until(auto_visible, timeout=5, what="auto-created topic in the route table")
            bad = CreateTopicRequestHeader(topic="bad/name", read_queue_nums=1, write_queue_nums=1, perm=6)
            r = await bc.request(
                RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, bad.to_ext_fields()), TIMEOUT
            )
            assert r.code == ResponseCode.INVALID_PARAMETER
        finally:
            await ns.close()
            await bc.close()
        assert cl.broker.registrations >= 1


async def test_broker_close_unregisters_from_the_name_server(tmp_path: Path) -> None:
    from rocketpipe.broker import Broker, BrokerConfig
    from rocketpipe.namesrv import NameServer

    async with NameServer() as ns:
        b = Broker(BrokerConfig(store_dir=tmp_path, namesrv_addr=ns.address, mapped_file_size_commit_log=1 << 20))
        await b.start()
        assert ns.routes.route("TBW102") is not None
        await b.close()
        assert ns.routes.route("TBW102") is None


async def test_broker_topic_permissions_and_subscription_group_config(tmp_path: Path) -> None:
    async with local_cluster(tmp_path, mapped_file_size_commit_log=1 << 20) as cl:
        c = await Connection.connect(cl.broker_addr)
        try:
            wo = CreateTopicRequestHeader(topic="TopicWO", read_queue_nums=1, write_queue_nums=1, perm=2)
            await c.request(RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, wo.to_ext_fields()), TIMEOUT)
            assert (await send(c, "TopicWO", b"x")).code == ResponseCode.SUCCESS
            assert (await pull(c, "g", "TopicWO", 0, 0)).code == ResponseCode.NO_PERMISSION
            body = jj.dumps({"groupName": "gdis", "consumeEnable": False, "retryMaxTimes": 3})
            r = await c.request(
                RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, body), TIMEOUT
            )
            assert r.code == ResponseCode.SUCCESS
            assert cl.broker.groups_config.groups["gdis"].retry_max_times == 3
            await send(c, "TopicP", b"x")
            assert (await pull(c, "gdis", "TopicP", 0, 0)).code == ResponseCode.NO_PERMISSION
        finally:
            await c.close()


async def test_broker_stats_connections_and_view_message(tmp_path: Path) -> None:
    async with local_cluster(tmp_path, mapped_file_size_commit_log=1 << 20) as cl:
        c = await Connection.connect(cl.broker_addr)
        try:
            sent = []
            for i in range(3):
                r = await send(c, "TopicStat", f"m{i}".encode(), queue_id=i % 2)
                sent.append(SendMessageResponseHeader.from_ext_fields(r.ext_fields))
            r = await c.request(
                RemotingCommand.request(
                    RequestCode.GET_TOPIC_STATS_INFO, GetTopicStatsInfoRequestHeader(topic="TopicStat").to_ext_fields()
                ),
                TIMEOUT,
            )
            table = jj.message_queue_map(jj.as_dict(jj.loads(bytes(r.body))).get("offsetTable"), lambda v: v)
            by_q = {mq.queue_id: v for mq, v in table.items()}
            assert by_q[0]["maxOffset"] == 2 and by_q[1]["maxOffset"] == 1 and by_q[2]["maxOffset"] == 0
            assert by_q[0]["lastUpdateTimestamp"] > 0
            await c.request(heartbeat_cmd("ip@s", "gs", {"TopicStat": "*"}), TIMEOUT)
            await pull(c, "gs", "TopicStat", 0, 0, commit_offset=1)
            r = await c.request(
                RemotingCommand.request(
                    RequestCode.GET_CONSUME_STATS, GetConsumeStatsRequestHeader(consumer_group="gs").to_ext_fields()
                ),
                TIMEOUT,
            )
            stats = jj.message_queue_map(jj.as_dict(jj.loads(bytes(r.body))).get("offsetTable"), lambda v: v)
            q0 = next(v for mq, v in stats.items() if mq.queue_id == 0)
            assert (q0["brokerOffset"], q0["consumerOffset"]) == (2, 1)
            r = await c.request(
                RemotingCommand.request(
                    RequestCode.GET_CONSUMER_CONNECTION_LIST,
                    GetConsumerConnectionListRequestHeader(consumer_group="gs").to_ext_fields(),
                ),
                TIMEOUT,
            )
            conn_body = jj.loads(bytes(r.body))
            assert [x["clientId"] for x in conn_body["connectionSet"]] == ["ip@s"]
            r = await c.request(
                RemotingCommand.request(
                    RequestCode.GET_CONSUMER_CONNECTION_LIST,
                    GetConsumerConnectionListRequestHeader(consumer_group="nobody").to_ext_fields(),
                ),
                TIMEOUT,
            )
            assert r.code == ResponseCode.CONSUMER_NOT_ONLINE
            _, phys = pm.decode_offset_msg_id(sent[1].msg_id or "")
            r = await c.request(
                RemotingCommand.request(
                    RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(offset=phys).to_ext_fields()
                ),
                TIMEOUT,
            )
            viewed = pm.decode_records(bytes(r.body))
            assert viewed[0].body == b"m1" and viewed[0].offset_msg_id == sent[1].msg_id
        finally:
            await c.close()


async def test_broker_topic_admin_and_check_client_config(tmp_path: Path) -> None:
    from rocketpipe.broker import Broker, BrokerConfig
    from rocketpipe.protocol.bodies.heartbeat import SubscriptionData
    from rocketpipe.protocol.bodies.register import TopicConfigSerializeWrapper
    from rocketpipe.protocol.headers.admin import DeleteTopicRequestHeader

    async with Broker(BrokerConfig(store_dir=tmp_path, mapped_file_size_commit_log=1 << 20)) as b:
        c = await Connection.connect(b.address)
        try:
            h = CreateTopicRequestHeader(topic="TopicDel", read_queue_nums=2, write_queue_nums=2, perm=6)
            await c.request(RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, h.to_ext_fields()), TIMEOUT)
            r = await c.request(RemotingCommand.request(RequestCode.GET_ALL_TOPIC_CONFIG, {}), TIMEOUT)
            wrapper = TopicConfigSerializeWrapper.decode(bytes(r.body))
            assert wrapper.topic_config_table["TopicDel"].read_queue_nums == 2
            assert {"TBW102", "SCHEDULE_TOPIC_XXXX", "SELF_TEST_TOPIC", "DefaultCluster", "broker-a"} <= set(
                wrapper.topic_config_table
            )
            d = DeleteTopicRequestHeader(topic="TopicDel")
            assert (
                await c.request(RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_BROKER, d.to_ext_fields()), TIMEOUT)
            ).code == 0
            assert b.topics.get("TopicDel") is None
            tag = jj.dumps(
                {"clientId": "x", "group": "g", "subscriptionData": SubscriptionData.build("T", "a").to_obj()}
            )
            assert (
                await c.request(RemotingCommand.request(RequestCode.CHECK_CLIENT_CONFIG, {}, tag), TIMEOUT)
            ).code == 0
            sql = jj.dumps(
                {
                    "clientId": "x",
                    "group": "g",
                    "subscriptionData": SubscriptionData.build("T", "a > 1", "SQL92").to_obj(),
                }
            )
            assert (
                await c.request(RemotingCommand.request(RequestCode.CHECK_CLIENT_CONFIG, {}, sql), TIMEOUT)
            ).code == ResponseCode.SYSTEM_ERROR
        finally:
            await c.close()


async def test_broker_stats_queue_ranges_follow_admin_broker_processor(tmp_path: Path) -> None:
    """GET_CONSUME_STATS covers readQueueNums (4.9.8 and 5.x); GET_TOPIC_STATS_INFO covers
    max(read, write) (5.3.0+, apache/rocketmq 402d31a1b8; 4.9.8 used writeQueueNums)."""
    from rocketpipe.broker import Broker, BrokerConfig

    async with Broker(BrokerConfig(store_dir=tmp_path, mapped_file_size_commit_log=1 << 20)) as b:
        c = await Connection.connect(b.address)
        try:
            for topic, read, write in (("TopicR2W4", 2, 4), ("TopicR4W2", 4, 2)):
                h = CreateTopicRequestHeader(topic=topic, read_queue_nums=read, write_queue_nums=write, perm=6)
                r = await c.request(
                    RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, h.to_ext_fields()), TIMEOUT
                )
                assert r.code == ResponseCode.SUCCESS
                r = await c.request(
                    RemotingCommand.request(
                        RequestCode.GET_TOPIC_STATS_INFO, GetTopicStatsInfoRequestHeader(topic=topic).to_ext_fields()
                    ),
                    TIMEOUT,
                )
                table = jj.message_queue_map(jj.as_dict(jj.loads(bytes(r.body))).get("offsetTable"), lambda v: v)
                assert sorted(mq.queue_id for mq in table) == [0, 1, 2, 3]
                h2 = GetConsumeStatsRequestHeader(consumer_group="gq", topic=topic)
                r = await c.request(RemotingCommand.request(RequestCode.GET_CONSUME_STATS, h2.to_ext_fields()), TIMEOUT)
                stats = jj.message_queue_map(jj.as_dict(jj.loads(bytes(r.body))).get("offsetTable"), lambda v: v)
                assert sorted(mq.queue_id for mq in stats) == list(range(read)), topic
        finally:
            await c.close()


async def test_broker_get_topic_config_answers_topic_config_and_queue_mapping(tmp_path: Path) -> None:
    """GET_TOPIC_CONFIG (351, 5.x ``AdminBrokerProcessor.getTopicConfig``): the TopicConfig bean
    (``mappingDetail`` null, so absent as fastjson writes it), TOPIC_NOT_EXIST when unknown."""
    from rocketpipe.broker import Broker, BrokerConfig
    from rocketpipe.protocol.headers.admin import GetTopicConfigRequestHeader

    async with Broker(BrokerConfig(store_dir=tmp_path, mapped_file_size_commit_log=1 << 20)) as b:
        c = await Connection.connect(b.address)
        try:
            h = CreateTopicRequestHeader(topic="TopicCfg", read_queue_nums=3, write_queue_nums=5, perm=6, order=True)
            assert (
                await c.request(
                    RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, h.to_ext_fields()), TIMEOUT
                )
            ).code == 0
            req = GetTopicConfigRequestHeader(topic="TopicCfg", lo=True, bname=b.config.broker_name)
            r = await c.request(RemotingCommand.request(RequestCode.GET_TOPIC_CONFIG, req.to_ext_fields()), TIMEOUT)
            assert r.code == ResponseCode.SUCCESS
            assert jj.loads(bytes(r.body)) == {
                "attributes": {},
                "order": True,
                "perm": 6,
                "readQueueNums": 3,
                "topicFilterType": "SINGLE_TAG",
                "topicName": "TopicCfg",
                "topicSysFlag": 0,
                "writeQueueNums": 5,
            }
            r = await c.request(
                RemotingCommand.request(
                    RequestCode.GET_TOPIC_CONFIG, GetTopicConfigRequestHeader(topic="NoSuchTopic").to_ext_fields()
                ),
                TIMEOUT,
            )
            assert r.code == ResponseCode.TOPIC_NOT_EXIST and "NoSuchTopic" in (r.remark or "")
            r = await c.request(RemotingCommand.request(RequestCode.GET_TOPIC_CONFIG, {}), TIMEOUT)
            assert r.code != ResponseCode.SUCCESS  # topic is @CFNotNull
        finally:
            await c.close()


async def test_broker_query_topic_consume_by_who_joins_registry_and_offsets(tmp_path: Path) -> None:
    """QUERY_TOPIC_CONSUME_BY_WHO (300): groups subscribed here (ConsumerManager) plus groups
    with offsets on the topic (ConsumerOffsetManager.whichGroupByTopic)."""
    from rocketpipe.broker import Broker, BrokerConfig
    from rocketpipe.protocol.bodies.admin import GroupList
    from rocketpipe.protocol.headers.admin import QueryTopicConsumeByWhoRequestHeader

    async def who(c: Connection, topic: str) -> set[str]:
        h = QueryTopicConsumeByWhoRequestHeader(topic=topic)
        r = await c.request(RemotingCommand.request(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, h.to_ext_fields()), TIMEOUT)
        assert r.code == ResponseCode.SUCCESS
        assert set(jj.loads(bytes(r.body))) == {"groupList"}
        return GroupList.decode(bytes(r.body)).group_list

    async with Broker(BrokerConfig(store_dir=tmp_path, mapped_file_size_commit_log=1 << 20)) as b:
        c = await Connection.connect(b.address)
        try:
            assert await who(c, "TopicWho") == set()
            await send(c, "TopicWho", b"x")
            await c.request(heartbeat_cmd("ip@w", "g-live", {"TopicWho": "*", "Other": "*"}), TIMEOUT)
            assert await who(c, "TopicWho") == {"g-live"}
            b.offsets.commit("g-offset", "TopicWho", 0, 1)  # a group known only from its offsets
            b.offsets.commit("g-else", "Other", 0, 1)
            assert await who(c, "TopicWho") == {"g-live", "g-offset"}
            assert await who(c, "Other") == {"g-live", "g-else"}
            assert await who(c, "Nobody") == set()
        finally:
            await c.close()


async def test_broker_runtime_info_is_a_kv_table_cluster_list_can_read(tmp_path: Path) -> None:
    """GET_BROKER_RUNTIME_INFO (28): the ``prepareRuntimeInfo`` keys mqadmin clusterList parses
    (4.9.x and 5.x spellings), with put/get counters and commit-log figures from this broker."""
    from rocketpipe.broker import Broker, BrokerConfig
    from rocketpipe.protocol.bodies.route import KVTable
    from rocketpipe.testing import FakeClock

    async def info(c: Connection) -> dict[str, str]:
        r = await c.request(RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO, {}), TIMEOUT)
        assert r.code == ResponseCode.SUCCESS
        assert set(jj.loads(bytes(r.body))) == {"table"}
        return KVTable.decode(bytes(r.body)).table

    clock = FakeClock()
    async with Broker(BrokerConfig(store_dir=tmp_path, mapped_file_size_commit_log=1 << 20), clock=clock) as b:
        c = await Connection.connect(b.address)
        try:
            t0 = await info(c)
            assert t0["brokerVersionDesc"] == "V4_9_8" and t0["brokerVersion"] == "409"
            assert t0["bootTimestamp"] == str(b.stats.boot_ms)
            assert t0["earliestMessageTimeStamp"] == "-1"  # empty store
            assert t0["msgPutTotalTodayNow"] == "0" and t0["putMessageTimesTotal"] == "1"  # Java: 0 -> 1
            for key in (
                "msgPutTotalYesterdayMorning",
                "msgPutTotalTodayMorning",
                "msgGetTotalYesterdayMorning",
                "msgGetTotalTodayMorning",
                "msgGetTotalTodayNow",
                "sendThreadPoolQueueSize",
                "pullThreadPoolQueueSize",
                "commitLogMinOffset",
                "commitLogMaxOffset",
                "timerReadBehind",
                "timerOffsetBehind",
                "timerCongestNum",
                "pageCacheLockTimeMills",
                "dispatchBehindBytes",
            ):
                int(t0[key])  # clusterList parses these with Long.parseLong
            for key in ("commitLogDiskRatio", "consumeQueueDiskRatio", "timerEnqueueTps", "timerDequeueTps"):
                float(t0[key])
            assert t0["runtime"].startswith("[ 0 days, 0 hours, ")
            for i in range(3):
                assert (await send(c, "TopicRt", f"m{i}".encode())).code == ResponseCode.SUCCESS
            await send(c, "TopicRt", b"later", properties={"DELAY": "1"})  # stored in SCHEDULE_TOPIC_XXXX
            await pull(c, "grt", "TopicRt", 0, 0)
            t1 = await info(c)
            assert t1["msgPutTotalTodayNow"] == "3"  # system topics (SCHEDULE_TOPIC_XXXX) not counted
            assert t1["putMessageTimesTotal"] == "4"
            assert t1["msgGetTotalTodayNow"] == "3"
            assert int(t1["commitLogMaxOffset"]) == b.store.get_max_phy_offset() > 0
            assert int(t1["earliestMessageTimeStamp"]) == clock.now_ms()
            clock.advance(1.0)  # level 1 due: delivered into TopicRt, not counted as a client put
            await wait_until(lambda: b.schedule.offsets.get(1) == 1, timeout=5, what="level 1 delivered")
            t1 = await info(c)
            assert t1["scheduleMessageOffset_1"] == "1,1"  # ScheduleMessageService.buildRunningStats
            assert t1["msgPutTotalTodayNow"] == "3" and t1["putMessageTimesTotal"] == "5"
            # TPS: "<10s> <60s> <600s>" in both spellings (values: unit test of BrokerStats)
            for key in ("putTps", "getTransferredTps", "getTransferedTps"):
                assert len(t1[key].split(" ")) == 3, key
        finally:
            await c.close()
