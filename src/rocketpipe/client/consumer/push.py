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
import logging
import random
from datetime import datetime
from typing import TYPE_CHECKING, Final

from ...clock import SYSTEM_CLOCK, Clock
from ...errors import ClientClosedError, InvalidArgumentError, RocketMQError, TopicNotExistError
from ...protocol.bodies.heartbeat import ConsumerData, SubscriptionData
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
from ..routing import MASTER_ID, subscribe_queues
from ..runtime import CLIENT_INNER_PRODUCER_GROUP, ClientRuntime
from .allocate import AllocateStrategy, allocate_averagely
from .concurrent import ConcurrentDispatcher
from .listener import ConsumeConcurrentlyContext, MessageListenerConcurrently, MessageModel
from .offsets import ConsumeFromWhere, ReadOffsetType, RemoteOffsetStore, compute_pull_from_where, default_consume_timestamp
from .process_queue import FlowControlLimits, ProcessQueue
from .pull import PullLoop, PullRequest, PullSettings
from .rebalance import plan_rebalance
from .retry import default_delay_level, effective_max_reconsume_times, retry_topic

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
    """Asynchronous push consumer (CLUSTERING, concurrent listener).

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
        message_model: only ``CLUSTERING`` is implemented.
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
    ) -> None:
        if not consumer_group or consumer_group == "DEFAULT_CONSUMER":
            raise InvalidArgumentError("consumer_group must be set (and not DEFAULT_CONSUMER)")
        if len(consumer_group) > 255:
            raise InvalidArgumentError("consumer_group is longer than 255 characters")
        if message_model is not MessageModel.CLUSTERING:
            raise InvalidArgumentError("PushConsumer implements CLUSTERING only")
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
        if runtime is None:
            if config is None:
                if not namesrv_addr:
                    raise InvalidArgumentError("PushConsumer needs namesrv_addr, config or runtime")
                config = ClientConfig(namesrv_addr=namesrv_addr)
            runtime = ClientRuntime(config, clock=clock)
            self._owns_runtime = True
        else:
            self._owns_runtime = False
        self.group = consumer_group
        self.message_model = message_model
        self.consume_from_where = consume_from_where
        self.consume_timestamp = consume_timestamp or default_consume_timestamp(datetime.fromtimestamp(clock.now_ms() / 1000))
        self.allocate_strategy = allocate_strategy
        self.consume_thread_max = consume_thread_max
        self.consume_message_batch_max_size = consume_message_batch_max_size
        self.max_reconsume_times = max_reconsume_times
        self.rebalance_interval = rebalance_interval
        self.consume_timeout = consume_timeout
        self._runtime = runtime
        self._clock = clock
        self._settings = PullSettings(
            pull_batch_size=pull_batch_size,
            pull_interval=pull_interval,
            broker_suspend_max_time=broker_suspend_max_time,
            consumer_timeout_when_suspend=consumer_timeout_when_suspend,
            pull_time_delay_when_exception=runtime.config.pull_time_delay_when_exception,
            post_subscription_when_pull=post_subscription_when_pull,
            limits=FlowControlLimits(pull_threshold_for_queue, pull_threshold_size_for_queue, consume_concurrently_max_span),
        )
        self._subscriptions: dict[str, SubscriptionData] = {}
        self._listener: MessageListenerConcurrently | None = None
        self._queues: dict[MessageQueue, PullRequest] = {}
        self._offset_store = RemoteOffsetStore(self._query_offset, self._commit_offset)
        self._tasks = TaskOwner(f"consumer[{consumer_group}]")
        self._rebalance_wake = asyncio.Event()
        self._sub_changed = False
        self._dispatcher: ConcurrentDispatcher | None = None
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

    def subscribe(self, topic: str, expression: str = "*") -> None:
        """Subscribe to ``topic`` with a TAG expression (``"*"`` or ``"a || b"``).

        After :meth:`start`, triggers a heartbeat and a rebalance.

        Raises:
            InvalidArgumentError: empty topic or unparsable expression; ClientClosedError.
        """
        if self._closed:
            raise ClientClosedError("consumer is closed")
        if not topic:
            raise InvalidArgumentError("topic must not be empty")
        self._subscriptions[topic] = SubscriptionData.build(topic, expression, sub_version=self._clock.now_ms())
        self._on_subscription_changed()

    def unsubscribe(self, topic: str) -> None:
        """Stop consuming ``topic`` (its queues are dropped at the next rebalance)."""
        if self._subscriptions.pop(topic, None) is not None:
            self._on_subscription_changed()

    def register_message_listener(self, listener: MessageListenerConcurrently) -> MessageListenerConcurrently:
        """Set the concurrent listener (``async def`` or plain function); usable as a decorator.

        Raises:
            InvalidArgumentError: called after start.
        """
        if self._started:
            raise InvalidArgumentError("register the listener before start()")
        self._listener = listener
        return listener

    def subscriptions(self) -> dict[str, str]:
        """Return topic → expression of the user's subscriptions (retry topic excluded)."""
        rt = retry_topic(self.group)
        return {t: s.sub_string for t, s in self._subscriptions.items() if t != rt}

    def assigned_queues(self) -> list[MessageQueue]:
        """Return the queues this consumer currently pulls (sorted)."""
        return sorted(mq for mq, r in self._queues.items() if not r.pq.dropped)

    def committed_offsets(self) -> dict[MessageQueue, int]:
        """Return the in-memory "next offset to consume" per queue."""
        return self._offset_store.snapshot()

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
        self._subscriptions[retry_topic(self.group)] = SubscriptionData.build(retry_topic(self.group), "*", sub_version=self._clock.now_ms())
        self._started = True
        rt = self._runtime
        rt.register_consumer(self)
        await rt.start()
        await self._tasks.start()
        self._dispatcher = ConcurrentDispatcher(
            self.group,
            self._listener,
            self._offset_store,
            self._send_message_back,
            self._tasks,
            consume_thread_max=self.consume_thread_max,
            consume_message_batch_max_size=self.consume_message_batch_max_size,
            now_ms=self._clock.now_ms,
        )
        self._dispatcher.start()
        self._pull_loop = PullLoop(
            rt, self.group, self._settings, self._subscriptions.get, self._offset_store, self._dispatcher, self._after_offset_illegal
        )
        await self._refresh_routes()
        await rt.send_heartbeat_to_all_brokers()
        await self.rebalance()
        self._control_tasks = [
            self._tasks.spawn(self._rebalance_loop(), "rebalance"),
            self._tasks.spawn(
                periodic("clean-expired", self.consume_timeout, self.clean_expired_messages, initial_delay=self.consume_timeout),
                "clean-expired",
            ),
        ]

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
        if self._dispatcher is not None:
            await self._dispatcher.close()
        held = [mq for mq in self._queues]
        for mq in held:
            try:
                await self._offset_store.persist(mq, oneway=False)
            except RocketMQError as exc:
                log.warning("persist offset at shutdown failed group=%s mq=%s err=%s", self.group, mq, exc)
        for req in self._queues.values():
            req.pq.dropped = True
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
        limit_ms = int(self.consume_timeout * 1000)
        for req in list(self._queues.values()):
            for _ in range(CLEAN_EXPIRED_MAX):
                m = req.pq.first_message()
                if m is None or req.pq.dropped:
                    break
                started = m.properties.get(PROPERTY_CONSUME_START_TIMESTAMP)
                if not started or self._clock.now_ms() - int(started) <= limit_ms:
                    break
                log.warning("consume timeout, sending back group=%s mq=%s offset=%d", self.group, req.mq, m.queue_offset)
                if not await self.send_message_back(m, 3):
                    break
                req.pq.remove_messages([m])

    # ------------------------------------------------------------------ rebalance

    async def _rebalance_loop(self) -> None:
        while True:
            try:
                async with asyncio.timeout(self.rebalance_interval):
                    await self._rebalance_wake.wait()
            except TimeoutError:
                pass
            self._rebalance_wake.clear()
            try:
                await self.rebalance()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("rebalance failed group=%s", self.group)

    async def _refresh_routes(self) -> None:
        for topic in list(self._subscriptions):
            try:
                await self._runtime.fetch_route(topic)
            except TopicNotExistError:
                log.info("no route for subscribed topic=%s", topic)
            except RocketMQError as exc:
                log.warning("route fetch failed topic=%s err=%s", topic, exc)

    async def rebalance(self) -> None:
        """Run one rebalance round over every subscribed topic (``doRebalance``)."""
        if self._closed:
            return
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

    async def _rebalance_topic(self, topic: str) -> None:
        rt = self._runtime
        route = rt.cached_route(topic)
        if route is None:
            try:
                route = await rt.fetch_route(topic)
            except TopicNotExistError:
                log.debug("rebalance: no route topic=%s", topic)
                return
        mq_all = subscribe_queues(topic, route)
        addrs = sorted({a for bd in route.broker_datas for bid, a in bd.broker_addrs.items() if int(bid) == MASTER_ID})
        if not mq_all or not addrs:
            return
        cids = await rpc.get_consumer_id_list(rt.pool, random.choice(addrs), self.group, rt.config.request_timeout)
        if not cids:
            return
        allocated = self.allocate_strategy(self.group, rt.client_id, sorted(mq_all), sorted(cids))
        loop = asyncio.get_running_loop()
        plan = plan_rebalance(topic, {mq: r.pq for mq, r in self._queues.items()}, allocated, loop.time())
        for mq in plan.to_drop:
            await self._drop_queue(mq)
        new: list[PullRequest] = []
        for mq in plan.to_add:
            self._offset_store.remove(mq)
            offset = await compute_pull_from_where(
                self.consume_from_where,
                mq,
                read_store_offset=lambda q: self._offset_store.read_offset(q, ReadOffsetType.READ_FROM_STORE),
                max_offset=self._max_offset,
                search_offset=self._search_offset,
                consume_timestamp=self.consume_timestamp,
            )
            if offset < 0:
                log.warning("rebalance: no start offset, skipped group=%s mq=%s", self.group, mq)
                continue
            log.info("rebalance: add queue group=%s mq=%s offset=%d", self.group, mq, offset)
            new.append(PullRequest(mq=mq, pq=ProcessQueue(loop.time()), next_offset=offset))
        if plan.to_drop or new:
            sub = self._subscriptions.get(topic)
            if sub is not None:
                sub.sub_version = self._clock.now_ms()
            await rt.send_heartbeat_to_all_brokers()
        if self._closed:
            return
        assert self._pull_loop is not None
        for req in new:
            self._queues[req.mq] = req
            req.task = self._tasks.spawn(self._pull_loop.run(req), f"pull-{req.mq.topic}-{req.mq.broker_name}-{req.mq.queue_id}")

    async def _drop_queue(self, mq: MessageQueue) -> None:
        req = self._queues.pop(mq, None)
        if req is None:
            return
        req.pq.dropped = True
        if req.task is not None and req.task is not asyncio.current_task():
            req.task.cancel()
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
        return await self.send_message_back(msg, ctx.delay_level_when_next_consume)

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
            log.warning("send back failed, re-sending to retry topic group=%s msg=%s err=%s", self.group, msg.msg_id, exc)
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
