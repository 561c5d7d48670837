"""Filter pushdown of batch reads (option pushFilters) against the embedded broker, through a
local[2] SparkSession: the broker's count of messages handed out proves what was pulled."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator

import pytest
from pyspark.sql import functions as F
from spark_cluster import ThreadedCluster

from rocketpipe.client import SyncAdmin, SyncProducer
from rocketpipe.protocol.message import Message, MessageExt, decode_records
from waiting import wait_until_sync

pytestmark = pytest.mark.spark

TOPIC = "SparkPushdown"
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


@pytest.fixture(scope="module")
def stored(cluster: ThreadedCluster) -> dict[str, object]:
    """40 messages in 4 queues before a store-time boundary, 20 after it."""
    assert cluster.cluster is not None
    ns = cluster.cluster.namesrv_addr
    admin = SyncAdmin(ns)
    producer = SyncProducer("pushdown-producer", namesrv_addr=ns)
    producer.start()
    try:
        admin.create_topic(TOPIC, 4)
        for i in range(40):
            producer.send(Message.build(TOPIC, b"before-%d" % i, tags=f"t{i % 2}"))
        queues = admin.topic_queues(TOPIC)
        first = [m for q in queues for m in decode_records(admin.pull_raw(q, 0, 64).body)]
        boundary = max(m.store_timestamp for m in first) + 1
        wait_until_sync(lambda: time.time() * 1000 > boundary, timeout=5, what="the clock past the first messages")
        for i in range(20):
            producer.send(Message.build(TOPIC, b"after-%d" % i, tags=f"t{i % 2}"))
        everything = [m for q in queues for m in decode_records(admin.pull_raw(q, 0, 64).body)]
    finally:
        producer.close()
        admin.close()
    return {"ns": ns, "boundary_ms": boundary, "messages": everything}


@pytest.fixture
def pushdown(spark) -> Iterator[None]:
    spark.conf.set(PUSHDOWN_CONF, "true")
    try:
        yield
    finally:
        spark.conf.unset(PUSHDOWN_CONF)


def _pulled(cluster: ThreadedCluster, fn) -> tuple[object, int]:
    """Run ``fn`` and return its result with the number of messages the broker handed out."""
    assert cluster.cluster is not None
    stats = cluster.cluster.broker.stats
    before = stats.get_transferred
    out = fn()
    return out, stats.get_transferred - before


def _df(spark, ns: str, push: bool = True):
    return (
        spark.read.format("rocketmq")
        .option("nameServer", ns)
        .option("topic", TOPIC)
        .option("pushFilters", str(push).lower())
        .load()
    )


def _bodies(df) -> set[bytes]:
    return {bytes(r["body"]) for r in df.select("body").collect()}


def test_store_timestamp_filter_pulls_only_after_the_boundary(spark, cluster, stored, pushdown) -> None:
    """``store_timestamp >= boundary`` pulls the 20 later messages only; Spark still applies the
    exact bound; without the option the whole topic (60) is pulled for the same answer."""
    ns, boundary = stored["ns"], stored["boundary_ms"]
    at = dt.datetime.fromtimestamp(boundary / 1000, tz=dt.UTC)
    want = {b"after-%d" % i for i in range(20)}
    rows, pulled = _pulled(cluster, lambda: _bodies(_df(spark, ns).where(F.col("store_timestamp") >= F.lit(at))))
    assert rows == want and pulled == 20
    rows, pulled = _pulled(cluster, lambda: _bodies(_df(spark, ns).where(F.col("store_timestamp") < F.lit(at))))
    assert rows == {b"before-%d" % i for i in range(40)} and pulled == 40
    rows, pulled = _pulled(
        cluster, lambda: _bodies(_df(spark, ns, push=False).where(F.col("store_timestamp") >= F.lit(at)))
    )
    assert rows == want and pulled == 60


def test_queue_and_offset_filters_prune_queues_and_ranges(spark, cluster, stored, pushdown) -> None:
    """``queue_id IN (1, 2) AND queue_offset >= 10 AND queue_offset < 13`` pulls 3 messages of
    each of two queues, and the rows are exactly those."""
    ns, messages = stored["ns"], stored["messages"]
    want = {bytes(m.body) for m in messages if m.queue_id in (1, 2) and 10 <= m.queue_offset < 13}
    assert len(want) == 6
    df = _df(spark, ns).where(
        F.col("queue_id").isin(1, 2) & (F.col("queue_offset") >= 10) & (F.col("queue_offset") < 13)
    )
    rows, pulled = _pulled(cluster, lambda: _bodies(df))
    assert rows == want and pulled == 6
    # a filter that is not pushed (keys) leaves the rest pushed and is applied by Spark
    df = _df(spark, ns).where((F.col("queue_id") == 3) & F.col("keys").isNull())
    rows, pulled = _pulled(cluster, lambda: _bodies(df))
    assert rows == {bytes(m.body) for m in messages if m.queue_id == 3}
    assert pulled == sum(1 for m in messages if m.queue_id == 3)
    # no queue matches: nothing is pulled
    rows, pulled = _pulled(cluster, lambda: _bodies(_df(spark, ns).where(F.col("broker_name") == "no-such-broker")))
    assert rows == set() and pulled == 0


TAGGED = "SparkPushdownTags"


@pytest.fixture(scope="module")
def tagged(cluster: ThreadedCluster) -> list[MessageExt]:
    """90 messages in 3 queues: tags ``Aa`` / ``BB`` (equal Java hash codes, 2112), ``red`` and
    none, in runs so that a tag filter makes the broker skip long stretches of each queue."""
    assert cluster.cluster is not None
    ns = cluster.cluster.namesrv_addr
    admin = SyncAdmin(ns)
    producer = SyncProducer("pushdown-tags-producer", namesrv_addr=ns)
    producer.start()
    try:
        admin.create_topic(TAGGED, 3)
        for i in range(90):
            tag = ("Aa", "BB", "red", None)[(i // 7) % 4]
            producer.send(Message.build(TAGGED, b"m-%d" % i, tags=tag))
        return [m for q in admin.topic_queues(TAGGED) for m in decode_records(admin.pull_raw(q, 0, 64).body)]
    finally:
        producer.close()
        admin.close()


def _rows(df) -> list[tuple[object, ...]]:
    return sorted(tuple(r) for r in df.select("queue_id", "queue_offset", "tags", "body").collect())


def test_tags_filter_pulls_with_a_tag_subscription(spark, cluster, tagged, pushdown) -> None:
    """``tags = / IN`` pull only the messages whose tags hash code matches (the broker's filter;
    ``Aa`` and ``BB`` collide) and return exactly the rows an unfiltered read + Spark's filter
    returns; the tag strings are re-checked, so ``BB`` rows never answer ``tags = 'Aa'``."""
    ns = cluster.cluster.namesrv_addr
    assert len(tagged) == 90

    def read(push: bool, where):
        # pullBatchSize 2: a filtered read takes several pulls per queue, each starting where the
        # broker's scan stopped (past non-matching offsets, which are not data loss)
        df = (
            spark.read.format("rocketmq").option("nameServer", ns).option("topic", TAGGED)
            .option("pushFilters", str(push).lower()).option("pullBatchSize", "2").load()
        )  # fmt: skip
        return _rows(df.where(where))

    for where, hash_matches in [
        (F.col("tags") == "red", {"red"}),
        (F.col("tags").isin("Aa", "red"), {"Aa", "BB", "red"}),
        (F.col("tags") == "Aa", {"Aa", "BB"}),
        (F.col("tags").isin("BB") & (F.col("queue_id") == 1), {"Aa", "BB"}),
    ]:
        rows, pulled = _pulled(cluster, lambda where=where: read(True, where))
        unfiltered, pulled_all = _pulled(cluster, lambda where=where: read(False, where))
        assert rows == unfiltered and rows
        assert pulled_all == 90
        queues = {1} if "queue_id" in str(where) else {0, 1, 2}
        assert pulled == sum(1 for m in tagged if m.tags in hash_matches and m.queue_id in queues)
    # a projection gets the re-checked rows too
    picked = (
        spark.read.format("rocketmq").schema("tags STRING, body BINARY").option("nameServer", ns)
        .option("topic", TAGGED)
        .option("pushFilters", "true").load().where(F.col("tags") == "Aa")
    )  # fmt: skip
    assert sorted(bytes(r["body"]) for r in picked.collect()) == sorted(bytes(m.body) for m in tagged if m.tags == "Aa")
    # tags no message has: the broker hands out nothing
    rows, pulled = _pulled(cluster, lambda: read(True, F.col("tags") == "blue"))
    assert rows == [] and pulled == 0


def test_push_filters_without_spark_pushdown_says_which_conf(spark, stored) -> None:
    """Option pushFilters with Spark's pushdown off fails with Spark's error naming the conf."""
    with pytest.raises(Exception, match=PUSHDOWN_CONF.replace(".", r"\.")):
        _df(spark, stored["ns"]).where(F.col("queue_id") == 1).collect()
