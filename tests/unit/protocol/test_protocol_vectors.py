"""Golden byte vectors (tests/vectors/protocol_*.hex): frames, records, batches, JSON bodies."""

from __future__ import annotations

import orjson
import pytest
from _protocol_vectors import load_hex

from rocketpipe.protocol.bodies import ConsumeStats, HeartbeatData, TopicRouteData
from rocketpipe.protocol.bodies.heartbeat import ConsumerData, ProducerData, SubscriptionData
from rocketpipe.protocol.codes import LanguageCode, SerializeType
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.protocol.frame import FrameDecoder, encode_frame
from rocketpipe.protocol.message import (
    Message,
    MessageQueue,
    create_offset_msg_id,
    decode_batch,
    decode_record,
    encode_batch,
    encode_record,
)


def _route_cmd(stype: SerializeType) -> RemotingCommand:
    return RemotingCommand(code=105, opaque=1, ext_fields={"topic": "T"}, version=401, serialize_type=stype)


@pytest.mark.parametrize(
    ("vector", "stype"),
    [
        ("protocol_frame_route_binary.hex", SerializeType.ROCKETMQ),
        ("protocol_frame_route_json.hex", SerializeType.JSON),
    ],
)
def test_frame_encodes_to_reference_bytes(vector: str, stype: SerializeType) -> None:
    assert encode_frame(_route_cmd(stype)) == load_hex(vector)


@pytest.mark.parametrize("vector", ["protocol_frame_route_binary.hex", "protocol_frame_route_json.hex"])
def test_frame_decodes_reference_bytes(vector: str) -> None:
    dec = FrameDecoder()
    dec.feed(load_hex(vector))
    cmd = dec.next()
    assert cmd is not None and dec.next() is None
    assert (cmd.code, cmd.opaque, cmd.flag, cmd.version, cmd.ext_fields, cmd.remark, cmd.body) == (
        105,
        1,
        0,
        401,
        {"topic": "T"},
        None,
        b"",
    )
    assert cmd.language == LanguageCode.PYTHON


def test_record_matches_hand_computed_layout() -> None:
    raw = load_hex("protocol_record_v1_ipv4.hex")
    built = encode_record(
        topic="T",
        body=b"hello",
        properties={"TAGS": "a"},
        queue_id=3,
        queue_offset=7,
        physical_offset=4096,
        born_timestamp=1700000000000,
        born_host="10.0.0.5:52000",
        store_timestamp=1700000000123,
        store_host="10.0.0.1:10911",
    )
    assert built == raw
    msg, end = decode_record(raw)
    assert end == len(raw) == msg.store_size == 104
    assert (msg.topic, msg.body, msg.tags, msg.queue_id, msg.queue_offset, msg.commit_log_offset) == (
        "T",
        b"hello",
        "a",
        3,
        7,
        4096,
    )
    assert (msg.born_host, msg.store_host) == ("10.0.0.5:52000", "10.0.0.1:10911")
    assert (msg.born_timestamp, msg.store_timestamp, msg.body_crc) == (1700000000000, 1700000000123, 0x3610A686)
    assert msg.offset_msg_id == "0A00000100002A9F0000000000001000"
    assert msg.offset_msg_id == create_offset_msg_id("10.0.0.1:10911", 4096)
    assert msg.msg_id == msg.offset_msg_id  # no UNIQ_KEY


def test_batch_matches_hand_computed_layout() -> None:
    raw = load_hex("protocol_batch_body.hex")
    msgs = [Message("T", b"a", 0, {"TAGS": "x"}), Message("T", b"bc", 1, {})]
    assert encode_batch(msgs) == raw
    assert decode_batch(raw) == [(0, b"a", "TAGS\x01x\x02"), (1, b"bc", "")]


def test_route_fastjson_reference_body() -> None:
    raw = load_hex("protocol_body_route_fastjson.hex")
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(raw)  # really non-standard
    route = TopicRouteData.decode(raw)
    assert route.broker_datas[0].broker_addrs == {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}
    assert route.broker_datas[0].select_broker_addr() == "10.0.0.1:10911"
    q = route.queue_datas[0]
    assert (q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm, q.topic_sys_flag) == ("broker-a", 4, 4, 6, 0)
    std = route.encode(standard_json=True)
    assert orjson.loads(std)["brokerDatas"][0]["brokerAddrs"] == {"0": "10.0.0.1:10911", "1": "10.0.0.2:10911"}
    legacy = route.encode(standard_json=False)
    assert b'{0:"10.0.0.1:10911",1:"10.0.0.2:10911"}' in legacy
    assert TopicRouteData.decode(std) == TopicRouteData.decode(legacy) == route


def test_consume_stats_reference_body() -> None:
    raw = load_hex("protocol_body_consume_stats_fastjson.hex")
    stats = ConsumeStats.decode(raw)
    mq = MessageQueue("T", "broker-a", 0)
    w = stats.offset_table[mq]
    assert (w.broker_offset, w.consumer_offset, w.pull_offset, w.last_timestamp) == (10, 8, 8, 0)
    assert stats.consume_tps == 0.0
    assert stats.compute_total_diff() == 2
    # our writer uses the same object-literal key text, compact
    assert b'{{"brokerName":"broker-a","queueId":0,"topic":"T"}:{"brokerOffset":10,' in stats.encode()


def test_heartbeat_encodes_exactly_like_java() -> None:
    raw = load_hex("protocol_body_heartbeat_java.hex")
    hb = HeartbeatData(
        client_id="10.0.0.5@4242#81237781",
        producer_data_set=[ProducerData("CLIENT_INNER_PRODUCER")],
        consumer_data_set=[
            ConsumerData(
                "cg",
                subscription_data_set=[
                    SubscriptionData.build("T", "*", sub_version=1700000000000),
                    SubscriptionData.build("%RETRY%cg", "*", sub_version=1700000000001),
                ],
            )
        ],
    )
    assert hb.encode() == raw
    assert HeartbeatData.decode(raw) == hb
