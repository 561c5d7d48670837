"""Files written atomically with a backup, and read with a policy for bad ones (L0; stdlib + errors).

Write (:func:`write_atomic`) — Java's ``MixAll.string2File`` / ``ConfigManager.persist`` order,
made crash-safe: the new content goes to a temp file unique to the call (``<name>.<12 hex>.tmp``,
same directory) and is fsynced; the current file is renamed to ``<name>.bak`` (the previous
version is kept); the temp file is renamed over ``<name>``; the directory is fsynced. When there
is no current file (the first save, or it was set aside as bad) the same content is also written
to ``.bak``, so **a valid ``.bak`` exists after every save**. A crash at any point leaves a valid
file or a valid ``.bak``.

Read (:func:`read_with_backup`) — ``ConfigManager.load`` / ``loadBak``, stricter:

================================  ===============================================================
main file / ``.bak``              result
================================  ===============================================================
good / anything                   the main file's content
missing / missing                 nothing (first start), no log line
bad or missing / good             the ``.bak``'s content; a bad main file is set aside as
                                  ``<name>.corrupt-<ms>`` (so the next save cannot rotate it over
                                  the good ``.bak``); one WARNING line naming both files
no good copy, some file present   :class:`MetadataError` naming the files and their faults;
                                  with ``recover=True`` the bad files are set aside as
                                  ``.corrupt-<ms>`` and nothing is returned (the caller logs)
================================  ===============================================================

"Bad" is empty, or the ``decode`` callable raises one of :data:`DECODE_ERRORS`. The format is
the caller's: the broker's JSON files (:mod:`rocketpipe.store.json_file`) and the client's
broadcasting offsets file (:mod:`rocketpipe.client.consumer.local_offsets`) both use this
module, which sits below both (the client may not import the store).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

from .errors import RocketMQError

log = logging.getLogger(__name__)

T = TypeVar("T")
#: What a ``decode`` callable raises for bad content.
DECODE_ERRORS: tuple[type[BaseException], ...] = (ValueError, TypeError, KeyError, AttributeError, RocketMQError)

__all__ = ["DECODE_ERRORS", "Loaded", "MetadataError", "backup_path", "read_with_backup", "write_atomic"]


class MetadataError(RocketMQError):
    """A metadata file and its ``.bak`` are both unreadable; nothing was loaded from them.

    Attributes:
        paths: the files that exist and could not be used (main file first).
    """

    def __init__(self, message: str, paths: tuple[Path, ...] = ()) -> None:
        super().__init__(message)
        self.paths = paths


@dataclass(frozen=True, slots=True)
class Loaded(Generic[T]):
    """Outcome of :func:`read_with_backup`.

    Attributes:
        value: the decoded content, None when ``source`` is ``"none"`` or ``"recovered"``.
        source: ``"file"`` (main file), ``"backup"`` (``.bak``), ``"none"`` (neither exists) or
            ``"recovered"`` (no good copy; the bad files were set aside, ``recover=True``).
        set_aside: where bad files were moved (``<name>.corrupt-<ms>``).
        faults: what was wrong, e.g. ``"topics.json: not JSON (...); topics.json.bak: missing"``
            (empty for ``"file"`` and ``"none"``).
    """

    value: T | None
    source: Literal["file", "backup", "none", "recovered"]
    set_aside: tuple[Path, ...] = ()
    faults: str = ""


def backup_path(path: str | Path) -> Path:
    """``<path>.bak``."""
    p = Path(path)
    return p.with_name(p.name + ".bak")


# ------------------------------------------------------------------------------------- writing


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_temp(p: Path, data: bytes) -> Path:
    """Write ``data`` to a new ``<name>.<hex>.tmp`` next to ``p`` and fsync it; return its path."""
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
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return tmp


def write_atomic(path: str | Path, data: bytes) -> None:
    """Replace ``path`` with ``data``, keeping the previous version as ``path + '.bak'``.

    Mirrors ``MixAll.string2File`` (temp file, fsync, previous content kept as ``.bak``,
    rename) and fsyncs the directory as ``ConfigManager.persist`` does. After it returns, both
    ``path`` and ``.bak`` hold valid content (on the first save both hold ``data``).

    Raises:
        OSError: writing, renaming or syncing failed (the old file and ``.bak`` are left as they
            were; no temp file is left behind).
    """
    p = Path(path)
    bak = backup_path(p)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = _write_temp(p, data)
    try:
        try:
            os.replace(p, bak)  # atomic: a crash from here to the next replace leaves .bak valid
        except FileNotFoundError:  # first save, main set aside as bad, or a concurrent save moved it
            bak_tmp = _write_temp(p, data)
            try:
                os.replace(bak_tmp, bak)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(bak_tmp)
                raise
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(p.parent)


# ------------------------------------------------------------------------------------- reading


_MISSING = object()


def _try(p: Path, decode: Callable[[bytes], T]) -> tuple[Any, str]:
    """Return ``(value, "")``, ``(_MISSING, "missing")`` or ``(None, fault)``.

    Raises:
        OSError: the file exists but cannot be read (permissions, I/O error).
    """
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        return _MISSING, "missing"
    if not data.strip():
        return None, "empty"
    try:
        return decode(data), ""
    except DECODE_ERRORS as exc:
        return None, str(exc) or type(exc).__name__


def _set_aside(p: Path, now_ms: int) -> Path:
    """Rename a bad file to ``<name>.corrupt-<ms>`` (a free name); return the new path."""
    target = p.with_name(f"{p.name}.corrupt-{now_ms}")
    n = 0
    while target.exists():
        n += 1
        target = p.with_name(f"{p.name}.corrupt-{now_ms}-{n}")
    os.replace(p, target)
    return target


_TEMP_NAME = re.compile(r"\.[0-9a-f]{12}\.tmp")


def _remove_stale_temps(p: Path) -> None:
    """Delete temp files of ``p`` left by a crash mid-save (never the main file or ``.bak``)."""
    removed = 0
    with contextlib.suppress(FileNotFoundError):
        for q in p.parent.iterdir():
            rest = q.name[len(p.name) :] if q.name.startswith(p.name) else ""
            if rest == ".tmp" or _TEMP_NAME.fullmatch(rest):
                with contextlib.suppress(FileNotFoundError):
                    q.unlink()
                    removed += 1
    if removed:
        log.info("file=%s: removed %d temp file(s) left by an interrupted save", p, removed)


def read_with_backup(
    path: str | Path,
    decode: Callable[[bytes], T],
    *,
    recover: bool = False,
    hint: str = "",
    now_ms: int | None = None,
) -> Loaded[T]:
    """Read ``path`` (or its ``.bak``) with the policy of the module docstring.

    Call when nothing else writes the file (at start, or under the writer's lock): it removes
    temp files left by an interrupted save and may rename bad files.

    Args:
        path: the main file.
        decode: bytes → value; raises one of :data:`DECODE_ERRORS` for bad content.
        recover: with no good copy, set the bad files aside and return ``source="recovered"``
            instead of raising.
        hint: appended to the :class:`MetadataError` message (what the operator can do).
        now_ms: timestamp of the ``.corrupt-<ms>`` names (default: wall clock).

    Raises:
        MetadataError: no good copy, a file is present, ``recover`` is False; nothing renamed.
        OSError: a file exists but cannot be read, or a bad file cannot be renamed.
    """
    p = Path(path)
    bak = backup_path(p)
    _remove_stale_temps(p)
    value, fault = _try(p, decode)
    if not fault:
        return Loaded(value, "file")
    bak_value, bak_fault = _try(bak, decode)
    ts = int(time.time() * 1000) if now_ms is None else now_ms
    if not bak_fault:
        faults = f"{p.name}: {fault}"
        aside: tuple[Path, ...] = ()
        if value is not _MISSING:
            aside = (_set_aside(p, ts),)
        log.warning(
            "file=%s %s; loaded the previous version from file=%s%s",
            p, fault, bak, f" (the bad file is kept as {aside[0].name})" if aside else "",
        )  # fmt: skip
        return Loaded(bak_value, "backup", aside, faults)
    faults = f"{p.name}: {fault}; {bak.name}: {bak_fault}"
    if value is _MISSING and bak_value is _MISSING:
        return Loaded(None, "none")
    bad = tuple(q for q, v in ((p, value), (bak, bak_value)) if v is not _MISSING)
    if not recover:
        raise MetadataError(f"cannot load {p}: no readable copy ({faults}){'; ' + hint if hint else ''}", bad)
    return Loaded(None, "recovered", tuple(_set_aside(q, ts) for q in bad), faults)
