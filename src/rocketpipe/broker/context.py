"""What the request processors see of the broker (L3): :class:`BrokerContext`.

The processors (:mod:`.processors`) and the POP package (:mod:`.pop`) are composed by
:class:`~rocketpipe.broker.broker.Broker` and call back into it. They depend on this narrow
interface instead of the composition root, so ``broker.py`` imports them and nothing imports
``broker.py`` back. :class:`~rocketpipe.broker.broker.Broker` satisfies it structurally (mypy
checks that where it builds the processors); tests may pass anything else that does.

Java has no such interface: its processors hold the whole ``BrokerController``. The members
below are exactly those the processors use; add one here only when a processor needs it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from ..clock import Clock
from ..protocol.message import UniqueIdGenerator
from ..store import MessageBatch, MessageInner, MessageStore, PutResult
from ..transport import ConnectionPool
from .config import BrokerConfig
from .filter.manager import ConsumerFilterManager
from .groups import ClientRegistry
from .locks import QueueLocks
from .offsets import ConsumerOffsets
from .pull_hold import HeldPull
from .schedule import ScheduleDelivery
from .stats import BrokerStats
from .topics import SubscriptionGroupTable, TopicTable

__all__ = ["BrokerContext"]


class BrokerContext(Protocol):
    """The broker's state tables and services, as the processors use them.

    The processors read these attributes and never rebind them; the event-loop thread owns
    every table (see :mod:`rocketpipe.broker.broker`).

    Attributes:
        config: the broker configuration.
        clock: wall clock (store/born timestamps, lock and channel expiry), ms.
        address: this broker's ``"ip:port"`` once started ("" before); the store host of
            the messages the processors build.
        store: the message store.
        topics: topic table (``TopicConfigManager``).
        groups_config: subscription group table (``SubscriptionGroupManager``).
        offsets: committed consumer offsets (``ConsumerOffsetManager``).
        consumer_filters: SQL92 filter data from heartbeats (``ConsumerFilterManager``).
        clients: producer/consumer channels by group (``ConsumerManager`` + ``ProducerManager``).
        locks: orderly-consumption queue locks (``RebalanceLockManager``).
        unique_ids: ``UNIQ_KEY`` generator for messages sent without one.
        stats: counters behind GET_BROKER_RUNTIME_INFO.
        schedule: delayed-message delivery (``ScheduleMessageService``): its per-level offsets.
    """

    config: BrokerConfig
    clock: Clock
    address: str
    store: MessageStore
    topics: TopicTable
    groups_config: SubscriptionGroupTable
    offsets: ConsumerOffsets
    consumer_filters: ConsumerFilterManager
    clients: ClientRegistry
    locks: QueueLocks
    unique_ids: UniqueIdGenerator
    stats: BrokerStats
    schedule: ScheduleDelivery

    @property
    def pool(self) -> ConnectionPool:
        """The broker's outbound connections (name servers: route lookups)."""
        ...

    @property
    def config_dir(self) -> Path:
        """``<store_dir>/config`` (the JSON metadata files)."""
        ...

    def loop_time(self) -> float:
        """The event loop's clock, seconds (deadlines)."""
        ...

    def put_message(self, inner: MessageInner) -> PutResult:
        """Append one message (counted in ``msgPutTotalTodayNow``) and wake the pulls held on its queue."""
        ...

    def put_batch(self, batch: MessageBatch) -> PutResult:
        """Append a client's batch, encoded from its wire body (consecutive offsets in one queue),
        and wake held pulls."""
        ...

    async def wait_durable(self, result: PutResult) -> bool:
        """SYNC_FLUSH: wait until ``result`` is on disk (False on timeout); ASYNC_FLUSH: True."""
        ...

    def apply_delay(self, inner: MessageInner) -> MessageInner:
        """Redirect a message with ``DELAY > 0`` into ``SCHEDULE_TOPIC_XXXX``, or a 5.x timer
        message into ``rmq_sys_wheel_timer`` (``handleScheduleMessage``).

        Raises:
            TimerMessageIllegalError, TimerNotEnabledError: a timer message is refused.
        """
        ...

    def topics_changed(self) -> None:
        """Note a topic-table change: persist soon and re-register with the name servers."""
        ...

    def park_pull(self, entry: HeldPull) -> None:
        """Hold a pull until a message arrives for its queue or its deadline passes."""
        ...

    def notify_consumer_ids_changed(self, group: str) -> None:
        """Queue NOTIFY_CONSUMER_IDS_CHANGED for every channel of ``group`` (if enabled)."""
        ...

    async def register_broker_all(self) -> None:
        """Send REGISTER_BROKER to every name server; failures are logged, never raised."""
        ...
