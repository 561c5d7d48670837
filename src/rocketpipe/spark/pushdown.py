"""Filter pushdown of batch reads (L4, pure): which of Spark's filters narrow the pulls, and how.

Spark (≥ 4.1, with ``spark.sql.python.filterPushdown.enabled``) hands
:meth:`~rocketpipe.spark.reader.RocketMQPushdownBatchReader.pushFilters` the conjuncts of a
query's ``where``; :func:`push_filters` keeps what this source can use and says which filters
Spark must still evaluate. :func:`narrow` then applies them to the planned queues and offsets.

* ``topic``, ``broker_name``, ``queue_id`` (``=``, ``IN``; ``queue_id`` also ``<``, ``<=``,
  ``>``, ``>=``): the queues read. Exact: Spark does not re-check them.
* ``queue_offset`` (``=``, ``<``, ``<=``, ``>``, ``>=``): each queue's ``[start, end)``. Exact,
  since the reader drops rows outside its ranges. ``IN`` narrows to ``[min, max]`` and stays
  with Spark.
* ``store_timestamp`` (``<``, ``<=``, ``>``, ``>=``, ``=``): each queue's start / end through
  the broker's search by store time (``SEARCH_OFFSET_BY_TIMESTAMP``: the first offset stored at
  or after a time), widened to whole milliseconds so the pulled range holds every matching
  row; Spark re-checks the exact bound.

* ``tags`` (``=``, ``IN``): the pulls carry the tag subscription ``a||b`` (Java's
  ``FilterAPI.buildSubscriptionData``), so the broker hands out only the messages whose tags hash
  code is one of the tags' (``String.hashCode``); the reader then keeps the rows whose tag string
  is one of them, as Java's ``PullAPIWrapper.processPullResult`` re-checks it (equal hash codes,
  other tag). Exact. A tag that the subscription syntax cannot carry (empty, ``*``, containing
  ``||`` or surrounding blanks) is left to Spark.

Everything else (``born_timestamp`` — the producer's clock, which the broker's time search does
not index —, ``keys``, ``Not``, ``IsNull`` …) is left to Spark.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pyspark.sql.datasource import (
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
)

from ..protocol.message import MessageQueue

__all__ = ["PushedFilters", "narrow", "push_filters", "tag_expression"]

_RANGE = (EqualTo, GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual)


@dataclass(frozen=True)
class PushedFilters:
    """What a batch read keeps of Spark's filters (all conjuncts; ``None`` = no constraint).

    Attributes:
        topics / broker_names / queue_ids: the allowed values (an empty set: nothing matches).
        queue_id_lo / queue_id_hi: ``queue_id`` range, inclusive lo, exclusive hi.
        offset_lo / offset_hi: ``queue_offset`` range, inclusive lo, exclusive hi.
        store_ms_lo: read from the first message stored at or after this epoch ms.
        store_ms_hi: read up to (excluding) the first message stored at or after this epoch ms.
        tags: the allowed tag strings (``tags = / IN``; an empty set: nothing matches).
        described: one text per pushed filter, for the log line.
    """

    topics: frozenset[str] | None = None
    broker_names: frozenset[str] | None = None
    queue_ids: frozenset[int] | None = None
    queue_id_lo: int | None = None
    queue_id_hi: int | None = None
    offset_lo: int | None = None
    offset_hi: int | None = None
    store_ms_lo: int | None = None
    store_ms_hi: int | None = None
    tags: frozenset[str] | None = None
    described: tuple[str, ...] = field(default=())

    def keeps(self, mq: MessageQueue) -> bool:
        """True when queue ``mq`` may hold matching rows."""
        return (
            self.tags != frozenset()
            and (self.topics is None or mq.topic in self.topics)
            and (self.broker_names is None or mq.broker_name in self.broker_names)
            and (self.queue_ids is None or mq.queue_id in self.queue_ids)
            and (self.queue_id_lo is None or mq.queue_id >= self.queue_id_lo)
            and (self.queue_id_hi is None or mq.queue_id < self.queue_id_hi)
        )


def _subscribable(tag: Any) -> bool:
    """Whether ``tag`` survives a TAG subscription expression unchanged (``FilterAPI`` splits at
    ``||``, trims each part, drops empty ones and reads a lone ``*`` as "all")."""
    return isinstance(tag, str) and tag != "*" and bool(tag) and tag == tag.strip() and "||" not in tag


def tag_expression(tags: Iterable[str]) -> str:
    """The TAG subscription expression of ``tags`` (``"a||b"``, sorted), as pulls carry it.

    Raises:
        ValueError: no tag (an empty expression would subscribe to every message).
    """
    ordered = sorted(tags)
    if not ordered:
        raise ValueError("a tag subscription needs at least one tag")
    return "||".join(ordered)


def _meet_set(old: frozenset[Any] | None, new: Iterable[Any]) -> frozenset[Any]:
    s = frozenset(new)
    return s if old is None else old & s


def _max(a: int | None, b: int) -> int:
    return b if a is None else max(a, b)


def _min(a: int | None, b: int) -> int:
    return b if a is None else min(a, b)


def _int(value: Any) -> int | None:
    """An integer filter value, or None for anything else (bool included)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _bounds(f: Filter, v: int) -> tuple[int | None, int | None]:
    """``(inclusive lo, exclusive hi)`` of an integer comparison ``column <op> v``."""
    if isinstance(f, EqualTo):
        return v, v + 1
    if isinstance(f, GreaterThan):
        return v + 1, None
    if isinstance(f, GreaterThanOrEqual):
        return v, None
    if isinstance(f, LessThan):
        return None, v
    return None, v + 1  # LessThanOrEqual


def _epoch_us(value: Any) -> int | None:
    """Microseconds since the epoch of a time-zone aware datetime, else None (naive values are
    not pushed: their zone is not known here)."""
    if not isinstance(value, dt.datetime) or value.tzinfo is None:
        return None
    delta = value - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _store_bounds(f: Filter, us: int) -> tuple[int | None, int | None]:
    """Store-time bounds in whole ms holding every row of ``store_timestamp <op> us``: a start at
    the first message stored at or after ``lo`` ms, an end before the first stored at or after
    ``hi`` ms."""
    lo_ms, hi_ms = math.floor(us / 1000), math.floor(us / 1000) + 1
    if isinstance(f, EqualTo):
        return lo_ms, hi_ms
    if isinstance(f, GreaterThan | GreaterThanOrEqual):
        return lo_ms, None
    return None, hi_ms  # LessThan / LessThanOrEqual


def push_filters(filters: Iterable[Filter]) -> tuple[PushedFilters, list[Filter]]:
    """Split Spark's pushed conjuncts into what the read uses and what Spark still evaluates.

    Returns:
        ``(pushed, remaining)``: ``remaining`` holds the input filters themselves (by
        reference, as Spark requires), in input order.
    """
    p = PushedFilters()
    remaining: list[Filter] = []
    described: list[str] = []
    for f in filters:
        attribute: tuple[str, ...] = getattr(f, "attribute", ())
        col = attribute[0] if len(attribute) == 1 else None
        exact = False
        if col in ("topic", "broker_name") and isinstance(f, EqualTo | In):
            values = (f.value,) if isinstance(f, EqualTo) else tuple(f.value)
            if all(isinstance(v, str) for v in values):
                if col == "topic":
                    p = replace(p, topics=_meet_set(p.topics, values))
                else:
                    p = replace(p, broker_names=_meet_set(p.broker_names, values))
                exact = True
        elif col == "tags" and isinstance(f, EqualTo | In):
            tags = (f.value,) if isinstance(f, EqualTo) else tuple(f.value)
            if tags and all(_subscribable(t) for t in tags):
                p = replace(p, tags=_meet_set(p.tags, tags))
                exact = True
        elif col in ("queue_id", "queue_offset") and isinstance(f, In):
            ints = [_int(v) for v in f.value]
            if ints and all(i is not None for i in ints):
                vals = [i for i in ints if i is not None]
                if col == "queue_id":
                    p = replace(p, queue_ids=_meet_set(p.queue_ids, vals))
                    exact = True
                else:  # narrowed to [min, max]; Spark drops the offsets in between
                    p = replace(p, offset_lo=_max(p.offset_lo, min(vals)), offset_hi=_min(p.offset_hi, max(vals) + 1))
                    described.append(f"{col} in [{min(vals)}, {max(vals)}]")
        elif col in ("queue_id", "queue_offset") and isinstance(f, _RANGE):
            v = _int(f.value)
            if v is not None:
                lo, hi = _bounds(f, v)
                if col == "queue_id":
                    p = replace(
                        p,
                        queue_id_lo=p.queue_id_lo if lo is None else _max(p.queue_id_lo, lo),
                        queue_id_hi=p.queue_id_hi if hi is None else _min(p.queue_id_hi, hi),
                    )
                else:
                    p = replace(
                        p,
                        offset_lo=p.offset_lo if lo is None else _max(p.offset_lo, lo),
                        offset_hi=p.offset_hi if hi is None else _min(p.offset_hi, hi),
                    )
                exact = True
        elif col == "store_timestamp" and isinstance(f, _RANGE):
            us = _epoch_us(f.value)
            if us is not None:
                lo, hi = _store_bounds(f, us)
                p = replace(
                    p,
                    store_ms_lo=p.store_ms_lo if lo is None else _max(p.store_ms_lo, lo),
                    store_ms_hi=p.store_ms_hi if hi is None else _min(p.store_ms_hi, hi),
                )
                described.append(f"{col} {type(f).__name__} {f.value.isoformat()}")
        if exact:
            described.append(f"{col} {type(f).__name__} {getattr(f, 'value', None)!r}")
        else:
            remaining.append(f)
    return replace(p, described=tuple(described)), remaining


def narrow(
    pushed: PushedFilters,
    queues: list[MessageQueue],
    start: Mapping[MessageQueue, int],
    end: Mapping[MessageQueue, int],
    search: Callable[[MessageQueue, int], int],
) -> tuple[dict[MessageQueue, int], dict[MessageQueue, int]]:
    """Apply ``pushed`` to planned ``[start, end)`` offsets of ``queues``.

    Queues the filters exclude are left out of both maps; the others' ranges shrink (an empty
    range is ``start == end``). ``search`` (``(queue, epoch ms) -> offset``, the broker's search
    by store time) is called only for queues kept, and only with store-time bounds.

    Returns:
        ``(start, end)`` of the kept queues.
    """
    lo_out: dict[MessageQueue, int] = {}
    hi_out: dict[MessageQueue, int] = {}
    for mq in queues:
        if not pushed.keeps(mq):
            continue
        lo, hi = start[mq], end[mq]
        if pushed.offset_lo is not None:
            lo = max(lo, pushed.offset_lo)
        if pushed.offset_hi is not None:
            hi = min(hi, pushed.offset_hi)
        if lo < hi and pushed.store_ms_lo is not None:
            lo = max(lo, search(mq, pushed.store_ms_lo))
        if lo < hi and pushed.store_ms_hi is not None:
            hi = min(hi, search(mq, pushed.store_ms_hi))
        lo_out[mq], hi_out[mq] = lo, max(lo, hi)
    return lo_out, hi_out
