"""Consume offsets of a BROADCASTING consumer, kept in a local JSON file (L3).

Mirrors ``LocalFileOffsetStore``: one file per client id and group,
``<dir>/<client_id>/<group>/offsets.json`` with ``dir`` defaulting to
``~/.rocketmq_offsets`` (Java: system property ``rocketmq.client.localOffsetStoreDir``, default
``${user.home}/.rocketmq_offsets``). The content is Java's ``OffsetSerializeWrapper`` in
fastjson form — ``{"offsetTable":{{"brokerName":..,"queueId":..,"topic":..}:offset}}`` — so a
Java client and this one can read each other's files.

Writes are atomic: a temporary file is written and fsynced, the previous file is kept as
``offsets.json.bak``, then the temporary file replaces ``offsets.json``. Reading falls back to
the ``.bak`` file when the main one is missing or unreadable. I/O failures are logged, never
raised (a broadcasting consumer keeps consuming).

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

from ...errors import ProtocolError
from ...protocol.bodies import javajson as jj
from ...protocol.message import MessageQueue
from .offsets import ReadOffsetType

log = logging.getLogger(__name__)

#: Default of ``rocketmq.client.localOffsetStoreDir``: ``~/.rocketmq_offsets``.
DEFAULT_LOCAL_OFFSET_STORE_DIR: Final = os.path.join(os.path.expanduser("~"), ".rocketmq_offsets")
OFFSETS_FILE_NAME: Final = "offsets.json"


def local_offsets_path(client_id: str, group: str, base_dir: str | os.PathLike[str] | None = None) -> Path:
    """Return ``<base_dir>/<client_id>/<group>/offsets.json``.

    >>> str(local_offsets_path("1.2.3.4@1", "g", "/tmp/o"))
    '/tmp/o/1.2.3.4@1/g/offsets.json'
    """
    return Path(base_dir if base_dir is not None else DEFAULT_LOCAL_OFFSET_STORE_DIR) / client_id / group / OFFSETS_FILE_NAME


def encode_offsets(table: dict[MessageQueue, int]) -> bytes:
    """Encode an offset table as ``OffsetSerializeWrapper`` (fastjson object-literal keys)."""
    return jj.dumps({"offsetTable": dict(sorted(table.items()))})


def decode_offsets(data: bytes | str) -> dict[MessageQueue, int]:
    """Decode an ``OffsetSerializeWrapper`` (any MessageQueue key shape).

    Raises:
        ProtocolError: not JSON.
    """
    d = jj.as_dict(jj.loads(data))
    return jj.message_queue_map(d.get("offsetTable"), jj.as_int)


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
        """Return the offsets of the file (or of its ``.bak``); empty when neither is readable."""
        for p in (self.path, self.path.with_name(self.path.name + ".bak")):
            try:
                data = p.read_bytes()
            except FileNotFoundError:
                continue
            except OSError as exc:
                log.warning("read local offsets failed path=%s err=%s", p, exc)
                continue
            if not data.strip():
                continue
            try:
                return decode_offsets(data)
            except ProtocolError as exc:
                log.warning("bad local offsets file path=%s err=%s", p, exc)
        return {}

    def write_file(self, table: dict[MessageQueue, int] | None = None) -> bool:
        """Write ``table`` (default: the in-memory table) atomically; False (logged) on failure."""
        data = encode_offsets(self._table if table is None else table)
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            if self.path.exists():
                os.replace(self.path, self.path.with_name(self.path.name + ".bak"))
            os.replace(tmp, self.path)
            return True
        except OSError as exc:
            log.warning("write local offsets failed path=%s err=%s", self.path, exc)
            return False

    def load(self) -> None:
        """Read the file into memory (``LocalFileOffsetStore.load``)."""
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
        stored = (await asyncio.to_thread(self.read_file)).get(mq)
        if stored is None:
            return -1
        self.update_offset(mq, stored, increase_only=False)
        return stored

    def _merge_into_file(self, offsets: dict[MessageQueue, int]) -> bool:
        """Read the file, put ``offsets`` into it, write it back (one writer at a time: a
        periodic ``persist_all`` and a rebalance's ``persist`` may overlap in threads)."""
        with self._file_lock:
            table = self.read_file()
            table.update(offsets)
            return self.write_file(table)

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


__all__ = ["DEFAULT_LOCAL_OFFSET_STORE_DIR", "LocalOffsetStore", "NoCommitOffsetView", "decode_offsets", "encode_offsets", "local_offsets_path"]
