"""Types of the optional compiled loop of :mod:`rocketpipe.store.batch_encoder` (``_batch_records.c``)."""

from collections.abc import Callable

def encode(
    body: bytes,
    topic_part: bytes,
    mid: bytes,
    tail: bytes,
    wait_pair: bytes | None,
    magic: int,
    queue_id: int,
    queue_offset: int,
    physical_offset: int,
    next_id: Callable[[], str],
    tags_code: Callable[[bytes], int],
    index_keys: bool,
    /,
) -> tuple[list[bytes], list[tuple[int, int, int]], list[tuple[str | None, str | None]], int]: ...
