"""Reader logic without a SparkSession: the executor pull loop and the driver's offset decisions.

Uses the file-backed fake admin in-process (spark_fake_admin), so every branch is fast and exact.
"""

from __future__ import annotations

import json
import pickle
from concurrent.futures import Future
from pathlib import Path

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, ReadMinRows
from spark_fake_admin import FACTORY, FakeAdmin, FakeCluster, body_of

from rocketpipe.spark.offsets import QueueRange
from rocketpipe.spark.options import SourceOptionError, parse_source_options
from rocketpipe.spark.reader import (
    ClientSpec,
    DataLossError,
    RocketMQBatchReader,
    RocketMQInputPartition,
    RocketMQStreamReader,
    SourceError,
    _RangeRead,
    _read_ranges,
    _StepHints,
    read_partition,
    read_range,
)


@pytest.fixture()
def fake(tmp_path: Path) -> FakeCluster:
    c = FakeCluster(tmp_path / "state.json")
    c.add_topic("T", [("a", 0), ("a", 1), ("b", 0)])
    c.produce("T", "a", 0, 100)
    c.produce("T", "a", 1, 10)
    return c


def _spec(fake: FakeCluster, fail: bool = True, batch: int = 7, concurrency: int = 1) -> ClientSpec:
    return ClientSpec(fake.name_server, FACTORY, batch, 5.0, concurrency, fail)


def _offsets(batches) -> list[int]:
    return [o for b in batches for o in b.column("queue_offset").to_pylist()]


def test_read_range_reads_exactly_the_range(fake: FakeCluster) -> None:
    admin = FakeAdmin(fake.name_server)
    batches = list(read_range(admin, QueueRange("T", "a", 0, 13, 58), _spec(fake)))
    assert _offsets(batches) == list(range(13, 58))
    assert batches[0].column("body")[0].as_py() == body_of("T", "a", 0, 13)
    assert list(read_range(admin, QueueRange("T", "a", 0, 5, 5), _spec(fake))) == []


@pytest.mark.parametrize("concurrency", [2, 5])
def test_pipelined_pulls_keep_order_with_capped_and_short_answers(fake: FakeCluster, concurrency: int) -> None:
    fake.set_pull_cap(6, jitter=True)
    admin = FakeAdmin(fake.name_server)
    spec = _spec(fake, batch=32, concurrency=concurrency)
    part = RocketMQInputPartition(0, (QueueRange("T", "a", 0, 3, 97), QueueRange("T", "a", 1, 0, 10)), spec)
    batches = list(read_partition(part))
    rows = [
        (q, o)
        for b in batches
        for q, o in zip(b.column("queue_id").to_pylist(), b.column("queue_offset").to_pylist(), strict=False)
    ]
    assert rows == [(0, o) for o in range(3, 97)] + [(1, o) for o in range(10)]
    fake.set_min("T", "a", 0, 40)
    lenient = RocketMQInputPartition(
        0, (QueueRange("T", "a", 0, 3, 97),), _spec(fake, fail=False, batch=32, concurrency=concurrency)
    )
    assert _offsets(read_partition(lenient)) == list(range(40, 97))
    strict = RocketMQInputPartition(
        0, (QueueRange("T", "a", 0, 3, 97),), _spec(fake, batch=32, concurrency=concurrency)
    )
    with pytest.raises(DataLossError, match=r"\[3, 40\)"):
        list(read_partition(strict))
    assert admin.max_offset(QueueRange("T", "a", 0, 0, 1).message_queue) == 100


def test_read_range_data_loss_below_min(fake: FakeCluster) -> None:
    fake.set_min("T", "a", 0, 20)
    admin = FakeAdmin(fake.name_server)
    with pytest.raises(DataLossError, match=r"messages \[10, 20\) of topic T queue a:0 .*failOnDataLoss=false"):
        list(read_range(admin, QueueRange("T", "a", 0, 10, 30), _spec(fake)))
    assert _offsets(read_range(admin, QueueRange("T", "a", 0, 10, 30), _spec(fake, fail=False))) == list(range(20, 30))
    # a queue discovered mid-query starts at its min offset without counting as data loss
    assert _offsets(read_range(admin, QueueRange("T", "a", 0, 0, 25, from_earliest=True), _spec(fake))) == list(
        range(20, 25)
    )


def test_read_range_data_loss_above_max(fake: FakeCluster) -> None:
    admin = FakeAdmin(fake.name_server)
    with pytest.raises(DataLossError, match="max offset is now 10"):
        list(read_range(admin, QueueRange("T", "a", 1, 5, 15), _spec(fake)))
    assert _offsets(read_range(admin, QueueRange("T", "a", 1, 5, 15), _spec(fake, fail=False))) == list(range(5, 10))


def test_read_partition_handles_several_ranges_and_placeholder(fake: FakeCluster) -> None:
    part = RocketMQInputPartition(0, (QueueRange("T", "a", 1, 0, 10), QueueRange("T", "a", 0, 90, 100)), _spec(fake))
    part = pickle.loads(pickle.dumps(part))
    batches = list(read_partition(part))
    assert [(b.column("queue_id")[0].as_py(), b.num_rows) for b in batches] == [(1, 10), (0, 10)]
    from pyspark.sql.datasource import InputPartition

    assert list(read_partition(InputPartition(None))) == []


def _stream(fake: FakeCluster, **opts: str) -> RocketMQStreamReader:
    base = {"nameserver": fake.name_server, "topic": "T", "clientfactory": FACTORY}
    return RocketMQStreamReader(
        parse_source_options({**base, **{k.lower(): v for k, v in opts.items()}}, streaming=True)
    )


def test_stream_initial_latest_and_limits(fake: FakeCluster) -> None:
    r = _stream(fake, maxOffsetsPerTrigger="11")
    start = r.initialOffset()
    assert json.dumps(start) == '{"T": {"a:0": 0, "a:1": 0, "b:0": 0}}'
    assert r.getDefaultReadLimit() == ReadMaxRows(11)
    end = r.latestOffset(start, ReadMaxRows(11))
    assert end == {"T": {"a:0": 10, "a:1": 1, "b:0": 0}}
    # Kafka's lag metrics: heads 100, 10, 0 minus the batch's end
    assert r.last_lag == {"minOffsetsBehindLatest": 0, "avgOffsetsBehindLatest": 33.0, "maxOffsetsBehindLatest": 90}
    assert r.reportLatestOffset() == {"T": {"a:0": 100, "a:1": 10, "b:0": 0}}
    assert r.latestOffset(start, ReadAllAvailable()) == {"T": {"a:0": 100, "a:1": 10, "b:0": 0}}
    # a ReadMinRows limit as Kafka's: the first trigger runs; within maxTriggerDelay one with
    # fewer new rows is skipped
    assert r.latestOffset(start, ReadMinRows(1000)) == {"T": {"a:0": 100, "a:1": 10, "b:0": 0}}
    assert r.latestOffset(start, ReadMinRows(1000)) == start
    parts = r.partitions(start, end)
    assert sum(rg.size for p in parts for rg in p.ranges) == 11 and len(parts) == 2
    assert r.partitions(end, end) == []
    # the reader pickles without its client
    r._heads()
    clone = pickle.loads(pickle.dumps(r))
    assert clone.latestOffset(end, ReadAllAvailable()) == {"T": {"a:0": 100, "a:1": 10, "b:0": 0}}
    r.stop()


def test_stream_min_offsets_per_trigger_waits_up_to_max_trigger_delay(fake: FakeCluster) -> None:
    """minOffsetsPerTrigger / maxTriggerDelay as Kafka's delayBatch: the first trigger runs, then
    one with fewer new rows is skipped (start returned) until the delay has passed since the
    last batch; enough rows run at once; AvailableNow never waits."""
    clock = [1_000_000.0]
    r = _stream(fake, minOffsetsPerTrigger="200", maxTriggerDelay="30s", maxOffsetsPerTrigger="50")
    r._now_ms = lambda: clock[0]
    assert r.getDefaultReadLimit() == ReadMaxRows(50)
    start = r.initialOffset()  # 110 rows available, fewer than 200
    first = r.latestOffset(start, ReadMaxRows(50))
    assert sum(first["T"].values()) == 50  # runs, capped by maxOffsetsPerTrigger
    clock[0] += 29_999
    assert r.latestOffset(first, ReadMaxRows(50)) == first  # 60 new rows < 200, within 30 s
    clock[0] += 1
    second = r.latestOffset(first, ReadMaxRows(50))
    assert second != first  # 30 s since the last batch: it runs
    clock[0] += 1
    assert r.latestOffset(second, ReadMaxRows(50)) == second
    fake.produce("T", "a", 0, 300)  # now >= 200 new rows: runs at once
    assert r.latestOffset(second, ReadMaxRows(50)) != second
    with pytest.raises(SourceOptionError, match="maxTriggerDelay"):
        _stream(fake, minOffsetsPerTrigger="5", maxTriggerDelay="soon")
    lazy = _stream(fake, minOffsetsPerTrigger="100000")
    lazy._now_ms = lambda: clock[0]
    lazy.prepareForTriggerAvailableNow()
    begin = lazy.initialOffset()
    lazy._last_trigger_ms = clock[0]
    assert lazy.latestOffset(begin, ReadAllAvailable()) != begin  # AvailableNow does not wait
    r.stop()
    lazy.stop()


def test_driver_look_ups_are_retried_after_transport_errors(fake: FakeCluster) -> None:
    """fetchOffset.numRetries / retryIntervalMs: the driver's queue and offset look-ups survive
    that many transport errors in a row; one more fails naming the broker and the tries."""
    fake.fail_next("topic_queues", 2)
    fake.fail_next("max_offset", 2)
    r = _stream(fake, **{"fetchOffset.numRetries": "2", "fetchOffset.retryIntervalMs": "0"})
    assert r.latestOffset(r.initialOffset(), ReadAllAvailable()) == {"T": {"a:0": 100, "a:1": 10, "b:0": 0}}
    assert fake.failures_left("topic_queues") == fake.failures_left("max_offset") == 0
    r.stop()
    fake.fail_next("max_offset", 3)
    r = _stream(fake, **{"fetchOffset.numRetries": "2", "fetchOffset.retryIntervalMs": "0"})
    with pytest.raises(SourceError, match=r"broker a .*unreachable .*3 tries, see fetchOffset.numRetries"):
        r.initialOffset()
    r.stop()
    fake.fail_next("topic_queues", 1)
    r = _stream(fake, **{"fetchOffset.numRetries": "0"})
    with pytest.raises(SourceError, match=r"name server .* is unreachable .*1 tries"):
        r.initialOffset()
    r.stop()


def test_subscribe_pattern_and_assign_choose_the_queues(fake: FakeCluster) -> None:
    """subscribePattern: the name server's topics matching in full (system topics left out),
    listed again at each trigger; assign: only the named queues; a queue not routed is an error."""
    fake.add_topic("T2", [("a", 0)])
    fake.add_topic("%RETRY%T", [("a", 0)])
    fake.add_topic("TX", [("a", 0)])
    fake.produce("T2", "a", 0, 5)
    base = {"nameserver": fake.name_server, "clientfactory": FACTORY}
    r = RocketMQStreamReader(parse_source_options({**base, "subscribepattern": "T[0-9]*"}, streaming=True))
    start = r.initialOffset()
    assert start == {"T": {"a:0": 0, "a:1": 0, "b:0": 0}, "T2": {"a:0": 0}}
    fake.add_topic("T3", [("b", 1)])
    fake.produce("T3", "b", 1, 4)
    assert r.latestOffset(start, ReadAllAvailable())["T3"] == {"b:1": 4}  # a new topic joins
    r.stop()
    assigned = json.dumps({"T": ["a:1", "b:0"], "T2": ["a:0"]})
    r = RocketMQStreamReader(parse_source_options({**base, "assign": assigned}, streaming=True))
    assert r.latestOffset(r.initialOffset(), ReadAllAvailable()) == {"T": {"a:1": 10, "b:0": 0}, "T2": {"a:0": 5}}
    r.stop()
    r = RocketMQStreamReader(parse_source_options({**base, "assign": json.dumps({"T": ["a:7"]})}, streaming=True))
    with pytest.raises(SourceError, match=r"option assign names queue\(s\) T a:7 that the route"):
        r.initialOffset()
    r.stop()


def test_stream_available_now_stops_at_target(fake: FakeCluster) -> None:
    r = _stream(fake)
    start = r.initialOffset()
    r.prepareForTriggerAvailableNow()
    fake.produce("T", "b", 0, 50)
    end = r.latestOffset(start, ReadAllAvailable())
    assert end == {"T": {"a:0": 100, "a:1": 10, "b:0": 0}}
    assert r.latestOffset(end, ReadAllAvailable()) == end


def test_stream_starting_offsets_and_regression(fake: FakeCluster) -> None:
    r = _stream(fake, startingOffsets='{"T": {"a:0": 40}}')
    assert r.initialOffset() == {"T": {"a:0": 40, "a:1": 0, "b:0": 0}}
    assert _stream(fake, startingOffsets="latest").initialOffset() == {"T": {"a:0": 100, "a:1": 10, "b:0": 0}}
    fake.set_min("T", "a", 0, 50)
    with pytest.raises(DataLossError, match="min offset is 50"):
        r.initialOffset()
    assert _stream(fake, startingOffsets='{"T": {"a:0": 40}}', failOnDataLoss="false").initialOffset()["T"]["a:0"] == 50
    with pytest.raises(DataLossError, match="below the checkpointed offset 200"):
        r.latestOffset({"T": {"a:0": 200}}, ReadAllAvailable())
    lenient = _stream(fake, failOnDataLoss="false")
    assert lenient.latestOffset({"T": {"a:0": 200}}, ReadAllAvailable())["T"]["a:0"] == 100


def test_batch_reader_partitions(fake: FakeCluster) -> None:
    opts = {"nameserver": fake.name_server, "topic": "T", "clientfactory": FACTORY, "numpartitions": "3"}
    parts = RocketMQBatchReader(parse_source_options(opts, streaming=False)).partitions()
    assert len(parts) == 3
    seen = sorted((rg.broker_name, rg.queue_id, o) for p in parts for rg in p.ranges for o in range(rg.start, rg.end))
    assert seen == sorted([("a", 0, o) for o in range(100)] + [("a", 1, o) for o in range(10)])
    bad = {**opts, "endingoffsets": '{"T": {"a:1": 11}}'}
    with pytest.raises(ValueError, match="beyond its max offset 10"):
        RocketMQBatchReader(parse_source_options(bad, streaming=False)).partitions()


class _RecordingFuture(Future):  # type: ignore[type-arg]
    """A resolved pull whose consumption (``result()``) is logged next to its submission."""

    def __init__(self, events: list[tuple[str, int, int]], key: tuple[int, int]) -> None:
        super().__init__()
        self._events, self._key = events, key

    def result(self, timeout: float | None = None) -> object:
        self._events.append(("consume", *self._key))
        return super().result(timeout)


class _RecordingPuller:
    """Pulls synchronously from the fake admin, logging submissions and consumptions in order."""

    def __init__(self, admin: FakeAdmin, concurrency: int) -> None:
        self.admin, self.concurrency = admin, concurrency
        self.events: list[tuple[str, int, int]] = []

    def submit(self, mq, offset: int, n: int) -> Future:  # type: ignore[type-arg]
        self.events.append(("submit", mq.queue_id, offset))
        fut = _RecordingFuture(self.events, (mq.queue_id, offset))
        fut.set_result(self.admin.pull_raw(mq, offset, n))
        return fut


def test_pull_window_spans_ranges_and_reuses_the_learned_cap(fake: FakeCluster) -> None:
    fake.set_pull_cap(6)
    puller = _RecordingPuller(FakeAdmin(fake.name_server), concurrency=3)
    spec = _spec(fake, batch=32, concurrency=3)
    hints = _StepHints()
    ranges = [QueueRange("T", "a", 0, 0, 40), QueueRange("T", "a", 1, 0, 10)]
    reads = [_RangeRead(r, spec, puller, hints) for r in ranges]  # type: ignore[arg-type]
    rows = [
        (q, o)
        for b in _read_ranges(reads, puller.concurrency)
        for q, o in zip(b.column("queue_id").to_pylist(), b.column("queue_offset").to_pylist(), strict=True)
    ]
    assert rows == [(0, o) for o in range(40)] + [(1, o) for o in range(10)]
    events = puller.events
    inflight = peak = 0
    for kind, _, _ in events:
        inflight += 1 if kind == "submit" else -1
        peak = max(peak, inflight)
    assert peak <= 3 and inflight == 0
    # queue 1's first pulls go out before queue 0's last answer is taken ...
    first_q1 = events.index(("submit", 1, 0))
    last_q0 = max(i for i, e in enumerate(events) if e[:2] == ("consume", 0))
    assert first_q1 < last_q0
    # ... as a full window sized by the cap queue 0 learned (6), not a single probing pull
    q1_submits = [e for e in events if e[:2] == ("submit", 1)]
    assert [o for _, _, o in q1_submits] == [0, 6]
    assert hints.steps == {"T": 6}
    # the first range probed with one pull of pullBatchSize before learning the cap
    assert events[:2] == [("submit", 0, 0), ("consume", 0, 0)]
