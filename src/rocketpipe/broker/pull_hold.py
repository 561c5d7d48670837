"""Long polling (L3, pure state): parked pulls keyed by (topic, queue).

Mirrors ``PullRequestHoldService`` + ``NotifyMessageArrivingListener``. A pull that found
nothing (PULL_NOT_FOUND) with FLAG_SUSPEND set on its first pass is parked here instead of
answered. The broker re-runs the pull processor (no suspend, no commit) for every entry this
table releases and writes the answer on the original connection with the original opaque.

Transition table of one entry (deadline on the event loop's clock, seconds):

=====================  ==============================================  ==========
state                  event                                           next
=====================  ==============================================  ==========
PARKED                 arrival: max_offset > offset and tag matches    RELEASED
PARKED                 arrival: max_offset > offset, tag mismatch      PARKED
PARKED                 sweep: max_offset > offset (tag unknown)        RELEASED
PARKED                 sweep/arrival: now >= deadline                  RELEASED
PARKED                 connection closed                               DROPPED
=====================  ==============================================  ==========

Deadlines are kept in a heap (lazy deletion: released/dropped entries are marked ``done`` and
skipped when they reach the top), so :meth:`PullHoldTable.next_deadline` and
:meth:`PullHoldTable.expire` cost O(log N) per entry instead of a scan of every parked pull.
A batch put notifies with the tag codes of all its messages; an entry is released when any
of them matches.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..protocol.message import int32


@dataclass(slots=True, eq=False)
class HeldPull:
    """One parked pull.

    Attributes:
        topic, queue_id: the queue pulled.
        offset: requested queue offset.
        deadline: loop time (s) at which the pull is answered anyway.
        code_set: tag hash codes accepted, or None for "all".
        request: the original request command.
        channel: the connection to answer on.
        context: anything the processor needs to re-run (e.g. the decoded header).
    """

    topic: str
    queue_id: int
    offset: int
    deadline: float
    code_set: frozenset[int] | None
    request: Any
    channel: Hashable
    context: Any = None
    key: tuple[str, int] = field(init=False)
    #: True once released, dropped or drained (its heap slot is then stale).
    done: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        self.key = (self.topic, self.queue_id)

    def matches(self, tags_code: int | None) -> bool:
        """True when a message with ``tags_code`` passes this pull's tag filter (None = unknown)."""
        if self.code_set is None or tags_code is None:
            return True
        return int32(tags_code) in self.code_set

    def matches_any(self, tags_codes: tuple[int | None, ...]) -> bool:
        """True when any of ``tags_codes`` passes the filter (an empty tuple never matches)."""
        if self.code_set is None:
            return bool(tags_codes)
        return any(self.matches(c) for c in tags_codes)


class PullHoldTable:
    """Parked pulls; owned by the event-loop thread."""

    def __init__(self) -> None:
        self._held: dict[tuple[str, int], list[HeldPull]] = {}
        self._deadlines: list[tuple[float, int, HeldPull]] = []
        self._seq = itertools.count()

    def __len__(self) -> int:
        return sum(len(v) for v in self._held.values())

    def park(self, entry: HeldPull) -> None:
        """Park a pull until :meth:`on_arrival` or :meth:`sweep` releases it."""
        self._held.setdefault(entry.key, []).append(entry)
        heapq.heappush(self._deadlines, (entry.deadline, next(self._seq), entry))

    def has(self, topic: str, queue_id: int) -> bool:
        """True when pulls are parked on (topic, queue)."""
        return (topic, queue_id) in self._held

    def keys(self) -> list[tuple[str, int]]:
        """The (topic, queue) keys with parked pulls."""
        return list(self._held)

    def on_arrival(
        self, topic: str, queue_id: int, max_offset: int, tags_code: int | Iterable[int | None] | None, now: float
    ) -> list[HeldPull]:
        """Release the pulls of (topic, queue) that a new message (or the deadline) satisfies.

        Args:
            topic, queue_id: queue that grew.
            max_offset: the queue's max offset now (exclusive).
            tags_code: tags code of the new message, or None when unknown (sweep); for a
                batch, the tags codes of all its messages (an entry wakes if any matches).
            now: loop time (s).

        Returns:
            Entries removed from the table, to be re-run.
        """
        entries = self._held.get((topic, queue_id))
        if not entries:
            return []
        codes: tuple[int | None, ...] = (
            (tags_code,) if tags_code is None or isinstance(tags_code, int) else tuple(tags_code)
        )
        released: list[HeldPull] = []
        keep: list[HeldPull] = []
        for e in entries:
            if (max_offset > e.offset and e.matches_any(codes)) or now >= e.deadline:
                e.done = True
                released.append(e)
            else:
                keep.append(e)
        if keep:
            self._held[(topic, queue_id)] = keep
        else:
            del self._held[(topic, queue_id)]
        return released

    def sweep(self, max_offset_of: Callable[[str, int], int], now: float) -> list[HeldPull]:
        """Periodic check of every key with its current max offset (tag unknown = match)."""
        out: list[HeldPull] = []
        for topic, queue_id in list(self._held):
            out.extend(self.on_arrival(topic, queue_id, max_offset_of(topic, queue_id), None, now))
        return out

    def expire(self, now: float) -> list[HeldPull]:
        """Release the pulls whose deadline passed (popped from the deadline heap; no sweep)."""
        out: list[HeldPull] = []
        heap = self._deadlines
        while heap and (heap[0][2].done or heap[0][0] <= now):
            _, _, e = heapq.heappop(heap)
            if e.done:
                continue
            e.done = True
            out.append(e)
            entries = self._held.get(e.key)
            if entries is not None:
                entries.remove(e)
                if not entries:
                    del self._held[e.key]
        return out

    def drop_channel(self, channel: Hashable) -> int:
        """Forget the pulls parked on a closed connection; return how many."""
        n = 0
        for key, entries in list(self._held.items()):
            keep = []
            for e in entries:
                if e.channel != channel:
                    keep.append(e)
                else:
                    e.done = True
            n += len(entries) - len(keep)
            if keep:
                self._held[key] = keep
            else:
                del self._held[key]
        return n

    def drain(self) -> list[HeldPull]:
        """Remove and return every parked pull (shutdown)."""
        out = [e for entries in self._held.values() for e in entries]
        for e in out:
            e.done = True
        self._held.clear()
        self._deadlines.clear()
        return out

    def next_deadline(self) -> float | None:
        """Earliest deadline among parked pulls, or None (stale heap slots are discarded)."""
        heap = self._deadlines
        while heap and heap[0][2].done:
            heapq.heappop(heap)
        return heap[0][0] if heap else None
