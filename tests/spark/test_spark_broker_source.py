"""format("rocketmq") against the embedded broker (real TCP) through a local[2] SparkSession."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketpipe.client import SendResult, SyncAdmin, SyncProducer
from rocketpipe.protocol.message import Message, decode_records
from waiting import wait_until_sync

pytestmark = pytest.mark.spark

TOPIC = "SparkTopic"


@pytest.fixture(scope="module")
def producer(ns: str) -> Iterator[SyncProducer]:
    p = SyncProducer("spark-test-producer", namesrv_addr=ns)
    p.start()
    try:
        yield p
    finally:
        p.close()


def _create(ns: str, topic: str, queues: int = 4) -> None:
    admin = SyncAdmin(namesrv_addr=ns)
    try:
        admin.create_topic(topic, queues)
    finally:
        admin.close()


def _body(i: int) -> bytes:
    return (b"big-%d-" % i) * 1000 if i % 25 == 7 else b"msg-%d" % i  # >4 KiB bodies get compressed


def _produce(producer: SyncProducer, topic: str, start: int, n: int) -> list[SendResult]:
    out = []
    for i in range(start, start + n):
        msg = Message.build(topic, _body(i), tags=f"tag{i % 3}", keys=[f"k{i}", "shared"], properties={"seq": str(i)})
        out.append(producer.send(msg))
    return out


def _reader(spark, ns: str, topic: str, stream: bool = False, **opts: str):
    r = (spark.readStream if stream else spark.read).format("rocketmq").option("nameServer", ns).option("topic", topic)
    for k, v in opts.items():
        r = r.option(k, v)
    return r.load()


def test_batch_read_checks_every_column(spark, ns: str, producer: SyncProducer) -> None:
    topic = TOPIC + "Batch"
    _create(ns, topic)
    sent = _produce(producer, topic, 0, 120)
    rows = _reader(spark, ns, topic).collect()
    assert len(rows) == 120
    by_pos = {(r["queue_id"], r["queue_offset"]): r for r in rows}
    assert len(by_pos) == 120
    for i, res in enumerate(sent):
        r = by_pos[(res.message_queue.queue_id, res.queue_offset)]
        seq = int(r["properties"]["seq"])
        assert seq == i
        assert r["topic"] == topic
        assert r["broker_name"] == res.message_queue.broker_name
        assert r["msg_id"] == res.msg_id
        assert r["body"] == ((b"big-%d-" % i) * 1000 if i % 25 == 7 else b"msg-%d" % i)
        assert r["tags"] == f"tag{i % 3}"
        assert r["keys"] == f"k{i} shared"
        assert r["properties"]["UNIQ_KEY"] == res.msg_id
        assert r["properties"]["TAGS"] == f"tag{i % 3}"
        assert r["reconsume_times"] == 0
        assert r["born_timestamp"] is not None and r["store_timestamp"] >= r["born_timestamp"]


def test_batch_read_offsets_json(spark, ns: str, producer: SyncProducer) -> None:
    topic = TOPIC + "Json"
    _create(ns, topic, 2)
    _produce(producer, topic, 0, 40)
    admin = SyncAdmin(namesrv_addr=ns)
    try:
        heads = {q.queue_id: admin.max_offset(q) for q in admin.topic_queues(topic)}
    finally:
        admin.close()
    assert sum(heads.values()) == 40 and heads[0] >= 5
    start = json.dumps({topic: {"broker-a:0": 2, "broker-a:1": -1}})
    end = json.dumps({topic: {"broker-a:0": 5}})
    got = sorted(
        (r["queue_id"], r["queue_offset"])
        for r in _reader(spark, ns, topic, startingOffsets=start, endingOffsets=end).collect()
    )
    assert got == [(0, 2), (0, 3), (0, 4)]
    with pytest.raises(Exception, match="beyond its max offset"):
        _reader(spark, ns, topic, startingOffsets=json.dumps({topic: {"broker-a:0": 10_000}})).collect()
    # a queue or broker that does not exist is an error naming it, never silently the whole topic
    for key in ("broker-a:77", "broker-zz:0"):
        with pytest.raises(Exception, match=f"startingOffsets names queues that do not exist: {topic} {key}"):
            _reader(spark, ns, topic, startingOffsets=json.dumps({topic: {key: 0}})).collect()
    with pytest.raises(Exception, match=f"endingOffsets names queues that do not exist: {topic} broker-a:77"):
        _reader(spark, ns, topic, endingOffsets=json.dumps({topic: {"broker-a:77": 1}})).collect()


def test_batch_and_stream_start_and_end_by_timestamp(spark, ns: str, producer: SyncProducer) -> None:
    topic = TOPIC + "ByTime"
    _create(ns, topic)
    first = _produce(producer, topic, 0, 12)
    admin = SyncAdmin(ns)
    try:
        stored = [admin.pull_raw(q, 0, 64) for q in admin.topic_queues(topic)]
    finally:
        admin.close()
    boundary = max(m.store_timestamp for r in stored for m in decode_records(r.body)) + 1
    wait_until_sync(lambda: time.time() * 1000 > boundary, timeout=5, what="the clock past the first batch")
    _produce(producer, topic, 12, 8)

    def bodies(stream: bool = False, **opts: str) -> set[bytes]:
        df = _reader(spark, ns, topic, stream=stream, **opts)
        if not stream:
            return {bytes(r["body"]) for r in df.select("body").collect()}
        name = f"by_time_{time.monotonic_ns()}"
        query = df.writeStream.format("memory").queryName(name).trigger(availableNow=True).start()
        assert query.awaitTermination(120)
        return {bytes(r["body"]) for r in spark.sql(f"select body from {name}").collect()}

    before, after = {_body(i) for i in range(12)}, {_body(i) for i in range(12, 20)}
    assert len(first) == 12
    # queues with nothing at or after the boundary start at their end instead of failing
    assert bodies(startingTimestamp=str(boundary), startingOffsetsByTimestampStrategy="latest") == after
    assert bodies(endingTimestamp=str(boundary)) == before
    assert bodies(stream=True, startingTimestamp=str(boundary), startingOffsetsByTimestampStrategy="latest") == after
    future = str(int(time.time() * 1000) + 3_600_000)
    with pytest.raises(Exception, match="has no message stored at or after"):
        bodies(startingTimestamp=future)


def test_stream_available_now_bounded_and_restart(spark, ns: str, producer: SyncProducer, tmp_path: Path) -> None:
    topic = TOPIC + "Stream"
    _create(ns, topic)
    _produce(producer, topic, 0, 100)
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"

    def run() -> list[int]:
        q = (
            _reader(spark, ns, topic, stream=True, maxOffsetsPerTrigger="40")
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(ckpt))
            .trigger(availableNow=True)
            .start()
        )
        assert q.awaitTermination(180), "AvailableNow query did not finish"
        assert q.exception() is None
        progress = q.recentProgress
        assert all(p["sources"][0]["latestOffset"] is not None for p in progress if p["numInputRows"])
        return [p["numInputRows"] for p in progress if p["numInputRows"]]

    assert run() == [40, 40, 20]
    rows = spark.read.parquet(str(out)).select("queue_id", "queue_offset", "msg_id").collect()
    assert len(rows) == 100 and len({r["msg_id"] for r in rows}) == 100

    _produce(producer, topic, 100, 30)
    assert sum(run()) == 30
    rows = spark.read.parquet(str(out)).select("queue_id", "queue_offset", "properties").collect()
    seqs = sorted(int(r["properties"]["seq"]) for r in rows)
    assert seqs == list(range(130)), "duplicates or gaps after restart"
    per_queue: dict[int, list[int]] = {}
    for r in rows:
        per_queue.setdefault(r["queue_id"], []).append(r["queue_offset"])
    assert all(sorted(v) == list(range(len(v))) for v in per_queue.values())
