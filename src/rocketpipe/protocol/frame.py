"""Frame codec (L1, sans-IO): ``length:int32 | serializeType:8 headerLen:24 | header | body``.

:func:`encode_frame` turns a command into bytes; :class:`FrameDecoder` is fed bytes as they
arrive and yields whole commands. Mirrors ``RemotingCommand.encode/decode`` and Netty's
``LengthFieldBasedFrameDecoder(16 MiB, 0, 4, 0, 4)`` in ``NettyDecoder``.
"""

from __future__ import annotations

import struct
from typing import Final

from ..compiled import load
from ..errors import ProtocolError
from .codes import LanguageCode, SerializeType
from .command import RemotingCommand
from .header_binary import decode_binary_header, encode_binary_header
from .header_json import _LANG_BY_NAME, _NAME_BY_VALUE, decode_json_header, encode_json_header

#: Largest frame accepted, counting the 4-byte length field (Java frameMaxLength, 16 MiB).
MAX_FRAME_SIZE: Final = 16 * 1024 * 1024

_HDR = struct.Struct(">ii")
_I32 = struct.Struct(">i")
#: _decode_payload's compiled path for JSON frames (None: not built), and the one in use (None:
#: the Python code below).
_compiled_payload_built, _compiled_payload = load(f"{__package__}._header", "decode_payload")
#: encode_frame_parts' compiled path for JSON frames (None: not built), and the one in use.
_compiled_head_built, _compiled_head = load(f"{__package__}._header", "encode_head")


def encode_header(cmd: RemotingCommand) -> bytes:
    """Encode only the header of ``cmd`` with its ``serialize_type``."""
    if cmd.serialize_type == SerializeType.ROCKETMQ:
        return encode_binary_header(cmd)
    return encode_json_header(cmd)


def encode_frame(cmd: RemotingCommand) -> bytes:
    """Encode ``cmd`` as one frame.

    Raises:
        ProtocolError: the frame would exceed :data:`MAX_FRAME_SIZE`.
    """
    header = encode_header(cmd)
    body = cmd.body
    total = 4 + len(header) + len(body)
    if total + 4 > MAX_FRAME_SIZE:
        raise ProtocolError(f"frame of {total + 4} bytes exceeds {MAX_FRAME_SIZE}")
    prefix = _HDR.pack(total, (int(cmd.serialize_type) << 24) | len(header))
    if body:
        return b"".join((prefix, header, body))
    return prefix + header


def encode_frame_parts(cmd: RemotingCommand) -> list[bytes | memoryview]:
    """Encode ``cmd`` as a list of buffers (prefix+header, body) to write without copying the body.

    A JSON command whose fields are strings and 64-bit ints gets its prefix and header from one
    compiled call (``_header.encode_head``, the same bytes); the code below is the reference.

    Raises:
        ProtocolError: the frame would exceed :data:`MAX_FRAME_SIZE`.
    """
    if _compiled_head is not None:
        first = _compiled_head(cmd, _NAME_BY_VALUE, MAX_FRAME_SIZE)
        if first is not None:
            body = cmd.body
            return [first, body] if body else [first]
    header = encode_header(cmd)
    body = cmd.body
    total = 4 + len(header) + len(body)
    if total + 4 > MAX_FRAME_SIZE:
        raise ProtocolError(f"frame of {total + 4} bytes exceeds {MAX_FRAME_SIZE}")
    first = _HDR.pack(total, (int(cmd.serialize_type) << 24) | len(header)) + header
    return [first, body] if body else [first]


def _decode_payload(buf: bytes | bytearray | memoryview, start: int, end: int) -> RemotingCommand:
    """Decode the frame payload ``buf[start:end]`` (after the length field), copying the header
    and the body once each; no view of ``buf`` outlives the call.

    A JSON header that ``_header.decode_payload`` takes (as :func:`decode_json_header`'s
    compiled path does) is decoded with the command in one compiled call; the code below is
    the reference and decodes the rest."""
    if _compiled_payload is not None:
        cmd: RemotingCommand | None = _compiled_payload(
            buf, start, end, _LANG_BY_NAME, RemotingCommand, SerializeType.JSON, LanguageCode.OTHER
        )
        if cmd is not None:
            return cmd
    if end - start < 4:
        raise ProtocolError("frame shorter than its header word")
    (word,) = _I32.unpack_from(buf, start)
    stype = (word >> 24) & 0xFF
    hlen = word & 0xFFFFFF
    hstart = start + 4
    if hlen > end - hstart:
        raise ProtocolError(f"bad header length {hlen} for a frame of {end - start + 4} bytes")
    with memoryview(buf) as mv:
        header = bytes(mv[hstart : hstart + hlen])
        body = bytes(mv[hstart + hlen : end])
    if stype == SerializeType.JSON:
        cmd = decode_json_header(header)
    elif stype == SerializeType.ROCKETMQ:
        cmd = decode_binary_header(header)
    else:
        raise ProtocolError(f"unknown serialize type {stype}")
    cmd.body = body
    return cmd


def decode_frame_payload(payload: bytes | bytearray | memoryview) -> RemotingCommand:
    """Decode one frame without its leading length field.

    Raises:
        ProtocolError: bad header length, unknown serialize type, or a bad header.
    """
    return _decode_payload(payload, 0, len(payload))


class FrameDecoder:
    """Incremental frame decoder: ``feed(bytes)`` then call ``next()`` until it returns None.

    The decoder consumes transactionally: a partial frame stays buffered. Errors are sticky in
    the sense that the caller must close the connection after a :class:`ProtocolError`.

    Args:
        max_frame_size: largest frame accepted, counting the length field (bytes).
    """

    __slots__ = ("_buf", "_pos", "max_frame_size")

    def __init__(self, max_frame_size: int = MAX_FRAME_SIZE) -> None:
        self._buf = bytearray()
        self._pos = 0
        self.max_frame_size = max_frame_size

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Append received bytes."""
        if self._pos and self._pos == len(self._buf):
            self._buf.clear()
            self._pos = 0
        self._buf += data

    @property
    def buffered(self) -> int:
        """Bytes buffered but not yet decoded."""
        return len(self._buf) - self._pos

    def next(self) -> RemotingCommand | None:
        """Return the next whole command, or None when more data is needed.

        Raises:
            ProtocolError: a frame length out of range, or a malformed frame.
        """
        buf = self._buf
        pos = self._pos
        avail = len(buf) - pos
        if avail < 4:
            return None
        (length,) = _I32.unpack_from(buf, pos)
        if length < 4 or length + 4 > self.max_frame_size:
            raise ProtocolError(f"frame length {length} out of range")
        if avail < 4 + length:
            return None
        end = pos + 4 + length
        self._pos = end
        cmd = _decode_payload(buf, pos + 4, end)
        if end > 65536 and end * 2 > len(buf):
            del buf[:end]
            self._pos = 0
        return cmd

    def __iter__(self) -> FrameDecoder:
        return self

    def __next__(self) -> RemotingCommand:
        cmd = self.next()
        if cmd is None:
            raise StopIteration
        return cmd
