"""Consumer offset table (L3): ``topic@group -> {queueId: offset}`` plus its JSON form.

Mirrors ``ConsumerOffsetManager``: an offset is the **next** message to consume; commits
overwrite unconditionally; unknown entries query as -1. Persistence (``config/consumerOffset.json``)
is done by the broker through ``rocketpipe.store.json_file`` and :mod:`.metadata` (a file
without ``JSON_SHAPE``'s keys counts as bad); this module only converts to and from the JSON
object. Pure, no I/O.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

log = logging.getLogger(__name__)

TOPIC_GROUP_SEPARATOR = "@"


class ConsumerOffsets:
    """Committed consumer offsets, owned by the event-loop thread."""

    #: required top-level keys of ``consumerOffset.json`` (a file without them counts as bad)
    JSON_SHAPE: ClassVar[dict[str, type]] = {"offsetTable": dict}

    def __init__(self) -> None:
        self._table: dict[str, dict[int, int]] = {}
        self._resets: dict[tuple[str, str, int], int] = {}
        self.dirty = False

    @staticmethod
    def key(topic: str, group: str) -> str:
        """Return the table key ``topic@group``."""
        return f"{topic}{TOPIC_GROUP_SEPARATOR}{group}"

    def commit(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        """Store ``offset`` (next message to consume) for (group, topic, queue)."""
        queues = self._table.setdefault(self.key(topic, group), {})
        prev = queues.get(queue_id)
        if prev is not None and offset < prev:
            log.debug("offset moved back group=%s topic=%s queue=%d %d->%d", group, topic, queue_id, prev, offset)
        queues[queue_id] = offset
        self.dirty = True

    def commit_from_client(self, group: str, topic: str, queue_id: int, offset: int) -> bool:
        """Commit on behalf of a consumer (UPDATE_CONSUMER_OFFSET, pull piggy-back).

        Ignored while a server-side reset of that queue is pending (5.x ``useServerSideResetOffset``),
        so in-flight commits cannot undo the reset.

        Returns:
            True when stored.
        """
        if (group, topic, queue_id) in self._resets:
            return False
        self.commit(group, topic, queue_id, offset)
        return True

    def set_reset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        """Reset a queue's offset server-side; the next pull of it answers OFFSET_RESET."""
        self.commit(group, topic, queue_id, offset)
        self._resets[(group, topic, queue_id)] = offset

    def take_reset(self, group: str, topic: str, queue_id: int) -> int | None:
        """Return and clear a pending reset (``queryThenEraseResetOffset``), or None."""
        return self._resets.pop((group, topic, queue_id), None)

    def query(self, group: str, topic: str, queue_id: int) -> int:
        """Return the committed offset, or -1 when none."""
        return self._table.get(self.key(topic, group), {}).get(queue_id, -1)

    def queue_offsets(self, group: str, topic: str) -> dict[int, int]:
        """Return a copy of ``{queue_id: offset}`` for (group, topic)."""
        return dict(self._table.get(self.key(topic, group), {}))

    def topics_of_group(self, group: str) -> list[str]:
        """Return the topics a group has offsets for, sorted."""
        out = []
        for k in self._table:
            topic, _, g = k.rpartition(TOPIC_GROUP_SEPARATOR)
            if g == group:
                out.append(topic)
        return sorted(out)

    def groups_of_topic(self, topic: str) -> list[str]:
        """Return the groups with offsets on ``topic``, sorted."""
        out = []
        for k in self._table:
            t, _, g = k.rpartition(TOPIC_GROUP_SEPARATOR)
            if t == topic:
                out.append(g)
        return sorted(out)

    def to_json(self) -> dict[str, Any]:
        """Return ``{"offsetTable": {"topic@group": {"0": offset, ...}}}``."""
        return {"offsetTable": {k: {str(q): o for q, o in sorted(v.items())} for k, v in sorted(self._table.items())}}

    def load_json(self, obj: Any) -> None:
        """Replace the table with the content of :meth:`to_json` output; skip malformed entries."""
        self._table = {}
        table = obj.get("offsetTable") if isinstance(obj, dict) else None
        if not isinstance(table, dict):
            return
        for k, queues in table.items():
            if not isinstance(queues, dict) or TOPIC_GROUP_SEPARATOR not in str(k):
                continue
            parsed: dict[int, int] = {}
            for q, o in queues.items():
                try:
                    parsed[int(q)] = int(o)
                except (TypeError, ValueError):
                    continue
            self._table[str(k)] = parsed
        self.dirty = False
