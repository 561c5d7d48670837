"""PushConsumer: subscribe, listen, and let rebalancing + pull loops deliver (L3).

Mirrors ``DefaultMQPushConsumer`` / ``DefaultMQPushConsumerImpl`` in CLUSTERING mode with a
concurrent listener. Composition: a :class:`ClientRuntime` (routes, heartbeats, periodic offset
persistence), a :class:`RemoteOffsetStore`, a :class:`ConcurrentDispatcher` (listener workers),
one :class:`PullLoop` task per assigned queue, and a rebalance task that runs every 20 s and at
once on NOTIFY_CONSUMER_IDS_CHANGED, on start, on subscribe and after OFFSET_ILLEGAL.

Shutdown order (``shutdown``): stop rebalancing and pulling, wait for the batches being
consumed, persist every offset, UNREGISTER_CLIENT, close the runtime.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from ...clock import SYSTEM_CLOCK, Clock
from ...errors import ClientClosedError, InvalidArgumentError, RocketMQError, TopicNotExistError
from ...protocol.bodies.consumer import ConsumerRunningInfo
from ...protocol.bodies.heartbeat import ConsumerData, SubscriptionData
from ...protocol.headers.pop import ConsumeInitMode
from ...protocol.message import (
    PROPERTY_CONSUME_START_TIMESTAMP,
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_MAX_RECONSUME_TIMES,
    PROPERTY_ORIGIN_MESSAGE_ID,
    PROPERTY_RECONSUME_TIME,
    PROPERTY_RETRY_TOPIC,
    PROPERTY_TRANSACTION_PREPARED,
    Message,
    MessageExt,
    MessageQueue,
)
from .. import rpc
from .._tasks import TaskOwner, periodic
from ..config import ClientConfig
from ..inbound import ConsumeMessageDirectlyResult, consume_directly, install_consumer_handlers
from ..routing import MASTER_ID, subscribe_queues
from ..runtime import CLIENT_INNER_PRODUCER_GROUP, ClientRuntime
from .allocate import AllocateStrategy, allocate_averagely
from .assignment import QUERY_ASSIGNMENT_TIMEOUT, query_assignment, split_assignments, strategy_name
from .common import check_consumer_group, refresh_routes, resolve_runtime
from .concurrent import ConcurrentDispatcher
from .listener import ConsumeConcurrentlyContext, MessageListenerConcurrently, MessageModel
from .local_offsets import LocalOffsetStore, NoCommitOffsetView
from .offsets import (
    ConsumeFromWhere,
    ReadOffsetType,
    RemoteOffsetStore,
    compute_pull_from_where,
    default_consume_timestamp,
)
from .orderly import (
    REBALANCE_LOCK_INTERVAL,
    UNLOCK_WAIT_CONSUME,
    MessageListenerOrderly,
    OrderlyDispatcher,
    OrderlyProcessQueue,
    OrderlyPullLoop,
    QueueLocker,
)
from .pop_push import (
    PopConsumeService,
    PopConsumption,
    PopLoop,
    PopSettings,
    check_pop_settings,
    update_pop_retry_subscription,
)
from .process_queue import FlowControlLimits, ProcessQueue
from .pull import PullLoop, PullRequest, PullSettings
from .push_controls import ConsumeMessageHook, ControlledPullLoop, PushControls, wrap_listener_with_hooks
from .rebalance import plan_rebalance
from .retry import default_delay_level, effective_max_reconsume_times, is_retry_topic, retry_topic
from .selector import MessageSelector
from .stats import zero_consume_status

if TYPE_CHECKING:
    from ..producer.producer import Producer

log = logging.getLogger(__name__)

#: rocketmq.client.rebalance.waitInterval (20 000 ms), seconds.
REBALANCE_INTERVAL: Final = 20.0
#: Send-back RPC timeout (5 000 ms), seconds.
SEND_BACK_TIMEOUT: Final = 5.0
#: DefaultMQPushConsumer.consumeTimeout (15 min), seconds.
CONSUME_TIMEOUT: Final = 15 * 60.0
#: ConsumeMessageConcurrentlyService.cleanExpireMsg: at most 16 messages per queue per round.
CLEAN_EXPIRED_MAX: Final = 16


class PushConsumer:
    """Asynchronous push consumer (CLUSTERING or BROADCASTING; concurrent or orderly listener).

    Usage::

        consumer = PushConsumer("cg", namesrv_addr="127.0.0.1:9876")
        consumer.subscribe("TopicA", "TagA || TagB")
        consumer.register_message_listener(on_messages)
        async with consumer:
            ...

    Args:
        consumer_group: the group (``consumerGroup``).
        namesrv_addr: ``;``-separated name servers (or ``config`` / ``runtime``).
        config: client settings.
        runtime: share a runtime (not closed by this consumer).
        message_model: ``CLUSTERING`` (queues shared by the group, offsets on the broker,
            failures sent back) or ``BROADCASTING`` (every consumer gets every queue, offsets
            in a local file, failures dropped with a log line, no retry topic).
        consume_from_where: start position of a group without offsets. Mirrors
            ``DefaultMQPushConsumer.consumeFromWhere`` (CONSUME_FROM_LAST_OFFSET).
        consume_timestamp: ``yyyyMMddHHmmss`` local time for CONSUME_FROM_TIMESTAMP. Mirrors
            ``DefaultMQPushConsumer.consumeTimestamp`` (30 minutes before construction).
        allocate_strategy: queue allocation. Mirrors
            ``DefaultMQPushConsumer.allocateMessageQueueStrategy`` (averagely).
        consume_thread_max: listener concurrency (tasks, and threads for plain functions).
            Mirrors ``DefaultMQPushConsumer.consumeThreadMax`` (20).
        consume_message_batch_max_size: messages per listener call. Mirrors
            ``DefaultMQPushConsumer.consumeMessageBatchMaxSize`` (1).
        pull_batch_size: Mirrors ``DefaultMQPushConsumer.pullBatchSize`` (32).
        pull_interval: seconds. Mirrors ``DefaultMQPushConsumer.pullInterval`` (0).
        pull_threshold_for_queue: Mirrors ``DefaultMQPushConsumer.pullThresholdForQueue`` (1000).
        pull_threshold_size_for_queue: MiB. Mirrors
            ``DefaultMQPushConsumer.pullThresholdSizeForQueue`` (100).
        consume_concurrently_max_span: Mirrors
            ``DefaultMQPushConsumer.consumeConcurrentlyMaxSpan`` (2000).
        max_reconsume_times: Mirrors ``DefaultMQPushConsumer.maxReconsumeTimes`` (−1 = 16).
        post_subscription_when_pull: Mirrors
            ``DefaultMQPushConsumer.postSubscriptionWhenPull`` (False).
        broker_suspend_max_time: long-poll hold, seconds
            (``BROKER_SUSPEND_MAX_TIME_MILLIS``, 15 s).
        consumer_timeout_when_suspend: long-poll RPC timeout, seconds
            (``CONSUMER_TIMEOUT_MILLIS_WHEN_SUSPEND``, 30 s).
        rebalance_interval: seconds (``rocketmq.client.rebalance.waitInterval``, 20 s).
        consume_timeout: seconds after which a message still being consumed is sent back
            (delay level 3) and released, checked every ``consume_timeout``. Mirrors
            ``DefaultMQPushConsumer.consumeTimeout`` (15 min).
        clock: wall clock.
        suspend_current_queue_time_millis: orderly: wait before a suspended batch is retried
            (``DefaultMQPushConsumer.suspendCurrentQueueTimeMillis``, 1 000 ms; [10, 30 000]).
        lock_renew_interval: orderly CLUSTERING: seconds between ``lockAll`` renewals
            (``rocketmq.client.rebalance.lockInterval``, 20 s).
        offset_store_dir: BROADCASTING: root of the local offset files
            (``rocketmq.client.localOffsetStoreDir``, ``~/.rocketmq_offsets``).
        pull_threshold_for_topic: cached messages per topic, split over its held queues; −1
            off (``pullThresholdForTopic``).
        pull_threshold_size_for_topic: cached MiB per topic, split likewise; −1 off
            (``pullThresholdSizeForTopic``).
        client_rebalance: True (default): queues are allocated by this client
            (``allocate_strategy``). False: a concurrent CLUSTERING consumer asks the broker
            (QUERY_ASSIGNMENT, 5.x) for its queues, each in PULL mode (pulled as usual) or POP
            mode (popped, acked per message: see :mod:`.pop_push`); the broker's mode for the
            group is set with :meth:`Admin.set_message_request_mode`. A topic whose first
            QUERY_ASSIGNMENT fails (a 4.x broker answers REQUEST_CODE_NOT_SUPPORTED) or times
            out three times is allocated by the client. Orderly and BROADCASTING consumers
            always allocate on the client. Mirrors ``DefaultMQPushConsumer.clientRebalance``
            (true) and ``RebalanceImpl.tryQueryAssignment`` of the Java client 5.0–5.3.1.
        pop_threshold_for_queue: POP: messages waiting for their ack above which a POP queue
            stops popping (``popThresholdForQueue``, 96).
        pop_invisible_time: POP: seconds popped messages stay invisible to the group, in
            [5, 300] (``popInvisibleTime``, 60 000 ms). A batch still unconsumed when it runs
            out is not consumed (the broker delivers it again).
        pop_batch_nums: POP: messages per POP_MESSAGE, in [1, 32] (``popBatchNums``, 32).

    Raises:
        InvalidArgumentError: bad group or settings, no name server.
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
        consume_thread_max: int = 20,
        consume_message_batch_max_size: int = 1,
        pull_batch_size: int = 32,
        pull_interval: float = 0.0,
        pull_threshold_for_queue: int = 1000,
        pull_threshold_size_for_queue: int = 100,
        consume_concurrently_max_span: int = 2000,
        max_reconsume_times: int = -1,
        post_subscription_when_pull: bool = False,
        broker_suspend_max_time: float = 15.0,
        consumer_timeout_when_suspend: float = 30.0,
        rebalance_interval: float = REBALANCE_INTERVAL,
        consume_timeout: float = CONSUME_TIMEOUT,
        clock: Clock = SYSTEM_CLOCK,
        suspend_current_queue_time_millis: int = 1000,
        lock_renew_interval: float = REBALANCE_LOCK_INTERVAL,
        offset_store_dir: str | None = None,
        pull_threshold_for_topic: int = -1,
        pull_threshold_size_for_topic: int = -1,
        client_rebalance: bool = True,
        pop_threshold_for_queue: int = 96,
        pop_invisible_time: float = 60.0,
        pop_batch_nums: int = 32,
    ) -> None:
        check_consumer_group(consumer_group)
        if not isinstance(message_model, MessageModel):
            raise InvalidArgumentError("message_model must be a MessageModel")
        if not 10 <= suspend_current_queue_time_millis <= 30_000:
            raise InvalidArgumentError("suspend_current_queue_time_millis must be in [10, 30000]")
        if not 1 <= consume_thread_max <= 1000:
            raise InvalidArgumentError("consume_thread_max must be in [1, 1000]")
        if not 1 <= consume_message_batch_max_size <= 1024:
            raise InvalidArgumentError("consume_message_batch_max_size must be in [1, 1024]")
        if not 1 <= pull_batch_size <= 1024:
            raise InvalidArgumentError("pull_batch_size must be in [1, 1024]")
        if consume_timeout <= 0:
            raise InvalidArgumentError("consume_timeout must be > 0 seconds")
        if consumer_timeout_when_suspend <= broker_suspend_max_time:
            raise InvalidArgumentError("consumer_timeout_when_suspend must exceed broker_suspend_max_time")
        check_pop_settings(pop_threshold_for_queue, pop_invisible_time, pop_batch_nums)
        runtime, self._owns_runtime = resolve_runtime("PushConsumer", namesrv_addr, config, runtime, clock)
        self.group = consumer_group
        self.message_model = message_model
        self.consume_from_where = consume_from_where
        self.consume_timestamp = consume_timestamp or default_consume_timestamp(
            datetime.fromtimestamp(clock.now_ms() / 1000)
        )
        self.allocate_strategy = allocate_strategy
        self.consume_thread_max = consume_thread_max
        self.consume_message_batch_max_size = consume_message_batch_max_size
        self.max_reconsume_times = max_reconsume_times
        self.rebalance_interval = rebalance_interval
        self.consume_timeout = consume_timeout
        self.suspend_current_queue_time_millis = suspend_current_queue_time_millis
        self.lock_renew_interval = lock_renew_interval
        self.offset_store_dir = offset_store_dir
        self.client_rebalance = client_rebalance
        self.orderly = False
        self._runtime = runtime
        self._clock = clock
        self._settings = PullSettings(
            pull_batch_size=pull_batch_size,
            pull_interval=pull_interval,
            broker_suspend_max_time=broker_suspend_max_time,
            consumer_timeout_when_suspend=consumer_timeout_when_suspend,
            pull_time_delay_when_exception=runtime.config.pull_time_delay_when_exception,
            post_subscription_when_pull=post_subscription_when_pull,
            limits=FlowControlLimits(
                pull_threshold_for_queue, pull_threshold_size_for_queue, consume_concurrently_max_span
            ),
        )
        self._pop_settings = PopSettings(
            pop_threshold_for_queue=pop_threshold_for_queue,
            pop_invisible_time=pop_invisible_time,
            pop_batch_nums=pop_batch_nums,
            broker_suspend_max_time=broker_suspend_max_time,
            pull_interval=pull_interval,
            pull_time_delay_when_exception=runtime.config.pull_time_delay_when_exception,
            max_reconsume_times=max_reconsume_times,
        )
        self._pop: PopConsumption | None = None
        self._subscriptions: dict[str, SubscriptionData] = {}
        self._listener: MessageListenerConcurrently | MessageListenerOrderly | None = None
        self._queues: dict[MessageQueue, PullRequest] = {}
        self._offset_store: RemoteOffsetStore | LocalOffsetStore
        if message_model is MessageModel.BROADCASTING:
            self._offset_store = LocalOffsetStore(runtime.client_id, consumer_group, offset_store_dir)
        else:
            self._offset_store = RemoteOffsetStore(self._query_offset, self._commit_offset)
        self._locker = QueueLocker(runtime, consumer_group)
        self._controls = PushControls(
            pull_threshold_for_topic=pull_threshold_for_topic,
            pull_threshold_size_for_topic=pull_threshold_size_for_topic,
            queues_of_topic=lambda t: sum(1 for mq, r in self._queues.items() if mq.topic == t and not r.pq.dropped),
        )
        self._hooks: list[ConsumeMessageHook] = []
        self._tasks = TaskOwner(f"consumer[{consumer_group}]")
        self._rebalance_wake = asyncio.Event()
        self._rebalance_mutex = asyncio.Lock()
        self._start_ms = 0
        self._sub_changed = False
        self._dispatcher: ConcurrentDispatcher | OrderlyDispatcher | None = None
        self._pull_loop: PullLoop | None = None
        self._inner_producer: Producer | None = None
        self._control_tasks: list[asyncio.Task[None]] = []
        self._started = False
        self._closed = False
        self.rebalance_count = 0

    # ------------------------------------------------------------------ configuration

    @property
    def runtime(self) -> ClientRuntime:
        """The client runtime used."""
        return self._runtime

    @property
    def client_id(self) -> str:
        """This consumer's client id (``ip@instance``)."""
        return self._runtime.client_id

    def subscribe(self, topic: str, expression: str | MessageSelector = "*", *, expression_type: str = "TAG") -> None:
        """Subscribe to ``topic`` with a TAG expression (``"*"`` or ``"a || b"``) or an SQL92 selector.

        ``subscribe(t, "a > 5", expression_type="SQL92")`` and
        ``subscribe(t, MessageSelector.by_sql("a > 5"))`` are equivalent (Java
        ``subscribe(topic, MessageSelector)``). SQL92 is evaluated by the broker only (no
        client-side re-filtering); it needs ``enablePropertyFilter=true`` there, which
        :meth:`start` checks with CHECK_CLIENT_CONFIG. After :meth:`start`, triggers a
        heartbeat and a rebalance.

        Raises:
            InvalidArgumentError: empty topic or unparsable/empty expression; ClientClosedError.
        """
        if self._closed:
            raise ClientClosedError("consumer is closed")
        if not topic:
            raise InvalidArgumentError("topic must not be empty")
        if isinstance(expression, MessageSelector):
            expression_type = expression.expression_type
            expression = expression.expression
        self._subscriptions[topic] = SubscriptionData.build(
            topic, expression, expression_type, sub_version=self._clock.now_ms()
        )
        self._on_subscription_changed()

    def unsubscribe(self, topic: str) -> None:
        """Stop consuming ``topic`` (its queues are dropped at the next rebalance)."""
        if self._subscriptions.pop(topic, None) is not None:
            self._on_subscription_changed()

    def register_message_listener(self, listener: Any, *, orderly: bool | None = None) -> Any:
        """Set the listener (``async def`` or plain function); usable as a decorator.

        A concurrent listener gets ``(msgs, ConsumeConcurrentlyContext)`` and returns a
        ``ConsumeConcurrentlyStatus``. An orderly listener — a :class:`MessageListenerOrderly`
        or any function registered with ``orderly=True`` — gets ``(msgs,
        ConsumeOrderlyContext)`` and returns a ``ConsumeOrderlyStatus``; its queues are locked
        on the broker and consumed one batch at a time in offset order
        (:mod:`rocketpipe.client.consumer.orderly`).

        Raises:
            InvalidArgumentError: called after start.
        """
        if self._started:
            raise InvalidArgumentError("register the listener before start()")
        self.orderly = isinstance(listener, MessageListenerOrderly) if orderly is None else orderly
        self._listener = listener
        return listener

    def subscriptions(self) -> dict[str, str]:
        """Return topic → expression of the user's subscriptions (retry topics excluded)."""
        return {t: s.sub_string for t, s in self._subscriptions.items() if not is_retry_topic(t)}

    def assigned_queues(self) -> list[MessageQueue]:
        """Return the queues this consumer currently pulls or pops (sorted).

        A POP assignment's queue may have ``queue_id`` −1 (every queue of the topic on that
        broker, shared with the group's other consumers). Mirrors
        ``RebalanceImpl.getWorkingMessageQueue``.
        """
        held = {mq for mq, r in self._queues.items() if not r.pq.dropped}
        if self._pop is not None:
            held.update(self._pop.working_queues())
        return sorted(held)

    def pop_queues(self) -> list[MessageQueue]:
        """Return the queues this consumer consumes in POP mode (sorted; empty in PULL mode)."""
        return self._pop.working_queues() if self._pop is not None else []

    @property
    def uses_broker_rebalance(self) -> bool:
        """True when topics may be assigned by the broker (``not clientRebalance(topic)``).

        Mirrors ``RebalancePushImpl.clientRebalance``: False for ``client_rebalance=True``,
        orderly listeners and BROADCASTING.
        """
        return not self.client_rebalance and not self.orderly and self.clustering

    def committed_offsets(self) -> dict[MessageQueue, int]:
        """Return the in-memory "next offset to consume" per queue."""
        return self._offset_store.snapshot()

    # ------------------------------------------------------------------ controls

    def suspend(self) -> None:
        """Pause pulling (``DefaultMQPushConsumer.suspend``); cached batches still complete."""
        self._controls.paused = True

    def resume(self) -> None:
        """Resume pulling after :meth:`suspend` (``resume``); pulls restart within 1 s."""
        self._controls.paused = False

    @property
    def paused(self) -> bool:
        """True between :meth:`suspend` and :meth:`resume`."""
        return self._controls.paused

    @property
    def controls(self) -> PushControls:
        """The live controls (pause flag, per-topic limits, flow-control counter)."""
        return self._controls

    def register_consume_message_hook(self, hook: ConsumeMessageHook) -> None:
        """Add a hook run before / after every listener call (``registerConsumeMessageHook``).

        Raises:
            InvalidArgumentError: called after start.
        """
        if self._started:
            raise InvalidArgumentError("register hooks before start()")
        self._hooks.append(hook)

    @property
    def clustering(self) -> bool:
        """True in CLUSTERING mode (queues shared by the group)."""
        return self.message_model is MessageModel.CLUSTERING

    def locked_queues(self) -> list[MessageQueue]:
        """Return the held queues whose broker lock this client holds (orderly mode; sorted)."""
        return sorted(
            mq
            for mq, r in self._queues.items()
            if isinstance(r.pq, OrderlyProcessQueue) and r.pq.locked and not r.pq.dropped
        )

    def _on_subscription_changed(self) -> None:
        if self._started:
            self._sub_changed = True
            self._rebalance_wake.set()

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Start heartbeats, rebalancing, pulling and the listener workers.

        Returns once the first heartbeat and rebalance have run.

        Raises:
            InvalidArgumentError: no listener or no subscription.
            BrokerError: a broker rejected a non-TAG (SQL92) subscription on CHECK_CLIENT_CONFIG
                (SYSTEM_ERROR when its ``enablePropertyFilter`` is off, SUBSCRIPTION_PARSE_FAILED
                for an invalid selector); the consumer is closed before this is raised.
            ClientClosedError: already closed.
        """
        if self._closed:
            raise ClientClosedError("consumer is closed")
        if self._started:
            return
        if self._listener is None:
            raise InvalidArgumentError("register_message_listener() before start()")
        if not self._subscriptions:
            raise InvalidArgumentError("subscribe() to at least one topic before start()")
        if self.clustering:
            self._subscriptions[retry_topic(self.group)] = SubscriptionData.build(
                retry_topic(self.group), "*", sub_version=self._clock.now_ms()
            )
        self._started = True
        rt = self._runtime
        rt.register_consumer(self)
        install_consumer_handlers(rt)
        self._start_ms = self._clock.now_ms()
        await rt.start()
        await self._tasks.start()
        pull_store: Any = self._offset_store
        if isinstance(self._offset_store, LocalOffsetStore):
            await asyncio.to_thread(self._offset_store.load)
            pull_store = NoCommitOffsetView(self._offset_store)
        listener = wrap_listener_with_hooks(self._listener, self._hooks, self.group, orderly=self.orderly)
        if self.orderly:
            self._dispatcher = OrderlyDispatcher(
                self.group,
                listener,
                lambda mq, off: self._offset_store.update_offset(mq, off, increase_only=False),
                self._send_back_orderly,
                self._lock_one if self.clustering else None,
                self._tasks,
                consume_thread_max=self.consume_thread_max,
                consume_message_batch_max_size=self.consume_message_batch_max_size,
                suspend_current_queue_time_millis=self.suspend_current_queue_time_millis,
                max_reconsume_times=self.max_reconsume_times,
                now_ms=self._clock.now_ms,
            )
            # Java skips the span check for orderly consumers.
            lim = self._settings.limits
            settings = dataclasses.replace(
                self._settings,
                limits=FlowControlLimits(lim.pull_threshold_for_queue, lim.pull_threshold_size_for_queue, 2**62),
            )
            self._pull_loop = OrderlyPullLoop(
                rt,
                self.group,
                settings,
                self._subscriptions.get,
                pull_store,
                self._dispatcher,
                self._after_offset_illegal,
                read_start_offset=self._compute_start_offset,
                clustering=self.clustering,
                controls=self._controls,
            )
        else:
            self._dispatcher = ConcurrentDispatcher(
                self.group,
                listener,
                self._offset_store,  # type: ignore[arg-type]
                self._send_message_back,
                self._tasks,
                consume_thread_max=self.consume_thread_max,
                consume_message_batch_max_size=self.consume_message_batch_max_size,
                now_ms=self._clock.now_ms,
            )
            self._pull_loop = ControlledPullLoop(
                rt,
                self.group,
                self._settings,
                self._subscriptions.get,
                pull_store,
                self._dispatcher,
                self._after_offset_illegal,
                controls=self._controls,
            )
        self._dispatcher.start()
        if self.uses_broker_rebalance:
            service = PopConsumeService(
                rt,
                self.group,
                listener,
                self._tasks,
                consume_thread_max=self.consume_thread_max,
                consume_message_batch_max_size=self.consume_message_batch_max_size,
                max_reconsume_times=self.max_reconsume_times,
                now_ms=self._clock.now_ms,
                stats=getattr(self._dispatcher, "stats", None),
            )
            pop_loop = PopLoop(
                rt, self.group, self._pop_settings, self._subscriptions.get, service, self._controls, self._clock.now_ms
            )
            self._pop = PopConsumption(pop_loop, service, self._tasks)
            service.start()
        await self._refresh_routes()
        try:
            await self._check_client_in_broker()
        except RocketMQError:
            await self.close()
            raise
        await rt.send_heartbeat_to_all_brokers()
        await self.rebalance()
        self._control_tasks = [
            self._tasks.spawn(self._rebalance_loop(), "rebalance"),
            self._tasks.spawn(
                periodic(
                    "clean-expired",
                    self.consume_timeout,
                    self.clean_expired_messages,
                    initial_delay=self.consume_timeout,
                ),
                "clean-expired",
            ),
        ]
        if self.orderly and self.clustering:
            self._control_tasks.append(
                self._tasks.spawn(
                    periodic(
                        "lock-all",
                        self.lock_renew_interval,
                        self._lock_all,
                        initial_delay=min(1.0, self.lock_renew_interval),
                    ),
                    "lock-all",
                )
            )

    async def close(self) -> None:
        """Shut down cleanly; idempotent.

        Stops rebalancing and pulling, waits for the batches being consumed, persists every
        offset (acknowledged), sends UNREGISTER_CLIENT, and closes the runtime if owned.
        """
        if self._closed:
            return
        self._closed = True
        if not self._started:
            if self._owns_runtime:
                await self._runtime.close()
            return
        for t in self._control_tasks:
            t.cancel()
        if self._control_tasks:
            await asyncio.wait(self._control_tasks)
        for req in list(self._queues.values()):
            if req.task is not None:
                req.task.cancel()
        if self._pop is not None:
            self._pop.stop_popping()  # nothing new is popped while the in-flight batches finish
        if self._dispatcher is not None:
            await self._dispatcher.close()
        if self._pop is not None:
            await self._pop.close()
        held = list(self._queues)
        for mq in held:
            try:
                await self._offset_store.persist(mq, oneway=False)
            except RocketMQError as exc:
                log.warning("persist offset at shutdown failed group=%s mq=%s err=%s", self.group, mq, exc)
        for req in self._queues.values():
            req.pq.dropped = True
        if self.orderly and self.clustering and (held or self._locker.maybe_held):
            await self._locker.unlock(set(held) | self._locker.maybe_held)
        self._queues.clear()
        await self._tasks.close()
        self._runtime.unregister_consumer(self.group)
        await self._runtime.unregister_client(consumer_group=self.group)
        if self._inner_producer is not None:
            await self._inner_producer.close()
        if self._owns_runtime:
            await self._runtime.close()

    async def __aenter__(self) -> PushConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------------ runtime hooks

    def consumer_data(self) -> ConsumerData:
        """Return this consumer's heartbeat ``ConsumerData``."""
        return ConsumerData(
            group_name=self.group,
            consume_type="CONSUME_PASSIVELY",
            message_model=self.message_model.value,
            consume_from_where=self.consume_from_where.value,
            subscription_data_set=list(self._subscriptions.values()),
            unit_mode=False,
        )

    def subscribed_topics(self) -> list[str]:
        """Return every subscribed topic, the retry topic included."""
        return list(self._subscriptions)

    def on_consumer_ids_changed(self) -> None:
        """Rebalance now (NOTIFY_CONSUMER_IDS_CHANGED)."""
        self._rebalance_wake.set()

    async def persist_offsets(self) -> None:
        """Persist the offsets of the held queues (one-way), forget the others."""
        await self._offset_store.persist_all([mq for mq, r in self._queues.items() if not r.pq.dropped], oneway=True)

    async def clean_expired_messages(self) -> None:
        """Send back messages consumed for longer than ``consume_timeout`` (delay level 3).

        Mirrors ``ProcessQueue.cleanExpiredMsg``: per queue, up to 16 times, if the oldest cached
        message started consuming more than ``consume_timeout`` ago, send it back and drop it
        from the cache (a late result of the listener for it is then ignored).
        """
        if self.orderly:
            return  # Java: cleanExpireMsg does nothing for orderly consumers
        limit_ms = int(self.consume_timeout * 1000)
        for req in list(self._queues.values()):
            for _ in range(CLEAN_EXPIRED_MAX):
                m = req.pq.first_message()
                if m is None or req.pq.dropped:
                    break
                started = m.properties.get(PROPERTY_CONSUME_START_TIMESTAMP)
                if not started or self._clock.now_ms() - int(started) <= limit_ms:
                    break
                log.warning(
                    "consume timeout, sending back group=%s mq=%s offset=%d", self.group, req.mq, m.queue_offset
                )
                if not await self.send_message_back(m, 3):
                    break
                req.pq.remove_messages([m])

    # ------------------------------------------------------------------ broker -> client requests

    async def reset_offset(self, topic: str, offset_table: dict[MessageQueue, int]) -> None:
        """Move the consume offsets of held queues of ``topic`` (RESET_CONSUMER_CLIENT_OFFSET).

        Mirrors ``MQClientInstance.resetOffset``: the affected process queues are dropped (the
        batch in flight of an orderly queue is awaited), the new offsets are stored and
        persisted, and the next rebalance — started at once — pulls from them. Queues of the
        table this consumer does not hold are left to their owners.
        """
        targets = {mq: off for mq, off in offset_table.items() if mq.topic == topic}
        async with self._rebalance_mutex:
            changed: list[MessageQueue] = []
            for mq, off in sorted(targets.items()):
                req = self._queues.get(mq)
                if req is None:
                    continue
                await self._drop_queue(mq)
                if isinstance(req.pq, OrderlyProcessQueue):
                    async with req.pq.consume_lock:  # after the batch in flight and the drop
                        pass
                req.pq.clear()
                self._offset_store.update_offset(mq, off, increase_only=False)
                try:
                    await self._offset_store.persist(mq, oneway=False)
                except RocketMQError as exc:
                    log.warning("persist reset offset failed group=%s mq=%s err=%s", self.group, mq, exc)
                self._offset_store.remove(mq)
                changed.append(mq)
            log.info("reset offsets group=%s topic=%s queues=%s", self.group, topic, changed)
        self._rebalance_wake.set()

    def running_info(self) -> ConsumerRunningInfo:
        """Return the ``ConsumerRunningInfo`` of GET_CONSUMER_RUNNING_INFO.

        Mirrors ``DefaultMQPushConsumerImpl.consumerRunningInfo``: settings as properties (Java
        field names) plus ``PROP_CONSUMEORDERLY``, ``PROP_THREADPOOL_CORE_SIZE``,
        ``PROP_CONSUMER_START_TIMESTAMP`` and ``PROP_CONSUME_TYPE``; the subscriptions; one
        ``ProcessQueueInfo`` per held queue; a ``ConsumeStatus`` per subscribed topic.
        """
        s = self._settings
        cfg = self._runtime.config
        props = {
            "consumerGroup": self.group,
            "messageModel": self.message_model.value,
            "consumeFromWhere": self.consume_from_where.value,
            "consumeTimestamp": self.consume_timestamp,
            "consumeThreadMin": str(self.consume_thread_max),
            "consumeThreadMax": str(self.consume_thread_max),
            "consumeMessageBatchMaxSize": str(self.consume_message_batch_max_size),
            "pullBatchSize": str(s.pull_batch_size),
            "pullInterval": str(int(s.pull_interval * 1000)),
            "pullThresholdForQueue": str(s.limits.pull_threshold_for_queue),
            "pullThresholdSizeForQueue": str(s.limits.pull_threshold_size_for_queue),
            "consumeConcurrentlyMaxSpan": str(s.limits.consume_concurrently_max_span),
            "maxReconsumeTimes": str(self.max_reconsume_times),
            "suspendCurrentQueueTimeMillis": str(self.suspend_current_queue_time_millis),
            "consumeTimeout": str(int(self.consume_timeout // 60)),
            "postSubscriptionWhenPull": str(s.post_subscription_when_pull).lower(),
            "allocateMessageQueueStrategy": getattr(self.allocate_strategy, "__name__", repr(self.allocate_strategy)),
            "namesrvAddr": cfg.namesrv_addr,
            "clientIP": cfg.client_ip,
            "instanceName": cfg.instance_name,
            "unitMode": "false",
            "clientRebalance": str(self.client_rebalance).lower(),
            "popThresholdForQueue": str(self._pop_settings.pop_threshold_for_queue),
            "popInvisibleTime": str(round(self._pop_settings.pop_invisible_time * 1000)),
            "popBatchNums": str(self._pop_settings.pop_batch_nums),
            "PROP_CONSUMEORDERLY": str(self.orderly).lower(),
            "PROP_THREADPOOL_CORE_SIZE": str(self.consume_thread_max),
            "PROP_CONSUMER_START_TIMESTAMP": str(self._start_ms),
            "PROP_CONSUME_TYPE": "CONSUME_PASSIVELY",
        }
        loop_now = asyncio.get_running_loop().time()
        now_ms = self._clock.now_ms()

        def wall(t: float) -> int:
            return int(now_ms - (loop_now - t) * 1000)

        mq_table: dict[MessageQueue, dict[str, Any]] = {}
        for mq, req in sorted(self._queues.items()):
            pq = req.pq
            first = pq.first_offset()
            orderly_pq = pq if isinstance(pq, OrderlyProcessQueue) else None
            mq_table[mq] = {
                "cachedMsgCount": pq.msg_count,
                "cachedMsgMaxOffset": pq.queue_offset_max if pq.msg_count else 0,
                "cachedMsgMinOffset": first if first is not None else 0,
                "cachedMsgSizeInMiB": pq.msg_size // (1024 * 1024),
                "commitOffset": self._offset_store.read_memory(mq),
                "droped": pq.dropped,
                "lastConsumeTimestamp": wall(pq.last_consume_time),
                "lastLockTimestamp": wall(orderly_pq.last_lock_time) if orderly_pq else 0,
                "lastPullTimestamp": wall(pq.last_pull_time),
                "locked": bool(orderly_pq and orderly_pq.locked),
                "transactionMsgCount": 0,
                "transactionMsgMaxOffset": 0,
                "transactionMsgMinOffset": 0,
                "tryUnlockTimes": orderly_pq.try_unlock_times if orderly_pq else 0,
            }
        stats = getattr(self._dispatcher, "stats", None)
        status = {
            t: stats.consume_status(self.group, t) if stats is not None else zero_consume_status()
            for t in sorted(self._subscriptions)
        }
        return ConsumerRunningInfo(
            properties=props,
            subscription_set=list(self._subscriptions.values()),
            mq_table=mq_table,
            status_table=status,
        )

    async def consume_message_directly(self, msg: MessageExt, broker_name: str | None) -> ConsumeMessageDirectlyResult:
        """Give one message to the listener outside the normal flow (CONSUME_MESSAGE_DIRECTLY).

        No offset moves and nothing is sent back, as in Java's ``consumeMessageDirectly``.
        """
        if broker_name:
            msg.broker_name = broker_name
        from .retry import restore_retry_topic

        restore_retry_topic(msg, self.group)
        mq = MessageQueue(msg.topic, msg.broker_name or broker_name or "", msg.queue_id)
        return await consume_directly(self._listener, self.orderly, msg, mq)

    # ------------------------------------------------------------------ rebalance

    async def _rebalance_loop(self) -> None:
        interval = self.rebalance_interval
        await periodic(
            f"rebalance group={self.group}",
            interval,
            self.rebalance,
            initial_delay=interval,
            wake=self._rebalance_wake,
            logger=log,
        )

    async def _check_client_in_broker(self) -> None:
        """CHECK_CLIENT_CONFIG for each non-TAG subscription (``MQClientInstance.checkClientInBroker``).

        Asks the master of one broker serving the topic (Java assumes every broker of a
        cluster shares the configuration); topics without a known route are skipped.

        Raises:
            BrokerError: the broker rejects the subscription (SYSTEM_ERROR: filter type not
                enabled; SUBSCRIPTION_PARSE_FAILED: the expression does not compile).
        """
        rt = self._runtime
        for sd in list(self._subscriptions.values()):
            if sd.expression_type in ("", "TAG"):
                continue
            route = rt.cached_route(sd.topic)
            addr = None
            for bd in sorted(route.broker_datas or (), key=lambda d: d.broker_name) if route is not None else ():
                addr = rt.find_broker_addr(bd.broker_name)
                if addr is not None:
                    break
            if addr is None:
                continue
            await rpc.check_client_config(rt.pool, addr, rt.client_id, self.group, sd, rt.config.request_timeout)

    async def _refresh_routes(self) -> None:
        await refresh_routes(self._runtime, list(self._subscriptions), log)

    async def rebalance(self) -> None:
        """Run one rebalance round over every subscribed topic (``doRebalance``)."""
        if self._closed:
            return
        async with self._rebalance_mutex:
            await self._rebalance_round()

    async def _rebalance_round(self) -> None:
        self.rebalance_count += 1
        if self._sub_changed:
            self._sub_changed = False
            await self._refresh_routes()
            await self._runtime.send_heartbeat_to_all_brokers()
        for topic in list(self._subscriptions):
            try:
                await self._rebalance_topic(topic)
            except RocketMQError as exc:
                log.warning("rebalance failed group=%s topic=%s err=%s", self.group, topic, exc)
        for mq in [mq for mq in self._queues if mq.topic not in self._subscriptions]:
            await self._drop_queue(mq)
        if self._pop is not None:
            self._pop.drop_not_subscribed(self._subscriptions)

    async def _rebalance_topic(self, topic: str) -> None:
        rt = self._runtime
        if self._pop is not None:
            try:
                if await self._pop.probe.use_broker(topic, lambda timeout: self._query_assignment(topic, timeout)):
                    await self._rebalance_topic_by_broker(topic)
                    return
            except TopicNotExistError:
                log.debug("rebalance: no route topic=%s", topic)
                return
        route = rt.cached_route(topic)
        if route is None:
            try:
                route = await rt.fetch_route(topic)
            except TopicNotExistError:
                log.debug("rebalance: no route topic=%s", topic)
                return
        mq_all = subscribe_queues(topic, route)
        addrs = sorted({a for bd in route.broker_datas for bid, a in bd.broker_addrs.items() if int(bid) == MASTER_ID})
        if not mq_all:
            return
        if self.clustering:
            if not addrs:
                return
            cids = await rpc.get_consumer_id_list(rt.pool, random.choice(addrs), self.group, rt.config.request_timeout)
            if not cids:
                return
            allocated = self.allocate_strategy(self.group, rt.client_id, sorted(mq_all), sorted(cids))
        else:
            allocated = sorted(mq_all)  # BROADCASTING: every queue (RebalanceImpl.rebalanceByTopic)
        changed, new = await self._update_pull_queues(topic, allocated)
        await self._finish_rebalance(topic, changed, new)

    async def _query_assignment(self, topic: str, timeout: float) -> Any:
        rt = self._runtime
        return await query_assignment(
            rt, topic, self.group, strategy_name(self.allocate_strategy), self.message_model.value, timeout
        )

    async def _rebalance_topic_by_broker(self, topic: str) -> None:
        """``getRebalanceResultFromBroker`` + ``updateMessageQueueAssignment`` for one topic.

        A failed QUERY_ASSIGNMENT raises (logged by the round); a ``null`` answer (no valid
        assignment) keeps the held queues.
        """
        assert self._pop is not None
        assignments = await self._query_assignment(topic, QUERY_ASSIGNMENT_TIMEOUT)
        if assignments is None:
            log.info("rebalance: broker has no assignment group=%s topic=%s", self.group, topic)
            return
        pull_set, pop_set = split_assignments(assignments)
        sub_changed = update_pop_retry_subscription(
            topic, self.group, bool(pull_set), bool(pop_set), self._subscriptions, self._clock.now_ms()
        )
        changed, new = await self._update_pull_queues(topic, sorted(pull_set))
        init_mode = (
            ConsumeInitMode.MIN
            if self.consume_from_where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
            else ConsumeInitMode.MAX
        )
        pop_changed, new_pop = self._pop.update_queues(topic, pop_set, asyncio.get_running_loop().time(), init_mode)
        await self._finish_rebalance(topic, changed or pop_changed or sub_changed, new)
        if not self._closed:
            self._pop.start(new_pop)

    async def _update_pull_queues(self, topic: str, allocated: list[MessageQueue]) -> tuple[bool, list[PullRequest]]:
        """Drop / create the pull queues of ``topic`` (``updateProcessQueueTableInRebalance``).

        Returns:
            (changed, new pull requests — not started yet).
        """
        loop = asyncio.get_running_loop()
        plan = plan_rebalance(topic, {mq: r.pq for mq, r in self._queues.items()}, allocated, loop.time())
        for mq in plan.to_drop:
            await self._drop_queue(mq)
        to_add = plan.to_add
        if self.orderly and self.clustering and to_add:
            granted = await self._locker.lock(to_add)
            refused = [mq for mq in to_add if mq not in granted]
            if refused:
                log.info("rebalance: lock refused, retry soon group=%s mqs=%s", self.group, refused)
                self._rebalance_later(0.5)
            to_add = [mq for mq in to_add if mq in granted]
        new: list[PullRequest] = []
        for mq in to_add:
            self._offset_store.remove(mq)
            offset = await self._compute_start_offset(mq)
            if offset < 0:
                log.warning("rebalance: no start offset, skipped group=%s mq=%s", self.group, mq)
                continue
            log.info("rebalance: add queue group=%s mq=%s offset=%d", self.group, mq, offset)
            pq: ProcessQueue
            if self.orderly:
                pq = OrderlyProcessQueue(loop.time())
                if self.clustering:
                    pq.mark_locked(loop.time())  # granted just above
            else:
                pq = ProcessQueue(loop.time())
            new.append(PullRequest(mq=mq, pq=pq, next_offset=offset))
        return bool(plan.to_drop or new), new

    async def _finish_rebalance(self, topic: str, changed: bool, new: list[PullRequest]) -> None:
        """``messageQueueChanged``: new subscription version + heartbeat; then start the pulls."""
        if changed:
            sub = self._subscriptions.get(topic)
            if sub is not None:
                sub.sub_version = self._clock.now_ms()
            await self._runtime.send_heartbeat_to_all_brokers()
        if self._closed:
            return
        assert self._pull_loop is not None
        for req in new:
            self._queues[req.mq] = req
            req.task = self._tasks.spawn(
                self._pull_loop.run(req), f"pull-{req.mq.topic}-{req.mq.broker_name}-{req.mq.queue_id}"
            )

    async def _compute_start_offset(self, mq: MessageQueue) -> int:
        """``computePullFromWhere`` of one queue (offset read from the store); −1: not now."""
        return await compute_pull_from_where(
            self.consume_from_where,
            mq,
            read_store_offset=lambda q: self._offset_store.read_offset(q, ReadOffsetType.READ_FROM_STORE),
            max_offset=self._max_offset,
            search_offset=self._search_offset,
            consume_timestamp=self.consume_timestamp,
        )

    def _rebalance_later(self, delay: float) -> None:
        async def later() -> None:
            await asyncio.sleep(delay)
            self._rebalance_wake.set()

        if not self._closed:
            self._tasks.spawn(later(), "rebalance-later")

    async def _lock_one(self, mq: MessageQueue) -> bool:
        """``lockOneMQ`` for a queue the consume service found unlocked."""
        ok = mq in await self._locker.lock([mq])
        req = self._queues.get(mq)
        if ok and req is not None and isinstance(req.pq, OrderlyProcessQueue):
            req.pq.mark_locked(asyncio.get_running_loop().time())
        return ok

    async def _lock_all(self) -> None:
        """Renew every held lock (``lockAll``, every ``lock_renew_interval``)."""
        held = {mq: r.pq for mq, r in self._queues.items() if isinstance(r.pq, OrderlyProcessQueue)}
        if held:
            await self._locker.lock_all(held, asyncio.get_running_loop().time)

    async def _finish_orderly_drop(self, mq: MessageQueue, pq: OrderlyProcessQueue) -> None:
        """After the batch in flight: persist the offset, forget it, then UNLOCK_BATCH_MQ."""
        async with pq.consume_lock:
            try:
                await self._offset_store.persist(mq, oneway=False)
            except RocketMQError as exc:
                log.warning("persist offset of dropped queue failed group=%s mq=%s err=%s", self.group, mq, exc)
            if mq not in self._queues:
                self._offset_store.remove(mq)
            await self._locker.unlock([mq])
        log.info("rebalance: drop orderly queue (unlocked) group=%s mq=%s", self.group, mq)

    async def _drop_queue(self, mq: MessageQueue) -> None:
        req = self._queues.pop(mq, None)
        if req is None:
            return
        req.pq.dropped = True
        if req.task is not None and req.task is not asyncio.current_task():
            req.task.cancel()
        if self.orderly and self.clustering and isinstance(req.pq, OrderlyProcessQueue) and not self._closed:
            # removeUnnecessaryMessageQueue: wait (up to 1 s) for the batch in flight; if it is
            # still running, finish in the background once it completes.
            fin = self._tasks.spawn(self._finish_orderly_drop(mq, req.pq), "orderly-drop")
            done, _ = await asyncio.wait({fin}, timeout=UNLOCK_WAIT_CONSUME)
            if not done:
                req.pq.try_unlock_times += 1
                log.warning("rebalance: batch still consuming, unlock postponed group=%s mq=%s", self.group, mq)
            return
        try:
            await self._offset_store.persist(mq, oneway=False)
        except RocketMQError as exc:
            log.warning("persist offset of dropped queue failed group=%s mq=%s err=%s", self.group, mq, exc)
        self._offset_store.remove(mq)
        log.info("rebalance: drop queue group=%s mq=%s", self.group, mq)

    async def _after_offset_illegal(self, req: PullRequest) -> None:
        try:
            await self._offset_store.persist(req.mq, oneway=False)
        except RocketMQError as exc:
            log.warning("persist corrected offset failed group=%s mq=%s err=%s", self.group, req.mq, exc)
        if self._queues.get(req.mq) is req:
            del self._queues[req.mq]
        self._offset_store.remove(req.mq)
        self._rebalance_wake.set()

    # ------------------------------------------------------------------ broker calls

    async def _query_offset(self, mq: MessageQueue) -> int:
        rt = self._runtime
        addr = await rt.find_master_addr(mq.broker_name, mq.topic)
        return await rpc.query_consumer_offset(rt.pool, addr, self.group, mq, rt.config.request_timeout)

    async def _commit_offset(self, mq: MessageQueue, offset: int, oneway: bool) -> None:
        rt = self._runtime
        addr = await rt.find_master_addr(mq.broker_name, mq.topic)
        await rpc.update_consumer_offset(rt.pool, addr, self.group, mq, offset, SEND_BACK_TIMEOUT, oneway=oneway)

    async def _max_offset(self, mq: MessageQueue) -> int:
        rt = self._runtime
        addr = await rt.find_master_addr(mq.broker_name, mq.topic)
        return await rpc.get_max_offset(rt.pool, addr, mq, rt.config.request_timeout)

    async def _search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        rt = self._runtime
        addr = await rt.find_master_addr(mq.broker_name, mq.topic)
        return await rpc.search_offset(rt.pool, addr, mq, timestamp_ms, rt.config.request_timeout)

    async def _send_message_back(self, msg: MessageExt, ctx: ConsumeConcurrentlyContext) -> bool:
        if not self.clustering:
            # ConsumeMessageConcurrentlyService: BROADCASTING failures are dropped, not sent back.
            log.warning("BROADCASTING, the message consume failed, drop it group=%s msg=%s", self.group, msg.msg_id)
            return True
        return await self.send_message_back(msg, ctx.delay_level_when_next_consume)

    async def _send_back_orderly(self, msg: MessageExt, max_times: int) -> bool:
        """Orderly ``sendMessageBack``: a plain send to ``%RETRY%<group>``, delay ``3 + count``.

        ``RECONSUME_TIME`` is sent as the local count + 1 (> max): a 4.9 broker dead-letters on
        ``>=``, a 5.x broker on ``>`` or on the group's live queue lock, a broker without the
        lock check (the embedded one) on ``>`` — every one stores it in ``%DLQ%<group>``.
        """
        if not self.clustering:
            log.warning(
                "BROADCASTING orderly: max reconsume times reached, dropping group=%s msg=%s", self.group, msg.msg_id
            )
            return True
        try:
            from ..producer.producer import Producer

            if self._inner_producer is None:
                self._inner_producer = Producer(CLIENT_INNER_PRODUCER_GROUP, runtime=self._runtime)
            props = dict(msg.properties)
            props.setdefault(PROPERTY_ORIGIN_MESSAGE_ID, msg.msg_id)
            props[PROPERTY_RETRY_TOPIC] = msg.topic
            props[PROPERTY_RECONSUME_TIME] = str(msg.reconsume_times + 1)
            props[PROPERTY_MAX_RECONSUME_TIMES] = str(max_times)
            props.pop(PROPERTY_TRANSACTION_PREPARED, None)
            props[PROPERTY_DELAY_TIME_LEVEL] = str(default_delay_level(msg.reconsume_times))
            retry = Message(topic=retry_topic(self.group), body=msg.body, flag=msg.flag, properties=props)
            await self._inner_producer.send(retry)
            return True
        except RocketMQError as exc:
            log.warning("orderly send back failed group=%s msg=%s err=%s", self.group, msg.msg_id, exc)
            return False

    async def send_message_back(self, msg: MessageExt, delay_level: int = 0) -> bool:
        """CONSUMER_SEND_MSG_BACK, falling back to a re-send to ``%RETRY%<group>``.

        Mirrors ``DefaultMQPushConsumerImpl.sendMessageBack``.

        Args:
            msg: a message this consumer received.
            delay_level: 0 = broker decides (``3 + reconsume_times``); < 0 = DLQ.

        Returns:
            False only when both the send-back and the re-send failed (errors are logged).
        """
        rt = self._runtime
        max_times = effective_max_reconsume_times(self.max_reconsume_times)
        try:
            addr = rt.find_broker_addr(msg.broker_name) or msg.store_host
            await rpc.consumer_send_msg_back(
                rt.pool,
                addr,
                commit_log_offset=msg.commit_log_offset,
                group=self.group,
                delay_level=delay_level,
                origin_msg_id=msg.msg_id,
                origin_topic=msg.topic,
                max_reconsume_times=max_times,
                broker_name=msg.broker_name or None,
                timeout=SEND_BACK_TIMEOUT,
            )
            return True
        except RocketMQError as exc:
            log.warning(
                "send back failed, re-sending to retry topic group=%s msg=%s err=%s", self.group, msg.msg_id, exc
            )
        try:
            from ..producer.producer import Producer

            if self._inner_producer is None:
                self._inner_producer = Producer(CLIENT_INNER_PRODUCER_GROUP, runtime=rt)
            props = dict(msg.properties)
            props.setdefault(PROPERTY_ORIGIN_MESSAGE_ID, msg.msg_id)
            props.setdefault(PROPERTY_RETRY_TOPIC, msg.topic)
            props[PROPERTY_RECONSUME_TIME] = str(msg.reconsume_times + 1)
            props[PROPERTY_MAX_RECONSUME_TIMES] = str(max_times)
            props.pop(PROPERTY_TRANSACTION_PREPARED, None)
            props[PROPERTY_DELAY_TIME_LEVEL] = str(default_delay_level(msg.reconsume_times))
            retry = Message(topic=retry_topic(self.group), body=msg.body, flag=msg.flag, properties=props)
            await self._inner_producer.send(retry)
            return True
        except RocketMQError as exc:
            log.warning("re-send to retry topic failed group=%s msg=%s err=%s", self.group, msg.msg_id, exc)
            return False


__all__ = ["PushConsumer"]
