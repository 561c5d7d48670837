"""Consume statistics of the push consumer (L3): pull RT / TPS, consume RT / OK TPS / failed TPS.

Mirrors ``org.apache.rocketmq.client.stat.ConsumerStatsManager`` (five ``StatsItemSet``\\ s keyed
``topic@group``) and what ``ConsumerStatsManager.consumeStatus`` reports in the ``statusTable`` of
GET_CONSUMER_RUNNING_INFO (``ConsumeStatus``):

* ``pullRT``: average pull round trip over the last minute, ms (FOUND pulls only);
* ``pullTPS``: messages pulled per second over the last minute;
* ``consumeRT``: average listener call time over the last minute, ms; the last hour's average
  when nothing was consumed in the last minute;
* ``consumeOKTPS``: messages acknowledged per second over the last minute;
* ``consumeFailedTPS``: messages failed (RECONSUME_LATER, past ``ack_index``, orderly SUSPEND)
  per second over the last minute;
* ``consumeFailedMsgs``: messages failed over the last hour (an int).

Where the consume services call it (as in Java): the listener's call time after every call
(``ConsumeRequest.run`` → ``incConsumeRT``), OK / failed counts in ``processConsumeResult``
(``incConsumeOKTPS`` / ``incConsumeFailedTPS``), the pull RT of every FOUND pull and the number
of messages of a non-empty one (``DefaultMQPushConsumerImpl.pullMessage`` callback →
``incPullRT`` / ``incPullTPS``). Statistics are keyed by the *queue's* topic, so redeliveries
count under ``%RETRY%<group>``.

Windows. Java samples cumulative counters every 10 s (minute: 7 samples) and 10 min (hour: 7
samples) and reports the difference between the oldest and the newest sample, so a fresh
counter reads 0 until the next sample. Here each item keeps two rings of buckets (60 × 1 s
and 60 × 1 min) that are filled at the increment — O(1) per call, one call per batch — and
summed on read, so values are visible at once. TPS = sum over the window ÷ the time the window
covers (its length, or the time since the item's first increment when that is shorter, at
least one bucket). Time comes from an injected :class:`~rocketpipe.clock.Clock` (wall ms), so
:class:`~rocketpipe.testing.FakeClock` drives the windows in tests. Durations (RT values) are
measured by the callers and passed in ms.

Imports: L0 (``clock``) only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from ...clock import SYSTEM_CLOCK, Clock

__all__ = ["ConsumerStats", "StatsSnapshot", "StatsWindow", "zero_consume_status"]

#: Width and count of the minute window's buckets (1 s × 60).
MINUTE_BUCKET_MS: Final = 1_000
#: Width and count of the hour window's buckets (1 min × 60).
HOUR_BUCKET_MS: Final = 60_000
BUCKETS: Final = 60


@dataclass(frozen=True, slots=True)
class StatsSnapshot:
    """One window's numbers (Java ``StatsSnapshot``).

    Attributes:
        sum: total of the added values in the window (messages, or ms for RT items).
        times: number of increments in the window.
        tps: ``sum`` per second over the window.
        avgpt: ``sum / times`` (0.0 without increments): the average RT in ms for RT items.
    """

    sum: float
    times: int
    tps: float
    avgpt: float


class StatsWindow:
    """A ring of ``buckets`` time buckets of ``bucket_ms`` each, summed on read.

    :meth:`add` is O(1); :meth:`snapshot` is O(``buckets``). A bucket belongs to the window when
    it started within the last ``buckets`` bucket widths (the current one included). A clock
    that moves backwards never raises: buckets "from the future" are left out until overwritten.

    Args:
        bucket_ms: width of one bucket, ms (> 0).
        buckets: number of buckets (> 0).

    Raises:
        ValueError: a non-positive width or count.
    """

    __slots__ = ("_bucket_ms", "_n", "_stamp", "_times", "_value", "first_ms")

    def __init__(self, bucket_ms: int, buckets: int = BUCKETS) -> None:
        if bucket_ms <= 0 or buckets <= 0:
            raise ValueError("bucket_ms and buckets must be > 0")
        self._bucket_ms = bucket_ms
        self._n = buckets
        self._stamp = [-1] * buckets
        self._value = [0.0] * buckets
        self._times = [0] * buckets
        #: wall time of the first :meth:`add`, ms (None before).
        self.first_ms: int | None = None

    @property
    def length_ms(self) -> int:
        """The window's length, ms (``bucket_ms × buckets``)."""
        return self._bucket_ms * self._n

    def add(self, now_ms: int, value: float, times: int = 1) -> None:
        """Add ``value`` (and ``times`` increments) to the bucket of ``now_ms``."""
        b = now_ms // self._bucket_ms
        i = b % self._n
        if self._stamp[i] != b:
            self._stamp[i] = b
            self._value[i] = 0.0
            self._times[i] = 0
        self._value[i] += value
        self._times[i] += times
        if self.first_ms is None:
            self.first_ms = now_ms

    def snapshot(self, now_ms: int) -> StatsSnapshot:
        """Return the window's sum, increments, rate per second and average at ``now_ms``."""
        b = now_ms // self._bucket_ms
        total = 0.0
        times = 0
        for stamp, value, t in zip(self._stamp, self._value, self._times, strict=False):
            if 0 <= b - stamp < self._n:
                total += value
                times += t
        if times == 0 or self.first_ms is None:
            return StatsSnapshot(0.0, 0, 0.0, 0.0)
        covered = min(self.length_ms, max(self._bucket_ms, now_ms - self.first_ms))
        return StatsSnapshot(total, times, total * 1000.0 / covered, total / times)


class _Item:
    """One statistic of one ``(topic, group)``: a minute and an hour window (Java ``StatsItem``)."""

    __slots__ = ("hour", "minute")

    def __init__(self) -> None:
        self.minute = StatsWindow(MINUTE_BUCKET_MS)
        self.hour = StatsWindow(HOUR_BUCKET_MS)

    def add(self, now_ms: int, value: float, times: int = 1) -> None:
        self.minute.add(now_ms, value, times)
        self.hour.add(now_ms, value, times)


_Key = tuple[str, str]


def zero_consume_status() -> dict[str, float | int]:
    """Return a ``ConsumeStatus`` with every value 0 (Java's ``new ConsumeStatus()``)."""
    return {
        "consumeFailedMsgs": 0,
        "consumeFailedTPS": 0.0,
        "consumeOKTPS": 0.0,
        "consumeRT": 0.0,
        "pullRT": 0.0,
        "pullTPS": 0.0,
    }


class ConsumerStats:
    """Per ``(topic, group)`` consume statistics (Java ``ConsumerStatsManager``).

    All ``inc_*`` methods are O(1) and run on the event-loop thread; counts are messages, RT
    values are milliseconds (fractions allowed; Java truncates to whole ms).

    Args:
        clock: wall clock that places increments in time windows (a ``FakeClock`` in tests).
    """

    __slots__ = ("_clock", "_consume_failed", "_consume_ok", "_consume_rt", "_pull_rt", "_pull_tps")

    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self._clock = clock
        self._pull_rt: dict[_Key, _Item] = {}
        self._pull_tps: dict[_Key, _Item] = {}
        self._consume_rt: dict[_Key, _Item] = {}
        self._consume_ok: dict[_Key, _Item] = {}
        self._consume_failed: dict[_Key, _Item] = {}

    @classmethod
    def from_now_ms(cls, now_ms: Callable[[], int]) -> ConsumerStats:
        """Build one over a ``now_ms()`` function (the dispatchers' wall clock, ms)."""
        return cls(_FunctionClock(now_ms))

    @staticmethod
    def _item(table: dict[_Key, _Item], group: str, topic: str) -> _Item:
        key = (topic, group)
        item = table.get(key)
        if item is None:
            item = table[key] = _Item()
        return item

    def _add(self, table: dict[_Key, _Item], group: str, topic: str, value: float) -> None:
        self._item(table, group, topic).add(self._clock.now_ms(), value)

    def inc_pull_rt(self, group: str, topic: str, rt_ms: float) -> None:
        """Record the round trip of one FOUND pull, ms (``incPullRT``)."""
        self._add(self._pull_rt, group, topic, rt_ms)

    def inc_pull_tps(self, group: str, topic: str, msgs: int) -> None:
        """Record ``msgs`` messages pulled by one pull (``incPullTPS``)."""
        self._add(self._pull_tps, group, topic, msgs)

    def inc_consume_rt(self, group: str, topic: str, rt_ms: float, calls: int = 1) -> None:
        """Record the duration of one listener call, ms (``incConsumeRT``); or with ``calls``,
        the total duration of that many calls (their average is what ``consumeRT`` reports)."""
        self._item(self._consume_rt, group, topic).add(self._clock.now_ms(), rt_ms, calls)

    def inc_consumed(self, group: str, topic: str, rt_ms: float, calls: int, ok: int, failed: int) -> None:
        """Record ``calls`` listener calls of one queue at once, with one clock read: their total
        duration ``rt_ms`` and the ``ok`` / ``failed`` messages of their results. The same
        numbers as ``calls`` × (``inc_consume_rt`` + ``inc_consume_ok_tps`` +
        ``inc_consume_failed_tps``)."""
        now = self._clock.now_ms()
        self._item(self._consume_rt, group, topic).add(now, rt_ms, calls)
        self._item(self._consume_ok, group, topic).add(now, ok, calls)
        self._item(self._consume_failed, group, topic).add(now, failed, calls)

    def inc_consume_ok_tps(self, group: str, topic: str, msgs: int) -> None:
        """Record ``msgs`` acknowledged messages of one batch (``incConsumeOKTPS``)."""
        self._add(self._consume_ok, group, topic, msgs)

    def inc_consume_failed_tps(self, group: str, topic: str, msgs: int) -> None:
        """Record ``msgs`` failed messages of one batch (``incConsumeFailedTPS``)."""
        self._add(self._consume_failed, group, topic, msgs)

    def _minute(self, table: dict[_Key, _Item], group: str, topic: str, now_ms: int) -> StatsSnapshot | None:
        item = table.get((topic, group))
        return item.minute.snapshot(now_ms) if item is not None else None

    def consume_status(self, group: str, topic: str) -> dict[str, float | int]:
        """Return the ``ConsumeStatus`` of ``topic`` for ``group`` with Java's JSON keys.

        Mirrors ``ConsumerStatsManager.consumeStatus``: ``pullRT`` / ``consumeRT`` (ms) and the
        three TPS values (messages per second) over the last minute — ``consumeRT`` over the
        last hour when the minute has none — and ``consumeFailedMsgs``, the failed messages of
        the last hour (int). Unknown keys give zeros. Never raises.
        """
        now = self._clock.now_ms()
        out = zero_consume_status()
        ss = self._minute(self._pull_rt, group, topic, now)
        if ss is not None:
            out["pullRT"] = ss.avgpt
        ss = self._minute(self._pull_tps, group, topic, now)
        if ss is not None:
            out["pullTPS"] = ss.tps
        item = self._consume_rt.get((topic, group))
        if item is not None:
            ss = item.minute.snapshot(now)
            if ss.sum == 0:
                ss = item.hour.snapshot(now)
            out["consumeRT"] = ss.avgpt
        ss = self._minute(self._consume_ok, group, topic, now)
        if ss is not None:
            out["consumeOKTPS"] = ss.tps
        failed = self._consume_failed.get((topic, group))
        if failed is not None:
            out["consumeFailedTPS"] = failed.minute.snapshot(now).tps
            out["consumeFailedMsgs"] = int(failed.hour.snapshot(now).sum)
        return out


class _FunctionClock:
    """A :class:`~rocketpipe.clock.Clock` over a ``now_ms()`` function."""

    __slots__ = ("_fn",)

    def __init__(self, fn: Callable[[], int]) -> None:
        self._fn = fn

    def now_ms(self) -> int:
        return self._fn()
