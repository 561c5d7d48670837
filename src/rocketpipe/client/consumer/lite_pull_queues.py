"""Queue bookkeeping of the lite pull consumer (sync, pure; L3).

Mirrors ``AssignedMessageQueue`` / ``MessageQueueState`` and the flow-control checks at the top
of ``DefaultLitePullConsumerImpl.PullTaskImpl.run``. Nothing here awaits or does I/O; the
asyncio driver is :mod:`rocketpipe.client.consumer.lite_pull`.

Rules of one assigned queue (:class:`QueueState`)::

    pq              the ProcessQueue of this assignment; replaced (old one dropped) by a seek
                    so that late results of a cancelled pull are recognised and ignored
    paused          the pull task idles (re-checks every PULL_DELAY_WHEN_PAUSE)
    seek_offset     pending seek (-1 none); the next pull uses it, it becomes the consume
                    offset, and pull results arriving while it is pending are discarded
    pull_offset     next offset to pull (-1 = not known yet: compute it from ConsumeFromWhere)
    consume_offset  offset after the messages handed out by poll() (-1 none); what commit()
                    copies into the offset store

Imports protocol.message and sibling consumer modules only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from ...errors import InvalidArgumentError
from ...protocol.message import MessageExt, MessageQueue
from .process_queue import FlowControlLimits, ProcessQueue, flow_control_delay

#: DefaultLitePullConsumerImpl.PULL_TIME_DELAY_MILLS_WHEN_CACHE_FLOW_CONTROL (50 ms), seconds.
PULL_DELAY_WHEN_CACHE_FLOW_CONTROL: Final = 0.05
#: DefaultLitePullConsumerImpl.PULL_TIME_DELAY_MILLS_WHEN_BROKER_FLOW_CONTROL (20 ms), seconds.
PULL_DELAY_WHEN_BROKER_FLOW_CONTROL: Final = 0.02
#: DefaultLitePullConsumerImpl.PULL_TIME_DELAY_MILLS_WHEN_PAUSE (1 000 ms), seconds.
PULL_DELAY_WHEN_PAUSE: Final = 1.0
#: DefaultLitePullConsumerImpl.PULL_TIME_DELAY_MILLS_ON_EXCEPTION (3 000 ms): start offset unknown.
PULL_DELAY_ON_START_OFFSET_ERROR: Final = 3.0
#: DefaultLitePullConsumer.MIN_AUTOCOMMIT_INTERVAL_MILLIS (1 000 ms), seconds.
MIN_AUTO_COMMIT_INTERVAL: Final = 1.0


@dataclass(frozen=True, slots=True)
class LitePullSettings:
    """Knobs of a lite pull consumer (durations in seconds; Java defaults).

    Attributes:
        pull_batch_size: ``maxMsgNums`` of each pull (``pullBatchSize``, 10).
        pull_threshold_for_all: cached ConsumeRequests × pull_batch_size above which every
            queue pauses pulling (``pullThresholdForAll``, 10 000).
        pull_threshold_for_queue: cached messages per queue (``pullThresholdForQueue``, 1 000).
        pull_threshold_size_for_queue: cached body MiB per queue
            (``pullThresholdSizeForQueue``, 100).
        consume_max_span: max offset span of a queue's cache (``consumeMaxSpan``, 2 000).
        poll_timeout: default :meth:`LitePullConsumer.poll` wait (``pollTimeoutMillis``, 5 s).
        auto_commit: commit polled offsets automatically (``autoCommit``, True).
        auto_commit_interval: minimum time between automatic commits
            (``autoCommitIntervalMillis``, 5 s; at least 1 s).
        broker_suspend_max_time: broker long-poll hold (``brokerSuspendMaxTimeMillis``, 20 s).
        consumer_timeout_when_suspend: RPC timeout of a long-poll pull
            (``consumerTimeoutMillisWhenSuspend``, 30 s).
        consumer_pull_timeout: RPC timeout of a non-suspended pull
            (``consumerPullTimeoutMillis``, 10 s). As in Java the background pulls always
            long-poll, so they use ``consumer_timeout_when_suspend``.
        pull_time_delay_when_exception: back-off after a failed pull
            (``pullTimeDelayMillsWhenException``, the ClientConfig value, 1 s).

    Raises:
        InvalidArgumentError: a value out of range.
    """

    pull_batch_size: int = 10
    pull_threshold_for_all: int = 10_000
    pull_threshold_for_queue: int = 1_000
    pull_threshold_size_for_queue: int = 100
    consume_max_span: int = 2_000
    poll_timeout: float = 5.0
    auto_commit: bool = True
    auto_commit_interval: float = 5.0
    broker_suspend_max_time: float = 20.0
    consumer_timeout_when_suspend: float = 30.0
    consumer_pull_timeout: float = 10.0
    pull_time_delay_when_exception: float = 1.0

    def __post_init__(self) -> None:
        if not 1 <= self.pull_batch_size <= 1024:
            raise InvalidArgumentError("pull_batch_size must be in [1, 1024]")
        for name in (
            "pull_threshold_for_all",
            "pull_threshold_for_queue",
            "pull_threshold_size_for_queue",
            "consume_max_span",
        ):
            if getattr(self, name) < 1:
                raise InvalidArgumentError(f"{name} must be >= 1")
        if self.poll_timeout < 0:
            raise InvalidArgumentError("poll_timeout must be >= 0 seconds")
        if self.auto_commit_interval < MIN_AUTO_COMMIT_INTERVAL:
            raise InvalidArgumentError(f"auto_commit_interval must be >= {MIN_AUTO_COMMIT_INTERVAL} s")
        if self.consumer_timeout_when_suspend < self.broker_suspend_max_time:
            raise InvalidArgumentError("consumer_timeout_when_suspend must not be below broker_suspend_max_time")
        if self.consumer_pull_timeout <= 0 or self.broker_suspend_max_time < 0:
            raise InvalidArgumentError("pull timeouts must be positive")
        if self.pull_time_delay_when_exception < 0:
            raise InvalidArgumentError("pull_time_delay_when_exception must be >= 0")

    @property
    def queue_limits(self) -> FlowControlLimits:
        """The per-queue limits in the push consumer's shape (shared flow-control check)."""
        return FlowControlLimits(
            self.pull_threshold_for_queue, self.pull_threshold_size_for_queue, self.consume_max_span
        )


def lite_flow_control_delay(cached_requests: int, pq: ProcessQueue, settings: LitePullSettings) -> float | None:
    """Decide whether a queue's next pull must wait for the caches to drain.

    Mirrors the checks of ``PullTaskImpl.run``, in order: cached ConsumeRequests ×
    ``pull_batch_size`` above ``pull_threshold_for_all``; then the queue's message count, body
    size (MiB) and offset span.

    Args:
        cached_requests: ConsumeRequests waiting for :meth:`poll`.
        pq: the queue's ProcessQueue.
        settings: the thresholds.

    Returns:
        :data:`PULL_DELAY_WHEN_CACHE_FLOW_CONTROL` seconds when the pull must wait, else None.
    """
    if cached_requests * settings.pull_batch_size > settings.pull_threshold_for_all:
        return PULL_DELAY_WHEN_CACHE_FLOW_CONTROL
    if flow_control_delay(pq, settings.queue_limits) is not None:
        return PULL_DELAY_WHEN_CACHE_FLOW_CONTROL
    return None


@dataclass(slots=True)
class QueueState:
    """One assigned queue (``MessageQueueState``); see the module rules."""

    mq: MessageQueue
    pq: ProcessQueue
    paused: bool = False
    seek_offset: int = -1
    pull_offset: int = -1
    consume_offset: int = -1


@dataclass(frozen=True, slots=True)
class ConsumeRequest:
    """Messages of one FOUND pull, waiting for :meth:`LitePullConsumer.poll` (``ConsumeRequest``)."""

    msgs: list[MessageExt]
    mq: MessageQueue
    pq: ProcessQueue


@dataclass(frozen=True, slots=True)
class AssignmentChange:
    """Queues added and removed by :meth:`AssignedQueues.update` (both sorted)."""

    added: list[MessageQueue] = field(default_factory=list)
    removed: list[MessageQueue] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """True when anything was added or removed."""
        return bool(self.added or self.removed)


class AssignedQueues:
    """The queues a lite pull consumer currently owns (``AssignedMessageQueue``)."""

    def __init__(self) -> None:
        self._states: dict[MessageQueue, QueueState] = {}

    # ------------------------------------------------------------------ membership

    def update(self, mqs: Iterable[MessageQueue], topic: str | None = None, *, now: float = 0.0) -> AssignmentChange:
        """Replace the assignment (of one topic when ``topic`` is given, else of all queues).

        Removed queues have their ProcessQueue marked dropped; kept queues keep their state
        (pause flag, offsets); new queues start with a fresh state.

        Mirrors ``AssignedMessageQueue.updateAssignedMessageQueue``.

        Returns:
            The queues added and removed.
        """
        wanted = {mq for mq in mqs if topic is None or mq.topic == topic}
        removed = sorted(mq for mq in self._states if (topic is None or mq.topic == topic) and mq not in wanted)
        for mq in removed:
            self._states.pop(mq).pq.dropped = True
        added = sorted(mq for mq in wanted if mq not in self._states)
        for mq in added:
            self._states[mq] = QueueState(mq, ProcessQueue(now))
        return AssignmentChange(added, removed)

    def remove_topic(self, topic: str) -> list[MessageQueue]:
        """Forget every queue of ``topic`` (dropping them); returns the removed queues."""
        return self.update((), topic).removed

    def clear(self) -> list[MessageQueue]:
        """Forget every queue (dropping them); returns the removed queues."""
        return self.update(()).removed

    def queues(self) -> list[MessageQueue]:
        """Return the assigned queues, sorted."""
        return sorted(self._states)

    def get(self, mq: MessageQueue) -> QueueState | None:
        """Return the state of ``mq``, or None when it is not assigned."""
        return self._states.get(mq)

    def __contains__(self, mq: object) -> bool:
        return mq in self._states

    def __len__(self) -> int:
        return len(self._states)

    # ------------------------------------------------------------------ pause

    def pause(self, mqs: Iterable[MessageQueue]) -> None:
        """Pause the assigned queues among ``mqs`` (others are ignored, as in Java)."""
        for mq in mqs:
            st = self._states.get(mq)
            if st is not None:
                st.paused = True

    def resume(self, mqs: Iterable[MessageQueue]) -> None:
        """Resume the assigned queues among ``mqs``."""
        for mq in mqs:
            st = self._states.get(mq)
            if st is not None:
                st.paused = False

    def is_paused(self, mq: MessageQueue) -> bool:
        """True when ``mq`` is assigned and paused."""
        st = self._states.get(mq)
        return st is not None and st.paused

    # ------------------------------------------------------------------ offsets

    def seek(self, mq: MessageQueue, offset: int, *, now: float = 0.0) -> ProcessQueue:
        """Record a pending seek and start a fresh ProcessQueue (the old one is dropped).

        Java clears the ProcessQueue in place; a fresh one also resets ``queue_offset_max``,
        so the offsets returned by ``remove_messages`` after a backward seek are right.

        Returns:
            The new ProcessQueue.

        Raises:
            InvalidArgumentError: ``mq`` is not assigned or ``offset`` < 0.
        """
        st = self._states.get(mq)
        if st is None:
            raise InvalidArgumentError(f"{mq} is not assigned to this consumer")
        if offset < 0:
            raise InvalidArgumentError("seek offset must be >= 0")
        st.pq.dropped = True
        st.pq = ProcessQueue(now)
        st.seek_offset = offset
        return st.pq

    def take_next_pull_offset(self, mq: MessageQueue) -> int:
        """Return the offset of the next pull, consuming a pending seek.

        Mirrors ``DefaultLitePullConsumerImpl.nextPullOffset``: a pending seek wins and becomes
        the consume offset; otherwise the in-memory pull offset.

        Returns:
            The offset, or -1 when it must be computed from ConsumeFromWhere (or ``mq`` is
            not assigned).
        """
        st = self._states.get(mq)
        if st is None:
            return -1
        if st.seek_offset != -1:
            offset = st.seek_offset
            st.consume_offset = offset
            st.seek_offset = -1
            return offset
        return st.pull_offset

    def update_pull_offset(self, mq: MessageQueue, offset: int, pq: ProcessQueue) -> None:
        """Set the next pull offset, unless a seek is pending or ``pq`` is stale."""
        st = self._states.get(mq)
        if st is not None and st.pq is pq and st.seek_offset == -1:
            st.pull_offset = offset

    def update_consume_offset(self, mq: MessageQueue, offset: int, pq: ProcessQueue | None = None) -> None:
        """Set the consume offset (ignored for -1, unassigned queues, or a stale ``pq``)."""
        st = self._states.get(mq)
        if st is None or offset < 0 or (pq is not None and st.pq is not pq):
            return
        st.consume_offset = offset

    def consume_offset(self, mq: MessageQueue) -> int:
        """Return the consume offset of ``mq`` (-1 when none or unassigned)."""
        st = self._states.get(mq)
        return -1 if st is None else st.consume_offset

    def consume_offsets(self) -> dict[MessageQueue, int]:
        """Return queue → consume offset for every assigned, non-dropped queue that has one."""
        return {
            mq: st.consume_offset
            for mq, st in sorted(self._states.items())
            if st.consume_offset >= 0 and not st.pq.dropped
        }


__all__ = [
    "MIN_AUTO_COMMIT_INTERVAL",
    "PULL_DELAY_ON_START_OFFSET_ERROR",
    "PULL_DELAY_WHEN_BROKER_FLOW_CONTROL",
    "PULL_DELAY_WHEN_CACHE_FLOW_CONTROL",
    "PULL_DELAY_WHEN_PAUSE",
    "AssignedQueues",
    "AssignmentChange",
    "ConsumeRequest",
    "LitePullSettings",
    "QueueState",
    "lite_flow_control_delay",
]
