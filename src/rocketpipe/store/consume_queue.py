"""Consume queues: 20-byte (commit-log offset, size, tags code) entries per topic/queue (L2).

Mirrors ``ConsumeQueue``: files ``consumequeue/<topic>/<queueId>/<20-digit start byte>`` of
``mapped_file_size_consume_queue`` bytes; entry *i* (the queue offset) sits at byte ``i * 20`` of
the queue's virtual address space. Imports stdlib and the store's own modules only.

Thread safety: :meth:`ConsumeQueue.append` runs under the store's put lock; readers in another
thread see an entry only after ``write_pos`` has moved past it (the entry bytes are written
first), so reads need no lock.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from .config import CQ_STORE_UNIT_SIZE
from .segments import SegmentedFile

log = logging.getLogger(__name__)

_ENTRY: Final = struct.Struct(">qiq")
_SIZE: Final = struct.Struct(">i")
#: Size of a blank (gap-filling) entry (``Integer.MAX_VALUE``).
BLANK_ENTRY_SIZE: Final = 0x7FFFFFFF


class ConsumeQueue:
    """The index of one (topic, queue id).

    Args:
        topic: topic name.
        queue_id: queue id.
        directory: ``consumequeue/<topic>/<queueId>``.
        file_size: bytes per segment (multiple of 20).
    """

    __slots__ = ("topic", "queue_id", "files", "write_pos", "_unit_per_file")

    def __init__(self, topic: str, queue_id: int, directory: Path, file_size: int) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.files = SegmentedFile(directory, file_size)
        self.write_pos = 0  # bytes; max offset = write_pos // 20
        self._unit_per_file = file_size // CQ_STORE_UNIT_SIZE

    # ------------------------------------------------------------------ offsets

    @property
    def max_offset(self) -> int:
        """One past the last entry (``getMaxOffsetInQueue``); the next queue offset to assign."""
        return self.write_pos // CQ_STORE_UNIT_SIZE

    @property
    def min_offset(self) -> int:
        """First entry still present (``getMinOffsetInQueue``)."""
        return self.files.min_offset // CQ_STORE_UNIT_SIZE

    def roll_next_file(self, offset: int) -> int:
        """Queue offset of the first entry of the file after the one holding ``offset``."""
        return offset + self._unit_per_file - offset % self._unit_per_file

    # ------------------------------------------------------------------ write

    def append(self, phys: int, size: int, tags_code: int) -> None:
        """Append one entry at ``write_pos`` (``putMessagePositionInfo``).

        Raises:
            OSError: a new segment file cannot be created.
        """
        pos = self.write_pos
        seg = self.files.segments[-1] if self.files.segments else None
        if seg is None or pos >= seg.end:
            seg = self.files.create_next(pos)
        _ENTRY.pack_into(seg.view, pos - seg.start, phys, size, tags_code)
        self.write_pos = pos + CQ_STORE_UNIT_SIZE

    def append_many(self, entries: list[tuple[int, int, int]]) -> None:
        """Append (commit-log offset, size, tags code) entries; ``write_pos`` moves once at the end.

        Raises:
            OSError: a new segment file cannot be created (entries written so far are kept).
        """
        pos = self.write_pos
        files = self.files
        pack = _ENTRY.pack_into
        seg = files.segments[-1] if files.segments else None
        try:
            for phys, size, code in entries:
                if seg is None or pos >= seg.end:
                    seg = files.create_next(pos)
                pack(seg.view, pos - seg.start, phys, size, code)
                pos += CQ_STORE_UNIT_SIZE
        finally:
            self.write_pos = pos

    def fill_blanks_to(self, offset: int) -> None:
        """Append blank entries until ``max_offset == offset`` (gap after lost entries)."""
        if offset > self.max_offset:
            log.warning("topic=%s queue=%d filling %d blank entries", self.topic, self.queue_id, offset - self.max_offset)
        while self.max_offset < offset:
            self.append(0, BLANK_ENTRY_SIZE, 0)

    # ------------------------------------------------------------------ read

    def entry(self, offset: int) -> tuple[int, int, int] | None:
        """Return (commit-log offset, size, tags code) of entry ``offset``, or None."""
        if offset < self.min_offset or offset >= self.max_offset:
            return None
        pos = offset * CQ_STORE_UNIT_SIZE
        seg = self.files.find(pos)
        if seg is None:
            return None
        return _ENTRY.unpack_from(seg.view, pos - seg.start)

    def entries_in_file(self, offset: int, end_offset: int) -> Iterator[tuple[int, int, int]] | None:
        """Iterate entries from ``offset`` to ``end_offset`` or the end of offset's file.

        Returns:
            An iterator of (commit-log offset, size, tags code), or None when no file holds
            ``offset`` (the caller reports OFFSET_FOUND_NULL).
        """
        pos = offset * CQ_STORE_UNIT_SIZE
        seg = self.files.find(pos)
        if seg is None:
            return None
        end = min(end_offset * CQ_STORE_UNIT_SIZE, seg.end, self.write_pos)
        if end <= pos:
            return iter(())
        return _ENTRY.iter_unpack(seg.view[pos - seg.start : end - seg.start])

    # ------------------------------------------------------------------ recovery

    def load(self, *, thorough: bool) -> None:
        """Map the files and find the end of the written entries.

        Args:
            thorough: scan the last file linearly (after a crash, when the page order of the
                writes is unknown); otherwise binary-search the first empty entry.

        An entry is valid when its size is positive (``ConsumeQueue.recover``).
        """
        self.files.load()
        segs = self.files.segments
        if not segs:
            self.write_pos = 0
            return
        seg = segs[-1]
        n = seg.size // CQ_STORE_UNIT_SIZE
        view = seg.view
        if thorough:
            count = 0
            for _phys, size, _code in _ENTRY.iter_unpack(view):
                if size <= 0:
                    break
                count += 1
        else:
            lo, hi = 0, n  # first index whose size <= 0
            while lo < hi:
                mid = (lo + hi) // 2
                (size,) = _SIZE.unpack_from(view, mid * CQ_STORE_UNIT_SIZE + 8)
                if size > 0:
                    lo = mid + 1
                else:
                    hi = mid
            count = lo
        self.write_pos = seg.start + count * CQ_STORE_UNIT_SIZE
        seg.zero_from(count * CQ_STORE_UNIT_SIZE)
        self.files.flushed = self.write_pos

    def truncate_beyond(self, commit_log_end: int) -> int:
        """Drop trailing entries whose record ends beyond ``commit_log_end``.

        Returns:
            The number of entries dropped.
        """
        dropped = 0
        while self.max_offset > self.min_offset:
            e = self.entry(self.max_offset - 1)
            assert e is not None
            phys, size, _ = e
            if size != BLANK_ENTRY_SIZE and phys + size <= commit_log_end:
                break
            self.write_pos -= CQ_STORE_UNIT_SIZE
            dropped += 1
        if dropped:
            self.files.truncate(self.write_pos)
        return dropped

    def truncate_to(self, offset: int) -> None:
        """Drop entries from queue offset ``offset`` on."""
        if offset < self.max_offset:
            self.write_pos = offset * CQ_STORE_UNIT_SIZE
            self.files.truncate(self.write_pos)

    def flush(self) -> None:
        """msync the entries written so far.

        Raises:
            OSError: the sync failed.
        """
        self.files.flush(self.write_pos)

    def close(self) -> None:
        """Unmap the files."""
        self.files.close()
