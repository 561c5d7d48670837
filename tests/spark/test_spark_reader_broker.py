"""The executor pull loop with its default client (async ``Admin`` on a private loop) against the
embedded broker, without a SparkSession: several ranges per partition, capped pulls, early close."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from spark_cluster import ThreadedCluster

from rocketpipe.client import SyncAdmin, SyncProducer
from rocketpipe.errors import ConnectionClosedError, RocketMQError
from rocketpipe.protocol.message import Message, MessageQueue
from rocketpipe.spark.offsets import QueueRange
from rocketpipe.spark.options import parse_source_options
from rocketpipe.spark.reader import ClientSpec, RocketMQInputPartition, SourceError, _DriverClient, read_partition

TOPIC = "PipelineTopic"
PER_QUEUE = 150


@pytest.fixture(scope="module")
def ns(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    # the broker's default caps (32 messages / 256 KiB per pull) make every range take many pulls
    tc = ThreadedCluster(tmp_path_factory.mktemp("spark-pull"))
    c = tc.start()
    try:
        admin = SyncAdmin(namesrv_addr=c.namesrv_addr)
        try:
            admin.create_topic(TOPIC, 3)
        finally:
            admin.close()
        producer = SyncProducer("spark-pull-producer", namesrv_addr=c.namesrv_addr)
        producer.start()
        try:
            broker = _broker(c.namesrv_addr)
            for qid in range(3):
                mq = MessageQueue(TOPIC, broker, qid)
                for i in range(PER_QUEUE):
                    producer.send(Message.build(TOPIC, b"q%d-%d" % (qid, i), keys=f"k{i}"), queue=mq)
        finally:
            producer.close()
        yield c.namesrv_addr
    finally:
        tc.close()


def _broker(ns: str) -> str:
    admin = SyncAdmin(namesrv_addr=ns)
    try:
        return admin.topic_queues(TOPIC)[0].broker_name
    finally:
        admin.close()


def _pull_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "rocketmq-pull-loop"]


@pytest.mark.parametrize(("batch", "concurrency"), [(1024, 8), (32, 1), (10, 3)])
def test_partition_of_several_ranges_reads_each_exactly(ns: str, batch: int, concurrency: int) -> None:
    broker = _broker(ns)
    ranges = (
        QueueRange(TOPIC, broker, 2, 5, 140),
        QueueRange(TOPIC, broker, 0, 0, 1),
        QueueRange(TOPIC, broker, 1, 37, 150),
    )
    part = RocketMQInputPartition(0, ranges, ClientSpec(ns, None, batch, 10.0, concurrency, True))
    batches = list(read_partition(part))
    got = [
        (q, o, bytes(body))
        for b in batches
        for q, o, body in zip(
            b.column("queue_id").to_pylist(),
            b.column("queue_offset").to_pylist(),
            b.column("body").to_pylist(),
            strict=True,
        )
    ]
    want = [(r.queue_id, o, b"q%d-%d" % (r.queue_id, o)) for r in ranges for o in range(r.start, r.end)]
    assert got == want
    assert all(len(set(b.column("queue_id").to_pylist())) == 1 for b in batches)  # a batch never mixes ranges
    assert _pull_threads() == []


def test_closing_the_read_early_stops_its_client(ns: str) -> None:
    broker = _broker(ns)
    ranges = tuple(QueueRange(TOPIC, broker, q, 0, PER_QUEUE) for q in range(3))
    part = RocketMQInputPartition(0, ranges, ClientSpec(ns, None, 1024, 10.0, 8, True))
    it = read_partition(part)
    first = next(it)
    assert first.num_rows > 0 and _pull_threads() != []
    it.close()  # pulls of the later ranges may still be in flight
    assert _pull_threads() == []


def test_unreachable_name_server_fails_the_read() -> None:
    part = RocketMQInputPartition(
        0, (QueueRange(TOPIC, "broker-x", 0, 0, 5),), ClientSpec("127.0.0.1:1", None, 32, 2.0, 4, True)
    )
    with pytest.raises(RocketMQError, match="broker-x"):
        list(read_partition(part))
    assert _pull_threads() == []


def _driver(ns: str, topic: str) -> _DriverClient:
    return _DriverClient(parse_source_options({"nameServer": ns, "topic": topic}, streaming=False))


def test_driver_errors_say_what_is_wrong(ns: str) -> None:
    client = _driver(ns, "NoSuchTopicHere")
    with pytest.raises(SourceError, match="topic 'NoSuchTopicHere' does not exist: name server"):
        client.queues()
    client.close()
    client = _driver("127.0.0.1:1", TOPIC)
    with pytest.raises(SourceError, match=r"name server 127\.0\.0\.1:1 is unreachable"):
        client.queues()
    client.close()

    def down(mq: MessageQueue) -> int:
        raise ConnectionClosedError("connect to 127.0.0.1:1 failed")

    with pytest.raises(SourceError, match=r"broker broker-gone \(queue 0 of .*\) is unreachable"):
        _driver(ns, TOPIC)._per_queue([MessageQueue(TOPIC, "broker-gone", 0)], down)
