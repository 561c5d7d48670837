"""Send/pull round trips over real TCP: the three send codes, every pull status, tag filter."""

from __future__ import annotations

from pathlib import Path

import pytest
from broker_testkit import TIMEOUT, pull, records, send, send_cmd

from rocketpipe.broker import Broker, BrokerConfig
from rocketpipe.protocol import message as pm
from rocketpipe.protocol.codes import RequestCode, ResponseCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.protocol.headers.send import SendMessageResponseHeader
from rocketpipe.transport import Connection


@pytest.fixture
async def broker(tmp_path: Path):
    async with Broker(BrokerConfig(store_dir=tmp_path, mapped_file_size_commit_log=1 << 24)) as b:
        yield b


@pytest.fixture
async def conn(broker: Broker):
    c = await Connection.connect(broker.address)
    yield c
    await c.close()


@pytest.mark.parametrize("code", [RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2])
async def test_broker_single_send_then_pull_returns_the_record(conn: Connection, code: int) -> None:
    resp = await send(conn, "TopicA", b"hello", code=code, tags="TagA", queue_id=1)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    rh = SendMessageResponseHeader.from_ext_fields(resp.ext_fields)
    assert rh.queue_id == 1 and rh.queue_offset == 0
    assert resp.ext_fields["MSG_REGION"] == "DefaultRegion"
    got = await pull(conn, "g1", "TopicA", 1, 0)
    assert got.code == ResponseCode.SUCCESS and got.remark == "FOUND"
    msgs = records(got)
    assert [m.body for m in msgs] == [b"hello"]
    assert msgs[0].offset_msg_id == rh.msg_id
    assert msgs[0].tags == "TagA"
    assert msgs[0].properties[pm.PROPERTY_CLUSTER] == "DefaultCluster"
    assert pm.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX in msgs[0].properties
    assert got.ext_fields["nextBeginOffset"] == "1"


async def test_broker_batch_send_stores_each_message_with_consecutive_offsets(conn: Connection) -> None:
    inner = [pm.Message("TopicB", f"m{i}".encode(), properties={"KEYS": f"k{i}"}) for i in range(3)]
    resp = await conn.request(
        send_cmd("TopicB", pm.encode_batch(inner), code=RequestCode.SEND_BATCH_MESSAGE, batch=True, queue_id=0), TIMEOUT
    )
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    rh = SendMessageResponseHeader.from_ext_fields(resp.ext_fields)
    assert rh.queue_offset == 0 and len((rh.msg_id or "").split(",")) == 3
    msgs = records(await pull(conn, "g1", "TopicB", 0, 0))
    assert [(m.body, m.queue_offset, m.keys) for m in msgs] == [(b"m0", 0, "k0"), (b"m1", 1, "k1"), (b"m2", 2, "k2")]


async def test_broker_pull_status_table(conn: Connection, broker: Broker) -> None:
    # unknown topic: TOPIC_NOT_EXIST (pulls never auto-create)
    assert (await pull(conn, "g", "Nope", 0, 0)).code == ResponseCode.TOPIC_NOT_EXIST
    for i in range(3):
        assert (await send(conn, "TopicS", f"x{i}".encode(), queue_id=0)).code == ResponseCode.SUCCESS
    assert (await send(conn, "TopicS", b"q1", queue_id=1)).code == ResponseCode.SUCCESS
    # queue id beyond readQueueNums: INVALID_PARAMETER
    assert (await pull(conn, "g", "TopicS", 99, 0)).code == ResponseCode.INVALID_PARAMETER
    # empty queue, offset 0: PULL_NOT_FOUND; offset != 0: PULL_OFFSET_MOVED to 0
    r = await pull(conn, "g", "TopicS", 2, 0)
    assert (r.code, r.remark) == (ResponseCode.PULL_NOT_FOUND, "NO_MATCHED_LOGIC_QUEUE")
    r = await pull(conn, "g", "TopicS", 2, 5)
    assert r.code == ResponseCode.PULL_OFFSET_MOVED and r.ext_fields["nextBeginOffset"] == "0"
    # caught up (offset == max): PULL_NOT_FOUND OFFSET_OVERFLOW_ONE
    r = await pull(conn, "g", "TopicS", 0, 3)
    assert (r.code, r.remark, r.ext_fields["nextBeginOffset"]) == (
        ResponseCode.PULL_NOT_FOUND,
        "OFFSET_OVERFLOW_ONE",
        "3",
    )
    # beyond max: PULL_OFFSET_MOVED (OFFSET_OVERFLOW_BADLY) to max
    r = await pull(conn, "g", "TopicS", 0, 10)
    assert (r.code, r.remark, r.ext_fields["nextBeginOffset"]) == (
        ResponseCode.PULL_OFFSET_MOVED,
        "OFFSET_OVERFLOW_BADLY",
        "3",
    )
    # below min: PULL_OFFSET_MOVED (OFFSET_TOO_SMALL) to min
    r = await pull(conn, "g", "TopicS", 0, -1)
    assert (r.code, r.remark, r.ext_fields["nextBeginOffset"]) == (
        ResponseCode.PULL_OFFSET_MOVED,
        "OFFSET_TOO_SMALL",
        "0",
    )
    # found, limited by maxMsgNums
    r = await pull(conn, "g", "TopicS", 0, 1, max_nums=1)
    assert r.code == ResponseCode.SUCCESS and [m.body for m in records(r)] == [b"x1"]
    assert (r.ext_fields["minOffset"], r.ext_fields["maxOffset"], r.ext_fields["nextBeginOffset"]) == ("0", "3", "2")


async def test_broker_tag_filter_skips_unmatched_and_answers_retry_immediately(conn: Connection) -> None:
    for tag in ("A", "B", "A", "C"):
        assert (await send(conn, "TopicT", tag.encode(), tags=tag)).code == ResponseCode.SUCCESS
    r = await pull(conn, "g", "TopicT", 0, 0, subscription="A || C")
    assert [m.body for m in records(r)] == [b"A", b"A", b"C"]
    r = await pull(conn, "g", "TopicT", 0, 0, subscription="B")
    assert [m.body for m in records(r)] == [b"B"]
    r = await pull(conn, "g", "TopicT", 0, 2, subscription="Z")
    assert r.code == ResponseCode.PULL_RETRY_IMMEDIATELY and r.remark == "NO_MATCHED_MESSAGE"
    assert r.ext_fields["nextBeginOffset"] == "4"


async def test_broker_pull_without_subscription_flag_needs_a_heartbeat(conn: Connection) -> None:
    await send(conn, "TopicH", b"x")
    r = await pull(conn, "gh", "TopicH", 0, 0, subscription=None)
    assert r.code == ResponseCode.SUBSCRIPTION_NOT_EXIST


async def test_broker_topic_validation_and_size_limits(conn: Connection, broker: Broker) -> None:
    r = await send(conn, "bad topic!", b"x")
    assert r.code == ResponseCode.INVALID_PARAMETER
    r = await send(conn, "T" * 128, b"x")
    assert r.code == ResponseCode.INVALID_PARAMETER and "longer" in (r.remark or "")
    r = await send(conn, "SCHEDULE_TOPIC_XXXX", b"x")
    assert r.code == ResponseCode.NO_PERMISSION
    r = await send(conn, "TopicBig", b"x" * (4 * 1024 * 1024 + 1))
    assert r.code == ResponseCode.MESSAGE_ILLEGAL
    r = await send(conn, "TopicBig", b"x" * (4 * 1024 * 1024))
    assert r.code == ResponseCode.SUCCESS, r.remark
    r = await send(conn, "TopicBig", b"x", properties={"big": "v" * 40_000})
    assert r.code == ResponseCode.MESSAGE_ILLEGAL
    r = await send(conn, "TopicNoTemplate", b"x", default_topic="NoSuchTemplate")
    assert r.code == ResponseCode.TOPIC_NOT_EXIST
    r = await send(conn, "TopicQ", b"x", queue_id=0)
    assert r.code == ResponseCode.SUCCESS
    tc = broker.topics.get("TopicQ")
    assert tc is not None and tc.read_queue_nums == 4 and tc.perm == 6
    r = await send(conn, "TopicQ", b"x", queue_id=4)
    assert r.code == ResponseCode.INVALID_PARAMETER


async def test_broker_malformed_requests_get_errors_and_the_connection_keeps_working(conn: Connection) -> None:
    bad = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"b": "TopicM"}, b"x")
    r = await conn.request(bad, TIMEOUT)
    assert r.code == ResponseCode.SYSTEM_ERROR
    r = await conn.request(RemotingCommand.request(RequestCode.PULL_MESSAGE, {"topic": "x"}), TIMEOUT)
    assert r.code == ResponseCode.SYSTEM_ERROR
    r = await conn.request(RemotingCommand.request(RequestCode.HEART_BEAT, {}, b"{not json"), TIMEOUT)
    assert r.code == ResponseCode.SYSTEM_ERROR
    r = await conn.request(
        RemotingCommand.request(
            RequestCode.SEND_BATCH_MESSAGE, send_cmd("TopicM", b"\x00\x01", batch=True).ext_fields, b"\x00\x01"
        ),
        TIMEOUT,
    )
    assert r.code == ResponseCode.MESSAGE_ILLEGAL
    r = await conn.request(RemotingCommand.request(99999, {}), TIMEOUT)
    assert r.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert (await send(conn, "TopicM", b"still fine")).code == ResponseCode.SUCCESS


async def test_broker_unparsable_subscription_is_rejected_and_lite_pull_works(conn: Connection) -> None:
    await send(conn, "TopicSP", b"x")
    r = await pull(conn, "g", "TopicSP", 0, 0, subscription="||")
    assert r.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    r = await pull(conn, "g", "TopicSP", 0, 0, code=RequestCode.LITE_PULL_MESSAGE)
    assert r.code == ResponseCode.SUCCESS and [m.body for m in records(r)] == [b"x"]
