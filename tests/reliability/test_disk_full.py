"""A full disk (issue 8, part 1): puts are refused with Java's answer, nothing is lost, nothing dies.

On a real 64 MiB tmpfs (``small_fs``): the store's files are allocated for real before they are
mapped, so a full filesystem is an ENOSPC at allocation, never a SIGBUS on a write into a sparse
mapping. The probe saw the broker die after 1,019 sends; here the sender is told
SERVICE_NOT_AVAILABLE with the "disk is full" remark, every acknowledged message reads back, and
writes resume once space returns.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from serve_process import ServeProcess

from rocketpipe import Admin, LitePullConsumer, Message, Producer
from rocketpipe.errors import RocketMQError, ServiceNotAvailableError
from rocketpipe.testing.cluster import local_cluster
from waiting import wait_until

TOPIC = "Fill"
DISK_FULL_REMARK = "the broker's disk is full ["


async def _read_back(namesrv: str, n: int) -> list[bytes]:
    async with Admin(namesrv) as admin:
        queues = await admin.topic_queues(TOPIC)
    out: list[bytes] = []
    async with LitePullConsumer("reader", namesrv_addr=namesrv, auto_commit=False) as consumer:
        consumer.assign(queues)
        for mq in queues:
            await consumer.seek(mq, 0)
        empty = 0
        while len(out) < n and empty < 3:
            got = await consumer.poll(timeout=1)
            empty = 0 if got else empty + 1
            out += [m.body for m in got]
    return out


async def test_filling_the_disk_refuses_puts_keeps_reads_and_resumes(small_fs: Callable[..., Path]) -> None:
    fs = small_fs(64)
    ballast = fs / "ballast"
    ballast.write_bytes(b"\x01" * (16 << 20))  # freed later: "space returns"
    store = fs / "store"
    acked: list[bytes] = []
    async with local_cluster(
        store,
        mapped_file_size_commit_log=4 << 20,
        mapped_file_size_consume_queue=20 * 10_000,
        clean_resource_interval=100,  # the disk check every 100 ms
        clean_file_forcibly_enable=False,  # keep every message: this test counts them
        # a key index of 40 KiB of slots and 2 MiB of entries: with Java's 5M slots the index alone
        # reserves up to 20 MiB of slot blocks as keys arrive, and would take back the space freed below
        max_hash_slot_num=10_000,
        max_index_num=100_000,
    ) as c:
        async with Admin(c.namesrv_addr) as admin:
            await admin.create_topic(TOPIC, queue_nums=2)
        refusal: ServiceNotAvailableError | None = None
        async with Producer("pg", namesrv_addr=c.namesrv_addr, retry_times_when_send_failed=0) as producer:
            for i in range(2000):  # 64 MiB / 128 KiB per batch = 512 batches at most
                batch = [f"{i:05d}-{j:02d} ".encode() * 256 for j in range(32)]  # 32 x 4 KiB
                try:
                    await producer.send_batch([Message.build(TOPIC, b) for b in batch])
                except ServiceNotAvailableError as exc:
                    refusal = exc
                    break
                acked += batch
            assert refusal is not None, "the 64 MiB filesystem never filled"
            assert DISK_FULL_REMARK in str(refusal) and "service not available now" in str(refusal)
            assert c.broker.store.disk_full
            stored = sum(c.broker.store.get_max_offset(TOPIC, q) for q in (0, 1))
            assert stored == len(acked)  # the refused batch left nothing behind
            # reads keep working while full
            assert sorted(await _read_back(c.namesrv_addr, len(acked))) == sorted(acked)
            # space returns: the disk check marks the disk OK and puts succeed again
            ballast.unlink()

            async def put_ok() -> bool:
                try:
                    await producer.send(Message.build(TOPIC, b"after"))
                except ServiceNotAvailableError:
                    return False
                return True

            await wait_until(put_ok, timeout=20, interval=0.2, what="a put accepted after space returned")
            assert not c.broker.store.disk_full


def test_serve_on_a_disk_too_small_for_a_segment_answers_and_stays_up(
    small_fs: Callable[..., Path], tmp_path: Path
) -> None:
    """Defaults (1 GiB segments) on a 64 MiB filesystem: the probe's SIGBUS case."""
    import asyncio

    fs = small_fs(64)
    with ServeProcess(fs / "store", tmp_path / "serve.log") as serve:

        async def scenario() -> str:
            async with Admin(serve.namesrv_addr) as admin:  # the broker registers right after it listens

                async def registered() -> bool:
                    try:
                        return bool(await admin.topic_queues("TBW102"))
                    except RocketMQError:
                        return False

                await wait_until(registered, timeout=30, what="the broker's routes on the name server")
            async with Producer("pg", namesrv_addr=serve.namesrv_addr, retry_times_when_send_failed=0) as producer:
                for _ in range(3):
                    with pytest.raises(ServiceNotAvailableError) as info:
                        await producer.send(Message.build(TOPIC, b"x" * 1024))
            return str(info.value)

        remark = asyncio.run(asyncio.wait_for(scenario(), 60))
        assert DISK_FULL_REMARK in remark
        assert serve.running
        assert not list((fs / "store" / "commitlog").glob("0*"))  # no short or sparse file left behind
        assert serve.terminate() == 0
    assert "disk full" in serve.log_text()


def test_close_on_a_full_disk_keeps_the_abort_marker_and_loses_nothing(
    small_fs: Callable[..., Path], caplog: pytest.LogCaptureFixture
) -> None:
    """The final flush cannot write (not one free block): close logs, unmaps, and the next start recovers."""
    from rocketpipe.store import MessageInner, MessageStore, PutStatus, StoreConfig

    fs = small_fs(8)
    root = fs / "store"
    cfg = StoreConfig(
        root,
        mapped_file_size_commit_log=1 << 20,
        mapped_file_size_consume_queue=20 * 1000,
        max_hash_slot_num=1000,
        max_index_num=10_000,
    )

    def msg(i: int) -> MessageInner:
        return MessageInner(
            TOPIC, 0, f"{i:06d}".encode() * 100, properties={"KEYS": f"k{i}"}, store_host="127.0.0.1:10911"
        )

    store = MessageStore(cfg)
    store.load()
    acked = 0
    while acked < 100_000:
        if store.put_message(msg(acked)).status is not PutStatus.PUT_OK:
            break
        acked += 1
    assert store.disk_full and acked > 1000
    fd = os.open(fs / "ballast", os.O_WRONLY | os.O_CREAT)  # take every block left: the final flush cannot allocate
    try:
        with pytest.raises(OSError, match="No space left"):
            for _ in range(8 << 8):  # 8 MiB in 4 KiB writes at most
                os.write(fd, b"\1" * 4096)
    finally:
        os.close(fd)
    store.close()  # must not raise
    assert "final flush failed" in caplog.text and "No space left" in caplog.text
    assert store.is_closed and (root / "abort").exists()
    (fs / "ballast").unlink()
    with MessageStore(cfg) as again:
        assert again.get_max_offset(TOPIC, 0) == acked
        last = again.get_message(TOPIC, 0, acked - 1, 1)
        assert last.buffers and f"{acked - 1:06d}".encode() * 100 in bytes(last.buffers[0])
