"""The commit log: records of every topic appended to fixed-size segments (L2).

Mirrors ``CommitLog``: segment files ``commitlog/<20-digit start offset>``; a record that does not
fit (with 8 bytes to spare) in the rest of a segment gets an end-of-file filler — int remaining
bytes + int BLANK magic ``0xCBD43194`` — and goes to the next segment, so records never straddle
files. Record bytes are produced by :func:`rocketpipe.protocol.message.encode_record`; this module
only places, reads and validates them. Imports: stdlib, ``errors``, ``protocol``, own package.

Thread safety: :meth:`CommitLog.append` runs under the store's put lock; :meth:`read` and friends
read below ``write_offset`` without a lock; :meth:`SegmentedFile.flush` may run in another thread.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Final

from ..errors import ProtocolError
from ..protocol import sysflag as sf
from ..protocol.message import (
    PHYSICAL_OFFSET_POS,
    SYSFLAG_POS,
    MessageExt,
    decode_record,
    store_timestamp_pos,
)
from ..ratelog import RateLimitedLog
from .record_check import MIN_RECORD_SIZE, check_record
from .segments import Segment, SegmentedFile

log = logging.getLogger(__name__)

#: ``CommitLog.END_FILE_MIN_BLANK_LENGTH``: a segment always keeps room for the filler.
END_FILE_MIN_BLANK_LENGTH: Final = 8
#: A run of zeros this long after the last good record ends the data (a torn tail, not a hole).
ZERO_TAIL_BYTES: Final = 1024 * 1024

_HEAD: Final = struct.Struct(">ii")
_I32: Final = struct.Struct(">i")
_I64: Final = struct.Struct(">q")
_MAGICS: Final = tuple(_I32.pack(m) for m in (sf.MAGIC_V1, sf.MAGIC_V2, sf.BLANK_MAGIC))


class CommitLog:
    """Append-only record log over :class:`SegmentedFile`.

    Args:
        directory: ``<root>/commitlog``.
        segment_size: bytes per segment (``mapped_file_size_commit_log``).

    Attributes:
        files: the segments.
        write_offset: end of the written data, bytes (``getMaxOffset``).
        disk_loaded_end: end of the data found on disk at load; records below it are checked
            (:func:`~.record_check.check_record`) before they are handed out, records appended by
            this process are not.
        damaged: commit-log offset -> reason, for every damaged record or range found so far
            (by recovery or by a read); such records are never handed out.
        damaged_bytes: bytes skipped over damaged ranges by recovery.
    """

    def __init__(self, directory: Path, segment_size: int) -> None:
        self.files = SegmentedFile(directory, segment_size)
        self.write_offset = 0
        self.disk_loaded_end = 0
        self.damaged: dict[int, str] = {}
        self.damaged_bytes = 0
        self._warn = RateLimitedLog(log, 60.0)

    @property
    def segment_size(self) -> int:
        """Bytes per segment."""
        return self.files.segment_size

    @property
    def min_offset(self) -> int:
        """First byte still stored (``getMinOffset``)."""
        return self.files.min_offset

    def roll_next_file(self, offset: int) -> int:
        """Start of the segment after the one holding ``offset`` (``rollNextFile``)."""
        return offset + self.segment_size - offset % self.segment_size

    # ------------------------------------------------------------------ write

    def append(self, records: list[bytes], total: int) -> int:
        """Write ``records`` (``total`` bytes together) contiguously; return their start offset.

        The records must carry physical offsets counted from the current ``write_offset``; when
        they do not fit in the current segment a BLANK filler is written, the next segment is
        created and the PHYSICALOFFSET fields are rewritten in place.

        Raises:
            ValueError: ``total + 8`` exceeds the segment size (the caller rejects such puts).
            OSError: a new segment file cannot be created.
        """
        size = self.segment_size
        if total + END_FILE_MIN_BLANK_LENGTH > size:
            raise ValueError(f"{total} bytes of records cannot fit in a {size}-byte segment")
        start = self.write_offset
        segs = self.files.segments
        seg = segs[-1] if segs else None
        if seg is None or start >= seg.end:
            seg = self.files.create_next(start)
        rel = start - seg.start
        rolled = False
        if total + END_FILE_MIN_BLANK_LENGTH > size - rel:
            _HEAD.pack_into(seg.view, rel, size - rel, sf.BLANK_MAGIC)
            start = seg.end
            self.write_offset = start
            seg = self.files.create_next(start)
            rel = 0
            rolled = True
        seg.write(rel, records, total)
        if rolled:
            view = seg.view
            pos = rel
            for rec in records:
                _I64.pack_into(view, pos + PHYSICAL_OFFSET_POS, seg.start + pos)
                pos += len(rec)
        self.write_offset = start + total
        return start

    # ------------------------------------------------------------------ read

    def _locate(self, offset: int, size: int) -> tuple[Segment, int] | None:
        if offset < 0 or size <= 0 or offset + size > self.write_offset:
            return None
        seg = self.files.find(offset)
        if seg is None:
            return None
        rel = offset - seg.start
        if rel + size > seg.size:
            return None
        return seg, rel

    def read(self, offset: int, size: int) -> memoryview | None:
        """Return a view of ``size`` bytes at ``offset`` (``getMessage``), or None when absent."""
        loc = self._locate(offset, size)
        if loc is None:
            return None
        seg, rel = loc
        return seg.view[rel : rel + size]

    def pickup_store_timestamp(self, offset: int, size: int) -> int:
        """Store time of the record at ``offset`` in ms, or -1 (``pickupStoreTimestamp``)."""
        loc = self._locate(offset, size)
        if loc is None or size < MIN_RECORD_SIZE:
            return -1
        seg, rel = loc
        (sys_flag,) = _I32.unpack_from(seg.view, rel + SYSFLAG_POS)
        (ts,) = _I64.unpack_from(seg.view, rel + store_timestamp_pos(sys_flag))
        return int(ts)

    def record_size_at(self, offset: int) -> int:
        """TOTALSIZE of the record at ``offset``, or -1 when none is there."""
        loc = self._locate(offset, 8)
        if loc is None:
            return -1
        seg, rel = loc
        total, magic = _HEAD.unpack_from(seg.view, rel)
        if magic not in (sf.MAGIC_V1, sf.MAGIC_V2) or total < MIN_RECORD_SIZE:
            return -1
        return int(total)

    def record_ok(self, buf: memoryview | bytes, offset: int, size: int = -1) -> bool:
        """True when ``buf`` (the record read at ``offset``) may be handed out.

        Records appended by this process always may; a record that was on disk at load is
        checked once per read. A failure is remembered in :attr:`damaged` and logged (one line
        per minute, with the offset and the count).
        """
        if offset >= self.disk_loaded_end:
            return True
        if offset in self.damaged:
            return False
        reason = check_record(buf, 0, offset, size)
        if reason is None:
            return True
        self.note_damage(offset, reason)
        return False

    def note_damage(self, offset: int, reason: str, length: int = 0) -> None:
        """Remember and log a damaged record at ``offset`` (``length`` bytes skipped, if known)."""
        if offset not in self.damaged:
            self.damaged[offset] = reason
            self.damaged_bytes += length
        self._warn.warning(
            "damaged-record",
            "commitlog damaged record at offset=%d (%s) not served; damaged records so far=%d",
            offset,
            reason,
            len(self.damaged),
        )

    def look(self, offset: int) -> MessageExt | None:
        """Decode the record at ``offset`` without decompressing (``lookMessageByOffset``).

        Returns None when nothing (or a damaged record) is there.
        """
        total = self.record_size_at(offset)
        buf = self.read(offset, total) if total > 0 else None
        if buf is None or not self.record_ok(buf, offset, total):
            return None
        try:
            msg, _ = decode_record(buf, 0, decompress_body=False)
        except ProtocolError:
            return None
        return msg

    # ------------------------------------------------------------------ recovery

    def trust_end(self, offset: int) -> bool:
        """Adopt ``offset`` (from a clean shutdown) as the write offset if the files agree.

        Returns:
            False when the files contradict it (the caller falls back to a scan).
        """
        segs = self.files.segments
        if self.files.damage:
            ok = False
        elif not segs:
            ok = offset == 0
        elif offset == segs[-1].end:
            ok = True
        else:
            seg = self.files.find(offset)
            rel = offset - seg.start if seg is not None else -1
            ok = seg is segs[-1] and rel >= 0 and bytes(seg.view[rel : rel + 8]) == bytes(8)
        if ok:
            self.write_offset = self.disk_loaded_end = offset
            self.files.flushed = offset
        return ok

    def scan(self, start: int, check_crc: bool, on_record: Callable[[MessageExt], None], *, stop: int = -1) -> int:
        """Walk the records from ``start``, resynchronising past damage; return where data ends.

        Each record is checked (:func:`~.record_check.check_record`; the body CRC only when
        ``check_crc``) and passed to ``on_record`` in order; BLANK fillers jump to the next
        segment. At a record that does not check out the walk looks for the next one that does
        (its magic code, size, PHYSICALOFFSET = its position and CRC all agree) in the same
        segment, or at the start of the next: found, the range in between is recorded in
        :attr:`damaged` and skipped; not found (or a zero run of ``ZERO_TAIL_BYTES``), the data
        ends there — a torn tail.

        Args:
            start: a record boundary (the checkpoint's flushed offset, or a segment start).
            check_crc: verify body CRCs (``checkCRCOnRecover``).
            on_record: called with each good record (body not read).
            stop: end the walk here (-1 = at the end of the data).

        Returns:
            The offset one past the last good record (or ``stop``).
        """
        segs = self.files.segments
        seg = self.files.find(start)
        if seg is None:
            return start
        idx = segs.index(seg)
        end = start
        while stop < 0 or end < stop:
            rel = end - seg.start
            if rel + 8 > seg.size:
                break
            total, magic = _HEAD.unpack_from(seg.view, rel)
            if magic == sf.BLANK_MAGIC and total == seg.size - rel:
                idx += 1
                if idx >= len(segs):
                    end = seg.end
                    break
                seg = segs[idx]
                end = seg.start
                continue
            reason = check_record(seg.view, rel, end, check_crc=check_crc)
            if reason is None:
                try:
                    msg, _ = decode_record(seg.view, rel, read_body=False, decompress_body=False)
                except ProtocolError as exc:
                    reason = str(exc)
                else:
                    on_record(msg)
                    end += total
                    continue
            if total == 0 and magic == 0 and seg.is_zero(rel, ZERO_TAIL_BYTES):
                break  # the end of the written data
            nxt = self._resync(segs, idx, rel + 1)
            if nxt is None:
                log.warning("commitlog torn tail at offset=%d (%s); data ends there", end, reason)
                break
            idx, nrel = nxt
            seg = segs[idx]
            skipped = seg.start + nrel - end
            self.note_damage(end, f"{reason}; skipped {skipped} bytes to the next good record", skipped)
            log.warning(
                "commitlog damaged range offset=%d length=%d (%s) skipped; resumed at offset=%d",
                end,
                skipped,
                reason,
                end + skipped,
            )
            end += skipped
        return end

    def _resync(self, segs: list[Segment], idx: int, rel: int) -> tuple[int, int] | None:
        """(segment index, position) of the next good record at or after ``rel``, or None.

        Searches window by window (``ZERO_TAIL_BYTES``) and gives up at the first window that is
        all zeros: past a torn tail the rest of the segment is never written, so a crash in
        the middle of an append costs one window, not a scan of the whole segment.
        """
        seg = segs[idx]
        pos = rel
        while pos < seg.size:
            wend = min(seg.size, pos + ZERO_TAIL_BYTES)
            cand = self._next_candidate(seg, pos, wend)
            if cand is not None:
                return idx, cand
            if seg.is_zero(pos, wend - pos):
                return None
            pos = wend
        if idx + 1 < len(segs) and check_record(segs[idx + 1].view, 0, segs[idx + 1].start) is None:
            return idx + 1, 0
        return None

    @staticmethod
    def _next_candidate(seg: Segment, pos: int, wend: int) -> int | None:
        """Position in ``[pos, wend)`` where a good record (or the end filler) starts, or None."""
        while True:
            best = -1
            for magic in _MAGICS:  # record magic codes and the end-of-segment filler
                at = seg.find(magic, pos + 4, min(seg.size, wend + 4))
                if at >= 0 and (best < 0 or at < best):
                    best = at
            if best < 0:
                return None
            cand = best - 4
            total, magic = _HEAD.unpack_from(seg.view, cand)
            if magic == sf.BLANK_MAGIC:
                if total == seg.size - cand:
                    return cand
            elif check_record(seg.view, cand, seg.start + cand) is None:
                return cand
            pos = cand + 1

    def recover(self, scan_from: int, check_crc: bool, dispatch: Callable[[MessageExt], None]) -> int:
        """Recover after a crash: walk from the checkpoint, cut only a torn tail.

        Better than ``CommitLog.recoverAbnormally``, which rescans from the start of a segment
        and truncates at the first bad record: everything below ``scan_from`` (the checkpoint's
        flushed offset) was on disk and is kept as it is (a damaged record there is found and
        skipped when read); from ``scan_from`` on, :meth:`scan` checks each record, skips damaged
        ranges that good records follow and ends the log at a torn tail, whose bytes are zeroed
        (later segments deleted). ``dispatch`` is called for each good record, in order.

        Returns:
            The recovered write offset, bytes.
        """
        segs = self.files.segments
        if not segs:
            self.write_offset = self.disk_loaded_end = 0
            return 0
        if scan_from > segs[-1].end or scan_from < segs[0].start:
            log.error(
                "commitlog checkpoint offset=%d is outside the files [%d, %d); recovering from the last segment",
                scan_from,
                segs[0].start,
                segs[-1].end,
            )
            scan_from = segs[-1].start
        end = self.scan(scan_from, check_crc, dispatch) if scan_from < segs[-1].end else scan_from
        self.files.truncate(end)
        self.write_offset = self.disk_loaded_end = end
        self.files.flushed = min(scan_from, end)  # data before the checkpoint was synced
        return end

    def close(self) -> None:
        """Unmap the segments."""
        self.files.close()
