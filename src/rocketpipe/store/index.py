"""Message key index: ``topic#key`` / ``topic#UNIQ_KEY`` -> commit-log offsets (L2, stdlib only).

Mirrors ``IndexService``: fixed-size memory-mapped files under ``<root>/index/``, named by their
creation time (``yyyyMMddHHmmssSSS``, local time), each one :class:`~.index_file.IndexFile`
(40-byte header, ``max_hash_slot_num`` hash slots, ``max_index_num`` 20-byte entries). Keys are
``abs(String.hashCode("topic#key"))`` (:mod:`.index_hash`), so different keys can share a hash:
:meth:`MessageStore.query_message` checks every record against the key.

Start-up reads nothing but headers: the files are mapped, and the last file's ``endPhyOffset``
says where indexing stopped, so :meth:`KeyIndex.load` re-indexes only the commit log past it
(the messages of the last flush interval after a crash; nothing after a clean stop).

Write path (same contract as before): :meth:`KeyIndex.add` runs under the store's put lock and
only appends ``(topic#key, offset, store time)`` to a pending list; :meth:`KeyIndex.take_pending`
detaches that list (under the lock) and :meth:`KeyIndex.write` hashes it and writes it into the
mapped files (the flush thread). Lookups see pending and in-flight keys too. Files are synced
(msync) when one becomes full and on ``write(..., force=True)`` (the store's close), as Java
does; a killed process loses nothing the kernel already has, and entries of an unfinished batch
are undone at load.

Recovery (:meth:`KeyIndex.load`): a file whose size or header is impossible is deleted with the
files after it and that part is re-indexed from the commit log (one WARNING line); entries at or
past the recovered commit-log end are dropped (one WARNING line); a ``keyindex/`` directory of
the older single-file format is replaced by a rebuild (one line). Like Java, rollback records are
not indexed; prepared (half) and commit records are.

Threads: :meth:`add` and :meth:`take_pending` under the store's put lock; :meth:`write` in the
single flushing thread; :meth:`lookup` in any thread; :meth:`delete_expired` in the clean
service thread; :meth:`load` and :meth:`close` alone.
"""

from __future__ import annotations

import logging
import re
import shutil
import struct
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Final

from ..errors import InvalidArgumentError, ProtocolError
from ..protocol import sysflag as sf
from ..protocol.message import decode_record
from .api import property_value as _property
from .commit_log import CommitLog
from .index_file import IndexFile, IndexFileError, KeyEntry
from .index_hash import index_key_hash

log = logging.getLogger(__name__)

#: Java ``MessageStoreConfig.maxHashSlotNum`` default.
MAX_HASH_SLOT_NUM: Final = 5_000_000
#: Java ``MessageStoreConfig.maxIndexNum`` default.
MAX_INDEX_NUM: Final = 5_000_000 * 4
#: Most offsets one :meth:`KeyIndex.lookup` returns by default.
MAX_OFFSETS_PER_KEY: Final = 2048
#: Directory of the index files under the store root (``StorePathConfigHelper.getStorePathIndex``).
INDEX_DIR: Final = "index"
#: Directory of the older single-file key index, replaced at first start.
LEGACY_DIR: Final = "keyindex"
#: While re-indexing at load, write every this many keys.
REBUILD_BATCH: Final = 50_000
_NAME: Final = re.compile(r"\d{17}")
_FOREVER: Final = (1 << 63) - 1

_I32X2: Final = struct.Struct(">ii")
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


def file_name(now_ms: int) -> str:
    """``UtilAll.timeMillisToHumanString``: ``yyyyMMddHHmmssSSS`` in local time."""
    return time.strftime("%Y%m%d%H%M%S", time.localtime(now_ms // 1000)) + f"{now_ms % 1000:03d}"


class KeyIndex:
    """The key index of one store (``IndexService``).

    Args:
        directory: ``<root>/index``. ``<root>/keyindex`` (the older layout's name, as the store
            used to pass) is taken to mean ``<root>/index``.
        max_hash_slot_num: hash slots per file (``maxHashSlotNum``, 5 000 000).
        max_index_num: entries per file, position 0 unused (``maxIndexNum``, 20 000 000).

    Raises:
        InvalidArgumentError: a count is out of range.

    Attributes:
        last_offset: commit-log offset of the last indexed message (``indexLastUpdatePhyoffset``), 0 if none.
        last_timestamp: its store time, ms (``indexLastUpdateTimestamp``), 0 if none.
        loaded_records: entries found in the mapped files by the last :meth:`load`.
        rebuilt_records: keyed messages re-indexed from the commit log by the last :meth:`load`.
    """

    def __init__(
        self, directory: Path, max_hash_slot_num: int = MAX_HASH_SLOT_NUM, max_index_num: int = MAX_INDEX_NUM
    ) -> None:
        if directory.name == LEGACY_DIR:
            directory = directory.parent / INDEX_DIR
        if max_hash_slot_num <= 0 or max_index_num <= 1:
            raise InvalidArgumentError(
                f"max_hash_slot_num must be > 0 and max_index_num > 1, not {max_hash_slot_num}/{max_index_num}"
            )
        self.directory = directory
        self.legacy_directory = directory.parent / LEGACY_DIR
        self.max_hash_slot_num = max_hash_slot_num
        self.max_index_num = max_index_num
        self._files: list[IndexFile] = []
        self._files_lock = threading.Lock()  # the file list vs lookups and deletions
        self._pending: list[KeyEntry] = []
        self._writing: list[KeyEntry] = []  # detached by take_pending, being written
        self._retry: list[KeyEntry] = []  # the part of a batch whose write failed
        self._seen = -1  # commit-log offset of the last message given to add()
        self.last_offset = 0
        self.last_timestamp = 0
        self.loaded_records = 0
        self.rebuilt_records = 0

    @property
    def files(self) -> list[IndexFile]:
        """The mapped files, oldest first (a copy)."""
        return list(self._files)

    # ------------------------------------------------------------------ put path

    def add(self, topic: str, props: dict[str, str] | str, offset: int, sys_flag: int, store_ts: int) -> None:
        """Queue the keys of one stored message (list appends only; no I/O). Call in commit-log order."""
        self._seen = offset
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
        if uniq and not keys:  # most messages: their UNIQ_KEY alone, as add_batch queues it
            self._pending.append((f"{topic}#{uniq}", offset, store_ts))
            self.last_offset = offset
            self.last_timestamp = store_ts
            return
        self.add_batch(topic, ((uniq, keys),), (offset,), store_ts)

    def add_batch(
        self,
        topic: str,
        keys: Iterable[tuple[str | None, str | None]],
        offsets: Iterable[int],
        store_ts: int,
    ) -> None:
        """Queue the keys of stored messages of one topic, as :meth:`add` does, the properties
        already read (a batch put reads them while encoding). Call in commit-log order.

        Args:
            topic: their topic.
            keys: per message ``(UNIQ_KEY, KEYS)``, KEYS space-separated; None when absent.
            offsets: per message its commit-log offset, bytes.
            store_ts: their store time, ms.
        """
        pending = self._pending
        add = pending.append
        prefix = topic + "#"
        last = seen = -1
        for (uniq, names), offset in zip(keys, offsets, strict=True):
            seen = offset
            if names:
                if " " in names:
                    for name in _names(uniq, names):
                        add((prefix + name, offset, store_ts))
                else:
                    if uniq and uniq != names:
                        add((prefix + uniq, offset, store_ts))
                    add((prefix + names, offset, store_ts))
            elif uniq:
                add((prefix + uniq, offset, store_ts))
            else:
                continue
            last = offset
        if seen >= 0:
            self._seen = seen
        if last >= 0:
            self.last_offset = last
            self.last_timestamp = store_ts

    # ------------------------------------------------------------------ flush

    def take_pending(self, commit_log_end: int) -> tuple[list[KeyEntry], int]:
        """Detach the keys queued since the last call (call under the store's put lock).

        Args:
            commit_log_end: the commit-log write offset (kept for the call's shape; unused).

        Returns:
            The keys and the offset of the last message given to :meth:`add` (-1 if none):
            pass both to :meth:`write`.
        """
        batch = self._pending
        self._writing = batch  # visible to lookups until written
        self._pending = []
        return batch, self._seen

    def write(self, batch: list[KeyEntry], covered: int, *, force: bool = False) -> None:
        """Write ``batch`` into the mapped files and mark messages up to ``covered`` as indexed.

        Runs in the flushing thread. A file that becomes full is synced and the next one created
        (``getAndCreateLastIndexFile``); ``force`` also syncs the current file.

        Raises:
            OSError: a file cannot be created or its blocks reserved (disk full), or a sync failed;
                the keys not written are kept and retried by the next call.
        """
        if self._retry:
            batch = self._retry + batch
        done = 0
        try:
            if batch or covered >= 0:
                f = self._writable_file()
                while done < len(batch):
                    if f.is_write_full:
                        f.sync()
                        f = self._writable_file()
                    done += f.put_many(batch, done)
                if covered >= 0:
                    f.set_end_phy_offset(covered)
                if force:
                    f.sync()
        except OSError:
            self._retry = batch[done:]
            raise
        self._retry = []
        self._writing = []

    def _writable_file(self) -> IndexFile:
        """The last file, or a new one when there is none or it is full."""
        files = self._files
        last = files[-1] if files else None
        if last is not None and not last.is_write_full:
            return last
        self.directory.mkdir(parents=True, exist_ok=True)
        now = int(time.time() * 1000)
        name = file_name(now)
        if last is not None and name <= last.name:  # same millisecond, or the clock went back
            name = f"{int(last.name) + 1:017d}"
        f = IndexFile.create(
            self.directory / name,
            self.max_hash_slot_num,
            self.max_index_num,
            last.end_phy_offset if last is not None else 0,
            last.end_timestamp if last is not None else 0,
        )
        with self._files_lock:
            files.append(f)
        return f

    def sync(self) -> None:
        """msync every file changed since its last sync.

        Raises:
            OSError: a sync failed.
        """
        for f in list(self._files):
            f.sync()

    def close(self) -> None:
        """Sync and unmap every file (write pending keys first with :meth:`write`)."""
        with self._files_lock:
            files, self._files = self._files, []
        error: OSError | None = None
        for f in files:
            try:
                f.sync()
            except OSError as exc:
                error = error or exc
            f.close()
        if error is not None:
            log.error("index %s: sync at close failed: %s", self.directory, error)

    # ------------------------------------------------------------------ lookup

    def lookup(
        self, topic: str, key: str, max_num: int = MAX_OFFSETS_PER_KEY, begin_ts: int = 0, end_ts: int = _FOREVER
    ) -> list[int]:
        """Commit-log offsets indexed under ``topic#key``, oldest first (``queryOffset``).

        The newest ``max_num`` candidates are kept. Entries in the files are matched by hash and
        by one-second time buckets, so the caller must check each record's keys and exact store
        time; keys not yet written are matched exactly.

        Args:
            topic: topic.
            key: a KEYS word or a UNIQ_KEY.
            max_num: most offsets returned.
            begin_ts: earliest store time, ms.
            end_ts: latest store time, ms.
        """
        full = f"{topic}#{key}"
        found: list[int] = []
        seen: set[int] = set()
        for queued in (self._pending, self._writing, self._retry):  # newest keys first
            for k, phy, ts in reversed(queued):
                if k == full and begin_ts <= ts <= end_ts and phy not in seen:
                    seen.add(phy)
                    found.append(phy)
        if len(found) < max_num:
            key_hash = index_key_hash(full)
            with self._files_lock:
                files = self._files
                for i in range(len(files) - 1, -1, -1):  # newest file first
                    f = files[i]
                    if f.is_time_matched(begin_ts, end_ts):
                        got: list[int] = []
                        f.select_phy_offsets(got, key_hash, max_num + len(seen), begin_ts, end_ts)
                        for phy in got:
                            if phy not in seen:
                                seen.add(phy)
                                found.append(phy)
                    if f.begin_timestamp < begin_ts or len(found) >= max_num:
                        break
        found = found[:max_num]
        found.sort()
        return found

    # ------------------------------------------------------------------ retention

    def delete_expired(self, min_phy_offset: int) -> int:
        """Delete the files whose ``endPhyOffset`` is below ``min_phy_offset`` (``deleteExpiredFile``).

        Files go oldest first and stop at the first one still needed; the file being written is
        never deleted.

        Returns:
            The number of files deleted.
        """
        with self._files_lock:
            victims = []
            for f in self._files[:-1]:
                if f.end_phy_offset >= min_phy_offset:
                    break
                victims.append(f)
            del self._files[: len(victims)]
            for f in victims:
                f.destroy()
        if victims:
            log.info(
                "index %s: deleted %d files below commitlog offset %d (%s .. %s)",
                self.directory,
                len(victims),
                min_phy_offset,
                victims[0].name,
                victims[-1].name,
            )
        return len(victims)

    # ------------------------------------------------------------------ recovery

    def load(self, commit_log_end: int, scan: Callable[[int], Iterator[ScannedRecord]]) -> None:
        """Map the files, drop what the commit log no longer has, re-index the tail past them.

        Args:
            commit_log_end: the recovered commit-log write offset.
            scan: ``scan(offset)`` yields the commit-log records from ``offset`` (a record
                boundary, or below the first segment) to the end.

        Raises:
            OSError: the files cannot be listed, mapped, created or deleted.
        """
        self.close()
        self._pending, self._writing, self._retry = [], [], []
        self._seen = -1
        self.loaded_records = self.rebuilt_records = 0
        self.last_offset = self.last_timestamp = 0
        legacy = self.legacy_directory.is_dir()
        self._open_files()
        self._drop_beyond(commit_log_end)
        files = self._files
        self.loaded_records = sum(f.entry_count for f in files)
        if files:
            last = files[-1]
            self.last_timestamp = last.end_timestamp
            self.last_offset = last.entry(last.index_count - 1)[1] if last.entry_count else last.end_phy_offset
        self._reindex(commit_log_end, scan, f"replacing {self.legacy_directory} of an older version" if legacy else "")
        if legacy:
            shutil.rmtree(self.legacy_directory)

    def _open_files(self) -> None:
        if not self.directory.is_dir():
            return
        names = sorted(p.name for p in self.directory.iterdir() if _NAME.fullmatch(p.name) and p.is_file())
        files: list[IndexFile] = []
        for i, name in enumerate(names):
            try:
                f = IndexFile.open(self.directory / name, self.max_hash_slot_num, self.max_index_num)
                if files and f.begin_phy_offset < files[-1].end_phy_offset:
                    f.close()
                    raise IndexFileError(
                        f"begins at phy offset {f.begin_phy_offset}, before the end "
                        f"{files[-1].end_phy_offset} of {files[-1].name}"
                    )
            except IndexFileError as exc:
                for later in names[i:]:
                    (self.directory / later).unlink(missing_ok=True)
                log.warning(
                    "index file %s is damaged (%s): deleted it and %d later files; re-indexing the commit "
                    "log from offset %d",
                    self.directory / name,
                    exc,
                    len(names) - i - 1,
                    files[-1].end_phy_offset if files else 0,
                )
                break
            files.append(f)
        if files:
            files[-1].repair_tail()
        self._files = files

    def _drop_beyond(self, end: int) -> None:
        """Drop entries at or past the commit-log end ``end`` (the log lost its tail)."""
        files = self._files
        dropped = deleted = 0
        while files and files[-1].end_phy_offset >= end:
            f = files[-1]
            dropped += f.truncate_from_phy_offset(end)
            if f.entry_count == 0 and f.begin_phy_offset >= end:
                files.pop()
                f.destroy()
                deleted += 1
            else:
                break
        if dropped or deleted:
            log.warning(
                "index %s: dropped %d entries at or past the commitlog end %d (%d files deleted)",
                self.directory,
                dropped,
                end,
                deleted,
            )

    def _processed_through(self) -> int:
        """Commit-log offset of the last message the files account for; -1 for none."""
        files = self._files
        if not files:
            return -1
        last = files[-1]
        if len(files) == 1 and last.entry_count == 0 and last.end_phy_offset == 0:
            return -1
        return last.end_phy_offset

    def _reindex(self, commit_log_end: int, scan: Callable[[int], Iterator[ScannedRecord]], why: str) -> None:
        start = self._processed_through()
        if start >= commit_log_end:
            if why:
                log.warning("index %s: %s; nothing to re-index", self.directory, why)
            return
        t0 = time.monotonic()
        pending = self._pending
        for topic, props, offset, _size, sys_flag, ts in scan(max(start, 0)):
            if offset < start:
                continue
            before = len(pending)
            if offset == start:  # already indexed, unless killed half-way through its keys
                self._add_missing(topic, props, offset, sys_flag, ts)
            else:
                self.add(topic, props, offset, sys_flag, ts)
            if len(pending) > before:
                self.rebuilt_records += 1
            if len(pending) >= REBUILD_BATCH:
                self._write_rebuilt()
                pending = self._pending
        self._write_rebuilt()
        if why or self.rebuilt_records or commit_log_end - max(start, 0) > 4 * 1024 * 1024:
            log.log(
                logging.WARNING if why else logging.INFO,
                "index %s: re-indexed %d messages from commitlog offset %d to %d in %.1f s%s",
                self.directory,
                self.rebuilt_records,
                max(start, 0),
                commit_log_end,
                time.monotonic() - t0,
                f" ({why})" if why else "",
            )

    def _add_missing(self, topic: str, props: dict[str, str] | str, offset: int, sys_flag: int, ts: int) -> None:
        self._seen = offset
        if sys_flag & _TXN_MASK == _ROLLBACK:
            return
        for name in index_names(props):
            key = f"{topic}#{name}"
            h = index_key_hash(key)
            if not any(f.contains(h, offset) for f in self._files[-2:]):
                self._pending.append((key, offset, ts))
                self.last_offset = offset
                self.last_timestamp = ts

    def _write_rebuilt(self) -> None:
        batch, covered = self.take_pending(0)
        self.write(batch, covered)


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
            log.warning("index scan: bad record size %d at commitlog offset %d; stopping", total, pos)
            return
        try:
            msg, _ = decode_record(seg.view[rel : rel + total], 0, read_body=False, decompress_body=False)
        except ProtocolError as exc:
            log.warning("index scan: undecodable record at commitlog offset %d (%s); stopping", pos, exc)
            return
        yield msg.topic, msg.properties, pos, total, msg.sys_flag, msg.store_timestamp
        pos += total
