"""Consumer offset operations through the brokers (L3): the RPCs, start offsets, persist, reset.

* :class:`BrokerOffsets` — the offset RPCs of one group, each sent to the queue's master:
  QUERY_CONSUMER_OFFSET / UPDATE_CONSUMER_OFFSET (what ``RemoteBrokerOffsetStore`` calls
  through ``MQClientAPIImpl``), GET_MAX_OFFSET / GET_MIN_OFFSET / SEARCH_OFFSET_BY_TIMESTAMP
  (``MQAdminImpl.maxOffset`` / ``minOffset`` / ``searchOffset``), and the ConsumeFromWhere start
  offset built on them (``computePullFromWhereWithException``).
* :func:`persist_quietly` — persist one queue's offset, acknowledged, logging a failure (the
  ``offsetStore.persist`` + ``removeOffset`` steps of dropping a queue).
* :func:`reset_held_offsets` — ``MQClientInstance.resetOffset`` for the push consumer's held
  queues (RESET_CONSUMER_CLIENT_OFFSET).

The offset tables themselves are :class:`~.offsets.RemoteOffsetStore` (CLUSTERING) and
:class:`~.local_offsets.LocalOffsetStore` (BROADCASTING). Offsets are "next offset to consume";
timestamps are epoch milliseconds.

Imports sibling client modules, protocol and errors.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Final, Protocol

from ...errors import RocketMQError
from ...protocol.message import MessageQueue
from .. import rpc
from .offsets import ConsumeFromWhere, ReadOffsetType, compute_pull_from_where
from .orderly import OrderlyProcessQueue

if TYPE_CHECKING:
    from ..runtime import ClientRuntime
    from .pull import PullRequest

log = logging.getLogger(__name__)

#: RemoteBrokerOffsetStore update timeout (5 000 ms), seconds.
OFFSET_UPDATE_TIMEOUT: Final = 5.0


class OffsetStore(Protocol):
    """What these operations use of an offset store (remote or local)."""

    def update_offset(self, mq: MessageQueue, offset: int, increase_only: bool) -> None:
        """Set the in-memory offset."""

    async def read_offset(self, mq: MessageQueue, kind: ReadOffsetType) -> int:
        """Read an offset (−1 unknown, −2 query failed)."""

    async def persist(self, mq: MessageQueue, *, oneway: bool = False) -> None:
        """Persist one queue's offset."""

    def remove(self, mq: MessageQueue) -> None:
        """Forget one queue's offset."""


class BrokerOffsets:
    """The offset RPCs of one consumer group, sent to the master of each queue's broker.

    Args:
        runtime: client runtime (master addresses, pool, request timeout).
        group: consumer group.
    """

    def __init__(self, runtime: ClientRuntime, group: str) -> None:
        self._rt = runtime
        self._group = group

    async def _master(self, mq: MessageQueue) -> str:
        return await self._rt.find_master_addr(mq.broker_name, mq.topic)

    async def query(self, mq: MessageQueue) -> int:
        """QUERY_CONSUMER_OFFSET: the group's stored offset of ``mq``.

        Raises:
            BrokerError: QUERY_NOT_FOUND (none stored) or another refusal; TransportError.
        """
        rt = self._rt
        return await rpc.query_consumer_offset(
            rt.pool, await self._master(mq), self._group, mq, rt.config.request_timeout
        )

    async def commit(self, mq: MessageQueue, offset: int, oneway: bool) -> None:
        """UPDATE_CONSUMER_OFFSET (timeout :data:`OFFSET_UPDATE_TIMEOUT`; ``oneway``: no answer).

        Raises:
            BrokerError / TransportError: the update failed (not when ``oneway``).
        """
        rt = self._rt
        await rpc.update_consumer_offset(
            rt.pool, await self._master(mq), self._group, mq, offset, OFFSET_UPDATE_TIMEOUT, oneway=oneway
        )

    async def max_offset(self, mq: MessageQueue) -> int:
        """GET_MAX_OFFSET: the next offset to be written to ``mq``.

        Raises:
            BrokerError / TransportError.
        """
        rt = self._rt
        return await rpc.get_max_offset(rt.pool, await self._master(mq), mq, rt.config.request_timeout)

    async def min_offset(self, mq: MessageQueue) -> int:
        """GET_MIN_OFFSET: the smallest offset of ``mq`` on its broker.

        Raises:
            BrokerError / TransportError.
        """
        rt = self._rt
        return await rpc.get_min_offset(rt.pool, await self._master(mq), mq, rt.config.request_timeout)

    async def search(self, mq: MessageQueue, timestamp_ms: int) -> int:
        """SEARCH_OFFSET_BY_TIMESTAMP: the first offset of ``mq`` stored at or after ``timestamp_ms``.

        Raises:
            BrokerError / TransportError.
        """
        rt = self._rt
        return await rpc.search_offset(rt.pool, await self._master(mq), mq, timestamp_ms, rt.config.request_timeout)

    async def start_offset(
        self,
        where: ConsumeFromWhere,
        mq: MessageQueue,
        store: OffsetStore,
        read: ReadOffsetType,
        consume_timestamp: str,
    ) -> int:
        """ConsumeFromWhere start offset of a newly allocated queue (``computePullFromWhere``).

        Args:
            where: the consumer's ConsumeFromWhere.
            mq: the queue.
            store: the offset store, read with ``read`` (push: READ_FROM_STORE; lite pull:
                MEMORY_FIRST_THEN_STORE).
            read: where the store looks.
            consume_timestamp: ``yyyyMMddHHmmss`` for CONSUME_FROM_TIMESTAMP.

        Returns:
            The start offset (≥ 0), or −1 when the queue must not start now (logged).
        """
        return await compute_pull_from_where(
            where,
            mq,
            read_store_offset=lambda q: store.read_offset(q, read),
            max_offset=self.max_offset,
            search_offset=self.search,
            consume_timestamp=consume_timestamp,
        )


async def persist_quietly(store: OffsetStore, mq: MessageQueue, group: str, what: str) -> None:
    """Persist ``mq``'s offset (acknowledged); a failure is logged as ``persist <what> failed``."""
    try:
        await store.persist(mq, oneway=False)
    except RocketMQError as exc:
        log.warning("persist %s failed group=%s mq=%s err=%s", what, group, mq, exc)


async def reset_held_offsets(
    topic: str,
    offset_table: Mapping[MessageQueue, int],
    *,
    queues: Mapping[MessageQueue, PullRequest],
    drop_queue: Callable[[MessageQueue], Awaitable[None]],
    store: OffsetStore,
    group: str,
) -> list[MessageQueue]:
    """Move the offsets of the held queues of ``topic`` (``MQClientInstance.resetOffset``).

    Each affected queue is dropped (the batch in flight of an orderly queue is awaited), its
    cache cleared, its new offset stored, persisted and forgotten; the next rebalance pulls from
    it. Queues of the table that are not held are left to their owners. The caller keeps
    rebalance rounds out meanwhile and wakes one afterwards.

    Args:
        topic: the topic reset; other topics' entries are ignored.
        offset_table: queue → new "next offset to consume".
        queues: the consumer's held queues (``processQueueTable``).
        drop_queue: drops one held queue.
        store: the offset store.
        group: consumer group (logs).

    Returns:
        The queues reset (sorted).
    """
    targets = {mq: off for mq, off in offset_table.items() if mq.topic == topic}
    changed: list[MessageQueue] = []
    for mq, off in sorted(targets.items()):
        req = queues.get(mq)
        if req is None:
            continue
        await drop_queue(mq)
        if isinstance(req.pq, OrderlyProcessQueue):
            async with req.pq.consume_lock:  # after the batch in flight and the drop
                pass
        req.pq.clear()
        store.update_offset(mq, off, increase_only=False)
        await persist_quietly(store, mq, group, "reset offset")
        store.remove(mq)
        changed.append(mq)
    log.info("reset offsets group=%s topic=%s queues=%s", group, topic, changed)
    return changed


__all__ = ["OFFSET_UPDATE_TIMEOUT", "BrokerOffsets", "OffsetStore", "persist_quietly", "reset_held_offsets"]
