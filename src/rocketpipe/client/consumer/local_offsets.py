"""Consume offsets of a BROADCASTING consumer, kept in a local JSON file (L3).

Mirrors ``LocalFileOffsetStore``: one file per client id and group,
``<dir>/<client_id>/<group>/offsets.json`` with ``dir`` defaulting to
``~/.rocketmq_offsets`` (Java: system property ``rocketmq.client.localOffsetStoreDir``, default
``${user.home}/.rocketmq_offsets``). The content is Java's ``OffsetSerializeWrapper`` in
fastjson form — ``{"offsetTable":{{"brokerName":..,"queueId":..,"topic":..}:offset}}`` — so a
Java client and this one can read each other's files.

Files are written and read with the policy of the broker's metadata files
(:mod:`rocketpipe.backup_file`, Java's ``MixAll.string2File``): a temporary
file is written and fsynced, the previous file is kept as ``offsets.json.bak``, the temporary
file replaces ``offsets.json``, the directory is fsynced — a valid ``.bak`` exists after every
write (the first one writes both). Reading uses the ``.bak`` when the main file is missing,
empty or not an ``OffsetSerializeWrapper`` (one WARNING line; a bad main file is kept as
``offsets.json.corrupt-<ms>``). When no copy is usable, :meth:`~LocalOffsetStore.load` raises
:class:`OffsetFileError` (Java's ``readLocalOffsetBak`` throws ``MQClientException``: the
consumer does not start) and writes are skipped, so the bad files are never overwritten
(``persist``/``persistAll`` log and return, as Java); ``read_offset`` answers −1. Java returns an
empty table when the main file is bad and there is no ``.bak``; here that is an error too. Write
failures are logged, never raised (a broadcasting consumer keeps consuming).

Same interface as :class:`~rocketpipe.client.consumer.offsets.RemoteOffsetStore`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from ...backup_file import MetadataError, read_with_backup, write_atomic
from ...errors import ProtocolError
from ...protocol.bodies import javajson as jj
from ...protocol.message import MessageQueue
from .offsets import ReadOffsetType

log = logging.getLogger(__name__)

#: Default of ``rocketmq.client.localOffsetStoreDir``: ``~/.rocketmq_offsets``.
DEFAULT_LOCAL_OFFSET_STORE_DIR: Final = os.path.join(os.path.expanduser("~"), ".rocketmq_offsets")
OFFSETS_FILE_NAME: Final = "offsets.json"


class OffsetFileError(MetadataError):
    """``offsets.json`` and its ``.bak`` are both unusable (Java: ``MQClientException`` from
    ``readLocalOffsetBak``); nothing was loaded and nothing will be written over them.

    Attributes:
        paths: the files present and unusable.
    """


def local_offsets_path(client_id: str, group: str, base_dir: str | os.PathLike[str] | None = None) -> Path:
    """Return ``<base_dir>/<client_id>/<group>/offsets.json``.

    >>> str(local_offsets_path("1.2.3.4@1", "g", "/tmp/o"))
    '/tmp/o/1.2.3.4@1/g/offsets.json'
    """
    return (
        Path(base_dir if base_dir is not None else DEFAULT_LOCAL_OFFSET_STORE_DIR)
        / client_id
        / group
        / OFFSETS_FILE_NAME
    )


def encode_offsets(table: dict[MessageQueue, int]) -> bytes:
    """Encode an offset table as ``OffsetSerializeWrapper`` (fastjson object-literal keys)."""
    return jj.dumps({"offsetTable": dict(sorted(table.items()))})


def decode_offsets(data: bytes | str) -> dict[MessageQueue, int]:
    """Decode an ``OffsetSerializeWrapper`` (any MessageQueue key shape).

    Raises:
        ProtocolError: not JSON, or not an object with an ``offsetTable`` map.
    """
    d = jj.loads(data)
    if not isinstance(d, dict) or not isinstance(d.get("offsetTable"), (dict, list)):
        raise ProtocolError("not an OffsetSerializeWrapper (no offsetTable map)")
    return jj.message_queue_map(d["offsetTable"], jj.as_int)


class LocalOffsetStore:
    """Broadcast consume offsets in memory, persisted to a local file.

    Args:
        client_id: this client's id (a path component).
        group: consumer group (a path component).
        base_dir: root directory (default ``~/.rocketmq_offsets``).
    """

    def __init__(self, client_id: str, group: str, base_dir: str | os.PathLike[str] | None = None) -> None:
        self.path = local_offsets_path(client_id, group, base_dir)
        self._table: dict[MessageQueue, int] = {}
        self._file_lock = threading.Lock()

    # -------------------------------------------------------------- file I/O

    def read_file(self) -> dict[MessageQueue, int]:
        """Return the offsets of the file, or of its ``.bak`` (``readLocalOffset``); empty when neither exists.

        Raises:
            OffsetFileError: a file exists but no copy is usable (nothing renamed).
            OSError: a file cannot be read, or a bad main file cannot be set aside.
        """
        with self._file_lock:  # a concurrent write renames the files
            return self._read_unlocked()

    def _read_unlocked(self) -> dict[MessageQueue, int]:
        return _read_with_backup(self.path)

    def write_file(self, table: dict[MessageQueue, int] | None = None) -> bool:
        """Write ``table`` (default: the in-memory table) atomically; False (logged) on failure."""
        data = encode_offsets(self._table if table is None else table)
        with self._file_lock:
            return self._write_unlocked(data)

    def _write_unlocked(self, data: bytes) -> bool:
        try:
            write_atomic(self.path, data)
            return True
        except OSError as exc:
            log.warning("write local offsets failed path=%s err=%s", self.path, exc)
            return False

    def load(self) -> None:
        """Read the file into memory (``LocalFileOffsetStore.load``).

        Raises:
            OffsetFileError: ``offsets.json`` and its ``.bak`` are both unusable (Java:
                ``MQClientException``); the consumer must not start.
            OSError: a file cannot be read.
        """
        for mq, off in self.read_file().items():
            self._table[mq] = off

    # -------------------------------------------------------------- OffsetStore interface

    def update_offset(self, mq: MessageQueue, offset: int, increase_only: bool) -> None:
        """Set the in-memory offset; with ``increase_only`` keep the larger value."""
        old = self._table.get(mq)
        if old is None or not increase_only or offset > old:
            self._table[mq] = offset

    def read_memory(self, mq: MessageQueue) -> int:
        """Return the cached offset, or −1."""
        return self._table.get(mq, -1)

    async def read_offset(self, mq: MessageQueue, kind: ReadOffsetType) -> int:
        """Read an offset from memory and/or the file; −1 when unknown."""
        if kind is not ReadOffsetType.READ_FROM_STORE:
            cached = self._table.get(mq)
            if cached is not None or kind is ReadOffsetType.READ_FROM_MEMORY:
                return -1 if cached is None else cached
        try:
            stored = (await asyncio.to_thread(self.read_file)).get(mq)
        except (OffsetFileError, OSError) as exc:  # Java: readLocalOffset failed -> -1
            log.warning("read local offsets failed path=%s err=%s", self.path, exc)
            return -1
        if stored is None:
            return -1
        self.update_offset(mq, stored, increase_only=False)
        return stored

    def _merge_into_file(self, offsets: dict[MessageQueue, int]) -> bool:
        """Read the file, put ``offsets`` into it, write it back (one writer at a time: a
        periodic ``persist_all`` and a rebalance's ``persist`` may overlap in threads).

        When the file cannot be read nothing is written (Java's ``persist``: log, return), so
        files that are unreadable now are never replaced by a table missing their offsets.
        """
        with self._file_lock:
            try:
                table = self._read_unlocked()
            except (OffsetFileError, OSError) as exc:
                log.error("local offsets not written: reading path=%s failed: %s", self.path, exc)
                return False
            table.update(offsets)
            return self._write_unlocked(encode_offsets(table))

    async def persist(self, mq: MessageQueue, *, oneway: bool = False) -> None:
        """Write ``mq``'s offset into the file (no error raised).

        Mirrors 5.x ``LocalFileOffsetStore.persist``: the file is read and only this queue's
        entry replaced, so the offsets of other queues in it are kept.
        """
        if mq in self._table:
            await asyncio.to_thread(self._merge_into_file, {mq: self._table[mq]})

    async def persist_all(self, mqs: Iterable[MessageQueue], *, oneway: bool = True) -> None:
        """Write the offsets of ``mqs`` into the file (``persistAll``); nothing when empty.

        Mirrors 5.x ``LocalFileOffsetStore.persistAll``: the file is read and the in-memory
        offsets of ``mqs`` put into it, so queues no longer held (another topic unsubscribed, a
        queue missing from the route for a while) keep their offsets for a later restart; the
        in-memory table is not pruned (``removeOffset`` does that).
        """
        keep = {mq: self._table[mq] for mq in set(mqs) if mq in self._table}  # values taken on the loop
        if keep:
            await asyncio.to_thread(self._merge_into_file, keep)

    def remove(self, mq: MessageQueue) -> None:
        """Forget a queue's in-memory offset (the file keeps it until the next write)."""
        self._table.pop(mq, None)

    def snapshot(self) -> dict[MessageQueue, int]:
        """Return a copy of the cached offsets."""
        return dict(self._table)


def _decode(data: bytes) -> dict[MessageQueue, int]:
    try:
        return decode_offsets(data)
    except ProtocolError as exc:
        raise ValueError(str(exc)) from None


def _read_with_backup(path: Path) -> dict[MessageQueue, int]:
    """:func:`~rocketpipe.backup_file.read_with_backup` of ``offsets.json`` (never ``recover``).

    Raises:
        OffsetFileError: a file is present and no copy is usable.
    """
    try:
        loaded = read_with_backup(path, _decode, hint="repair or remove the files")
    except MetadataError as exc:
        raise OffsetFileError(str(exc), exc.paths) from None
    return loaded.value or {}


class NoCommitOffsetView:
    """The offset store as seen by a BROADCASTING pull loop: never piggy-backs a commit offset.

    Java sets the pull's commit-offset flag only in CLUSTERING mode; reading −1 here keeps the
    flag off, every other call goes to the wrapped store.
    """

    def __init__(self, store: LocalOffsetStore) -> None:
        self._store = store

    def read_memory(self, mq: MessageQueue) -> int:
        """Always −1 (no commit offset in pulls)."""
        return -1

    def __getattr__(self, name: str) -> object:
        return getattr(self._store, name)


__all__ = [
    "DEFAULT_LOCAL_OFFSET_STORE_DIR",
    "LocalOffsetStore",
    "NoCommitOffsetView",
    "OffsetFileError",
    "decode_offsets",
    "encode_offsets",
    "local_offsets_path",
]
