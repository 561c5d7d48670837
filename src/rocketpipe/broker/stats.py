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

The same rows back VIEW_BROKER_STATS_DATA (315): :meth:`BrokerStats.stats_item` gives the
``BrokerStatsManager`` items of :data:`STATS_NAMES` (``TOPIC_PUT_NUMS`` by topic,
``GROUP_GET_NUMS`` by ``topic@group``, ``BROKER_PUT_NUMS`` by cluster name, …) over Java's
``StatsItem`` windows: :meth:`BrokerStats.sample` snapshots every item's (calls, value) every
10 s (7 kept: the minute), 10 min (7: the hour) and 1 h (25: the day), starting each item's
window with a zero snapshot one period back, as ``StatsItem.samplingIn*`` do. A "call" is one
put request or one pull batch (Java's ``times``).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from typing import Final, NamedTuple

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

#: ``StatsItem`` windows: (sampling period ms, snapshots kept) of the minute, hour and day views
STATS_WINDOWS: Final = ((10_000, 7), (600_000, 7), (3_600_000, 25))
#: ``BrokerStatsManager`` item sets keyed by the cluster name (Java adds to them without ``times``)
BROKER_STATS_NAMES: Final = frozenset(
    {
        "BROKER_PUT_NUMS",
        "BROKER_GET_NUMS",
        "BROKER_PUT_NUMS_WITHOUT_SYSTEM_TOPIC",
        "BROKER_GET_NUMS_WITHOUT_SYSTEM_TOPIC",
    }
)
#: the item sets VIEW_BROKER_STATS_DATA answers (``BrokerStatsManager`` names)
STATS_NAMES: Final = (
    frozenset({"TOPIC_PUT_NUMS", "TOPIC_PUT_SIZE", "GROUP_GET_NUMS", "GROUP_GET_SIZE"}) | BROKER_STATS_NAMES
)


class StatsSnapshot(NamedTuple):
    """One window of a statistics item (Java ``StatsSnapshot``).

    Attributes:
        sum: value added in the window (messages or bytes).
        tps: ``sum`` per second over the window.
        avgpt: ``sum`` per call in the window (0.0 without calls).
    """

    sum: int
    tps: float
    avgpt: float


#: a sample of one item: (ms, calls, value)
_Sample = tuple[int, int, int]


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
        topic_get_batches: ``(topic, consumer group) -> `` pull/pop batches that handed them
            (Java's ``times`` of ``GROUP_GET_NUMS``).
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
        self.topic_get_batches: dict[tuple[str, str], int] = {}
        self._puts: deque[tuple[int, int]] = deque(maxlen=MAX_SAMPLES + 1)
        self._gets: deque[tuple[int, int]] = deque(maxlen=MAX_SAMPLES + 1)
        #: (stats name, key) -> one deque of samples per :data:`STATS_WINDOWS` window
        self._item_samples: dict[tuple[str, str], tuple[deque[_Sample], ...]] = {}
        self._next_item_sample = [0] * len(STATS_WINDOWS)  # ms at which each window samples next

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
        key = (topic, group)
        row = self.topic_gets.get(key)
        if row is None:
            row = self.topic_gets[key] = [0, 0 if size >= 0 else -1]
            self.topic_get_batches[key] = 0
        row[0] += msgs
        self.topic_get_batches[key] += 1
        if size >= 0:
            row[1] = max(row[1], 0) + size

    def sample(self, now_ms: int) -> None:
        """Take the once-a-second snapshot (``StoreStatsService.sampling``)."""
        self._puts.append((now_ms, self.put_times_total))
        self._gets.append((now_ms, self.get_transferred))
        due = [w for w, at in enumerate(self._next_item_sample) if now_ms >= at]
        if due:
            self._sample_items(now_ms, due)

    def _sample_items(self, now_ms: int, windows: list[int]) -> None:
        """``StatsItem.samplingInSeconds`` / ``InMinutes`` / ``InHour`` for every item."""
        for w in windows:
            self._next_item_sample[w] = now_ms + STATS_WINDOWS[w][0]
        for key, (times, value) in self._item_counters().items():
            lists = self._item_samples.get(key)
            if lists is None:
                lists = self._item_samples[key] = tuple(deque(maxlen=keep) for _, keep in STATS_WINDOWS)
            for w in windows:
                samples = lists[w]
                if not samples:  # StatsItem: a window starts with a zero snapshot one period back
                    samples.append((now_ms - STATS_WINDOWS[w][0], 0, 0))
                samples.append((now_ms, times, value))

    def _item_counters(self) -> dict[tuple[str, str], tuple[int, int]]:
        """``(stats name, key) -> (calls, value)`` of every item that exists (Java creates an
        item at its first addition). Broker-wide items are keyed "" here."""
        out: dict[tuple[str, str], tuple[int, int]] = {}
        broker_puts = 0
        for (topic, counted), row in self.topic_puts.items():
            if not counted:  # scheduled deliveries: Java counts puts in the send processor
                continue
            calls = sum(row[PUT_ROW_BUCKETS:])
            out[("TOPIC_PUT_NUMS", topic)] = (calls, row[0])
            out[("TOPIC_PUT_SIZE", topic)] = (calls, row[1])
            broker_puts += row[0]
        batches = self.topic_get_batches
        for (topic, group), row in self.topic_gets.items():
            key = f"{topic}@{group}"
            calls = batches.get((topic, group), 0)
            out[("GROUP_GET_NUMS", key)] = (calls, row[0])
            if row[1] >= 0:
                out[("GROUP_GET_SIZE", key)] = (calls, row[1])
        for name, value, exists in (
            ("BROKER_PUT_NUMS", broker_puts, broker_puts > 0),
            ("BROKER_GET_NUMS", self.get_transferred, bool(self.topic_gets)),
            ("BROKER_PUT_NUMS_WITHOUT_SYSTEM_TOPIC", self.put_nums, self.put_nums > 0),
            ("BROKER_GET_NUMS_WITHOUT_SYSTEM_TOPIC", self.get_nums, self.get_nums > 0),
        ):
            if exists:
                out[(name, "")] = (0, value)
        return out

    def stats_item(
        self, stats_name: str, stats_key: str, cluster_name: str
    ) -> tuple[StatsSnapshot, StatsSnapshot, StatsSnapshot] | None:
        """The minute, hour and day windows of one item (``BrokerStatsManager.getStatsItem``
        then ``StatsItem.getStatsDataIn*``), or None when no such item exists: an unknown
        name, or nothing counted under the key yet. ``cluster_name`` is the key of the
        ``BROKER_*`` items. A window not sampled yet reads all zeros, as in Java.
        """
        if stats_name in BROKER_STATS_NAMES:
            if stats_key != cluster_name:
                return None
            stats_key = ""
        elif stats_name not in STATS_NAMES:
            return None
        key = (stats_name, stats_key)
        if key not in self._item_counters():
            return None
        lists = self._item_samples.get(key)
        if lists is None:
            zero = StatsSnapshot(0, 0.0, 0.0)
            return zero, zero, zero
        minute, hour, day = (_window(samples) for samples in lists)
        return minute, hour, day

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


def _window(samples: deque[_Sample]) -> StatsSnapshot:
    """``StatsItem.computeStatsData``: first to last snapshot of a window."""
    if not samples:
        return StatsSnapshot(0, 0.0, 0.0)
    (t0, c0, v0), (t1, c1, v1) = samples[0], samples[-1]
    total = v1 - v0
    tps = total * 1000.0 / (t1 - t0) if t1 > t0 else 0.0
    calls = c1 - c0
    return StatsSnapshot(total, tps, total / calls if calls > 0 else 0.0)


def format_runtime(elapsed_ms: int) -> str:
    """``StoreStatsService.getFormatRuntime``: ``[ d days, h hours, m minutes, s seconds ]``."""
    s = max(0, elapsed_ms) // 1000
    return f"[ {s // 86400} days, {s % 86400 // 3600} hours, {s % 3600 // 60} minutes, {s % 60} seconds ]"
