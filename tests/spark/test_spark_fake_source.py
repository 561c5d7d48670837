"""Spark plumbing of format("rocketmq") against a file-backed fake admin (no broker needed).

Covers batch reads, offsets JSON, Trigger.AvailableNow with maxOffsetsPerTrigger, restart from a
checkpoint and failOnDataLoss, through a real local[2] SparkSession. The same paths against the
embedded broker are in test_spark_broker_source.py.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from spark_fake_admin import BORN_MS, FACTORY, FakeCluster, body_of

pytestmark = pytest.mark.spark

QUEUES = [("broker-a", 0), ("broker-a", 1), ("broker-a", 2), ("broker-b", 0)]


def _cluster(tmp_path: Path, counts: dict[tuple[str, int], int], topic: str = "T") -> FakeCluster:
    c = FakeCluster(tmp_path / "fake-state.json")
    c.add_topic(topic, QUEUES)
    for (b, q), n in counts.items():
        c.produce(topic, b, q, n)
    return c


def _reader(spark, cluster: FakeCluster, stream: bool = False, schema: str | None = None, **opts: str):
    r = (spark.readStream if stream else spark.read).format("rocketmq")
    if schema is not None:
        r = r.schema(schema)
    r = r.option("nameServer", cluster.name_server).option("topic", "T").option("clientFactory", FACTORY)
    for k, v in opts.items():
        r = r.option(k, v)
    return r.load()


def _keys(rows) -> list[tuple[str, int, int]]:
    return sorted((r["broker_name"], r["queue_id"], r["queue_offset"]) for r in rows)


def _expected(ranges: dict[tuple[str, int], range]) -> list[tuple[str, int, int]]:
    return sorted((b, q, o) for (b, q), rg in ranges.items() for o in rg)


def test_batch_read_all_columns(spark, tmp_path: Path) -> None:
    cluster = _cluster(tmp_path, {("broker-a", 0): 10, ("broker-a", 2): 25, ("broker-b", 0): 7})
    rows = _reader(spark, cluster).collect()
    assert _keys(rows) == _expected({("broker-a", 0): range(10), ("broker-a", 2): range(25), ("broker-b", 0): range(7)})
    for r in rows:
        b, q, o = r["broker_name"], r["queue_id"], r["queue_offset"]
        assert r["topic"] == "T"
        assert r["body"] == body_of("T", b, q, o)
        assert r["msg_id"] == f"U-{b}-{q}-{o}"
        assert r["tags"] == f"tag{o % 3}"
        assert r["keys"] == f"k{o}"
        assert r["reconsume_times"] == o % 2
        assert r["born_timestamp"].replace(tzinfo=UTC) == datetime.fromtimestamp((BORN_MS + o) / 1000, UTC)
        assert r["store_timestamp"].replace(tzinfo=UTC) == datetime.fromtimestamp((BORN_MS + o + 1) / 1000, UTC)
        assert r["properties"] == {"TAGS": f"tag{o % 3}", "KEYS": f"k{o}", "UNIQ_KEY": f"U-{b}-{q}-{o}"}


def test_user_schema_selects_columns_in_its_order(spark, tmp_path: Path) -> None:
    cluster = _cluster(tmp_path, {("broker-a", 1): 6, ("broker-b", 0): 4})
    df = _reader(spark, cluster, schema="queue_offset LONG, msg_id STRING, broker_name STRING")
    assert df.columns == ["queue_offset", "msg_id", "broker_name"]
    rows = df.collect()
    assert sorted((r["broker_name"], r["queue_offset"], r["msg_id"]) for r in rows) == sorted(
        [("broker-a", o, f"U-broker-a-1-{o}") for o in range(6)]
        + [("broker-b", o, f"U-broker-b-0-{o}") for o in range(4)]
    )
    out = tmp_path / "ids"
    q = (
        _reader(spark, cluster, stream=True, schema="msg_id STRING", maxOffsetsPerTrigger="4")
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        assert q.awaitTermination(120)
    finally:
        q.stop()
    read = spark.read.parquet(str(out))
    assert read.columns == ["msg_id"]
    assert sorted(r["msg_id"] for r in read.collect()) == sorted(r["msg_id"] for r in rows)


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        ("msg_id STRING, color STRING", "'color' is not a column"),
        ("queue_offset INT", "'queue_offset' has type int, the source's is bigint"),
        ("msg_id STRING, msg_id STRING", "'msg_id' appears twice"),
    ],
)
def test_user_schema_outside_the_source_is_refused(spark, tmp_path: Path, schema: str, why: str) -> None:
    cluster = _cluster(tmp_path, {("broker-a", 0): 1})
    with pytest.raises(Exception, match=why):
        _reader(spark, cluster, schema=schema).collect()


def test_batch_read_offsets_json_and_partitions(spark, tmp_path: Path) -> None:
    cluster = _cluster(tmp_path, {("broker-a", 0): 10, ("broker-a", 1): 4, ("broker-b", 0): 30})
    start = json.dumps({"T": {"broker-a:0": 3, "broker-b:0": -1}})
    end = json.dumps({"T": {"broker-a:0": 8, "broker-a:1": -1, "broker-b:0": 30}})
    df = _reader(spark, cluster, startingOffsets=start, endingOffsets=end, numPartitions="3")
    assert df.rdd.getNumPartitions() == 3
    assert _keys(df.collect()) == _expected({("broker-a", 0): range(3, 8), ("broker-a", 1): range(4)})


def test_invalid_options_name_the_fix(spark, tmp_path: Path) -> None:
    cluster = _cluster(tmp_path, {})
    q = _reader(spark, cluster, stream=True, maxOffsetsPerTrigger="lots").writeStream.format("noop").start()
    try:
        with pytest.raises(Exception, match="maxOffsetsPerTrigger"):
            q.awaitTermination(60)
    finally:
        q.stop()
    with pytest.raises(Exception, match="nameServer is required"):
        spark.read.format("rocketmq").option("topic", "T").load().collect()


def test_available_now_bounded_batches_and_restart(spark, tmp_path: Path) -> None:
    cluster = _cluster(tmp_path, {("broker-a", 0): 20, ("broker-a", 1): 5, ("broker-b", 0): 12})
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"

    def run() -> list[int]:
        q = (
            _reader(spark, cluster, stream=True, maxOffsetsPerTrigger="10")
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(ckpt))
            .trigger(availableNow=True)
            .start()
        )
        assert q.awaitTermination(120), "AvailableNow query did not finish"
        assert q.exception() is None
        return [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]

    sizes = run()
    assert sizes == [10, 10, 10, 7]
    rows = spark.read.parquet(str(out)).collect()
    assert _keys(rows) == _expected({("broker-a", 0): range(20), ("broker-a", 1): range(5), ("broker-b", 0): range(12)})

    cluster.produce("T", "broker-a", 1, 6)
    cluster.produce("T", "broker-a", 2, 3)
    assert sum(run()) == 9
    rows = spark.read.parquet(str(out)).collect()
    assert len(rows) == len(set(_keys(rows)))
    assert _keys(rows) == _expected(
        {("broker-a", 0): range(20), ("broker-a", 1): range(11), ("broker-a", 2): range(3), ("broker-b", 0): range(12)}
    )


def test_fail_on_data_loss(spark, tmp_path: Path) -> None:
    cluster = _cluster(tmp_path, {("broker-a", 0): 10})
    ckpt, out = tmp_path / "ckpt", tmp_path / "out"

    def run(fail: str) -> object:
        return (
            _reader(spark, cluster, stream=True, failOnDataLoss=fail)
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(ckpt))
            .trigger(availableNow=True)
            .start()
        )

    q = run("true")
    assert q.awaitTermination(120)
    assert spark.read.parquet(str(out)).count() == 10
    cluster.produce("T", "broker-a", 0, 10)
    cluster.set_min("T", "broker-a", 0, 15)
    q = run("true")
    with pytest.raises(Exception, match=r"messages \[10, 15\) of topic T queue broker-a:0 .*failOnDataLoss=false"):
        q.awaitTermination(120)
    q = run("false")
    assert q.awaitTermination(120)
    assert q.exception() is None
    offsets = sorted(r["queue_offset"] for r in spark.read.parquet(str(out)).collect())
    assert offsets == list(range(10)) + list(range(15, 20))
