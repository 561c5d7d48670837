"""PushConsumer: subscribe, listen, and let rebalancing + pull loops deliver (L3).

Mirrors ``DefaultMQPushConsumer`` / ``DefaultMQPushConsumerImpl``: the public API and the
wiring. Composition: a :class:`ClientRuntime` (routes, heartbeats, periodic offset
persistence); an offset store (:class:`RemoteOffsetStore` in CLUSTERING,
:class:`LocalOffsetStore` in BROADCASTING) over :class:`~.offset_ops.BrokerOffsets`; a
dispatcher (:class:`ConcurrentDispatcher` or :class:`OrderlyDispatcher`) running the listener;
one pull loop task per assigned queue (:mod:`.pull`, flow control in :mod:`.process_queue`
and :mod:`.push_controls`); the shared rebalance driver (:class:`~.rebalance_service.RebalanceService`,
every 20 s and at once on NOTIFY_CONSUMER_IDS_CHANGED, on start, on subscribe and after
OFFSET_ILLEGAL) applying its results through :class:`~.rebalance_push.PushRebalance`; the
send-back decision (:class:`~.send_back.SendBack`); POP mode (:mod:`.pop_push`) when the broker
assigns queues; the running info (:mod:`.running_info`); with ``enable_msg_trace``, the
trace hook (:class:`~rocketpipe.client.trace.hooks.ConsumeTraceHook`, SubBefore / SubAfter
records) among the consume hooks; with ``ClientConfig.metrics``, a
:class:`~rocketpipe.client.metrics.ClientMeter` (made at start, closed at shutdown) given to the
dispatcher, and the process queues exported as the cached-messages/bytes gauges.

Shutdown order (``shutdown``): stop rebalancing and pulling, wait for the batches being
consumed, flush the traces, persist every offset, UNREGISTER_CLIENT, close the runtime.
"""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from ...clock import SYSTEM_CLOCK, Clock
from ...errors import ClientClosedError, InvalidArgumentError, RocketMQError
from ...protocol.bodies.consumer import ConsumerRunningInfo
from ...protocol.bodies.heartbeat import ConsumerData, SubscriptionData
from ...protocol.message import MessageExt, MessageQueue
from .._tasks import TaskOwner, periodic
from ..config import ClientConfig
from ..inbound import ConsumeMessageDirectlyResult, consume_directly, install_consumer_handlers
from ..metrics import ClientMeter, client_meter
from ..runtime import ClientRuntime
from .allocate import AllocateStrategy, allocate_averagely
from .common import check_client_in_broker, check_consumer_group, resolve_runtime, start_consume_trace
from .concurrent import ConcurrentDispatcher
from .listener import MessageListenerConcurrently, MessageModel
from .local_offsets import LocalOffsetStore, NoCommitOffsetView
from .offset_ops import BrokerOffsets, reset_held_offsets
from .offsets import ConsumeFromWhere, RemoteOffsetStore, default_consume_timestamp
from .orderly import (
    REBALANCE_LOCK_INTERVAL,
    MessageListenerOrderly,
    OrderlyDispatcher,
    OrderlyProcessQueue,
    OrderlyPullLoop,
)
from .pop_push import PopConsumeService, PopConsumption, PopLoop, PopSettings, check_pop_settings
from .process_queue import FlowControlLimits
from .pull import PullLoop, PullSettings
from .push_controls import ConsumeMessageHook, ControlledPullLoop, PushControls, wrap_listener_with_hooks
from .rebalance_push import PushRebalance
from .rebalance_service import RebalanceService
from .retry import is_retry_topic, restore_retry_topic, retry_topic
from .running_info import process_queue_table, push_properties, running_info
from .selector import MessageSelector
from .send_back import SendBack, send_back_expired

if TYPE_CHECKING:
    from ..trace.dispatcher import TraceDispatcher
    from ..trace.hooks import ConsumeTraceHook

#: rocketmq.client.rebalance.waitInterval (20 000 ms), seconds.
REBALANCE_INTERVAL: Final = 20.0
#: DefaultMQPushConsumer.consumeTimeout (15 min), seconds.
CONSUME_TIMEOUT: Final = 15 * 60.0


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
        enable_msg_trace: record a SubBefore trace before and a SubAfter trace (success, cost
            per message in ms, ``ConsumeReturnType``) after every listener call, into the trace
            topic (``enableMsgTrace``, False). Traces go out in the background and never delay
            or fail consumption.
        customized_trace_topic: the trace topic (``customizedTraceTopic``; None:
            ``RMQ_SYS_TRACE_TOPIC``).

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
        enable_msg_trace: bool = False,
        customized_trace_topic: str | None = None,
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
        self.enable_msg_trace = enable_msg_trace
        self.customized_trace_topic = customized_trace_topic
        self._trace: ConsumeTraceHook | None = None
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
        self._offsets = BrokerOffsets(runtime, consumer_group)
        self._offset_store: RemoteOffsetStore | LocalOffsetStore
        if message_model is MessageModel.BROADCASTING:
            self._offset_store = LocalOffsetStore(runtime.client_id, consumer_group, offset_store_dir)
        else:
            self._offset_store = RemoteOffsetStore(self._offsets.query, self._offsets.commit)
        self._tasks = TaskOwner(f"consumer[{consumer_group}]")
        self._rebalance = PushRebalance(
            runtime,
            self,
            subscriptions=self._subscriptions,
            offset_store=self._offset_store,
            offsets=self._offsets,
            tasks=self._tasks,
            clock=clock,
            closed=lambda: self._closed,
            wake=lambda: self._rebalancer.wake(),  # noqa: PLW0108 (the driver is made below)
        )
        self._queues = self._rebalance.queues  # processQueueTable, owned by the rebalance
        self._rebalancer = RebalanceService(
            runtime,
            consumer_group,
            lambda: self.allocate_strategy,
            lambda: list(self._subscriptions),
            self._rebalance.apply,
            rebalance_interval,
            clustering=message_model is MessageModel.CLUSTERING,
            assign_by_broker=self._rebalance.assign_by_broker,
            drop_unsubscribed=self._rebalance.drop_unsubscribed,
        )
        self._send_back = SendBack(
            runtime,
            consumer_group,
            clustering=message_model is MessageModel.CLUSTERING,
            max_reconsume_times=lambda: self.max_reconsume_times,
        )
        self._controls = PushControls(
            pull_threshold_for_topic=pull_threshold_for_topic,
            pull_threshold_size_for_topic=pull_threshold_size_for_topic,
            queues_of_topic=lambda t: sum(1 for mq, r in self._queues.items() if mq.topic == t and not r.pq.dropped),
        )
        self._hooks: list[ConsumeMessageHook] = []
        self._start_ms = 0
        self._dispatcher: ConcurrentDispatcher | OrderlyDispatcher | None = None
        self._pull_loop: PullLoop | None = None
        self._meter: ClientMeter | None = None
        self._control_tasks: list[asyncio.Task[None]] = []
        self._started = False
        self._closed = False

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
    def trace_dispatcher(self) -> TraceDispatcher | None:
        """The trace dispatcher while tracing (``getTraceDispatcher``), else None."""
        return self._trace.dispatcher if self._trace is not None else None

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
            self._rebalancer.subscription_changed()

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
        if self.enable_msg_trace:
            self._trace = await start_consume_trace(rt, self.group, self.customized_trace_topic, self._clock)
            if self._trace is not None:
                self._hooks.append(self._trace)
        self._meter = client_meter(rt.config, rt.client_id)
        if self._meter is not None:
            self._meter.add_cached_source(self._cached_rows)
        self._pull_loop = await self._build_consumption()
        self._rebalance.bind(self._pull_loop, self._pop)
        await self._rebalancer.refresh_routes()
        try:
            await check_client_in_broker(rt, self.group, self._subscriptions.values())
        except RocketMQError:
            await self.close()
            raise
        await rt.send_heartbeat_to_all_brokers()
        await self.rebalance()
        self._rebalancer.interval = self.rebalance_interval
        self._control_tasks = [
            self._tasks.spawn(self._rebalancer.run(), "rebalance"),
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
                        self._rebalance.lock_all,
                        initial_delay=min(1.0, self.lock_renew_interval),
                    ),
                    "lock-all",
                )
            )

    async def _build_consumption(self) -> PullLoop:
        """Start the dispatcher (and the POP side); return the pull loop for new queues."""
        rt = self._runtime
        pull_store: Any = self._offset_store
        if isinstance(self._offset_store, LocalOffsetStore):
            await asyncio.to_thread(self._offset_store.load)
            pull_store = NoCommitOffsetView(self._offset_store)
        listener = wrap_listener_with_hooks(self._listener, self._hooks, self.group, orderly=self.orderly)
        pull_loop: PullLoop
        if self.orderly:
            self._dispatcher = OrderlyDispatcher(
                self.group,
                listener,
                lambda mq, off: self._offset_store.update_offset(mq, off, increase_only=False),
                self._send_back.orderly,
                self._rebalance.lock_one if self.clustering else None,
                self._tasks,
                consume_thread_max=self.consume_thread_max,
                consume_message_batch_max_size=self.consume_message_batch_max_size,
                suspend_current_queue_time_millis=self.suspend_current_queue_time_millis,
                max_reconsume_times=self.max_reconsume_times,
                now_ms=self._clock.now_ms,
                meter=self._meter,
            )
            # Java skips the span check for orderly consumers.
            lim = self._settings.limits
            settings = dataclasses.replace(
                self._settings,
                limits=FlowControlLimits(lim.pull_threshold_for_queue, lim.pull_threshold_size_for_queue, 2**62),
            )
            pull_loop = OrderlyPullLoop(
                rt,
                self.group,
                settings,
                self._subscriptions.get,
                pull_store,
                self._dispatcher,
                self._rebalance.after_offset_illegal,
                read_start_offset=self._rebalance.compute_start_offset,
                clustering=self.clustering,
                controls=self._controls,
            )
        else:
            self._dispatcher = ConcurrentDispatcher(
                self.group,
                listener,
                self._offset_store,  # type: ignore[arg-type]
                self._send_back.concurrent,
                self._tasks,
                consume_thread_max=self.consume_thread_max,
                consume_message_batch_max_size=self.consume_message_batch_max_size,
                now_ms=self._clock.now_ms,
                meter=self._meter,
            )
            pull_loop = ControlledPullLoop(
                rt,
                self.group,
                self._settings,
                self._subscriptions.get,
                pull_store,
                self._dispatcher,
                self._rebalance.after_offset_illegal,
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
                meter=self._meter,
            )
            pop_loop = PopLoop(
                rt, self.group, self._pop_settings, self._subscriptions.get, service, self._controls, self._clock.now_ms
            )
            self._pop = PopConsumption(pop_loop, service, self._tasks)
            service.start()
        return pull_loop

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
        self._rebalance.stop_pulling()
        if self._pop is not None:
            self._pop.stop_popping()  # nothing new is popped while the in-flight batches finish
        if self._dispatcher is not None:
            await self._dispatcher.close()
        if self._pop is not None:
            await self._pop.close()
        if self._trace is not None:
            await self._trace.dispatcher.close()
        await self._rebalance.shutdown()
        await self._tasks.close()
        self._runtime.unregister_consumer(self.group)
        await self._runtime.unregister_client(consumer_group=self.group)
        await self._send_back.close()
        if self._meter is not None:
            self._meter.close()
            self._meter = None
        if self._owns_runtime:
            await self._runtime.close()

    def _cached_rows(self) -> list[tuple[str, str, int, int]]:
        """Metrics (scrape thread): ``(topic, group, messages, body bytes)`` per held process queue
        (``ProcessQueueGaugeObserver``); the table is copied in one C-level step."""
        group = self.group
        return [
            (mq.topic, group, r.pq.msg_count, r.pq.msg_size)
            for mq, r in self._queues.copy().items()
            if not r.pq.dropped
        ]

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
        self._rebalancer.wake()

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
        await send_back_expired(
            self._queues.values(),
            self.send_message_back,
            consume_timeout=self.consume_timeout,
            now_ms=self._clock.now_ms,
            group=self.group,
        )

    async def send_message_back(self, msg: MessageExt, delay_level: int = 0) -> bool:
        """CONSUMER_SEND_MSG_BACK, falling back to a re-send to ``%RETRY%<group>``.

        Mirrors ``DefaultMQPushConsumerImpl.sendMessageBack`` (see :class:`~.send_back.SendBack`).

        Args:
            msg: a message this consumer received.
            delay_level: 0 = broker decides (``3 + reconsume_times``); < 0 = DLQ.

        Returns:
            False only when both the send-back and the re-send failed (errors are logged).
        """
        return await self._send_back.send_message_back(msg, delay_level)

    # ------------------------------------------------------------------ broker -> client requests

    async def reset_offset(self, topic: str, offset_table: dict[MessageQueue, int]) -> None:
        """Move the consume offsets of held queues of ``topic`` (RESET_CONSUMER_CLIENT_OFFSET).

        Mirrors ``MQClientInstance.resetOffset``: the affected process queues are dropped (the
        batch in flight of an orderly queue is awaited), the new offsets are stored and
        persisted, and the next rebalance — started at once — pulls from them. Queues of the
        table this consumer does not hold are left to their owners.
        """
        async with self._rebalancer.lock:
            await reset_held_offsets(
                topic,
                offset_table,
                queues=self._queues,
                drop_queue=self._rebalance.drop_queue,
                store=self._offset_store,
                group=self.group,
            )
        self._rebalancer.wake()

    def running_info(self) -> ConsumerRunningInfo:
        """Return the ``ConsumerRunningInfo`` of GET_CONSUMER_RUNNING_INFO.

        Mirrors ``DefaultMQPushConsumerImpl.consumerRunningInfo``: settings as properties (Java
        field names) plus ``PROP_CONSUMEORDERLY``, ``PROP_THREADPOOL_CORE_SIZE``,
        ``PROP_CONSUMER_START_TIMESTAMP`` and ``PROP_CONSUME_TYPE``; the subscriptions; one
        ``ProcessQueueInfo`` per held queue; a ``ConsumeStatus`` per subscribed topic.
        """
        props = push_properties(self, self._settings, self._pop_settings, self._start_ms)
        loop_now = asyncio.get_running_loop().time()
        table = process_queue_table(self._queues, self._offset_store.read_memory, self._clock.now_ms(), loop_now)
        stats = getattr(self._dispatcher, "stats", None)
        return running_info(props, self._subscriptions, table, stats, self.group)

    async def consume_message_directly(self, msg: MessageExt, broker_name: str | None) -> ConsumeMessageDirectlyResult:
        """Give one message to the listener outside the normal flow (CONSUME_MESSAGE_DIRECTLY).

        No offset moves and nothing is sent back, as in Java's ``consumeMessageDirectly``.
        """
        if broker_name:
            msg.broker_name = broker_name
        restore_retry_topic(msg, self.group)
        mq = MessageQueue(msg.topic, msg.broker_name or broker_name or "", msg.queue_id)
        return await consume_directly(self._listener, self.orderly, msg, mq)

    # ------------------------------------------------------------------ rebalance

    @property
    def rebalance_count(self) -> int:
        """Rebalance rounds run so far."""
        return self._rebalancer.rounds

    async def rebalance(self) -> None:
        """Run one rebalance round over every subscribed topic (``doRebalance``)."""
        if self._closed:
            return
        await self._rebalancer.rebalance()


__all__ = ["PushConsumer"]
