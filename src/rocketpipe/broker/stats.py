"""Broker run-time counters (L3) behind GET_BROKER_RUNTIME_INFO (28).

Mirrors the cheap part of ``StoreStatsService`` (put/get totals sampled once a second into
``putTps``/``getTransferredTps`` style ``"<10s> <60s> <600s>"`` strings) and ``BrokerStats``
(``msgPutTotal*``/``msgGetTotal*``). Plain integers bumped by the event loop; no locks.

Differences, kept on purpose: the ``...WithoutSystemTopic`` counters skip the topics of
:func:`is_system_topic` (``TopicValidator.isSystemTopic`` + retry/DLQ) and are counted at the
broker's put (scheduled deliveries excepted: Java counts in the send processor), and the
``*Morning`` snapshots stay 0 (Java takes them daily from the next midnight on, so a fresh
Java broker reports 0 as well).

It also keeps the raw material of the Prometheus metrics (:mod:`.metrics`): per-topic put rows
and per (topic, group) get rows, one dict lookup and a few integer additions per put or pull
batch (never per message). The collector reads them at scrape time.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from typing import Final

from ..protocol.names import is_system_topic as is_system_topic  # re-exported (defined there)
from ..protocol.names import is_validator_system_topic as is_validator_system_topic

#: StoreStatsService.MAX_RECORDS_OF_SAMPLING (one sample a second, 10 minutes)
MAX_SAMPLES: Final = 600
#: TPS windows (samples back), StoreStatsService.getPutTps(): 10 s, 1 min, 10 min
WINDOWS: Final = (10, 60, 600)


#: ``rocketmq_message_size`` bucket upper bounds, bytes (``BrokerMetricsManager.registerMetricsView``:
#: 1 KiB, 4 KiB, 512 KiB, 1 MiB, 2 MiB, 4 MiB; one more bucket, +Inf, above them)
MESSAGE_SIZE_BUCKETS: Final = (1024, 4 * 1024, 512 * 1024, 1024 * 1024, 2 * 1024 * 1024, 4 * 1024 * 1024)
#: index of the first bucket count in a put row (:attr:`BrokerStats.topic_puts`)
PUT_ROW_BUCKETS: Final = 3


class BrokerStats:
    """Counters and per-second samples.

    Args:
        boot_ms: broker start (wall clock, ms): ``bootTimestamp``.

    Attributes:
        put_times_total: messages stored (``putMessageTimesTotal``, system topics included).
        put_size_total: bytes stored (``putMessageSizeTotal``).
        put_nums: messages stored into non-system topics (``msgPutTotalTodayNow``).
        get_nums: messages handed to pull/pop consumers from non-system topics (``msgGetTotalTodayNow``).
        get_transferred: messages handed to pull/pop consumers (``getMessageTransferredMsgCount``).
        topic_puts: ``(topic, counted) -> row`` of stored messages, every topic: ``row[0]``
            messages, ``row[1]`` bytes (commit-log record sizes), ``row[2]`` the sum of the
            per-put average record sizes, ``row[3:]`` how many puts had their average record
            size in each :data:`MESSAGE_SIZE_BUCKETS` bucket (the last one: above 4 MiB). One
            put adds one observation, as Java's ``messageSize.record(wroteBytes / msgNum)``.
        topic_gets: ``(topic, consumer group) -> [messages, bytes]`` handed to consumers; the
            group is "" and the bytes -1 when the caller did not give them.
    """

    def __init__(self, boot_ms: int) -> None:
        self.boot_ms = boot_ms
        self.put_times_total = 0
        self.put_size_total = 0
        self.put_nums = 0
        self.get_nums = 0
        self.get_transferred = 0
        self.topic_puts: dict[tuple[str, bool], list[int]] = {}
        self.topic_gets: dict[tuple[str, str], list[int]] = {}
        self._puts: deque[tuple[int, int]] = deque(maxlen=MAX_SAMPLES + 1)
        self._gets: deque[tuple[int, int]] = deque(maxlen=MAX_SAMPLES + 1)

    def on_put(self, topic: str, msgs: int, size: int, *, counted: bool = True) -> None:
        """Count ``msgs`` messages (``size`` bytes) stored into ``topic``.

        ``counted=False`` (a scheduled delivery, which Java puts without the send processor)
        leaves :attr:`put_nums` alone.
        """
        self.put_times_total += msgs
        self.put_size_total += size
        if counted and not is_system_topic(topic):
            self.put_nums += msgs
        key = (topic, counted)
        row = self.topic_puts.get(key)
        if row is None:
            row = self.topic_puts[key] = [0] * (PUT_ROW_BUCKETS + len(MESSAGE_SIZE_BUCKETS) + 1)
        row[0] += msgs
        row[1] += size
        if msgs > 0:
            avg = size // msgs
            row[2] += avg
            # most messages fit the first bucket: no bisect for them
            row[PUT_ROW_BUCKETS if avg <= 1024 else PUT_ROW_BUCKETS + bisect_left(MESSAGE_SIZE_BUCKETS, avg)] += 1

    def on_get(self, topic: str, msgs: int, *, group: str = "", size: int = -1) -> None:
        """Count ``msgs`` messages (``size`` bytes, -1 = not given) handed to ``group`` from ``topic``."""
        self.get_transferred += msgs
        if not is_system_topic(topic):
            self.get_nums += msgs
        row = self.topic_gets.get((topic, group))
        if row is None:
            row = self.topic_gets[(topic, group)] = [0, 0 if size >= 0 else -1]
        row[0] += msgs
        if size >= 0:
            row[1] = max(row[1], 0) + size

    def sample(self, now_ms: int) -> None:
        """Take the once-a-second snapshot (``StoreStatsService.sampling``)."""
        self._puts.append((now_ms, self.put_times_total))
        self._gets.append((now_ms, self.get_transferred))

    @staticmethod
    def _tps(samples: deque[tuple[int, int]]) -> str:
        # StoreStatsService.getPutTps(): "<10> <60> <600>", a window without enough samples is "".
        parts = []
        for window in WINDOWS:
            if len(samples) > window:
                (t0, v0), (t1, v1) = samples[-(window + 1)], samples[-1]
                parts.append(repr(float((v1 - v0) / (t1 - t0) * 1000)) if t1 > t0 else "0.0")
            else:
                parts.append("")
        return " ".join(parts)

    def put_tps(self) -> str:
        """``putTps``."""
        return self._tps(self._puts)

    def get_transferred_tps(self) -> str:
        """``getTransferredTps`` (4.9: ``getTransferedTps``)."""
        return self._tps(self._gets)


def format_runtime(elapsed_ms: int) -> str:
    """``StoreStatsService.getFormatRuntime``: ``[ d days, h hours, m minutes, s seconds ]``."""
    s = max(0, elapsed_ms) // 1000
    return f"[ {s // 86400} days, {s % 86400 // 3600} hours, {s % 3600 // 60} minutes, {s % 60} seconds ]"
