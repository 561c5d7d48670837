"""Body compression chosen by sysflag bits 8-10 (L1). zlib is stdlib; lz4/zstd are optional.

Mirrors ``common/compression`` (CompressionType, ZlibCompressor, Lz4Compressor, ZstdCompressor).
"""

from __future__ import annotations

import zlib
from typing import Final

from ..errors import ProtocolError
from .sysflag import COMPRESSION_LZ4, COMPRESSION_TYPE_MASK, COMPRESSION_ZSTD

#: DefaultMQProducer.compressMsgBodyOverHowmuch (bytes): bodies >= this are compressed.
COMPRESS_OVER: Final = 4096
#: rocketmq.message.compressLevel default.
COMPRESS_LEVEL: Final = 5


def decompress(body: bytes | memoryview, sys_flag: int) -> bytes:
    """Decompress ``body`` with the algorithm named by ``sys_flag`` (0 or ZLIB bits = zlib).

    Raises:
        ProtocolError: corrupt data, or LZ4/ZSTD without the optional library installed.
    """
    ctype = sys_flag & COMPRESSION_TYPE_MASK
    try:
        if ctype == COMPRESSION_LZ4:
            try:
                import lz4.frame  # type: ignore[import-not-found]
            except ImportError:
                raise ProtocolError("LZ4 body: install rocketpipe[lz4]") from None
            return bytes(lz4.frame.decompress(bytes(body)))
        if ctype == COMPRESSION_ZSTD:
            try:
                import zstandard  # type: ignore[import-not-found]
            except ImportError:
                raise ProtocolError("ZSTD body: install rocketpipe[zstd]") from None
            return bytes(zstandard.ZstdDecompressor().decompressobj().decompress(bytes(body)))
        return zlib.decompress(body)
    except ProtocolError:
        raise
    except Exception as exc:
        raise ProtocolError(f"cannot decompress body: {exc}") from None


def compress_zlib(body: bytes, level: int = COMPRESS_LEVEL) -> bytes:
    """Compress with zlib (RFC 1950 stream, like Java's DeflaterOutputStream)."""
    return zlib.compress(body, level)
