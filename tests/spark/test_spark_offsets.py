"""Offset JSON, spec resolution, admission control and partition planning (pure, no Spark)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from rocketpipe.errors import InvalidArgumentError
from rocketpipe.protocol.message import MessageQueue
from rocketpipe.spark.offsets import (
    QueueRange,
    TimestampSpec,
    cap_offsets,
    kafka_ranges,
    offsets_from_json,
    offsets_to_json,
    offsets_to_json_string,
    parse_offset_spec,
    parse_timestamp_spec,
    plan_ranges,
    resolve_offsets,
    resolve_timestamps,
    split_ranges,
)


def mq(b: str, q: int, t: str = "T") -> MessageQueue:
    return MessageQueue(t, b, q)


def test_offsets_json_is_canonical_and_round_trips() -> None:
    offsets = {mq("broker-b", 0): 5, mq("broker-a", 10): 7, mq("broker-a", 2): 3, mq("a", 0, "S"): 1}
    text = offsets_to_json_string(offsets)
    assert text == '{"S": {"a:0": 1}, "T": {"broker-a:10": 7, "broker-a:2": 3, "broker-b:0": 5}}'
    assert text == json.dumps(json.loads(text), sort_keys=True)
    assert offsets_from_json(json.loads(text)) == offsets
    # insertion order does not matter
    assert offsets_to_json_string(dict(reversed(list(offsets.items())))) == text


def test_broker_names_may_contain_colons() -> None:
    assert offsets_from_json({"T": {"host:1:3": 4}}) == {mq("host:1", 3): 4}


@pytest.mark.parametrize(
    "bad, match",
    [
        ([1, 2], "JSON object"),
        ({"T": 3}, "must be an object"),
        ({"T": {"broker-a": 3}}, "brokerName:queueId"),
        ({"T": {"broker-a:x": 3}}, "non-integer queue id"),
        ({"T": {"broker-a:0": "3"}}, "must be an integer"),
        ({"T": {"broker-a:0": -1}}, "negative"),
    ],
)
def test_offsets_from_json_rejects(bad: object, match: str) -> None:
    with pytest.raises(InvalidArgumentError, match=match):
        offsets_from_json(bad)


def test_parse_offset_spec() -> None:
    assert parse_offset_spec(" Earliest ", allow_earliest=True).kind == "earliest"
    assert parse_offset_spec("LATEST", allow_earliest=False).kind == "latest"
    spec = parse_offset_spec('{"T": {"broker-a:0": -2, "broker-a:1": 9}}', allow_earliest=True)
    assert spec.per_queue == {"T": {mq("broker-a", 0): -2, mq("broker-a", 1): 9}}
    with pytest.raises(InvalidArgumentError, match="not a valid end"):
        parse_offset_spec("earliest", allow_earliest=False)
    with pytest.raises(InvalidArgumentError, match="-2"):
        parse_offset_spec('{"T": {"broker-a:0": -2}}', allow_earliest=False)
    with pytest.raises(InvalidArgumentError, match="invalid offsets JSON"):
        parse_offset_spec('{"T": ', allow_earliest=True)
    with pytest.raises(InvalidArgumentError, match="not understood"):
        parse_offset_spec("newest", allow_earliest=True)


def test_resolve_offsets() -> None:
    queues = [mq("a", 0), mq("a", 1), mq("b", 0)]
    mins = {queues[0]: 2, queues[1]: 0, queues[2]: 5}
    maxs = {queues[0]: 10, queues[1]: 4, queues[2]: 9}
    assert resolve_offsets(parse_offset_spec("earliest", allow_earliest=True), queues, mins, maxs) == mins
    assert resolve_offsets(parse_offset_spec("latest", allow_earliest=True), queues, mins, maxs) == maxs
    spec = parse_offset_spec('{"T": {"a:0": 7, "b:0": -1}}', allow_earliest=True)
    assert resolve_offsets(spec, queues, mins, maxs) == {queues[0]: 7, queues[1]: 0, queues[2]: 9}
    assert resolve_offsets(spec, queues, mins, maxs, default="latest")[queues[1]] == 4


def test_cap_offsets_is_exact_and_proportional() -> None:
    a, b, c = mq("a", 0), mq("a", 1), mq("b", 0)
    start = {a: 0, b: 100, c: 5}
    latest = {a: 60, b: 130, c: 15}  # backlog 60, 30, 10
    end = cap_offsets(start, latest, 10)
    assert end == {a: 6, b: 103, c: 6}
    assert sum(end[q] - start[q] for q in end) == 10
    # budget larger than backlog: everything
    assert cap_offsets(start, latest, 1000) == latest
    # remainders go to the largest fractions; total is exact for every budget
    for budget in range(1, 100):
        end = cap_offsets(start, latest, budget)
        assert sum(end[q] - start[q] for q in end) == budget
        assert all(start[q] <= end[q] <= latest[q] for q in end)


def test_cap_offsets_new_and_vanished_queues() -> None:
    a, b, new = mq("a", 0), mq("a", 1), mq("c", 0)
    end = cap_offsets({a: 5, b: 7}, {a: 5, new: 4}, 100)
    assert end == {a: 5, b: 7, new: 4}


def test_plan_ranges() -> None:
    a, b, new = mq("a", 0), mq("a", 1), mq("c", 0)
    ranges = plan_ranges({a: 5, b: 7}, {a: 9, b: 7, new: 3})
    assert ranges == [QueueRange("T", "a", 0, 5, 9), QueueRange("T", "c", 0, 0, 3, from_earliest=True)]
    assert plan_ranges({a: 5}, {a: 3}) == []


def test_split_ranges_groups_small_and_splits_large() -> None:
    ranges = [QueueRange("T", "a", 0, 0, 3), QueueRange("T", "a", 1, 10, 12), QueueRange("T", "b", 0, 0, 100)]
    groups = split_ranges(ranges, 2)
    assert len(groups) == 2
    sizes = [sum(r.size for r in g) for g in groups]
    assert sizes == [53, 52]
    assert groups[0][:2] == (ranges[0], ranges[1])
    assert groups[0][2] == QueueRange("T", "b", 0, 0, 48)
    assert groups[1] == (QueueRange("T", "b", 0, 48, 100),)
    # every offset exactly once
    seen = [(r.broker_name, r.queue_id, o) for g in groups for r in g for o in range(r.start, r.end)]
    expected = [(r.broker_name, r.queue_id, o) for r in ranges for o in range(r.start, r.end)]
    assert sorted(seen) == sorted(expected) and len(seen) == len(set(seen))


def test_split_ranges_edge_cases() -> None:
    assert split_ranges([], 4) == []
    one = [QueueRange("T", "a", 0, 0, 3)]
    assert split_ranges(one, 8) == [
        (QueueRange("T", "a", 0, 0, 1),),
        (QueueRange("T", "a", 0, 1, 2),),
        (QueueRange("T", "a", 0, 2, 3),),
    ]
    assert split_ranges(one, 1) == [tuple(one)]
    assert split_ranges([QueueRange("T", "a", 0, 0, 10, from_earliest=True)], 2)[1][0].from_earliest


def test_kafka_ranges_one_partition_per_queue_then_split_as_kafka() -> None:
    big, small, empty = QueueRange("T", "a", 0, 0, 100), QueueRange("T", "a", 1, 10, 20), QueueRange("T", "a", 2, 5, 5)
    assert kafka_ranges([big, small, empty]) == [(big,), (small,)]
    # minPartitions 5: 100 of 110 rows -> round(4.55) = 5 pieces, 10 rows -> max(1, round(0.45)) = 1
    pieces = [g[0] for g in kafka_ranges([big, small], min_partitions=5)]
    assert [(p.queue_id, p.start, p.end) for p in pieces] == [
        (0, 0, 20), (0, 20, 40), (0, 40, 60), (0, 60, 80), (0, 80, 100), (1, 10, 20),
    ]  # fmt: skip
    # already enough partitions: minPartitions changes nothing
    assert kafka_ranges([big, small], min_partitions=2) == [(big,), (small,)]
    # maxRecordsPerPartition: ceil(size / max) nearly equal pieces, the last ones take the rounding
    pieces = [g[0] for g in kafka_ranges([big, small], max_records_per_partition=30)]
    assert [(p.queue_id, p.start, p.end) for p in pieces] == [
        (0, 0, 25),
        (0, 25, 50),
        (0, 50, 75),
        (0, 75, 100),
        (1, 10, 20),
    ]
    # both: the max first, then minPartitions over the pieces
    assert len(kafka_ranges([big], min_partitions=8, max_records_per_partition=50)) == 8
    one = QueueRange("T", "b", 0, 0, 3, from_earliest=True)
    pieces = [g[0] for g in kafka_ranges([one], min_partitions=5)]
    assert [(p.start, p.end) for p in pieces] == [(0, 1), (1, 2), (2, 3)] and all(p.from_earliest for p in pieces)


def test_split_is_deterministic() -> None:
    ranges = plan_ranges({mq("a", i): i for i in range(8)}, {mq("a", i): 100 + 7 * i for i in range(8)})
    assert split_ranges(ranges, 3) == split_ranges(list(ranges), 3)
    assert offsets_to_json({mq("a", 1): 2}) == {"T": {"a:1": 2}}


@pytest.mark.parametrize(
    ("raw", "named"),
    [
        ('{"T": {"a:77": 1}}', "T a:77"),  # a queue id the topic does not have
        ('{"T": {"zz:0": 1}}', "T zz:0"),  # a broker that does not serve the topic
        ('{"U": {"a:0": 1}}', "U a:0"),  # a topic this source does not read
    ],
)
def test_resolve_offsets_refuses_queues_that_do_not_exist(raw: str, named: str) -> None:
    queues = [mq("a", 0), mq("a", 1), mq("b", 0)]
    offs = dict.fromkeys(queues, 0)
    with pytest.raises(InvalidArgumentError, match=f"startingOffsets names queues that do not exist: {named}"):
        resolve_offsets(parse_offset_spec(raw, allow_earliest=True), queues, offs, offs)
    with pytest.raises(InvalidArgumentError) as err:
        resolve_offsets(parse_offset_spec(raw, allow_earliest=True), queues, offs, offs, option="endingOffsets")
    assert str(err.value).startswith("endingOffsets names queues that do not exist")
    assert ("T has a:0, a:1, b:0" if named.startswith("T") else "U is not a topic this source reads") in str(err.value)


def _search_in(times: dict[MessageQueue, list[int]]) -> Callable[[MessageQueue, int], int]:
    """SEARCH_OFFSET_BY_TIMESTAMP over store times: the first offset stored at or after ``ms``."""

    def search(q: MessageQueue, ms: int) -> int:
        return next((i for i, t in enumerate(times[q]) if t >= ms), len(times[q]))

    return search


def test_resolve_timestamps_start_end_and_no_match() -> None:
    a0, a1, b0 = mq("a", 0), mq("a", 1), mq("b", 0)
    times = {a0: [10, 20, 30, 40], a1: [5, 50], b0: []}
    mins, maxs = {a0: 0, a1: 0, b0: 0}, {a0: 4, a1: 2, b0: 0}
    search = _search_in(times)
    every_25 = TimestampSpec(all_ms=25)
    # b0 is empty: nothing at or after 25 there, which fails a start unless the strategy is latest
    with pytest.raises(InvalidArgumentError, match="T b:0 has no message stored at or after 25 ms"):
        resolve_timestamps(every_25, [a0, a1, b0], mins, maxs, search, ending=False)
    assert resolve_timestamps(every_25, [a0, a1, b0], mins, maxs, search, ending=False, no_match="latest") == {
        a0: 2,
        a1: 1,
        b0: 0,
    }
    assert resolve_timestamps(every_25, [a0, a1, b0], mins, maxs, search, ending=True) == {a0: 2, a1: 1, b0: 0}
    assert resolve_timestamps(TimestampSpec(all_ms=99), [a0], mins, maxs, search, ending=True) == {a0: 4}
    # per queue: the others start at their min / end at their max
    per = parse_timestamp_spec(None, '{"T": {"a:0": 35}}')
    assert per is not None
    assert resolve_timestamps(per, [a0, a1], mins, maxs, search, ending=False) == {a0: 3, a1: 0}
    assert resolve_timestamps(per, [a0, a1], mins, maxs, search, ending=True) == {a0: 3, a1: 2}
    with pytest.raises(InvalidArgumentError, match="names queues that do not exist: T a:9"):
        resolve_timestamps(TimestampSpec(per_queue={"T": {mq("a", 9): 1}}), [a0], mins, maxs, search, ending=False)


def test_parse_timestamp_spec() -> None:
    assert parse_timestamp_spec(None, None) is None
    assert parse_timestamp_spec(" 1700000000000 ", '{"T": {"a:0": 1}}') == TimestampSpec(all_ms=1700000000000)
    assert parse_timestamp_spec(None, '{"T": {"a:0": 7}}') == TimestampSpec(per_queue={"T": {mq("a", 0): 7}})
    for bad_all, bad_json in (("soon", None), ("-5", None), (None, '{"T": {"a:0": -1}}'), (None, "[1]")):
        with pytest.raises(InvalidArgumentError):
            parse_timestamp_spec(bad_all, bad_json)
