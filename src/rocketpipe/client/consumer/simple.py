"""SimpleConsumer: POP-based consumption with per-message acknowledgement (L3).

The application asks for messages, processes them, and acknowledges each one; a message not
acknowledged within its invisible duration is delivered again (by any consumer of the group),
with ``reconsume_times`` + 1, and after the group's ``retryMaxTimes`` (16) redeliveries it goes
to ``%DLQ%<group>``. No queue is bound to a consumer, so a group may have more consumers than
queues. Mirrors the Apache RocketMQ 5.x ``SimpleConsumer`` API on top of the remoting POP
commands that ``MQClientAPIImpl`` uses (``popMessageAsync`` / ``processPopResponse``,
``ackMessageAsync``, ``batchAckMessageAsync``, ``changeInvisibleTimeAsync``)::

    async with SimpleConsumer("cg", namesrv_addr="127.0.0.1:9876", subscriptions={"Orders": "*"}) as c:
        for msg in await c.receive(16, invisible_duration=30):
            handle(msg)
            await c.ack(msg)

Each received message is a :class:`ReceivedMessage` (a :class:`MessageExt`) whose
``receipt_handle`` is its ``POP_CK`` property (the broker's ``extraInfo``); its ``topic`` is the
subscribed topic even when the broker delivered it from the group's pop retry topic.

Uses a :class:`~rocketpipe.client.runtime.ClientRuntime` for routes, heartbeats (consume type
``CONSUME_POP``) and connections; the POP_MESSAGE / ACK_MESSAGE / CHANGE_MESSAGE_INVISIBLETIME
calls and the receipt handles live in :mod:`.pop_calls`, shared with the push consumer's POP mode.

With ``ClientConfig.metrics``, each :meth:`SimpleConsumer.receive` that got messages records one
``rocketmq_delivery_latency`` (now − the broker's pop time, ms), as Java's ``SimpleConsumer``
records its receive (:class:`~rocketpipe.client.metrics.ClientMeter`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Final

from ...clock import SYSTEM_CLOCK, Clock
from ...errors import (
    ClientClosedError,
    InvalidArgumentError,
    RequestCodeNotSupportedError,
    RocketMQError,
    TopicNotExistError,
    error_for_response,
)
from ...protocol.bodies.heartbeat import ConsumerData, SubscriptionData
from ...protocol.codes import RequestCode, ResponseCode
from ...protocol.command import RemotingCommand
from ...protocol.headers.pop import BatchAckMessageRequestBody, ConsumeInitMode, ExtraInfo
from ...protocol.message import MessageExt
from ...protocol.sysflag import is_readable
from ..config import ClientConfig
from ..metrics import ClientMeter, client_meter
from ..routing import MASTER_ID
from ..runtime import ClientRuntime
from .common import check_consumer_group, resolve_runtime
from .pop_calls import (
    POP_EXTRA_TIMEOUT,
    PROPERTY_FIRST_POP_TIME,
    PROPERTY_POP_CK,
    PopStatus,
    ReceivedMessage,
    ack_message,
    attach_receipt_handles,
    change_invisible_time,
    pop_message,
    receipt_handle,
)

log = logging.getLogger(__name__)

__all__ = [
    "POP_EXTRA_TIMEOUT",
    "PROPERTY_FIRST_POP_TIME",
    "PROPERTY_POP_CK",
    "ConsumeInitMode",
    "PopNotSupportedError",
    "ReceivedMessage",
    "SimpleConsumer",
    "attach_receipt_handles",
    "receipt_handle",
]

#: PopMessageProcessor: most messages one POP returns.
MAX_RECEIVE_NUM: Final = 32


class PopNotSupportedError(RequestCodeNotSupportedError):
    """The broker has no POP: Apache RocketMQ before 5.0 answers POP_MESSAGE, ACK_MESSAGE,
    BATCH_ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME with REQUEST_CODE_NOT_SUPPORTED (its
    ``AdminBrokerProcessor`` default branch). Use a push or lite pull consumer there."""


def _pop_not_supported(request: str, broker: str, addr: str, remark: str | None) -> PopNotSupportedError:
    return PopNotSupportedError(
        f"broker {broker} at {addr} does not support POP consumption ({request} answered REQUEST_CODE_NOT_SUPPORTED: "
        f"{(remark or '').strip()}); SimpleConsumer needs an Apache RocketMQ 5.x broker",
        response_code=ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
    )


def _check_pop_response(resp: RemotingCommand, request: str, broker: str, addr: str) -> None:
    """Raise the typed error of a failed POP-family response (PopNotSupportedError for code 3)."""
    if resp.code == ResponseCode.SUCCESS:
        return
    if resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
        raise _pop_not_supported(request, broker, addr, resp.remark)
    raise error_for_response(resp.code, resp.remark)


class SimpleConsumer:
    """Asynchronous POP consumer: :meth:`receive`, :meth:`ack`, :meth:`change_invisible_duration`.

    Args:
        consumer_group: the group.
        namesrv_addr: ``;``-separated name servers (or ``config`` / ``runtime``).
        config: client settings.
        runtime: share a runtime (not closed by this consumer).
        subscriptions: topic → TAG expression (``"*"``, ``"a || b"``); more with :meth:`subscribe`.
        await_duration: seconds a :meth:`receive` may wait on the broker for messages (long
            polling, ``pollTime``); 0 returns at once.
        init_mode: where a group without offsets starts: :attr:`ConsumeInitMode.MAX` (the
            newest message, as the Java SimpleConsumer through the 5.x proxy) or ``MIN``.
        clock: wall clock (``bornTime``).

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
        subscriptions: dict[str, str] | None = None,
        await_duration: float = 5.0,
        init_mode: int = ConsumeInitMode.MAX,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        check_consumer_group(consumer_group)
        if await_duration < 0:
            raise InvalidArgumentError("await_duration must be >= 0 seconds")
        if init_mode not in (ConsumeInitMode.MIN, ConsumeInitMode.MAX):
            raise InvalidArgumentError("init_mode must be ConsumeInitMode.MIN or ConsumeInitMode.MAX")
        runtime, self._owns_runtime = resolve_runtime("SimpleConsumer", namesrv_addr, config, runtime, clock)
        self.group = consumer_group
        self.await_duration = await_duration
        self.init_mode = init_mode
        self._runtime = runtime
        self._clock = clock
        self._subscriptions: dict[str, SubscriptionData] = {}
        self._topic_index = 0
        self._broker_index: dict[str, int] = {}
        self._started = False
        self._closed = False
        self._meter: ClientMeter | None = None
        for topic, expr in (subscriptions or {}).items():
            self.subscribe(topic, expr)

    # ------------------------------------------------------------------ configuration
    @property
    def runtime(self) -> ClientRuntime:
        """The client runtime used."""
        return self._runtime

    @property
    def client_id(self) -> str:
        """This consumer's client id."""
        return self._runtime.client_id

    def subscribe(self, topic: str, expression: str = "*") -> None:
        """Add or replace a subscription (TAG expression).

        Raises:
            InvalidArgumentError: empty topic or unparsable expression; ClientClosedError.
        """
        if self._closed:
            raise ClientClosedError("consumer is closed")
        if not topic:
            raise InvalidArgumentError("topic must not be empty")
        self._subscriptions[topic] = SubscriptionData.build(topic, expression, sub_version=self._clock.now_ms())
        if self._started:
            self._runtime.wake_heartbeat()

    def unsubscribe(self, topic: str) -> None:
        """Stop receiving from ``topic``."""
        if self._subscriptions.pop(topic, None) is not None and self._started:
            self._runtime.wake_heartbeat()

    def subscriptions(self) -> dict[str, str]:
        """Topic → expression."""
        return {t: s.sub_string for t, s in self._subscriptions.items()}

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        """Register with the runtime, fetch routes and send a first heartbeat.

        Raises:
            InvalidArgumentError: no subscription; ClientClosedError: closed.
        """
        if self._closed:
            raise ClientClosedError("consumer is closed")
        if self._started:
            return
        if not self._subscriptions:
            raise InvalidArgumentError("subscribe to at least one topic before start()")
        self._started = True
        rt = self._runtime
        rt.register_consumer(self)
        await rt.start()
        self._meter = client_meter(rt.config, rt.client_id)
        for topic in list(self._subscriptions):
            try:
                await rt.fetch_route(topic)
            except TopicNotExistError:
                log.warning("simple consumer: no route yet topic=%s", topic)
        await rt.send_heartbeat_to_all_brokers()

    async def close(self) -> None:
        """Unregister from the brokers and close the runtime if owned; idempotent.

        Messages received and not acknowledged become visible again when their invisible
        duration ends.
        """
        if self._closed:
            return
        self._closed = True
        if self._meter is not None:
            self._meter.close()
            self._meter = None
        if self._started:
            self._runtime.unregister_consumer(self.group)
            await self._runtime.unregister_client(consumer_group=self.group)
        if self._owns_runtime:
            await self._runtime.close()

    async def __aenter__(self) -> SimpleConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------------ runtime hooks
    def consumer_data(self) -> ConsumerData:
        """This consumer's heartbeat ``ConsumerData`` (``CONSUME_POP``, CLUSTERING)."""
        return ConsumerData(
            group_name=self.group,
            consume_type="CONSUME_POP",
            message_model="CLUSTERING",
            consume_from_where="CONSUME_FROM_FIRST_OFFSET"
            if self.init_mode == ConsumeInitMode.MIN
            else "CONSUME_FROM_LAST_OFFSET",
            subscription_data_set=list(self._subscriptions.values()),
            unit_mode=False,
        )

    def subscribed_topics(self) -> list[str]:
        """The subscribed topics (routes kept fresh by the runtime)."""
        return list(self._subscriptions)

    def on_consumer_ids_changed(self) -> None:
        """Nothing to rebalance: POP needs no queue assignment."""

    async def persist_offsets(self) -> None:
        """Nothing to persist: the broker keeps POP offsets."""

    # ------------------------------------------------------------------ receive
    def _check_open(self) -> None:
        if self._closed:
            raise ClientClosedError("consumer is closed")
        if not self._started:
            raise InvalidArgumentError("start() the consumer first")

    async def _next_target(self) -> tuple[str, str, str]:
        """(topic, broker name, address) of the next POP: topics and brokers round-robin."""
        topics = list(self._subscriptions)
        topic = topics[self._topic_index % len(topics)]
        self._topic_index += 1
        route = self._runtime.cached_route(topic) or await self._runtime.route(topic, refresh=True)
        names = sorted(
            {qd.broker_name for qd in route.queue_datas or () if is_readable(qd.perm) and qd.read_queue_nums > 0}
        )
        names = [n for n in names if self._runtime.find_broker_addr(n, MASTER_ID)]
        if not names:
            route = await self._runtime.route(topic, refresh=True)
            names = sorted(
                {qd.broker_name for qd in route.queue_datas or () if is_readable(qd.perm) and qd.read_queue_nums > 0}
            )
            names = [n for n in names if self._runtime.find_broker_addr(n, MASTER_ID)]
        if not names:
            raise TopicNotExistError(f"no readable queue of topic {topic!r} on a reachable broker")
        i = self._broker_index.get(topic, 0)
        self._broker_index[topic] = i + 1
        name = names[i % len(names)]
        return topic, name, self._runtime.find_broker_addr(name, MASTER_ID) or ""

    async def receive(self, max_message_num: int = 16, invisible_duration: float = 60.0) -> list[ReceivedMessage]:
        """Pop up to ``max_message_num`` messages of the next subscribed topic.

        Waits up to ``await_duration`` on the broker when nothing is available, and returns an
        empty list when nothing came. The messages stay invisible to the group for
        ``invisible_duration`` seconds; ack them before that, or they are delivered again.

        Raises:
            InvalidArgumentError: ``max_message_num`` outside [1, 32] or a non-positive duration.
            TopicNotExistError: no route for the topic; PopNotSupportedError: the broker has no
            POP (Apache RocketMQ 4.x); BrokerError; TransportError.
        """
        self._check_open()
        if not 1 <= max_message_num <= MAX_RECEIVE_NUM:
            raise InvalidArgumentError(f"max_message_num must be in [1, {MAX_RECEIVE_NUM}]")
        if invisible_duration <= 0:
            raise InvalidArgumentError("invisible_duration must be > 0 seconds")
        topic, broker_name, addr = await self._next_target()
        sub = self._subscriptions[topic]
        try:
            result = await pop_message(
                self._runtime,
                addr,
                group=self.group,
                topic=topic,
                broker_name=broker_name,
                queue_id=-1,
                max_msg_nums=max_message_num,
                invisible_time=invisible_duration,
                poll_time=self.await_duration,
                born_time_ms=self._clock.now_ms(),
                init_mode=self.init_mode,
                subscription=sub,
            )
        except RequestCodeNotSupportedError as exc:
            raise _pop_not_supported("POP_MESSAGE", broker_name, addr, exc.remark) from None
        if result.status is not PopStatus.FOUND:
            return []
        msgs = result.msg_found_list
        if self._meter is not None and msgs and result.pop_time > 0:
            self._meter.record_delivery(topic, self.group, self._clock.now_ms() - result.pop_time)
        if sub.is_sub_all or not sub.tags_set:
            return msgs
        # client-side re-filter on the tag strings (the broker filtered on hash codes)
        kept = [m for m in msgs if m.tags is not None and m.tags in sub.tags_set]
        for m in msgs:
            if m.tags is None or m.tags not in sub.tags_set:
                try:
                    await self.ack(m)
                except RocketMQError as exc:
                    log.debug("ack of a filtered-out message failed: %s", exc)
        return kept

    # ------------------------------------------------------------------ ack / change
    async def _addr_of(self, ei: ExtraInfo, topic: str) -> str:
        return await self._runtime.find_master_addr(ei.broker_name, topic)

    async def ack(self, msg: MessageExt) -> None:
        """Acknowledge a received message: it will not be delivered again.

        Raises:
            InvalidArgumentError: the message has no receipt handle.
            BrokerError: e.g. NO_MESSAGE (code 208) when the handle expired (the message was
                already made visible again, acknowledged, or its invisibility changed).
            TransportError.
        """
        self._check_open()
        try:
            await ack_message(self._runtime, self.group, msg, self._runtime.config.request_timeout)
        except RequestCodeNotSupportedError as exc:
            raise _pop_not_supported("ACK_MESSAGE", receipt_handle(msg).broker_name, "its master", exc.remark) from None

    async def ack_batch(self, msgs: Iterable[MessageExt]) -> None:
        """Acknowledge several messages with BATCH_ACK_MESSAGE (5.2+ brokers), one request per
        (broker, topic). Unknown handles are ignored by the broker.

        Raises:
            InvalidArgumentError: a message without a receipt handle; BrokerError; TransportError.
        """
        self._check_open()
        groups: dict[tuple[str, str], list[ExtraInfo]] = {}
        for m in msgs:
            ei = receipt_handle(m)
            groups.setdefault((ei.broker_name, m.topic), []).append(ei)
        for (_broker, topic), handles in groups.items():
            body = BatchAckMessageRequestBody.from_handles(topic, self.group, handles)
            addr = await self._addr_of(handles[0], topic)
            cmd = RemotingCommand.request(RequestCode.BATCH_ACK_MESSAGE, None, body.encode())
            resp = await self._runtime.pool.request(addr, cmd, self._runtime.config.request_timeout)
            _check_pop_response(resp, "BATCH_ACK_MESSAGE", _broker, addr)

    async def change_invisible_duration(self, msg: MessageExt, invisible_duration: float) -> str:
        """Make a received message invisible for ``invisible_duration`` seconds from now.

        The message's receipt handle is replaced (``POP_CK`` updated in place); the old handle
        is no longer valid.

        Returns:
            The new receipt handle.

        Raises:
            InvalidArgumentError: no receipt handle or a negative duration; BrokerError (e.g.
            NO_MESSAGE when the handle expired); TransportError.
        """
        self._check_open()
        if invisible_duration < 0:
            raise InvalidArgumentError("invisible_duration must be >= 0 seconds")
        try:
            return await change_invisible_time(
                self._runtime, self.group, msg, invisible_duration, self._runtime.config.request_timeout
            )
        except RequestCodeNotSupportedError as exc:
            raise _pop_not_supported(
                "CHANGE_MESSAGE_INVISIBLETIME", receipt_handle(msg).broker_name, "its master", exc.remark
            ) from None
