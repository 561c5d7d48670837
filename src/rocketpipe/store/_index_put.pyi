"""Types of the optional compiled loops of :meth:`rocketpipe.store.index_file.IndexFile.put_many` (``_index_put.c``)."""

def put_entries(
    mm: object,
    batch: list[tuple[str, int, int]],
    start: int,
    n: int,
    first: int,
    slot_num: int,
    entries_at: int,
    begin_ts: int,
    slot_blocks: bytearray,
    /,
) -> tuple[list[int], bytes | None, int]: ...
def put_slots(mm: object, touched: bytes, /) -> None: ...
