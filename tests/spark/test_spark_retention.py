"""format("rocketmq") after the embedded broker's retention deleted messages a query still needed.

The broker keeps 64 KiB commit-log segments; a streaming query reads 100 messages, 200 more
arrive, then retention deletes every full segment (forced cleaning, as past the clean-forcibly
disk ratio), so the checkpointed offset 100 is below the queue's new min offset. With
``failOnDataLoss=true`` the next run fails naming topic, queue and offsets; with ``false`` it
continues from the min offset.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from spark_cluster import ThreadedCluster

from rocketpipe.client import SyncAdmin, SyncProducer
from rocketpipe.protocol.message import Message

pytestmark = pytest.mark.spark

TOPIC = "SparkRetention"
BODY = b"s" * 1000


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[ThreadedCluster]:
    # the clean loop stays idle (1 h period): the test deletes when it chooses
    tc = ThreadedCluster(tmp_path / "store", mapped_file_size_commit_log=64 * 1024, clean_resource_interval=3_600_000)
    tc.start()
    try:
        yield tc
    finally:
        tc.close()


def _produce(ns: str, start: int, n: int) -> None:
    with SyncProducer("spark-retention-pg", namesrv_addr=ns) as p:
        for i in range(start, start + n):
            assert p.send(Message.build(TOPIC, BODY + b"%d" % i)).queue_offset == i


def _delete_full_segments(tc: ThreadedCluster) -> int:
    """Run one forced clean on the broker's loop; return the queue's new min offset."""
    assert tc.cluster is not None
    broker = tc.cluster.broker

    async def clean() -> int:
        svc = broker.clean_service
        return sum(1 for _ in svc.deletions(svc.plan(0.86)))  # over clean-forcibly (85 %), under the warning level

    assert tc.run(clean()) >= 2
    return broker.store.get_min_offset(TOPIC, 0)


def test_stream_after_retention_fails_or_skips_per_fail_on_data_loss(
    spark, cluster: ThreadedCluster, tmp_path: Path
) -> None:
    assert cluster.cluster is not None
    ns = cluster.cluster.namesrv_addr
    with SyncAdmin(namesrv_addr=ns) as admin:
        admin.create_topic(TOPIC, 1)
    _produce(ns, 0, 100)
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"

    def run(fail: str):
        return (
            spark.readStream.format("rocketmq")
            .option("nameServer", ns)
            .option("topic", TOPIC)
            .option("failOnDataLoss", fail)
            .option("numPartitions", "1")  # one range [100, 300): the lost part is reported whole
            .load()
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(ckpt))
            .trigger(availableNow=True)
            .start()
        )

    q = run("true")
    assert q.awaitTermination(120)
    assert q.exception() is None
    assert spark.read.parquet(str(out)).count() == 100

    _produce(ns, 100, 200)
    lo = _delete_full_segments(cluster)
    assert 100 < lo < 300, lo

    q = run("true")
    with pytest.raises(
        Exception,
        match=rf"messages \[100, {lo}\) of topic {TOPIC} queue broker-a:0 .*min offset is now {lo}.*failOnDataLoss=false",
    ):
        q.awaitTermination(120)
    assert spark.read.parquet(str(out)).count() == 100  # the failed batch wrote nothing

    q = run("false")
    assert q.awaitTermination(120)
    assert q.exception() is None
    rows = spark.read.parquet(str(out)).select("queue_offset", "body").collect()
    assert sorted(r["queue_offset"] for r in rows) == list(range(100)) + list(range(lo, 300))
    assert all(r["body"] == BODY + b"%d" % r["queue_offset"] for r in rows)

    # a batch read from 'earliest' starts at the new min without calling it a loss
    batch = spark.read.format("rocketmq").option("nameServer", ns).option("topic", TOPIC).load()
    assert sorted(r["queue_offset"] for r in batch.select("queue_offset").collect()) == list(range(lo, 300))
