"""Offsets of the ``rocketmq`` Spark source and the planning of input partitions (L4 spark, pure).

Offset JSON (what Spark keeps in the checkpoint, also accepted by ``startingOffsets`` and
``endingOffsets``)::

    {"<topic>": {"<brokerName>:<queueId>": <offset>, ...}, ...}

for example ``{"TopicA": {"broker-a:0": 17, "broker-a:1": 0, "broker-b:0": 5}}``.

* RocketMQ queue ids are unique only per broker, so a key names the broker and the queue.
* An offset is the consume-queue offset of the **next** message to read: as an end offset it is
  exclusive, as a start offset inclusive.
* Both levels are emitted with **sorted keys** (plain string order, the same as
  ``json.dumps(..., sort_keys=True)``) and **int values**, because Spark compares offsets as
  strings; any other order makes Spark run empty micro-batches.
* In ``startingOffsets``/``endingOffsets`` the value ``-2`` means earliest and ``-1`` latest.

Partition planning is by row count, not one partition per queue: every Python task costs about
60 ms, so the ranges of a batch are laid end to end and cut into ``num_partitions`` chunks of
nearly equal rows; a partition may hold several short queue ranges and a long range may be split
across partitions. The plan depends only on ``(start, end, num_partitions)``, so a replayed batch
reads exactly the same ranges.

Imports: stdlib, :mod:`rocketpipe.errors`, :mod:`rocketpipe.protocol.message`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from ..errors import InvalidArgumentError
from ..protocol.message import MessageQueue

#: Sentinels in offset JSON given by a user.
EARLIEST: Final = -2
LATEST: Final = -1

Offsets = dict[MessageQueue, int]


def queue_key(mq: MessageQueue) -> str:
    """Return the JSON key of a queue: ``"<brokerName>:<queueId>"``."""
    return f"{mq.broker_name}:{mq.queue_id}"


def parse_queue_key(topic: str, key: str) -> MessageQueue:
    """Parse a ``"<brokerName>:<queueId>"`` key of ``topic``.

    Raises:
        InvalidArgumentError: the key has no ``:`` or the queue id is not a non-negative int.
    """
    broker, sep, qid = str(key).rpartition(":")
    if not sep or not broker:
        raise InvalidArgumentError(
            f"queue key {key!r} of topic {topic!r} must be 'brokerName:queueId', e.g. 'broker-a:0'"
        )
    try:
        queue_id = int(qid)
    except ValueError:
        raise InvalidArgumentError(f"queue key {key!r} of topic {topic!r} has a non-integer queue id") from None
    if queue_id < 0:
        raise InvalidArgumentError(f"queue key {key!r} of topic {topic!r} has a negative queue id")
    return MessageQueue(topic, broker, queue_id)


def offsets_to_json(offsets: Mapping[MessageQueue, int]) -> dict[str, dict[str, int]]:
    """Return the canonical JSON-ready dict of ``offsets`` (sorted keys, int values).

    Python dicts keep insertion order and Spark serialises with ``json.dumps`` as is, so the
    returned dict is built in sorted order at both levels.
    """
    by_topic: dict[str, dict[str, int]] = {}
    for mq, off in offsets.items():
        by_topic.setdefault(mq.topic, {})[queue_key(mq)] = int(off)
    return {t: {k: by_topic[t][k] for k in sorted(by_topic[t])} for t in sorted(by_topic)}


def offsets_to_json_string(offsets: Mapping[MessageQueue, int]) -> str:
    """Return the canonical JSON string of ``offsets`` (what Spark stores in the checkpoint)."""
    return json.dumps(offsets_to_json(offsets))


def offsets_from_json(data: Any, *, allow_sentinels: bool = False) -> Offsets:
    """Parse an offset dict (as loaded from JSON) into ``{MessageQueue: offset}``.

    Args:
        data: ``{topic: {"broker:qid": offset}}``.
        allow_sentinels: accept ``-2`` (earliest) and ``-1`` (latest) as offsets.

    Raises:
        InvalidArgumentError: wrong shape, bad key, or a negative offset that is not allowed.
    """
    if not isinstance(data, dict):
        raise InvalidArgumentError('offsets must be a JSON object like {"TopicA": {"broker-a:0": 10}}')
    out: Offsets = {}
    for topic, queues in data.items():
        if not isinstance(queues, dict):
            raise InvalidArgumentError(f'offsets of topic {topic!r} must be an object like {{"broker-a:0": 10}}')
        for key, off in queues.items():
            mq = parse_queue_key(str(topic), key)
            if isinstance(off, bool) or not isinstance(off, int):
                raise InvalidArgumentError(f"offset of {topic}/{key} must be an integer, got {off!r}")
            lowest = EARLIEST if allow_sentinels else 0
            if off < lowest:
                hint = " (-2 = earliest, -1 = latest)" if allow_sentinels else ""
                raise InvalidArgumentError(f"offset {off} of {topic}/{key} is negative{hint}")
            out[mq] = off
    return out


@dataclass(frozen=True, slots=True)
class OffsetSpec:
    """A parsed ``startingOffsets``/``endingOffsets`` value.

    Attributes:
        kind: ``"earliest"``, ``"latest"`` or ``"json"``.
        per_queue: for ``"json"``: ``{topic: {MessageQueue: offset or -2/-1}}``; else ``None``.
    """

    kind: Literal["earliest", "latest", "json"]
    per_queue: dict[str, dict[MessageQueue, int]] | None = None


def parse_offset_spec(raw: str, *, allow_earliest: bool) -> OffsetSpec:
    """Parse ``earliest`` | ``latest`` | offsets JSON.

    Args:
        raw: the option value.
        allow_earliest: whether ``earliest`` (and ``-2``) are allowed (not for endingOffsets).

    Raises:
        InvalidArgumentError: not one of the accepted forms.
    """
    text = raw.strip()
    low = text.lower()
    if low == "latest":
        return OffsetSpec("latest")
    if low == "earliest":
        if not allow_earliest:
            raise InvalidArgumentError("'earliest' is not a valid end; use 'latest' or offsets JSON")
        return OffsetSpec("earliest")
    if not text.startswith("{"):
        accepted = "'earliest', 'latest'" if allow_earliest else "'latest'"
        raise InvalidArgumentError(
            f'{raw!r} is not understood; use {accepted} or JSON like {{"TopicA": {{"broker-a:0": 10}}}}'
        )
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidArgumentError(f"invalid offsets JSON ({exc.msg} at char {exc.pos})") from None
    parsed = offsets_from_json(data, allow_sentinels=True)
    if not allow_earliest and any(v == EARLIEST for v in parsed.values()):
        raise InvalidArgumentError("-2 (earliest) is not a valid end offset; use -1 (latest) or an offset")
    per_queue: dict[str, dict[MessageQueue, int]] = {t: {} for t in data}
    for mq, off in parsed.items():
        per_queue[mq.topic][mq] = off
    return OffsetSpec("json", per_queue)


def resolve_offsets(
    spec: OffsetSpec,
    queues: Iterable[MessageQueue],
    min_offsets: Mapping[MessageQueue, int],
    max_offsets: Mapping[MessageQueue, int],
    *,
    default: Literal["earliest", "latest"] = "earliest",
    option: str = "startingOffsets",
) -> Offsets:
    """Turn a spec into concrete offsets for ``queues``.

    JSON offsets are used as given (range checks are the reader's job, under ``failOnDataLoss``);
    queues missing from the JSON get ``default``. A JSON queue that is not one of ``queues`` (a
    queue id the topic does not have, a broker that does not serve it, a topic not read) is an
    error, as Kafka's source refuses partitions it was not assigned, rather than being ignored.

    Args:
        spec: the parsed option.
        queues: the readable queues of the topics.
        min_offsets: each queue's min offset.
        max_offsets: each queue's max offset (the next offset to be written).
        default: what queues absent from a JSON spec resolve to.
        option: the option's name, for the error message.

    Returns:
        ``{queue: offset}`` for every queue in ``queues``, in the given order.

    Raises:
        InvalidArgumentError: the JSON names queues that are not among ``queues``; the message
            lists them and the queues there are.
    """
    queues = list(queues)
    unknown = json_queues(spec) - set(queues)
    if unknown:
        raise InvalidArgumentError(_unknown_queues_message(option, unknown, queues))
    out: Offsets = {}
    fallback = EARLIEST if default == "earliest" else LATEST
    for mq in queues:
        if spec.kind == "json":
            assert spec.per_queue is not None
            value = spec.per_queue.get(mq.topic, {}).get(mq, fallback)
        else:
            value = EARLIEST if spec.kind == "earliest" else LATEST
        if value == EARLIEST:
            out[mq] = min_offsets[mq]
        elif value == LATEST:
            out[mq] = max_offsets[mq]
        else:
            out[mq] = value
    return out


def _unknown_queues_message(option: str, unknown: set[MessageQueue], queues: list[MessageQueue]) -> str:
    """``option`` names ``unknown``: say which, and which queues each of their topics has."""
    have: dict[str, list[str]] = {}
    for mq in queues:
        have.setdefault(mq.topic, []).append(queue_key(mq))
    named = ", ".join(
        f"{mq.topic} {queue_key(mq)}" for mq in sorted(unknown, key=lambda q: (q.topic, q.broker_name, q.queue_id))
    )
    topics = sorted({mq.topic for mq in unknown})
    known = "; ".join(
        f"{t} has {', '.join(sorted(have[t]))}" if t in have else f"{t} is not a topic this source reads"
        for t in topics
    )
    return f"{option} names queues that do not exist: {named} ({known})"


@dataclass(frozen=True, slots=True)
class TimestampSpec:
    """A parsed ``startingTimestamp`` / ``startingOffsetsByTimestamp`` (or ``ending…``) value.

    Attributes:
        all_ms: one timestamp (epoch ms) for every queue (``…Timestamp``), else None.
        per_queue: ``{topic: {MessageQueue: epoch ms}}`` (``…OffsetsByTimestamp``), else None.
    """

    all_ms: int | None = None
    per_queue: dict[str, dict[MessageQueue, int]] | None = None


def parse_timestamp_spec(all_raw: str | None, json_raw: str | None) -> TimestampSpec | None:
    """Parse ``…Timestamp`` (wins, as in Kafka's source) or ``…OffsetsByTimestamp``; None when neither.

    Args:
        all_raw: epoch milliseconds for every queue.
        json_raw: ``{"topic": {"brokerName:queueId": epoch ms}}``.

    Raises:
        InvalidArgumentError: not a non-negative integer / not such a JSON object.
    """
    if all_raw is not None:
        try:
            ms = int(all_raw.strip())
        except ValueError:
            raise InvalidArgumentError(f"{all_raw!r} is not a timestamp in epoch milliseconds") from None
        if ms < 0:
            raise InvalidArgumentError(f"timestamp {ms} is negative")
        return TimestampSpec(all_ms=ms)
    if json_raw is None:
        return None
    try:
        data = json.loads(json_raw)
    except json.JSONDecodeError as exc:
        raise InvalidArgumentError(f"invalid timestamps JSON ({exc.msg} at char {exc.pos})") from None
    parsed = offsets_from_json(data)  # non-negative integers per "brokerName:queueId"
    per_queue: dict[str, dict[MessageQueue, int]] = {t: {} for t in data}
    for mq, ms in parsed.items():
        per_queue[mq.topic][mq] = ms
    return TimestampSpec(per_queue=per_queue)


def resolve_timestamps(
    spec: TimestampSpec,
    queues: Iterable[MessageQueue],
    min_offsets: Mapping[MessageQueue, int],
    max_offsets: Mapping[MessageQueue, int],
    search: Callable[[MessageQueue, int], int],
    *,
    ending: bool,
    no_match: Literal["error", "latest"] = "error",
    option: str = "startingOffsetsByTimestamp",
) -> Offsets:
    """Offsets of the first message stored at or after each queue's timestamp (Kafka's
    ``offsetsForTimes``, here the broker's SEARCH_OFFSET_BY_TIMESTAMP through ``search``).

    A queue with no message at or after its timestamp (the search lands on the max offset) is,
    for a start, an error (``no_match="error"``, Kafka's ``startingOffsetsByTimestampStrategy``
    default) or its max offset (``"latest"``); for an end it is its max offset (everything
    before the timestamp is read). Queues left out of a JSON spec start at their min offset /
    end at their max offset; queues it names that the source does not read are an error.

    Args:
        search: ``(queue, epoch ms) -> offset``.
        ending: resolve an end (exclusive) rather than a start.

    Raises:
        InvalidArgumentError: an unknown queue, or a start with no matching message under
            ``no_match="error"``.
    """
    queues = list(queues)
    named = {mq for qs in (spec.per_queue or {}).values() for mq in qs}
    unknown = named - set(queues)
    if unknown:
        raise InvalidArgumentError(_unknown_queues_message(option, unknown, queues))
    out: Offsets = {}
    for mq in queues:
        ms = spec.all_ms if spec.all_ms is not None else (spec.per_queue or {}).get(mq.topic, {}).get(mq)
        if ms is None:
            out[mq] = max_offsets[mq] if ending else min_offsets[mq]
            continue
        found = max(min_offsets[mq], min(int(search(mq, ms)), max_offsets[mq]))
        if found >= max_offsets[mq] and not ending and no_match == "error":
            raise InvalidArgumentError(
                f"{option}: {mq.topic} {queue_key(mq)} has no message stored at or after {ms} ms (its max offset is "
                f"{max_offsets[mq]}); set startingOffsetsByTimestampStrategy=latest to start such queues at the end"
            )
        out[mq] = found
    return out


def json_queues(spec: OffsetSpec) -> set[MessageQueue]:
    """Return the queues named explicitly in a JSON spec (empty for earliest/latest)."""
    if spec.per_queue is None:
        return set()
    return {mq for qs in spec.per_queue.values() for mq in qs}


# ---------------------------------------------------------------------------------------------
# Admission control


def cap_offsets(start: Mapping[MessageQueue, int], latest: Mapping[MessageQueue, int], max_rows: int) -> Offsets:
    """Bound a micro-batch to ``max_rows`` rows, sharing the budget in proportion to backlog.

    Each queue gets ``floor(max_rows * backlog / total)`` rows, and the rows left over go one by
    one to the queues with the largest fractional parts (ties: queue order), so the batch holds
    exactly ``min(max_rows, total backlog)`` rows and every queue moves forward in proportion.

    Args:
        start: the batch's start offsets; queues absent from it start at 0.
        latest: the head (max offset) per queue; queues absent from it keep their start.
        max_rows: the row budget (``>= 1``).

    Returns:
        End offsets for every queue in ``start`` or ``latest`` (never below start).
    """
    queues = sorted(set(start) | set(latest))
    backlog = {mq: max(0, latest.get(mq, start.get(mq, 0)) - start.get(mq, 0)) for mq in queues}
    total = sum(backlog.values())
    end: Offsets = {}
    if total <= max_rows:
        for mq in queues:
            end[mq] = start.get(mq, 0) + backlog[mq]
        return end
    shares: dict[MessageQueue, int] = {}
    remainders: list[tuple[int, int, MessageQueue]] = []
    for i, mq in enumerate(queues):
        q, r = divmod(max_rows * backlog[mq], total)
        shares[mq] = q
        remainders.append((-r, i, mq))
    left = max_rows - sum(shares.values())
    for _, _, mq in sorted(remainders)[:left]:
        shares[mq] += 1
    for mq in queues:
        end[mq] = start.get(mq, 0) + shares[mq]
    return end


# ---------------------------------------------------------------------------------------------
# Ranges and input partitions


@dataclass(frozen=True, slots=True)
class QueueRange:
    """Messages ``[start, end)`` of one queue.

    Attributes:
        topic, broker_name, queue_id: the queue.
        start: first offset to read (inclusive).
        end: offset to stop at (exclusive).
        from_earliest: the queue appeared after the query started and ``start`` is a guess
            (0); messages below the queue's min offset are then skipped without counting as
            data loss.
    """

    topic: str
    broker_name: str
    queue_id: int
    start: int
    end: int
    from_earliest: bool = False

    @property
    def message_queue(self) -> MessageQueue:
        """The queue of this range."""
        return MessageQueue(self.topic, self.broker_name, self.queue_id)

    @property
    def size(self) -> int:
        """Number of offsets in the range."""
        return self.end - self.start


def plan_ranges(start: Mapping[MessageQueue, int], end: Mapping[MessageQueue, int]) -> list[QueueRange]:
    """Return the non-empty ranges between two offset maps, sorted by queue.

    Queues in ``end`` but not in ``start`` (new queues) start at 0 with ``from_earliest``.
    Queues only in ``start`` (no longer routed) or with ``end <= start`` give no range.
    """
    out: list[QueueRange] = []
    for mq in sorted(end):
        hi = end[mq]
        if mq in start:
            lo, guessed = start[mq], False
        else:
            lo, guessed = 0, True
        if hi > lo:
            out.append(QueueRange(mq.topic, mq.broker_name, mq.queue_id, lo, hi, guessed))
    return out


def _divide(r: QueueRange, parts: int) -> list[QueueRange]:
    """``r`` cut into ``parts`` consecutive pieces of nearly equal size (the last ones take the
    rounding), empty pieces dropped (``KafkaOffsetRangeCalculator.getDividedPartition``)."""
    out: list[QueueRange] = []
    remaining, lo = r.size, r.start
    for part in range(parts):
        this = remaining // (parts - part)
        remaining -= this
        hi = min(lo + this, r.end)
        if hi > lo:
            out.append(QueueRange(r.topic, r.broker_name, r.queue_id, lo, hi, r.from_earliest))
        lo = hi
    return out


def kafka_ranges(
    ranges: Iterable[QueueRange], min_partitions: int | None = None, max_records_per_partition: int | None = None
) -> list[tuple[QueueRange, ...]]:
    """One input partition per queue range, as Spark's Kafka source plans them
    (``KafkaOffsetRangeCalculator.getRanges``).

    ``max_records_per_partition`` first cuts every range into ``ceil(size / max)`` pieces; then,
    when that gives fewer than ``min_partitions`` pieces, each piece is cut again into
    ``max(1, round(size / total * min_partitions))`` (half up), so large queues get more
    partitions than small ones.

    Args:
        ranges: ranges in a deterministic order; empty ones are dropped.

    Returns:
        One single-range group per input partition, in order.
    """
    pieces = [r for r in ranges if r.end > r.start]
    if max_records_per_partition is not None:
        pieces = [p for r in pieces for p in _divide(r, -(-r.size // max_records_per_partition))]
    if min_partitions is not None and len(pieces) < min_partitions:
        total = sum(r.size for r in pieces)
        pieces = [p for r in pieces for p in _divide(r, max(1, math.floor(r.size / total * min_partitions + 0.5)))]
    return [(p,) for p in pieces]


def split_ranges(ranges: Iterable[QueueRange], num_partitions: int) -> list[tuple[QueueRange, ...]]:
    """Cut ranges into at most ``num_partitions`` groups of nearly equal row counts.

    The ranges are laid end to end in the given order and cut every ``ceil(total / n)`` rows
    (``n = min(num_partitions, total)``), so short ranges share a group and long ones are split.

    Args:
        ranges: non-empty ranges (``end > start``), in a deterministic order.
        num_partitions: the target number of groups (``>= 1``).

    Returns:
        Non-empty groups; empty when there are no rows.
    """
    items = [r for r in ranges if r.end > r.start]
    total = sum(r.size for r in items)
    if total == 0:
        return []
    n = max(1, min(num_partitions, total))
    chunk = -(-total // n)
    groups: list[tuple[QueueRange, ...]] = []
    current: list[QueueRange] = []
    room = chunk
    for r in items:
        lo = r.start
        while lo < r.end:
            take = min(room, r.end - lo)
            current.append(QueueRange(r.topic, r.broker_name, r.queue_id, lo, lo + take, r.from_earliest))
            lo += take
            room -= take
            if room == 0:
                groups.append(tuple(current))
                current, room = [], chunk
    if current:
        groups.append(tuple(current))
    return groups
