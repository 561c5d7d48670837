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
import shutil
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from .commit_log import CommitLog
from .config import CQ_STORE_UNIT_SIZE
from .record_check import check_record, record_queue
from .segments import SegmentedFile

log = logging.getLogger(__name__)

_ENTRY: Final = struct.Struct(">qiq")
_SIZE: Final = struct.Struct(">i")
#: Size of a blank (gap-filling) entry (``Integer.MAX_VALUE``).
BLANK_ENTRY_SIZE: Final = 0x7FFFFFFF


_NO_VIEW: Final = memoryview(b"")  # before the first segment is found


class ConsumeQueue:
    """The index of one (topic, queue id).

    Args:
        topic: topic name.
        queue_id: queue id.
        directory: ``consumequeue/<topic>/<queueId>``.
        file_size: bytes per segment (multiple of 20).
    """

    __slots__ = ("_min_logic", "_unit_per_file", "files", "queue_id", "topic", "write_pos")

    def __init__(self, topic: str, queue_id: int, directory: Path, file_size: int) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.files = SegmentedFile(directory, file_size)
        self.write_pos = 0  # bytes; max offset = write_pos // 20
        self._unit_per_file = file_size // CQ_STORE_UNIT_SIZE
        self._min_logic = 0  # first entry whose record is still in the commit log (minLogicOffset)

    # ------------------------------------------------------------------ offsets

    @property
    def max_offset(self) -> int:
        """One past the last entry (``getMaxOffsetInQueue``); the next queue offset to assign."""
        return self.write_pos // CQ_STORE_UNIT_SIZE

    @property
    def min_offset(self) -> int:
        """First entry whose record is still stored (``getMinOffsetInQueue``)."""
        return max(self.files.min_offset // CQ_STORE_UNIT_SIZE, self._min_logic)

    def correct_min_offset(self, min_phy_offset: int) -> int:
        """Move the min offset to the first entry whose record is at or past ``min_phy_offset``.

        Mirrors ``ConsumeQueue.correctMinOffset`` after commit-log files were deleted (and at
        load). Blank entries are passed over. Returns the new min offset.
        """
        pos = max(self.files.min_offset, self._min_logic * CQ_STORE_UNIT_SIZE)
        while pos < self.write_pos:
            seg = self.files.find(pos)
            if seg is None:
                break
            end = min(seg.end, self.write_pos)
            for phys, size, _ in _ENTRY.iter_unpack(seg.view[pos - seg.start : end - seg.start]):
                if size != BLANK_ENTRY_SIZE and size > 0 and phys >= min_phy_offset:
                    self._min_logic = pos // CQ_STORE_UNIT_SIZE
                    return self._min_logic
                pos += CQ_STORE_UNIT_SIZE
        self._min_logic = self.write_pos // CQ_STORE_UNIT_SIZE
        return self._min_logic

    def delete_files_below(self, min_phy_offset: int) -> int:
        """Delete files whose last entry's record is below ``min_phy_offset``; never the last file.

        Mirrors ``MappedFileQueue.deleteExpiredFileByOffset``. Returns the number deleted.

        Raises:
            OSError: a file cannot be unlinked.
        """
        deleted = 0
        files = self.files
        while len(files.segments) > 1:
            seg = files.segments[0]
            phys, size, _ = _ENTRY.unpack_from(seg.view, seg.size - CQ_STORE_UNIT_SIZE)
            if size != BLANK_ENTRY_SIZE and phys >= min_phy_offset:
                break
            files.delete_first()
            deleted += 1
        return deleted

    def last_record_end(self) -> int:
        """Commit-log offset just past the last entry's record, or -1 when the queue has no
        entry or ends in a blank (``ConsumeQueue.getLastOffset``).
        """
        pos = self.write_pos - CQ_STORE_UNIT_SIZE
        seg = self.files.find(pos) if pos >= 0 else None
        if seg is None:
            return -1
        phys, size, _ = _ENTRY.unpack_from(seg.view, pos - seg.start)
        return phys + size if phys >= 0 and size > 0 and size != BLANK_ENTRY_SIZE else -1

    def destroy(self) -> None:
        """Unmap and delete the queue's files and directory (``ConsumeQueue.destroy``)."""
        directory = self.files.directory
        self.files.close()
        shutil.rmtree(directory, ignore_errors=True)
        self.write_pos = 0
        self._min_logic = 0

    def start_at(self, offset: int) -> None:
        """Make an empty queue begin at queue ``offset`` (a rebuild whose first records are gone)."""
        pos = offset * CQ_STORE_UNIT_SIZE
        self.files.create_next(pos - pos % self.files.segment_size)
        self.write_pos = pos
        self._min_logic = offset

    def check_samples(self, commit_log: CommitLog) -> str | None:
        """Check the first and last entry of each file against the records they point to.

        Returns:
            None when they match (same topic, queue id and queue offset, and the record checks
            out), else what is wrong — the caller rebuilds the queue from the commit log.
        """
        lo, hi = commit_log.min_offset, commit_log.write_offset
        for seg in self.files.segments:
            first = max(seg.start, self.min_offset * CQ_STORE_UNIT_SIZE)
            last = min(seg.end, self.write_pos) - CQ_STORE_UNIT_SIZE
            for pos in {first, last}:
                if pos < first or pos > last:
                    continue
                phys, size, _ = _ENTRY.unpack_from(seg.view, pos - seg.start)
                if size == BLANK_ENTRY_SIZE or (phys < lo and size > 0):
                    continue  # a gap filler, or a record deleted by retention
                qo = pos // CQ_STORE_UNIT_SIZE
                buf = commit_log.read(phys, size) if size > 0 else None
                if buf is None:
                    return f"entry {qo} points at [{phys}, +{size}), outside the commit log [{lo}, {hi})"
                reason = check_record(buf, 0, phys, size, check_crc=False)
                if reason in ("bad magic", "bad size"):  # no record starts there: the entry is bad
                    return f"entry {qo} does not match the commit log ({reason})"
                if reason is None and (head := record_queue(buf)) != (self.topic, self.queue_id, qo):
                    return f"entry {qo} points at a record of {head}"
                # else the entry is right and the record damaged: reads skip it, the queue stays
        return None

    def ensure_capacity(self, entries: int) -> None:
        """Create the files ``entries`` more entries will need, before anything is written.

        The store calls this ahead of the commit-log append so that a full disk fails the put
        as a whole instead of leaving a record without its consume-queue entry.

        Raises:
            OSError: a file cannot be created (ENOSPC: disk full).
        """
        end = self.write_pos + entries * CQ_STORE_UNIT_SIZE
        files = self.files
        last_end = files.segments[-1].end if files.segments else None
        if last_end is None:
            files.create_next(self.write_pos - self.write_pos % files.segment_size)
            last_end = files.segments[-1].end
        while last_end < end:
            files.create_next(last_end)
            last_end = files.segments[-1].end

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
        seg = self.files.find(pos) or self.files.create_next(pos)
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
        seg = files.find(pos)
        view, seg_start, seg_end = (_NO_VIEW, 0, -1) if seg is None else (seg.view, seg.start, seg.end)
        try:
            for phys, size, code in entries:
                if pos >= seg_end:
                    seg = files.find(pos) or files.create_next(pos)
                    view, seg_start, seg_end = seg.view, seg.start, seg.end
                pack(view, pos - seg_start, phys, size, code)
                pos += CQ_STORE_UNIT_SIZE
        finally:
            self.write_pos = pos

    def fill_blanks_to(self, offset: int) -> None:
        """Append blank entries until ``max_offset == offset`` (gap after lost entries)."""
        if offset > self.max_offset:
            log.warning(
                "topic=%s queue=%d filling %d blank entries", self.topic, self.queue_id, offset - self.max_offset
            )
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
        view = self.entries_view(offset, end_offset)
        return None if view is None else _ENTRY.iter_unpack(view)

    def entries_view(self, offset: int, end_offset: int) -> memoryview | None:
        """The raw entries from ``offset`` to ``end_offset`` or the end of offset's file.

        Returns:
            A view of whole 20-byte entries (big-endian commit-log offset i64, size i32, tags
            code i64; possibly empty) into the mapped file, or None when no file holds
            ``offset``.
        """
        pos = offset * CQ_STORE_UNIT_SIZE
        seg = self.files.find(pos)
        if seg is None:
            return None
        end = max(pos, min(end_offset * CQ_STORE_UNIT_SIZE, seg.end, self.write_pos))
        return seg.view[pos - seg.start : end - seg.start]

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
        while len(segs) > 1 and _SIZE.unpack_from(segs[-1].view, 8)[0] <= 0:
            # created ahead by ensure_capacity and never written: the end is in the file before
            self.files.truncate(segs[-1].start)
            segs = self.files.segments
        if not segs:
            self.write_pos = 0
            return
        seg = segs[-1]
        n = seg.size // CQ_STORE_UNIT_SIZE
        view = seg.view
        if thorough:
            count = n
            for at, (_phys, size, _code) in enumerate(_ENTRY.iter_unpack(view)):
                if size <= 0:
                    count = at
                    break
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
