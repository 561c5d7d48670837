"""Producer: sync (awaited) send, batch send and one-way send with retries (L3).

Mirrors ``DefaultMQProducer`` / ``DefaultMQProducerImpl.sendDefaultImpl``: validate, find the
topic's publish queues (``TBW102`` fallback for topics the name server does not know yet),
pick a queue round-robin avoiding the broker of the previous failed attempt, compress large
bodies, and retry up to ``retry_times_when_send_failed`` times within one ``send_msg_timeout``
budget on network errors and on the codes in :data:`rocketpipe.errors.RETRY_RESPONSE_CODES`.

Request-reply (``DefaultMQProducerImpl.request`` / ``prepareSendRequest``): :meth:`Producer.request`
and :meth:`Producer.request_async` send a request and wait for its reply; the pending-request
table and the reply push are in :mod:`rocketpipe.client.request_reply`. A message with
``MSG_TYPE=reply`` (:func:`~rocketpipe.client.request_reply.create_reply_message`) goes out as
SEND_REPLY_MESSAGE_V2, as in ``MQClientAPIImpl.sendMessage``.

Message trace (``enable_msg_trace``, ``DefaultMQProducer(group, enableMsgTrace,
customizedTraceTopic)``): every answered send attempt records a Pub context
(:class:`~rocketpipe.client.trace.hooks.SendTracer`) into a
:class:`~rocketpipe.client.trace.dispatcher.TraceDispatcher` made by :func:`new_trace_dispatcher`,
whose inner producer (this class) sends the trace messages.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import re
import time
from typing import TYPE_CHECKING, Final

from ...clock import SYSTEM_CLOCK, Clock
from ...errors import (
    RETRY_RESPONSE_CODES,
    BrokerError,
    ClientClosedError,
    InvalidArgumentError,
    ReplyTimeoutError,
    RequestTimeoutError,
    RocketMQError,
    RouteNotFoundError,
    TopicNotExistError,
)
from ...protocol.codes import RequestCode
from ...protocol.compression import compress_zlib
from ...protocol.headers.send import RecallMessageRequestHeader, SendMessageRequestHeaderV2
from ...protocol.message import (
    PROPERTY_CORRELATION_ID,
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_MAX_RECONSUME_TIMES,
    PROPERTY_MESSAGE_REPLY_TO_CLIENT,
    PROPERTY_MESSAGE_TTL,
    PROPERTY_RECONSUME_TIME,
    PROPERTY_TRANSACTION_PREPARED,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    Message,
    MessageQueue,
    UniqueIdGenerator,
    encode_batch,
    properties_to_string,
)
from ...protocol.names import (
    AUTO_CREATE_TOPIC_KEY_TOPIC,
    DLQ_GROUP_TOPIC_PREFIX,
    RETRY_GROUP_TOPIC_PREFIX,
    SCHEDULE_TOPIC,
    is_retry_topic,
)
from ...protocol.recall import decode_recall_handle
from ...protocol.sysflag import COMPRESSED_FLAG, TRANSACTION_PREPARED_TYPE
from .. import rpc
from ..config import ClientConfig
from ..metrics import ClientMeter, client_meter
from ..request_reply import RequestCallback, RequestResponseFuture, create_correlation_id
from ..routing import RoundRobinSelector, default_topic_publish_queues, publish_queues
from ..rpc import SendResult, SendStatus
from ..runtime import ClientRuntime
from ..trace.dispatcher import TRACE_MAX_MSG_SIZE, TRACE_SEND_TIMEOUT, TraceDispatcher
from ..trace.hooks import SendTracer
from .fault import MQFaultStrategy
from .selectors import MessageQueueSelector

if TYPE_CHECKING:
    from ...protocol.headers.transaction import CheckTransactionStateRequestHeader
    from ...protocol.message import MessageExt
    from ...transport.connection import Connection

log = logging.getLogger(__name__)

#: DefaultMQProducer.maxMessageSize (4 MiB).
DEFAULT_MAX_MESSAGE_SIZE: Final = 4 * 1024 * 1024
#: TopicValidator: topic names are 1..127 characters of this set.
_TOPIC_RE: Final = re.compile(r"^[%|a-zA-Z0-9_-]+$")
#: TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET (the trace topic is not in it: trace producers send there)
NOT_ALLOWED_SEND_TOPICS: Final = frozenset(
    {
        SCHEDULE_TOPIC,
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "SELF_TEST_TOPIC",
        "OFFSET_MOVED_EVENT",
    }
)


def _ms_since(loop: asyncio.AbstractEventLoop, began: float) -> int:
    """Milliseconds from ``began`` (a ``loop.time()`` reading) until now."""
    return int((loop.time() - began) * 1000)


def _messages_of(code: int, msg_id: str) -> int:
    """Messages carried by one send request: a batch's ``msg_id`` joins its unique keys with commas."""
    return msg_id.count(",") + 1 if code == RequestCode.SEND_BATCH_MESSAGE else 1


def _ipv4_bytes(ip: str) -> bytes:
    try:
        addr = ipaddress.ip_address(ip)
    except ValueError:
        return b"\x7f\x00\x00\x01"
    return addr.packed if addr.version == 4 else b"\x7f\x00\x00\x01"


def check_topic(topic: str) -> None:
    """Validate a topic name like ``Validators.checkTopic``.

    Raises:
        InvalidArgumentError: empty, too long (127; 255 for ``%RETRY%``/``%DLQ%`` topics),
            characters outside ``[%|a-zA-Z0-9_-]``, or a topic one may not send to.
    """
    if not topic or not topic.strip():
        raise InvalidArgumentError("topic must not be blank")
    limit = 255 if topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX)) else 127
    if len(topic) > limit:
        raise InvalidArgumentError(f"topic {topic[:20]!r}... is longer than {limit} characters")
    if not _TOPIC_RE.match(topic):
        raise InvalidArgumentError(f"topic {topic!r} contains characters outside [%|a-zA-Z0-9_-]")
    if topic in NOT_ALLOWED_SEND_TOPICS:
        raise InvalidArgumentError(f"sending to system topic {topic!r} is not allowed")


def new_trace_dispatcher(
    runtime: ClientRuntime, host_group: str, kind: str, customized_trace_topic: str | None, clock: Clock
) -> TraceDispatcher:
    """The trace dispatcher of a tracing client (``new AsyncTraceDispatcher(group, type, ...)``).

    Its inner producer shares ``runtime``, with the trace producer's settings of Java
    (``sendMsgTimeout`` 5 s, ``maxMessageSize`` 128 000); the batch size is
    ``runtime.config.trace_msg_batch_num``. Not started.

    Args:
        runtime: the host client's runtime.
        host_group: the host's producer or consumer group.
        kind: ``"PRODUCE"`` or ``"CONSUME"``.
        customized_trace_topic: the trace topic, or None for ``RMQ_SYS_TRACE_TOPIC``.
        clock: wall clock.
    """

    def make(group: str) -> Producer:
        return Producer(
            group,
            runtime=runtime,
            send_msg_timeout=TRACE_SEND_TIMEOUT,
            max_message_size=TRACE_MAX_MSG_SIZE,
            clock=clock,
        )

    return TraceDispatcher(
        host_group,
        kind,
        make,
        trace_topic=customized_trace_topic,
        batch_num=runtime.config.trace_msg_batch_num,
    )


async def start_trace_dispatcher(
    runtime: ClientRuntime, host_group: str, kind: str, customized_trace_topic: str | None, clock: Clock
) -> TraceDispatcher | None:
    """:func:`new_trace_dispatcher`, started; None (logged) when it cannot start: the client
    then runs without tracing, as Java does after "trace dispatcher start failed"."""
    dispatcher = new_trace_dispatcher(runtime, host_group, kind, customized_trace_topic, clock)
    try:
        await dispatcher.start()
    except RocketMQError as exc:
        log.warning("trace dispatcher start failed group=%s: %s", host_group, exc)
        await dispatcher.close()
        return None
    return dispatcher


class Producer:
    """Asynchronous producer; use ``async with Producer(group, namesrv_addr=...) as p``.

    Mirrors ``DefaultMQProducer``. Methods start the producer on first use if needed.

    Args:
        producer_group: the group (``producerGroup``, default ``DEFAULT_PRODUCER``).
        namesrv_addr: ``;``-separated name servers (or give ``config`` / ``runtime``).
        config: client settings.
        runtime: share a runtime (not closed by this producer).
        send_msg_timeout: total budget of one sync send across retries, seconds. Mirrors
            ``DefaultMQProducer.sendMsgTimeout`` (3 000 ms).
        retry_times_when_send_failed: extra attempts of a sync send. Mirrors
            ``DefaultMQProducer.retryTimesWhenSendFailed`` (2).
        retry_another_broker_when_not_store_ok: retry on FLUSH_DISK_TIMEOUT etc. Mirrors
            ``DefaultMQProducer.retryAnotherBrokerWhenNotStoreOK`` (False).
        compress_msg_body_over_howmuch: bodies of at least this many bytes are zlib-compressed.
            Mirrors ``DefaultMQProducer.compressMsgBodyOverHowmuch`` (4096).
        compress_level: zlib level (``compressLevel``, 5).
        max_message_size: max body (or encoded batch) size in bytes. Mirrors
            ``DefaultMQProducer.maxMessageSize`` (4 MiB).
        create_topic_key: template topic for auto-creation (``createTopicKey``, ``TBW102``).
        default_topic_queue_nums: queues of an auto-created topic (``defaultTopicQueueNums``, 4).
        clock: wall clock (born timestamps).
        enable_msg_trace: record a Pub trace for every answered send (and EndTransaction
            records for a :class:`~rocketpipe.client.TransactionProducer`) into the trace topic
            (``enableMsgTrace``, False). Trace messages go out in the background; a trace
            failure never fails a send.
        customized_trace_topic: the trace topic (``customizedTraceTopic``; None:
            ``RMQ_SYS_TRACE_TOPIC``, which brokers create with ``traceTopicEnable=true``).
        send_latency_fault_enable: leave slow or failing brokers out of the queue choice for a
            while (``sendLatencyFaultEnable`` / 5.x ``sendLatencyEnable``, False): a failed
            attempt isolates its broker for 10 s, a slow one (≥ 550 ms) for 2 s and more;
            see :mod:`~rocketpipe.client.producer.fault` (:attr:`mq_fault_strategy`).

    Raises:
        InvalidArgumentError: no name server given, or a bad setting.
    """

    def __init__(
        self,
        producer_group: str = "DEFAULT_PRODUCER",
        *,
        namesrv_addr: str | None = None,
        config: ClientConfig | None = None,
        runtime: ClientRuntime | None = None,
        send_msg_timeout: float = 3.0,
        retry_times_when_send_failed: int = 2,
        retry_another_broker_when_not_store_ok: bool = False,
        compress_msg_body_over_howmuch: int = 4096,
        compress_level: int = 5,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        create_topic_key: str = AUTO_CREATE_TOPIC_KEY_TOPIC,
        default_topic_queue_nums: int = 4,
        clock: Clock = SYSTEM_CLOCK,
        enable_msg_trace: bool = False,
        customized_trace_topic: str | None = None,
        send_latency_fault_enable: bool = False,
    ) -> None:
        if not producer_group:
            raise InvalidArgumentError("producer_group must not be empty")
        if send_msg_timeout <= 0 or retry_times_when_send_failed < 0 or max_message_size <= 0:
            raise InvalidArgumentError(
                "send_msg_timeout > 0, retry_times_when_send_failed >= 0, max_message_size > 0 required"
            )
        if runtime is None:
            if config is None:
                if not namesrv_addr:
                    raise InvalidArgumentError("Producer needs namesrv_addr, config or runtime")
                config = ClientConfig(namesrv_addr=namesrv_addr)
            runtime = ClientRuntime(config, clock=clock)
            self._owns_runtime = True
        else:
            self._owns_runtime = False
        self.producer_group = producer_group
        self.send_msg_timeout = send_msg_timeout
        self.retry_times_when_send_failed = retry_times_when_send_failed
        self.retry_another_broker_when_not_store_ok = retry_another_broker_when_not_store_ok
        self.compress_msg_body_over_howmuch = compress_msg_body_over_howmuch
        self.compress_level = compress_level
        self.max_message_size = max_message_size
        self.create_topic_key = create_topic_key
        self.default_topic_queue_nums = default_topic_queue_nums
        self._runtime = runtime
        self._clock = clock
        self._ids = UniqueIdGenerator(_ipv4_bytes(runtime.config.client_ip))
        self._selectors: dict[str, RoundRobinSelector] = {}
        self._valid_topics: set[str] = set()  # names that passed check_topic (hot-path cache)
        self._fixed_ext: dict[str, str] | None = None
        self._publish: dict[str, tuple[object, list[MessageQueue]]] = {}
        self._started = False
        self._closed = False
        self._start_lock: asyncio.Lock | None = None
        self._default_route_asked = False  # request-reply: create_topic_key's route fetched once
        self.enable_msg_trace = enable_msg_trace
        self.customized_trace_topic = customized_trace_topic
        self._tracer: SendTracer | None = None
        self._meter: ClientMeter | None = None  # ClientConfig.metrics: made at start, dropped at close
        #: broker isolation and queue choice (``MQFaultStrategy``); its tables can be replaced
        self.mq_fault_strategy = MQFaultStrategy(clock.now_ms, send_latency_fault_enable)

    @property
    def runtime(self) -> ClientRuntime:
        """The client runtime used."""
        return self._runtime

    @property
    def send_latency_fault_enable(self) -> bool:
        """Whether brokers are isolated after slow or failed sends (``setSendLatencyFaultEnable``)."""
        return self.mq_fault_strategy.send_latency_fault_enable

    @send_latency_fault_enable.setter
    def send_latency_fault_enable(self, on: bool) -> None:
        self.mq_fault_strategy.send_latency_fault_enable = on

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Register the group and start the runtime's periodic tasks (idempotent).

        Raises:
            ClientClosedError: the producer was closed.
        """
        if self._closed:
            raise ClientClosedError("producer is closed")
        if self._started:
            return
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            if self._started:
                return
            self._runtime.register_producer(self.producer_group, self)
            await self._runtime.start()
            if self.enable_msg_trace:
                dispatcher = await start_trace_dispatcher(
                    self._runtime, self.producer_group, "PRODUCE", self.customized_trace_topic, self._clock
                )
                if dispatcher is not None:
                    self._tracer = SendTracer(dispatcher, self.producer_group, self._clock)
            self._meter = client_meter(self._runtime.config, self._runtime.client_id)
            self._started = True

    @property
    def trace_dispatcher(self) -> TraceDispatcher | None:
        """The trace dispatcher while tracing (``getTraceDispatcher``), else None."""
        return self._tracer.dispatcher if self._tracer is not None else None

    async def close(self) -> None:
        """Unregister from the brokers and close the runtime if owned; idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._meter is not None:
            self._meter.close()
            self._meter = None
        if self._tracer is not None:
            await self._tracer.dispatcher.close()
        if self._started:
            self._runtime.unregister_producer(self.producer_group, self)
            await self._runtime.unregister_client(producer_group=self.producer_group)
        if self._owns_runtime:
            await self._runtime.close()

    async def __aenter__(self) -> Producer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def check_transaction_state(
        self, conn: Connection, msg: MessageExt, header: CheckTransactionStateRequestHeader
    ) -> None:
        """CHECK_TRANSACTION_STATE for this group: a plain producer has no transaction listener,
        so the check is only logged (Java: "pick transactionCheckListener by group failed").
        :class:`~rocketpipe.client.producer.transaction.TransactionProducer` answers it."""
        log.warning(
            "CHECK_TRANSACTION_STATE for group=%s msgId=%s from=%s, but this producer has no transaction listener",
            self.producer_group,
            header.msg_id,
            conn.remote_address,
        )

    # ------------------------------------------------------------------ routes

    def _cached_publish_queues(self, topic: str) -> list[MessageQueue] | None:
        """Fast path: the publish queues of a cached, unchanged route (no I/O)."""
        cached = self._publish.get(topic)
        if cached is not None and cached[1] and cached[0] is self._runtime.cached_route(topic):
            return cached[1]
        return None

    async def _publish_queues(self, topic: str, *, refresh: bool = False) -> tuple[list[MessageQueue], bool]:
        """Return (queues, uses_default_topic)."""
        if not refresh:
            fast = self._cached_publish_queues(topic)
            if fast is not None:
                return fast, False
        rt = self._runtime
        rt.add_route_topic(topic)
        route = None if refresh else rt.cached_route(topic)
        if route is None:
            try:
                route = await rt.fetch_route(topic)
            except TopicNotExistError:
                route = None
        if route is not None:
            cached = self._publish.get(topic)
            if cached is None or cached[0] is not route:
                cached = (route, publish_queues(topic, route))
                self._publish[topic] = cached
            if cached[1]:
                return cached[1], False
            # tryToFindTopicPublishInfo: a topic the name server routes (haveTopicRouterInfo) is
            # never sent through the TBW102 template, even when none of its queues is writable
            raise RouteNotFoundError(f"no route info of topic {topic!r}: none of its queues is writable")
        default_route = await rt.route(self.create_topic_key, refresh=refresh)
        queues = default_topic_publish_queues(topic, default_route, self.default_topic_queue_nums)
        if not queues:
            raise RouteNotFoundError(f"no route info of topic {topic!r} and no writable {self.create_topic_key} queue")
        return queues, True

    # ------------------------------------------------------------------ send

    def _check_topic(self, topic: str) -> None:
        if topic not in self._valid_topics:
            check_topic(topic)
            if len(self._valid_topics) < 4096:
                self._valid_topics.add(topic)

    def _check_message(self, msg: Message) -> None:
        self._check_topic(msg.topic)
        if not msg.body:
            raise InvalidArgumentError("message body must not be empty")
        if len(msg.body) > self.max_message_size:
            raise InvalidArgumentError(
                f"message body of {len(msg.body)} bytes exceeds max_message_size {self.max_message_size}"
            )

    def _header(
        self, topic: str, queue_id: int, sys_flag: int, flag: int, props: dict[str, str], batch: bool
    ) -> SendMessageRequestHeaderV2:
        reconsume: int | None = None
        max_reconsume: int | None = None
        if is_retry_topic(topic):
            try:
                reconsume = int(props.get(PROPERTY_RECONSUME_TIME, "0"))
                max_reconsume = (
                    int(props[PROPERTY_MAX_RECONSUME_TIMES]) if PROPERTY_MAX_RECONSUME_TIMES in props else None
                )
            except ValueError:
                reconsume = 0
        return SendMessageRequestHeaderV2(
            producer_group=self.producer_group,
            topic=topic,
            default_topic=self.create_topic_key,
            default_topic_queue_nums=self.default_topic_queue_nums,
            queue_id=queue_id,
            sys_flag=sys_flag,
            born_timestamp=self._clock.now_ms(),
            flag=flag,
            properties=properties_to_string(props) if props else None,
            reconsume_times=reconsume if reconsume is not None else 0,
            unit_mode=False,
            batch=batch,
            max_reconsume_times=max_reconsume,
        )

    def _ext_fields(
        self, topic: str, queue_id: int, sys_flag: int, flag: int, props: dict[str, str], batch: bool
    ) -> dict[str, str]:
        """``self._header(...).to_ext_fields()`` built directly (the send hot path).

        Equal to the typed header's map key for key; retry topics take the typed path.
        """
        if is_retry_topic(topic):
            return self._header(topic, queue_id, sys_flag, flag, props, batch).to_ext_fields()
        fixed = self._fixed_ext
        if (
            fixed is None
            or fixed["a"] != self.producer_group
            or fixed["c"] != self.create_topic_key
            or fixed["d"] != str(self.default_topic_queue_nums)
        ):
            fixed = self._fixed_ext = {
                "a": self.producer_group,
                "c": self.create_topic_key,
                "d": str(self.default_topic_queue_nums),
                "j": "0",
                "k": "false",
            }
        ext = fixed.copy()
        ext["b"] = topic
        ext["e"] = str(queue_id)
        ext["f"] = str(sys_flag)
        ext["g"] = str(self._clock.now_ms())
        ext["h"] = str(flag)
        if props:
            ext["i"] = properties_to_string(props)
        ext["m"] = "true" if batch else "false"
        return ext

    def _prepare_single(self, msg: Message) -> tuple[bytes, int]:
        if PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX not in msg.properties:
            msg.properties[PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = self._ids.next_id()
        body, sys_flag = msg.body, 0
        if len(body) >= self.compress_msg_body_over_howmuch:
            body = compress_zlib(body, self.compress_level)
            sys_flag |= COMPRESSED_FLAG
        if msg.properties.get(PROPERTY_TRANSACTION_PREPARED, "").lower() == "true":
            sys_flag |= TRANSACTION_PREPARED_TYPE
        return body, sys_flag

    async def send(
        self,
        msg: Message,
        *,
        queue: MessageQueue | None = None,
        selector: MessageQueueSelector | None = None,
        arg: object = None,
        timeout: float | None = None,
    ) -> SendResult:
        """Send one message and wait for the broker's answer.

        Sets ``UNIQ_KEY`` on ``msg`` if absent; compresses bodies of at least
        ``compress_msg_body_over_howmuch`` bytes (zlib, sysflag ``0x1``). By default the queue
        is picked round-robin with retries on another broker; with ``queue`` or ``selector`` the
        message goes to that one queue in a single attempt, as Java's
        ``send(Message, MessageQueue)`` / ``send(Message, MessageQueueSelector, Object)``
        (``sendKernelImpl`` / ``sendSelectImpl``) do: ordered messages are never re-routed.
        A reply (``MSG_TYPE=reply``, from
        :func:`~rocketpipe.client.request_reply.create_reply_message`) is sent as
        SEND_REPLY_MESSAGE_V2; the broker pushes it to the requester, and its answer's
        ``offset_msg_id`` is the stored reply's id, or ``"0"`` when the broker does not store
        replies.

        Args:
            msg: the message (``Message.build(...)``).
            queue: send to exactly this queue (its topic must be ``msg.topic``).
            selector: ``(queues, msg, arg) -> MessageQueue`` over the topic's writable queues,
                e.g. :func:`~rocketpipe.client.producer.selectors.select_by_hash` with an order
                id as ``arg`` for per-order FIFO.
            arg: passed to ``selector``.
            timeout: total budget across retries, seconds (default ``send_msg_timeout``).

        Returns:
            The :class:`SendResult` (status SEND_OK, or a degraded store status).

        Raises:
            InvalidArgumentError: bad topic, empty body, body over ``max_message_size``.
            BrokerError: a non-retriable code, or the last retriable one.
            TransportError / RequestTimeoutError: every attempt failed on the network / the
                budget ran out.
            TopicNotExistError: no route for the topic nor for ``TBW102``.
            InvalidArgumentError: also ``queue`` and ``selector`` both given, ``queue`` of another
                topic, or a selector that returned no queue of the topic.
        """
        self._check_message(msg)
        if queue is not None and selector is not None:
            raise InvalidArgumentError("pass either queue= or selector=, not both")
        if queue is not None and queue.topic != msg.topic:
            raise InvalidArgumentError(f"queue {queue} is not a queue of the message's topic {msg.topic!r}")
        if not self._started or self._closed:
            await self.start()
        body, sys_flag = self._prepare_single(msg)
        if queue is None and selector is None:
            return await self._send_with_retries(
                msg.topic, body, sys_flag, msg.flag, msg.properties, msg.unique_key or "", False, timeout
            )
        if selector is not None:
            queues, _ = await self._publish_queues(msg.topic)
            if not queues:
                raise TopicNotExistError(f"no writable queue of topic {msg.topic!r} to select from")
            try:
                queue = selector(queues, msg, arg)
            except InvalidArgumentError:
                raise
            except Exception as exc:  # sendSelectImpl: "select message queue threw exception."
                raise InvalidArgumentError(f"the queue selector raised {type(exc).__name__}: {exc}") from exc
            if not isinstance(queue, MessageQueue) or queue.topic != msg.topic:
                raise InvalidArgumentError(
                    f"selector returned {queue!r}, not one of the {len(queues)} queues of {msg.topic!r}"
                )
        assert queue is not None
        return await self._send_to_queue(
            queue, body, sys_flag, msg.flag, msg.properties, msg.unique_key or "", False, timeout
        )

    async def _send_to_queue(
        self,
        mq: MessageQueue,
        body: bytes,
        sys_flag: int,
        flag: int,
        props: dict[str, str],
        msg_id: str,
        batch: bool,
        timeout: float | None,
    ) -> SendResult:
        """One attempt to one queue (``sendKernelImpl``), within ``timeout`` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (self.send_msg_timeout if timeout is None else timeout)
        addr = self._runtime.find_broker_addr(mq.broker_name) or await self._runtime.find_master_addr(
            mq.broker_name, mq.topic
        )
        ext = self._ext_fields(mq.topic, mq.queue_id, sys_flag, flag, props, batch)
        code = rpc.send_code(props, batch)
        return await self._send_ext(addr, mq, code, ext, body, msg_id, deadline - loop.time(), props)

    async def _send_ext(
        self,
        addr: str,
        mq: MessageQueue,
        code: int,
        ext: dict[str, str],
        body: bytes,
        msg_id: str,
        timeout: float,
        props: dict[str, str],
    ) -> SendResult:
        """One send request (``sendKernelImpl``'s RPC), with its Pub trace when tracing and its
        ``rocketmq_send_cost_time`` observation with metrics (failure: the RPC raised)."""
        tracer, meter = self._tracer, self._meter
        if tracer is None and meter is None:
            return await rpc.send_message_ext(self._runtime.pool, addr, mq, code, ext, body, msg_id, timeout)
        begin = tracer.now_ms() if tracer is not None else 0
        t0 = time.perf_counter()
        try:
            result = await rpc.send_message_ext(self._runtime.pool, addr, mq, code, ext, body, msg_id, timeout)
        except Exception:
            if meter is not None:
                meter.record_send(mq.topic, time.perf_counter() - t0, False, _messages_of(code, msg_id))
            raise
        if meter is not None:
            meter.record_send(mq.topic, time.perf_counter() - t0, True, _messages_of(code, msg_id))
        if tracer is not None:
            tracer.on_sent(mq.topic, props, addr, len(body), begin, result)
        return result

    async def recall_message(self, topic: str, recall_handle: str) -> str:
        """Take back a timer message before its delivery time (5.3.2+ brokers).

        Mirrors ``DefaultMQProducer.recallMessage`` / ``DefaultMQProducerImpl.recallMessage``:
        the handle (``SendResult.recall_handle`` of the timer message's send) names the broker;
        RECALL_MESSAGE goes to that broker's master, or to a broker of ``topic``'s route when the
        name is not known (a proxy endpoint). The broker stores a delete timer message and the
        original is never delivered.

        Args:
            topic: the message's topic.
            recall_handle: from the send result.

        Returns:
            The recalled message's ``UNIQ_KEY``.

        Raises:
            InvalidArgumentError: a bad topic, a ``%RETRY%`` / ``%DLQ%`` topic ("topic is not
                supported"), or a handle that does not decode ("recall handle is invalid").
            BrokerError: the broker refused (NO_PERMISSION when its ``recallMessageEnable`` is
                off; ILLEGAL_OPERATION when the time has passed or the handle is another
                topic's); TopicNotExistError / TransportError / RequestTimeoutError.
        """
        if not self._started or self._closed:
            await self.start()
        check_topic(topic)
        if is_retry_topic(topic) or topic.startswith(DLQ_GROUP_TOPIC_PREFIX):
            raise InvalidArgumentError("topic is not supported")
        handle = decode_recall_handle(recall_handle)
        rt = self._runtime
        route = await rt.route(topic)
        # Java's findBrokerAddressInPublish, else findBrokerAddrByTopic (a broker of the route)
        addr = rt.find_broker_addr(handle.broker_name) or next(
            (a for bd in route.broker_datas or () if (a := bd.select_broker_addr())), None
        )
        if not addr:
            raise RocketMQError(f"The broker service address not found: {handle.broker_name}")
        header = RecallMessageRequestHeader(
            producer_group=self.producer_group, topic=topic, recall_handle=recall_handle, bname=handle.broker_name
        )
        return await rpc.recall_message(rt.pool, addr, header, self.send_msg_timeout)

    async def send_batch(
        self, msgs: list[Message], *, queue: MessageQueue | None = None, timeout: float | None = None
    ) -> SendResult:
        """Send several messages of one topic as one SEND_BATCH_MESSAGE.

        Mirrors ``DefaultMQProducer.send(Collection<Message>)``: same topic, no delay level, no
        retry topic; every message gets its own ``UNIQ_KEY``; batches are never compressed.
        With ``queue`` the batch goes to that queue in a single attempt
        (``send(Collection<Message>, MessageQueue)``); its topic must be the messages' topic.

        Returns:
            One :class:`SendResult`; ``msg_id`` joins the unique keys with commas.

        Raises:
            InvalidArgumentError: empty batch, mixed topics, delay levels, retry topic, empty
                body, or encoded size over ``max_message_size``.
            BrokerError / TransportError / RequestTimeoutError: as :meth:`send`.
        """
        if not msgs:
            raise InvalidArgumentError("batch must contain at least one message")
        topic = msgs[0].topic
        if is_retry_topic(topic):
            raise InvalidArgumentError("retry group messages are not supported for batching")
        keyless: list[dict[str, str]] = []
        max_size = self.max_message_size
        self._check_topic(topic)  # once: every message must have it
        for m in msgs:  # _check_message's body checks inlined (a call per message is a third of this loop)
            if m.topic != topic:
                raise InvalidArgumentError("all messages of a batch must have the same topic")
            props = m.properties
            if PROPERTY_DELAY_TIME_LEVEL in props and m.delay_time_level > 0:
                raise InvalidArgumentError("delay levels are not supported for batch messages")
            body = m.body
            if not body or len(body) > max_size:
                self._check_message(m)  # raises the body's error
            if PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX not in props:
                keyless.append(props)
        if keyless:  # one clock read for the batch's new keys
            for props, uniq in zip(keyless, self._ids.next_ids(len(keyless)), strict=True):
                props[PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = uniq
        body = encode_batch(msgs)
        if len(body) > self.max_message_size:
            raise InvalidArgumentError(
                f"encoded batch of {len(body)} bytes exceeds max_message_size {self.max_message_size}"
            )
        if queue is not None and queue.topic != topic:
            raise InvalidArgumentError(f"queue {queue} is not a queue of the batch's topic {topic!r}")
        await self.start()
        msg_id = ",".join([m.properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or "" for m in msgs])
        if queue is not None:
            return await self._send_to_queue(queue, body, 0, 0, {}, msg_id, True, timeout)
        return await self._send_with_retries(topic, body, 0, 0, {}, msg_id, True, timeout)

    async def send_oneway(self, msg: Message) -> None:
        """Send one message without waiting for the broker (one attempt, no result).

        Raises:
            InvalidArgumentError: as :meth:`send`; TransportError: the request could not be
            written; TopicNotExistError: no route.
        """
        self._check_message(msg)
        await self.start()
        body, sys_flag = self._prepare_single(msg)
        queues, _ = await self._publish_queues(msg.topic)
        mq = self._selector(msg.topic).select(queues)
        addr = await self._runtime.find_master_addr(mq.broker_name, msg.topic)
        header = self._header(msg.topic, mq.queue_id, sys_flag, msg.flag, msg.properties, False)
        await rpc.send_message_oneway(self._runtime.pool, addr, header, body, rpc.send_code(msg.properties, False))

    def _selector(self, topic: str) -> RoundRobinSelector:
        sel = self._selectors.get(topic)
        if sel is None:
            sel = self._selectors[topic] = RoundRobinSelector()
        return sel

    async def _send_with_retries(
        self,
        topic: str,
        body: bytes,
        sys_flag: int,
        flag: int,
        props: dict[str, str],
        msg_id: str,
        batch: bool,
        timeout: float | None,
    ) -> SendResult:
        loop = asyncio.get_running_loop()
        budget = self.send_msg_timeout if timeout is None else timeout
        deadline = loop.time() + budget
        attempts = 1 + self.retry_times_when_send_failed
        last_broker: str | None = None
        last_exc: RocketMQError | None = None
        refresh = False
        selector = self._selector(topic)
        faults = self.mq_fault_strategy
        track = faults.send_latency_fault_enable  # off: no latency bookkeeping per send
        code = rpc.send_code(props, batch)
        for attempt in range(attempts):
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise RequestTimeoutError(
                    f"send to {topic!r} timed out after {budget}s ({attempt} attempts; last error: {last_exc})"
                )
            began: float | None = None  # when the attempt reached a broker (for the fault table)
            try:
                queues = None if refresh else self._cached_publish_queues(topic)
                if queues is None:
                    queues, _ = await self._publish_queues(topic, refresh=refresh)
                refresh = False
                mq = faults.select_one_message_queue(queues, selector, last_broker, attempt > 0)
                last_broker = mq.broker_name
                addr = self._runtime.find_broker_addr(mq.broker_name) or await self._runtime.find_master_addr(
                    mq.broker_name, topic
                )
                ext = self._ext_fields(topic, mq.queue_id, sys_flag, flag, props, batch)
                began = loop.time()
                result = await self._send_ext(addr, mq, code, ext, body, msg_id, deadline - began, props)
                if track:
                    faults.update_fault_item(mq.broker_name, _ms_since(loop, began), isolation=False, reachable=True)
            except InvalidArgumentError:
                raise
            except BrokerError as exc:
                last_exc = exc
                if track and began is not None:  # MQBrokerException: isolated and marked unreachable
                    faults.update_fault_item(last_broker or "", _ms_since(loop, began), isolation=True, reachable=False)
                if exc.response_code not in RETRY_RESPONSE_CODES:
                    raise
                refresh = exc.refresh_route
                if attempt + 1 < attempts:
                    log.warning(
                        "send failed, retrying topic=%s broker=%s attempt=%d err=%s",
                        topic,
                        last_broker,
                        attempt + 1,
                        exc,
                    )
                continue
            except RocketMQError as exc:
                last_exc = exc
                if track and began is not None:  # RemotingException without the reachability detector: isolated
                    faults.update_fault_item(last_broker or "", _ms_since(loop, began), isolation=True, reachable=True)
                refresh = exc.refresh_route
                if attempt + 1 < attempts:
                    log.warning(
                        "send failed, retrying topic=%s broker=%s attempt=%d err=%s",
                        topic,
                        last_broker,
                        attempt + 1,
                        exc,
                    )
                continue
            if (
                result.send_status is not SendStatus.SEND_OK
                and self.retry_another_broker_when_not_store_ok
                and attempt + 1 < attempts
            ):
                log.warning("send stored with %s, retrying on another broker topic=%s", result.send_status.name, topic)
                continue
            return result
        assert last_exc is not None
        raise last_exc

    # ------------------------------------------------------------------ request-reply

    def _check_request(
        self, msg: Message, timeout: float, queue: MessageQueue | None, selector: MessageQueueSelector | None
    ) -> None:
        if not timeout > 0:
            raise InvalidArgumentError(f"request timeout must be > 0 seconds, not {timeout!r}")
        self._check_message(msg)
        if queue is not None and selector is not None:
            raise InvalidArgumentError("pass either queue= or selector=, not both")
        if queue is not None and queue.topic != msg.topic:
            raise InvalidArgumentError(f"queue {queue} is not a queue of the message's topic {msg.topic!r}")

    async def _prepare_send_request(self, msg: Message, timeout: float) -> str:
        """Java ``prepareSendRequest``: put ``CORRELATION_ID``, ``REPLY_TO_CLIENT`` and ``TTL`` on
        ``msg`` and make sure the brokers know this client before the request is stored.

        A topic without a cached route gets its route first (its brokers join the broker
        table). The first request also learns (and keeps refreshed) the route of
        ``create_topic_key`` (``TBW102``), which names every broker that auto-creates topics:
        Java's producer keeps that route from its start. Then every known master whose
        connection has not carried a heartbeat gets one
        (:meth:`ClientRuntime.heartbeat_masters_once`): the replier's producer sends the reply
        to any broker of ``<cluster>_REPLY_TOPIC`` (every broker of the cluster has it), and a
        broker pushes only to a client whose heartbeat it has.
        """
        if not self._started or self._closed:
            await self.start()
        correlation_id = create_correlation_id()
        rt = self._runtime
        msg.properties[PROPERTY_CORRELATION_ID] = correlation_id
        msg.properties[PROPERTY_MESSAGE_REPLY_TO_CLIENT] = rt.client_id
        msg.properties[PROPERTY_MESSAGE_TTL] = str(round(timeout * 1000))
        if not self._default_route_asked:
            self._default_route_asked = True
            rt.add_route_topic(self.create_topic_key)
            if rt.cached_route(self.create_topic_key) is None:
                try:
                    await rt.fetch_route(self.create_topic_key)
                except RocketMQError as exc:  # autoCreateTopicEnable=false: the topic routes only
                    log.debug("no %s route for request-reply: %s", self.create_topic_key, exc)
        if rt.cached_route(msg.topic) is None:
            try:
                await self._publish_queues(msg.topic)
            except RocketMQError as exc:  # the send reports it
                log.debug("no route for request topic=%s: %s", msg.topic, exc)
        await rt.heartbeat_masters_once()
        rt.ensure_request_scan()
        return correlation_id

    async def request(
        self,
        msg: Message,
        timeout: float,
        *,
        queue: MessageQueue | None = None,
        selector: MessageQueueSelector | None = None,
        arg: object = None,
    ) -> MessageExt:
        """Send ``msg`` as a request and wait for its reply (Java ``DefaultMQProducer.request``).

        Puts ``CORRELATION_ID`` (a new UUID), ``REPLY_TO_CLIENT`` (this client's id) and ``TTL``
        (``timeout`` in ms) on ``msg`` and sends it like :meth:`send` (with ``queue`` /
        ``selector`` + ``arg`` as there); a consumer answers with
        :func:`~rocketpipe.client.request_reply.create_reply_message` and a send, and the broker
        pushes the reply to this client. Any stored status (also FLUSH_DISK_TIMEOUT etc.) counts
        as sent, as in Java.

        Args:
            msg: the request (``Message.build(...)``); changed in place as above.
            timeout: seconds for the send and the reply together (Java's ``timeout`` in ms).
            queue: send to exactly this queue.
            selector: pick the queue, as in :meth:`send`.
            arg: passed to ``selector``.

        Returns:
            The reply: its topic (``<cluster>_REPLY_TOPIC``), body, flag and properties
            (``CORRELATION_ID``, ``REPLY_TO_CLIENT``, ``TTL``, ``MSG_TYPE=reply``, the replier's
            ``UNIQ_KEY`` and own properties, the broker's ``PUSH_REPLY_TIME``, and this client's
            ``ARRIVE_TIME``), born / store hosts and timestamps.

        Raises:
            ReplyTimeoutError: the request was sent, but no reply came within ``timeout``
                (Java's ``RequestTimeoutException``, code 10006). A subclass of
                :class:`~rocketpipe.errors.RequestTimeoutError`.
            InvalidArgumentError: ``timeout`` not > 0, or a bad message / queue / selector
                (see :meth:`send`).
            BrokerError / TransportError / RequestTimeoutError / TopicNotExistError: the request
                could not be sent (the send's own error; Java wraps it in "send request message
                to <topic> fail").
            ClientClosedError: the producer closed while waiting.
        """
        self._check_request(msg, timeout, queue, selector)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        correlation_id = await self._prepare_send_request(msg, timeout)
        holder = self._runtime.request_futures
        fut = holder.register(correlation_id, round(timeout * 1000))
        try:
            await self.send(msg, queue=queue, selector=selector, arg=arg, timeout=max(0.001, deadline - loop.time()))
            reply = await fut.wait_response_message(deadline - loop.time())
        finally:
            holder.remove(fut)
        if reply is not None:
            return reply
        if fut.cause is not None and not isinstance(fut.cause, ReplyTimeoutError):
            raise fut.cause
        raise ReplyTimeoutError(
            f"send request message to <{msg.topic}> OK, but wait reply message timeout, {round(timeout * 1000)} ms."
        )

    async def request_async(
        self,
        msg: Message,
        callback: RequestCallback,
        timeout: float,
        *,
        queue: MessageQueue | None = None,
        selector: MessageQueueSelector | None = None,
        arg: object = None,
    ) -> None:
        """Send ``msg`` as a request; ``callback`` gets the reply or the failure (Java
        ``DefaultMQProducer.request(msg, RequestCallback, timeout)`` and its selector / queue
        forms).

        Returns once the request is registered and its send started (the send runs as a
        task of the client): ``callback.on_success(reply)`` runs when the reply arrives,
        ``callback.on_exception(e)`` when the send fails (the send's error), when no reply came
        within ``timeout`` (:class:`~rocketpipe.errors.ReplyTimeoutError`, found by the expiry
        scan: up to a second late) or when the client closes first. The callback runs on the
        client's event loop.

        Raises:
            InvalidArgumentError: as :meth:`request` (nothing was sent).
        """
        self._check_request(msg, timeout, queue, selector)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        correlation_id = await self._prepare_send_request(msg, timeout)
        holder = self._runtime.request_futures
        fut = holder.register(correlation_id, round(timeout * 1000), callback)
        budget = max(0.001, deadline - loop.time())
        self._runtime.tasks.spawn(
            self._send_request(fut, msg, budget, queue, selector, arg), f"request-{correlation_id}"
        )

    async def _send_request(
        self,
        fut: RequestResponseFuture,
        msg: Message,
        timeout: float,
        queue: MessageQueue | None,
        selector: MessageQueueSelector | None,
        arg: object,
    ) -> None:
        try:
            await self.send(msg, queue=queue, selector=selector, arg=arg, timeout=timeout)
        except Exception as exc:  # never out of a runtime task: the callback gets it
            log.warning("send request message to <%s> fail: %s", msg.topic, exc)
            self._runtime.request_futures.fail(fut, exc)
