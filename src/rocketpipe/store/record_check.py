"""Does a stored record check out? (L2; stdlib + ``protocol`` constants).

One function, :func:`check_record`, used wherever a commit-log record read from disk is about
to be trusted: abnormal recovery (``CommitLog.checkMessageAndReturnSize``), the consume-queue
rebuild, and every read of a record that was on disk when the store started (``get_message``,
``lookMessageByOffset``). It is the header-only counterpart of ``decode_record``: a handful of
``struct`` reads and one CRC, no objects built.

What it checks: the magic code, TOTALSIZE (against the consume-queue entry when one is known),
PHYSICALOFFSET = the record's own position (a record copied or shifted elsewhere fails), the body
CRC (``UtilAll.crc32``, 31 bits), and that body, topic and properties lengths add up exactly to
TOTALSIZE with no zero byte where a torn, zero-filled page would leave one.
"""

from __future__ import annotations

import struct
import zlib
from typing import Final

from ..protocol import sysflag as sf
from ..protocol.message import BORN_HOST_POS, PHYSICAL_OFFSET_POS, SYSFLAG_POS

#: Smallest possible record (v1 magic, IPv4 hosts, empty body/topic/properties).
MIN_RECORD_SIZE: Final = 91

_HEAD: Final = struct.Struct(">iii")  # total size, magic, body crc
_I16: Final = struct.Struct(">h")
_I32: Final = struct.Struct(">i")
_I64: Final = struct.Struct(">q")
_V6_BOTH: Final = sf.BORNHOST_V6_FLAG | sf.STOREHOST_V6_FLAG
#: Bytes the host fields take beyond two IPv4 hosts, by the sysflag's IPv6 bits (16 → 28 / 40).
_V6_EXTRA: Final = {
    0: 0,
    sf.BORNHOST_V6_FLAG: 12,
    sf.STOREHOST_V6_FLAG: 12,
    _V6_BOTH: 24,
}
_MAGICS: Final = (sf.MAGIC_V1, sf.MAGIC_V2)


def check_record(
    buf: memoryview | bytes, pos: int, offset: int, size: int = -1, *, check_crc: bool = True
) -> str | None:
    """Check the record at ``buf[pos:]`` that should sit at commit-log ``offset``.

    Args:
        buf: the segment (or any buffer holding the record).
        pos: position of the record's TOTALSIZE field in ``buf``.
        offset: the commit-log offset the record claims to be at (its PHYSICALOFFSET).
        size: the expected TOTALSIZE (from a consume-queue entry), or -1 when unknown.
        check_crc: verify the body CRC (``checkCRCOnRecover``; the layout is always checked).

    Returns:
        None when the record checks out, else a short reason (``"bad magic"``, ``"body CRC"`` …).
    """
    n = len(buf)
    # header: where the record says it is and how long it is (checkMessageAndReturnSize's
    # magic / totalSize / physicOffset checks)
    if not 0 <= pos <= n - MIN_RECORD_SIZE:
        return "truncated"
    total, magic, crc = _HEAD.unpack_from(buf, pos)
    if magic not in _MAGICS:
        return "bad magic"
    end = pos + total
    if not MIN_RECORD_SIZE <= total <= n - pos or (size >= 0 and total != size):
        return "bad size"
    if _I64.unpack_from(buf, pos + PHYSICAL_OFFSET_POS)[0] != offset:
        return "physical offset mismatch"
    # layout: body (+ CRC), topic and properties lengths fill TOTALSIZE exactly
    (sys_flag,) = _I32.unpack_from(buf, pos + SYSFLAG_POS)
    p = pos + BORN_HOST_POS + 36  # born host 8, store ts 8, store host 8, reconsume 4, prepared 8
    if sys_flag & _V6_BOTH:
        p += _V6_EXTRA[sys_flag & _V6_BOTH]
    if p + 4 > end:
        return "bad size"
    (blen,) = _I32.unpack_from(buf, p)
    p += 4
    if not 0 <= blen <= end - p - 3:
        return "bad body length"
    if check_crc and zlib.crc32(buf[p : p + blen]) & 0x7FFFFFFF != crc:
        return "body CRC"
    p += blen
    if magic == sf.MAGIC_V2:
        (tlen,) = _I16.unpack_from(buf, p)
        p += 2
    else:
        tlen = buf[p]
        p += 1
    p += tlen
    if tlen <= 0 or p + 2 > end or buf[p - 1] == 0:
        return "bad topic"
    (plen,) = _I16.unpack_from(buf, p)
    if p + 2 + plen != end or (plen > 0 and buf[end - 1] == 0):
        return "bad properties"
    return None


def record_queue(buf: memoryview | bytes, pos: int = 0) -> tuple[str, int, int]:
    """(topic, queue id, queue offset) of a record that passed :func:`check_record`."""
    (sys_flag,) = _I32.unpack_from(buf, pos + SYSFLAG_POS)
    (queue_id,) = _I32.unpack_from(buf, pos + 12)
    (queue_offset,) = _I64.unpack_from(buf, pos + 20)
    p = pos + BORN_HOST_POS + 36
    if sys_flag & _V6_BOTH:
        p += _V6_EXTRA[sys_flag & _V6_BOTH]
    (blen,) = _I32.unpack_from(buf, p)
    p += 4 + blen
    if _I32.unpack_from(buf, pos + 4)[0] == sf.MAGIC_V2:
        (tlen,) = _I16.unpack_from(buf, p)
        p += 2
    else:
        tlen = buf[p]
        p += 1
    return str(buf[p : p + tlen], "utf-8", "replace"), queue_id, queue_offset
