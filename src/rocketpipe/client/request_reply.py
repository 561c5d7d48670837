"""Request-reply (RocketMQ 4.6+), client side (L3): the table of pending requests, the reply
push, and the replier's :func:`create_reply_message`.

A requester sends an ordinary message that carries three properties: ``CORRELATION_ID`` (a
random UUID), ``REPLY_TO_CLIENT`` (the requester's client id, the one its heartbeats carry) and
``TTL`` (the request's timeout in ms). The broker that stores it adds ``CLUSTER``. A consumer
answers with a message built by :func:`create_reply_message` (topic ``<CLUSTER>_REPLY_TOPIC``,
``MSG_TYPE=reply`` and the three properties copied), which a producer sends as
SEND_REPLY_MESSAGE_V2 (325). The broker then pushes the reply to the requester's connection
with PUSH_REPLY_MESSAGE_TO_CLIENT (326, two-way); the requester matches it to the pending
request by ``CORRELATION_ID``.

Mirrors Java 5.3.3 (the same in 4.9.8):

- :class:`RequestCallback`, :class:`RequestResponseFuture`, :class:`RequestFutureHolder`: the Java
  classes of the same names (one holder per :class:`~rocketpipe.client.runtime.ClientRuntime`,
  not per process: replies are addressed to a client id);
- :func:`reply_message_from_push`: ``ClientRemotingProcessor.receiveReplyMessage``;
  :meth:`RequestFutureHolder.complete`: its ``processReplyMessage``;
- :func:`create_reply_message`, :func:`get_reply_to_client`, :class:`MessageUtil`: Java's
  ``client.utils.MessageUtil``; :func:`reply_topic`: ``MixAll.getReplyTopic``;
- :func:`create_correlation_id`: ``CorrelationIdUtil.createCorrelationId``.

The requester's side (``DefaultMQProducerImpl.request``) is :meth:`Producer.request
<rocketpipe.client.producer.producer.Producer.request>` and :meth:`Producer.request_async
<rocketpipe.client.producer.producer.Producer.request_async>`.

Imports protocol, errors and clock only (no transport, no other client module), so the runtime
and the producer can both use it.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Final, Protocol, runtime_checkable

from ..clock import SYSTEM_CLOCK, Clock
from ..errors import InvalidArgumentError, ProtocolError, ReplyTimeoutError
from ..protocol.compression import decompress
from ..protocol.headers.send import ReplyMessageRequestHeader
from ..protocol.message import (
    PROPERTY_CLUSTER,
    PROPERTY_CORRELATION_ID,
    PROPERTY_MESSAGE_REPLY_TO_CLIENT,
    PROPERTY_MESSAGE_TTL,
    PROPERTY_MESSAGE_TYPE,
    REPLY_MESSAGE_FLAG,
    Message,
    MessageExt,
    string_to_properties,
)
from ..protocol.sysflag import COMPRESSED_FLAG

__all__ = [
    "PROPERTY_REPLY_MESSAGE_ARRIVE_TIME",
    "REPLY_TOPIC_POSTFIX",
    "REQUEST_SCAN_INITIAL_DELAY",
    "REQUEST_SCAN_INTERVAL",
    "MessageUtil",
    "RequestCallback",
    "RequestFutureHolder",
    "RequestResponseFuture",
    "create_correlation_id",
    "create_reply_message",
    "get_reply_to_client",
    "reply_message_from_push",
    "reply_topic",
]

log = logging.getLogger(__name__)

#: ``MessageConst.PROPERTY_REPLY_MESSAGE_ARRIVE_TIME``: the requester's clock (ms) when the push
#: arrived, added by the requester to the reply it hands out.
PROPERTY_REPLY_MESSAGE_ARRIVE_TIME: Final = "ARRIVE_TIME"
#: ``MixAll.REPLY_TOPIC_POSTFIX``: replies go to ``<cluster>_REPLY_TOPIC``.
REPLY_TOPIC_POSTFIX: Final = "REPLY_TOPIC"
#: ``RequestFutureHolder``'s "RequestHouseKeepingService": first scan after 3 s, then every 1 s.
REQUEST_SCAN_INITIAL_DELAY: Final = 3.0
REQUEST_SCAN_INTERVAL: Final = 1.0

#: Java's text of the scanner's timeout (``RequestFutureHolder.scanExpiredRequest``).
_SCAN_TIMEOUT_TEXT: Final = "request timeout, no reply message."


def reply_topic(cluster: str) -> str:
    """``<cluster>_REPLY_TOPIC`` (``MixAll.getReplyTopic``)."""
    return f"{cluster}_{REPLY_TOPIC_POSTFIX}"


def create_correlation_id() -> str:
    """A new ``CORRELATION_ID``: a random UUID in its 36-character form, as Java's
    ``CorrelationIdUtil.createCorrelationId`` (``UUID.randomUUID().toString()``)."""
    return str(uuid.uuid4())


@runtime_checkable
class RequestCallback(Protocol):
    """Outcome of a request sent with :meth:`Producer.request_async
    <rocketpipe.client.producer.producer.Producer.request_async>` (Java ``RequestCallback``).

    Both methods run on the client's event loop; they must not block (an ``async def`` method
    is run as a task of its own). Exceptions they raise are logged.
    """

    def on_success(self, message: MessageExt) -> Awaitable[None] | None:
        """The reply arrived."""

    def on_exception(self, e: BaseException) -> Awaitable[None] | None:
        """The request could not be sent (the send's error), or no reply came in time
        (:class:`~rocketpipe.errors.ReplyTimeoutError`), or the client closed
        (:class:`~rocketpipe.errors.ClientClosedError`)."""


#: Tasks of ``async def`` callbacks (kept referenced until done).
_CALLBACK_TASKS: set[asyncio.Task[Any]] = set()


def _callback_done(task: asyncio.Task[Any]) -> None:
    _CALLBACK_TASKS.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.warning("request callback raised: %r", task.exception())


def _invoke(fn: Callable[[Any], object], arg: object) -> None:
    """Call a callback method; run an awaitable it returns as a task; log its exceptions."""
    try:
        result = fn(arg)
    except Exception as exc:
        log.warning("request callback %r raised: %r", fn, exc)
        return
    if inspect.isawaitable(result):
        try:
            task = asyncio.ensure_future(result)
        except RuntimeError:  # no running loop: cannot happen on the client's loop
            if inspect.iscoroutine(result):
                result.close()
            log.warning("request callback %r returned an awaitable outside an event loop", fn)
            return
        _CALLBACK_TASKS.add(task)
        task.add_done_callback(_callback_done)


class RequestResponseFuture:
    """One pending request (Java ``RequestResponseFuture``).

    Args:
        correlation_id: the request's ``CORRELATION_ID``.
        timeout_millis: the request's timeout, ms.
        request_callback: the callback of :meth:`Producer.request_async`, or None (awaited form).
        begin_timestamp: wall-clock ms when the request was registered.

    Attributes:
        send_request_ok: False once the send failed.
        cause: why the request failed (the send's error, a timeout, a close), or None.
        response_msg: the reply, once it arrived.
    """

    __slots__ = (
        "_arrived",
        "begin_timestamp",
        "cause",
        "correlation_id",
        "request_callback",
        "response_msg",
        "send_request_ok",
        "timeout_millis",
    )

    def __init__(
        self,
        correlation_id: str,
        timeout_millis: int,
        request_callback: RequestCallback | None = None,
        *,
        begin_timestamp: int,
    ) -> None:
        self.correlation_id = correlation_id
        self.timeout_millis = timeout_millis
        self.request_callback = request_callback
        self.begin_timestamp = begin_timestamp
        self.send_request_ok = True
        self.cause: BaseException | None = None
        self.response_msg: MessageExt | None = None
        self._arrived = asyncio.Event()

    def is_timeout(self, now_ms: int) -> bool:
        """True when more than ``timeout_millis`` passed since ``begin_timestamp`` (Java's
        ``isTimeout``, strictly greater)."""
        return now_ms - self.begin_timestamp > self.timeout_millis

    @property
    def done(self) -> bool:
        """True once a reply, or the end of waiting (None), was put."""
        return self._arrived.is_set()

    def put_response_message(self, msg: MessageExt | None) -> None:
        """Store the reply (None: the request failed) and wake the waiter."""
        self.response_msg = msg
        self._arrived.set()

    async def wait_response_message(self, timeout: float) -> MessageExt | None:
        """Wait up to ``timeout`` seconds for :meth:`put_response_message`; the reply or None."""
        if not self._arrived.is_set() and timeout > 0:
            try:
                await asyncio.wait_for(self._arrived.wait(), timeout)
            except TimeoutError:
                pass
        return self.response_msg

    def execute_request_callback(self) -> None:
        """Tell the callback (if any): ``on_success(reply)`` when the send went well and nothing
        failed, else ``on_exception(cause)``."""
        cb = self.request_callback
        if cb is None:
            return
        if self.send_request_ok and self.cause is None and self.response_msg is not None:
            _invoke(cb.on_success, self.response_msg)
        else:
            _invoke(cb.on_exception, self.cause or ReplyTimeoutError(_SCAN_TIMEOUT_TEXT))

    def __repr__(self) -> str:
        return (
            f"RequestResponseFuture(correlation_id={self.correlation_id!r}, timeout_millis={self.timeout_millis}, "
            f"done={self.done}, send_request_ok={self.send_request_ok})"
        )


class RequestFutureHolder:
    """The pending requests of one client, by ``CORRELATION_ID`` (Java ``RequestFutureHolder``).

    Runs on the client's event loop (no locks). :meth:`scan_expired` is the Java
    housekeeping scan; the runtime calls it every :data:`REQUEST_SCAN_INTERVAL` seconds.

    Args:
        clock: wall clock of ``begin_timestamp`` and of the expiry scan.
    """

    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self.clock = clock
        self._table: dict[str, RequestResponseFuture] = {}

    def __len__(self) -> int:
        return len(self._table)

    def __contains__(self, correlation_id: object) -> bool:
        return correlation_id in self._table

    def get(self, correlation_id: str) -> RequestResponseFuture | None:
        """The pending request of ``correlation_id``, or None."""
        return self._table.get(correlation_id)

    def register(
        self, correlation_id: str, timeout_millis: int, request_callback: RequestCallback | None = None
    ) -> RequestResponseFuture:
        """Add a pending request that begins now (on :attr:`clock`) and return it."""
        fut = RequestResponseFuture(
            correlation_id, timeout_millis, request_callback, begin_timestamp=self.clock.now_ms()
        )
        self._table[correlation_id] = fut
        return fut

    def remove(self, fut: RequestResponseFuture) -> None:
        """Forget ``fut`` (if it is still the entry of its correlation id)."""
        if self._table.get(fut.correlation_id) is fut:
            del self._table[fut.correlation_id]

    def complete(self, reply: MessageExt) -> RequestResponseFuture | None:
        """Hand ``reply`` to the request of its ``CORRELATION_ID`` (Java ``processReplyMessage``):
        the entry leaves the table, its waiter wakes, its callback's ``on_success`` runs.

        Returns:
            The request answered, or None when no request of this client waits for it.
        """
        cid = reply.properties.get(PROPERTY_CORRELATION_ID)
        fut = self._table.pop(cid, None) if cid is not None else None
        if fut is None:
            return None
        fut.put_response_message(reply)
        if fut.request_callback is not None:
            _invoke(fut.request_callback.on_success, reply)
        return fut

    def fail(self, fut: RequestResponseFuture, cause: BaseException) -> bool:
        """The request's send failed (Java ``requestFail``): forget it, wake its waiter with no
        reply, call its callback's ``on_exception(cause)``. False when it was already answered
        or failed."""
        if self._table.get(fut.correlation_id) is not fut:
            return False
        del self._table[fut.correlation_id]
        fut.send_request_ok = False
        fut.cause = cause
        fut.put_response_message(None)
        fut.execute_request_callback()
        return True

    def scan_expired(self) -> list[RequestResponseFuture]:
        """Forget and fail every request older than its timeout (Java ``scanExpiredRequest``):
        cause :class:`~rocketpipe.errors.ReplyTimeoutError` ("request timeout, no reply
        message."), waiter woken with no reply, callback's ``on_exception`` called.

        Returns:
            The requests that expired.
        """
        now = self.clock.now_ms()
        expired = [f for f in self._table.values() if f.is_timeout(now)]
        for fut in expired:
            del self._table[fut.correlation_id]
            log.warning("remove timeout request, CorrelationId=%s", fut.correlation_id)
        for fut in expired:
            fut.cause = ReplyTimeoutError(_SCAN_TIMEOUT_TEXT)
            fut.put_response_message(None)
            fut.execute_request_callback()
        return expired

    def fail_all(self, cause: BaseException) -> int:
        """Fail every pending request with ``cause`` (the client is closing); their count."""
        pending = list(self._table.values())
        self._table.clear()
        for fut in pending:
            fut.cause = cause
            fut.put_response_message(None)
            fut.execute_request_callback()
        return len(pending)


# ------------------------------------------------------------------------------ the push


def reply_message_from_push(header: ReplyMessageRequestHeader, body: bytes, receive_time_ms: int) -> MessageExt:
    """The reply of a PUSH_REPLY_MESSAGE_TO_CLIENT (Java ``receiveReplyMessage``).

    Topic, queue id, flag, born / store hosts and timestamps and reconsume times come from the
    header; the properties are the header's plus ``ARRIVE_TIME`` = ``receive_time_ms``. A body
    whose sysflag says compressed is inflated (and the flag cleared, as the consumers' decoding
    does); when it cannot be, it is kept as it came, with a log line, as in Java.
    """
    sys_flag = header.sys_flag or 0
    if sys_flag & COMPRESSED_FLAG:
        try:
            body = decompress(body, sys_flag)
            sys_flag &= ~COMPRESSED_FLAG
        except ProtocolError as exc:
            log.warning("err when uncompress constant: reply topic=%s: %s", header.topic, exc)
    props = string_to_properties(header.properties or "")
    props[PROPERTY_REPLY_MESSAGE_ARRIVE_TIME] = str(receive_time_ms)
    return MessageExt(
        topic=header.topic or "",
        body=body,
        flag=header.flag or 0,
        properties=props,
        queue_id=header.queue_id or 0,
        sys_flag=sys_flag,
        born_timestamp=header.born_timestamp or 0,
        born_host=header.born_host or "",
        store_timestamp=header.store_timestamp or 0,
        store_host=header.store_host or "",
        reconsume_times=header.reconsume_times or 0,
    )


# ------------------------------------------------------------------------------ the replier


def create_reply_message(request_message: Message | MessageExt | None, body: bytes | str) -> Message:
    """The reply to ``request_message`` (Java ``MessageUtil.createReplyMessage``), to send with
    :meth:`Producer.send <rocketpipe.client.producer.producer.Producer.send>` (which uses
    SEND_REPLY_MESSAGE_V2 because of ``MSG_TYPE=reply``).

    Topic ``<CLUSTER>_REPLY_TOPIC`` from the request's ``CLUSTER`` property (set by the broker
    that stored the request); properties ``MSG_TYPE=reply`` and, when the request has them,
    ``CORRELATION_ID``, ``REPLY_TO_CLIENT`` and ``TTL``. Add tags, keys or user properties to the
    returned message as to any other.

    Raises:
        InvalidArgumentError: ``request_message`` is None, or has no ``CLUSTER`` property (it was
            not read from a broker), with Java's texts.
    """
    if request_message is None:
        raise InvalidArgumentError("create reply message fail, requestMessage cannot be null.")
    props = request_message.properties
    cluster = props.get(PROPERTY_CLUSTER)
    if cluster is None:
        raise InvalidArgumentError(
            f"create reply message fail, requestMessage error, property[{PROPERTY_CLUSTER}] is null."
        )
    reply_props = {PROPERTY_MESSAGE_TYPE: REPLY_MESSAGE_FLAG}
    for name in (PROPERTY_CORRELATION_ID, PROPERTY_MESSAGE_REPLY_TO_CLIENT, PROPERTY_MESSAGE_TTL):
        value = props.get(name)
        if value is not None:
            reply_props[name] = value
    return Message(reply_topic(cluster), body.encode() if isinstance(body, str) else bytes(body), 0, reply_props)


def get_reply_to_client(msg: Message | MessageExt) -> str | None:
    """The ``REPLY_TO_CLIENT`` property: the requester's client id (``MessageUtil.getReplyToClient``)."""
    return msg.properties.get(PROPERTY_MESSAGE_REPLY_TO_CLIENT)


class MessageUtil:
    """Java's ``org.apache.rocketmq.client.utils.MessageUtil``, for code ported from Java:
    ``MessageUtil.create_reply_message(request, body)``, ``MessageUtil.get_reply_to_client(msg)``."""

    create_reply_message = staticmethod(create_reply_message)
    get_reply_to_client = staticmethod(get_reply_to_client)
