"""Delay levels (L3): pure due-time maths plus the delivery step of ``SCHEDULE_TOPIC_XXXX``.

Mirrors ``ScheduleMessageService`` (4.9: store module; 5.x: broker module) and the put-time
redirection of ``HookUtils.handleScheduleMessage``. A delayed message is stored in
``SCHEDULE_TOPIC_XXXX`` queue ``level - 1`` with ``REAL_TOPIC``/``REAL_QID`` and, as its
consume-queue tags code, its delivery time (ms). :class:`ScheduleDelivery` walks each level
queue from a saved offset and re-puts due messages into their real topic; its progress table
(level -> next offset) is what ``config/delayOffset.json`` holds.

The module does synchronous store calls (the store is synchronous); the broker's
``_schedule_loop`` drives :meth:`ScheduleDelivery.deliver_due` every 100 ms with the injected
wall clock, so tests advance a fake clock instead of waiting.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from ..errors import InvalidArgumentError
from ..protocol import message as pm
from ..protocol.names import SCHEDULE_TOPIC as SCHEDULE_TOPIC

log = logging.getLogger(__name__)

#: TopicValidator.RMQ_SYS_TRANS_HALF_TOPIC (scheduled copies of it are discarded)
TRANS_HALF_TOPIC: Final = "RMQ_SYS_TRANS_HALF_TOPIC"

_UNITS: Final = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_TOKEN = re.compile(r"^(\d+)([smhd])$")


def parse_delay_levels(spec: str) -> tuple[int, ...]:
    """Parse ``messageDelayLevel`` into per-level delays in ms (index 0 = level 1).

    Raises:
        InvalidArgumentError: a token is not ``<digits><s|m|h|d>`` or the string is empty.
    """
    out: list[int] = []
    for token in spec.split():
        m = _TOKEN.match(token)
        if not m:
            raise InvalidArgumentError(f"bad delay level token {token!r}; use e.g. '1s 5s 1m 2h'")
        out.append(int(m.group(1)) * _UNITS[m.group(2)])
    if not out:
        raise InvalidArgumentError("message_delay_level is empty")
    return tuple(out)


def clamp_level(level: int, max_level: int) -> int:
    """Clamp a delay level to ``max_level`` (levels above the table use the last one)."""
    return min(level, max_level)


def delivery_time(store_time_ms: int, level: int, levels: tuple[int, ...]) -> int:
    """Return the delivery time (ms) of a message stored at ``store_time_ms`` with ``level``."""
    return store_time_ms + levels[clamp_level(level, len(levels)) - 1]


def effective_deliver_at(deliver_at_ms: int, now_ms: int, level_delay_ms: int) -> int:
    """Guard against clock jumps: a due time beyond ``now + level delay`` counts as now."""
    return now_ms if deliver_at_ms > now_ms + level_delay_ms else deliver_at_ms


def redirect_properties(properties: dict[str, str], topic: str, queue_id: int) -> dict[str, str]:
    """Return the properties of the schedule copy: adds ``REAL_TOPIC`` and ``REAL_QID``."""
    props = dict(properties)
    props[pm.PROPERTY_REAL_TOPIC] = topic
    props[pm.PROPERTY_REAL_QUEUE_ID] = str(queue_id)
    return props


def delivered_properties(properties: dict[str, str]) -> dict[str, str]:
    """Properties stored with a delivered copy: those of the schedule record, unchanged.

    Java's ``messageTimeup`` (4.9.x store) / ``messageTimeUp`` (5.x broker) sets the copy's
    ``propertiesString`` from the schedule record's properties *before* ``setWaitStoreMsgOK(false)``
    and ``clearProperty(DELAY)`` (5.x: also ``TIMER_DELIVER_MS``/``TIMER_DELAY_SEC``); those only
    touch the in-memory map, which steers the put (no second schedule redirect) but is not what
    the commit log stores. So the real-topic (or ``%RETRY%``) copy keeps ``DELAY=<level>``, the
    original ``WAIT`` and ``REAL_TOPIC``/``REAL_QID``. The delivery put
    (``Broker._deliver_scheduled``) never goes through ``Broker.apply_delay``, so the ``DELAY``
    kept here is never taken as a new delay.
    """
    return dict(properties)


@dataclass(frozen=True, slots=True)
class DueMessage:
    """A scheduled record that is due, with where it must go.

    Attributes:
        record: the decoded schedule record (body undecompressed).
        real_topic, real_queue_id: destination.
        properties: properties for the delivered copy.
    """

    record: pm.MessageExt
    real_topic: str
    real_queue_id: int
    properties: dict[str, str]


class ScheduleDelivery:
    """Per-level progress through ``SCHEDULE_TOPIC_XXXX`` and the delivery step.

    Args:
        levels: delays in ms from :func:`parse_delay_levels`.
        read: ``read(queue_id, offset, max_nums) -> (records, next_offset, min_offset, max_offset)``
            reading the schedule topic (records undecompressed).
        put: ``put(due) -> bool`` storing the real copy; False = retry later.
        offsets: initial progress (level -> next offset), e.g. from delayOffset.json.
        max_per_level: records one :meth:`deliver_due` call handles per level at most.
        budget_s: time one :meth:`deliver_due` call spends on one level at most (seconds,
            measured with ``time.perf_counter``; checked once per read batch).

    Attributes:
        backlog: True when the last :meth:`deliver_due` stopped a level at a cap with due
            records possibly left; the caller yields to the event loop and calls again.
    """

    BATCH: Final = 32
    #: default per-level cap of one tick (records)
    MAX_PER_LEVEL: Final = 1000
    #: default per-level time budget of one tick (seconds)
    BUDGET_S: Final = 0.010

    def __init__(
        self,
        levels: tuple[int, ...],
        read: Callable[[int, int, int], tuple[list[pm.MessageExt], int, int, int]],
        put: Callable[[DueMessage], bool],
        offsets: dict[int, int] | None = None,
        *,
        max_per_level: int = MAX_PER_LEVEL,
        budget_s: float = BUDGET_S,
    ) -> None:
        self.levels = levels
        self._read = read
        self._put = put
        self.offsets: dict[int, int] = dict(offsets or {})
        self.max_per_level = max_per_level
        self.budget_s = budget_s
        self.backlog = False

    def deliver_due(self, now_ms: int) -> int:
        """Deliver due messages of every level; return how many were delivered.

        Stops a level at its first not-yet-due record (records of one level are in due
        order). A failed put leaves the offset at that record so it is retried next time.
        Each level handles at most ``max_per_level`` records or ``budget_s`` seconds per call
        (so one call never monopolises the event loop); :attr:`backlog` then says to call again.
        """
        delivered = 0
        self.backlog = False
        for level in range(1, len(self.levels) + 1):
            delivered += self._deliver_level(level, now_ms)
        return delivered

    def _deliver_level(self, level: int, now_ms: int) -> int:
        queue_id = level - 1
        delay = self.levels[level - 1]
        offset = self.offsets.get(level, 0)
        delivered = 0
        handled = 0
        give_up_at = time.perf_counter() + self.budget_s
        while True:
            if handled >= self.max_per_level or time.perf_counter() >= give_up_at:
                self.backlog = True
                return delivered
            records, next_off, min_off, max_off = self._read(
                queue_id, offset, min(self.BATCH, self.max_per_level - handled)
            )
            if not records:
                if next_off > offset:  # blank/unreadable entries: skip them, never get stuck
                    offset = next_off
                    self.offsets[level] = offset
                    handled += 1
                    continue
                if offset < min_off or offset > max_off:
                    self.offsets[level] = max(min_off, min(offset, max_off))
                return delivered
            handled += len(records)
            for rec in records:
                deliver_at = effective_deliver_at(rec.store_timestamp + delay, now_ms, delay)
                if deliver_at > now_ms:
                    self.offsets[level] = rec.queue_offset
                    return delivered
                due = _due_of(rec)
                if due is not None and not self._put(due):
                    self.offsets[level] = rec.queue_offset
                    return delivered
                offset = rec.queue_offset + 1
                self.offsets[level] = offset
                delivered += due is not None

    def to_json(self) -> dict[str, Any]:
        """Return the ``delayOffset.json`` form ``{"offsetTable": {level: offset}}``."""
        return {"offsetTable": {str(k): v for k, v in sorted(self.offsets.items())}}

    @staticmethod
    def offsets_from_json(obj: Any) -> dict[int, int]:
        """Parse :meth:`to_json` output; tolerate garbage (returns what parses)."""
        out: dict[int, int] = {}
        if isinstance(obj, dict) and isinstance(obj.get("offsetTable"), dict):
            for k, v in obj["offsetTable"].items():
                try:
                    out[int(k)] = int(v)
                except (TypeError, ValueError):
                    continue
        return out


def _due_of(rec: pm.MessageExt) -> DueMessage | None:
    real_topic = rec.properties.get(pm.PROPERTY_REAL_TOPIC)
    try:
        real_qid = int(rec.properties.get(pm.PROPERTY_REAL_QUEUE_ID, ""))
    except ValueError:
        real_qid = -1
    if not real_topic or real_qid < 0 or real_topic == TRANS_HALF_TOPIC:
        log.warning("schedule: discarding record without a usable real topic offset=%d", rec.queue_offset)
        return None
    return DueMessage(rec, real_topic, real_qid, delivered_properties(rec.properties))
