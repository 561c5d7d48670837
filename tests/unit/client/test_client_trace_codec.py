"""Java's message-trace format (:mod:`rocketpipe.client.trace.codec`) against golden strings.

The vectors in ``tests/vectors/java_trace/trace_data.txt`` were written by the real Java 5.3.3
``TraceDataEncoder`` (``tests/interop/vectors/CaptureTraceVectors.java``) from the same inputs
as :func:`_contexts` builds here.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketpipe.client.trace import (
    CONTENT_SPLITOR,
    FIELD_SPLITOR,
    MessageType,
    TraceBean,
    TraceContext,
    TraceType,
    decode_trace_data,
    encode_context,
    pack_trace_messages,
    trace_views,
)

VECTORS = Path(__file__).resolve().parents[2] / "vectors" / "java_trace" / "trace_data.txt"


def _vectors() -> tuple[dict[str, tuple[str, list[str]]], list[list[str]]]:
    encoded: dict[str, tuple[str, list[str]]] = {}
    decoded: list[list[str]] = []
    for line in VECTORS.read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line:
            continue
        cols = line.split("\t")
        if cols[0] == "decoded":
            decoded.append(cols[1:])
            continue
        name, data, keys = cols
        encoded[name] = (data.replace("\\x01", CONTENT_SPLITOR).replace("\\x02", FIELD_SPLITOR), keys.split(","))
    return encoded, decoded


def _contexts() -> dict[str, TraceContext]:
    """The inputs CaptureTraceVectors.java encodes (Java's TraceBean defaults where it sets nothing)."""
    pub_bean = TraceBean(
        topic="TopicA",
        msg_id="7F00000100002A9F0000000000000001",
        tags="TagA",
        keys="k1 k2",
        store_host="127.0.0.1:10911",
        body_length=5,
        msg_type=MessageType.Normal_Msg,
        offset_msg_id="7F00000100002A9F00000000000000C8",
    )
    nulls = TraceBean(
        topic="TopicB",
        msg_id="ID2",
        tags=None,
        keys=None,
        store_host="10.0.0.1:10911",
        msg_type=MessageType.Delay_Msg,
        offset_msg_id="OFF2",
    )
    s1 = TraceBean(msg_id="ID1", keys="k1")
    s2 = TraceBean(msg_id="ID2", retry_times=2, keys=None)
    tx = TraceBean(
        topic="TxTopic",
        msg_id="TXID",
        tags="T",
        keys="tk",
        store_host="127.0.0.1:10911",
        msg_type=MessageType.Trans_msg_Commit,
        transaction_id="TXID",
        transaction_state="COMMIT_MESSAGE",
        from_transaction_check=True,
    )
    return {
        "pub": TraceContext(TraceType.Pub, 1700000000123, "DefaultRegion", "pg", cost_time=3, trace_beans=[pub_bean]),
        "pub_nulls": TraceContext(TraceType.Pub, 1700000000200, "r1", "pg2", is_success=False, trace_beans=[nulls]),
        "sub_before": TraceContext(
            TraceType.SubBefore, 1700000001000, "DefaultRegion", "cg", request_id="REQ1", trace_beans=[s1, s2]
        ),
        "sub_after": TraceContext(
            TraceType.SubAfter,
            1700000001010,
            "DefaultRegion",
            "cg",
            cost_time=7,
            request_id="REQ1",
            context_code=4,
            trace_beans=[s1, s2],
        ),
        "end_transaction": TraceContext(
            TraceType.EndTransaction, 1700000002000, "DefaultRegion", "tpg", trace_beans=[tx]
        ),
        "recall": TraceContext(
            TraceType.Recall,
            1700000003000,
            "DefaultRegion",
            "pg",
            is_success=False,
            trace_beans=[TraceBean(topic="TopicA", msg_id="RID")],
        ),
    }


def test_the_vectors_cover_every_trace_type() -> None:
    encoded, decoded = _vectors()
    assert set(encoded) == set(_contexts())
    assert {c.trace_type for c in _contexts().values()} == set(TraceType)
    assert len(decoded) == 3


@pytest.mark.parametrize("name", sorted(_contexts()))
def test_encode_equals_java(name: str) -> None:
    data, keys = _vectors()[0][name]
    bean = encode_context(_contexts()[name])
    assert bean.data == data
    assert sorted(bean.keys) == keys


def test_decode_equals_java() -> None:
    encoded, decoded = _vectors()
    ctxs = decode_trace_data(encoded["pub"][0] + encoded["sub_after"][0])
    got = [
        [
            c.trace_type.value,
            str(c.time_stamp),
            c.region_id or "",
            c.group_name,
            str(c.cost_time),
            "true" if c.is_success else "false",
            "-" if c.trace_type is TraceType.Pub else c.request_id,
            str(c.context_code),
            c.trace_beans[0].msg_id,
            str(c.trace_beans[0].keys),
            str(c.trace_beans[0].tags),
            c.trace_beans[0].offset_msg_id,
        ]
        for c in ctxs
    ]
    assert got == decoded


@pytest.mark.parametrize("name", sorted(_contexts()))
def test_round_trip_splits_batches_into_one_bean_per_record(name: str) -> None:
    ctx = _contexts()[name]
    back = decode_trace_data(encode_context(ctx).data)
    assert len(back) == len(ctx.trace_beans)
    for got, bean in zip(back, ctx.trace_beans, strict=True):
        assert got.trace_type is ctx.trace_type
        assert got.group_name == ctx.group_name and got.time_stamp == ctx.time_stamp
        assert got.is_success == ctx.is_success and got.cost_time == ctx.cost_time
        assert got.trace_beans[0].msg_id == bean.msg_id
        assert got.trace_beans[0].keys == ("null" if bean.keys is None else bean.keys)
    if ctx.trace_type is TraceType.EndTransaction:
        b = back[0].trace_beans[0]
        assert (b.transaction_id, b.transaction_state, b.from_transaction_check) == ("TXID", "COMMIT_MESSAGE", True)
        assert b.msg_type is MessageType.Trans_msg_Commit
    if ctx.trace_type is TraceType.SubBefore:
        assert [c.trace_beans[0].retry_times for c in back] == [0, 2]
        assert {c.request_id for c in back} == {"REQ1"} and back[0].region_id == "DefaultRegion"
    if ctx.trace_type is TraceType.SubAfter:
        assert {(c.request_id, c.context_code) for c in back} == {("REQ1", 4)}


def _fields(*fields: str) -> str:
    return CONTENT_SPLITOR.join(fields) + FIELD_SPLITOR


def test_decode_accepts_the_older_and_cloud_layouts() -> None:
    """Pub without offsetMsgId (13 fields) or with a clientHost (15); SubAfter without
    timeStamp / groupName (a CLOUD client) or without contextCode (an old client)."""
    common = ["Pub", "5", "R", "g", "T", "ID", "tg", "ks", "h:1", "9", "2", "1"]
    ctxs = decode_trace_data(
        _fields(*common, "false")
        + _fields(*common, "OFF", "true", "10.0.0.9")
        + _fields("SubAfter", "REQ", "ID", "4", "true", "ks", "2")
        + _fields("SubAfter", "REQ", "ID", "4", "false", "ks")
    )
    assert [c.is_success for c in ctxs] == [False, True, True, False]
    assert ctxs[0].trace_beans[0].offset_msg_id == "" and ctxs[0].trace_beans[0].msg_type is MessageType.Trans_Msg_Half
    assert (ctxs[1].trace_beans[0].offset_msg_id, ctxs[1].trace_beans[0].client_host) == ("OFF", "10.0.0.9")
    assert (ctxs[2].context_code, ctxs[2].time_stamp, ctxs[2].group_name) == (2, 0, "")
    assert ctxs[3].context_code == 0


def test_decode_skips_bad_and_unknown_records_but_keeps_the_rest() -> None:
    good = _fields("SubBefore", "7", "R", "cg", "REQ", "ID", "1", "k")
    data = (
        _fields("Pub", "x-not-a-number", "R")
        + _fields("Teleport", "1")
        + good
        + FIELD_SPLITOR  # an empty record
        + _fields("SubBefore", "8", "R", "cg", "REQ", "ID2", "0", "")  # Java throws on this one
    )
    ctxs = decode_trace_data(data)
    assert [c.trace_beans[0].msg_id for c in ctxs] == ["ID", "ID2"]
    assert ctxs[0].trace_beans[0].retry_times == 1 and ctxs[1].trace_beans[0].keys == ""
    assert decode_trace_data("") == []


def test_keys_are_the_msg_ids_and_user_keys_once_each() -> None:
    s1 = TraceBean(msg_id="A", keys="k1 k2 k1")
    s2 = TraceBean(msg_id="B", keys="k2")
    bean = encode_context(TraceContext(TraceType.SubBefore, trace_beans=[s1, s2]))
    assert bean.keys == ("A", "k1", "k2", "B")


def test_encode_needs_a_bean_for_single_message_types() -> None:
    with pytest.raises(ValueError, match="needs a trace bean"):
        encode_context(TraceContext(TraceType.Pub))
    assert encode_context(TraceContext(TraceType.SubBefore)).data == ""


def _pub(msg_id: str, topic: str, region: str | None = "R", keys: str | None = None) -> TraceContext:
    return TraceContext(
        TraceType.Pub, 1, region, "pg", trace_beans=[TraceBean(topic=topic, msg_id=msg_id, keys=keys, tags="t")]
    )


def test_pack_groups_by_topic_skips_contexts_without_region_and_unions_keys() -> None:
    ctxs = [_pub("A", "T1", keys="ka"), _pub("B", "T2"), _pub("C", "T1", keys="kc"), _pub("D", "T1", region=None)]
    msgs = pack_trace_messages(ctxs, "RMQ_SYS_TRACE_TOPIC", 128_000)
    assert [(m.topic, m.keys) for m in msgs] == [
        ("RMQ_SYS_TRACE_TOPIC", ("A", "ka", "C", "kc")),
        ("RMQ_SYS_TRACE_TOPIC", ("B",)),
    ]
    assert msgs[0].data == encode_context(ctxs[0]).data + encode_context(ctxs[2]).data
    assert msgs[0].body == msgs[0].data.encode()
    assert [c.trace_beans[0].msg_id for c in decode_trace_data(msgs[0].data)] == ["A", "C"]


def test_pack_cuts_a_message_once_it_reaches_max_size() -> None:
    ctxs = [_pub(f"ID{i}", "T") for i in range(5)]
    one = len(encode_context(ctxs[0]).data)
    msgs = pack_trace_messages(ctxs, "TT", 2 * one)  # the 2nd context reaches the cap: cut after it
    assert [m.keys for m in msgs] == [("ID0", "ID1"), ("ID2", "ID3"), ("ID4",)]
    assert pack_trace_messages([], "TT", 10) == []


def test_trace_views_keep_the_records_of_one_msg_id() -> None:
    data = (
        encode_context(_pub("A", "T", keys="x")).data.replace("true" + FIELD_SPLITOR, "false" + FIELD_SPLITOR).encode()
    )
    data += encode_context(
        TraceContext(TraceType.SubBefore, 2, "R", "cg", request_id="Q", trace_beans=[TraceBean(msg_id="A")])
    ).data.encode()
    data += encode_context(_pub("B", "T")).data.encode()
    views = trace_views("A", data, "10.1.1.1:4242")
    assert [(v.trace_type, v.group_name, v.status, v.client_host) for v in views] == [
        (TraceType.Pub, "pg", "failed", "10.1.1.1:4242"),
        (TraceType.SubBefore, "cg", "success", "10.1.1.1:4242"),
    ]
    assert views[0].topic == "T" and views[0].keys == "x" and views[0].tags == "t"
    assert views[1].context.request_id == "Q" and views[1].context.region_id == "R"
    assert trace_views("Z", data, "h:1") == []


_text = st.text(
    alphabet=st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)), min_size=1, max_size=12
)


@given(
    ts=st.integers(0, 2**62),
    region=_text,
    group=_text,
    topic=_text,
    msg_id=_text,
    tags=_text,
    keys=_text,
    cost=st.integers(0, 2**31 - 1),
    ok=st.booleans(),
    msg_type=st.sampled_from(list(MessageType)),
)
def test_pub_round_trip_property(
    ts: int,
    region: str,
    group: str,
    topic: str,
    msg_id: str,
    tags: str,
    keys: str,
    cost: int,
    ok: bool,
    msg_type: MessageType,
) -> None:
    bean = TraceBean(topic=topic, msg_id=msg_id, tags=tags, keys=keys, store_host="h:1", msg_type=msg_type)
    ctx = TraceContext(TraceType.Pub, ts, region, group, cost_time=cost, is_success=ok, trace_beans=[bean])
    [back] = decode_trace_data(encode_context(ctx).data)
    assert back == TraceContext(TraceType.Pub, ts, region, group, cost_time=cost, is_success=ok, trace_beans=[bean])
