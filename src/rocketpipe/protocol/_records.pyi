"""Types of the optional compiled loops of :func:`rocketpipe.protocol.message.decode_records` and
:func:`~rocketpipe.protocol.message.encode_batch`, and of :mod:`rocketpipe.spark.decode`'s record
walk and properties split (``_records.c``)."""

from collections.abc import Sequence

def decode(
    buf: bytes | bytearray | memoryview,
    pos: int,
    out: list[object],
    cls: type,
    hosts: dict[int, tuple[str, str]],
    skip: int,
    /,
) -> int: ...
def encode_batch(messages: Sequence[object], /) -> bytes | None: ...
def record_starts(buf: bytes | bytearray | memoryview, /) -> bytes | None: ...
def split_properties(
    buf: object, pos: object, lens: object, /
) -> tuple[bytes, tuple[bytes, bytes], tuple[bytes, bytes], bytes] | None: ...
