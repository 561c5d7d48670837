"""ProcessQueue: the client-side cache of one message queue (sync; no awaits; L3).

Mirrors ``org.apache.rocketmq.client.impl.consumer.ProcessQueue`` for concurrent consumption.

Rules (the whole state is the sorted offset map plus three flags)::

    put_messages(msgs)        messages pulled, not finished; duplicates ignored;
                              queue_offset_max = highest offset ever put
    remove_messages(msgs)     messages finished; returns the offset to commit:
                              smallest offset still cached, else queue_offset_max + 1;
                              -1 when the cache was already empty (nothing to commit)
    dropped                   set once (rebalance revoked the queue, OFFSET_ILLEGAL, shutdown);
                              results of in-flight batches of a dropped queue are discarded
    last_pull_time            loop time of the last pull; a push consumer drops queues
                              idle for more than PULL_MAX_IDLE_TIME

Flow control (:func:`flow_control_delay`) is a pure decision on the counters.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from ...protocol.message import MessageExt

#: rocketmq.client.pull.pullMaxIdleTime (120 000 ms), seconds.
PULL_MAX_IDLE_TIME: Final = 120.0
#: DefaultMQPushConsumerImpl.PULL_TIME_DELAY_MILLS_WHEN_CACHE_FLOW_CONTROL (50 ms), seconds.
PULL_DELAY_WHEN_FLOW_CONTROL: Final = 0.05


class ProcessQueue:
    """Pulled-but-unfinished messages of one queue, ordered by queue offset.

    Attributes:
        msg_count: number of cached messages.
        msg_size: sum of cached body lengths, bytes.
        queue_offset_max: highest queue offset ever put (-1 if none).
        dropped: True once the queue is no longer consumed by this client.
        last_pull_time: loop time (seconds) of the last pull.
        last_consume_time: loop time (seconds) of the last finished batch.
    """

    __slots__ = (
        "_msgs",
        "_offsets",
        "dropped",
        "last_consume_time",
        "last_pull_time",
        "msg_count",
        "msg_size",
        "queue_offset_max",
    )

    def __init__(self, now: float = 0.0) -> None:
        self._offsets: list[int] = []
        self._msgs: dict[int, MessageExt] = {}
        self.msg_count = 0
        self.msg_size = 0
        self.queue_offset_max = -1
        self.dropped = False
        self.last_pull_time = now
        self.last_consume_time = now

    def put_messages(self, msgs: Iterable[MessageExt]) -> int:
        """Cache pulled messages; duplicates (same queue offset) are ignored.

        Mirrors ``ProcessQueue.putMessage``. Offsets above every cached one (a pull's, in
        order) are appended; others are inserted in place.

        Returns:
            The number of messages actually added.
        """
        cached = self._msgs
        offsets = self._offsets
        last = offsets[-1] if offsets else None
        added = size = 0
        for m in msgs:
            off = m.queue_offset
            if off in cached:
                continue
            cached[off] = m
            if last is None or off > last:
                offsets.append(off)
                last = off
            else:
                bisect.insort(offsets, off)
            added += 1
            size += len(m.body)
        if added:
            self.msg_count += added
            self.msg_size += size
            if offsets[-1] > self.queue_offset_max:
                self.queue_offset_max = offsets[-1]
        return added

    def remove_messages(self, msgs: Iterable[MessageExt]) -> int:
        """Forget finished messages and return the offset to commit.

        Mirrors ``ProcessQueue.removeMessage``. When the finished messages are the oldest cached
        ones, in order (the usual case), they leave the offset list in one slice.

        Returns:
            The smallest offset still cached, or ``queue_offset_max + 1`` when the cache is now
            empty; -1 if the cache was already empty (no offset update).
        """
        cached = self._msgs
        if not cached:
            return -1
        result = self.queue_offset_max + 1
        removed: list[int] = []
        size = 0
        for m in msgs:
            off = m.queue_offset
            prev = cached.pop(off, None)
            if prev is not None:
                removed.append(off)
                size += len(prev.body)
        if removed:
            offsets = self._offsets
            k = len(removed)
            if offsets[:k] == removed:
                del offsets[:k]
            else:
                for off in removed:
                    del offsets[bisect.bisect_left(offsets, off)]
            self.msg_count -= k
            self.msg_size -= size
        if self._offsets:
            result = self._offsets[0]
        return result

    def contains(self, msg: MessageExt) -> bool:
        """True if a message with this queue offset is still cached."""
        return msg.queue_offset in self._msgs

    def max_span(self) -> int:
        """Return last offset − first offset of the cache (0 if empty). ``getMaxSpan``."""
        return self._offsets[-1] - self._offsets[0] if self._offsets else 0

    def first_offset(self) -> int | None:
        """Return the smallest cached offset, or None."""
        return self._offsets[0] if self._offsets else None

    def first_message(self) -> MessageExt | None:
        """Return the cached message with the smallest offset, or None."""
        return self._msgs[self._offsets[0]] if self._offsets else None

    def is_empty(self) -> bool:
        """True when no message is cached."""
        return not self._offsets

    def is_pull_expired(self, now: float) -> bool:
        """True when the last pull is older than :data:`PULL_MAX_IDLE_TIME` (``isPullExpired``)."""
        return now - self.last_pull_time > PULL_MAX_IDLE_TIME

    def clear(self) -> None:
        """Drop every cached message (counters back to zero)."""
        self._offsets.clear()
        self._msgs.clear()
        self.msg_count = 0
        self.msg_size = 0


@dataclass(frozen=True, slots=True)
class FlowControlLimits:
    """Per-queue pull limits of a push consumer.

    Attributes:
        pull_threshold_for_queue: cached messages. Mirrors
            ``DefaultMQPushConsumer.pullThresholdForQueue`` (1000).
        pull_threshold_size_for_queue: cached body size in MiB. Mirrors
            ``DefaultMQPushConsumer.pullThresholdSizeForQueue`` (100).
        consume_concurrently_max_span: max offset span of the cache. Mirrors
            ``DefaultMQPushConsumer.consumeConcurrentlyMaxSpan`` (2000).
    """

    pull_threshold_for_queue: int = 1000
    pull_threshold_size_for_queue: int = 100
    consume_concurrently_max_span: int = 2000


def flow_control_delay(pq: ProcessQueue, limits: FlowControlLimits) -> float | None:
    """Decide whether a pull must wait because the cache is full.

    Mirrors the checks at the top of ``DefaultMQPushConsumerImpl.pullMessage``: count above
    ``pull_threshold_for_queue``, size (MiB) above ``pull_threshold_size_for_queue``, or span
    above ``consume_concurrently_max_span``.

    Returns:
        :data:`PULL_DELAY_WHEN_FLOW_CONTROL` seconds when the pull must wait, else None.
    """
    if pq.msg_count > limits.pull_threshold_for_queue:
        return PULL_DELAY_WHEN_FLOW_CONTROL
    if pq.msg_size / (1024 * 1024) > limits.pull_threshold_size_for_queue:
        return PULL_DELAY_WHEN_FLOW_CONTROL
    if pq.max_span() > limits.consume_concurrently_max_span:
        return PULL_DELAY_WHEN_FLOW_CONTROL
    return None
