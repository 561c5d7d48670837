"""decode_records: its one-record-at-a-time loop, compiled (``_records.c``) and in Python, gives
exactly what decode_record gives record by record, values and errors alike."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiled_loops import both_loops
from rocketpipe.errors import ProtocolError
from rocketpipe.protocol import message
from rocketpipe.protocol import sysflag as sf
from rocketpipe.protocol.compression import compress_zlib
from rocketpipe.protocol.message import MessageExt, decode_record, decode_records, encode_record

# the fixture's loop choice holds for every example of a test
FAST = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


loop = both_loops(message, ("_compiled", "_compiled_decode"))


def _record_loop(buf: bytes | memoryview, **kw: bool) -> list[MessageExt]:
    out: list[MessageExt] = []
    pos = 0
    while pos < len(buf):
        msg, pos = decode_record(buf, pos, **kw)
        out.append(msg)
    return out


def _outcome(decode: Callable[[bytes], list[MessageExt]], data: bytes) -> object:
    """The messages, or the ProtocolError's text."""
    try:
        return decode(data)
    except ProtocolError as exc:
        return str(exc)


def _mixed_records() -> bytes:
    """Records of every kind: IPv4 / IPv6 hosts, compressed bodies, empty properties, two topics,
    properties Java's parser drops or keeps in part."""
    recs = []
    for i in range(12):
        body = bytes(range(i * 7 % 256)) * 3
        sys_flag = 0
        if i % 4 == 3:
            body, sys_flag = compress_zlib(body), sf.COMPRESSED_FLAG
        props: str | dict[str, str] = [{}, {"UNIQ_KEY": f"K{i}", "TAGS": "a"}, "A\x01\x01b\x02\x02c\x01d\x02k\x01"][
            i % 3
        ]
        recs.append(
            encode_record(
                topic="T" if i < 6 else "Other",
                body=body,
                properties=props,
                queue_id=i % 2,
                queue_offset=i,
                physical_offset=i * 1000,
                sys_flag=sys_flag,
                born_host="[::1]:5" if i % 5 == 4 else "10.0.0.2:9",
                store_host="[::2]:3" if i % 6 == 5 else "127.0.0.1:10911",
            )
        )
    return b"".join(recs)


def test_decode_records_one_loop_equals_decode_record() -> None:
    # the loop of decode_records (bytes bodies) gives exactly what decode_record gives, record by record
    buf = _mixed_records()
    for kw in ({}, {"decompress_body": False}, {"read_body": False}):
        expected = _record_loop(buf, **kw)
        assert decode_records(buf, **kw) == expected
        assert decode_records(memoryview(buf), **kw) == expected
    assert {m.topic for m in decode_records(buf)} == {"T", "Other"}


def test_decode_records_corrupt_bodies_fail_as_decode_record_does() -> None:
    buf = _mixed_records()
    for at in range(0, len(buf), 7):
        for value in (0x00, 0x7F, 0x80, 0xFF):
            raw = bytearray(buf)
            raw[at] = value
            for cut in (len(raw), len(raw) - 1, at + 1):
                data = bytes(raw[:cut])
                assert _outcome(decode_records, data) == _outcome(_record_loop, data), (at, value, cut)


# raw property strings: separators anywhere, empty names and values, non-ASCII text
raw_props = st.lists(
    st.sampled_from(["\x01", "\x02", "k", "v", "UNIQ_KEY", "é", "\u20ac", "\U0001f600"]), max_size=12
).map("".join)
# up to 240 UTF-8 bytes: over 127, a v2 record (two-byte topic length)
topics = st.lists(st.sampled_from(["T", "o", "é", "x" * 60]), min_size=1, max_size=4).map("".join)
hosts = st.sampled_from(["10.0.0.2:9", "127.0.0.1:10911", "192.168.1.1:1", "[::1]:5", "[fe80::2]:7"])


@st.composite
def records(draw: st.DrawFn) -> bytes:
    body = draw(st.binary(max_size=30))
    sys_flag = draw(st.sampled_from([0, sf.MULTI_TAGS_FLAG, sf.TRANSACTION_PREPARED_TYPE]))
    if draw(st.booleans()):
        body, sys_flag = compress_zlib(body), sys_flag | sf.COMPRESSED_FLAG
    return encode_record(
        topic=draw(topics),
        body=body,
        properties=draw(raw_props | st.dictionaries(st.sampled_from(["A", "TAGS", "é"]), st.just("v"))),
        queue_id=draw(st.integers(0, 2**31 - 1)),
        flag=draw(st.integers(-(2**31), 2**31 - 1)),
        queue_offset=draw(st.integers(0, 2**62)),
        physical_offset=draw(st.integers(0, 2**62)),
        sys_flag=sys_flag,
        born_timestamp=draw(st.integers(0, 2**62)),
        born_host=draw(hosts),
        store_timestamp=draw(st.integers(0, 2**62)),
        store_host=draw(hosts),
        reconsume_times=draw(st.integers(0, 1000)),
        prepared_transaction_offset=draw(st.integers(0, 2**62)),
    )


@FAST
@given(st.lists(records(), max_size=6), st.sampled_from([{}, {"decompress_body": False}, {"read_body": False}]))
def test_any_records_decode_as_decode_record_does(recs: list[bytes], kw: dict[str, bool]) -> None:
    buf = b"".join(recs)
    expected = _record_loop(buf, **kw)
    for data in (buf, bytearray(buf), memoryview(buf)):
        assert decode_records(data, **kw) == expected


@FAST
@given(st.lists(records(), min_size=1, max_size=3), st.data())
def test_damaged_records_fail_or_decode_as_decode_record_does(recs: list[bytes], data: st.DataObject) -> None:
    raw = bytearray(b"".join(recs))
    for _ in range(data.draw(st.integers(1, 4))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    cut = bytes(raw[: data.draw(st.integers(0, len(raw)))])
    assert _outcome(decode_records, cut) == _outcome(_record_loop, cut)


def test_many_hosts_and_topics_in_one_body() -> None:
    # the loop keeps the last host and topic: every change of either is looked up again
    recs = [
        encode_record(
            topic=f"T{i % 3}",
            body=b"b%d" % i,
            properties={
                "UNIQ_KEY": f"K{i}",
                f"P{i % 20}": "same",
                "V": f"v{i % 3}",
                **{f"N{j}": "n" for j in range(i % 20)},
            },
            queue_id=i,
            physical_offset=i * 100,
            born_host=f"10.0.{i % 4}.1:{i}",
            store_host=f"127.0.0.{i % 2 + 1}:10911",
        )
        for i in range(40)
    ]
    msgs = decode_records(b"".join(recs))
    assert [(m.topic, m.born_host, m.store_host, m.msg_id) for m in msgs] == [
        (f"T{i % 3}", f"10.0.{i % 4}.1:{i}", f"127.0.0.{i % 2 + 1}:10911", f"K{i}") for i in range(40)
    ]
    assert [m.properties for m in msgs] == [
        {"UNIQ_KEY": f"K{i}", f"P{i % 20}": "same", "V": f"v{i % 3}", **{f"N{j}": "n" for j in range(i % 20)}}
        for i in range(40)
    ]  # more names than the loop keeps decoded (16), values changing and repeating
    assert msgs[7].offset_msg_id == message.create_offset_msg_id("127.0.0.2:10911", 700)
    assert all(type(m) is MessageExt and m.broker_name == "" for m in msgs)


def test_the_compiled_loop_decodes_common_records_itself(loop: str) -> None:
    # not a fallback to decode_record: the loop returns the end of the records it decoded
    if loop == "python":
        assert message._compiled is None
        return
    rec = encode_record(topic="T", body=b"abc", properties={"UNIQ_KEY": "K1", "TAGS": "t"}, queue_id=1)
    out: list[object] = []
    assert message._compiled(rec * 3, 0, out, MessageExt, message._HOST_CACHE, 0) == 3 * len(rec)
    assert out == [decode_record(rec)[0]] * 3
    # it stops at the first record it does not decode: IPv6 hosts when asked to skip them
    v6 = encode_record(topic="T", body=b"abc", properties={}, queue_id=1, born_host="[::1]:5")
    assert message._compiled(rec + v6 + rec, 0, [], MessageExt, message._HOST_CACHE, sf.BORNHOST_V6_FLAG) == len(rec)
    with pytest.raises(ValueError, match="pos out of range"):
        message._compiled(rec, len(rec) + 1, [], MessageExt, message._HOST_CACHE, 0)


def test_the_compiled_loop_refuses_a_host_map_of_other_values(loop: str) -> None:
    if loop == "python":
        assert message._compiled is None
        return
    rec = encode_record(topic="T", body=b"abc", properties={}, queue_id=1)

    class Hosts(dict[int, object]):
        def __init__(self, value: object) -> None:
            super().__init__()
            self.value = value

        def __missing__(self, key: int) -> object:
            return self.value

    for value in (("10.0.0.1:1", 5), ("10.0.0.1:1",), "10.0.0.1:1"):
        with pytest.raises(TypeError, match="hosts must map to"):
            message._compiled(rec, 0, [], MessageExt, Hosts(value), 0)
    with pytest.raises(KeyError):  # a plain dict: no entry made on a miss
        message._compiled(rec, 0, [], MessageExt, {}, 0)
