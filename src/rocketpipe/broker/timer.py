"""Timer messages of RocketMQ 5.x (L3): delivery at an arbitrary time, to 1 s precision.

The put side mirrors ``HookUtils.checkIfTimerMessage`` / ``transformTimerMessage``: a message
with ``TIMER_DELAY_SEC``, ``TIMER_DELAY_MS`` or ``TIMER_DELIVER_MS`` (and no delay level) whose
delivery time is in the future is stored in ``rmq_sys_wheel_timer`` queue 0, with ``REAL_TOPIC``,
``REAL_QID`` and ``TIMER_OUT_MS`` = the delivery time rounded down to ``timerPrecisionMs`` (one
step earlier when it falls on a step, as Java does). More than ``timerMaxDelaySec`` ahead, or a
value that is not a number, is refused (WHEEL_TIMER_MSG_ILLEGAL → MESSAGE_ILLEGAL). A delivery
time not in the future leaves the message on its own topic. The delivered copy mirrors
``TimerMessageStore.convert``: the original properties plus ``TIMER_ENQUEUE_MS`` and
``TIMER_DEQUEUE_MS`` (``REAL_TOPIC``/``REAL_QID``/``TIMER_OUT_MS`` stay in the stored
properties, as the Java store writes them). A message is delivered once its ``TIMER_OUT_MS``
step has passed (``TIMER_OUT_MS + timerPrecisionMs``), as Java's wheel dequeues a slot only when
its write cursor is past it: never before the requested time, at most one step after it.

The waiting side is not Java's ``TimerWheel`` + ``TimerLog`` files but an equivalent built on
what the store already keeps: the timer topic's consume queue is the durable list of waiting
messages (its tags code is ``TIMER_OUT_MS``, also recomputed by a crash recovery), a heap of
``(delivery time, queue offset)`` is the wheel, and a checkpoint ``(first waiting offset,
scanned-up-to offset, watermark)`` — every scanned message due before the watermark has been
delivered — makes a restart resume exactly: the queue is re-read from the first waiting offset
and what is due before the watermark is skipped. As in Java, a crash between a delivery and
the next checkpoint can deliver a message twice, never lose it.
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from ..errors import InvalidArgumentError
from ..protocol import message as pm
from ..protocol.names import TIMER_TOPIC as TIMER_TOPIC
from ..protocol.recall import timer_delete_key
from ..store import MessageInner

__all__ = [
    "TIMER_TOPIC",
    "TimerDelivery",
    "TimerMessageIllegalError",
    "TimerNotEnabledError",
    "timer_delivery_ms",
]

log = logging.getLogger(__name__)

_TIMER_PROPERTIES: Final = (pm.PROPERTY_TIMER_DELIVER_MS, pm.PROPERTY_TIMER_DELAY_SEC, pm.PROPERTY_TIMER_DELAY_MS)
#: records read from the timer queue per scan step
SCAN_BATCH: Final = 256
#: scan steps per tick (a large backlog after a restart is read over several ticks)
SCAN_BATCHES_PER_TICK: Final = 16


class TimerMessageIllegalError(InvalidArgumentError):
    """WHEEL_TIMER_MSG_ILLEGAL: a timer value that is not a number, or too far ahead."""


class TimerNotEnabledError(InvalidArgumentError):
    """WHEEL_TIMER_NOT_ENABLE: a timer message while ``timer_wheel_enable`` is off."""


def illegal_remark(max_delay_sec: int) -> str:
    """SendMessageProcessor's remark for WHEEL_TIMER_MSG_ILLEGAL."""
    return (
        f"timer message illegal, the delay time should not be bigger than the max delay {max_delay_sec * 1000}ms; "
        "or if set del msg, the delay time should be bigger than the current time"
    )


def is_timer_message(props: dict[str, str], topic: str) -> bool:
    """``checkIfTimerMessage`` for a message without a delay level."""
    if topic == TIMER_TOPIC or pm.PROPERTY_TIMER_OUT_MS in props:
        return False
    return not props.keys().isdisjoint(_TIMER_PROPERTIES)


def drop_timer_properties(props: dict[str, str]) -> None:
    """A delay level wins: remove the timer properties (``checkIfTimerMessage``)."""
    for p in _TIMER_PROPERTIES:
        props.pop(p, None)


def timer_delivery_ms(props: dict[str, str], now_ms: int, *, precision_ms: int, max_delay_sec: int) -> int | None:
    """The ``TIMER_OUT_MS`` of a timer message, or None when its time is not in the future.

    Raises:
        TimerMessageIllegalError: a value is not a number, the time is more than
            ``max_delay_sec`` ahead, or a delete request (``TIMER_DEL_UNIQKEY``) is not in the future.
    """
    try:
        if pm.PROPERTY_TIMER_DELAY_SEC in props:
            deliver = now_ms + int(props[pm.PROPERTY_TIMER_DELAY_SEC]) * 1000
        elif pm.PROPERTY_TIMER_DELAY_MS in props:
            deliver = now_ms + int(props[pm.PROPERTY_TIMER_DELAY_MS])
        else:
            deliver = int(props[pm.PROPERTY_TIMER_DELIVER_MS])
    except ValueError:
        raise TimerMessageIllegalError(illegal_remark(max_delay_sec)) from None
    if deliver <= now_ms:
        if pm.PROPERTY_TIMER_DEL_UNIQKEY in props:
            raise TimerMessageIllegalError(illegal_remark(max_delay_sec))
        return None
    if deliver - now_ms > max_delay_sec * 1000:
        raise TimerMessageIllegalError(illegal_remark(max_delay_sec))
    return deliver - precision_ms if deliver % precision_ms == 0 else deliver // precision_ms * precision_ms


@dataclass(slots=True)
class _Recovery:
    """The checkpoint being resumed: below ``scanned``, messages due before ``watermark`` were delivered."""

    scanned: int
    watermark: int


class TimerDelivery:
    """The waiting timer messages of queue 0 of ``rmq_sys_wheel_timer`` and their delivery.

    Args:
        read: ``(offset, max_nums) -> (records, next offset)`` of the timer queue.
        deliver: puts one due record into its real topic; False when the put failed (it is
            retried on the next tick).
        now_ms: wall clock, ms.
        precision_ms: ``timerPrecisionMs``: a record is due once ``TIMER_OUT_MS + precision_ms``
            has passed (``TIMER_OUT_MS`` is the requested time rounded down to a step).
    """

    def __init__(
        self,
        read: Callable[[int, int], tuple[list[pm.MessageExt], int]],
        deliver: Callable[[pm.MessageExt], bool],
        now_ms: Callable[[], int],
        precision_ms: int = 0,
    ) -> None:
        self._read = read
        self._deliver = deliver
        self._now = now_ms
        self._precision = precision_ms
        self._heap: list[tuple[int, int]] = []
        self.scan_offset = 0
        self.watermark = 0
        self._recovery: _Recovery | None = None
        #: messages delivered since start
        self.delivered = 0
        #: messages dropped by a recall since start
        self.recalled = 0

    @property
    def waiting(self) -> int:
        """Timer messages scanned and not yet delivered."""
        return len(self._heap)

    def load_json(self, obj: Any) -> None:
        """Resume from :meth:`to_json`'s dict (None or {} = a new store: scan from 0)."""
        if not obj:
            return
        self.scan_offset = int(obj.get("firstWaitingOffset", 0))
        self.watermark = int(obj.get("watermarkMs", 0))
        self._recovery = _Recovery(int(obj.get("scannedOffset", 0)), self.watermark)

    def to_json(self) -> dict[str, int]:
        """The checkpoint (``config/timerCheckpoint.json``)."""
        first = min((o for _, o in self._heap), default=self.scan_offset)
        return {"firstWaitingOffset": first, "scannedOffset": self.scan_offset, "watermarkMs": self.watermark}

    def _scan(self) -> None:
        """Add the timer queue's new records to the heap (skipping those a resumed checkpoint
        delivered), at most :data:`SCAN_BATCHES_PER_TICK` reads per call."""
        for _ in range(SCAN_BATCHES_PER_TICK):
            records, nxt = self._read(self.scan_offset, SCAN_BATCH)
            rec = self._recovery
            for r in records:
                due = _due_ms(r)
                if rec is not None and r.queue_offset < rec.scanned and due < rec.watermark:
                    continue
                heapq.heappush(self._heap, (due, r.queue_offset))
            if nxt <= self.scan_offset:
                return
            self.scan_offset = nxt
            if rec is not None and self.scan_offset >= rec.scanned:
                self._recovery = None
            if len(records) < SCAN_BATCH:
                return

    def tick(self) -> int:
        """Scan new timer messages and deliver those due; return how many were delivered.

        As ``TimerMessageStore``'s dequeue of a slot, the due *delete* messages (recalls, with
        ``TIMER_DEL_UNIQKEY``) are read first and never delivered; a due message whose
        ``"<real topic>+<UNIQ_KEY>"`` one of them names is dropped instead of delivered. A
        failed put stops the tick: that message, the rest and the delete messages wait for the
        next one. Java matches delete keys within one 1 s slot; here within one tick's due
        messages, which may span several slots after a stall. A delete key names one message
        (topic + UNIQ_KEY) and its delete message is stored for that message's slot, so the
        wider scope drops nothing Java would deliver.
        """
        self._scan()
        now = self._now()
        cutoff = now - self._precision  # a step is delivered once it has passed
        heap = self._heap
        due: list[tuple[tuple[int, int], pm.MessageExt | None]] = []
        while heap and heap[0][0] <= cutoff:
            entry = heapq.heappop(heap)
            records, _ = self._read(entry[1], 1)
            due.append((entry, records[0] if records and records[0].queue_offset == entry[1] else None))
        deletes = {
            rec.properties[pm.PROPERTY_TIMER_DEL_UNIQKEY]
            for _, rec in due
            if rec is not None and pm.PROPERTY_TIMER_DEL_UNIQKEY in rec.properties
        }
        n = 0
        for i, (entry, rec) in enumerate(due):
            if rec is None:
                log.error("timer message at queue offset %d is gone (retention); not delivered", entry[1])
            elif pm.PROPERTY_TIMER_DEL_UNIQKEY in rec.properties:
                continue  # a recall: read above, never delivered
            elif deletes and _delete_key(rec) in deletes:
                self.recalled += 1
                continue
            elif not self._deliver(rec):  # put failed: retried next tick, with the recalls
                for later, _ in due[i:]:
                    heapq.heappush(heap, later)
                for marker, marker_rec in due[:i]:
                    if marker_rec is not None and pm.PROPERTY_TIMER_DEL_UNIQKEY in marker_rec.properties:
                        heapq.heappush(heap, marker)
                break
            n += 1
        self.watermark = min(heap[0][0], cutoff + 1) if heap else cutoff + 1
        self.delivered += n
        return n


def _delete_key(r: pm.MessageExt) -> str:
    """The ``TIMER_DEL_UNIQKEY`` a recall of ``r`` carries (``buildDeleteKey(realTopic, uniqKey)``)."""
    return timer_delete_key(r.properties.get(pm.PROPERTY_REAL_TOPIC) or r.topic, r.msg_id)


def _due_ms(r: pm.MessageExt) -> int:
    try:
        return int(r.properties.get(pm.PROPERTY_TIMER_OUT_MS, ""))
    except ValueError:
        return r.store_timestamp


def delivered_message(rec: pm.MessageExt, now_ms: int) -> MessageInner:
    """The real-topic copy of a due timer record (``TimerMessageStore.convert``)."""
    props = dict(rec.properties)
    props[pm.PROPERTY_TIMER_ENQUEUE_MS] = str(rec.store_timestamp)
    props[pm.PROPERTY_TIMER_DEQUEUE_MS] = str(now_ms)
    return MessageInner(
        topic=props.get(pm.PROPERTY_REAL_TOPIC) or rec.topic,
        queue_id=int(props.get(pm.PROPERTY_REAL_QUEUE_ID) or 0),
        body=rec.body,
        flag=rec.flag,
        properties=props,
        sys_flag=rec.sys_flag,
        born_timestamp=rec.born_timestamp,
        born_host=rec.born_host,
        store_host=rec.store_host,
        reconsume_times=rec.reconsume_times,
    )
