"""Column-wise Arrow decoding of pull bodies, checked against the object decoder (no Spark)."""

from __future__ import annotations

import zlib
from datetime import UTC, datetime

import pyarrow as pa
import pytest
from pyspark.sql.pandas.types import to_arrow_schema

from rocketpipe.errors import ProtocolError
from rocketpipe.protocol import sysflag as sf
from rocketpipe.protocol.message import create_offset_msg_id, decode_records, encode_record
from rocketpipe.spark.decode import ARROW_SCHEMA, decode_bodies_to_batch, decode_records_to_batch, record_starts
from rocketpipe.spark.source import SCHEMA


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
