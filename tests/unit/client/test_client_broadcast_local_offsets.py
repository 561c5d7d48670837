"""LocalOffsetStore: Java OffsetSerializeWrapper file format, atomic replace, .bak fallback."""

from __future__ import annotations

import doctest
import logging
import os
from pathlib import Path

import pytest

from rocketpipe.client.consumer import local_offsets
from rocketpipe.client.consumer.local_offsets import (
    DEFAULT_LOCAL_OFFSET_STORE_DIR,
    LocalOffsetStore,
    NoCommitOffsetView,
    decode_offsets,
    encode_offsets,
    local_offsets_path,
)
from rocketpipe.client.consumer.offsets import ReadOffsetType
from rocketpipe.protocol.message import MessageQueue

Q0 = MessageQueue("T", "broker-a", 0)
Q1 = MessageQueue("T", "broker-a", 1)


def test_doctests_and_default_dir() -> None:
    assert doctest.testmod(local_offsets).failed == 0
    assert os.path.join(os.path.expanduser("~"), ".rocketmq_offsets") == DEFAULT_LOCAL_OFFSET_STORE_DIR
    assert local_offsets_path("ip@x", "g").parts[-3:] == ("ip@x", "g", "offsets.json")


def test_java_file_format_round_trip() -> None:
    # what Java's fastjson writes for OffsetSerializeWrapper (object-literal keys)
    java = b'{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:12,{"brokerName":"broker-a","queueId":1,"topic":"T"}:7}}'
    assert decode_offsets(java) == {Q0: 12, Q1: 7}
    assert decode_offsets(encode_offsets({Q1: 7, Q0: 12})) == {Q0: 12, Q1: 7}
    assert encode_offsets({Q0: 12}).startswith(b'{"offsetTable":{{')


async def test_persist_load_and_read(tmp_path: Path) -> None:
    s = LocalOffsetStore("127.0.0.1@a", "g", tmp_path)
    s.update_offset(Q0, 5, increase_only=False)
    s.update_offset(Q0, 3, increase_only=True)
    s.update_offset(Q1, 9, increase_only=False)
    await s.persist_all([Q0, Q1])
    assert s.path == tmp_path / "127.0.0.1@a" / "g" / "offsets.json"
    assert decode_offsets(s.path.read_bytes()) == {Q0: 5, Q1: 9}
    s.update_offset(Q0, 6, increase_only=True)
    await s.persist(Q0)
    assert decode_offsets(s.path.read_bytes()) == {Q0: 6, Q1: 9}
    assert decode_offsets(s.path.with_name("offsets.json.bak").read_bytes()) == {Q0: 5, Q1: 9}  # previous kept
    assert not s.path.with_name("offsets.json.tmp").exists()

    fresh = LocalOffsetStore("127.0.0.1@a", "g", tmp_path)
    assert await fresh.read_offset(Q0, ReadOffsetType.READ_FROM_MEMORY) == -1
    assert await fresh.read_offset(Q0, ReadOffsetType.READ_FROM_STORE) == 6
    assert fresh.read_memory(Q0) == 6
    fresh.load()
    assert fresh.snapshot() == {Q0: 6, Q1: 9}
    assert await fresh.read_offset(MessageQueue("T", "broker-a", 5), ReadOffsetType.MEMORY_FIRST_THEN_STORE) == -1
    # persist_all writes the given queues' offsets into the file and keeps the others' (5.x
    # LocalFileOffsetStore.persistAll reads the file first); memory is not pruned
    fresh.update_offset(Q0, 8, increase_only=False)
    fresh.update_offset(Q1, 11, increase_only=False)
    await fresh.persist_all([Q1])
    assert decode_offsets(fresh.path.read_bytes()) == {Q0: 6, Q1: 11}
    assert fresh.snapshot() == {Q0: 8, Q1: 11}
    fresh.remove(Q0)
    await fresh.persist_all([Q0])  # not in memory: nothing to write
    assert decode_offsets(fresh.path.read_bytes()) == {Q0: 6, Q1: 11}
    # persist(mq) replaces that queue's entry only
    other = LocalOffsetStore("127.0.0.1@a", "g", tmp_path)
    other.update_offset(Q0, 1, increase_only=False)
    await other.persist(Q0)
    assert decode_offsets(other.path.read_bytes()) == {Q0: 1, Q1: 11}


def test_bak_fallback_and_corrupt_file(tmp_path: Path) -> None:
    s = LocalOffsetStore("c", "g", tmp_path)
    s.path.parent.mkdir(parents=True)
    s.path.write_bytes(b"not json{")
    s.path.with_name("offsets.json.bak").write_bytes(encode_offsets({Q0: 4}))
    assert s.read_file() == {Q0: 4}
    s.path.with_name("offsets.json.bak").unlink()
    assert s.read_file() == {}


def test_write_failure_is_logged_not_raised(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    s = LocalOffsetStore("c", "g", blocker)  # parent "directory" is a file
    s.update_offset(Q0, 1, increase_only=False)
    with caplog.at_level(logging.WARNING):
        assert s.write_file() is False
    assert "write local offsets failed" in caplog.text


def test_no_commit_view() -> None:
    s = LocalOffsetStore("c", "g", "/nonexistent")
    s.update_offset(Q0, 3, increase_only=False)
    v = NoCommitOffsetView(s)
    assert v.read_memory(Q0) == -1
    v.update_offset(Q0, 4, increase_only=True)  # delegated
    assert s.read_memory(Q0) == 4


async def test_overlapping_persists_lose_no_queue(tmp_path: Path) -> None:
    """A periodic persist_all and rebalance persists run in threads at once: every queue's last
    offset reaches the file (read-merge-write is serialised; one .tmp path is shared)."""
    import asyncio

    store = LocalOffsetStore("cid", "g", tmp_path)
    mqs = [MessageQueue("T", "b", i) for i in range(16)]
    for round_ in range(5):
        for i, mq in enumerate(mqs):
            store.update_offset(mq, 100 * round_ + i, increase_only=False)
        await asyncio.gather(
            store.persist_all(mqs[:8]), *(store.persist(mq) for mq in mqs[8:]), store.persist_all(mqs[4:12])
        )
    assert store.read_file() == {mq: 400 + i for i, mq in enumerate(mqs)}
