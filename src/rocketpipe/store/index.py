"""Message key index: ``topic#key`` / ``topic#UNIQ_KEY`` -> commit-log offsets (L2, stdlib only).

Plays the role of Java's ``IndexService``/``IndexFile`` (reference §2.4) with a simpler layout:

* In memory: ``topic -> key -> offset`` (an ``int``, or a ``list[int]`` in commit-log order once a
  key has several messages; at most :data:`MAX_OFFSETS_PER_KEY` newest offsets are kept per key).
  Store timestamps are not held in memory; a query reads them from the commit-log records.
* On disk: one append-only file ``<root>/keyindex/keys.idx`` of records, written and fsynced only
  by :meth:`KeyIndex.write` (the store's flush), never on the put path::

      payload_len u32 | crc32 u32 | commit-log offset i64 | store timestamp i64 | payload

  ``payload`` is ``topic \\x01 key \\x01 key ...`` (UTF-8; ``\\x01`` cannot occur in a topic or a
  property value). A record with an empty payload is a *watermark*: every message below its
  offset is in the file. ``crc32`` covers the offset, the timestamp and the payload.
* Recovery (:meth:`KeyIndex.load`): records are read up to the first torn/corrupt one or the first
  one at or past the recovered commit-log end; the file is cut there. Then the commit log is
  scanned from the last watermark to its end and the missing messages are indexed (and written by
  the next flush). So the index survives clean stops, crashes and a deleted ``keyindex`` directory
  (a full rebuild), and never points past the commit log.

Differences from Java: exact keys instead of 4-byte hash slots (no collisions, so no client-side
filtering is needed, though queries still verify each record); millisecond rather than second
time resolution; no ``maxHashSlotNum``/``maxIndexNum`` files of fixed size, and the ``checkpoint``
field ``indexMsgTimestamp`` stays 0 (the watermark records play its role). Like Java, rollback
records are not indexed; prepared (half) and commit records are.

Threads: :meth:`add` and :meth:`take_pending` run under the store's put lock; :meth:`write` runs
in the (single) flushing thread; lookups run without a lock.
"""

from __future__ import annotations

import logging
import mmap
import os
import struct
import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Final

from ..errors import ProtocolError
from ..protocol import sysflag as sf
from ..protocol.message import decode_record
from .commit_log import CommitLog

log = logging.getLogger(__name__)

#: Newest offsets kept in memory per key (older ones stay on disk only until the next rebuild).
MAX_OFFSETS_PER_KEY: Final = 2048
#: Write a watermark even without keyed messages once the commit log has moved this far past the
#: last one (bounds the scan after a crash when no message carries keys).
WATERMARK_EVERY: Final = 4 * 1024 * 1024
FILE_NAME: Final = "keys.idx"

_HEAD: Final = struct.Struct(">IIqq")
_BODY: Final = struct.Struct(">qq")
_I32X2: Final = struct.Struct(">ii")
_SEP: Final = "\x01"
_KEYS: Final = "KEYS"
_UNIQ: Final = "UNIQ_KEY"
_UNIQ_NEEDLE: Final = "UNIQ_KEY\x01"  # 9 characters
_KEYS_NEEDLE: Final = "KEYS\x01"  # 5 characters
_ROLLBACK: Final = sf.TRANSACTION_ROLLBACK_TYPE
_TXN_MASK: Final = sf.TRANSACTION_TYPE_MASK

#: ``(topic, properties, commit-log offset, size, sys_flag, store timestamp)`` of a record.
ScannedRecord = tuple[str, "dict[str, str] | str", int, int, int, int]


def index_names(props: dict[str, str] | str) -> list[str]:
    """Keys a message is indexed under: its ``UNIQ_KEY`` then each space-separated ``KEYS`` word."""
    if isinstance(props, str):
        uniq = _property(props, _UNIQ)
        keys = _property(props, _KEYS)
    else:
        uniq = props.get(_UNIQ)
        keys = props.get(_KEYS)
    if not keys:
        return [uniq] if uniq else []
    return _names(uniq, keys)


def _names(uniq: str | None, keys: str) -> list[str]:
    names = [uniq] if uniq else []
    for k in keys.split(" "):
        if k and k not in names:
            names.append(k)
    return names


class KeyIndex:
    """The key index of one store (``IndexService``).

    Args:
        directory: ``<root>/keyindex``.
        max_per_key: newest offsets kept in memory per key.

    Attributes:
        last_offset: commit-log offset of the last indexed message (``indexLastUpdatePhyoffset``), 0 if none.
        last_timestamp: its store time, ms (``indexLastUpdateTimestamp``), 0 if none.
        loaded_records: keyed records read from the file by the last :meth:`load`.
        rebuilt_records: keyed messages re-indexed from the commit log by the last :meth:`load`.
    """

    def __init__(self, directory: Path, max_per_key: int = MAX_OFFSETS_PER_KEY) -> None:
        self.directory = directory
        self.path = directory / FILE_NAME
        self.max_per_key = max(1, max_per_key)
        self._topics: dict[str, dict[str, int | list[int]]] = {}
        self._pending: list[tuple[int, int, str, Sequence[str]]] = []
        self._unwritten: list[tuple[int, int, str, Sequence[str]]] = []  # a batch whose write failed
        self._fd = -1
        self._file_size = 0
        self._covered = 0  # the last watermark on disk
        self.last_offset = 0
        self.last_timestamp = 0
        self.loaded_records = 0
        self.rebuilt_records = 0

    # ------------------------------------------------------------------ put path

    def add(self, topic: str, props: dict[str, str] | str, offset: int, sys_flag: int, store_ts: int) -> None:
        """Index one stored message (a few dict operations; no I/O). Call in commit-log order."""
        if sys_flag & _TXN_MASK == _ROLLBACK:
            return
        if type(props) is str:  # wire string: _property() inlined for both keys (hot path)
            uniq = keys = None
            i = props.rfind(_UNIQ_NEEDLE)
            while i > 0 and props[i - 1] != "\x02":
                i = props.rfind(_UNIQ_NEEDLE, 0, i)
            if i >= 0:
                j = props.find("\x02", i)
                uniq = props[i + 9 : j] if j >= 0 else props[i + 9 :]
            i = props.rfind(_KEYS_NEEDLE)
            while i > 0 and props[i - 1] != "\x02":
                i = props.rfind(_KEYS_NEEDLE, 0, i)
            if i >= 0:
                j = props.find("\x02", i)
                keys = props[i + 5 : j] if j >= 0 else props[i + 5 :]
        else:
            uniq = props.get(_UNIQ)  # type: ignore[union-attr]
            keys = props.get(_KEYS)  # type: ignore[union-attr]
        names: tuple[str, ...] | list[str]
        if keys:
            if " " in keys:
                names = _names(uniq, keys)
            elif uniq and uniq != keys:
                names = (uniq, keys)
            else:
                names = (keys,)
        elif uniq:
            names = (uniq,)
        else:
            return
        tkeys = self._topics.get(topic)
        if tkeys is None:
            tkeys = self._topics[topic] = {}
        for name in names:
            cur = tkeys.setdefault(name, offset)
            if cur is not offset:
                self._append(tkeys, name, cur, offset)
        self._pending.append((offset, store_ts, topic, names))
        self.last_offset = offset
        self.last_timestamp = store_ts

    def _remember(self, topic: str, names: list[str], offset: int) -> None:
        tkeys = self._topics.get(topic)
        if tkeys is None:
            tkeys = self._topics[topic] = {}
        for name in names:
            cur = tkeys.setdefault(name, offset)
            if cur is not offset:
                self._append(tkeys, name, cur, offset)

    def _append(self, tkeys: dict[str, int | list[int]], name: str, cur: int | list[int], offset: int) -> None:
        if type(cur) is int:
            if cur < offset:
                tkeys[name] = [cur, offset]
        elif cur[-1] < offset:  # type: ignore[index]
            cur.append(offset)  # type: ignore[union-attr]
            if len(cur) > self.max_per_key:  # type: ignore[arg-type]
                del cur[: len(cur) - self.max_per_key]  # type: ignore[arg-type,index]

    # ------------------------------------------------------------------ lookup

    def lookup(self, topic: str, key: str) -> list[int]:
        """Commit-log offsets indexed under ``topic#key``, oldest first (a copy)."""
        keys = self._topics.get(topic)
        cur = keys.get(key) if keys is not None else None
        if cur is None:
            return []
        if type(cur) is int:
            return [cur]
        return list(cur)

    def key_count(self) -> int:
        """Distinct ``topic#key`` entries in memory."""
        return sum(len(k) for k in self._topics.values())

    # ------------------------------------------------------------------ flush

    def take_pending(self, commit_log_end: int) -> tuple[list[tuple[int, int, str, Sequence[str]]], int]:
        """Detach the entries added since the last call (call under the store's put lock).

        Returns:
            The entries and ``commit_log_end``: every message below it has been added.
        """
        batch, self._pending = self._pending, []
        return batch, commit_log_end

    def write(self, batch: list[tuple[int, int, str, Sequence[str]]], covered: int, *, force: bool = False) -> None:
        """Append ``batch`` and a watermark at ``covered``, then fdatasync (the flushing thread).

        The watermark is written when there are entries, when ``force``, or when the commit log has
        moved :data:`WATERMARK_EVERY` bytes past the last one.

        Raises:
            OSError: the write or sync failed; the entries are kept and retried by the next call.
        """
        if self._unwritten:
            batch = self._unwritten + batch
            self._unwritten = []
        if not batch and covered <= self._covered:
            return
        if not batch and not force and covered - self._covered < WATERMARK_EVERY:
            return
        parts = [_encode(off, ts, _SEP.join([topic, *names]).encode()) for off, ts, topic, names in batch]
        parts.append(_encode(covered, batch[-1][1] if batch else 0, b""))
        data = b"".join(parts)
        try:
            fd = self._open()
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fdatasync(fd)
        except OSError:
            self._unwritten = batch
            if self._fd >= 0:
                try:
                    os.ftruncate(self._fd, self._file_size)
                except OSError:
                    pass
            raise
        self._file_size += len(data)
        self._covered = max(self._covered, covered)

    def _open(self) -> int:
        if self._fd < 0:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        return self._fd

    def close(self) -> None:
        """Close the file (write pending entries first with :meth:`write`)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    # ------------------------------------------------------------------ recovery

    def load(self, commit_log_end: int, scan: Callable[[int], Iterator[ScannedRecord]]) -> None:
        """Read the file, cut it at the first bad or stale record, re-index what it misses.

        Args:
            commit_log_end: the recovered commit-log write offset.
            scan: ``scan(offset)`` yields the commit-log records from ``offset`` (a record
                boundary, or below the first segment) to the end.

        Raises:
            OSError: the file cannot be read or cut.
        """
        self._topics.clear()
        self._pending = []
        self.loaded_records = self.rebuilt_records = 0
        self.last_offset = self.last_timestamp = 0
        good, covered = self._read_file(commit_log_end)
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            size = 0
        if size > good:
            log.warning("keyindex %s: dropping %d bytes after offset %d (torn or beyond the commit log)", self.path, size - good, good)
            os.truncate(self.path, good)
        self._file_size = good
        self._covered = covered
        if covered < commit_log_end:
            last = self.last_offset if self.loaded_records else -1
            for topic, props, offset, _size, sys_flag, ts in scan(covered):
                if offset <= last:
                    continue
                before = len(self._pending)
                self.add(topic, props, offset, sys_flag, ts)
                self.rebuilt_records += len(self._pending) - before
            if self.rebuilt_records or commit_log_end - covered > WATERMARK_EVERY:
                log.info("keyindex %s: re-indexed %d messages from commitlog offset %d to %d",
                         self.path, self.rebuilt_records, covered, commit_log_end)

    def _read_file(self, end: int) -> tuple[int, int]:
        """Load the records below ``end``; return (bytes to keep, last watermark kept)."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return 0, 0
        try:
            size = os.fstat(fd).st_size
            if size == 0:
                return 0, 0
            mm = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
        finally:
            os.close(fd)
        pos = covered = 0
        head = _HEAD.size
        try:
            mv = memoryview(mm)
            try:
                while pos + head <= size:
                    plen, crc, offset, ts = _HEAD.unpack_from(mv, pos)
                    nxt = pos + head + plen
                    if nxt > size or zlib.crc32(mv[pos + 8 : nxt]) != crc:
                        break
                    if plen == 0:
                        if offset > end:
                            break
                        covered = max(covered, offset)
                    else:
                        if offset >= end:
                            break
                        try:
                            topic, *names = str(mv[pos + head : nxt], "utf-8").split(_SEP)
                        except UnicodeDecodeError:
                            break
                        if not names:
                            break
                        self._remember(topic, names, offset)
                        self.last_offset = offset
                        self.last_timestamp = ts
                        self.loaded_records += 1
                    pos = nxt
            finally:
                mv.release()
        finally:
            mm.close()
        return pos, covered


def scan_commit_log(commit_log: CommitLog, start: int) -> Iterator[ScannedRecord]:
    """Yield the records of ``commit_log`` from ``start`` (a record boundary) to its write offset.

    Starts at the first segment when ``start`` is below it; BLANK fillers move to the next
    segment; an undecodable record ends the scan (recovery has already cut torn tails).
    """
    files = commit_log.files
    end = commit_log.write_offset
    pos = max(start, files.min_offset)
    while pos < end:
        seg = files.find(pos)
        if seg is None:
            return
        rel = pos - seg.start
        if rel + 8 > seg.size:
            pos = seg.end
            continue
        total, magic = _I32X2.unpack_from(seg.view, rel)
        if magic == sf.BLANK_MAGIC:
            pos = seg.end
            continue
        if total <= 0 or rel + total > seg.size:
            log.warning("keyindex scan: bad record size %d at commitlog offset %d; stopping", total, pos)
            return
        try:
            msg, _ = decode_record(seg.view[rel : rel + total], 0, read_body=False, decompress_body=False)
        except ProtocolError as exc:
            log.warning("keyindex scan: undecodable record at commitlog offset %d (%s); stopping", pos, exc)
            return
        yield msg.topic, msg.properties, pos, total, msg.sys_flag, msg.store_timestamp
        pos += total


def _encode(offset: int, ts: int, payload: bytes) -> bytes:
    body = _BODY.pack(offset, ts)
    return _HEAD.pack(len(payload), zlib.crc32(payload, zlib.crc32(body)), offset, ts) + payload


def _property(props: str, key: str) -> str | None:
    """One property of a wire properties string (last duplicate wins, as in Java)."""
    needle = key + "\x01"
    i = props.rfind(needle)
    while i > 0 and props[i - 1] != "\x02":
        i = props.rfind(needle, 0, i)
    if i < 0:
        return None
    start = i + len(needle)
    j = props.find("\x02", start)
    return props[start : j if j >= 0 else len(props)] or None
