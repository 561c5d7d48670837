"""LitePullConsumer: poll()-style consumption with background pulls (L3).

Mirrors ``DefaultLitePullConsumer`` / ``DefaultLitePullConsumerImpl`` (CLUSTERING):

* ``subscribe(topic, expression)`` lets the group rebalance the queues (the allocation
  strategies of :mod:`~rocketpipe.client.consumer.allocate`, every 20 s and at once on
  NOTIFY_CONSUMER_IDS_CHANGED); ``assign(queues)`` fixes them. The two are mutually exclusive.
* One pull task per assigned queue long-polls the broker (sysflag SUSPEND | SUBSCRIPTION |
  LITE_PULL, no commit bit, suspend 20 s, RPC timeout 30 s) and appends each FOUND batch to
  a consume-request cache; :meth:`LitePullConsumer.poll` hands out one batch at a time.
* Offsets: ``poll`` advances the queue's consume offset (``ProcessQueue.remove_messages``);
  ``commit`` copies consume offsets into the :class:`RemoteOffsetStore` (with
  ``auto_commit`` at most every ``auto_commit_interval`` inside ``poll``); the runtime's
  periodic task (5 s) and :meth:`close` send them to the broker.

Message trace (``enable_msg_trace``): every batch :meth:`LitePullConsumer.poll` hands out is
recorded as a SubBefore and a successful SubAfter, as ``DefaultLitePullConsumerImpl.poll`` runs
the consume hooks.

Wire choice: the pulls use PULL_MESSAGE (11) with the lite-pull bit, as 4.x Java lite pull
consumers do; 5.x Java clients send LITE_PULL_MESSAGE (361) for the same header, which 4.x
brokers reject (REQUEST_CODE_NOT_SUPPORTED). Both broker generations accept code 11.

Imports sibling client modules, protocol and errors (never broker/namesrv/store).
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections import deque
from collections.abc import AsyncIterator, Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Final

from ...clock import SYSTEM_CLOCK, Clock
from ...errors import ClientClosedError, InvalidArgumentError, RocketMQError
from ...protocol.bodies.heartbeat import EXPRESSION_TYPE_TAG, ConsumerData, SubscriptionData
from ...protocol.message import MessageExt, MessageQueue
from .._tasks import TaskOwner
from ..config import ClientConfig
from ..routing import subscribe_queues
from ..runtime import ClientRuntime
from .allocate import AllocateStrategy, allocate_averagely
from .common import check_consumer_group, resolve_runtime, start_consume_trace
from .listener import MessageModel
from .lite_pull_fetch import LitePullFetcher
from .lite_pull_queues import AssignedQueues, LitePullSettings
from .offset_ops import BrokerOffsets, persist_quietly
from .offsets import ConsumeFromWhere, ReadOffsetType, RemoteOffsetStore, default_consume_timestamp
from .rebalance_service import RebalanceService

if TYPE_CHECKING:
    from ..trace.hooks import ConsumeTraceHook

log = logging.getLogger(__name__)

#: rocketmq.client.rebalance.waitInterval (20 000 ms), seconds.
REBALANCE_INTERVAL: Final = 20.0


class SubscriptionType(enum.Enum):
    """How the consumer got its queues (``DefaultLitePullConsumerImpl.SubscriptionType``)."""

    NONE = "NONE"
    SUBSCRIBE = "SUBSCRIBE"
    ASSIGN = "ASSIGN"


class LitePullConsumer:
    """Asynchronous lite pull consumer (CLUSTERING).

    Usage::

        async with LitePullConsumer("cg", namesrv_addr="127.0.0.1:9876") as consumer:
            consumer.subscribe("TopicA", "TagA || TagB")   # or consumer.assign([...])
            async for msg in consumer:
                ...

    ``subscribe`` / ``assign`` may be called before or after :meth:`start`.

    Args:
        consumer_group: the group (``consumerGroup``).
        namesrv_addr: ``;``-separated name servers (or ``config`` / ``runtime``).
        config: client settings.
        runtime: share a runtime (not closed by this consumer).
        message_model: only ``CLUSTERING`` is implemented.
        consume_from_where: start of a queue without a committed offset. Mirrors
            ``DefaultLitePullConsumer.consumeFromWhere`` (CONSUME_FROM_LAST_OFFSET). The
            deprecated values behave like CONSUME_FROM_LAST_OFFSET (Java computes no start
            offset for them).
        consume_timestamp: ``yyyyMMddHHmmss`` local time for CONSUME_FROM_TIMESTAMP (30 minutes
            before construction).
        allocate_strategy: queue allocation in subscribe mode (averagely).
        pull_batch_size: ``pullBatchSize`` (10).
        pull_threshold_for_all: ``pullThresholdForAll`` (10 000).
        pull_threshold_for_queue: ``pullThresholdForQueue`` (1 000).
        pull_threshold_size_for_queue: ``pullThresholdSizeForQueue``, MiB (100).
        consume_max_span: ``consumeMaxSpan`` (2 000).
        poll_timeout: default wait of :meth:`poll`, seconds (``pollTimeoutMillis``, 5 s).
        auto_commit: ``autoCommit`` (True).
        auto_commit_interval: seconds (``autoCommitIntervalMillis``, 5 s; minimum 1 s).
        broker_suspend_max_time: long-poll hold, seconds (``brokerSuspendMaxTimeMillis``, 20 s).
        consumer_timeout_when_suspend: long-poll RPC timeout, seconds
            (``consumerTimeoutMillisWhenSuspend``, 30 s).
        consumer_pull_timeout: seconds (``consumerPullTimeoutMillis``, 10 s; unused by the
            long-polling background pulls, as in Java).
        rebalance_interval: seconds (``rocketmq.client.rebalance.waitInterval``, 20 s).
        clock: wall clock.
        enable_msg_trace: trace every polled batch (SubBefore + SubAfter) into the trace topic
            (``enableMsgTrace``, False).
        customized_trace_topic: the trace topic (``customizedTraceTopic``; None:
            ``RMQ_SYS_TRACE_TOPIC``).

    Raises:
        InvalidArgumentError: bad group or settings, BROADCASTING, no name server.
    """

    def __init__(
        self,
        consumer_group: str,
        *,
        namesrv_addr: str | None = None,
        config: ClientConfig | None = None,
        runtime: ClientRuntime | None = None,
        message_model: MessageModel = MessageModel.CLUSTERING,
        consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
        consume_timestamp: str | None = None,
        allocate_strategy: AllocateStrategy = allocate_averagely,
        pull_batch_size: int = 10,
        pull_threshold_for_all: int = 10_000,
        pull_threshold_for_queue: int = 1_000,
        pull_threshold_size_for_queue: int = 100,
        consume_max_span: int = 2_000,
        poll_timeout: float = 5.0,
        auto_commit: bool = True,
        auto_commit_interval: float = 5.0,
        broker_suspend_max_time: float = 20.0,
        consumer_timeout_when_suspend: float = 30.0,
        consumer_pull_timeout: float = 10.0,
        rebalance_interval: float = REBALANCE_INTERVAL,
        clock: Clock = SYSTEM_CLOCK,
        enable_msg_trace: bool = False,
        customized_trace_topic: str | None = None,
    ) -> None:
        check_consumer_group(consumer_group)
        if message_model is not MessageModel.CLUSTERING:
            raise InvalidArgumentError("LitePullConsumer implements CLUSTERING only")
        if rebalance_interval <= 0:
            raise InvalidArgumentError("rebalance_interval must be > 0 seconds")
        runtime, self._owns_runtime = resolve_runtime("LitePullConsumer", namesrv_addr, config, runtime, clock)
        self.settings = LitePullSettings(
            pull_batch_size=pull_batch_size,
            pull_threshold_for_all=pull_threshold_for_all,
            pull_threshold_for_queue=pull_threshold_for_queue,
            pull_threshold_size_for_queue=pull_threshold_size_for_queue,
            consume_max_span=consume_max_span,
            poll_timeout=poll_timeout,
            auto_commit=auto_commit,
            auto_commit_interval=auto_commit_interval,
            broker_suspend_max_time=broker_suspend_max_time,
            consumer_timeout_when_suspend=consumer_timeout_when_suspend,
            consumer_pull_timeout=consumer_pull_timeout,
            pull_time_delay_when_exception=runtime.config.pull_time_delay_when_exception,
        )
        self.group = consumer_group
        self.message_model = message_model
        self.consume_from_where = consume_from_where
        self.consume_timestamp = consume_timestamp or default_consume_timestamp(
            datetime.fromtimestamp(clock.now_ms() / 1000)
        )
        self.allocate_strategy = allocate_strategy
        self.rebalance_interval = rebalance_interval
        self.enable_msg_trace = enable_msg_trace
        self.customized_trace_topic = customized_trace_topic
        self._trace: ConsumeTraceHook | None = None
        self._runtime = runtime
        self._clock = clock
        self._subscription_type = SubscriptionType.NONE
        self._subscriptions: dict[str, SubscriptionData] = {}
        self._assign_expressions: dict[str, str] = {}
        self._assigned = AssignedQueues()
        self._offsets = BrokerOffsets(runtime, consumer_group)
        self._offset_store = RemoteOffsetStore(self._offsets.query, self._offsets.commit)
        self._tasks = TaskOwner(f"lite-pull[{consumer_group}]")
        self._fetcher = LitePullFetcher(
            runtime,
            consumer_group,
            self.settings,
            self._assigned,
            self._tasks,
            self._subscription_for,
            self._compute_start_offset,
        )
        self._rebalancer = RebalanceService(
            runtime,
            consumer_group,
            lambda: allocate_strategy,
            lambda: list(self._subscriptions),
            self._apply_allocation,
            rebalance_interval,
            release_without_route=True,
        )
        self._next_auto_commit = -1.0
        self._iter_buffer: deque[MessageExt] = deque()
        self._started = False
        self._closed = False

    # ------------------------------------------------------------------ properties

    @property
    def runtime(self) -> ClientRuntime:
        """The client runtime used."""
        return self._runtime

    @property
    def client_id(self) -> str:
        """This consumer's client id (``ip@instance``)."""
        return self._runtime.client_id

    @property
    def subscription_type(self) -> SubscriptionType:
        """NONE until :meth:`subscribe` or :meth:`assign` is called."""
        return self._subscription_type

    @property
    def is_running(self) -> bool:
        """True between a successful :meth:`start` and :meth:`close`."""
        return self._started and not self._closed

    def _set_subscription_type(self, kind: SubscriptionType) -> None:
        if self._subscription_type is SubscriptionType.NONE:
            self._subscription_type = kind
        elif self._subscription_type is not kind:
            raise InvalidArgumentError("subscribe() and assign() are mutually exclusive")

    def _check_running(self) -> None:
        if self._closed:
            raise ClientClosedError("consumer is closed")
        if not self._started:
            raise ClientClosedError("consumer is not running; call start() first")

    # ------------------------------------------------------------------ subscribe / assign

    def subscribe(self, topic: str, expression: str = "*", *, expression_type: str = EXPRESSION_TYPE_TAG) -> None:
        """Consume ``topic``, sharing its queues with the group.

        After :meth:`start`, triggers a heartbeat and a rebalance. Mirrors
        ``subscribe(topic, subExpression)`` and ``subscribe(topic, MessageSelector)``.

        Args:
            topic: the topic.
            expression: TAG expression (``"*"`` or ``"a || b"``), or an SQL92 selector.
            expression_type: ``"TAG"`` (default) or ``"SQL92"`` (needs a broker with
                ``enablePropertyFilter``).

        Raises:
            InvalidArgumentError: empty topic, bad expression, or :meth:`assign` was used.
            ClientClosedError: closed.
        """
        if self._closed:
            raise ClientClosedError("consumer is closed")
        if not topic:
            raise InvalidArgumentError("topic must not be empty")
        sub = SubscriptionData.build(topic, expression, expression_type, sub_version=self._clock.now_ms())
        self._set_subscription_type(SubscriptionType.SUBSCRIBE)
        self._subscriptions[topic] = sub
        if self._started:
            self._rebalancer.subscription_changed()

    def unsubscribe(self, topic: str) -> None:
        """Stop consuming ``topic``: its pull tasks stop and its queues are forgotten."""
        if self._subscriptions.pop(topic, None) is None:
            return
        for mq in self._assigned.remove_topic(topic):
            self._fetcher.stop_queue(mq)
        if self._started:
            self._rebalancer.subscription_changed()

    def assign(self, mqs: Iterable[MessageQueue]) -> None:
        """Consume exactly ``mqs`` (no rebalancing); replaces a previous assignment.

        Queues no longer assigned stop pulling; their offsets are persisted by the next
        periodic persist only while still assigned, so call :meth:`commit` with
        ``persist=True`` first if that matters.

        Raises:
            InvalidArgumentError: empty list, or :meth:`subscribe` was used.
            ClientClosedError: closed.
        """
        if self._closed:
            raise ClientClosedError("consumer is closed")
        queues = list(mqs)
        if not queues:
            raise InvalidArgumentError("message queues must not be empty")
        self._set_subscription_type(SubscriptionType.ASSIGN)
        before = self._assigned.consume_offsets()
        change = self._assigned.update(queues, now=self._now())
        for mq in change.removed:
            self._retire_offset(mq, before.get(mq, -1))
            self._fetcher.stop_queue(mq)
        if self._started:
            for mq in change.added:
                self._offset_store.remove(mq)
                self._fetcher.start_queue(mq)

    def set_sub_expression_for_assign(self, topic: str, expression: str) -> None:
        """Filter the assigned queues of ``topic`` by a TAG expression (before :meth:`start`).

        Mirrors ``DefaultLitePullConsumer.setSubExpression4Assign``.

        Raises:
            InvalidArgumentError: blank expression, already started, or subscribe mode.
        """
        if not expression or not expression.strip():
            raise InvalidArgumentError("expression must not be blank")
        if self._started:
            raise InvalidArgumentError("set_sub_expression_for_assign() only before start()")
        SubscriptionData.build(topic, expression)  # validate now
        self._set_subscription_type(SubscriptionType.ASSIGN)
        self._assign_expressions[topic] = expression

    def subscriptions(self) -> dict[str, str]:
        """Return topic → expression of the subscriptions (subscribe mode)."""
        return {t: s.sub_string for t, s in self._subscriptions.items()}

    def assignment(self) -> list[MessageQueue]:
        """Return the queues currently assigned (subscribe mode: allocated), sorted."""
        return self._assigned.queues()

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Start heartbeats, rebalancing (subscribe mode) and the pull tasks.

        Returns once the first heartbeat (and, in subscribe mode, rebalance) has run.

        Raises:
            ClientClosedError: already closed.
            InvalidArgumentError: the group is already registered in the shared runtime.
        """
        if self._closed:
            raise ClientClosedError("consumer is closed")
        if self._started:
            return
        rt = self._runtime
        rt.register_consumer(self)
        self._started = True
        await rt.start()
        await self._tasks.start()
        if self.enable_msg_trace:
            self._trace = await start_consume_trace(rt, self.group, self.customized_trace_topic, self._clock)
        await rt.update_all_routes()
        await rt.send_heartbeat_to_all_brokers()
        if self._subscription_type is SubscriptionType.SUBSCRIBE:
            await self.rebalance()
        elif self._subscription_type is SubscriptionType.ASSIGN:
            for mq in self._assigned.queues():
                self._offset_store.remove(mq)
                self._fetcher.start_queue(mq)
        if self._subscription_type is not SubscriptionType.ASSIGN:
            self._tasks.spawn(self._rebalancer.run(), "rebalance")

    async def close(self) -> None:
        """Shut down; idempotent.

        Stops rebalancing and pulling, commits the polled offsets (when ``auto_commit``),
        persists every assigned queue's offset (acknowledged), sends UNREGISTER_CLIENT and
        closes the runtime if owned. A :meth:`poll` waiting meanwhile returns ``[]``.
        """
        if self._closed:
            return
        self._closed = True
        self._fetcher.close()
        if not self._started:
            if self._owns_runtime:
                await self._runtime.close()
            return
        await self._tasks.close()
        if self._trace is not None:
            await self._trace.dispatcher.close()
        if self.settings.auto_commit:
            self._commit_memory(self._assigned.consume_offsets())
        for mq in self._assigned.queues():
            await persist_quietly(self._offset_store, mq, self.group, "offset at shutdown")
        self._assigned.clear()
        self._runtime.unregister_consumer(self.group)
        await self._runtime.unregister_client(consumer_group=self.group)
        if self._owns_runtime:
            await self._runtime.close()

    async def __aenter__(self) -> LitePullConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------------ poll

    async def poll(self, timeout: float | None = None) -> list[MessageExt]:
        """Return the next batch of pulled messages (one pull's worth), or ``[]`` on timeout.

        With ``auto_commit``, first commits the polled offsets if ``auto_commit_interval``
        has passed since the last automatic commit. Taking a batch advances its queue's
        consume offset past it. Mirrors ``DefaultLitePullConsumerImpl.poll``.

        Args:
            timeout: seconds to wait; None = ``poll_timeout`` (5 s).

        Raises:
            InvalidArgumentError: negative timeout.
            ClientClosedError: not started or closed (a poll waiting when :meth:`close` is
                called returns ``[]`` instead).
        """
        self._check_running()
        if timeout is None:
            timeout = self.settings.poll_timeout
        if timeout < 0:
            raise InvalidArgumentError("timeout must not be negative")
        if self.settings.auto_commit:
            self._maybe_auto_commit()
        req = await self._fetcher.take(timeout)
        if req is None:
            return []
        offset = req.pq.remove_messages(req.msgs)
        self._assigned.update_consume_offset(req.mq, offset, req.pq)
        req.pq.last_consume_time = self._now()
        if self._trace is not None:
            self._trace.polled(self.group, req.msgs, req.mq)
        return req.msgs

    def __aiter__(self) -> AsyncIterator[MessageExt]:
        return self

    async def __anext__(self) -> MessageExt:
        """Yield messages one by one (polling as needed) until the consumer is closed.

        The next batch is polled only once every message of the previous one was yielded,
        so an automatic commit never covers a message not yet handed out.
        """
        while not self._iter_buffer:
            if self._closed:
                raise StopAsyncIteration
            self._iter_buffer.extend(await self.poll())
        return self._iter_buffer.popleft()

    # ------------------------------------------------------------------ pause / seek

    def pause(self, mqs: Iterable[MessageQueue]) -> None:
        """Stop pulling the given assigned queues (messages already cached are still polled)."""
        self._assigned.pause(mqs)

    def resume(self, mqs: Iterable[MessageQueue]) -> None:
        """Resume pulling the given assigned queues (at once, not after the 1 s pause check)."""
        self._assigned.resume(mqs)
        self._fetcher.resumed()

    def is_paused(self, mq: MessageQueue) -> bool:
        """True when ``mq`` is assigned and paused."""
        return self._assigned.is_paused(mq)

    async def seek(self, mq: MessageQueue, offset: int) -> None:
        """Make the next messages of ``mq`` start at ``offset``.

        Drops the queue's cached messages and restarts its pull task from ``offset``, which
        also becomes its consume offset. Mirrors ``DefaultLitePullConsumerImpl.seek``.

        Raises:
            ClientClosedError: not running.
            InvalidArgumentError: ``mq`` not assigned (subscribe mode: maybe rebalancing), or
                ``offset`` outside ``[min_offset, max_offset]``.
            BrokerError / TransportError: the min/max offset query failed.
        """
        self._check_running()
        if mq not in self._assigned:
            hint = ", maybe rebalancing" if self._subscription_type is SubscriptionType.SUBSCRIBE else ""
            raise InvalidArgumentError(f"{mq} is not in the assigned list{hint}")
        lo, hi = await self.min_offset(mq), await self.max_offset(mq)
        if offset < lo or offset > hi:
            raise InvalidArgumentError(f"seek offset {offset} illegal: min offset {lo}, max offset {hi}")
        if mq not in self._assigned or self._closed:  # revoked or closed while querying
            raise InvalidArgumentError(f"{mq} is not in the assigned list any more")
        self._fetcher.stop_queue(mq)
        self._assigned.seek(mq, offset, now=self._now())
        self._fetcher.start_queue(mq)

    async def seek_to_begin(self, mq: MessageQueue) -> None:
        """:meth:`seek` to the queue's min offset."""
        self._check_running()
        await self.seek(mq, await self.min_offset(mq))

    async def seek_to_end(self, mq: MessageQueue) -> None:
        """:meth:`seek` to the queue's max offset (only new messages follow)."""
        self._check_running()
        await self.seek(mq, await self.max_offset(mq))

    # ------------------------------------------------------------------ offsets

    async def commit(
        self, offsets: Mapping[MessageQueue, int] | Iterable[MessageQueue] | None = None, *, persist: bool = False
    ) -> None:
        """Commit consume offsets into the offset store; optionally send them to the broker now.

        Mirrors ``commit()`` (every assigned queue), ``commit(Map, persist)`` and
        ``commit(Set, persist)``. Without ``persist`` the runtime's periodic task (every
        ``persist_consumer_offset_interval``, 5 s) or :meth:`close` sends them.

        Args:
            offsets: None = every assigned queue's consume offset; a mapping = these
                "next offset to consume" values; an iterable of queues = their consume offsets.
                Queues not assigned (or without an offset) are ignored.
            persist: send the committed queues' offsets now (acknowledged UPDATE_CONSUMER_OFFSET).

        Raises:
            ClientClosedError: not running.
            BrokerError / TransportError: ``persist`` failed (raised after trying every queue).
        """
        self._check_running()
        if offsets is None:
            table = self._assigned.consume_offsets()
        elif isinstance(offsets, Mapping):
            table = dict(offsets)
        else:
            table = {mq: self._assigned.consume_offset(mq) for mq in offsets}
        done = self._commit_memory(table)
        if persist:
            await self._persist(done)

    async def commit_sync(self, offsets: Mapping[MessageQueue, int] | None = None, *, persist: bool = False) -> None:
        """Same as :meth:`commit` (Java's deprecated ``commitSync()`` / ``commitSync(Map, persist)``)."""
        await self.commit(offsets, persist=persist)

    async def committed(self, mq: MessageQueue) -> int:
        """Return the group's committed offset of ``mq`` (memory first, then the broker).

        Returns:
            The next offset to consume, or -1 when the group has none.

        Raises:
            ClientClosedError: not running.
            RocketMQError: the broker query failed.
        """
        self._check_running()
        offset = await self._offset_store.read_offset(mq, ReadOffsetType.MEMORY_FIRST_THEN_STORE)
        if offset == -2:
            raise RocketMQError(f"fetching the consume offset of {mq} from the broker failed")
        return offset

    async def offset_for_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> int:
        """Return the offset of the first message of ``mq`` stored at or after ``timestamp_ms``.

        Raises:
            ClientClosedError: not running; BrokerError / TransportError.
        """
        self._check_running()
        return await self._offsets.search(mq, timestamp_ms)

    async def min_offset(self, mq: MessageQueue) -> int:
        """Return the smallest offset of ``mq`` on its broker.

        Raises:
            ClientClosedError: not running; BrokerError / TransportError.
        """
        self._check_running()
        return await self._offsets.min_offset(mq)

    async def max_offset(self, mq: MessageQueue) -> int:
        """Return the max offset of ``mq`` (the next offset to be written).

        Raises:
            ClientClosedError: not running; BrokerError / TransportError.
        """
        self._check_running()
        return await self._offsets.max_offset(mq)

    async def fetch_message_queues(self, topic: str) -> list[MessageQueue]:
        """Return the readable queues of ``topic`` (fresh route), sorted.

        Raises:
            ClientClosedError: not running; TopicNotExistError / TransportError.
        """
        self._check_running()
        return subscribe_queues(topic, await self._runtime.fetch_route(topic))

    def _commit_memory(self, table: Mapping[MessageQueue, int]) -> list[MessageQueue]:
        done = []
        for mq, offset in table.items():
            st = self._assigned.get(mq)
            if offset < 0 or st is None or st.pq.dropped:
                continue
            self._offset_store.update_offset(mq, offset, increase_only=False)
            done.append(mq)
        return done

    async def _persist(self, mqs: Iterable[MessageQueue]) -> None:
        first: RocketMQError | None = None
        for mq in mqs:
            try:
                await self._offset_store.persist(mq, oneway=False)
            except RocketMQError as exc:
                log.warning("persist offset failed group=%s mq=%s err=%s", self.group, mq, exc)
                first = first or exc
        if first is not None:
            raise first

    def _maybe_auto_commit(self) -> None:
        now = self._now()
        if now >= self._next_auto_commit:
            self._commit_memory(self._assigned.consume_offsets())
            self._next_auto_commit = now + self.settings.auto_commit_interval

    def _retire_offset(self, mq: MessageQueue, consume_offset: int) -> None:
        """Before a queue is revoked: keep its last polled offset when auto-committing."""
        if self.settings.auto_commit and consume_offset >= 0:
            self._offset_store.update_offset(mq, consume_offset, increase_only=False)

    # ------------------------------------------------------------------ runtime hooks

    def consumer_data(self) -> ConsumerData:
        """Return this consumer's heartbeat ``ConsumerData`` (consume type CONSUME_ACTIVELY).

        Like Java, ``consumeFromWhere`` is reported as CONSUME_FROM_LAST_OFFSET whatever the
        setting, and assign mode reports no subscription.
        """
        return ConsumerData(
            group_name=self.group,
            consume_type="CONSUME_ACTIVELY",
            message_model=self.message_model.value,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET.value,
            subscription_data_set=list(self._subscriptions.values()),
            unit_mode=False,
        )

    def subscribed_topics(self) -> list[str]:
        """Return the topics whose routes the runtime keeps fresh."""
        return sorted(set(self._subscriptions) | {mq.topic for mq in self._assigned.queues()})

    def on_consumer_ids_changed(self) -> None:
        """Rebalance now (NOTIFY_CONSUMER_IDS_CHANGED)."""
        self._rebalancer.wake()

    async def persist_offsets(self) -> None:
        """Persist the assigned queues' stored offsets (one-way), forget the others."""
        await self._offset_store.persist_all(self._assigned.queues(), oneway=True)

    # ------------------------------------------------------------------ rebalance

    async def rebalance(self) -> None:
        """Run one rebalance round over every subscribed topic (subscribe mode only)."""
        if self._started and not self._closed and self._subscription_type is SubscriptionType.SUBSCRIBE:
            await self._rebalancer.rebalance()

    @property
    def rebalance_count(self) -> int:
        """Rebalance rounds run so far."""
        return self._rebalancer.rounds

    async def _apply_allocation(self, topic: str, allocated: list[MessageQueue]) -> None:
        """``messageQueueChanged``: stop revoked queues (persisting their offsets), start new ones."""
        if self._closed or topic not in self._subscriptions:
            return
        before = self._assigned.consume_offsets()
        change = self._assigned.update(allocated, topic, now=self._now())
        if not change.changed:
            return
        for mq in change.removed:
            self._fetcher.stop_queue(mq)
            self._retire_offset(mq, before.get(mq, -1))
            await persist_quietly(self._offset_store, mq, self.group, "offset of revoked queue")
            self._offset_store.remove(mq)
            log.info("rebalance: drop queue group=%s mq=%s", self.group, mq)
        for mq in change.added:
            self._offset_store.remove(mq)
            log.info("rebalance: add queue group=%s mq=%s", self.group, mq)
        sub = self._subscriptions.get(topic)
        if sub is not None:
            sub.sub_version = self._clock.now_ms()
        await self._runtime.send_heartbeat_to_all_brokers()
        if self._closed:
            return
        for mq in change.added:
            if mq in self._assigned:
                self._fetcher.start_queue(mq)

    # ------------------------------------------------------------------ pull tasks

    def _now(self) -> float:
        try:
            return asyncio.get_running_loop().time()
        except RuntimeError:
            return 0.0

    def _subscription_for(self, topic: str) -> SubscriptionData | None:
        if self._subscription_type is SubscriptionType.SUBSCRIBE:
            return self._subscriptions.get(topic)
        return SubscriptionData.build(topic, self._assign_expressions.get(topic, "*"), sub_version=0)

    async def _compute_start_offset(self, mq: MessageQueue) -> int:
        """``computePullFromWhereWithException`` (offset store read memory-first)."""
        return await self._offsets.start_offset(
            self.consume_from_where,
            mq,
            self._offset_store,
            ReadOffsetType.MEMORY_FIRST_THEN_STORE,
            self.consume_timestamp,
        )


__all__ = ["LitePullConsumer", "SubscriptionType"]
