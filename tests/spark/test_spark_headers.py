"""Option ``includeHeaders``: Kafka's ``headers`` column (``array<struct<key:string,value:binary>>``)
built from the messages' user properties — decoded column-wise (no Spark), then read through a
local[2] SparkSession from the embedded broker, and round-tripped through the sink's ``headers``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType
from spark_cluster import ThreadedCluster

from rocketpipe.client import SyncAdmin, SyncProducer
from rocketpipe.protocol.message import Message, encode_record
from rocketpipe.spark.decode import ARROW_SCHEMA, HEADERS_FIELD, decode_records_to_batch
from rocketpipe.spark.options import SourceOptionError
from rocketpipe.spark.source import SCHEMA, projection, source_schema

pytestmark = pytest.mark.spark

KAFKA_HEADERS_TYPE = "array<struct<key:string,value:binary>>"


def _rec(offset: int, properties: dict[str, str]) -> bytes:
    return encode_record(
        topic="TopicH",
        body=b"b%d" % offset,
        properties=properties,
        queue_id=0,
        queue_offset=offset,
        physical_offset=100 * offset,
        born_timestamp=1_700_000_000_000,
        store_timestamp=1_700_000_000_001,
        born_host="10.1.2.3:5555",
        store_host="10.0.0.9:10911",
    )


def test_headers_type_is_kafkas_and_matches_sparks_arrow_type() -> None:
    full = source_schema(True)
    assert full.fields[:-1] == SCHEMA.fields
    assert full.fields[-1].name == "headers" and full.fields[-1].dataType.simpleString() == KAFKA_HEADERS_TYPE
    assert to_arrow_schema(full, timezone="UTC").equals(ARROW_SCHEMA.append(HEADERS_FIELD))
    assert source_schema(False) == SCHEMA


def test_headers_are_the_user_properties_in_stored_order() -> None:
    records = [
        _rec(0, {"TAGS": "t0", "zeta": "1", "UNIQ_KEY": "UK0", "alpha": "ünï", "KEYS": "k"}),
        _rec(1, {"TAGS": "t1", "WAIT": "true"}),  # system properties only
        _rec(2, {}),
        _rec(3, {"trace-id": "abc", "MIN_OFFSET": "5"}),
    ]
    batch = decode_records_to_batch(b"".join(records), broker_name="broker-a", columns=["queue_offset", "headers"])
    assert batch.schema.field("headers").type == HEADERS_FIELD.type
    assert batch.column("headers").to_pylist() == [
        [{"key": "zeta", "value": b"1"}, {"key": "alpha", "value": "ünï".encode()}],
        [],
        [],
        [{"key": "trace-id", "value": b"abc"}],
    ]
    both = decode_records_to_batch(b"".join(records), broker_name="broker-a", columns=["properties", "headers", "tags"])
    assert dict(both.column("properties").to_pylist()[0]) == {
        "TAGS": "t0", "zeta": "1", "UNIQ_KEY": "UK0", "alpha": "ünï", "KEYS": "k",
    }  # fmt: skip
    assert both.column("tags").to_pylist() == ["t0", "t1", None, None]
    windowed = decode_records_to_batch(
        b"".join(records), broker_name="broker-a", start_offset=3, columns=["headers", "queue_offset"]
    )
    assert windowed.to_pylist() == [{"headers": [{"key": "trace-id", "value": b"abc"}], "queue_offset": 3}]


def test_headers_in_a_user_schema_need_the_option() -> None:
    with_headers = StructType([SCHEMA["msg_id"], source_schema(True)["headers"]])
    assert projection(with_headers, include_headers=True) == ("msg_id", "headers")
    assert projection(source_schema(True), include_headers=True) == (*SCHEMA.names, "headers")
    assert projection(SCHEMA, include_headers=True) is None
    with pytest.raises(SourceOptionError, match="includeHeaders"):
        projection(with_headers)


@pytest.fixture(scope="module")
def ns(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tc = ThreadedCluster(tmp_path_factory.mktemp("spark-headers"))
    cluster = tc.start()
    try:
        yield cluster.namesrv_addr
    finally:
        tc.close()


def _create(ns: str, topic: str) -> None:
    admin = SyncAdmin(namesrv_addr=ns)
    try:
        admin.create_topic(topic, 2)
    finally:
        admin.close()


def _read(spark: Any, ns: str, topic: str, **opts: str) -> Any:
    r = spark.read.format("rocketmq").option("nameServer", ns).option("topic", topic)
    for k, v in opts.items():
        r = r.option(k, v)
    return r.load()


def test_read_with_include_headers(spark: Any, ns: str) -> None:
    topic = "SparkHeaders"
    _create(ns, topic)
    producer = SyncProducer("spark-headers-pg", namesrv_addr=ns)
    producer.start()
    try:
        for i in range(20):
            props = {"seq": str(i), "even": "yes"} if i % 2 == 0 else {"seq": str(i)}
            producer.send(Message.build(topic, f"m{i}", tags="TA", keys=["k"], properties=props))
    finally:
        producer.close()

    plain = _read(spark, ns, topic)
    assert "headers" not in plain.columns
    df = _read(spark, ns, topic, includeHeaders="true")
    assert df.columns == [*SCHEMA.names, "headers"]
    assert df.schema["headers"].dataType.simpleString() == KAFKA_HEADERS_TYPE
    rows = df.collect()
    assert len(rows) == 20
    for r in rows:
        headers = {h["key"]: bytes(h["value"]).decode() for h in r["headers"]}
        i = int(headers["seq"])
        assert headers == ({"seq": str(i), "even": "yes"} if i % 2 == 0 else {"seq": str(i)})
        assert r["properties"]["TAGS"] == "TA" and "TAGS" not in headers and "UNIQ_KEY" not in headers

    picked = (
        spark.read.format("rocketmq")
        .schema("body BINARY, headers ARRAY<STRUCT<key: STRING, value: BINARY>>")
        .option("nameServer", ns)
        .option("topic", topic)
        .option("includeHeaders", "TRUE")
        .load()
        .collect()
    )
    assert len(picked) == 20 and all(len(r["headers"]) in (1, 2) for r in picked)


def test_headers_round_trip_through_the_sink(spark: Any, ns: str) -> None:
    source, copy = "SparkHeadersIn", "SparkHeadersOut"
    _create(ns, source)
    _create(ns, copy)
    headers_type = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
    assert headers_type == HEADERS_FIELD.type
    rows = [(f"r{i}", [("app", b"demo"), ("n", str(i).encode())]) for i in range(6)]
    df = spark.createDataFrame(rows, f"body STRING, headers {KAFKA_HEADERS_TYPE}")
    df.write.format("rocketmq").option("nameServer", ns).option("topic", source).mode("append").save()

    read = _read(spark, ns, source, includeHeaders="true")
    read.select("body", "headers").write.format("rocketmq").option("nameServer", ns).option("topic", copy).mode(
        "append"
    ).save()
    back = _read(spark, ns, copy, includeHeaders="true").select("body", "headers").collect()
    got = sorted((bytes(r["body"]).decode(), sorted((h["key"], bytes(h["value"])) for h in r["headers"])) for r in back)
    assert got == sorted((b, sorted(h)) for b, h in rows)
