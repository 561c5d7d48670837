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
    BORN_HOST_POS,
    PHYSICAL_OFFSET_POS,
    SYSFLAG_POS,
    MessageExt,
    body_crc,
    decode_record,
    store_timestamp_pos,
)
from .segments import Segment, SegmentedFile

log = logging.getLogger(__name__)

#: ``CommitLog.END_FILE_MIN_BLANK_LENGTH``: a segment always keeps room for the filler.
END_FILE_MIN_BLANK_LENGTH: Final = 8
#: Smallest possible record (v1 magic, IPv4 hosts, empty body/topic/properties).
MIN_RECORD_SIZE: Final = 91

_HEAD: Final = struct.Struct(">ii")
_I32: Final = struct.Struct(">i")
_I16: Final = struct.Struct(">h")
_I64: Final = struct.Struct(">q")


class CommitLog:
    """Append-only record log over :class:`SegmentedFile`.

    Args:
        directory: ``<root>/commitlog``.
        segment_size: bytes per segment (``mapped_file_size_commit_log``).
        prefault_ahead: populate this many bytes of page mappings ahead of the write offset,
            one system call per chunk (0 = every page faults on its first write).

    Attributes:
        files: the segments.
        write_offset: end of the written data, bytes (``getMaxOffset``).
    """

    def __init__(self, directory: Path, segment_size: int, prefault_ahead: int = 0) -> None:
        self.files = SegmentedFile(directory, segment_size)
        self.write_offset = 0
        self._prefault_ahead = prefault_ahead  # bytes; 0 = off
        self._prefaulted = 0  # offset up to which pages were populated

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
        view = seg.view
        pos = rel
        if len(records) == 1:
            view[pos : pos + total] = records[0]
        else:
            for rec in records:
                n = len(rec)
                view[pos : pos + n] = rec
                pos += n
        if rolled:
            pos = rel
            for rec in records:
                _I64.pack_into(view, pos + PHYSICAL_OFFSET_POS, seg.start + pos)
                pos += len(rec)
        end = start + total
        self.write_offset = end
        if end > self._prefaulted and self._prefault_ahead:
            if not seg.prefault(end - seg.start, self._prefault_ahead):
                self._prefault_ahead = 0
            self._prefaulted = min(seg.end, end + self._prefault_ahead)
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

    def look(self, offset: int) -> MessageExt | None:
        """Decode the record at ``offset`` without decompressing (``lookMessageByOffset``)."""
        total = self.record_size_at(offset)
        buf = self.read(offset, total) if total > 0 else None
        if buf is None:
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
        if not segs:
            ok = offset == 0
        elif offset == segs[-1].end:
            ok = True
        else:
            seg = self.files.find(offset)
            rel = offset - seg.start if seg is not None else -1
            ok = seg is segs[-1] and rel >= 0 and bytes(seg.view[rel : rel + 8]) == bytes(8)
        if ok:
            self.write_offset = offset
            self.files.flushed = offset
        return ok

    def _check_record(self, seg: Segment, rel: int, check_crc: bool) -> MessageExt | None:
        """Validate the record at ``rel`` like ``checkMessageAndReturnSize``; None if torn."""
        view = seg.view
        total, magic = _HEAD.unpack_from(view, rel)
        if magic not in (sf.MAGIC_V1, sf.MAGIC_V2):
            return None
        if total < MIN_RECORD_SIZE or rel + total + END_FILE_MIN_BLANK_LENGTH > seg.size:
            return None
        rec = view[rel : rel + total]
        try:
            msg, _ = decode_record(rec, 0, read_body=check_crc, decompress_body=False)
        except ProtocolError:
            return None
        if msg.commit_log_offset != seg.start + rel:
            return None
        if check_crc and body_crc(msg.body) != msg.body_crc:
            return None
        # exact layout length and non-zero tails: a zero-filled torn tail fails here
        (sys_flag,) = _I32.unpack_from(rec, SYSFLAG_POS)
        p = BORN_HOST_POS + (20 if sys_flag & sf.BORNHOST_V6_FLAG else 8) + 8
        p += (20 if sys_flag & sf.STOREHOST_V6_FLAG else 8) + 12
        (blen,) = _I32.unpack_from(rec, p)
        p += 4 + blen
        if magic == sf.MAGIC_V2:
            (tlen,) = _I16.unpack_from(rec, p)
            p += 2
        else:
            tlen = rec[p]
            p += 1
        p += tlen
        (plen,) = _I16.unpack_from(rec, p)
        if tlen <= 0 or p + 2 + plen != total or rec[p - 1] == 0 or (plen > 0 and rec[total - 1] == 0):
            return None
        return msg

    def recover(self, scan_from: int, check_crc: bool, dispatch: Callable[[MessageExt], None]) -> int:
        """Scan records from the segment holding ``scan_from``; truncate after the last whole one.

        Mirrors ``CommitLog.recoverAbnormally``: every record is validated (magic, size, physical
        offset, body CRC when ``check_crc``, exact field lengths); BLANK fillers jump to the next
        segment; the first invalid record ends the log, its segment's tail is zeroed and later
        segments are deleted. ``dispatch`` is called for each valid record, in order.

        Returns:
            The recovered write offset, bytes.
        """
        segs = self.files.segments
        if not segs:
            self.write_offset = 0
            return 0
        seg = self.files.find(scan_from) or (segs[-1] if scan_from >= segs[-1].end else segs[0])
        idx = segs.index(seg)
        end = scan_start = seg.start
        while True:
            rel = end - seg.start
            if rel + 8 > seg.size:
                break
            total, magic = _HEAD.unpack_from(seg.view, rel)
            if magic == sf.BLANK_MAGIC and total == seg.size - rel:
                end = seg.end
                idx += 1
                if idx >= len(segs):
                    break
                seg = segs[idx]
                continue
            msg = self._check_record(seg, rel, check_crc)
            if msg is None:
                if total or magic:
                    log.warning("commitlog torn record at offset=%d; truncating", end)
                break
            dispatch(msg)
            end += total
        if end < scan_from:
            log.warning("commitlog recovered end=%d is below the checkpoint offset=%d", end, scan_from)
        self.files.truncate(end)
        self.write_offset = end
        self.files.flushed = min(scan_start, end)  # data before the scanned segment was synced
        return end

    def close(self) -> None:
        """Unmap the segments."""
        self.files.close()
