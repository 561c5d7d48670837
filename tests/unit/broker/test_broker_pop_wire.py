"""POP wire formats (extraInfo, offset infos, batch-ack body, headers) and the pure bookkeeping."""

from __future__ import annotations

import base64

import orjson
import pytest

from rocketpipe.broker.pop.checkpoint import CheckpointTable, decide_revive, first_pop_time_properties
from rocketpipe.errors import HeaderError, InvalidArgumentError, ProtocolError
from rocketpipe.protocol.headers.pop import (
    AckMessageRequestHeader,
    BatchAck,
    BatchAckMessageRequestBody,
    ChangeInvisibleTimeRequestHeader,
    ExtraInfo,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
    build_msg_offset_info,
    build_order_count_info,
    build_start_offset_info,
    parse_msg_offset_info,
    parse_order_count_info,
    parse_start_offset_info,
    pop_retry_topic,
    real_topic,
    retry_flag,
)

# ---------------------------------------------------------------------------------- extraInfo


def test_broker_pop_extra_info_builds_the_java_eight_field_string() -> None:
    ei = ExtraInfo.of(5, 1_700_000_000_000, 60_000, 3, "%RETRY%cg_TopicA", "broker-a", 0, 7)
    assert ei.build() == "5 1700000000000 60000 3 1 broker-a 0 7"
    assert ExtraInfo.parse(ei.build()) == ei
    assert ei.deadline_ms == 1_700_000_060_000
    assert ei.real_topic("TopicA", "cg") == "%RETRY%cg_TopicA"


def test_broker_pop_extra_info_legacy_seven_fields_and_order_flag() -> None:
    ei = ExtraInfo.parse("10 123 30000 999 0 b 2")
    assert ei.queue_offset is None and ei.is_order and ei.build() == "10 123 30000 999 0 b 2"
    assert ExtraInfo.of(0, 1, 2, 3, "T", "b", 4).build() == "0 1 2 3 0 b 4"


@pytest.mark.parametrize("bad", ["", "1 2 3", "a 2 3 4 0 b 1 2", "1 2 3 4 0 b x"])
def test_broker_pop_extra_info_rejects_malformed_handles(bad: str) -> None:
    with pytest.raises(InvalidArgumentError):
        ExtraInfo.parse(bad)


def test_broker_pop_retry_flags_and_topics_follow_keybuilder() -> None:
    assert retry_flag("TopicA") == "0"
    assert retry_flag("%RETRY%cg_TopicA") == "1"
    assert retry_flag("%RETRY%cg+TopicA") == "2"
    assert pop_retry_topic("TopicA", "cg") == "%RETRY%cg_TopicA"
    assert pop_retry_topic("TopicA", "cg", v2=True) == "%RETRY%cg+TopicA"
    assert real_topic("TopicA", "cg", "0") == "TopicA"
    assert real_topic("TopicA", "cg", "2") == "%RETRY%cg+TopicA"
    with pytest.raises(InvalidArgumentError):
        real_topic("TopicA", "cg", "7")


def test_broker_pop_offset_infos_round_trip_with_java_separators() -> None:
    s = build_start_offset_info("", "T", 1, 100)
    s = build_start_offset_info(s, "%RETRY%g_T", 0, 4)
    assert s == "0 1 100;1 0 4"
    assert parse_start_offset_info(s) == {"0@1": 100, "1@0": 4}
    m = build_msg_offset_info("", "T", 1, [100, 102])
    m = build_msg_offset_info(m, "%RETRY%g_T", 0, [4])
    assert m == "0 1 100,102;1 0 4"
    assert parse_msg_offset_info(m) == {"0@1": [100, 102], "1@0": [4]}
    o = build_order_count_info(build_order_count_info("", "T", 1, 2), "T", 1, 3, queue_offset=7)
    assert o == "0 1 2;0 qo1%7 3"
    assert parse_order_count_info(o) == {"0@1": 2, "0@qo1%7": 3}
    assert parse_start_offset_info(None) == {} and parse_msg_offset_info("") == {}
    with pytest.raises(ProtocolError):
        parse_start_offset_info("0 1 2;0 1 3")  # duplicate key
    with pytest.raises(ProtocolError):
        parse_msg_offset_info("0 1")


# ---------------------------------------------------------------------------------- headers


def test_broker_pop_request_header_uses_java_keys() -> None:
    h = PopMessageRequestHeader(
        consumer_group="cg",
        topic="T",
        queue_id=-1,
        max_msg_nums=32,
        invisible_time=60000,
        poll_time=5000,
        born_time=1,
        init_mode=1,
        exp_type="TAG",
        exp="a || b",
        bname="broker-a",
    )
    ext = h.to_ext_fields()
    assert ext == {
        "consumerGroup": "cg",
        "topic": "T",
        "queueId": "-1",
        "maxMsgNums": "32",
        "invisibleTime": "60000",
        "pollTime": "5000",
        "bornTime": "1",
        "initMode": "1",
        "expType": "TAG",
        "exp": "a || b",
        "order": "false",
        "bname": "broker-a",
    }
    assert PopMessageRequestHeader.from_ext_fields(ext) == h
    with pytest.raises(HeaderError):
        AckMessageRequestHeader.from_ext_fields({"consumerGroup": "cg", "topic": "T", "queueId": "0", "offset": "1"})
    ch = ChangeInvisibleTimeRequestHeader(
        consumer_group="g", topic="T", queue_id=0, extra_info="x", offset=3, invisible_time=9
    )
    assert ch.to_ext_fields()["invisibleTime"] == "9" and ch.to_ext_fields()["extraInfo"] == "x"
    rh = PopMessageResponseHeader.from_ext_fields(
        {"popTime": "5", "invisibleTime": "6", "reviveQid": "1", "restNum": "2", "msgOffsetInfo": "0 0 1"}
    )
    assert (rh.pop_time, rh.invisible_time, rh.revive_qid, rh.rest_num, rh.start_offset_info) == (5, 6, 1, 2, None)


# ---------------------------------------------------------------------------------- batch ack


def test_broker_pop_batch_ack_bitset_is_java_bitset_bytes_in_base64() -> None:
    # java.util.BitSet {1, 3, 5}.toByteArray() == {0x2A}; fastjson writes byte[] as base64
    ba = BatchAck("cg", "T", "0", 100, 1, 2, 1_700_000_000_000, 5000, frozenset({1, 3, 5}))
    obj = ba.to_obj()
    assert obj["b"] == base64.b64encode(b"\x2a").decode() == "Kg=="
    assert set(obj) == {"b", "c", "it", "pt", "q", "r", "rq", "so", "t"}
    body = BatchAckMessageRequestBody("broker-a", [ba])
    back = BatchAckMessageRequestBody.decode(body.encode())
    assert back == body and back.acks[0].offsets == [101, 103, 105]
    # long (alternate) names and a bit above one byte
    long_form = {
        "consumerGroup": "cg",
        "topic": "T",
        "retry": "1",
        "startOffset": 0,
        "queueId": 0,
        "reviveQueueId": 0,
        "popTime": 1,
        "invisibleTime": 2,
        "bitSet": base64.b64encode(b"\x01\x01").decode(),
    }
    parsed = BatchAckMessageRequestBody.decode(orjson.dumps({"acks": [long_form]}))
    assert parsed.broker_name is None and parsed.acks[0].offsets == [0, 8] and parsed.acks[0].retry == "1"
    with pytest.raises(ProtocolError):
        BatchAckMessageRequestBody.decode(b"not json")


def test_broker_pop_batch_ack_merges_handles_like_the_java_client() -> None:
    hs = [ExtraInfo.parse(s) for s in ("10 500 60000 1 0 b 0 10", "10 500 60000 1 0 b 0 12", "3 500 60000 1 1 b 0 4")]
    body = BatchAckMessageRequestBody.from_handles("T", "cg", hs)
    assert body.broker_name == "b"
    by_retry = {a.retry: a for a in body.acks}
    assert by_retry["0"].start_offset == 10 and by_retry["0"].offsets == [10, 12]
    assert by_retry["1"].offsets == [4] and by_retry["1"].topic == "T"
    with pytest.raises(InvalidArgumentError):
        BatchAckMessageRequestBody.from_handles("T", "cg", [ExtraInfo.parse("1 2 3 4 0 b 0")])


# ---------------------------------------------------------------------------------- checkpoints


def _add(t: CheckpointTable, start: int, pop_time: int, offsets: list[int], invisible: int = 1000, topic: str = "T"):
    return t.add(
        group="g",
        topic=topic,
        origin_topic="T",
        queue_id=0,
        start_offset=start,
        pop_time=pop_time,
        invisible_time=invisible,
        revive_qid=0,
        broker_name="b",
        offsets=offsets,
    )


def test_broker_pop_checkpoint_ack_settles_offsets_and_drops_empty_checkpoints() -> None:
    t = CheckpointTable()
    ck = _add(t, 0, 100, [0, 1, 3])
    assert t.ack("g", "T", 0, 0, 100, 1) is ck and ck.pending == [0, 3]
    assert t.ack("g", "T", 0, 0, 100, 1) is None  # already acked
    assert t.ack("g", "T", 0, 0, 999, 0) is None  # wrong pop time
    assert t.in_flight("g") == 2
    t.ack("g", "T", 0, 0, 100, 0)
    t.ack("g", "T", 0, 0, 100, 3)
    assert len(t) == 0 and t.in_flight("g") == 0


def test_broker_pop_checkpoint_same_key_prefers_matching_invisible_time() -> None:
    t = CheckpointTable()
    old = _add(t, 5, 100, [5, 6], invisible=1000)
    t.settle(old, 5)
    new = _add(t, 5, 100, [5], invisible=30_000)  # a change of invisibility in the same ms
    assert t.find("g", "T", 0, 5, 100, 5, 30_000) is new
    assert t.find("g", "T", 0, 5, 100, 6, 1000) is old
    assert [c.ck_id for c in t.due(100 + 1000)] == [old.ck_id]
    assert t.next_deadline() == 1100


def test_broker_pop_checkpoint_json_round_trip_keeps_offsets_and_pending() -> None:
    t = CheckpointTable()
    _add(t, 0, 100, [0, 2])
    t.set_pop_offset("g", "T", 0, 3)
    t.set_pop_offset("g", "%RETRY%g_T", 0, 1)
    obj = orjson.loads(orjson.dumps(t.to_json()))
    u = CheckpointTable()
    u.load_json(obj)
    assert not u.dirty  # freshly loaded
    assert u.pop_offset("g", "T", 0) == 3 and u.pop_offset("g", "%RETRY%g_T", 0) == 1
    assert u.ack("g", "T", 0, 0, 100, 2) is not None and u.in_flight("g") == 1
    assert u.dirty and t.in_flight("g") == 2  # the original is independent of the copy
    u.load_json({"checkpoints": [{"bad": 1}], "popOffsetTable": {"nosep": {"0": 1}}})
    assert len(u) == 0 and u.pop_offset("g", "T", 0) is None


def test_broker_pop_revive_rule_retries_until_max_then_dead_letters() -> None:
    d = decide_revive(group="g", ck_topic="T", retry_topic="%RETRY%g_T", reconsume_times=0, max_times=16)
    assert (d.topic, d.reconsume_times, d.is_dlq) == ("%RETRY%g_T", 1, False)
    d = decide_revive(group="g", ck_topic="%RETRY%g_T", retry_topic="%RETRY%g_T", reconsume_times=15, max_times=16)
    assert (d.topic, d.reconsume_times, d.is_dlq) == ("%RETRY%g_T", 16, False)
    d = decide_revive(group="g", ck_topic="%RETRY%g_T", retry_topic="%RETRY%g_T", reconsume_times=16, max_times=16)
    assert (d.topic, d.reconsume_times, d.is_dlq) == ("%DLQ%g", 17, True)
    props = first_pop_time_properties({"POP_CK": "x", "1ST_POP_TIME": "5"}, 2, 99)
    assert props == {"1ST_POP_TIME": "5"}
    assert first_pop_time_properties({}, 0, 99) == {"1ST_POP_TIME": "99"}
