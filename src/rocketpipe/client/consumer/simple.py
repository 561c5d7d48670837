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
``CONSUME_POP``) and connections.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from ...clock import SYSTEM_CLOCK, Clock
from ...errors import ClientClosedError, InvalidArgumentError, RocketMQError, TopicNotExistError, error_for_response
from ...protocol.bodies.heartbeat import ConsumerData, SubscriptionData
from ...protocol.codes import RequestCode, ResponseCode
from ...protocol.command import RemotingCommand
from ...protocol.headers.pop import (
    AckMessageRequestHeader,
    BatchAckMessageRequestBody,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    ConsumeInitMode,
    ExtraInfo,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
    parse_msg_offset_info,
    parse_start_offset_info,
    retry_flag,
)
from ...protocol.message import MessageExt, decode_records
from ...protocol.sysflag import is_readable
from ..config import ClientConfig
from ..routing import MASTER_ID
from ..runtime import ClientRuntime
from .common import check_consumer_group, resolve_runtime

log = logging.getLogger(__name__)

__all__ = ["ConsumeInitMode", "ReceivedMessage", "SimpleConsumer", "receipt_handle"]

#: MessageConst.PROPERTY_POP_CK
PROPERTY_POP_CK: Final = "POP_CK"
#: MessageConst.PROPERTY_FIRST_POP_TIME
PROPERTY_FIRST_POP_TIME: Final = "1ST_POP_TIME"
#: PopMessageProcessor: most messages one POP returns.
MAX_RECEIVE_NUM: Final = 32
#: PullAPIWrapper.popAsync: extra RPC time on top of the long-poll time (10 s).
POP_EXTRA_TIMEOUT: Final = 10.0

_MESSAGE_FIELDS: Final = tuple(f.name for f in dataclasses.fields(MessageExt))


@dataclass(slots=True)
class ReceivedMessage(MessageExt):
    """A message received by :meth:`SimpleConsumer.receive`."""

    @property
    def receipt_handle(self) -> str:
        """The handle to ack / change the invisibility with (the ``POP_CK`` property)."""
        return self.properties.get(PROPERTY_POP_CK, "")

    @property
    def first_pop_time(self) -> int | None:
        """``1ST_POP_TIME``: broker time of the first delivery, ms (None if unknown)."""
        v = self.properties.get(PROPERTY_FIRST_POP_TIME)
        return int(v) if v and v.isdigit() else None

    @classmethod
    def of(cls, msg: MessageExt) -> ReceivedMessage:
        """Wrap a decoded message (fields copied)."""
        return cls(*(getattr(msg, name) for name in _MESSAGE_FIELDS))


def receipt_handle(msg: MessageExt) -> ExtraInfo:
    """The parsed receipt handle of a received message.

    Raises:
        InvalidArgumentError: the message has no (valid) ``POP_CK`` property.
    """
    return ExtraInfo.parse(msg.properties.get(PROPERTY_POP_CK))


def attach_receipt_handles(
    msgs: list[MessageExt], *, topic: str, broker_name: str, header: PopMessageResponseHeader
) -> list[ReceivedMessage]:
    """Give every popped message its ``POP_CK`` handle (``MQClientAPIImpl.processPopResponse``).

    Uses ``startOffsetInfo`` / ``msgOffsetInfo`` when the broker sent them (the message's
    offset is looked up by its rank among the messages of its (retry flag, queue)); otherwise
    the legacy form (checkpoint offset = first message of the queue). A handle the broker put
    on the message (retry topic messages) is kept. Sets ``1ST_POP_TIME`` when absent, the
    broker name, and the subscribed topic.

    Raises:
        ProtocolError: malformed offset infos.
    """
    pop_time = header.pop_time or 0
    invisible = header.invisible_time or 0
    revive_qid = header.revive_qid or 0
    start_info = parse_start_offset_info(header.start_offset_info)
    msg_info = parse_msg_offset_info(header.msg_offset_info)
    ranks: dict[str, list[int]] = {}
    for m in msgs:
        ck = m.properties.get(PROPERTY_POP_CK)
        flag = ExtraInfo.parse(ck).retry if ck else retry_flag(m.topic)
        ranks.setdefault(f"{flag}@{m.queue_id}", []).append(m.queue_offset)
    legacy: dict[str, int] = {}
    out: list[ReceivedMessage] = []
    for m in msgs:
        if PROPERTY_POP_CK not in m.properties:
            key = f"{retry_flag(m.topic)}@{m.queue_id}"
            if start_info and key in start_info and key in msg_info:
                rank = ranks[key].index(m.queue_offset)
                offsets = msg_info[key]
                offset = offsets[rank] if rank < len(offsets) else m.queue_offset
                ei = ExtraInfo.of(start_info[key], pop_time, invisible, revive_qid, m.topic, broker_name, m.queue_id, offset)
            else:
                ck_offset = legacy.setdefault(m.topic + str(m.queue_id), m.queue_offset)
                ei = ExtraInfo.of(ck_offset, pop_time, invisible, revive_qid, m.topic, broker_name, m.queue_id, m.queue_offset)
            m.properties[PROPERTY_POP_CK] = ei.build()
        m.properties.setdefault(PROPERTY_FIRST_POP_TIME, str(pop_time))
        m.broker_name = broker_name
        m.topic = topic
        out.append(ReceivedMessage.of(m))
    return out


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
            consume_from_where="CONSUME_FROM_FIRST_OFFSET" if self.init_mode == ConsumeInitMode.MIN else "CONSUME_FROM_LAST_OFFSET",
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
        names = sorted({qd.broker_name for qd in route.queue_datas or () if is_readable(qd.perm) and qd.read_queue_nums > 0})
        names = [n for n in names if self._runtime.find_broker_addr(n, MASTER_ID)]
        if not names:
            route = await self._runtime.route(topic, refresh=True)
            names = sorted({qd.broker_name for qd in route.queue_datas or () if is_readable(qd.perm) and qd.read_queue_nums > 0})
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
            TopicNotExistError: no route for the topic; BrokerError; TransportError.
        """
        self._check_open()
        if not 1 <= max_message_num <= MAX_RECEIVE_NUM:
            raise InvalidArgumentError(f"max_message_num must be in [1, {MAX_RECEIVE_NUM}]")
        if invisible_duration <= 0:
            raise InvalidArgumentError("invisible_duration must be > 0 seconds")
        topic, broker_name, addr = await self._next_target()
        sub = self._subscriptions[topic]
        poll_ms = round(self.await_duration * 1000)
        header = PopMessageRequestHeader(
            consumer_group=self.group,
            topic=topic,
            queue_id=-1,
            max_msg_nums=max_message_num,
            invisible_time=round(invisible_duration * 1000),
            poll_time=poll_ms,
            born_time=self._clock.now_ms(),
            init_mode=self.init_mode,
            exp_type=sub.expression_type or "TAG",
            exp=sub.sub_string,
            order=False,
            bname=broker_name,
        )
        timeout = self.await_duration + POP_EXTRA_TIMEOUT
        cmd = RemotingCommand.request(RequestCode.POP_MESSAGE, header.to_ext_fields())
        resp = await self._runtime.pool.request(addr, cmd, timeout)
        if resp.code in (ResponseCode.POLLING_FULL, ResponseCode.POLLING_TIMEOUT, ResponseCode.PULL_NOT_FOUND):
            return []
        if resp.code != ResponseCode.SUCCESS:
            raise error_for_response(resp.code, resp.remark)
        rh = PopMessageResponseHeader.from_ext_fields(resp.ext_fields or {})
        msgs = attach_receipt_handles(decode_records(bytes(resp.body)), topic=topic, broker_name=broker_name, header=rh)
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
        ei = receipt_handle(msg)
        real = ei.real_topic(msg.topic, self.group)
        header = AckMessageRequestHeader(
            consumer_group=self.group,
            topic=real,
            queue_id=ei.queue_id,
            extra_info=ei.build(),
            offset=ei.queue_offset if ei.queue_offset is not None else msg.queue_offset,
            bname=ei.broker_name,
        )
        addr = await self._addr_of(ei, msg.topic)
        cmd = RemotingCommand.request(RequestCode.ACK_MESSAGE, header.to_ext_fields())
        resp = await self._runtime.pool.request(addr, cmd, self._runtime.config.request_timeout)
        if resp.code != ResponseCode.SUCCESS:
            raise error_for_response(resp.code, resp.remark)

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
            if resp.code != ResponseCode.SUCCESS:
                raise error_for_response(resp.code, resp.remark)

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
        ei = receipt_handle(msg)
        offset = ei.queue_offset if ei.queue_offset is not None else msg.queue_offset
        real = ei.real_topic(msg.topic, self.group)
        header = ChangeInvisibleTimeRequestHeader(
            consumer_group=self.group,
            topic=real,
            queue_id=ei.queue_id,
            extra_info=ei.build(),
            offset=offset,
            invisible_time=round(invisible_duration * 1000),
            bname=ei.broker_name,
        )
        addr = await self._addr_of(ei, msg.topic)
        cmd = RemotingCommand.request(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, header.to_ext_fields())
        resp = await self._runtime.pool.request(addr, cmd, self._runtime.config.request_timeout)
        if resp.code != ResponseCode.SUCCESS:
            raise error_for_response(resp.code, resp.remark)
        rh = ChangeInvisibleTimeResponseHeader.from_ext_fields(resp.ext_fields or {})
        # the new handle: checkpoint = this message alone (MQClientAPIImpl.changeInvisibleTimeAsync)
        new = ExtraInfo(
            offset, rh.pop_time or 0, rh.invisible_time or 0, rh.revive_qid or 0, ei.retry, ei.broker_name, ei.queue_id, offset
        ).build()
        msg.properties[PROPERTY_POP_CK] = new
        return new
