"""Types of the optional compiled loops of :func:`rocketpipe.protocol.message.decode_records`,
:func:`~rocketpipe.protocol.message.encode_batch` and :func:`~rocketpipe.protocol.message.encode_records`, and of :mod:`rocketpipe.spark.decode`'s record
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
def encode_records(
    msgs: Sequence[object],
    tail: bytes,
    hosts: dict[str, bytes],
    queue_id: int,
    queue_offset: int,
    physical_offset: int,
    store_timestamp: int,
    /,
) -> tuple[list[bytes], list[bool], int, int] | None: ...
def string_to_properties(s: str, /) -> dict[str, str]: ...
def record_starts(buf: bytes | bytearray | memoryview, /) -> bytes | None: ...
def split_properties(
    buf: object, pos: object, lens: object, /
) -> tuple[bytes, tuple[bytes, bytes], tuple[bytes, bytes], bytes] | None: ...
