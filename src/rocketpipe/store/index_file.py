"""One memory-mapped key-index file (``IndexFile`` + ``IndexHeader``; L2, stdlib only).

Layout (big-endian, as Java's ``MappedByteBuffer``), fixed size
``40 + hash_slot_num * 4 + index_num * 20`` bytes::

    header   beginTimestamp i64 | endTimestamp i64 | beginPhyOffset i64 | endPhyOffset i64
             | hashSlotCount i32 | indexCount i32
    slots    hash_slot_num x i32: position of the newest entry whose keyHash % hash_slot_num
             is the slot (0 = none)
    entries  index_num x (keyHash i32 | phyOffset i64 | timeDiff i32 | prevIndex i32)

``indexCount`` is the next free entry position (it starts at 1: position 0 is the "none" value of
the slots and ``prevIndex``), so a file holds ``index_num - 1`` entries. ``timeDiff`` is
``(storeTimestamp - beginTimestamp) // 1000`` seconds, clamped to ``0 .. 2**31 - 1``; entries of
one slot form a chain, newest first, through ``prevIndex``.

Differences from Java, all invisible in the file format:

* ``endPhyOffset`` is also moved past keyless messages (:meth:`IndexFile.set_end_phy_offset`), so
  it means "every message at or below this commit-log offset has been indexed"; restart then
  re-indexes from there, never from the start of the log.
* The first entry's ``timeDiff`` is computed after ``beginTimestamp`` is set to its store time
  (Java computes it against the previous file's end time when a file follows a full one).
* Entries are written before the slots that point at them and the header last, so a process
  killed half-way through a batch leaves entries past ``indexCount`` that
  :meth:`IndexFile.repair_tail` undoes; a slot value at or past ``indexCount`` is "none".
* The file's blocks are reserved with ``posix_fallocate`` before they are written through the
  mapping (slots in 64 KiB pieces as they are first used, entries 1 MiB ahead), so a full disk is
  an ``OSError`` instead of a ``SIGBUS``, and a store with few keys uses little disk.

Threads: one writer (:meth:`~IndexFile.put_many`, :meth:`~IndexFile.set_end_phy_offset`);
:meth:`~IndexFile.select_phy_offsets` may run concurrently in other threads.
"""

from __future__ import annotations

import errno
import mmap
import os
import struct
import sys
from array import array
from pathlib import Path
from typing import Final

from ..compiled import load
from ..errors import RocketMQError
from .index_hash import index_key_hashes

HEADER_SIZE: Final = 40
HASH_SLOT_SIZE: Final = 4
INDEX_SIZE: Final = 20
INVALID_INDEX: Final = 0
_INT_MAX: Final = 0x7FFFFFFF
#: Entry blocks are reserved this many bytes at a time.
ALLOCATE_CHUNK: Final = 1024 * 1024
#: Slot blocks are reserved in pieces of this many bytes, when a slot in them is first written.
SLOT_BLOCK: Final = 64 * 1024
_SLOTS_PER_BLOCK_SHIFT: Final = 14  # SLOT_BLOCK // HASH_SLOT_SIZE == 1 << 14

_HEADER: Final = struct.Struct(">qqqqii")
_ENTRY: Final = struct.Struct(">iqii")
_SLOT: Final = struct.Struct(">i")
_PHY: Final = struct.Struct(">q")
_ZERO_ENTRY: Final = bytes(INDEX_SIZE)
_SWAP: Final = sys.byteorder == "little"  # array() is native-endian; the file is big-endian

#: the compiled loops of :meth:`IndexFile.put_many` (None: not built), and the ones in use (None:
#: the Python code, also with ROCKETPIPE_PURE_PYTHON=1)
_compiled_put_built, _compiled_put = load(f"{__package__}._index_put", "put_entries")
_compiled_slots, _ = load(f"{__package__}._index_put", "put_slots")  # used after put_entries only

#: ``(key, commit-log offset, store timestamp ms)`` of one key to index.
KeyEntry = tuple[str, int, int]


class IndexFileError(RocketMQError):
    """An index file's size or header is not one this code wrote (``str(exc)`` says what)."""


def file_size(hash_slot_num: int, index_num: int) -> int:
    """Bytes of one index file."""
    return HEADER_SIZE + hash_slot_num * HASH_SLOT_SIZE + index_num * INDEX_SIZE


class IndexFile:
    """One mapped index file; create with :meth:`create` or :meth:`open`.

    Attributes (mirrors of the header, kept in memory):
        begin_timestamp, end_timestamp: store times of the first and last entry, ms.
        begin_phy_offset, end_phy_offset: commit-log offsets, bytes (see the module notes).
        hash_slot_count: slots in use.
        index_count: next free entry position (1 = empty).
    """

    def __init__(self, path: Path, hash_slot_num: int, index_num: int, fd: int, mm: mmap.mmap) -> None:
        self.path = path
        self.name = path.name
        self.hash_slot_num = hash_slot_num
        self.index_num = index_num
        self._fd = fd
        self._mm = mm
        self._entries_at = HEADER_SIZE + hash_slot_num * HASH_SLOT_SIZE
        self._size = file_size(hash_slot_num, index_num)
        self._allocated = 0  # entry area reserved up to this byte
        self._slot_blocks = bytearray((hash_slot_num * HASH_SLOT_SIZE + SLOT_BLOCK - 1) // SLOT_BLOCK)  # 1 = reserved
        self.dirty = False
        self.begin_timestamp: int
        self.end_timestamp: int
        self.begin_phy_offset: int
        self.end_phy_offset: int
        self.hash_slot_count: int
        self.index_count: int
        (
            self.begin_timestamp,
            self.end_timestamp,
            self.begin_phy_offset,
            self.end_phy_offset,
            self.hash_slot_count,
            self.index_count,
        ) = _HEADER.unpack_from(mm, 0)
        if self.index_count <= 0:  # IndexHeader.load
            self.index_count = 1

    # ------------------------------------------------------------------ open / create

    @classmethod
    def create(
        cls, path: Path, hash_slot_num: int, index_num: int, end_phy_offset: int, end_timestamp: int
    ) -> IndexFile:
        """Create ``path`` (must not exist) continuing at ``end_phy_offset``/``end_timestamp``.

        Raises:
            OSError: the file cannot be created, sized or mapped, or the disk is full.
        """
        size = file_size(hash_slot_num, index_num)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.ftruncate(fd, size)
            _allocate(fd, 0, HEADER_SIZE)
            mm = mmap.mmap(fd, size)
        except OSError:
            os.close(fd)
            path.unlink(missing_ok=True)
            raise
        f = cls(path, hash_slot_num, index_num, fd, mm)
        f._allocated = f._entries_at
        if end_phy_offset > 0:
            f.begin_phy_offset = f.end_phy_offset = end_phy_offset
        if end_timestamp > 0:
            f.begin_timestamp = f.end_timestamp = end_timestamp
        f.save_header()
        return f

    @classmethod
    def open(cls, path: Path, hash_slot_num: int, index_num: int) -> IndexFile:
        """Map an existing file and check its header against its entries.

        Raises:
            IndexFileError: wrong size or an impossible header.
            OSError: the file cannot be opened or mapped.
        """
        size = file_size(hash_slot_num, index_num)
        fd = os.open(path, os.O_RDWR)
        try:
            actual = os.fstat(fd).st_size
            if actual != size:
                raise IndexFileError(
                    f"size {actual} bytes, expected {size} for {hash_slot_num} slots and {index_num} entries"
                )
            mm = mmap.mmap(fd, size)
        except BaseException:
            os.close(fd)
            raise
        f = cls(path, hash_slot_num, index_num, fd, mm)
        f._allocated = f._entries_at + f.index_count * INDEX_SIZE  # reserved when written
        try:
            f._check()
        except IndexFileError:
            f.close()
            raise
        return f

    def _check(self) -> None:
        n = self.index_count
        if n > self.index_num:
            raise IndexFileError(f"indexCount {n} > {self.index_num}")
        if not 0 <= self.hash_slot_count <= min(self.hash_slot_num, n):
            raise IndexFileError(f"hashSlotCount {self.hash_slot_count} out of range")
        if self.begin_phy_offset < 0 or self.end_phy_offset < self.begin_phy_offset:
            raise IndexFileError(f"phy offsets {self.begin_phy_offset}..{self.end_phy_offset}")
        if self.begin_timestamp < 0 or self.end_timestamp < 0:
            raise IndexFileError("negative timestamp")
        if n > 1:
            first = self.entry(1)
            last = self.entry(n - 1)
            if (
                first[1] != self.begin_phy_offset
                or not first[1] <= last[1] <= self.end_phy_offset
                or last == (0, 0, 0, 0)
            ):
                raise IndexFileError(
                    f"entries 1..{n - 1} span phy offsets {first[1]}..{last[1]}, header says "
                    f"{self.begin_phy_offset}..{self.end_phy_offset}"
                )

    # ------------------------------------------------------------------ header

    @property
    def is_write_full(self) -> bool:
        """No free entry left (``isWriteFull``)."""
        return self.index_count >= self.index_num

    @property
    def entry_count(self) -> int:
        """Entries held."""
        return self.index_count - 1

    def save_header(self) -> None:
        """Write the in-memory header fields into the mapping."""
        _HEADER.pack_into(
            self._mm,
            0,
            self.begin_timestamp,
            self.end_timestamp,
            self.begin_phy_offset,
            self.end_phy_offset,
            self.hash_slot_count,
            self.index_count,
        )
        self.dirty = True

    def set_end_phy_offset(self, offset: int) -> None:
        """Record that every message up to ``offset`` (inclusive) has been indexed."""
        if offset > self.end_phy_offset:
            self.end_phy_offset = offset
            if self.index_count <= 1 and self.begin_phy_offset == 0:
                self.begin_phy_offset = offset
            _PHY.pack_into(self._mm, 16, self.begin_phy_offset)
            _PHY.pack_into(self._mm, 24, offset)
            self.dirty = True

    # ------------------------------------------------------------------ write

    def put_many(self, batch: list[KeyEntry], start: int) -> int:
        """Append ``batch[start:]`` until the file is full (``putKey`` for each); return how many.

        Each key's slot is :func:`~rocketpipe.store.index_hash.index_key_hash` modulo the slot
        count. The compiled loop (``_index_put.c``, when built) hashes and writes the entries in
        one pass; the Python code below is the reference.

        Raises:
            OSError: the blocks for the entries or slots cannot be reserved (disk full); nothing
                written.
        """
        pos = first = self.index_count
        n = min(len(batch) - start, self.index_num - pos)
        if n <= 0:
            return 0
        self._reserve(self._entries_at + (pos + n) * INDEX_SIZE)
        begin_ts = batch[start][2] if pos == 1 else self.begin_timestamp
        touched: bytes | dict[int, int]
        if _compiled_put is not None:
            touched, new_slots = self._put_entries_compiled(batch, start, n, begin_ts)
        else:
            touched, new_slots = self._put_entries(batch, start, n, begin_ts)
        if pos == 1:  # the first entry sets the begin fields (IndexFile.putKey)
            self.begin_phy_offset, self.begin_timestamp = batch[start][1], begin_ts
        self.index_count = first + n  # entries first, then the slots, header last; readers follow slots up to here
        if isinstance(touched, bytes):
            assert _compiled_slots is not None
            _compiled_slots(self._mm, touched)
        else:
            for sp, p in touched.items():
                _SLOT.pack_into(self._mm, HEADER_SIZE + sp * HASH_SLOT_SIZE, p)
        _key, phy, ts = batch[start + n - 1]
        self.hash_slot_count += new_slots
        self.end_timestamp = ts
        if phy > self.end_phy_offset:
            self.end_phy_offset = phy
        self.save_header()
        return n

    def _put_entries_compiled(self, batch: list[KeyEntry], start: int, n: int, begin_ts: int) -> tuple[bytes, int]:
        """:meth:`_put_entries` in C: ``(touched slots as (slot, position) pairs, new slots)``.

        Raises:
            OSError: a slot block cannot be reserved; nothing written.
        """
        assert _compiled_put is not None
        while True:
            missing, touched, new_slots = _compiled_put(
                self._mm, batch, start, n, self.index_count, self.hash_slot_num, self._entries_at, begin_ts,
                self._slot_blocks,
            )  # fmt: skip
            if touched is not None:
                return touched, new_slots
            for block in missing:  # reserve, then hash again (only while some blocks are new)
                self._reserve_slot_block(block)

    def _put_entries(self, batch: list[KeyEntry], start: int, n: int, begin_ts: int) -> tuple[dict[int, int], int]:
        """Write the entries of ``batch[start:start + n]`` at ``index_count`` onwards.

        Returns:
            ``{slot: newest position}`` for the slots to point at them (not written yet) and
            how many of those slots were empty.

        Raises:
            OSError: a slot block cannot be reserved; nothing written.
        """
        pos = first = self.index_count
        slots = self.hash_slot_num
        part = batch[start : start + n]
        key_hashes = index_key_hashes([k for k, _p, _t in part])
        slot_of = [h % slots for h in key_hashes]
        for block in {sp >> _SLOTS_PER_BLOCK_SHIFT for sp in slot_of}:
            self._reserve_slot_block(block)
        if begin_ts > 0:
            diffs = [(ts - begin_ts) // 1000 for _k, _p, ts in part]
            if min(diffs) < 0 or max(diffs) > _INT_MAX:
                diffs = [0 if d < 0 else min(d, _INT_MAX) for d in diffs]
        else:
            diffs = [0] * n
        mm = self._mm
        unpack_slot = _SLOT.unpack_from
        prevs: list[int] = []
        touched: dict[int, int] = {}  # slot -> newest position in this batch
        new_slots = 0
        for sp in slot_of:
            prev = touched.get(sp)
            if prev is None:
                prev = unpack_slot(mm, HEADER_SIZE + sp * HASH_SLOT_SIZE)[0]
                if prev <= INVALID_INDEX or prev >= first:
                    prev = INVALID_INDEX
                    new_slots += 1
            prevs.append(prev)
            touched[sp] = pos
            pos += 1
        at = self._entries_at + first * INDEX_SIZE
        mm[at : at + n * INDEX_SIZE] = _pack_entries(key_hashes, [p for _k, p, _t in part], diffs, prevs)
        return touched, new_slots

    def _reserve_slot_block(self, block: int) -> None:
        reserved = self._slot_blocks
        if not reserved[block]:
            at = HEADER_SIZE + block * SLOT_BLOCK
            _allocate(self._fd, at, min(SLOT_BLOCK, self._entries_at - at))
            reserved[block] = 1

    def _reserve(self, upto: int) -> None:
        if upto > self._allocated:
            end = min(self._size, max(upto, self._allocated + ALLOCATE_CHUNK))
            _allocate(self._fd, self._allocated, end - self._allocated)
            self._allocated = end

    # ------------------------------------------------------------------ read

    def entry(self, pos: int) -> tuple[int, int, int, int]:
        """``(keyHash, phyOffset, timeDiff, prevIndex)`` at ``pos``."""
        return _ENTRY.unpack_from(self._mm, self._entries_at + pos * INDEX_SIZE)

    def is_time_matched(self, begin: int, end: int) -> bool:
        """The file's time span overlaps ``[begin, end]`` ms (``isTimeMatched``)."""
        b, e = self.begin_timestamp, self.end_timestamp
        return (begin < b and end > e) or b <= begin <= e or b <= end <= e

    def select_phy_offsets(self, out: list[int], key_hash: int, max_num: int, begin: int, end: int) -> None:
        """Append to ``out`` (newest first) the offsets of entries with ``key_hash`` in ``[begin, end]``.

        Mirrors ``selectPhyOffset``, except that an entry matches when any millisecond of its
        one-second ``timeDiff`` bucket is in the range (the caller checks exact store times),
        and the chain walk only moves to older positions, so a damaged chain cannot loop.
        """
        mm = self._mm
        count = self.index_count
        slot = _SLOT.unpack_from(mm, HEADER_SIZE + (key_hash % self.hash_slot_num) * HASH_SLOT_SIZE)[0]
        if slot <= INVALID_INDEX or slot >= count or count <= 1:
            return
        base = self._entries_at
        begin_ts = self.begin_timestamp
        unpack = _ENTRY.unpack_from
        pos = slot
        while len(out) < max_num:
            h, phy, diff, prev = unpack(mm, base + pos * INDEX_SIZE)
            if diff < 0:
                break
            t = begin_ts + diff * 1000
            if h == key_hash and t <= end and t + 999 >= begin:
                out.append(phy)
            if prev <= INVALID_INDEX or prev >= pos or t + 999 < begin:
                break
            pos = prev

    def contains(self, key_hash: int, phy_offset: int) -> bool:
        """An entry for ``key_hash`` at ``phy_offset`` exists (walks one chain)."""
        mm = self._mm
        count = self.index_count
        pos = _SLOT.unpack_from(mm, HEADER_SIZE + (key_hash % self.hash_slot_num) * HASH_SLOT_SIZE)[0]
        if pos <= INVALID_INDEX or pos >= count:
            return False
        base = self._entries_at
        while True:
            h, phy, _diff, prev = _ENTRY.unpack_from(mm, base + pos * INDEX_SIZE)
            if phy < phy_offset:
                return False
            if h == key_hash and phy == phy_offset:
                return True
            if prev <= INVALID_INDEX or prev >= pos:
                return False
            pos = prev

    # ------------------------------------------------------------------ repair

    def repair_tail(self) -> int:
        """Undo entries written past ``indexCount`` by a batch that never finished; return how many."""
        mm = self._mm
        base = self._entries_at
        pos = self.index_count
        while pos < self.index_num and mm[base + pos * INDEX_SIZE : base + (pos + 1) * INDEX_SIZE] != _ZERO_ENTRY:
            pos += 1
        n = pos - self.index_count
        for p in range(pos - 1, self.index_count - 1, -1):
            self._unlink(p, count_slots=False)
        return n

    def truncate_from_phy_offset(self, end: int) -> int:
        """Drop the entries whose phyOffset is ``>= end``; return how many were dropped.

        Slots are restored newest first, so the remaining chains are exactly as before those
        entries were added. ``end_phy_offset`` is lowered to the last remaining entry (or to
        ``begin_phy_offset`` for a file left empty).
        """
        lo, hi = 1, self.index_count  # entries are in commit-log order: first position >= end
        while lo < hi:
            mid = (lo + hi) // 2
            if self.entry(mid)[1] < end:
                lo = mid + 1
            else:
                hi = mid
        dropped = self.index_count - lo
        for p in range(self.index_count - 1, lo - 1, -1):
            self._unlink(p, count_slots=True)
        self.index_count = lo
        if lo > 1:
            self.end_phy_offset = min(self.end_phy_offset, self.entry(lo - 1)[1])
        elif self.end_phy_offset >= end:
            self.end_phy_offset = self.begin_phy_offset
        if dropped or self.end_phy_offset >= end:
            self.save_header()
        return dropped

    def _unlink(self, pos: int, *, count_slots: bool) -> None:
        h, _phy, _diff, prev = self.entry(pos)
        at = HEADER_SIZE + (h % self.hash_slot_num) * HASH_SLOT_SIZE
        if _SLOT.unpack_from(self._mm, at)[0] == pos:
            if prev <= INVALID_INDEX or prev >= pos:
                prev = INVALID_INDEX
                if count_slots and self.hash_slot_count > 0:
                    self.hash_slot_count -= 1
            _SLOT.pack_into(self._mm, at, prev)
        start = self._entries_at + pos * INDEX_SIZE
        self._mm[start : start + INDEX_SIZE] = _ZERO_ENTRY
        self.dirty = True

    # ------------------------------------------------------------------ lifecycle

    def sync(self) -> None:
        """msync the mapping if anything changed since the last sync.

        Raises:
            OSError: the sync failed.
        """
        if self.dirty:
            self._mm.flush()
            self.dirty = False

    def close(self) -> None:
        """Unmap and close (no sync)."""
        try:
            self._mm.close()
        finally:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    def destroy(self) -> None:
        """Close and delete the file (``destroy``)."""
        self.close()
        self.path.unlink(missing_ok=True)


def _pack_entries(key_hashes: list[int], phys: list[int], diffs: list[int], prevs: list[int]) -> bytearray:
    """Entries in file layout: each field column packed big-endian, then interleaved by byte."""
    out = bytearray(len(phys) * INDEX_SIZE)
    at = 0
    for code, width, column in (("i", 4, key_hashes), ("q", 8, phys), ("i", 4, diffs), ("i", 4, prevs)):
        arr = array(code, column)
        if _SWAP:
            arr.byteswap()
        raw = arr.tobytes()
        for b in range(width):
            out[at + b :: INDEX_SIZE] = raw[b::width]
        at += width
    return out


def _allocate(fd: int, offset: int, length: int) -> None:
    """Reserve disk blocks so that writes through the mapping cannot hit a full disk."""
    if length <= 0:
        return
    try:
        os.posix_fallocate(fd, offset, length)
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
            raise
