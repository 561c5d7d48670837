"""Shared helpers of the store unit tests (module name unique across the repo)."""

from __future__ import annotations

from pathlib import Path

from rocketpipe.protocol.message import MessageExt, decode_record
from rocketpipe.store import GetResult, MessageInner, MessageStore, StoreConfig

SMALL_CL = 64 * 1024
SMALL_CQ = 20 * 50  # 50 entries per consume-queue file


class StepClock:
    """Deterministic wall clock: each read returns the current value; ``advance`` moves it."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self.now = start_ms

    def now_ms(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


def small_config(root: Path, **kw: object) -> StoreConfig:
    args: dict[str, object] = {
        "root_dir": root,
        "mapped_file_size_commit_log": SMALL_CL,
        "mapped_file_size_consume_queue": SMALL_CQ,
    }
    args.update(kw)
    return StoreConfig(**args)  # type: ignore[arg-type]


def inner(
    topic: str = "TopicA", queue_id: int = 0, body: bytes = b"hello", tags: str | None = None, **kw: object
) -> MessageInner:
    props: dict[str, str] = {"KEYS": "k"}
    if tags is not None:
        props["TAGS"] = tags
    return MessageInner(
        topic,
        queue_id,
        body,
        properties=props,
        born_timestamp=1_600_000_000_000,
        born_host="10.0.0.7:50000",
        store_host="127.0.0.1:10911",
        **kw,  # type: ignore[arg-type]
    )


def decode_all(result: GetResult) -> list[MessageExt]:
    out = []
    for buf in result.buffers:
        msg, end = decode_record(buf, 0)
        assert end == len(buf)
        out.append(msg)
    return out


def read_queue(store: MessageStore, topic: str, queue_id: int, start: int = 0) -> list[MessageExt]:
    """Read a whole queue with repeated get_message calls."""
    out: list[MessageExt] = []
    offset = start
    while offset < store.get_max_offset(topic, queue_id):
        r = store.get_message(topic, queue_id, offset, 32)
        assert r.next_begin_offset > offset
        out.extend(decode_all(r))
        offset = r.next_begin_offset
    return out
