"""Key hashes of the index files: ``abs(String.hashCode())`` of ``topic#key`` (L2, stdlib only).

Mirrors ``IndexFile.indexKeyHashMethod``: Java's ``String.hashCode`` (``s[0]*31^(n-1) + ... +
s[n-1]`` over UTF-16 code units, wrapping at 32 bits), then ``Math.abs``, with
``Integer.MIN_VALUE`` (whose absolute value overflows) mapped to 0. Results are in
``0 .. 2**31 - 1``.

:func:`index_key_hashes` computes a whole flush batch at once: ASCII keys of one length are laid
out one per 64-bit lane of a big integer per character column, so each column costs one C-level
multiplication for every key of the batch instead of a Python loop per character.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from itertools import groupby
from typing import Final

_MASK: Final = 0xFFFFFFFF
_MIN_INT: Final = 0x80000000
#: Below this many keys of one length the per-key loop is as fast as the lane arithmetic.
_VECTOR_MIN: Final = 24
#: Longest ASCII key done with lanes: lane sums stay below 2**64 (127 * 2**32 * n).
_VECTOR_MAX_LEN: Final = 1 << 20
_POW31: list[int] = [1]


def _powers(n: int) -> list[int]:
    """``31**k mod 2**32`` for ``k < n``."""
    p = _POW31
    while len(p) < n:
        p.append(p[-1] * 31 & _MASK)
    return p


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode()`` of ``s`` as a signed 32-bit int."""
    if s.isascii():
        units: Sequence[int] = s.encode("ascii")
    else:
        data = s.encode("utf-16-be")
        units = struct.unpack(f">{len(data) // 2}H", data)
    h = 0
    for c in units:
        h = (h * 31 + c) & _MASK
    return h - (1 << 32) if h & _MIN_INT else h


def _positive(u: int) -> int:
    """``Math.abs`` of the signed view of the unsigned 32-bit ``u``; MIN_VALUE gives 0."""
    if u < _MIN_INT:
        return u
    return 0 if u == _MIN_INT else (1 << 32) - u


def index_key_hash(key: str) -> int:
    """``IndexFile.indexKeyHashMethod(key)``: ``abs(key.hashCode())``, 0 for MIN_VALUE."""
    return _positive(java_string_hash(key) & _MASK)


def index_key_hashes(keys: Sequence[str]) -> list[int]:
    """:func:`index_key_hash` of every key, in order (one call per flush batch)."""
    out = [0] * len(keys)
    lens = list(map(len, keys))
    ascii_ok = list(map(str.isascii, keys))
    order = sorted(range(len(keys)), key=lens.__getitem__)  # C-level: runs of one length
    for n, run in groupby(order, key=lens.__getitem__):
        idx = list(run)
        if len(idx) < _VECTOR_MIN or n > _VECTOR_MAX_LEN or not all(map(ascii_ok.__getitem__, idx)):
            for i in idx:
                out[i] = index_key_hash(keys[i])
            continue
        for i, h in zip(idx, _lane_hashes([keys[i] for i in idx], n), strict=False):
            out[i] = h
    return out


def _lane_hashes(keys: list[str], n: int) -> list[int]:
    """``index_key_hash`` of ASCII ``keys``, all of length ``n``."""
    k = len(keys)
    lo, hi = min(keys), max(keys)
    same = 0  # characters every key shares (the topic, a producer's UNIQ_KEY prefix)
    while same < n and lo[same] == hi[same]:
        same += 1
    pw = _powers(n)
    const = 0
    for j, c in enumerate(lo[:same].encode("ascii")):
        const += c * pw[n - 1 - j]
    data = "".join(keys).encode("ascii")
    lanes = bytearray(8 * k)
    acc = 0
    for j in range(same, n):
        lanes[0::8] = data[j::n]  # character j of every key, one per 8-byte lane
        acc += int.from_bytes(lanes, "little") * pw[n - 1 - j]
    # the low 32 bits of each 64-bit lane are the hash of the varying part; high halves dropped
    low = struct.unpack(f"<{2 * k}I", acc.to_bytes(8 * k, "little"))[0::2]
    vals = [(u + const) & _MASK for u in low]
    return [v if v < _MIN_INT else (0 if v == _MIN_INT else (1 << 32) - v) for v in vals]  # _positive
