"""Damaged store files (issue 8, part 3): a record is never handed out unless it checks out.

Each test writes real messages with the real client through a real broker, stops it, damages a
file the way the reliability probe did, starts again and reads everything back with a real
consumer: what must survive survives, the damaged record is not delivered, and the broker says
what happened (a log line naming the offset, a count in the store).
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from rocketpipe import Admin, LitePullConsumer, Message, Producer
from rocketpipe.protocol.bodies.route import KVTable
from rocketpipe.protocol.codes import RequestCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.store import StoreFileError
from rocketpipe.testing.cluster import local_cluster
from rocketpipe.transport import Connection

SEG = 1 << 20  # commit-log segment, bytes
CQ_FILE = 20 * 100  # consume-queue file: 100 entries
TOPIC = "Ledger"
N = 500


async def _produce(store: Path, n: int = N) -> list[tuple[int, int]]:
    """Send ``n`` messages to one queue; return (queue offset, commit-log offset) of each; clean stop."""
    sent: list[tuple[int, int]] = []
    async with local_cluster(store, mapped_file_size_commit_log=SEG, mapped_file_size_consume_queue=CQ_FILE) as c:
        async with Admin(c.namesrv_addr) as admin:
            await admin.create_topic(TOPIC, queue_nums=1)
        async with Producer("pg", namesrv_addr=c.namesrv_addr) as producer:
            for i in range(0, n, 50):
                batch = [
                    Message.build(TOPIC, f"entry {j:05d} ".encode() * 20, keys=f"k{j}")
                    for j in range(i, min(n, i + 50))
                ]
                r = await producer.send_batch(batch)
                assert r.send_status.name == "SEND_OK"
        store_ = c.broker.store
        for qo in range(n):
            e = store_._queue(TOPIC, 0).entry(qo)  # type: ignore[union-attr]
            assert e is not None
            sent.append((qo, e[0]))
    return sent


async def _read_all(store: Path, expect_at_most: int = N) -> tuple[list[int], list[bytes], int, int]:
    """Start the broker on ``store``; read the queue from its min offset with a real consumer.

    Returns (queue offsets read, bodies read, the broker's runtime-info ``damagedRecords``, max offset).
    """
    async with local_cluster(store, mapped_file_size_commit_log=SEG, mapped_file_size_consume_queue=CQ_FILE) as c:
        async with Admin(c.namesrv_addr) as admin:
            (mq,) = await admin.topic_queues(TOPIC)
            max_offset = await admin.max_offset(mq)
        offsets: list[int] = []
        bodies: list[bytes] = []
        async with LitePullConsumer("reader", namesrv_addr=c.namesrv_addr, auto_commit=False) as consumer:
            consumer.assign([mq])
            await consumer.seek(mq, 0)
            empty_polls = 0
            while len(offsets) < expect_at_most and empty_polls < 3:
                got = await consumer.poll(timeout=1)
                empty_polls = 0 if got else empty_polls + 1
                offsets += [m.queue_offset for m in got]
                bodies += [m.body for m in got]
        conn = await Connection.connect(c.broker_addr)
        try:  # what an operator sees: mqadmin brokerStatus / GET_BROKER_RUNTIME_INFO
            r = await conn.request(RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO, {}), 10)
        finally:
            await conn.close()
        runtime = KVTable.decode(bytes(r.body)).table
        assert int(runtime["damagedRecords"]) == c.broker.store.damaged_records
        return offsets, bodies, int(runtime["damagedRecords"]), max_offset


def _segment(store: Path) -> Path:
    return store / "commitlog" / "00000000000000000000"


def _overwrite(path: Path, pos: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(pos)
        f.write(data)


async def test_record_overwritten_mid_log_after_clean_stop_is_not_served(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sent = await _produce(tmp_path)
    qo, phys = sent[200]
    _overwrite(_segment(tmp_path), phys + 150, b"\xa5" * 100)  # 100 bytes overwritten in the body
    with caplog.at_level(logging.WARNING, logger="rocketpipe.store"):
        offsets, bodies, damaged, max_offset = await _read_all(tmp_path)
    assert max_offset == N
    assert offsets == [o for o in range(N) if o != qo]  # everything else, in order
    assert all(b.startswith(f"entry {o:05d} ".encode()) for o, b in zip(offsets, bodies, strict=True))
    assert damaged == 1
    assert any(f"offset={phys}" in r.getMessage() and "damaged" in r.getMessage() for r in caplog.records)


async def test_last_record_cut_in_half_after_clean_stop(tmp_path: Path) -> None:
    sent = await _produce(tmp_path)
    _qo, phys = sent[-1]
    seg = _segment(tmp_path)
    with open(seg, "r+b") as f:
        f.truncate(phys + 200)  # the file loses the second half of its last record and the rest
    offsets, _, damaged, max_offset = await _read_all(tmp_path)
    assert offsets == list(range(N - 1))
    assert damaged == 1
    assert max_offset == N  # the offset is not handed out again to a new message
    assert seg.stat().st_size == SEG  # extended back to a whole segment


async def test_crash_with_damaged_record_below_checkpoint_keeps_the_rest(tmp_path: Path) -> None:
    """The probe's worst row: Java-style recovery truncated 1,000 flushed messages at one bad record."""
    sent = await _produce(tmp_path, 1000)
    qo, phys = sent[100]
    _overwrite(_segment(tmp_path), phys + 150, b"\x00" * 100)
    (tmp_path / "abort").touch()  # as after a crash: abnormal recovery from the checkpoint
    offsets, _, damaged, max_offset = await _read_all(tmp_path, 1000)
    assert max_offset == 1000
    assert offsets == [o for o in range(1000) if o != qo]
    assert damaged == 1


@pytest.mark.parametrize("which", ["middle", "last", "all"])
async def test_deleted_consume_queue_file_is_rebuilt(
    tmp_path: Path, which: str, caplog: pytest.LogCaptureFixture
) -> None:
    await _produce(tmp_path)
    qdir = tmp_path / "consumequeue" / TOPIC / "0"
    files = sorted(qdir.iterdir())
    assert len(files) == 5  # 500 entries, 100 per file
    victims = {"middle": files[2:3], "last": files[-1:], "all": files}[which]
    for f in victims:
        f.unlink()
    with caplog.at_level(logging.WARNING, logger="rocketpipe.store"):
        offsets, bodies, damaged, max_offset = await _read_all(tmp_path)
    assert max_offset == N
    assert offsets == list(range(N))
    assert bodies[123].startswith(b"entry 00123 ")
    assert damaged == 0
    assert any("rebuilt from the commit log" in r.getMessage() and TOPIC in r.getMessage() for r in caplog.records)


async def test_garbage_in_consume_queue_file_is_rebuilt(tmp_path: Path) -> None:
    await _produce(tmp_path)
    last = sorted((tmp_path / "consumequeue" / TOPIC / "0").iterdir())[-1]
    _overwrite(last, CQ_FILE - 20, b"\x13" * 20)  # the last entry points nowhere
    offsets, _, damaged, max_offset = await _read_all(tmp_path)
    assert (offsets, damaged, max_offset) == (list(range(N)), 0, N)


async def test_missing_commit_log_file_refuses_to_start(tmp_path: Path) -> None:
    async with (
        local_cluster(tmp_path, mapped_file_size_commit_log=64 * 1024) as c,
        Producer("pg", namesrv_addr=c.namesrv_addr) as producer,
    ):
        for _i in range(0, 400, 50):
            await producer.send_batch([Message.build(TOPIC, b"x" * 1000) for _ in range(50)])
    files = sorted((tmp_path / "commitlog").iterdir())
    assert len(files) >= 4
    files[1].unlink()
    with pytest.raises(StoreFileError, match="missing"):
        async with local_cluster(tmp_path, mapped_file_size_commit_log=64 * 1024):
            pass
