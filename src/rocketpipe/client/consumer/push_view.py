"""What the push consumer's parts read of the consumer itself (L3, types only).

Java's ``RebalancePushImpl`` and the running-info code read the settings through
``defaultMQPushConsumerImpl.getDefaultMQPushConsumer()`` at each use; here they get the
:class:`~.push.PushConsumer` as a :class:`PushConsumerView`, so a setting changed on the
consumer (e.g. ``consume_from_where`` before :meth:`~.push.PushConsumer.start`) is seen, and
neither module imports :mod:`.push`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..runtime import ClientRuntime
    from .allocate import AllocateStrategy
    from .listener import MessageModel
    from .offsets import ConsumeFromWhere


class PushConsumerView(Protocol):
    """The public settings of a push consumer (see :class:`~.push.PushConsumer` for each)."""

    @property
    def runtime(self) -> ClientRuntime:
        """The client runtime."""

    @property
    def group(self) -> str:
        """Consumer group."""

    @property
    def message_model(self) -> MessageModel:
        """CLUSTERING or BROADCASTING."""

    @property
    def orderly(self) -> bool:
        """True with an orderly listener."""

    @property
    def consume_from_where(self) -> ConsumeFromWhere:
        """Start of a queue without a stored offset."""

    @property
    def consume_timestamp(self) -> str:
        """``yyyyMMddHHmmss`` for CONSUME_FROM_TIMESTAMP."""

    @property
    def allocate_strategy(self) -> AllocateStrategy:
        """Queue allocation (named in QUERY_ASSIGNMENT)."""

    @property
    def consume_thread_max(self) -> int:
        """Listener concurrency."""

    @property
    def consume_message_batch_max_size(self) -> int:
        """Messages per listener call."""

    @property
    def max_reconsume_times(self) -> int:
        """−1 = the mode's default."""

    @property
    def suspend_current_queue_time_millis(self) -> int:
        """Orderly suspend time, ms."""

    @property
    def consume_timeout(self) -> float:
        """Seconds."""

    @property
    def client_rebalance(self) -> bool:
        """False: the broker may assign queues."""


__all__ = ["PushConsumerView"]
