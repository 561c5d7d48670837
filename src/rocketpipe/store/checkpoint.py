"""The ``checkpoint`` file (L2; stdlib only).

Mirrors ``StoreCheckpoint``: a 4 KiB file of big-endian longs — physicMsgTimestamp @0,
logicsMsgTimestamp @8, indexMsgTimestamp @16, masterFlushedOffset @24, confirmPhyOffset @32.
rocketpipe writes ``master_flushed_offset`` = the commit-log offset below which the commit log
*and* every consume queue were on disk at the last consume-queue flush; abnormal recovery
starts scanning at the segment holding it.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Final

_LAYOUT: Final = struct.Struct(">qqqqq")
FILE_SIZE: Final = 4096


@dataclass(slots=True)
class Checkpoint:
    """In-memory copy of the checkpoint file; :meth:`save` writes and fsyncs it.

    Attributes:
        path: the file.
        physic_msg_timestamp: store time of the last flushed commit-log record, ms.
        logics_msg_timestamp: store time of the last record whose consume-queue entry was flushed, ms.
        index_msg_timestamp: always 0 (the key index keeps its own watermarks, see ``store.index``).
        master_flushed_offset: commit-log offset up to which commit log and consume queues agree on disk.
        confirm_phy_offset: same as master_flushed_offset (no replication).
    """

    path: Path
    physic_msg_timestamp: int = 0
    logics_msg_timestamp: int = 0
    index_msg_timestamp: int = 0
    master_flushed_offset: int = 0
    confirm_phy_offset: int = 0

    @classmethod
    def load(cls, path: Path) -> Checkpoint | None:
        """Read ``path``; None when it is missing or shorter than its fields."""
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        if len(data) < _LAYOUT.size:
            return None
        return cls(path, *_LAYOUT.unpack_from(data))

    def save(self) -> None:
        """Write the fields and fsync the file.

        Raises:
            OSError: the write or sync failed.
        """
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            data = _LAYOUT.pack(
                self.physic_msg_timestamp,
                self.logics_msg_timestamp,
                self.index_msg_timestamp,
                self.master_flushed_offset,
                self.confirm_phy_offset,
            )
            os.pwrite(fd, data.ljust(FILE_SIZE, b"\0"), 0)
            os.fdatasync(fd)
        finally:
            os.close(fd)
