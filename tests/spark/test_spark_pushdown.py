"""push_filters / narrow (rocketpipe.spark.pushdown): which filters a batch read uses, pure."""

from __future__ import annotations

import datetime as dt

import pytest
from pyspark.sql.datasource import (
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    LessThan,
    LessThanOrEqual,
    Not,
)

from rocketpipe.protocol.message import MessageQueue
from rocketpipe.spark.pushdown import PushedFilters, narrow, push_filters, tag_expression

pytestmark = pytest.mark.spark

QUEUES = [MessageQueue(t, b, q) for t in ("TA", "TB") for b in ("broker-a", "broker-b") for q in range(4)]


def test_exact_filters_are_kept_and_the_rest_returned_by_reference() -> None:
    keys = EqualTo(("keys",), "x")
    born = GreaterThan(("born_timestamp",), dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
    not_q = Not(EqualTo(("queue_id",), 1))
    offsets_in = In(("queue_offset",), (5, 9, 7))
    store = GreaterThanOrEqual(("store_timestamp",), dt.datetime(2026, 1, 1, 0, 0, 0, 1500, tzinfo=dt.UTC))
    filters = [
        EqualTo(("topic",), "TA"),
        In(("broker_name",), ("broker-a", "broker-z")),
        GreaterThanOrEqual(("queue_id",), 1),
        LessThan(("queue_id",), 3),
        GreaterThan(("queue_offset",), 2),
        LessThanOrEqual(("queue_offset",), 20),
        keys,
        born,
        not_q,
        offsets_in,
        store,
        IsNotNull(("body",)),
    ]
    pushed, remaining = push_filters(filters)
    assert remaining == [keys, born, not_q, offsets_in, store, filters[-1]]
    assert all(any(r is f for f in filters) for r in remaining)
    assert pushed.topics == {"TA"} and pushed.broker_names == {"broker-a", "broker-z"}
    assert (pushed.queue_id_lo, pushed.queue_id_hi) == (1, 3)
    # > 2 and <= 20, then IN narrowed to [5, 9]
    assert (pushed.offset_lo, pushed.offset_hi) == (5, 10)
    # 1.5 ms past the epoch second: the range starts at the whole ms holding it
    assert pushed.store_ms_lo == 1_767_225_600_001 and pushed.store_ms_hi is None
    assert [mq.queue_id for mq in QUEUES if pushed.keeps(mq)] == [1, 2]
    assert len(pushed.described) == 8


def test_values_of_the_wrong_kind_are_not_pushed() -> None:
    naive = LessThan(("store_timestamp",), dt.datetime(2026, 1, 1))
    as_bool = EqualTo(("queue_id",), True)
    as_text = EqualTo(("queue_offset",), "7")
    mixed = In(("topic",), ("TA", 3))
    nested = EqualTo(("properties", "k"), "v")
    pushed, remaining = push_filters([naive, as_bool, as_text, mixed, nested])
    assert remaining == [naive, as_bool, as_text, mixed, nested]
    assert pushed == PushedFilters()


def test_conjuncts_on_one_column_intersect() -> None:
    pushed, remaining = push_filters([EqualTo(("topic",), "TA"), EqualTo(("topic",), "TB"), EqualTo(("queue_id",), 2)])
    assert remaining == [] and pushed.topics == frozenset() and pushed.queue_ids is None
    assert not any(pushed.keeps(mq) for mq in QUEUES)
    pushed, _ = push_filters([In(("queue_id",), (1, 2, 3)), In(("queue_id",), (3, 4))])
    assert pushed.queue_ids == {3}


def test_store_time_bounds_cover_every_matching_row() -> None:
    t = dt.datetime.fromtimestamp(1_700_000_000.0005, tz=dt.UTC)  # 1_700_000_000_000 ms + 500 us
    ms = 1_700_000_000_000
    for f, lo, hi in [
        (GreaterThan(("store_timestamp",), t), ms, None),
        (GreaterThanOrEqual(("store_timestamp",), t), ms, None),
        (LessThan(("store_timestamp",), t), None, ms + 1),
        (LessThanOrEqual(("store_timestamp",), t), None, ms + 1),
        (EqualTo(("store_timestamp",), t), ms, ms + 1),
    ]:
        pushed, remaining = push_filters([f])
        assert (pushed.store_ms_lo, pushed.store_ms_hi) == (lo, hi) and remaining == [f]


def test_narrow_shrinks_ranges_and_searches_kept_queues_only() -> None:
    queues = QUEUES[:4]  # TA broker-a 0..3
    start = dict.fromkeys(queues, 0)
    end = dict.fromkeys(queues, 100)
    searched: list[tuple[MessageQueue, int]] = []

    def search(mq: MessageQueue, ms: int) -> int:
        searched.append((mq, ms))
        return {1000: 30, 2000: 60}[ms]

    pushed = PushedFilters(
        queue_ids=frozenset({1, 2}), offset_lo=40, offset_hi=90, store_ms_lo=1000, store_ms_hi=2000, described=("x",)
    )
    lo, hi = narrow(pushed, queues, start, end, search)
    assert lo == {queues[1]: 40, queues[2]: 40} and hi == {queues[1]: 60, queues[2]: 60}
    assert {mq for mq, _ in searched} == {queues[1], queues[2]}
    # an offset range already empty asks the broker nothing and stays empty
    searched.clear()
    lo, hi = narrow(PushedFilters(offset_lo=100, store_ms_lo=1000), queues, start, end, search)
    assert all(lo[mq] == hi[mq] == 100 for mq in queues) and searched == []


def test_tags_equal_and_in_are_pushed_as_a_tag_subscription() -> None:
    pushed, remaining = push_filters([In(("tags",), ("b", "a", "c")), EqualTo(("topic",), "TA")])
    assert remaining == [] and pushed.tags == {"a", "b", "c"}
    assert tag_expression(pushed.tags) == "a||b||c"
    assert [mq for mq in QUEUES if pushed.keeps(mq)] == QUEUES[:8]
    pushed, _ = push_filters([In(("tags",), ("a", "b")), EqualTo(("tags",), "b")])
    assert pushed.tags == {"b"}
    # disjoint conjuncts: nothing can match, no queue is read
    pushed, remaining = push_filters([EqualTo(("tags",), "a"), EqualTo(("tags",), "b")])
    assert remaining == [] and pushed.tags == frozenset() and not any(pushed.keeps(mq) for mq in QUEUES)
    with pytest.raises(ValueError, match="at least one tag"):
        tag_expression(frozenset())


def test_tags_the_subscription_syntax_cannot_carry_stay_with_spark() -> None:
    unfit = [
        EqualTo(("tags",), "*"),
        EqualTo(("tags",), ""),
        EqualTo(("tags",), " padded"),
        In(("tags",), ("a", "x||y")),
        In(("tags",), ()),
        EqualTo(("tags",), 7),
        Not(EqualTo(("tags",), "a")),
    ]
    pushed, remaining = push_filters(unfit)
    assert remaining == unfit and pushed == PushedFilters()
