"""POP bookkeeping (L3, pure): checkpoints of popped messages, pop offsets, revive decisions.

A :class:`Checkpoint` is what Java's ``PopCheckPoint`` records: one pop of one queue (group, real
topic, queue, start offset, pop time, invisible time, revive queue id) and the queue offsets it
handed out that are still unacknowledged. Java keeps checkpoints and acks as messages of the
``rmq_sys_REVIVE_LOG_<cluster>`` topic and merges them in ``PopBufferMergeService``; rocketpipe
keeps a table in memory and persists it (with the pop offsets) as one JSON file, which the broker
writes atomically with :mod:`rocketpipe.store.json_file`.

A receipt handle (``ExtraInfo``) finds its checkpoint by (group, topic, queue id, ck start offset,
pop time) — the fields Java's revive service matches acks with — and, when several checkpoints
share that key (a CHANGE_MESSAGE_INVISIBLETIME in the same millisecond as the pop), by the
invisible time too. Imports nothing from I/O.
"""

from __future__ import annotations

import bisect
import heapq
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final

from ..retry import dlq_topic, is_retry_topic

log = logging.getLogger(__name__)

#: ``BrokerConfig.reviveQueueNum``: revive queue ids handed out round-robin.
REVIVE_QUEUE_NUM: Final = 8
#: MessageConst.PROPERTY_FIRST_POP_TIME
PROPERTY_FIRST_POP_TIME: Final = "1ST_POP_TIME"
#: MessageConst.PROPERTY_POP_CK
PROPERTY_POP_CK: Final = "POP_CK"

_Key = tuple[str, str, int, int, int]  # group, topic, queue id, start offset, pop time


@dataclass(slots=True)
class Checkpoint:
    """One pop of one queue and its unacknowledged offsets (Java ``PopCheckPoint``).

    Attributes:
        ck_id: table-local id.
        group: consumer group (``cid``).
        topic: the real topic read (the subscribed topic or its pop retry topic).
        origin_topic: the subscribed topic (names the retry topic on revive).
        queue_id: queue of ``topic``.
        start_offset: the pop offset the read started at (``ckQueueOffset`` of the handles).
        pop_time: broker wall time of the pop, ms.
        invisible_time: ms of invisibility granted at ``pop_time``.
        revive_qid: revive queue id given to the client.
        broker_name: this broker's name.
        pending: queue offsets popped and not yet acknowledged, ascending.
    """

    ck_id: int
    group: str
    topic: str
    origin_topic: str
    queue_id: int
    start_offset: int
    pop_time: int
    invisible_time: int
    revive_qid: int
    broker_name: str
    pending: list[int] = field(default_factory=list)

    @property
    def deadline_ms(self) -> int:
        """When the pending messages become visible again (``reviveTime``)."""
        return self.pop_time + self.invisible_time

    @property
    def key(self) -> _Key:
        """The lookup key of the handles of this checkpoint."""
        return (self.group, self.topic, self.queue_id, self.start_offset, self.pop_time)

    def to_json(self) -> dict[str, Any]:
        """Short-key JSON form (the Java ``PopCheckPoint`` names where one exists)."""
        return {
            "c": self.group,
            "t": self.topic,
            "ot": self.origin_topic,
            "q": self.queue_id,
            "so": self.start_offset,
            "pt": self.pop_time,
            "it": self.invisible_time,
            "rq": self.revive_qid,
            "bn": self.broker_name,
            "po": list(self.pending),
        }

    @classmethod
    def from_json(cls, ck_id: int, d: dict[str, Any]) -> Checkpoint:
        """Parse :meth:`to_json` output.

        Raises:
            KeyError, TypeError, ValueError: malformed.
        """
        return cls(
            ck_id=ck_id,
            group=str(d["c"]),
            topic=str(d["t"]),
            origin_topic=str(d.get("ot") or d["t"]),
            queue_id=int(d["q"]),
            start_offset=int(d["so"]),
            pop_time=int(d["pt"]),
            invisible_time=int(d["it"]),
            revive_qid=int(d.get("rq", 0)),
            broker_name=str(d.get("bn", "")),
            pending=sorted({int(x) for x in d["po"]}),
        )


class CheckpointTable:
    """Checkpoints plus per-(group, topic, queue) pop offsets, owned by the event-loop thread.

    ``dirty`` is set by every change; the owner persists :meth:`to_json` and clears it.
    """

    #: required top-level keys of the checkpoint file (a file without them counts as bad)
    JSON_SHAPE: ClassVar[dict[str, type]] = {"popOffsetTable": dict, "checkpoints": list}

    def __init__(self) -> None:
        self._cks: dict[int, Checkpoint] = {}
        self._by_key: dict[_Key, list[int]] = {}
        self._deadlines: list[tuple[int, int]] = []  # heap of (deadline, ck_id); stale ids skipped
        self._offsets: dict[tuple[str, str, int], int] = {}
        self._next_id = 1
        self.dirty = False

    # ------------------------------------------------------------------ checkpoints
    def __len__(self) -> int:
        return len(self._cks)

    def __iter__(self) -> Iterator[Checkpoint]:
        return iter(list(self._cks.values()))

    def add(
        self,
        *,
        group: str,
        topic: str,
        origin_topic: str,
        queue_id: int,
        start_offset: int,
        pop_time: int,
        invisible_time: int,
        revive_qid: int,
        broker_name: str,
        offsets: Iterable[int],
    ) -> Checkpoint:
        """Record a pop of ``offsets`` and return its checkpoint."""
        ck = Checkpoint(
            self._next_id,
            group,
            topic,
            origin_topic,
            queue_id,
            start_offset,
            pop_time,
            invisible_time,
            revive_qid,
            broker_name,
            sorted(set(offsets)),
        )
        self._next_id += 1
        self._insert(ck)
        self.dirty = True
        return ck

    def _insert(self, ck: Checkpoint) -> None:
        self._cks[ck.ck_id] = ck
        self._by_key.setdefault(ck.key, []).append(ck.ck_id)
        heapq.heappush(self._deadlines, (ck.deadline_ms, ck.ck_id))

    def remove(self, ck: Checkpoint) -> None:
        """Forget a checkpoint (all its messages acknowledged or revived)."""
        if self._cks.pop(ck.ck_id, None) is None:
            return
        ids = self._by_key.get(ck.key)
        if ids is not None:
            ids.remove(ck.ck_id)
            if not ids:
                del self._by_key[ck.key]
        self.dirty = True

    def find(
        self,
        group: str,
        topic: str,
        queue_id: int,
        start_offset: int,
        pop_time: int,
        offset: int,
        invisible_time: int | None = None,
    ) -> Checkpoint | None:
        """The checkpoint a handle names whose ``offset`` is still pending, or None.

        With several candidates, the one with the handle's ``invisible_time`` wins.
        """
        found: Checkpoint | None = None
        for ck_id in self._by_key.get((group, topic, queue_id, start_offset, pop_time), ()):
            ck = self._cks[ck_id]
            i = bisect.bisect_left(ck.pending, offset)
            if i < len(ck.pending) and ck.pending[i] == offset:
                if invisible_time is None or ck.invisible_time == invisible_time:
                    return ck
                found = found or ck
        return found

    def settle(self, ck: Checkpoint, offset: int) -> bool:
        """Remove ``offset`` from ``ck`` (acknowledged, moved or revived); drop ``ck`` when empty.

        Returns:
            True when the offset was pending.
        """
        i = bisect.bisect_left(ck.pending, offset)
        if i >= len(ck.pending) or ck.pending[i] != offset:
            return False
        del ck.pending[i]
        self.dirty = True
        if not ck.pending:
            self.remove(ck)
        return True

    def ack(
        self,
        group: str,
        topic: str,
        queue_id: int,
        start_offset: int,
        pop_time: int,
        offset: int,
        invisible_time: int | None = None,
    ) -> Checkpoint | None:
        """Acknowledge one message; return the checkpoint it belonged to, or None (unknown handle)."""
        ck = self.find(group, topic, queue_id, start_offset, pop_time, offset, invisible_time)
        if ck is not None:
            self.settle(ck, offset)
        return ck

    def due(self, now_ms: int) -> list[Checkpoint]:
        """Checkpoints whose deadline is at or before ``now_ms``, earliest first.

        They stay in the table until settled (a failed revive is retried on the next call).
        """
        heap = self._deadlines
        out: list[Checkpoint] = []
        while heap and heap[0][0] <= now_ms:
            _, ck_id = heapq.heappop(heap)
            ck = self._cks.get(ck_id)
            if ck is not None:
                out.append(ck)
        for ck in out:  # still pending: keep them scheduled
            heapq.heappush(heap, (ck.deadline_ms, ck.ck_id))
        return out

    def next_deadline(self) -> int | None:
        """The earliest deadline, or None when empty."""
        heap = self._deadlines
        while heap and heap[0][1] not in self._cks:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def in_flight(self, group: str, topic: str | None = None) -> int:
        """Messages popped and not yet acknowledged/revived, for a group (and topic)."""
        return sum(
            len(ck.pending) for ck in self._cks.values() if ck.group == group and (topic is None or ck.topic == topic)
        )

    # ------------------------------------------------------------------ pop offsets
    def pop_offset(self, group: str, topic: str, queue_id: int) -> int | None:
        """The next offset to pop, or None when this table has none."""
        return self._offsets.get((group, topic, queue_id))

    def set_pop_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        """Store the next offset to pop."""
        key = (group, topic, queue_id)
        if self._offsets.get(key) != offset:
            self._offsets[key] = offset
            self.dirty = True

    # ------------------------------------------------------------------ JSON
    def to_json(self) -> dict[str, Any]:
        """``{"popOffsetTable": {"topic@group": {qid: off}}, "checkpoints": [...]}``."""
        table: dict[str, dict[str, int]] = {}
        for (group, topic, qid), off in sorted(self._offsets.items()):
            table.setdefault(f"{topic}@{group}", {})[str(qid)] = off
        return {"popOffsetTable": table, "checkpoints": [ck.to_json() for ck in self._cks.values()]}

    def load_json(self, obj: Any) -> None:
        """Replace the content with :meth:`to_json` output; malformed entries are skipped."""
        self._cks.clear()
        self._by_key.clear()
        self._deadlines.clear()
        self._offsets.clear()
        self._next_id = 1
        if isinstance(obj, dict):
            table = obj.get("popOffsetTable")
            if isinstance(table, dict):
                for key, queues in table.items():
                    topic, sep, group = str(key).rpartition("@")
                    if not sep or not isinstance(queues, dict):
                        continue
                    for q, off in queues.items():
                        try:
                            self._offsets[(group, topic, int(q))] = int(off)
                        except (TypeError, ValueError):
                            continue
            cks = obj.get("checkpoints")
            if isinstance(cks, list):
                for d in cks:
                    try:
                        ck = Checkpoint.from_json(self._next_id, d)
                    except (KeyError, TypeError, ValueError, AttributeError):
                        log.warning("pop checkpoints: skipping malformed entry %r", d)
                        continue
                    if ck.pending:
                        self._next_id += 1
                        self._insert(ck)
        self.dirty = False


# ---------------------------------------------------------------------------------- revive rules


@dataclass(frozen=True, slots=True)
class ReviveDecision:
    """Where an expired popped message goes.

    Attributes:
        topic: the pop retry topic, or ``%DLQ%<group>``.
        reconsume_times: the copy's reconsume count (previous + 1).
        is_dlq: True when dead-lettered.
    """

    topic: str
    reconsume_times: int
    is_dlq: bool


def decide_revive(
    *, group: str, ck_topic: str, retry_topic: str, reconsume_times: int, max_times: int
) -> ReviveDecision:
    """Decide the fate of a message whose invisible time passed unacknowledged.

    Java 5.x (``PopReviveService.reviveRetry``) re-puts it, with ``reconsumeTimes + 1``, into the
    pop retry topic (or the retry topic it was read from); the dead-lettering of a message
    delivered ``max_times + 1`` times is done by the 5.x proxy when it pops it again. rocketpipe
    has no proxy, so the broker dead-letters at revive time instead: a message whose
    ``reconsume_times`` already reached ``max_times`` goes to ``%DLQ%<group>`` — the same number
    of deliveries (``max_times + 1``).

    Args:
        group: consumer group.
        ck_topic: the topic the message was popped from.
        retry_topic: the group's pop retry topic for the subscribed topic.
        reconsume_times: the stored message's reconsume count.
        max_times: the group's ``retryMaxTimes``.
    """
    if reconsume_times >= max_times:
        return ReviveDecision(dlq_topic(group), reconsume_times + 1, True)
    return ReviveDecision(ck_topic if is_retry_topic(ck_topic) else retry_topic, reconsume_times + 1, False)


def first_pop_time_properties(properties: dict[str, str], reconsume_times: int, pop_time: int) -> dict[str, str]:
    """Properties of a revived copy: ``1ST_POP_TIME`` set on the first revive (or when missing)."""
    props = dict(properties)
    props.pop(PROPERTY_POP_CK, None)
    if reconsume_times == 0 or PROPERTY_FIRST_POP_TIME not in props:
        props[PROPERTY_FIRST_POP_TIME] = str(pop_time)
    return props
