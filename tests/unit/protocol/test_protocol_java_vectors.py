"""Golden vectors captured from the official Java implementation (Apache RocketMQ 5.3.3 and 4.9.8).

The ``tests/vectors/java/*.hex`` files were produced by ``tests/interop/vectors/CaptureVectors.java``
and ``CaptureVectors4.java`` (command and provenance in ``tests/interop/vectors/README.md`` and each file's first line); these
tests need no Java. Each vector is decoded with ``rocketpipe.protocol`` and its fields asserted,
then re-encoded and compared:

* byte-for-byte: every ROCKETMQ (binary) header frame (send-V2 request, pull request, send
  response with a non-ASCII/quoted remark, pull response with a 4-record body; 5.3.3 and 4.9.8);
  the JSON header frames whose Java ``extFields`` HashMap order happens to be sorted (both
  send-V2 requests); stored records (IPv4, IPv6 hosts, zlib-compressed body) and the pull body;
  the batch body; offset msg ids (IPv4 and IPv6); the properties string; both 5.3.3
  TopicRouteData JSON forms; ConsumeStats / ResetOffsetBody (MessageQueue object keys);
  HeartbeatData.
* equal as parsed JSON, same length and same top-level key order, not byte-identical: the
  other JSON header frames (Java writes ``extFields`` in HashMap order, we sort the keys).
* 4.9.8 route data: identical once our 5.x-only ``"enableActingMaster":false`` is dropped.
"""

from __future__ import annotations

import json
import zlib

import pytest
from _protocol_vectors import VECTORS, load_hex

from rocketpipe.protocol import message as msg
from rocketpipe.protocol import sysflag as sf
from rocketpipe.protocol.bodies import javajson as jj
from rocketpipe.protocol.bodies.admin import ConsumeStats, ResetOffsetBody
from rocketpipe.protocol.bodies.heartbeat import HeartbeatData
from rocketpipe.protocol.bodies.route import TopicRouteData
from rocketpipe.protocol.codes import LanguageCode, RequestCode, ResponseCode, SerializeType
from rocketpipe.protocol.frame import FrameDecoder, decode_frame_payload, encode_frame
from rocketpipe.protocol.headers import (
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
)
from rocketpipe.protocol.message import MessageQueue

JAVA_VERSION_5_3_3 = 479  # MQVersion.Version.V5_3_3.ordinal()
JAVA_VERSION_4_9_8 = 409  # MQVersion.Version.V4_9_8.ordinal()
UNIQ1 = "7F00000100002A9F0000000000000001"


def vec(name: str) -> bytes:
    return load_hex(f"java/{name}.hex")


def test_every_vector_names_its_java_provenance() -> None:
    files = sorted((VECTORS / "java").glob("*.hex"))
    assert len(files) >= 25
    for f in files:
        first = f.read_text(encoding="utf-8").splitlines()[0]
        if f.name.startswith("v4_"):
            assert first.startswith("# provenance: apache/rocketmq 4.9.8 "), f.name
            assert "captured by tests/interop/vectors/CaptureVectors4.java on " in first, f.name
        else:
            assert first.startswith("# provenance: apache/rocketmq 5.3.3 "), f.name
            assert "captured by tests/interop/vectors/CaptureVectors.java on " in first, f.name


def frame(name: str):  # type: ignore[no-untyped-def]
    data = vec(name)
    dec = FrameDecoder()
    dec.feed(data)
    cmd = dec.next()
    assert cmd is not None and dec.next() is None and dec.buffered == 0
    assert decode_frame_payload(data[4:]) == cmd
    return data, cmd


def header_bytes(data: bytes) -> bytes:
    hlen = int.from_bytes(data[4:8], "big") & 0xFFFFFF
    return data[8 : 8 + hlen]


def assert_reencodes(data: bytes, cmd) -> None:  # type: ignore[no-untyped-def]
    """Re-encode ``cmd`` and compare with Java's frame.

    Binary (ROCKETMQ) headers: byte-for-byte (the decoded ext map keeps Java's order).
    JSON headers: Java writes ``extFields`` (a HashMap) in hash order, we write sorted keys; the
    frames are byte-identical when the two orders coincide, and otherwise equal as parsed JSON
    with the same length and the same top-level key order.
    """
    ours = encode_frame(cmd)
    if cmd.serialize_type == SerializeType.ROCKETMQ:
        assert ours == data
        return
    java_hdr = json.loads(header_bytes(data))
    our_hdr = json.loads(header_bytes(ours))
    assert our_hdr == java_hdr and list(our_hdr) == list(java_hdr)
    assert len(ours) == len(data) and ours[:8] == data[:8]
    if list(java_hdr["extFields"]) == sorted(java_hdr["extFields"]):
        assert ours == data


# ------------------------------------------------------------------------------ frames / headers

ST = {"json": SerializeType.JSON, "rocketmq": SerializeType.ROCKETMQ}


@pytest.mark.parametrize("st", ["json", "rocketmq"])
@pytest.mark.parametrize(("prefix", "version"), [("", JAVA_VERSION_5_3_3), ("v4_", JAVA_VERSION_4_9_8)])
def test_send_v2_request(st: str, prefix: str, version: int) -> None:
    data, cmd = frame(f"{prefix}send_v2_request_{st}")
    assert data[4] == ST[st]
    assert (cmd.code, cmd.opaque, cmd.flag, cmd.remark) == (RequestCode.SEND_MESSAGE_V2, 1001, 0, None)
    assert (cmd.language, cmd.version, cmd.serialize_type) == (LanguageCode.JAVA, version, ST[st])
    assert cmd.body == b"hello golden"
    h = SendMessageRequestHeaderV2.from_ext_fields(cmd.ext_fields)
    assert (h.producer_group, h.topic, h.default_topic, h.default_topic_queue_nums) == (
        "PG_golden",
        "GoldenTopic",
        "TBW102",
        4,
    )
    assert (h.queue_id, h.sys_flag, h.born_timestamp, h.flag, h.reconsume_times) == (2, 0, 1700000000000, 0, 0)
    assert (h.unit_mode, h.batch, h.max_reconsume_times, h.bname) == (False, False, None, None)
    assert msg.string_to_properties(h.properties or "") == {"KEYS": "k1", "TAGS": "tagA", "UNIQ_KEY": UNIQ1}
    assert h.to_v1().producer_group == "PG_golden"
    # our header class produces the same ext map Java put on the wire
    assert h.to_ext_fields() == cmd.ext_fields
    assert_reencodes(data, cmd)


@pytest.mark.parametrize("st", ["json", "rocketmq"])
def test_pull_request(st: str) -> None:
    data, cmd = frame(f"pull_request_{st}")
    assert (cmd.code, cmd.opaque, cmd.flag, cmd.body) == (RequestCode.PULL_MESSAGE, 1002, 0, b"")
    h = PullMessageRequestHeader.from_ext_fields(cmd.ext_fields)
    assert (h.consumer_group, h.topic, h.queue_id, h.queue_offset, h.max_msg_nums) == (
        "CG_golden",
        "GoldenTopic",
        1,
        128,
        32,
    )
    assert (h.sys_flag, h.commit_offset, h.suspend_timeout_millis) == (2, 100, 15000)
    assert (h.subscription, h.sub_version, h.expression_type) == ("tagA || tagB", 1700000000000, "TAG")
    assert h.to_ext_fields() == cmd.ext_fields
    assert_reencodes(data, cmd)


@pytest.mark.parametrize("st", ["json", "rocketmq"])
@pytest.mark.parametrize(("prefix", "version"), [("", JAVA_VERSION_5_3_3), ("v4_", JAVA_VERSION_4_9_8)])
def test_send_response_with_remark(st: str, prefix: str, version: int) -> None:
    data, cmd = frame(f"{prefix}send_response_{st}")
    assert (cmd.version, cmd.serialize_type) == (version, ST[st])
    assert cmd.is_response and not cmd.is_oneway
    assert (cmd.code, cmd.opaque, cmd.flag) == (ResponseCode.SUCCESS, 1001, 1)
    assert cmd.remark == 'send ok: \u00e9\u4e2d "quoted"'
    h = SendMessageResponseHeader.from_ext_fields(cmd.ext_fields)
    assert (h.msg_id, h.queue_id, h.queue_offset, h.transaction_id) == (
        "0A00000500002A9F0000000000001000",
        2,
        77,
        UNIQ1,
    )
    assert h.to_ext_fields() == cmd.ext_fields
    assert_reencodes(data, cmd)


def test_json_headers_parse_to_what_we_emit() -> None:
    """Structure check independent of byte order: Java's header JSON == ours, parsed."""
    for name in (
        "send_v2_request_json",
        "pull_request_json",
        "send_response_json",
        "v4_send_v2_request_json",
        "v4_send_response_json",
    ):
        data, cmd = frame(name)
        ours = encode_frame(cmd)
        assert json.loads(header_bytes(data)) == json.loads(header_bytes(ours)), name


def test_pull_response_frame_and_body() -> None:
    data, cmd = frame("pull_response_rocketmq")
    assert data[4] == SerializeType.ROCKETMQ
    assert (cmd.code, cmd.opaque, cmd.flag) == (ResponseCode.SUCCESS, 1002, 1)
    h = PullMessageResponseHeader.from_ext_fields(cmd.ext_fields)
    assert (h.suggest_which_broker_id, h.next_begin_offset, h.min_offset, h.max_offset) == (0, 131, 0, 131)
    assert cmd.body == vec("pull_body")
    assert encode_frame(cmd) == data


# ------------------------------------------------------------------------------ stored records

RAW_ZLIB_BODY = "".join(f"compressible golden body {i % 4} " for i in range(64)).encode()


def reencode(m: msg.MessageExt, body: bytes, props: str) -> bytes:
    return msg.encode_record(
        topic=m.topic,
        body=body,
        properties=props,
        queue_id=m.queue_id,
        flag=m.flag,
        queue_offset=m.queue_offset,
        physical_offset=m.commit_log_offset,
        sys_flag=m.sys_flag,
        born_timestamp=m.born_timestamp,
        born_host=m.born_host,
        store_timestamp=m.store_timestamp,
        store_host=m.store_host,
        reconsume_times=m.reconsume_times,
        prepared_transaction_offset=m.prepared_transaction_offset,
        crc=None,
    )


def props_string(rec: bytes) -> str:
    """The properties string re-built from the decoded map; it must equal the stored one byte
    for byte (decoding keeps Java's HashMap order)."""
    m, _ = msg.decode_record(rec, decompress_body=False)
    s = msg.properties_to_string(m.properties)
    assert rec.endswith(len(s.encode()).to_bytes(2, "big") + s.encode())
    return s


def test_record_ipv4() -> None:
    rec = vec("record_ipv4")
    m, end = msg.decode_record(rec)
    assert end == len(rec) == m.store_size == 210
    assert (m.topic, m.queue_id, m.queue_offset, m.commit_log_offset, m.sys_flag, m.flag) == (
        "GoldenTopic",
        1,
        128,
        4096,
        0,
        0,
    )
    assert m.body == b"hello golden" and m.body_crc == zlib.crc32(b"hello golden") & 0x7FFFFFFF
    assert (m.born_host, m.born_timestamp, m.store_host, m.store_timestamp) == (
        "10.0.0.5:52000",
        1700000000000,
        "10.0.0.1:10911",
        1700000000123,
    )
    assert m.properties == {"TAGS": "tagA", "KEYS": "k1 k2", "UNIQ_KEY": UNIQ1, "CONSUME_START_TIME": "1700000000500"}
    assert m.tags == "tagA" and m.msg_id == UNIQ1
    assert m.offset_msg_id == "0A00000100002A9F0000000000001000"
    assert reencode(m, m.body, props_string(rec)) == rec


def test_record_zlib_compressed() -> None:
    rec = vec("record_zlib")
    raw, _ = msg.decode_record(rec, decompress_body=False)
    assert raw.sys_flag == sf.COMPRESSED_FLAG | 0x300  # COMPRESSED | CompressionType.ZLIB flag
    assert raw.body_crc == zlib.crc32(raw.body) & 0x7FFFFFFF  # CRC of the stored (compressed) body
    assert zlib.decompress(raw.body) == RAW_ZLIB_BODY
    m, _ = msg.decode_record(rec)
    assert m.body == RAW_ZLIB_BODY and not m.sys_flag & sf.COMPRESSED_FLAG
    assert (m.flag, m.queue_offset, m.commit_log_offset) == (7, 129, 4096 + 210)
    assert m.properties == {"TAGS": "tagB", "UNIQ_KEY": "7F00000100002A9F0000000000000002"}
    assert reencode(raw, raw.body, props_string(rec)) == rec


def test_record_ipv6_hosts() -> None:
    rec = vec("record_ipv6")
    m, _ = msg.decode_record(rec)
    assert m.sys_flag == sf.BORNHOST_V6_FLAG | sf.STOREHOST_V6_FLAG | 0x8  # TRANSACTION_COMMIT_TYPE
    assert m.born_host == "2001:db8::5:52001"  # rocketpipe's host string form (no brackets)
    assert msg.encode_host(m.born_host)[0] == bytes.fromhex("20010db8000000000000000000000005") + (52001).to_bytes(
        4, "big"
    )
    assert msg.encode_host(m.store_host)[0] == bytes.fromhex("fe800000000000000000000000010002") + (10911).to_bytes(
        4, "big"
    )
    assert (m.topic, m.queue_id, m.queue_offset, m.reconsume_times, m.prepared_transaction_offset) == (
        "%RETRY%CG_golden",
        0,
        5,
        3,
        2048,
    )
    assert m.body == "ipv6 \u4e2d\u6587".encode()
    assert m.properties == {
        "TAGS": "tag\u00e9",
        "RETRY_TOPIC": "GoldenTopic",
        "UNIQ_KEY": "7F00000100002A9F0000000000000003",
    }
    assert m.offset_msg_id == "FE80000000000000000000000001000200002A9F" + format(m.commit_log_offset, "016X")
    assert reencode(m, m.body, props_string(rec)) == rec


def test_pull_body_several_records() -> None:
    body = vec("pull_body")
    ms = msg.decode_records(body)
    assert [m.queue_offset for m in ms] == [128, 129, 5, 130]
    assert body.startswith(vec("record_ipv4") + vec("record_zlib") + vec("record_ipv6"))
    assert [s for s, _ in msg.iter_record_spans(body)] == [0, 210, 427, 646]
    last = ms[3]
    assert last.body == b"" and last.sys_flag == sf.BORNHOST_V6_FLAG
    assert last.store_host == "10.0.0.1:10911" and last.properties == {"TAGS": "mixed"}
    assert last.commit_log_offset == 4096 + 646
    raws = msg.decode_records(body, decompress_body=False)
    out = b""
    for (s, e), m in zip(msg.iter_record_spans(body), raws, strict=True):
        out += reencode(m, m.body, props_string(body[s:e]))
    assert out == body


def test_msg_ids() -> None:
    ids = vec("msg_ids").decode().split()
    assert ids[0] == msg.create_offset_msg_id("10.0.0.1:10911", 4096) == "0A00000100002A9F0000000000001000"
    assert msg.decode_offset_msg_id(ids[0]) == ("10.0.0.1:10911", 4096)
    host6 = msg.decode_offset_msg_id(ids[1])[0]
    assert msg.create_offset_msg_id(host6, 4096 + 210 + 217) == ids[1]
    assert msg.decode_offset_msg_id(ids[1])[1] == 4096 + 210 + 217


def test_properties_string() -> None:
    data = vec("properties")
    props = msg.string_to_properties(data.decode())
    assert props == {"KEYS": "k1 k2", "TAGS": "tagA", "WAIT": "true", "DELAY": "3", "uk": "\u4e2d=x"}
    assert list(props) == ["KEYS", "TAGS", "WAIT", "DELAY", "uk"]
    assert msg.properties_to_string(props).encode() == data


# ------------------------------------------------------------------------------ batch body


def test_batch_body() -> None:
    data = vec("batch_body")
    entries = msg.decode_batch(data)
    assert [(f, b) for f, b, _ in entries] == [(0, b"batch one"), (5, "batch two \u4e2d".encode()), (0, b"")]
    props = [msg.string_to_properties(p) for _, _, p in entries]
    assert props[0] == {
        "u": "1",
        "KEYS": "key1",
        "UNIQ_KEY": "7F00000100002A9F0000000000000011",
        "WAIT": "true",
        "TAGS": "tagA",
    }
    assert props[1] == {"KEYS": "key2", "UNIQ_KEY": "7F00000100002A9F0000000000000012", "WAIT": "true", "TAGS": "tagB"}
    assert props[2] == {"WAIT": "true"}
    # re-encode from the decoded messages (properties keep Java's order)
    again = msg.encode_batch(
        [
            msg.Message(topic="GoldenTopic", body=b, flag=f, properties=p)
            for (f, b, _), p in zip(entries, props, strict=True)
        ]
    )
    assert again == data


# ------------------------------------------------------------------------------ JSON bodies


@pytest.mark.parametrize("prefix", ["", "v4_"])
def test_route_fastjson_form(prefix: str) -> None:
    data = vec(f"{prefix}route_fastjson")
    v5 = not prefix
    assert b'"brokerAddrs":{0:"10.0.0.1:10911",1:' in data  # bare Long keys
    rd = TopicRouteData.decode(data)
    assert [
        (q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm, q.topic_sys_flag) for q in rd.queue_datas
    ] == [("broker-a", 4, 4, 6, 0), ("broker-b", 8, 8, 4, 1)]
    assert [(b.cluster, b.broker_name, b.broker_addrs, b.enable_acting_master) for b in rd.broker_datas] == [
        ("DefaultCluster", "broker-a", {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}, False),
        ("DefaultCluster", "broker-b", {0: "[fe80::1:2]:10911"}, v5),
    ]
    if not v5:  # 4.x BrokerData has no enableActingMaster
        assert b"enableActingMaster" not in data
    assert rd.filter_server_table == {} and rd.order_topic_conf is None
    assert_route_bytes(rd.encode(standard_json=False), data, v5)


def assert_route_bytes(ours: bytes, java: bytes, v5: bool) -> None:
    """Our encoder writes the 5.x bean (with ``enableActingMaster``); against 5.3.3 it is
    byte-identical, against 4.9.8 identical once that one 5.x field is dropped (4.x readers
    ignore it)."""
    if v5:
        assert ours == java
    else:
        assert ours.replace(b',"enableActingMaster":false', b"") == java


@pytest.mark.parametrize("prefix", ["", "v4_"])
def test_route_standard_json_form(prefix: str) -> None:
    data = vec(f"{prefix}route_standard")
    assert json.loads(data)["brokerDatas"][0]["brokerAddrs"] == {"0": "10.0.0.1:10911", "1": "10.0.0.2:10911"}
    rd = TopicRouteData.decode(data)
    assert rd == TopicRouteData.decode(vec(f"{prefix}route_fastjson"))
    ours = rd.encode(standard_json=True)
    if not prefix:
        assert json.loads(ours) == json.loads(data)
    assert_route_bytes(ours, data, not prefix)


MQ_A0 = MessageQueue("GoldenTopic", "broker-a", 0)


def test_consume_stats_message_queue_keys() -> None:
    data = vec("consume_stats")
    cs = ConsumeStats.decode(data)
    assert cs.consume_tps == 12.5
    a0, b3 = cs.offset_table[MQ_A0], cs.offset_table[MessageQueue("GoldenTopic", "broker-b", 3)]
    assert (a0.broker_offset, a0.consumer_offset, a0.pull_offset, a0.last_timestamp) == (100, 90, 95, 1700000000000)
    assert (b3.broker_offset, b3.consumer_offset, b3.pull_offset, b3.last_timestamp) == (7, 7, 7, 0)
    assert cs.compute_total_diff() == 10
    assert jj.loads(cs.encode()) == jj.loads(data)
    assert cs.encode() == data


def test_reset_offset_body_message_queue_keys() -> None:
    data = vec("reset_offset_body")
    rb = ResetOffsetBody.decode(data)
    assert rb.offset_table == {MQ_A0: 42, MessageQueue("GoldenTopic", "broker-a", 1): 0}
    assert jj.loads(rb.encode()) == jj.loads(data)
    assert rb.encode() == data


def test_heartbeat() -> None:
    data = vec("heartbeat")
    hb = HeartbeatData.decode(data)
    assert hb.client_id == "10.0.0.5@golden#1" and (hb.heartbeat_fingerprint, hb.without_sub) == (0, False)
    assert [p.group_name for p in hb.producer_data_set] == ["PG_golden"]
    (cd,) = hb.consumer_data_set
    assert (cd.group_name, cd.consume_type, cd.message_model, cd.consume_from_where, cd.unit_mode) == (
        "CG_golden",
        "CONSUME_PASSIVELY",
        "CLUSTERING",
        "CONSUME_FROM_LAST_OFFSET",
        False,
    )
    (sd,) = cd.subscription_data_set
    assert (sd.topic, sd.sub_string, sd.sub_version, sd.expression_type, sd.class_filter_mode) == (
        "GoldenTopic",
        "tagA || tagB",
        1700000000000,
        "TAG",
        False,
    )
    assert sd.tags_set == {"tagA", "tagB"} and sd.code_set == {
        msg.java_string_hash("tagA"),
        msg.java_string_hash("tagB"),
    }
    assert json.loads(hb.encode()) == json.loads(data)
    assert hb.encode() == data
