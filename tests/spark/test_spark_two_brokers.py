"""format("rocketmq") reading a topic served by two broker groups (local_cluster(brokers=2))."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from spark_cluster import ThreadedCluster

from rocketpipe.client import SyncAdmin, SyncProducer
from rocketpipe.protocol.message import Message
from waiting import wait_until_sync

pytestmark = pytest.mark.spark

TOPIC = "SparkTwoBrokers"


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedCluster]:
    tc = ThreadedCluster(tmp_path_factory.mktemp("spark-two") / "store", brokers=2)
    tc.start()
    try:
        yield tc
    finally:
        tc.close()


def test_batch_and_stream_read_both_brokers(two: ThreadedCluster, spark, tmp_path: Path) -> None:
    c = two.cluster
    assert c is not None
    admin = SyncAdmin(namesrv_addr=c.namesrv_addr)
    try:
        for addr in c.broker_addrs:
            admin.create_topic(TOPIC, 3, broker_addr=addr)
        wait_until_sync(lambda: len(admin.topic_queues(TOPIC)) == 6, timeout=20, what="topic on both brokers")
    finally:
        admin.close()
    producer = SyncProducer("spark-two-producer", namesrv_addr=c.namesrv_addr)
    producer.start()
    try:
        sent = [producer.send(Message.build(TOPIC, f"m{i}")) for i in range(60)]
    finally:
        producer.close()
    per_broker = {bn: sum(1 for r in sent if r.message_queue.broker_name == bn) for bn in ("broker-a", "broker-b")}
    assert all(per_broker.values())

    reader = spark.read.format("rocketmq").option("nameServer", c.namesrv_addr).option("topic", TOPIC)
    rows = reader.load().select("broker_name", "queue_id", "queue_offset", "msg_id").collect()
    assert {r["msg_id"] for r in rows} == {r.msg_id for r in sent} and len(rows) == 60
    assert {bn: sum(1 for r in rows if r["broker_name"] == bn) for bn in per_broker} == per_broker

    out = tmp_path / "ids"
    q = (
        spark.readStream.format("rocketmq")
        .option("nameServer", c.namesrv_addr)
        .option("topic", TOPIC)
        .option("maxOffsetsPerTrigger", "25")
        .schema("msg_id STRING, broker_name STRING")
        .load()
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
    streamed = spark.read.parquet(str(out)).collect()
    assert sorted(r["msg_id"] for r in streamed) == sorted(r.msg_id for r in sent)
