"""SyncLitePullConsumer: blocking facade over :class:`LitePullConsumer` (L3).

Same pattern as :mod:`rocketpipe.client.sync` (whose private loop-thread portal it reuses):
the async consumer lives on a private event loop in a daemon thread, created on first use;
every method submits the matching coroutine and waits. No logic of its own, except that
iteration stops once :meth:`SyncLitePullConsumer.close` was called.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ...protocol.message import MessageExt, MessageQueue
from ..sync import _Portal
from .lite_pull import LitePullConsumer


class SyncLitePullConsumer:
    """Blocking :class:`~rocketpipe.client.consumer.lite_pull.LitePullConsumer`.

    Usage::

        consumer = SyncLitePullConsumer("cg", namesrv_addr="127.0.0.1:9876")
        consumer.assign(queues)              # or consumer.subscribe("TopicA", "*")
        with consumer:                       # start() ... close()
            for msg in consumer:             # ends when close() is called (another thread)
                ...

    A facade pickles as its constructor arguments only.

    Args:
        consumer_group: the group.
        namesrv_addr: ``;``-separated name servers.
        **kwargs: passed to :class:`LitePullConsumer`.
    """

    def __init__(self, consumer_group: str, namesrv_addr: str | None = None, **kwargs: Any) -> None:
        self._args = (consumer_group, namesrv_addr, kwargs)
        self._closed = False
        self._portal: _Portal[LitePullConsumer] = _Portal(
            lambda: LitePullConsumer(consumer_group, namesrv_addr=namesrv_addr, **kwargs), "rocketpipe-sync-lite-pull"
        )

    def __getstate__(self) -> dict[str, Any]:
        return {"args": self._args}

    def __setstate__(self, state: dict[str, Any]) -> None:
        group, namesrv_addr, kwargs = state["args"]
        self.__init__(group, namesrv_addr, **kwargs)  # type: ignore[misc]

    def __enter__(self) -> SyncLitePullConsumer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[MessageExt]:
        """Yield messages (polling with the default timeout) until :meth:`close` is called."""
        while not self._closed:
            yield from self.poll()

    def start(self) -> None:
        """See :meth:`LitePullConsumer.start`."""
        self._portal.call(lambda c: c.start())

    def close(self) -> None:
        """Close the consumer (persisting offsets) and stop the loop thread."""
        self._closed = True
        self._portal.close(lambda c: c.close())

    def subscribe(self, topic: str, expression: str = "*", *, expression_type: str = "TAG") -> None:
        """See :meth:`LitePullConsumer.subscribe`."""

        async def run(c: LitePullConsumer) -> None:
            c.subscribe(topic, expression, expression_type=expression_type)

        self._portal.call(run)

    def unsubscribe(self, topic: str) -> None:
        """See :meth:`LitePullConsumer.unsubscribe`."""

        async def run(c: LitePullConsumer) -> None:
            c.unsubscribe(topic)

        self._portal.call(run)

    def assign(self, mqs: Iterable[MessageQueue]) -> None:
        """See :meth:`LitePullConsumer.assign`."""
        queues = list(mqs)

        async def run(c: LitePullConsumer) -> None:
            c.assign(queues)

        self._portal.call(run)

    def assignment(self) -> list[MessageQueue]:
        """See :meth:`LitePullConsumer.assignment`."""

        async def run(c: LitePullConsumer) -> list[MessageQueue]:
            return c.assignment()

        return self._portal.call(run)

    def pause(self, mqs: Iterable[MessageQueue]) -> None:
        """See :meth:`LitePullConsumer.pause`."""
        queues = list(mqs)

        async def run(c: LitePullConsumer) -> None:
            c.pause(queues)

        self._portal.call(run)

    def resume(self, mqs: Iterable[MessageQueue]) -> None:
        """See :meth:`LitePullConsumer.resume`."""
        queues = list(mqs)

        async def run(c: LitePullConsumer) -> None:
            c.resume(queues)

        self._portal.call(run)

    def poll(self, timeout: float | None = None) -> list[MessageExt]:
        """See :meth:`LitePullConsumer.poll` (seconds)."""
        return self._portal.call(lambda c: c.poll(timeout))

    def seek(self, mq: MessageQueue, offset: int) -> None:
        """See :meth:`LitePullConsumer.seek`."""
        self._portal.call(lambda c: c.seek(mq, offset))

    def seek_to_begin(self, mq: MessageQueue) -> None:
        """See :meth:`LitePullConsumer.seek_to_begin`."""
        self._portal.call(lambda c: c.seek_to_begin(mq))

    def seek_to_end(self, mq: MessageQueue) -> None:
        """See :meth:`LitePullConsumer.seek_to_end`."""
        self._portal.call(lambda c: c.seek_to_end(mq))

    def offset_for_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> int:
        """See :meth:`LitePullConsumer.offset_for_timestamp`."""
        return self._portal.call(lambda c: c.offset_for_timestamp(mq, timestamp_ms))

    def committed(self, mq: MessageQueue) -> int:
        """See :meth:`LitePullConsumer.committed`."""
        return self._portal.call(lambda c: c.committed(mq))

    def commit(
        self, offsets: Mapping[MessageQueue, int] | Iterable[MessageQueue] | None = None, *, persist: bool = False
    ) -> None:
        """See :meth:`LitePullConsumer.commit`."""
        arg = offsets if offsets is None or isinstance(offsets, Mapping) else list(offsets)
        self._portal.call(lambda c: c.commit(arg, persist=persist))

    def commit_sync(self, offsets: Mapping[MessageQueue, int] | None = None, *, persist: bool = False) -> None:
        """See :meth:`LitePullConsumer.commit_sync`."""
        self._portal.call(lambda c: c.commit_sync(offsets, persist=persist))


__all__ = ["SyncLitePullConsumer"]
