"""Listener types of the push consumer (L3): statuses, context, listener protocol, enums, and
the one place a listener is called (:class:`ListenerRunner`).

Mirrors ``ConsumeConcurrentlyStatus``, ``ConsumeConcurrentlyContext``,
``MessageListenerConcurrently`` and ``MessageModel``. A listener is either an ``async def`` or a
plain function (run in the consumer's bounded thread pool); both receive
``(list[MessageExt], ConsumeConcurrentlyContext)`` and return a status. An exception or a None
return counts as ``RECONSUME_LATER`` (``SUSPEND_CURRENT_QUEUE_A_MOMENT`` for orderly listeners).

Imports: L0–L1, the stdlib and :mod:`.retry`.
"""

from __future__ import annotations

import asyncio
import enum
import functools
import inspect
import logging
import time
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Final, Generic, NamedTuple, TypeVar

from ...protocol.message import PROPERTY_CONSUME_START_TIMESTAMP, PROPERTY_RETRY_TOPIC, MessageExt, MessageQueue
from .retry import retry_topic

log = logging.getLogger(__name__)

#: Integer.MAX_VALUE: the initial ack index (every message acknowledged on success).
ACK_ALL: Final = 2**31 - 1


class ConsumeConcurrentlyStatus(enum.Enum):
    """Result of a concurrent listener call (``ConsumeConcurrentlyStatus``)."""

    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"


class MessageModel(enum.Enum):
    """Consumption model (``MessageModel``); only CLUSTERING is implemented by PushConsumer."""

    CLUSTERING = "CLUSTERING"
    BROADCASTING = "BROADCASTING"


@dataclass(slots=True)
class ConsumeConcurrentlyContext:
    """Per-call context handed to a concurrent listener (``ConsumeConcurrentlyContext``).

    Attributes:
        message_queue: the queue the messages were pulled from (retry queue for retries).
        delay_level_when_next_consume: delay level of the send-back of failed messages; 0 lets
            the broker choose ``3 + reconsume_times``; < 0 sends them to the DLQ.
        ack_index: with CONSUME_SUCCESS, messages after this index are treated as failed.
    """

    message_queue: MessageQueue
    delay_level_when_next_consume: int = 0
    ack_index: int = ACK_ALL


ListenerResult = ConsumeConcurrentlyStatus | None
MessageListenerConcurrently = Callable[
    [list[MessageExt], ConsumeConcurrentlyContext],
    ListenerResult | Awaitable[ListenerResult],
]
"""A concurrent listener: ``(msgs, context) -> status`` (sync or async)."""


StatusT = TypeVar("StatusT", bound=enum.Enum)


def prepare_batch(msgs: Sequence[MessageExt], group: str, start_ms: int) -> None:
    """Get a batch ready for its listener call: restore the real topic of retry messages and
    stamp ``CONSUME_START_TIME`` (wall ms) on each message.

    Mirrors ``resetRetryAndNamespace`` + ``MessageAccessor.setConsumeStartTimeStamp`` of
    ``ConsumeRequest.run`` (concurrent and orderly).
    """
    stamp_batch(msgs, retry_topic(group), str(start_ms))


def stamp_batch(msgs: Sequence[MessageExt], retry: str, start: str) -> None:
    """:func:`prepare_batch` with the group's retry topic and the start time (wall ms, as a
    string) already made: what :func:`~.retry.restore_retry_topic` does, then the stamp."""
    for m in msgs:
        props = m.properties
        if m.topic == retry:
            original = props.get(PROPERTY_RETRY_TOPIC)
            if original:
                m.topic = original
        props[PROPERTY_CONSUME_START_TIMESTAMP] = start


@types.coroutine
def _resume(coro: Coroutine[Any, Any, Any], yielded: Any) -> Generator[Any, Any, Any]:
    """Go on running ``coro`` after its first step yielded ``yielded`` (what ``yield from`` /
    ``await`` would do had the first step been taken by them): hand each yielded value to the
    task, pass back what it sends or throws in; return ``coro``'s result."""
    while True:
        thrown: BaseException | None = None
        sent: Any = None
        try:
            sent = yield yielded
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:  # thrown in by the task (CancelledError): forwarded below,
            thrown = exc  # outside this handler, so the listener does not run in its context
        try:
            yielded = coro.send(sent) if thrown is None else coro.throw(thrown)
        except StopIteration as stop:
            return stop.value
        finally:
            thrown = None


class ListenerOutcome(NamedTuple, Generic[StatusT]):
    """What one listener call gave: the status to process and how long the call took.

    Attributes:
        status: the listener's status, or the runner's ``failure`` status when it raised or
            returned something else (None included).
        rt_ms: duration of the call (thread hop and awaiting included), ms.
    """

    status: StatusT
    rt_ms: float


def is_async_listener(listener: Any) -> bool:
    """True when ``listener`` must be awaited on the loop rather than run in a thread.

    Honours an ``is_async`` bool attribute (``MessageListenerOrderly``), else checks the
    function or its class's ``__call__``.
    """
    flag = getattr(listener, "is_async", None)
    if isinstance(flag, bool):
        return flag
    return inspect.iscoroutinefunction(listener) or inspect.iscoroutinefunction(
        getattr(type(listener), "__call__", None)  # noqa: B004 - is its __call__ a coroutine function?
    )


class ListenerRunner(Generic[StatusT]):
    """Calls a push-consumer listener and turns its outcome into a status plus a duration.

    The listener-invocation step shared by ``ConsumeMessageConcurrentlyService`` and
    ``ConsumeMessageOrderlyService`` (``ConsumeRequest.run``): ``async def`` listeners are
    awaited on the loop; plain functions run in a lazily created thread pool of
    ``max_threads`` (an awaitable they return is awaited on the loop). An exception (other
    than ``CancelledError``, which propagates) or a result that is not a ``status_type``
    becomes ``failure``, with a log line. The duration measured around the call is the
    ``consumeRT`` of :mod:`rocketpipe.client.consumer.stats` (Java measures
    ``System.currentTimeMillis()`` around ``listener.consumeMessage``; here a monotonic clock).
    Consume hooks, when registered, are part of the listener (they wrap it), so they are timed
    too.

    Args:
        listener: the user listener (already wrapped with hooks).
        status_type: the enum of valid results (``ConsumeConcurrentlyStatus`` /
            ``ConsumeOrderlyStatus``).
        failure: status of a raising or invalid call (``RECONSUME_LATER`` /
            ``SUSPEND_CURRENT_QUEUE_A_MOMENT``).
        group: consumer group, for logs and thread names.
        max_threads: thread-pool size for plain-function listeners (``consumeThreadMax``).
        thread_name_prefix: prefix of the pool's thread names.
    """

    def __init__(
        self,
        listener: Any,
        *,
        status_type: type[StatusT],
        failure: StatusT,
        group: str,
        max_threads: int,
        thread_name_prefix: str,
    ) -> None:
        self._listener = listener
        self.is_async = is_async_listener(listener)
        self._status_type = status_type
        self._failure = failure
        self._group = group
        self._threads = max_threads
        self._prefix = thread_name_prefix
        self._executor: ThreadPoolExecutor | None = None

    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=self._threads, thread_name_prefix=self._prefix)
        return self._executor

    async def call(self, msgs: Sequence[MessageExt], ctx: Any) -> ListenerOutcome[StatusT]:
        """Call the listener once with a copy of ``msgs`` and ``ctx``; never raises but
        ``CancelledError``."""
        begin = time.monotonic()
        try:
            if self.is_async:
                result = await self._listener(list(msgs), ctx)
            else:
                loop = asyncio.get_running_loop()
                result = await loop.run_in_executor(self._pool(), functools.partial(self._listener, list(msgs), ctx))
                if inspect.isawaitable(result):
                    result = await result
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return ListenerOutcome(self._on_error(exc, ctx), (time.monotonic() - begin) * 1000)
        return ListenerOutcome(self._status_of(result), (time.monotonic() - begin) * 1000)

    def call_eagerly(
        self, msgs: list[MessageExt], ctx: Any, before_suspend: Callable[[], None]
    ) -> StatusT | Awaitable[StatusT]:
        """Call an ``async def`` listener with ``msgs`` (handed over as they are, not copied) and
        run it on the spot up to its first real suspension.

        The common listener finishes without ever waiting: its status is returned at once, with
        no task switch and no clock read. Only when the listener does wait (it yields to the
        event loop) is ``before_suspend`` called, still before anything else runs, and an
        awaitable returned that finishes the call and gives its status. Outcome rules as in
        :meth:`call` (an exception or a non-status result gives ``failure``, with a log line;
        ``CancelledError`` propagates). Timing is the caller's. Only for :attr:`is_async` runners.
        """
        try:
            coro = self._listener(msgs, ctx)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return self._on_error(exc, ctx)
        if not inspect.iscoroutine(coro):  # another awaitable (or not one): await it as call() does
            before_suspend()
            return self._await_status(coro, ctx)
        try:
            yielded = coro.send(None)
        except StopIteration as stop:
            return self._status_of(stop.value)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return self._on_error(exc, ctx)
        try:
            before_suspend()
        except BaseException:
            coro.close()
            raise
        return self._await_status(_resume(coro, yielded), ctx)

    async def _await_status(self, awaitable: Awaitable[Any], ctx: Any) -> StatusT:
        try:
            result = await awaitable
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return self._on_error(exc, ctx)
        return self._status_of(result)

    async def call_in_one_hop(
        self, calls: Sequence[tuple[Sequence[MessageExt], Any]]
    ) -> list[ListenerOutcome[StatusT]]:
        """Call a plain-function listener once per ``(msgs, ctx)`` with one thread-pool hop for
        all of them (each call timed on its own); same outcome rules as :meth:`call`.

        An awaitable returned by the listener is awaited on the loop and its time added.
        """
        listener = self._listener

        def run_all() -> list[tuple[bool, object, float]]:
            out: list[tuple[bool, object, float]] = []
            for msgs, ctx in calls:
                begin = time.monotonic()
                try:
                    ok, value = True, listener(list(msgs), ctx)
                except Exception as exc:
                    ok, value = False, exc
                out.append((ok, value, (time.monotonic() - begin) * 1000))
            return out

        raw = await asyncio.get_running_loop().run_in_executor(self._pool(), run_all)
        outcomes: list[ListenerOutcome[StatusT]] = []
        for (_, ctx), (ok, value, rt_ms) in zip(calls, raw, strict=False):
            if ok and inspect.isawaitable(value):
                begin = time.monotonic()
                try:
                    value = await value
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    ok, value = False, exc
                rt_ms += (time.monotonic() - begin) * 1000
            if not ok:
                assert isinstance(value, BaseException)
                outcomes.append(ListenerOutcome(self._on_error(value, ctx), rt_ms))
            else:
                outcomes.append(ListenerOutcome(self._status_of(value), rt_ms))
        return outcomes

    def _on_error(self, exc: BaseException, ctx: Any) -> StatusT:
        log.error(
            "listener raised group=%s mq=%s; treated as %s",
            self._group,
            getattr(ctx, "message_queue", None),
            self._failure.value,
            exc_info=(type(exc), exc, exc.__traceback__),
        )
        return self._failure

    def _status_of(self, result: object) -> StatusT:
        if isinstance(result, self._status_type):
            return result
        if result is not None:
            log.warning("listener returned %r group=%s; treated as %s", result, self._group, self._failure.value)
        return self._failure

    def close(self) -> None:
        """Stop the thread pool (calls not started are cancelled; running ones finish)."""
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
