"""JSON metadata files of the broker, written and read with a backup (L2; stdlib + orjson).

The write/read policy — temp file, fsync, the previous version kept as ``.bak``, rename (Java's
``MixAll.string2File``); the ``.bak`` used for a bad file; :class:`MetadataError` when no copy is
usable — is :mod:`rocketpipe.backup_file`'s, re-exported here. This module adds the JSON part:
:func:`save_json`, :func:`json_shape` (a ``decode`` for JSON objects with required keys, so a
file of the wrong shape counts as bad) and :func:`load_json`, the lenient reader kept for tools
and tests (no side effects, None when nothing is readable). Used by the broker for topics,
offsets, groups, delay progress, request modes and POP state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import orjson

from ..backup_file import DECODE_ERRORS, Loaded, MetadataError, backup_path, read_with_backup, write_atomic

__all__ = [
    "DECODE_ERRORS",
    "Loaded",
    "MetadataError",
    "backup_path",
    "json_shape",
    "load_json",
    "read_with_backup",
    "save_json",
    "write_atomic",
]


# ------------------------------------------------------------------------------------- writing


def save_json(path: str | Path, obj: Any) -> None:
    """Write ``obj`` as indented JSON with :func:`write_atomic`.

    Args:
        path: target file; its directory is created if needed.
        obj: an orjson-serialisable value (dict keys must be str).

    Raises:
        TypeError: ``obj`` is not serialisable (nothing is written).
        OSError: see :func:`write_atomic`.
    """
    write_atomic(path, orjson.dumps(obj, option=orjson.OPT_INDENT_2))


# ------------------------------------------------------------------------------------- reading


def json_shape(required: Mapping[str, type | tuple[type, ...]]) -> Callable[[bytes], dict[str, Any]]:
    """A ``decode`` for :func:`read_with_backup`: a JSON object with ``required`` keys of those types.

    >>> json_shape({"offsetTable": dict})(b'{"offsetTable": {}}')
    {'offsetTable': {}}
    >>> json_shape({"offsetTable": dict})(b'[]')
    Traceback (most recent call last):
    ...
    ValueError: wrong shape: a JSON array, not an object

    The returned callable raises ValueError (``orjson.JSONDecodeError`` or a shape error).
    """

    def decode(data: bytes) -> dict[str, Any]:
        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise ValueError(f"not JSON ({exc})") from None
        if not isinstance(obj, dict):
            raise ValueError(f"wrong shape: a JSON {_kind(obj)}, not an object")
        for key, kind in required.items():
            if key not in obj:
                raise ValueError(f"wrong shape: no {key!r}")
            if not isinstance(obj[key], kind):
                raise ValueError(f"wrong shape: {key!r} is a JSON {_kind(obj[key])}")
        return obj

    return decode


def _kind(v: Any) -> str:
    if isinstance(v, dict):
        return "object"
    if isinstance(v, list):
        return "array"
    if isinstance(v, str):
        return "string"
    if isinstance(v, bool) or v is None:
        return "literal"
    return "number"


def load_json(path: str | Path) -> Any | None:
    """Lenient read: ``path``'s JSON, else its ``.bak``'s, else None. Renames nothing, logs nothing.

    For tools and tests; the broker loads its files with :func:`read_with_backup`.

    Raises:
        OSError: a file exists but cannot be read.
    """
    p = Path(path)
    for q in (p, backup_path(p)):
        try:
            data = q.read_bytes()
        except FileNotFoundError:
            continue
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            continue
    return None
