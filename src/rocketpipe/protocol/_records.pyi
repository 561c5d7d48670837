"""Types of the optional compiled loop of :func:`rocketpipe.protocol.message.decode_records` (``_records.c``)."""

def decode(
    buf: bytes | bytearray | memoryview,
    pos: int,
    out: list[object],
    cls: type,
    hosts: dict[int, tuple[str, str]],
    skip: int,
    /,
) -> int: ...
