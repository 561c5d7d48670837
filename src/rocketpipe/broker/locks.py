"""Queue locks of orderly consumers (L3, pure): group -> {MessageQueue: (client id, last update)}.

Mirrors ``RebalanceLockManager``: a lock lives ``lock_max_live_ms`` (60 s,
``rocketmq.broker.rebalance.lockMaxLiveTime``) after its last renewal; the holder renews by
locking again; another client takes a queue only once the lock expired; unlock only by the
holder. Time comes from the caller (wall ms).

==================  ==========================  =====================
state of a queue    LOCK by client c at now     result
==================  ==========================  =====================
free                any                         held by c (granted)
held by c           any                         renewed (granted)
held by d, live     now - last <= max_live      unchanged (refused)
held by d, expired  now - last > max_live       held by c (granted)
==================  ==========================  =====================
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from ..protocol.message import MessageQueue

#: rocketmq.broker.rebalance.lockMaxLiveTime default (ms)
LOCK_MAX_LIVE_MS: Final = 60_000


@dataclass(slots=True)
class LockEntry:
    """Holder of one queue lock."""

    client_id: str
    last_update_ms: int


class QueueLocks:
    """Lock table of every consumer group.

    Args:
        lock_max_live_ms: expiry of an unrenewed lock, ms.
    """

    def __init__(self, lock_max_live_ms: int = LOCK_MAX_LIVE_MS) -> None:
        self.lock_max_live_ms = lock_max_live_ms
        self._table: dict[str, dict[MessageQueue, LockEntry]] = {}

    def _live(self, e: LockEntry, now_ms: int) -> bool:
        return now_ms - e.last_update_ms <= self.lock_max_live_ms

    def try_lock_batch(self, group: str, mqs: Iterable[MessageQueue], client_id: str, now_ms: int) -> set[MessageQueue]:
        """Lock (or renew) each queue for ``client_id``; return the queues it now holds."""
        table = self._table.setdefault(group, {})
        granted: set[MessageQueue] = set()
        for mq in mqs:
            e = table.get(mq)
            if e is None or e.client_id == client_id or not self._live(e, now_ms):
                table[mq] = LockEntry(client_id, now_ms)
                granted.add(mq)
        return granted

    def unlock_batch(self, group: str, mqs: Iterable[MessageQueue], client_id: str) -> None:
        """Release the queues ``client_id`` holds among ``mqs``."""
        table = self._table.get(group)
        if not table:
            return
        for mq in mqs:
            e = table.get(mq)
            if e is not None and e.client_id == client_id:
                del table[mq]
        if not table:
            del self._table[group]

    def is_lock_all_expired(self, group: str, now_ms: int) -> bool:
        """True when ``group`` holds no live lock (``RebalanceLockManager.isLockAllExpired``)."""
        return not any(self._live(e, now_ms) for e in self._table.get(group, {}).values())

    def holder(self, group: str, mq: MessageQueue, now_ms: int) -> str | None:
        """Client id holding a live lock on ``mq``, or None."""
        e = self._table.get(group, {}).get(mq)
        return e.client_id if e is not None and self._live(e, now_ms) else None
