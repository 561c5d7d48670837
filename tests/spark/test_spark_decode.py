"""Column-wise Arrow decoding of pull bodies, checked against the object decoder (no Spark)."""

from __future__ import annotations

import zlib
from datetime import UTC, datetime

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql.pandas.types import to_arrow_schema

from compiled_loops import both_loops
from rocketpipe.errors import ProtocolError
from rocketpipe.protocol import sysflag as sf
from rocketpipe.protocol.message import create_offset_msg_id, decode_records, encode_record
from rocketpipe.spark import decode
from rocketpipe.spark.decode import ARROW_SCHEMA, decode_bodies_to_batch, decode_records_to_batch, record_starts
from rocketpipe.spark.source import SCHEMA

# every test runs with the compiled record walk and properties split, and with the reference code
loop = both_loops(decode, ("_compiled_starts", "_compiled_starts_built"), ("_compiled_split", "_compiled_split_built"))


def _rec(offset: int, **kw: object) -> bytes:
    fields: dict[str, object] = {
        "topic": "TopicA",
        "body": f"body-{offset}".encode() * (offset % 4 + 1),
        "properties": {"TAGS": f"t{offset}", "KEYS": "k1 k2", "WAIT": "true", "UNIQ_KEY": f"UK{offset:030d}"},
        "queue_id": 3,
        "queue_offset": offset,
        "physical_offset": 1000 + 300 * offset,
        "born_timestamp": 1_700_000_000_000 + offset,
        "store_timestamp": 1_700_000_000_500 + offset,
        "born_host": "10.1.2.3:5555",
        "store_host": "10.0.0.9:10911",
        "reconsume_times": offset % 3,
    }
    fields.update(kw)
    return encode_record(**fields)  # type: ignore[arg-type]


def test_arrow_schema_matches_spark() -> None:
    assert to_arrow_schema(SCHEMA, timezone="UTC").equals(ARROW_SCHEMA)


def test_decodes_every_column_like_the_object_decoder() -> None:
    buf = b"".join(_rec(i) for i in range(7))
    batch = decode_records_to_batch(buf, broker_name="broker-a")
    assert batch.schema.equals(ARROW_SCHEMA)
    rows = batch.to_pylist()
    for row, msg in zip(rows, decode_records(buf), strict=True):
        assert row["topic"] == msg.topic
        assert row["broker_name"] == "broker-a"
        assert row["queue_id"] == msg.queue_id == 3
        assert row["queue_offset"] == msg.queue_offset
        assert row["msg_id"] == msg.msg_id == msg.properties["UNIQ_KEY"]
        assert row["tags"] == msg.tags
        assert row["keys"] == msg.keys == "k1 k2"
        assert row["body"] == msg.body
        assert row["born_timestamp"] == datetime.fromtimestamp(msg.born_timestamp / 1000, UTC)
        assert row["store_timestamp"] == datetime.fromtimestamp(msg.store_timestamp / 1000, UTC)
        assert row["reconsume_times"] == msg.reconsume_times
        assert dict(row["properties"]) == msg.properties


def test_msg_id_falls_back_to_offset_msg_id_and_missing_keys_are_null() -> None:
    recs = [_rec(0), _rec(1, properties={"WAIT": "true"}), _rec(2, properties="")]
    rows = decode_records_to_batch(b"".join(recs), broker_name="b").to_pylist()
    assert rows[0]["msg_id"] == f"UK{0:030d}"
    assert rows[1]["msg_id"] == create_offset_msg_id("10.0.0.9:10911", 1300)
    assert rows[2]["msg_id"] == create_offset_msg_id("10.0.0.9:10911", 1600)
    assert rows[1]["tags"] is None and rows[1]["keys"] is None
    assert rows[2]["properties"] == []


def test_properties_follow_java_parsing_rules() -> None:
    props = "A\x01one\x02A\x01two\x02\x01novalue\x02nokey\x01\x02x\x02B\x01b\x01c\x02C\x01tail"
    row = decode_records_to_batch(_rec(0, properties=props), broker_name="b").to_pylist()[0]
    assert dict(row["properties"]) == {"A": "two", "B": "b\x01c", "C": "tail"}
    assert len(row["properties"]) == 3


def test_compressed_ipv6_and_v2_records() -> None:
    big = b"z" * 5000
    recs = [
        _rec(0, body=zlib.compress(big), sys_flag=sf.COMPRESSED_FLAG | sf.COMPRESSION_ZLIB),
        _rec(1, born_host="[::1]:1", store_host="[fe80::1]:10911"),
        _rec(2, topic="%RETRY%" + "g" * 130),
        _rec(3, body=b""),
        _rec(4, body=b"short"),
    ]
    buf = b"".join(recs)
    rows = decode_records_to_batch(buf, broker_name="b").to_pylist()
    ref = decode_records(buf)
    assert rows[0]["body"] == big
    assert rows[1]["msg_id"] == f"UK{1:030d}"
    assert rows[1]["store_timestamp"] == datetime.fromtimestamp(ref[1].store_timestamp / 1000, UTC)
    assert rows[2]["topic"] == "%RETRY%" + "g" * 130
    assert [r["body"] for r in rows[3:]] == [b"", b"short"]
    assert [r["queue_offset"] for r in rows] == [0, 1, 2, 3, 4]
    ipv6_no_uniq = _rec(9, store_host="[fe80::1]:10911", properties={})
    row = decode_records_to_batch(ipv6_no_uniq, broker_name="b").to_pylist()[0]
    assert row["msg_id"] == create_offset_msg_id("[fe80::1]:10911", 1000 + 300 * 9)


def test_offset_window_filters_rows() -> None:
    buf = b"".join(_rec(i) for i in range(10, 20))
    batch = decode_records_to_batch(buf, broker_name="b", start_offset=12, end_offset=15)
    assert batch.column("queue_offset").to_pylist() == [12, 13, 14]


@pytest.mark.parametrize(
    "columns",
    [
        ["body"],
        ["msg_id", "queue_id", "queue_offset"],
        ["queue_offset", "topic"],
        ["properties", "born_timestamp", "broker_name", "reconsume_times", "store_timestamp", "tags", "keys"],
        ARROW_SCHEMA.names[::-1],
    ],
)
def test_selected_columns_equal_the_full_decode(columns: list[str]) -> None:
    buf = b"".join(_rec(i) for i in range(10, 20)) + _rec(20, properties={"TAGS": "x"})  # last: no UNIQ_KEY
    full = decode_records_to_batch(buf, broker_name="b", start_offset=11, end_offset=21)
    some = decode_records_to_batch(buf, broker_name="b", start_offset=11, end_offset=21, columns=columns)
    assert some.schema.names == columns
    assert some.equals(full.select(columns))
    empty = decode_records_to_batch(b"", broker_name="b", columns=columns)
    assert empty.num_rows == 0 and empty.schema.names == columns


def test_empty_buffer_gives_empty_batch() -> None:
    batch = decode_records_to_batch(b"", broker_name="b")
    assert batch.num_rows == 0 and batch.schema.equals(ARROW_SCHEMA)


@pytest.mark.parametrize("cut", [3, 50, 120])
def test_truncated_buffers_raise_protocol_error(cut: int) -> None:
    buf = _rec(0) + _rec(1)
    with pytest.raises(ProtocolError):
        decode_records_to_batch(buf[: len(buf) - cut], broker_name="b")


def test_bad_magic_and_lengths_raise_protocol_error() -> None:
    rec = bytearray(_rec(0))
    bad_magic = bytes(rec[:4]) + b"\x00\x00\x00\x01" + bytes(rec[8:])
    with pytest.raises(ProtocolError, match="magic"):
        decode_records_to_batch(bad_magic, broker_name="b")
    bad_body = bytearray(rec)
    bad_body[84:88] = (10_000).to_bytes(4, "big")
    with pytest.raises(ProtocolError, match="body length"):
        decode_records_to_batch(bytes(bad_body), broker_name="b")
    with pytest.raises(ProtocolError, match="size"):
        record_starts(b"\x00\x00\x00\x05" + bytes(100))


def test_many_records_with_large_bodies() -> None:
    recs = [_rec(i, body=bytes([i % 251]) * 1024) for i in range(2000)]
    batch = decode_records_to_batch(b"".join(recs), broker_name="b")
    assert batch.num_rows == 2000
    assert all(b == bytes([i % 251]) * 1024 for i, b in enumerate(batch.column("body").to_pylist()))
    assert isinstance(batch.column("properties"), pa.MapArray)


def test_several_pull_bodies_and_buffer_types_decode_alike() -> None:
    bodies = [b"".join(_rec(i) for i in range(lo, hi)) for lo, hi in ((0, 3), (3, 4), (4, 9))]
    joined = decode_records_to_batch(b"".join(bodies), broker_name="b", start_offset=1, end_offset=8)
    assert joined.column("queue_offset").to_pylist() == list(range(1, 8))
    assert decode_bodies_to_batch(bodies, broker_name="b", start_offset=1, end_offset=8).equals(joined)
    whole = b"".join(bodies)
    for buf in (bytearray(whole), memoryview(whole), memoryview(bytearray(whole))):
        assert decode_bodies_to_batch([buf], broker_name="b", start_offset=1, end_offset=8).equals(joined)
    # a two-dimensional view is read as its bytes
    flat = decode_records_to_batch(memoryview(whole).cast("B", shape=[1, len(whole)]), broker_name="b")
    assert flat.column("queue_offset").to_pylist() == list(range(9))


def test_topic_column_with_one_or_several_topics() -> None:
    same = decode_records_to_batch(b"".join(_rec(i) for i in range(4)), broker_name="b")
    assert same.column("topic").to_pylist() == ["TopicA"] * 4
    mixed = [_rec(0, topic="TopicA"), _rec(1, topic="TopicB"), _rec(2, topic="TopicA2"), _rec(3, topic="话题")]
    assert decode_records_to_batch(b"".join(mixed), broker_name="b").column("topic").to_pylist() == [
        "TopicA",
        "TopicB",
        "TopicA2",
        "话题",
    ]
    bad = bytearray(_rec(0, topic="TopicA") + _rec(1, topic="TopicA"))
    pos = bad.index(b"TopicA")
    bad[pos] = bad[pos + len(_rec(0))] = 0xFF  # the same invalid byte in both records
    with pytest.raises(ProtocolError, match="UTF-8"):
        decode_records_to_batch(bytes(bad), broker_name="b")


# ------------------------------------------------------------------------------ compiled and reference

# raw properties strings: the separators anywhere, empty names and values, repeated and system
# names, non-ASCII text
_piece = st.sampled_from(["\x01", "\x02", "TAGS", "KEYS", "UNIQ_KEY", "a", "b", "\u00e9", "\u4e2d", " ", "WAIT"])
_raw_props = st.lists(_piece, max_size=14).map("".join)


def _property_columns(buf: bytes) -> dict[str, list[object]]:
    names = ["properties", "tags", "keys", "msg_id", "headers"]
    return decode_records_to_batch(buf, broker_name="b", columns=names).to_pydict()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_raw_props, min_size=1, max_size=6))
def test_property_columns_equal_the_reference_split(loop: str, strings: list[str]) -> None:
    """Either way the map, tags, keys, msg_id and headers are the reference split's, which
    follows ``string2messageProperties`` (checked against the object decoder here too)."""
    buf = b"".join(_rec(i, properties=p) for i, p in enumerate(strings))
    got = _property_columns(buf)
    split, starts = decode._compiled_split, decode._compiled_starts
    decode._compiled_split = decode._compiled_starts = None
    try:
        assert got == _property_columns(buf)
    finally:
        decode._compiled_split, decode._compiled_starts = split, starts
    for row, msg in zip(got["properties"], decode_records(buf), strict=True):
        assert dict(row) == msg.properties and len(row) == len(msg.properties)


def test_the_compiled_split_serves_the_common_records(loop: str) -> None:
    buf = b"".join(_rec(i, properties={"TAGS": "t", "\u4e2d": "\u00e9", "UNIQ_KEY": f"U{i}"}) for i in range(5))
    assert decode._compiled_starts_built is not None and decode._compiled_split_built is not None
    starts = decode._compiled_starts_built(buf)
    assert starts is not None and list(memoryview(starts).cast("q")) == record_starts(buf)
    a, abuf = np.frombuffer(buf, dtype=np.uint8), pa.py_buffer(buf)
    f = decode._record_fields(a, np.asarray(record_starts(buf), dtype=np.int64))
    parsed = decode._properties_compiled(decode._compiled_split_built, abuf, f)
    assert parsed is not None  # served, not left to the reference
    assert parsed.tags.to_pylist() == ["t"] * 5 and parsed.uniq_key.to_pylist() == [f"U{i}" for i in range(5)]
    assert parsed.headers.to_pylist() == [[{"key": "\u4e2d", "value": "\u00e9".encode()}]] * 5


def test_the_compiled_walk_and_split_leave_bad_input_to_the_reference() -> None:
    walk, split = decode._compiled_starts_built, decode._compiled_split_built
    assert walk is not None and split is not None
    good = _rec(0)
    for bad in (good[:-1], good + b"\x00\x00", b"\x00\x00\x00\x05" + bytes(100)):
        assert walk(bad) is None
        with pytest.raises(ProtocolError):
            record_starts(bad)
    # a properties string that is not UTF-8: None, and the reference raises ProtocolError
    raw = bytearray(b"A\x01\xff\xfe")
    pos, lens = np.array([0], np.int64), np.array([len(raw)], np.int64)
    assert split(bytes(raw), pos, lens) is None
    with pytest.raises(ValueError, match="outside"):
        split(bytes(raw), pos, np.array([99], np.int64))
    with pytest.raises(ValueError, match="int64"):
        split(bytes(raw), pos, np.array([1, 2], np.int64))


def test_properties_that_are_not_utf8_raise_protocol_error() -> None:
    rec = _rec(0, properties="A\x01zq\x02B\x01c")
    bad = rec.replace(b"A\x01zq", b"A\x01\xff\xfe")
    with pytest.raises(ProtocolError, match="properties are not UTF-8"):
        decode_records_to_batch(bad, broker_name="b", columns=["tags"])
    # a column that does not need the properties reads the record
    assert decode_records_to_batch(bad, broker_name="b", columns=["queue_offset"]).num_rows == 1


def test_a_string_with_many_pairs_is_split_alike_either_way() -> None:
    """The C split leaves strings of over 256 pairs (its duplicate check is quadratic) to the
    reference; either way the columns are the same, the last duplicate kept."""
    many = "".join(f"k{i % 300}\x01v{i}\x02" for i in range(600)) + "TAGS\x01t"
    buf = _rec(0, properties=many) + _rec(1)
    got = _property_columns(buf)
    assert dict(got["properties"][0])["k0"] == "v300" and len(got["properties"][0]) == 301
    assert got["tags"] == ["t", "t1"]
    a, abuf = np.frombuffer(buf, dtype=np.uint8), pa.py_buffer(buf)
    f = decode._record_fields(a, np.asarray(record_starts(buf), dtype=np.int64))
    assert decode._compiled_split_built(abuf, f.props_pos, f.props_len) is None
