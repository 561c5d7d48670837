"""Broker-wide admin requests against the embedded broker (real TCP, real files):
UPDATE_BROKER_CONFIG (25) with its restart persistence, GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201),
CLEAN_EXPIRED_CONSUMEQUEUE (306) and VIEW_BROKER_STATS_DATA (315), through :class:`rocketpipe.Admin`
and raw requests for the error answers; and ``Admin.query_message_by_id`` given a unique key.

The same commands through the real mqadmin, against rocketpipe and Apache RocketMQ 5:
tests/interop/test_interop_mqadmin_broker.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from broker_testkit import TIMEOUT, heartbeat_cmd, pull, records, send

from rocketpipe import Admin, Message, Producer
from rocketpipe.errors import BrokerError
from rocketpipe.protocol.bodies.admin import SubscriptionGroupConfig, SubscriptionGroupWrapper
from rocketpipe.protocol.codes import RequestCode, ResponseCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.protocol.headers.admin import ViewBrokerStatsDataRequestHeader
from rocketpipe.testing import FakeClock, local_cluster
from rocketpipe.transport import Connection
from waiting import wait_until


def _update(body: bytes) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.UPDATE_BROKER_CONFIG, body=body)


async def test_update_broker_config_takes_effect_shows_and_survives_a_restart(tmp_path: Path) -> None:
    async with local_cluster(tmp_path) as cl:
        async with Admin(cl.namesrv_addr) as admin:
            await admin.update_broker_config(cl.broker_addr, {"maxTransferCountOnMessageInMemory": "2"})
            cfg = await admin.get_broker_config(cl.broker_addr)
            assert cfg["maxTransferCountOnMessageInMemory"] == "2"
        conn = await Connection.connect(cl.broker_addr)
        try:
            for i in range(5):
                assert (await send(conn, "CfgT", f"m{i}".encode())).code == ResponseCode.SUCCESS
            got = records(await pull(conn, "cfg-g", "CfgT", 0, 0, max_nums=32))
            assert [m.body for m in got] == [b"m0", b"m1"]  # the new cap, at once
        finally:
            await conn.close()
    saved = (tmp_path / "config" / "broker.properties").read_text()
    assert "maxTransferCountOnMessageInMemory=2\n" in saved
    async with local_cluster(tmp_path) as cl:
        async with Admin(cl.namesrv_addr) as admin:
            cfg = await admin.get_broker_config(cl.broker_addr)
        assert cfg["maxTransferCountOnMessageInMemory"] == "2"
        assert cl.broker.store.config.max_transfer_count_on_message_in_memory == 2


async def test_update_broker_config_refusals_change_nothing(tmp_path: Path) -> None:
    async with local_cluster(tmp_path) as cl:
        conn = await Connection.connect(cl.broker_addr)
        try:
            r = await conn.request(_update(b"brokerConfigPath=/tmp/x\nmaxMessageSize=1024\n"), TIMEOUT)
            assert (r.code, r.remark) == (ResponseCode.NO_PERMISSION, "Can not update config in black list.")
            r = await conn.request(_update(b"configBlackList=\n"), TIMEOUT)
            assert r.code == ResponseCode.NO_PERMISSION
            r = await conn.request(_update(b"listenPort=1\nmaxMessageSize=1024\n"), TIMEOUT)
            assert r.code == ResponseCode.INVALID_PARAMETER
            assert "listenPort" in (r.remark or "") and "maxMessageSize" in (r.remark or "")
            r = await conn.request(_update(b"maxMessageSize=big\n"), TIMEOUT)
            assert (r.code, r.remark) == (ResponseCode.INVALID_PARAMETER, "maxMessageSize=big: not an integer")
            r = await conn.request(_update(b"longPollingEnable=yes\n"), TIMEOUT)
            assert r.code == ResponseCode.INVALID_PARAMETER
            r = await conn.request(_update(b"maxTransferBytesOnMessageInMemory=0\n"), TIMEOUT)
            assert r.code == ResponseCode.INVALID_PARAMETER
            assert cl.broker.config.max_message_size == 4 * 1024 * 1024
            assert cl.broker.config.long_polling_enable is True
            assert not (tmp_path / "config" / "broker.properties").exists()
            # unknown keys are ignored as Java ignores them; the remark names them
            r = await conn.request(_update(b"# comment\nnoSuchKey = 1\nmaxMessageSize : 2048\n"), TIMEOUT)
            assert (r.code, r.remark) == (ResponseCode.SUCCESS, "unknown keys ignored: noSuchKey")
            assert cl.broker.config.max_message_size == 2048 == cl.broker.store.config.max_message_size
            r = await send(conn, "CfgBig", b"x" * 4096)
            assert r.code == ResponseCode.MESSAGE_ILLEGAL
            r = await conn.request(_update(b""), TIMEOUT)  # no body: nothing to do (Java)
            assert r.code == ResponseCode.SUCCESS
        finally:
            await conn.close()


async def test_broker_permission_update_takes_effect_and_reregisters(tmp_path: Path) -> None:
    async with local_cluster(tmp_path) as cl, Admin(cl.namesrv_addr) as admin:
        conn = await Connection.connect(cl.broker_addr)
        try:
            assert (await send(conn, "PermT", b"a")).code == ResponseCode.SUCCESS
            before = cl.broker.registrations
            await admin.update_broker_config(cl.broker_addr, {"brokerPermission": "2"})  # write only
            assert cl.broker.registrations > before  # Java: registerBrokerAll at once
            assert (await pull(conn, "perm-g", "PermT", 0, 0)).code == ResponseCode.NO_PERMISSION
            await admin.update_broker_config(cl.broker_addr, {"brokerPermission": "6"})
            assert len(records(await pull(conn, "perm-g", "PermT", 0, 0))) == 1
            assert (await admin.get_broker_config(cl.broker_addr))["brokerPermission"] == "6"
        finally:
            await conn.close()


async def test_get_all_subscription_group_config(tmp_path: Path) -> None:
    async with local_cluster(tmp_path) as cl, Admin(cl.namesrv_addr) as admin:
        await admin.create_and_update_subscription_group_config(
            cl.broker_addr, SubscriptionGroupConfig("sg-all", retry_max_times=3, consume_enable=False)
        )
        wrapper = await admin.get_all_subscription_group(cl.broker_addr)
        cfg = wrapper.subscription_group_table["sg-all"]
        assert (cfg.retry_max_times, cfg.consume_enable, cfg.consume_timeout_minute) == (3, False, 15)
        assert cfg.group_retry_policy == {"type": "CUSTOMIZED"}
        assert set(wrapper.data_version) == {"counter", "stateVersion", "timestamp"}
        assert await admin.examine_subscription_group_config(cl.broker_addr, "sg-none") is None
        conn = await Connection.connect(cl.broker_addr)
        try:
            r = await conn.request(RemotingCommand.request(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG), TIMEOUT)
            assert r.code == ResponseCode.SUCCESS
            assert bytes(r.body).startswith(b'{"dataVersion":{"counter":0,"stateVersion":0,"timestamp":')
            assert SubscriptionGroupWrapper.decode(bytes(r.body)).forbidden_table == {}
        finally:
            await conn.close()


async def test_clean_expired_consume_queue_destroys_queues_below_the_commit_log(tmp_path: Path) -> None:
    seg = 64 * 1024
    async with local_cluster(tmp_path, mapped_file_size_commit_log=seg) as cl, Admin(cl.namesrv_addr) as admin:
        store = cl.broker.store
        conn = await Connection.connect(cl.broker_addr)
        try:
            for _ in range(3):
                assert (await send(conn, "CqOld", b"o" * 100, queue_id=0)).code == ResponseCode.SUCCESS
            i = 0
            while store.get_max_phy_offset() < 2 * seg + 1024:  # CqNew fills the first two segments
                assert (await send(conn, "CqNew", b"n" * 4000, queue_id=i % 2)).code == ResponseCode.SUCCESS
                i += 1
            assert store.delete_oldest_commit_log_file()
            assert store.get_min_phy_offset() == seg
            assert store.queue_ids("CqOld") == [0]  # CqOld's last record is below the min offset
            assert await admin.clean_expired_consume_queue(cl.broker_addr) is True
            assert store.queue_ids("CqOld") == []
            assert not (tmp_path / "consumequeue" / "CqOld").exists()
            assert store.queue_ids("CqNew") == [0, 1]  # its last records are in later segments
            # a new message for the destroyed queue starts it again at 0, as in Java
            r = await send(conn, "CqOld", b"again", queue_id=0)
            assert (r.code, r.ext_fields["queueOffset"]) == (ResponseCode.SUCCESS, "0")
            assert await admin.clean_expired_consume_queue(cl.broker_addr) is True  # nothing left to do
            assert store.queue_ids("CqOld") == [0]
        finally:
            await conn.close()


async def test_view_broker_stats_data_windows_and_unknown_items(tmp_path: Path) -> None:
    clock = FakeClock()
    async with local_cluster(tmp_path, clock=clock) as cl, Admin(cl.namesrv_addr) as admin:
        conn = await Connection.connect(cl.broker_addr)
        try:
            with pytest.raises(BrokerError) as e:
                await admin.view_broker_stats_data(cl.broker_addr, "TOPIC_PUT_NUMS", "StatT")
            assert (e.value.response_code, e.value.remark) == (
                ResponseCode.SYSTEM_ERROR,
                "The stats <TOPIC_PUT_NUMS> <StatT> not exist",
            )
            for _ in range(3):
                assert (await send(conn, "StatT", b"s" * 10, queue_id=0)).code == ResponseCode.SUCCESS
            await conn.request(heartbeat_cmd("stat-client", "stat-g", {"StatT": "*"}), TIMEOUT)
            assert len(records(await pull(conn, "stat-g", "StatT", 0, 0))) == 3
            clock.advance(10.0)  # the next once-a-second tick takes the 10-s sample

            async def sampled() -> bool:
                bsd = await admin.view_broker_stats_data(cl.broker_addr, "TOPIC_PUT_NUMS", "StatT")
                return bool(bsd["statsMinute"]["sum"])

            await wait_until(sampled, timeout=10, what="the 10-s statistics sample")
            raw = await admin.view_broker_stats_data(cl.broker_addr, "TOPIC_PUT_NUMS", "StatT")
            minute = raw["statsMinute"]
            assert (minute["sum"], minute["avgpt"]) == (3, 1.0)  # 3 puts of 1 message
            # over 10 s (0.3/s), or 20 s when the broker's first tick sampled before the advance
            assert 0.15 <= minute["tps"] <= 0.3
            assert raw["statsHour"]["sum"] == raw["statsDay"]["sum"] == 3
            gets = await admin.view_broker_stats_data(cl.broker_addr, "GROUP_GET_NUMS", "StatT@stat-g")
            assert (gets["statsMinute"]["sum"], gets["statsMinute"]["avgpt"]) == (3, 3.0)  # one pull batch
            size = await admin.view_broker_stats_data(cl.broker_addr, "TOPIC_PUT_SIZE", "StatT")
            assert size["statsMinute"]["sum"] > 30
            broker = await admin.view_broker_stats_data(cl.broker_addr, "BROKER_PUT_NUMS", "DefaultCluster")
            assert broker["statsMinute"]["sum"] == 3
            for name, key in (("BROKER_PUT_NUMS", "OtherCluster"), ("NO_SUCH_STATS", "StatT")):
                r = await conn.request(
                    RemotingCommand.request(
                        RequestCode.VIEW_BROKER_STATS_DATA,
                        ViewBrokerStatsDataRequestHeader(stats_name=name, stats_key=key).to_ext_fields(),
                    ),
                    TIMEOUT,
                )
                assert (r.code, r.remark) == (ResponseCode.SYSTEM_ERROR, f"The stats <{name}> <{key}> not exist")
            r = await conn.request(
                RemotingCommand.request(RequestCode.VIEW_BROKER_STATS_DATA, {"statsName": "TOPIC_PUT_NUMS"}), TIMEOUT
            )
            assert r.code == ResponseCode.SYSTEM_ERROR and "statsKey" in (r.remark or "")
        finally:
            await conn.close()


async def test_query_message_by_id_falls_back_to_the_unique_key(tmp_path: Path) -> None:
    async with local_cluster(tmp_path) as cl, Admin(cl.namesrv_addr) as admin:
        async with Producer("qid-p", namesrv_addr=cl.namesrv_addr) as producer:
            result = await producer.send(Message("QidT", b"by-unique-key"))
        assert len(result.msg_id) == 32  # a UNIQ_KEY: as long as an IPv4 offset msg id
        msg = await admin.query_message_by_id("QidT", result.msg_id)
        assert msg.body == b"by-unique-key"
        msg = await admin.query_message_by_id("QidT", result.offset_msg_id)
        assert msg.body == b"by-unique-key"
        missing = "0A0B0C0D" + "0" * 24  # decodes as 10.11.12.13:0: no valid store host
        with pytest.raises(BrokerError) as e:
            await admin.query_message_by_id("QidT", missing)
        assert e.value.response_code == ResponseCode.QUERY_NOT_FOUND
        assert "neither an offset msg id" in e.value.remark
