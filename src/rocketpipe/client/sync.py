"""Blocking facades over the async clients: :class:`SyncProducer`, :class:`SyncTransactionProducer`,
:class:`SyncAdmin` (L3).

Each facade owns a private event loop running in a daemon thread (the ``BlockingPortal``
pattern) and submits the async client's coroutines to it; there is no logic here. Constructing
a facade opens nothing and starts no thread: the loop, the thread and the connections appear
on the first call, and a facade pickles as its constructor arguments only (the Spark reader
is pickled to executors).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Generic, TypeVar, cast

from ..eventloop import new_event_loop
from ..protocol.message import Message, MessageExt, MessageQueue
from .admin import Admin
from .producer.producer import Producer
from .producer.selectors import MessageQueueSelector
from .producer.transaction import TransactionProducer, TransactionSendResult
from .request_reply import RequestCallback
from .rpc import PullRaw, SendResult
from .trace.model import RMQ_SYS_TRACE_TOPIC, TraceView

T = TypeVar("T")
C = TypeVar("C")


class _Portal(Generic[C]):
    """A private loop thread plus one async client created on it."""

    def __init__(self, factory: Callable[[], C], name: str) -> None:
        self._factory = factory
        self._name = name
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._client: C | None = None

    def _ensure(self) -> tuple[asyncio.AbstractEventLoop, C]:
        with self._lock:
            if self._loop is None:
                loop = new_event_loop()
                ready = threading.Event()

                def run() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                self._thread = threading.Thread(target=run, name=self._name, daemon=True)
                self._thread.start()
                ready.wait()
                self._loop = loop

                async def make() -> C:
                    return self._factory()

                self._client = asyncio.run_coroutine_threadsafe(make(), loop).result()
            assert self._client is not None
            return self._loop, self._client

    def call(self, fn: Callable[[C], Coroutine[Any, Any, T]], timeout: float | None = None) -> T:
        loop, client = self._ensure()
        return asyncio.run_coroutine_threadsafe(fn(client), loop).result(timeout)

    def close(self, closer: Callable[[C], Coroutine[Any, Any, None]]) -> None:
        with self._lock:
            loop, thread, client = self._loop, self._thread, self._client
            self._loop = self._thread = self._client = None
        if loop is None:
            return
        try:
            if client is not None:
                asyncio.run_coroutine_threadsafe(closer(client), loop).result()
        finally:
            loop.call_soon_threadsafe(loop.stop)
            if thread is not None:
                thread.join()
            loop.close()


class SyncAdmin:
    """Blocking :class:`~rocketpipe.client.admin.Admin`; same methods, same arguments.

    Args:
        namesrv_addr: ``;``-separated name servers.
        **kwargs: passed to :class:`Admin` (e.g. ``config=``).
    """

    def __init__(self, namesrv_addr: str | None = None, **kwargs: Any) -> None:
        self._args = (namesrv_addr, kwargs)
        self._portal: _Portal[Admin] = _Portal(lambda: Admin(namesrv_addr, **kwargs), "rocketpipe-sync-admin")

    def __getstate__(self) -> dict[str, Any]:
        return {"args": self._args}

    def __setstate__(self, state: dict[str, Any]) -> None:
        namesrv_addr, kwargs = state["args"]
        self.__init__(namesrv_addr, **kwargs)  # type: ignore[misc]

    def __enter__(self) -> SyncAdmin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close connections and stop the loop thread (a later call starts them again)."""
        self._portal.close(lambda a: a.close())

    def topic_route(self, topic: str) -> Any:
        """See :meth:`Admin.topic_route`."""
        return self._portal.call(lambda a: a.topic_route(topic))

    def topic_queues(self, topic: str) -> list[MessageQueue]:
        """See :meth:`Admin.topic_queues`."""
        return self._portal.call(lambda a: a.topic_queues(topic))

    def fetch_all_topic_list(self) -> set[str]:
        """See :meth:`Admin.fetch_all_topic_list`."""
        return self._portal.call(lambda a: a.fetch_all_topic_list())

    def max_offset(self, mq: MessageQueue) -> int:
        """See :meth:`Admin.max_offset`."""
        return self._portal.call(lambda a: a.max_offset(mq))

    def min_offset(self, mq: MessageQueue) -> int:
        """See :meth:`Admin.min_offset`."""
        return self._portal.call(lambda a: a.min_offset(mq))

    def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        """See :meth:`Admin.search_offset`."""
        return self._portal.call(lambda a: a.search_offset(mq, timestamp_ms))

    def pull_raw(
        self, mq: MessageQueue, offset: int, max_nums: int, *, timeout: float = 10.0, max_bytes: int | None = None
    ) -> PullRaw:
        """See :meth:`Admin.pull_raw`."""
        return self._portal.call(lambda a: a.pull_raw(mq, offset, max_nums, timeout=timeout, max_bytes=max_bytes))

    def create_topic(self, topic: str, queue_nums: int = 8, broker_addr: str | None = None) -> None:
        """See :meth:`Admin.create_topic`."""
        self._portal.call(lambda a: a.create_topic(topic, queue_nums, broker_addr))

    def query_trace(self, msg_id: str, trace_topic: str = RMQ_SYS_TRACE_TOPIC) -> list[TraceView]:
        """See :meth:`Admin.query_trace`."""
        return self._portal.call(lambda a: a.query_trace(msg_id, trace_topic))


class SyncProducer:
    """Blocking :class:`~rocketpipe.client.producer.Producer`; same methods, same arguments.

    Args:
        producer_group: the producer group.
        namesrv_addr: ``;``-separated name servers.
        **kwargs: passed to :class:`Producer`.
    """

    def __init__(
        self, producer_group: str = "DEFAULT_PRODUCER", namesrv_addr: str | None = None, **kwargs: Any
    ) -> None:
        self._args = (producer_group, namesrv_addr, kwargs)
        self._portal: _Portal[Producer] = _Portal(
            lambda: Producer(producer_group, namesrv_addr=namesrv_addr, **kwargs), "rocketpipe-sync-producer"
        )

    def __getstate__(self) -> dict[str, Any]:
        return {"args": self._args}

    def __setstate__(self, state: dict[str, Any]) -> None:
        group, namesrv_addr, kwargs = state["args"]
        self.__init__(group, namesrv_addr, **kwargs)  # type: ignore[misc]

    def __enter__(self) -> SyncProducer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """See :meth:`Producer.start`."""
        self._portal.call(lambda p: p.start())

    def close(self) -> None:
        """Close the producer and stop the loop thread."""
        self._portal.close(lambda p: p.close())

    def send(
        self,
        msg: Message,
        *,
        queue: MessageQueue | None = None,
        selector: MessageQueueSelector | None = None,
        arg: object = None,
        timeout: float | None = None,
    ) -> SendResult:
        """See :meth:`Producer.send` (the selector runs on the client's event-loop thread)."""
        return self._portal.call(lambda p: p.send(msg, queue=queue, selector=selector, arg=arg, timeout=timeout))

    def send_batch(
        self, msgs: list[Message], *, queue: MessageQueue | None = None, timeout: float | None = None
    ) -> SendResult:
        """See :meth:`Producer.send_batch`."""
        return self._portal.call(lambda p: p.send_batch(msgs, queue=queue, timeout=timeout))

    def recall_message(self, topic: str, recall_handle: str) -> str:
        """See :meth:`Producer.recall_message`."""
        return self._portal.call(lambda p: p.recall_message(topic, recall_handle))

    def send_oneway(self, msg: Message) -> None:
        """See :meth:`Producer.send_oneway`."""
        self._portal.call(lambda p: p.send_oneway(msg))

    def request(
        self,
        msg: Message,
        timeout: float,
        *,
        queue: MessageQueue | None = None,
        selector: MessageQueueSelector | None = None,
        arg: object = None,
    ) -> MessageExt:
        """See :meth:`Producer.request`: blocks until the reply (or ``ReplyTimeoutError``)."""
        return self._portal.call(lambda p: p.request(msg, timeout, queue=queue, selector=selector, arg=arg))

    def request_async(
        self,
        msg: Message,
        callback: RequestCallback,
        timeout: float,
        *,
        queue: MessageQueue | None = None,
        selector: MessageQueueSelector | None = None,
        arg: object = None,
    ) -> None:
        """See :meth:`Producer.request_async`; the callback runs on the facade's loop thread."""
        self._portal.call(lambda p: p.request_async(msg, callback, timeout, queue=queue, selector=selector, arg=arg))


class SyncTransactionProducer(SyncProducer):
    """Blocking :class:`~rocketpipe.client.producer.transaction.TransactionProducer`.

    The methods of :class:`SyncProducer`, plus :meth:`send_message_in_transaction`. The
    listener's ``async def`` methods run on the facade's loop thread, its plain functions in
    worker threads (as with the async producer).

    Args:
        producer_group: the producer group.
        namesrv_addr: ``;``-separated name servers.
        **kwargs: passed to :class:`TransactionProducer` (``transaction_listener=`` ...).
    """

    def __init__(
        self, producer_group: str = "DEFAULT_PRODUCER", namesrv_addr: str | None = None, **kwargs: Any
    ) -> None:
        self._args = (producer_group, namesrv_addr, kwargs)
        self._portal = _Portal(
            lambda: TransactionProducer(producer_group, namesrv_addr=namesrv_addr, **kwargs),
            "rocketpipe-sync-tx-producer",
        )

    def __enter__(self) -> SyncTransactionProducer:
        self.start()
        return self

    def send_message_in_transaction(self, msg: Message, arg: Any = None) -> TransactionSendResult:
        """See :meth:`TransactionProducer.send_message_in_transaction`."""
        return self._portal.call(lambda p: cast(TransactionProducer, p).send_message_in_transaction(msg, arg))
