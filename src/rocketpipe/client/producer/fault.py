"""Latency fault tolerance of the producer: isolate slow or failing brokers for a while (L3).

Mirrors ``MQFaultStrategy`` and ``LatencyFaultToleranceImpl`` (rocketmq-client 5.3.3). Off by
default (``sendLatencyFaultEnable`` / 5.x ``ClientConfig.sendLatencyEnable`` are false). When on:

* after every send attempt the producer reports the broker's latency
  (:meth:`MQFaultStrategy.update_fault_item`). The latency picks an isolation time from two
  tables, :attr:`~MQFaultStrategy.latency_max` (ms: 50, 100, 550, 1800, 3000, 5000, 15000) and
  :attr:`~MQFaultStrategy.not_available_duration` (ms: 0, 0, 2000, 5000, 6000, 10000, 30000):
  the largest ``latency_max[i] <= latency`` gives ``not_available_duration[i]``. A failed
  attempt counts as 10,000 ms (``isolation``), so a broker that refused or dropped a send is left
  out for 10 s. A broker error (``MQBrokerException``) also marks it unreachable; a network error
  does not (Java marks it unreachable only when its reachability detector runs, which rocketpipe
  does not have: ``startDetectorEnable`` is false by default in Java too);
* queue selection (:meth:`MQFaultStrategy.select_one_message_queue`) takes, in round-robin order,
  the first queue whose broker is available and is not the broker of the previous failed attempt;
  failing that, one whose broker is reachable; failing that, the next queue whatever its broker.
  A retry restarts the round-robin counter at a random value (``resetIndex``).

Without it, selection is plain round robin that avoids the previous attempt's broker.

Time is injected (a ``() -> int`` of milliseconds, monotonic), so every decision here is a pure
function of the calls made and the clock.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ...protocol.message import MessageQueue
from ..routing import RoundRobinSelector

__all__ = ["LATENCY_MAX_MS", "NOT_AVAILABLE_DURATION_MS", "FaultItem", "MQFaultStrategy"]

#: ``MQFaultStrategy.latencyMax``, ms.
LATENCY_MAX_MS: tuple[int, ...] = (50, 100, 550, 1800, 3000, 5000, 15000)
#: ``MQFaultStrategy.notAvailableDuration``, ms (same length).
NOT_AVAILABLE_DURATION_MS: tuple[int, ...] = (0, 0, 2000, 5000, 6000, 10000, 30000)
#: the latency a failed attempt counts as (``updateFaultItem(..., isolation=true)``), ms.
ISOLATION_LATENCY_MS = 10_000


@dataclass(slots=True)
class FaultItem:
    """One broker's record (``LatencyFaultToleranceImpl.FaultItem``).

    Attributes:
        name: broker name.
        current_latency_ms: latency of its last send attempt, ms.
        start_timestamp_ms: clock reading (ms) before which it is not available.
        reachable: False after a broker error, until a later attempt reports it reachable.
    """

    name: str
    current_latency_ms: int = 0
    start_timestamp_ms: int = 0
    reachable: bool = True


class MQFaultStrategy:
    """The producer's broker isolation and queue choice (``MQFaultStrategy``).

    Args:
        now_ms: monotonic clock in milliseconds.
        send_latency_fault_enable: isolate brokers (Java's ``sendLatencyFaultEnable``); False
            keeps plain round robin and records nothing.

    Attributes:
        latency_max / not_available_duration: the two tables above (ms), replaceable as Java's
            ``setLatencyMax`` / ``setNotAvailableDuration``.
    """

    def __init__(self, now_ms: Callable[[], int], send_latency_fault_enable: bool = False) -> None:
        self._now_ms = now_ms
        self.send_latency_fault_enable = send_latency_fault_enable
        self.latency_max: tuple[int, ...] = LATENCY_MAX_MS
        self.not_available_duration: tuple[int, ...] = NOT_AVAILABLE_DURATION_MS
        self._items: dict[str, FaultItem] = {}

    # ------------------------------------------------------------------ state

    def fault_item(self, broker_name: str) -> FaultItem | None:
        """The broker's record, or None when no attempt to it was reported."""
        return self._items.get(broker_name)

    def is_available(self, broker_name: str) -> bool:
        """True unless the broker is isolated now (``LatencyFaultTolerance.isAvailable``)."""
        item = self._items.get(broker_name)
        return item is None or self._now_ms() >= item.start_timestamp_ms

    def is_reachable(self, broker_name: str) -> bool:
        """False after a broker error until a later attempt succeeds (``isReachable``)."""
        item = self._items.get(broker_name)
        return item is None or item.reachable

    def compute_not_available_duration(self, latency_ms: int) -> int:
        """Isolation time in ms for a send that took ``latency_ms`` (``computeNotAvailableDuration``)."""
        for i in range(len(self.latency_max) - 1, -1, -1):
            if latency_ms >= self.latency_max[i]:
                return self.not_available_duration[i]
        return 0

    def update_fault_item(self, broker_name: str, latency_ms: int, isolation: bool, reachable: bool) -> None:
        """Record one send attempt to ``broker_name`` (``MQFaultStrategy.updateFaultItem``).

        Args:
            latency_ms: how long the attempt took, ms.
            isolation: the attempt failed (counts as 10,000 ms for the isolation time).
            reachable: False for a broker error (the broker answered with a failure code).
        """
        if not self.send_latency_fault_enable:
            return
        duration = self.compute_not_available_duration(ISOLATION_LATENCY_MS if isolation else latency_ms)
        item = self._items.get(broker_name)
        if item is None:
            item = self._items[broker_name] = FaultItem(broker_name)
        item.current_latency_ms = latency_ms
        if duration > 0:  # FaultItem.updateNotAvailableDuration: only ever extends the isolation
            item.start_timestamp_ms = max(item.start_timestamp_ms, self._now_ms() + duration)
        item.reachable = reachable

    def remove(self, broker_name: str) -> None:
        """Forget a broker (``LatencyFaultTolerance.remove``)."""
        self._items.pop(broker_name, None)

    # ------------------------------------------------------------------ selection

    def select_one_message_queue(
        self,
        queues: Sequence[MessageQueue],
        selector: RoundRobinSelector,
        last_broker_name: str | None,
        reset_index: bool,
    ) -> MessageQueue:
        """The queue for the next attempt (``MQFaultStrategy.selectOneMessageQueue``).

        Args:
            queues: the topic's writable queues (not empty).
            selector: the topic's round-robin counter.
            last_broker_name: broker of the previous failed attempt, or None.
            reset_index: a retry (``times > 0``): restart the counter at a random value.

        Raises:
            IndexError: ``queues`` is empty.
        """
        if not queues:
            raise IndexError("no queue to select")
        if not self.send_latency_fault_enable:
            return selector.select(queues, last_broker_name)
        if reset_index:
            selector.reset()

        def other_broker(mq: MessageQueue) -> bool:
            return last_broker_name is None or mq.broker_name != last_broker_name

        mq = selector.select_where(queues, lambda q: self.is_available(q.broker_name) and other_broker(q))
        if mq is None:
            mq = selector.select_where(queues, lambda q: self.is_reachable(q.broker_name) and other_broker(q))
        return mq if mq is not None else selector.select(queues)
