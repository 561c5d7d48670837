"""Atomic JSON files for broker state (L2; stdlib + orjson).

Mirrors ``MixAll.string2File``/``file2String`` as used by ``ConfigManager``: the previous content
is kept as ``<name>.bak`` and used when the main file is missing or unreadable. Writes go to
a temp file unique to the call (``<name>.<random>.tmp`` in the same directory), are fsynced,
then ``os.replace``d over the file, so a crash leaves either the old or the new content and two
concurrent saves never share (and steal) one temp file. Used by the broker for consumer
offsets, topics, groups and delay progress.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
from pathlib import Path
from typing import Any

import orjson

log = logging.getLogger(__name__)


def _read(path: Path) -> Any | None:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    if not data.strip():
        return None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        log.warning("file=%s is not valid JSON; trying the backup", path)
        return None


def load_json(path: str | Path) -> Any | None:
    """Load ``path``, or ``path + '.bak'`` when the file is missing, empty or corrupt.

    Returns:
        The decoded value, or None when neither file holds valid JSON.

    Raises:
        OSError: a file exists but cannot be read.
    """
    p = Path(path)
    value = _read(p)
    if value is None:
        value = _read(p.with_name(p.name + ".bak"))
    return value


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save_json(path: str | Path, obj: Any) -> None:
    """Write ``obj`` to ``path`` atomically, keeping the previous content as ``path + '.bak'``.

    Args:
        path: target file; its directory is created if needed.
        obj: an orjson-serialisable value (dict keys must be str).

    Raises:
        TypeError: ``obj`` is not serialisable (nothing is written).
        OSError: writing or syncing failed (the old file is left in place).
    """
    p = Path(path)
    data = orjson.dumps(obj, option=orjson.OPT_INDENT_2)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f"{p.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        # keep the previous content: rename it (atomic); a crash before the next replace leaves
        # the old state in .bak (load_json reads it) and the new one complete in the temp file
        with contextlib.suppress(FileNotFoundError):  # first save, or a concurrent save moved it
            os.replace(p, p.with_name(p.name + ".bak"))
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(p.parent)
