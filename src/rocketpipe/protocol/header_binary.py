"""ROCKETMQ binary header codec (serialize type 1) (L1, sans-IO).

Mirrors ``RocketMQSerializable.rocketMQProtocolEncode/Decode`` (5.x): big-endian
``code:int16 language:int8 version:int16 opaque:int32 flag:int32 remarkLen:int32 remark
extLen:int32 (keyLen:int16 key valLen:int32 val)*``. A remark or ext value of length 0
decodes as absent, as in Java 4.9+/5.x.
"""

from __future__ import annotations

import struct

from ..errors import ProtocolError
from .codes import LanguageCode, SerializeType
from .command import RemotingCommand

_FIXED = struct.Struct(">hbhii")
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")


def encode_binary_header(cmd: RemotingCommand) -> bytes:
    """Encode the header of ``cmd`` in the ROCKETMQ binary form.

    Raises:
        ProtocolError: the code does not fit a signed 16-bit field (e.g. POP codes >= 200050).
    """
    if not -32768 <= cmd.code <= 32767:
        raise ProtocolError(f"code {cmd.code} cannot be sent in a ROCKETMQ binary header; use JSON")
    if not -32768 <= cmd.version <= 32767:
        raise ProtocolError(f"version {cmd.version} does not fit the ROCKETMQ binary header")
    parts = [_FIXED.pack(cmd.code, int(cmd.language), cmd.version, cmd.opaque, cmd.flag)]
    if cmd.remark:
        r = cmd.remark.encode()
        parts += [_I32.pack(len(r)), r]
    else:
        parts.append(_I32.pack(0))
    ext_parts: list[bytes] = []
    for k, v in cmd.ext_fields.items():
        if v is None:
            continue
        if type(v) is not str:  # be as lenient as the JSON encoder: Java-style text
            v = ("true" if v else "false") if isinstance(v, bool) else str(v)
        kb, vb = k.encode(), v.encode()
        ext_parts += [_I16.pack(len(kb)), kb, _I32.pack(len(vb)), vb]
    ext = b"".join(ext_parts)
    parts += [_I32.pack(len(ext)), ext]
    return b"".join(parts)


def decode_binary_header(data: bytes | memoryview) -> RemotingCommand:
    """Decode a ROCKETMQ binary header.

    Raises:
        ProtocolError: truncated header or lengths that run past it.
    """
    mv = memoryview(data)
    n = len(mv)
    if n < 21:
        raise ProtocolError("binary header shorter than 21 bytes")
    code, lang, version, opaque, flag = _FIXED.unpack_from(mv, 0)
    pos = 13
    (rlen,) = _I32.unpack_from(mv, pos)
    pos += 4
    if rlen < 0 or pos + rlen + 4 > n:
        raise ProtocolError("binary header remark length out of range")
    remark = str(mv[pos : pos + rlen], "utf-8", "replace") if rlen else None
    pos += rlen
    (elen,) = _I32.unpack_from(mv, pos)
    pos += 4
    if elen < 0 or pos + elen > n:
        raise ProtocolError("binary header ext length out of range")
    end = pos + elen
    ext: dict[str, str] = {}
    while pos < end:
        if pos + 2 > end:
            raise ProtocolError("binary header ext entry truncated")
        (klen,) = _I16.unpack_from(mv, pos)
        pos += 2
        if klen < 0 or pos + klen + 4 > end:
            raise ProtocolError("binary header ext key out of range")
        key = str(mv[pos : pos + klen], "utf-8", "replace")
        pos += klen
        (vlen,) = _I32.unpack_from(mv, pos)
        pos += 4
        if vlen < 0 or pos + vlen > end:
            raise ProtocolError("binary header ext value out of range")
        if vlen:
            ext[key] = str(mv[pos : pos + vlen], "utf-8", "replace")
        pos += vlen
    try:
        language: LanguageCode | int = LanguageCode(lang)
    except ValueError:
        language = lang
    return RemotingCommand(
        code=code,
        opaque=opaque,
        flag=flag,
        remark=remark,
        ext_fields=ext,
        language=language,
        version=version,
        serialize_type=SerializeType.ROCKETMQ,
    )
