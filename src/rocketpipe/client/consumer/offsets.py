"""Consumer offsets (L3): ConsumeFromWhere decisions and the remote offset store.

* :func:`decide_start_offset` is the pure table of ``RebalancePushImpl.computePullFromWhere``;
  :func:`compute_pull_from_where` gathers its inputs (broker queries) and applies it.
* :class:`RemoteOffsetStore` mirrors ``RemoteBrokerOffsetStore``: an in-memory table of
  "next offset to consume" per queue, read from and persisted to the broker through injected
  async callables (so the class itself is testable without a network).

Imports protocol.message and errors only; the RPCs are passed in (the consumers pass
:class:`~rocketpipe.client.consumer.offset_ops.BrokerOffsets`' calls).
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from ...errors import BrokerError, RocketMQError
from ...protocol.codes import ResponseCode
from ...protocol.message import MessageQueue
from ...protocol.names import is_retry_topic

log = logging.getLogger(__name__)

#: Format of DefaultMQPushConsumer.consumeTimestamp (local time).
CONSUME_TIMESTAMP_FORMAT: Final = "%Y%m%d%H%M%S"


class ConsumeFromWhere(enum.Enum):
    """Where a group without a committed offset starts (``ConsumeFromWhere``).

    The three deprecated values behave like ``CONSUME_FROM_LAST_OFFSET`` in a push consumer.
    """

    CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    CONSUME_FROM_TIMESTAMP = "CONSUME_FROM_TIMESTAMP"
    CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST = "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST"
    CONSUME_FROM_MIN_OFFSET = "CONSUME_FROM_MIN_OFFSET"
    CONSUME_FROM_MAX_OFFSET = "CONSUME_FROM_MAX_OFFSET"


class StartAction(enum.Enum):
    """What :func:`decide_start_offset` asks the caller to do."""

    USE_OFFSET = "USE_OFFSET"  # start at StartDecision.offset
    QUERY_MAX_OFFSET = "QUERY_MAX_OFFSET"  # GET_MAX_OFFSET of the queue
    SEARCH_TIMESTAMP = "SEARCH_TIMESTAMP"  # SEARCH_OFFSET_BY_TIMESTAMP(consume timestamp)
    SKIP = "SKIP"  # do not create the queue this round


@dataclass(frozen=True, slots=True)
class StartDecision:
    """Outcome of :func:`decide_start_offset`."""

    action: StartAction
    offset: int = -1


def decide_start_offset(where: ConsumeFromWhere, last_offset: int, topic: str) -> StartDecision:
    """Apply the ConsumeFromWhere table to the broker's stored offset.

    Mirrors ``RebalancePushImpl.computePullFromWhereWithException``:

    ====================  ===========  ===================================  =========
    where                 last ≥ 0     last == −1 (none stored)              last < −1
    ====================  ===========  ===================================  =========
    LAST (+ deprecated)   last         retry topic → 0, else max offset      skip
    FIRST                 last         0                                     skip
    TIMESTAMP             last         retry topic → max, else search time   skip
    ====================  ===========  ===================================  =========

    Args:
        where: the consumer's setting.
        last_offset: QUERY_CONSUMER_OFFSET result: the offset, −1 for "not found", < −1 error.
        topic: the queue's topic (``%RETRY%`` topics have their own rules).

    Returns:
        The action to take.

    >>> decide_start_offset(ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, -1, "%RETRY%g")
    StartDecision(action=<StartAction.USE_OFFSET: 'USE_OFFSET'>, offset=0)
    """
    if last_offset >= 0:
        return StartDecision(StartAction.USE_OFFSET, last_offset)
    if last_offset < -1:
        return StartDecision(StartAction.SKIP)
    retry = is_retry_topic(topic)
    if where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET:
        return StartDecision(StartAction.USE_OFFSET, 0)
    if where is ConsumeFromWhere.CONSUME_FROM_TIMESTAMP:
        return StartDecision(StartAction.QUERY_MAX_OFFSET if retry else StartAction.SEARCH_TIMESTAMP)
    # LAST_OFFSET and the deprecated values
    if retry:
        return StartDecision(StartAction.USE_OFFSET, 0)
    return StartDecision(StartAction.QUERY_MAX_OFFSET)


def default_consume_timestamp(now: datetime | None = None) -> str:
    """Return ``now − 30 min`` as ``yyyyMMddHHmmss`` local time (``consumeTimestamp`` default)."""
    return ((now or datetime.now()) - timedelta(minutes=30)).strftime(CONSUME_TIMESTAMP_FORMAT)


def parse_consume_timestamp(value: str) -> int:
    """Parse a ``yyyyMMddHHmmss`` local time into epoch milliseconds.

    Raises:
        ValueError: not in that format.
    """
    return int(datetime.strptime(value, CONSUME_TIMESTAMP_FORMAT).timestamp() * 1000)


async def compute_pull_from_where(
    where: ConsumeFromWhere,
    mq: MessageQueue,
    *,
    read_store_offset: Callable[[MessageQueue], Awaitable[int]],
    max_offset: Callable[[MessageQueue], Awaitable[int]],
    search_offset: Callable[[MessageQueue, int], Awaitable[int]],
    consume_timestamp: str,
) -> int:
    """Return the first offset to pull for a newly allocated queue, or −1 to skip it this round.

    Args:
        where: the consumer's ConsumeFromWhere.
        mq: the queue.
        read_store_offset: offset-store read from the broker (−1 none, < −1 error).
        max_offset: GET_MAX_OFFSET call.
        search_offset: SEARCH_OFFSET_BY_TIMESTAMP call (timestamp in ms).
        consume_timestamp: ``yyyyMMddHHmmss`` for CONSUME_FROM_TIMESTAMP.

    Returns:
        The start offset (≥ 0), or −1 when the queue must not be created now (errors are
        logged, not raised: the next rebalance tries again).
    """
    last = await read_store_offset(mq)
    decision = decide_start_offset(where, last, mq.topic)
    try:
        if decision.action is StartAction.USE_OFFSET:
            return decision.offset
        if decision.action is StartAction.QUERY_MAX_OFFSET:
            return await max_offset(mq)
        if decision.action is StartAction.SEARCH_TIMESTAMP:
            return await search_offset(mq, parse_consume_timestamp(consume_timestamp))
    except RocketMQError as exc:
        log.warning("compute start offset failed mq=%s err=%s", mq, exc)
    return -1


class ReadOffsetType(enum.Enum):
    """Where :meth:`RemoteOffsetStore.read_offset` looks (``ReadOffsetType``)."""

    READ_FROM_MEMORY = "READ_FROM_MEMORY"
    READ_FROM_STORE = "READ_FROM_STORE"
    MEMORY_FIRST_THEN_STORE = "MEMORY_FIRST_THEN_STORE"


QueryOffset = Callable[[MessageQueue], Awaitable[int]]
"""QUERY_CONSUMER_OFFSET: returns the offset; raises BrokerError (QUERY_NOT_FOUND) or others."""
CommitOffset = Callable[[MessageQueue, int, bool], Awaitable[None]]
"""UPDATE_CONSUMER_OFFSET: ``(mq, offset, oneway)``."""


class RemoteOffsetStore:
    """Consume offsets of a CLUSTERING group, kept in memory and persisted to the broker.

    Mirrors ``RemoteBrokerOffsetStore``. Offsets are "next offset to consume".

    Args:
        query: QUERY_CONSUMER_OFFSET for one queue.
        commit: UPDATE_CONSUMER_OFFSET for one queue.
    """

    def __init__(self, query: QueryOffset, commit: CommitOffset) -> None:
        self._query = query
        self._commit = commit
        self._table: dict[MessageQueue, int] = {}

    def update_offset(self, mq: MessageQueue, offset: int, increase_only: bool) -> None:
        """Set the in-memory offset; with ``increase_only`` keep the larger value."""
        old = self._table.get(mq)
        if old is None or not increase_only or offset > old:
            self._table[mq] = offset

    def read_memory(self, mq: MessageQueue) -> int:
        """Return the cached offset, or −1."""
        return self._table.get(mq, -1)

    async def read_offset(self, mq: MessageQueue, kind: ReadOffsetType) -> int:
        """Read an offset.

        Returns:
            The offset; −1 when unknown (memory miss, or QUERY_NOT_FOUND from the broker);
            −2 when the broker query failed otherwise.
        """
        if kind is not ReadOffsetType.READ_FROM_STORE:
            cached = self._table.get(mq)
            if cached is not None or kind is ReadOffsetType.READ_FROM_MEMORY:
                return -1 if cached is None else cached
        try:
            offset = await self._query(mq)
        except BrokerError as exc:
            if exc.response_code == ResponseCode.QUERY_NOT_FOUND:
                return -1
            log.warning("query consumer offset failed mq=%s err=%s", mq, exc)
            return -2
        except RocketMQError as exc:
            log.warning("query consumer offset failed mq=%s err=%s", mq, exc)
            return -2
        self.update_offset(mq, offset, increase_only=False)
        return offset

    async def persist(self, mq: MessageQueue, *, oneway: bool = False) -> None:
        """Send one queue's cached offset to the broker (no-op when none is cached).

        Raises:
            RocketMQError: the update failed (only when ``oneway`` is False).
        """
        offset = self._table.get(mq)
        if offset is not None and offset >= 0:
            await self._commit(mq, offset, oneway)

    async def persist_all(self, mqs: Iterable[MessageQueue], *, oneway: bool = True) -> None:
        """Persist the offsets of ``mqs`` and forget cached queues not in ``mqs``.

        Mirrors ``RemoteBrokerOffsetStore.persistAll`` (one-way updates). Errors are logged.
        """
        keep = set(mqs)
        for mq in list(self._table):
            if mq not in keep:
                del self._table[mq]
                continue
            try:
                await self.persist(mq, oneway=oneway)
            except RocketMQError as exc:
                log.warning("persist consumer offset failed mq=%s err=%s", mq, exc)

    def remove(self, mq: MessageQueue) -> None:
        """Forget a queue's cached offset."""
        self._table.pop(mq, None)

    def snapshot(self) -> dict[MessageQueue, int]:
        """Return a copy of the cached offsets."""
        return dict(self._table)
