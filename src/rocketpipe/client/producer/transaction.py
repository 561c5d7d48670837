"""Transactional messages, client side (L3): :class:`TransactionProducer` and its vocabulary.

A transactional send has two phases. The producer sends a *half* (prepared) message: the
properties ``TRAN_MSG=true`` and ``PGROUP=<group>`` and the sysflag ``TRANSACTION_PREPARED_TYPE``
(0x4) make the broker park it, invisible to consumers. The producer then runs the user's
local transaction and tells the broker the outcome with a oneway END_TRANSACTION (37):
commit (sysflag value 8, the message becomes visible on its topic), rollback (12, it is
dropped) or unknown (0, the broker will ask later). A broker that has not heard a final
answer after ``transactionTimeOut`` asks the producer group with CHECK_TRANSACTION_STATE (39,
oneway, broker → client) every ``transactionCheckInterval``, up to ``transactionCheckMax``
times; the client answers with an END_TRANSACTION marked ``fromTransactionCheck=true``.

Mirrors Java 5.3.3:

- :class:`LocalTransactionState`, :class:`TransactionListener`, :class:`TransactionSendResult`:
  the Java classes of the same names;
- :class:`TransactionProducer`: ``TransactionMQProducer``;
- :meth:`TransactionProducer.send_message_in_transaction` / :meth:`TransactionProducer.end_transaction`:
  ``DefaultMQProducerImpl.sendMessageInTransaction`` / ``endTransaction``;
- :meth:`TransactionProducer.check_transaction_state`: ``DefaultMQProducerImpl.checkTransactionState``
  (the ``ClientRemotingProcessor.checkTransactionState`` half, decoding the request and finding the
  producer by ``PGROUP``, is ``ClientRuntime._on_check_transaction_state``);
- :func:`end_transaction_header` / :func:`check_end_transaction_header`: the END_TRANSACTION header
  fields set by ``endTransaction`` / ``checkTransactionState``'s ``processTransactionState``;
- with ``enable_msg_trace``, an EndTransaction trace record before each END_TRANSACTION
  (``EndTransactionTraceHookImpl``, run by ``doExecuteEndTransactionHook``), the answers to
  check-backs included; the half message's send records a Pub of type ``Trans_Msg_Half``.

Imports protocol, errors and sibling client modules (never broker, namesrv or store).
"""

from __future__ import annotations

import asyncio
import enum
import inspect
import logging
import os
import traceback
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

from ...errors import InvalidArgumentError, RocketMQError
from ...protocol.headers.transaction import CheckTransactionStateRequestHeader, EndTransactionRequestHeader
from ...protocol.message import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_PRODUCER_GROUP,
    PROPERTY_TRANSACTION_PREPARED,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    Message,
    MessageExt,
    decode_offset_msg_id,
)
from ...protocol.sysflag import TRANSACTION_COMMIT_TYPE, TRANSACTION_NOT_TYPE, TRANSACTION_ROLLBACK_TYPE
from .. import rpc
from ..rpc import SendResult, SendStatus
from .producer import Producer

if TYPE_CHECKING:
    from ...transport.connection import Connection

__all__ = [
    "LocalTransactionState",
    "TransactionListener",
    "TransactionProducer",
    "TransactionSendResult",
    "check_end_transaction_header",
    "check_exception_remark",
    "commit_or_rollback",
    "end_transaction_header",
    "execute_exception_remark",
    "run_listener",
]

log = logging.getLogger(__name__)

#: The user property Java puts on the message (after the half is stored) when the broker's send
#: response carries a ``transactionId`` (``sendMessageInTransaction``).
PROPERTY_TRANSACTION_ID: Final = "__transactionId__"

#: Timeout of the END_TRANSACTION that answers a check, seconds (Java: 3 000 ms).
CHECK_END_TRANSACTION_TIMEOUT: Final = 3.0


class LocalTransactionState(enum.Enum):
    """Outcome of a local transaction (Java ``LocalTransactionState``, including its spelling
    ``UNKNOW``)."""

    COMMIT_MESSAGE = "COMMIT_MESSAGE"
    ROLLBACK_MESSAGE = "ROLLBACK_MESSAGE"
    UNKNOW = "UNKNOW"


_COMMIT_OR_ROLLBACK: Final = {
    LocalTransactionState.COMMIT_MESSAGE: TRANSACTION_COMMIT_TYPE,
    LocalTransactionState.ROLLBACK_MESSAGE: TRANSACTION_ROLLBACK_TYPE,
    LocalTransactionState.UNKNOW: TRANSACTION_NOT_TYPE,
}


def commit_or_rollback(state: LocalTransactionState) -> int:
    """END_TRANSACTION's ``commitOrRollback`` of ``state``: COMMIT_MESSAGE → 8
    (``TRANSACTION_COMMIT_TYPE``), ROLLBACK_MESSAGE → 12 (``TRANSACTION_ROLLBACK_TYPE``),
    UNKNOW → 0 (``TRANSACTION_NOT_TYPE``)."""
    return _COMMIT_OR_ROLLBACK[state]


#: What a listener method may return: the state, an awaitable of it, or None (= UNKNOW).
ListenerResult = LocalTransactionState | Awaitable[LocalTransactionState | None] | None


@runtime_checkable
class TransactionListener(Protocol):
    """The user's side of a transactional send (Java ``TransactionListener``).

    Implement both methods, as plain functions or as ``async def`` (subclassing this class is
    optional: any object with the two methods will do). ``async def`` methods run on the
    producer's event loop; plain functions run in worker threads (``execute_local_transaction``
    in the loop's default executor, ``check_local_transaction`` in the producer's check
    executor, see :class:`TransactionProducer`). Returning None or raising counts as
    :attr:`LocalTransactionState.UNKNOW`, as in Java; the exception's text goes into the
    END_TRANSACTION's remark.
    """

    def execute_local_transaction(self, msg: Message, arg: Any) -> ListenerResult:
        """Run the local transaction of the half message ``msg`` just stored by the broker.

        ``msg`` carries ``UNIQ_KEY`` (the transaction id Java's ``msg.getTransactionId()``
        returns; also :attr:`Message.unique_key`), ``TRAN_MSG``, ``PGROUP`` and, when the broker
        answered one, ``__transactionId__``. ``arg`` is the one given to
        :meth:`TransactionProducer.send_message_in_transaction`.
        """

    def check_local_transaction(self, msg: MessageExt) -> ListenerResult:
        """Tell the broker's check-back what became of the transaction of ``msg``.

        ``msg`` is the stored half message as the broker sent it: its real topic and queue id,
        its properties (``UNIQ_KEY`` is the transaction id, :attr:`MessageExt.msg_id`),
        ``commit_log_offset`` and ``queue_offset`` of the half.
        """


@dataclass(frozen=True, slots=True)
class TransactionSendResult(SendResult):
    """Result of :meth:`TransactionProducer.send_message_in_transaction` (Java
    ``TransactionSendResult``): the half message's :class:`SendResult` plus the outcome of the
    local transaction.

    Attributes:
        local_transaction_state: what the listener returned (UNKNOW on None or an exception;
            ROLLBACK_MESSAGE when the half was stored with a degraded status and the listener
            did not run). ``transaction_id`` is the broker's ``transactionId`` of the send
            response, as in Java; ``offset_msg_id`` is kept (Java leaves it null here).
    """

    local_transaction_state: LocalTransactionState = LocalTransactionState.UNKNOW


# ------------------------------------------------------------------------------ pure parts


def _java_to_string(exc: BaseException) -> str:
    """``Throwable.toString()``-like: the class name, then ``": " + message`` when there is one."""
    cls = type(exc)
    name = cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    text = str(exc)
    return f"{name}: {text}" if text else name


def execute_exception_remark(exc: BaseException) -> str:
    """END_TRANSACTION remark when ``execute_local_transaction`` raised, as Java's
    ``"executeLocalTransactionBranch exception: " + e.toString()``."""
    return f"executeLocalTransactionBranch exception: {_java_to_string(exc)}"


def check_exception_remark(exc: BaseException) -> str:
    """END_TRANSACTION remark when ``check_local_transaction`` raised, as Java's
    ``"checkLocalTransactionState Exception: " + UtilAll.exceptionSimpleDesc(e)`` (the
    exception, then the frame that raised it)."""
    desc = _java_to_string(exc)
    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ is not None else []
    if frames:
        top = frames[-1]
        desc += f", {top.name}({os.path.basename(top.filename)}:{top.lineno})"
    return f"checkLocalTransactionState Exception: {desc}"


def end_transaction_header(
    producer_group: str, topic: str, send_result: SendResult, state: LocalTransactionState
) -> EndTransactionRequestHeader:
    """The END_TRANSACTION header that ends a half message just sent (Java
    ``DefaultMQProducerImpl.endTransaction``).

    ``commitLogOffset`` is decoded from the result's offset msg id (the result's ``msg_id`` when
    there is none, as Java does); ``tranStateTableOffset`` is the half's queue offset;
    ``msgId`` is the client's ``UNIQ_KEY``; ``transactionId`` is the send response's
    ``transactionId``; ``bname`` is the broker of the queue the half went to;
    ``fromTransactionCheck`` is false.

    Raises:
        InvalidArgumentError: neither id of the result decodes as an offset msg id.
    """
    _, commit_log_offset = decode_offset_msg_id(send_result.offset_msg_id or send_result.msg_id)
    return EndTransactionRequestHeader(
        topic=topic,
        producer_group=producer_group,
        tran_state_table_offset=send_result.queue_offset,
        commit_log_offset=commit_log_offset,
        commit_or_rollback=commit_or_rollback(state),
        from_transaction_check=False,
        msg_id=send_result.msg_id,
        transaction_id=send_result.transaction_id,
        bname=send_result.message_queue.broker_name,
    )


def check_end_transaction_header(
    producer_group: str, msg: MessageExt, check: CheckTransactionStateRequestHeader, state: LocalTransactionState
) -> EndTransactionRequestHeader:
    """The END_TRANSACTION header that answers a CHECK_TRANSACTION_STATE (Java
    ``checkTransactionState``'s ``processTransactionState``).

    ``topic``, ``commitLogOffset``, ``tranStateTableOffset``, ``transactionId`` and ``bname``
    are copied from the check's header; ``msgId`` is the message's ``UNIQ_KEY`` (its offset
    msg id when it has none); ``fromTransactionCheck`` is true.
    """
    return EndTransactionRequestHeader(
        topic=check.topic,
        producer_group=producer_group,
        tran_state_table_offset=check.tran_state_table_offset,
        commit_log_offset=check.commit_log_offset,
        commit_or_rollback=commit_or_rollback(state),
        from_transaction_check=True,
        msg_id=msg.msg_id,
        transaction_id=check.transaction_id,
        bname=check.bname,
    )


def _is_async(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(type(fn), "__call__", None)  # noqa: B004 - is a callable object's __call__ a coroutine function?
    )


async def run_listener(
    fn: Callable[..., ListenerResult], *args: Any, executor: Executor | None = None
) -> tuple[LocalTransactionState, BaseException | None]:
    """Call one listener method and map its outcome to a state.

    ``async def`` methods are awaited here; plain functions run in ``executor`` (None = the
    loop's default executor) and an awaitable they return is awaited here. None and a value
    that is not a :class:`LocalTransactionState` give UNKNOW (the latter with a log line); an
    exception gives UNKNOW and is returned second. ``CancelledError`` propagates.
    """
    try:
        if _is_async(fn):
            value: Any = fn(*args)
        elif executor is None:
            value = await asyncio.to_thread(fn, *args)
        else:
            value = await asyncio.get_running_loop().run_in_executor(executor, lambda: fn(*args))
        if inspect.isawaitable(value):
            value = await value
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        return LocalTransactionState.UNKNOW, exc
    if value is None:
        return LocalTransactionState.UNKNOW, None
    if not isinstance(value, LocalTransactionState):
        log.warning("transaction listener %r returned %r, not a LocalTransactionState: UNKNOW", fn, value)
        return LocalTransactionState.UNKNOW, None
    return value, None


# ------------------------------------------------------------------------------ the producer


class TransactionProducer(Producer):
    """A producer of transactional messages (Java ``TransactionMQProducer``).

    ``async with TransactionProducer("pg", namesrv_addr=..., transaction_listener=listener) as p:
    result = await p.send_message_in_transaction(msg, arg)``. Everything :class:`Producer` does
    is available too (plain sends). While it runs, the producer's group is in the client's
    heartbeats, and the brokers' CHECK_TRANSACTION_STATE requests for half messages of the
    group (``PGROUP``) are answered with ``transaction_listener.check_local_transaction``; a
    new producer of the same group answers for half messages an earlier (closed, crashed)
    one left undecided.

    Args:
        producer_group: the group; the broker checks back with any live producer of it.
        transaction_listener: a :class:`TransactionListener` (may also be set later as the
            attribute of that name, Java's ``setTransactionListener``).
        check_thread_pool_max_size: worker threads that run a plain-function
            ``check_local_transaction`` (Java ``checkThreadPoolMaxSize``, 1). ``async def``
            checks run on the event loop instead.
        check_request_hold_max: checks waiting or running at once; beyond that a check is
            dropped with a log line and the broker asks again later (Java
            ``checkRequestHoldMax``, 2 000).
        check_executor: run plain-function checks here instead (Java ``setExecutorService``);
            not shut down by :meth:`close`.
        **kwargs: the other arguments of :class:`Producer` (``namesrv_addr``, ``config``,
            ``runtime``, ``send_msg_timeout`` in seconds, ...).

    Raises:
        InvalidArgumentError: a bad setting (see :class:`Producer`), or
            ``check_thread_pool_max_size`` / ``check_request_hold_max`` below 1.
    """

    def __init__(
        self,
        producer_group: str = "DEFAULT_PRODUCER",
        *,
        transaction_listener: TransactionListener | None = None,
        check_thread_pool_max_size: int = 1,
        check_request_hold_max: int = 2000,
        check_executor: Executor | None = None,
        **kwargs: Any,
    ) -> None:
        if check_thread_pool_max_size < 1 or check_request_hold_max < 1:
            raise InvalidArgumentError("check_thread_pool_max_size and check_request_hold_max must be >= 1")
        super().__init__(producer_group, **kwargs)
        self.transaction_listener = transaction_listener
        self.check_thread_pool_max_size = check_thread_pool_max_size
        self.check_request_hold_max = check_request_hold_max
        self._check_executor = check_executor
        self._own_check_executor: ThreadPoolExecutor | None = None
        self._checks_in_flight = 0

    async def start(self) -> None:
        """Start like :meth:`Producer.start`, then, in the background, fetch the route of
        ``create_topic_key`` (``TBW102``) and send a heartbeat to the brokers it names.

        Java's producer keeps the ``createTopicKey`` route from its start, so its first heartbeat
        (1 s after start) reaches the brokers: a producer that restarts after a crash is known to
        them, and answers their checks of half messages its group left undecided, before it
        sends anything. Idempotent.

        Raises:
            ClientClosedError: the producer was closed.
        """
        first = not self._started
        await super().start()
        if first and not self._closed and self._runtime.tasks.running:
            self._runtime.tasks.spawn(self._announce_group(), f"tx-announce-{self.producer_group}")

    async def _announce_group(self) -> None:
        rt = self._runtime
        rt.add_route_topic(self.create_topic_key)
        try:
            await rt.route(self.create_topic_key)
        except RocketMQError as exc:
            log.debug("no %s route at start, group %s: %s", self.create_topic_key, self.producer_group, exc)
            return
        rt.wake_heartbeat()

    async def close(self) -> None:
        """Close like :meth:`Producer.close`, then stop the check threads this producer started
        (Java ``destroyTransactionEnv``); idempotent."""
        await super().close()
        pool, self._own_check_executor = self._own_check_executor, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    async def __aenter__(self) -> TransactionProducer:
        await self.start()
        return self

    def _checks(self) -> Executor:
        if self._check_executor is not None:
            return self._check_executor
        if self._own_check_executor is None:
            self._own_check_executor = ThreadPoolExecutor(
                max_workers=self.check_thread_pool_max_size,
                thread_name_prefix=f"rocketpipe-tx-check-{self.producer_group}",
            )
        return self._own_check_executor

    # ------------------------------------------------------------------ first phase

    async def send_message_in_transaction(self, msg: Message, arg: Any = None) -> TransactionSendResult:
        """Send ``msg`` as a half message, run the local transaction, end it on the broker.

        Mirrors ``TransactionMQProducer.sendMessageInTransaction`` /
        ``DefaultMQProducerImpl.sendMessageInTransaction`` and ``endTransaction``:

        1. drop the ``DELAY`` property (transactional messages have no delay level), check the
           message, put ``TRAN_MSG=true`` and ``PGROUP=<group>`` on ``msg``;
        2. send it like :meth:`Producer.send` (retries within ``send_msg_timeout``); the sysflag
           gets ``TRANSACTION_PREPARED_TYPE`` (0x4);
        3. on SEND_OK, put ``__transactionId__`` (the response's ``transactionId``, when there
           is one) on ``msg`` and call ``transaction_listener.execute_local_transaction(msg,
           arg)``; on FLUSH_DISK_TIMEOUT / FLUSH_SLAVE_TIMEOUT / SLAVE_NOT_AVAILABLE the state is
           ROLLBACK_MESSAGE and the listener is not called;
        4. send END_TRANSACTION oneway to the master of the half's broker: commit 8, rollback
           12, unknown 0 (the broker checks back later), with the listener's exception text as
           remark. A failure of this step is logged, not raised: the broker's check-back
           settles the transaction.

        Args:
            msg: the message (``Message.build(...)``); changed in place as above, and gets a
                ``UNIQ_KEY``, which is the transaction's id.
            arg: passed to ``execute_local_transaction``.

        Returns:
            The half's :class:`SendResult` fields plus ``local_transaction_state``.

        Raises:
            InvalidArgumentError: no ``transaction_listener`` ("TransactionListener is null",
                as Java), or a bad message (see :meth:`Producer.send`).
            BrokerError / TransportError / RequestTimeoutError / TopicNotExistError: the half
                could not be sent (Java wraps these in "send message Exception"); the listener
                did not run and nothing is left on the broker to end.
        """
        listener = self.transaction_listener
        if listener is None:
            raise InvalidArgumentError("TransactionListener is null: pass transaction_listener= to TransactionProducer")
        if msg.delay_time_level != 0:
            msg.properties.pop(PROPERTY_DELAY_TIME_LEVEL, None)
        self._check_message(msg)
        msg.properties[PROPERTY_TRANSACTION_PREPARED] = "true"
        msg.properties[PROPERTY_PRODUCER_GROUP] = self.producer_group
        result = await self.send(msg)

        state = LocalTransactionState.UNKNOW
        error: BaseException | None = None
        if result.send_status is SendStatus.SEND_OK:
            if result.transaction_id is not None:
                msg.properties[PROPERTY_TRANSACTION_ID] = result.transaction_id
            await self._announce(result)
            state, error = await run_listener(listener.execute_local_transaction, msg, arg)
            if error is not None:
                log.warning(
                    "executeLocalTransactionBranch exception topic=%s transactionId=%s tags=%s keys=%s: %s",
                    msg.topic,
                    msg.unique_key,
                    msg.tags,
                    msg.keys,
                    _java_to_string(error),
                )
            elif state is not LocalTransactionState.COMMIT_MESSAGE:
                log.info(
                    "executeLocalTransactionBranch returned %s topic=%s transactionId=%s tags=%s keys=%s",
                    state.name,
                    msg.topic,
                    msg.unique_key,
                    msg.tags,
                    msg.keys,
                )
        else:
            state = LocalTransactionState.ROLLBACK_MESSAGE

        try:
            await self.end_transaction(msg, result, state, error)
        except (RocketMQError, OSError, TimeoutError) as exc:
            log.warning(
                "local transaction %s, but ending the broker transaction failed msgId=%s: %s",
                state.name,
                result.msg_id,
                exc,
            )
        return TransactionSendResult(
            send_status=result.send_status,
            msg_id=result.msg_id,
            offset_msg_id=result.offset_msg_id,
            message_queue=result.message_queue,
            queue_offset=result.queue_offset,
            transaction_id=result.transaction_id,
            region_id=result.region_id,
            trace_on=result.trace_on,
            local_transaction_state=state,
        )

    async def _announce(self, result: SendResult) -> None:
        """Make sure the half's broker knows this producer's connection before any check-back."""
        addr = self._runtime.find_broker_addr(result.message_queue.broker_name)
        if addr is not None:
            await self._runtime.heartbeat_once(addr)

    async def end_transaction(
        self,
        msg: Message,
        send_result: SendResult,
        state: LocalTransactionState,
        error: BaseException | None = None,
    ) -> None:
        """Send the END_TRANSACTION of a half message oneway (Java
        ``DefaultMQProducerImpl.endTransaction``); header from :func:`end_transaction_header`,
        remark from :func:`execute_exception_remark` when ``error`` is given.

        Raises:
            InvalidArgumentError: the result's ids do not decode; RocketMQError: the broker's
            master address is unknown; TransportError / TimeoutError: not written within
            ``send_msg_timeout`` seconds.
        """
        header = end_transaction_header(self.producer_group, msg.topic, send_result, state)
        broker = send_result.message_queue.broker_name
        rt = self._runtime
        addr = rt.find_broker_addr(broker) or await rt.find_master_addr(broker, msg.topic)
        remark = execute_exception_remark(error) if error is not None else None
        if self._tracer is not None:
            self._tracer.on_end_transaction(
                msg.topic,
                msg.properties,
                send_result.msg_id,
                addr,
                msg.unique_key,
                state.name,
                from_transaction_check=False,
            )
        async with asyncio.timeout(self.send_msg_timeout):
            await rpc.end_transaction_oneway(rt.pool, addr, header, remark)

    # ------------------------------------------------------------------ check-back

    async def check_transaction_state(
        self, conn: Connection, msg: MessageExt, header: CheckTransactionStateRequestHeader
    ) -> None:
        """Answer a broker's CHECK_TRANSACTION_STATE for half message ``msg`` (Java
        ``DefaultMQProducerImpl.checkTransactionState``).

        Runs ``transaction_listener.check_local_transaction(msg)`` (an ``async def`` on the
        loop, a plain function in the check executor), then sends END_TRANSACTION oneway on
        ``conn`` (the broker that asked; reconnecting to its address if that connection is
        gone), header from :func:`check_end_transaction_header`, remark from
        :func:`check_exception_remark` when the listener raised. Without a listener, or with
        ``check_request_hold_max`` checks already in progress, the check is logged and not
        answered (the broker asks again). Never raises (errors are logged).
        """
        listener = self.transaction_listener
        if listener is None:
            log.warning(
                "CHECK_TRANSACTION_STATE, but group %s has no transaction listener msgId=%s",
                self.producer_group,
                header.msg_id,
            )
            return
        if self._checks_in_flight >= self.check_request_hold_max:
            log.warning(
                "CHECK_TRANSACTION_STATE dropped: %d checks in progress (check_request_hold_max) msgId=%s",
                self._checks_in_flight,
                header.msg_id,
            )
            return
        if self._closed:
            log.info(
                "CHECK_TRANSACTION_STATE ignored, producer %s is closed msgId=%s", self.producer_group, header.msg_id
            )
            return
        self._checks_in_flight += 1
        try:
            fn = listener.check_local_transaction
            state, error = await run_listener(fn, msg, executor=None if _is_async(fn) else self._checks())
        finally:
            self._checks_in_flight -= 1
        if error is not None:
            log.warning("checkLocalTransactionState exception msgId=%s: %s", header.msg_id, _java_to_string(error))
        elif state is not LocalTransactionState.COMMIT_MESSAGE:
            log.info("check-back: client answers %s msgId=%s from=%s", state.name, msg.msg_id, conn.remote_address)
        end = check_end_transaction_header(self.producer_group, msg, header, state)
        if self._tracer is not None:
            self._tracer.on_end_transaction(
                msg.topic,
                msg.properties,
                msg.msg_id,
                conn.remote_address,
                msg.properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
                state.name,
                from_transaction_check=True,
            )
        cmd = rpc.end_transaction_command(end, check_exception_remark(error) if error is not None else None)
        try:
            async with asyncio.timeout(CHECK_END_TRANSACTION_TIMEOUT):
                if not conn.is_closed:
                    await conn.oneway(cmd)
                else:
                    await self._runtime.pool.oneway(conn.remote_address, cmd)
        except (RocketMQError, OSError, TimeoutError) as exc:
            log.warning(
                "END_TRANSACTION after a check failed broker=%s msgId=%s: %s", conn.remote_address, end.msg_id, exc
            )
