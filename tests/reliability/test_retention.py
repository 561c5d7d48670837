"""Retention and disk-space checks (``CleanCommitLogService``) on a fake clock, real files, real clients.

Segments are 64 KiB (about 58 messages of 1 KiB each), consume-queue files hold 50 entries. File
ages come from the files' mtimes (set with ``os.utime``) against a :class:`FakeClock` placed at a
chosen local hour, so ``delete_when`` and ``file_reserved_time`` are exercised without waiting.
Disk usage is injected (``disk_used_ratio``), except in the tmpfs test, which fills a real
filesystem.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from pathlib import Path

import pytest

from rocketpipe import (
    Admin,
    BrokerError,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
    SendStatus,
)
from rocketpipe.client.consumer.lite_pull import LitePullConsumer
from rocketpipe.protocol.codes import ResponseCode
from rocketpipe.store import GetStatus, MessageInner, MessageStore, PutStatus, StoreConfig
from rocketpipe.store import clean as clean_mod
from rocketpipe.store.clean import CleanCommitLogService, disk_partition_used_ratio
from rocketpipe.testing.clock import FakeClock
from rocketpipe.testing.cluster import LocalCluster, local_cluster
from waiting import wait_until

SEGMENT = 64 * 1024
CQ_FILE = 20 * 50
BODY = b"r" * 1000
HOUR_MS = 3_600_000
TOPIC = "RetT"


def local_ms(hour: int, minute: int = 30, day: int = 15) -> int:
    """Epoch ms of a local wall time in January 2030 (no DST change that month)."""
    return int(datetime(2030, 1, day, hour, minute).timestamp() * 1000)


class Disk:
    """Injected ``disk_used_ratio``: returns ``used`` for every path and records the paths asked."""

    def __init__(self, used: float = 0.10) -> None:
        self.used = used
        self.paths: list[Path] = []

    def __call__(self, path: Path) -> float:
        self.paths.append(path)
        return self.used


def put(store: MessageStore, i: int, topic: str = TOPIC) -> None:
    r = store.put_message(MessageInner(topic, 0, BODY, properties={"KEYS": f"key{i}"}, store_host="127.0.0.1:10911"))
    assert r.is_ok, r.status


def fill(store: MessageStore, files: int) -> int:
    """Put messages until the commit log has ``files`` segments; return how many were put."""
    n = 0
    while len(store.commit_log_files()) < files:
        put(store, n)
        n += 1
        assert n < files * SEGMENT // len(BODY) + 10, "segments do not roll"
    store.flush()
    return n


def age(store: MessageStore, hours: dict[int, float], now_ms: int) -> None:
    """Set the mtime of segment ``i`` to ``hours[i]`` hours before ``now_ms`` (never the writing one)."""
    files = store.commit_log_files()
    for i, h in hours.items():
        assert not files[i].is_writing
        t_ns = (now_ms - round(h * HOUR_MS)) * 1_000_000
        os.utime(files[i].path, ns=(t_ns, t_ns))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(local_ms(13))


@pytest.fixture
def make_store(tmp_path: Path, clock: FakeClock) -> Iterator[Callable[..., MessageStore]]:
    stores: list[MessageStore] = []

    def make(**cfg: object) -> MessageStore:
        args: dict[str, object] = {
            "root_dir": tmp_path / f"store{len(stores)}",
            "mapped_file_size_commit_log": SEGMENT,
            "mapped_file_size_consume_queue": CQ_FILE,
        }
        args.update(cfg)
        store = MessageStore(StoreConfig(**args), clock)  # type: ignore[arg-type]
        store.load()
        stores.append(store)
        return store

    yield make
    for s in stores:
        s.close()


def cq_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if len(p.name) == 20 and p.name.isdigit())


def starts(store: MessageStore) -> list[int]:
    return [f.start for f in store.commit_log_files()]


# ---------------------------------------------------------------------------------------------
# when files expire


@pytest.mark.parametrize(
    ("delete_when", "hour", "deletes"),
    [("04", 3, False), ("04", 4, True), ("04", 5, False), ("01;04", 1, True), ("01;04", 2, False), ("1;4", 4, True)],
)
def test_expired_files_deleted_only_at_a_delete_when_hour(
    make_store, clock: FakeClock, delete_when: str, hour: int, deletes: bool
) -> None:
    clock.set(local_ms(hour))
    store = make_store(delete_when=delete_when)
    fill(store, 4)
    age(store, {0: 100, 1: 90, 2: 80}, clock.now_ms())
    before = starts(store)
    svc = CleanCommitLogService(store, clock, Disk(0.10))
    assert svc.is_time_to_delete() is deletes
    n = svc.run_once()
    if deletes:
        assert n == 3
        assert starts(store) == before[3:]
        assert store.commit_log_files()[0].is_writing
        assert store.get_min_phy_offset() == before[3]
    else:
        assert n == 0
        assert starts(store) == before
        assert store.get_min_phy_offset() == 0


def test_files_younger_than_file_reserved_time_are_kept(make_store, clock: FakeClock) -> None:
    clock.set(local_ms(4, 0))
    store = make_store(file_reserved_time=72)
    fill(store, 3)
    # written 71 h 59 min before the clock: one minute short of the reserved time
    age(store, {0: 72 - 1 / 60, 1: 72 - 1 / 60}, clock.now_ms())
    before = starts(store)
    svc = CleanCommitLogService(store, clock, Disk(0.10))
    assert svc.run_once() == 0
    assert starts(store) == before
    clock.advance(60)  # 04:01: exactly 72 h since the last write
    assert svc.run_once() == 2
    assert starts(store) == before[2:]


def test_deletion_stops_at_the_first_unexpired_file(make_store, clock: FakeClock) -> None:
    clock.set(local_ms(4))
    store = make_store()
    fill(store, 4)
    age(store, {0: 100, 1: 10, 2: 100}, clock.now_ms())  # an unexpired file in the middle
    before = starts(store)
    assert CleanCommitLogService(store, clock, Disk(0.10)).run_once() == 1
    assert starts(store) == before[1:]


def test_the_segment_being_written_is_never_deleted(make_store, clock: FakeClock) -> None:
    store = make_store()
    for i in range(10):
        put(store, i)
    (only,) = store.commit_log_files()
    assert only.is_writing
    t_ns = (clock.now_ms() - 1000 * HOUR_MS) * 1_000_000
    os.utime(only.path, ns=(t_ns, t_ns))
    svc = CleanCommitLogService(store, clock, Disk(0.89))  # forced cleaning, not yet disk full
    assert svc.run_once() == 0
    assert only.path.exists()
    r = store.get_message(TOPIC, 0, 0, 32)
    assert r.status is GetStatus.FOUND and r.message_count == 10

    fill(store, 5)
    svc_batch = CleanCommitLogService(store, clock, Disk(0.89), delete_file_batch_max=3)
    assert svc_batch.run_once() == 3  # deleteFileBatchMax per run
    assert svc_batch.run_once() == 1  # the writing segment stays
    (last,) = store.commit_log_files()
    assert last.is_writing and last.path.exists()
    assert store.get_message(TOPIC, 0, store.get_min_offset(TOPIC, 0), 1).status is GetStatus.FOUND


# ---------------------------------------------------------------------------------------------
# disk usage


def test_usage_over_max_used_ratio_deletes_expired_files_outside_delete_when(make_store, clock: FakeClock) -> None:
    clock.set(local_ms(13))  # not a delete_when hour
    store = make_store(disk_max_used_space_ratio=75)
    fill(store, 4)
    age(store, {0: 100, 1: 100, 2: 1}, clock.now_ms())
    before = starts(store)
    disk = Disk(0.75)  # at the ratio, not over it
    svc = CleanCommitLogService(store, clock, disk)
    assert svc.run_once() == 0
    assert starts(store) == before
    assert store.config.root_dir / "commitlog" in disk.paths and store.config.root_dir / "consumequeue" in disk.paths
    disk.used = 0.80
    plan = svc.plan()
    assert plan.usage_exceeds and not plan.clean_at_once and not plan.time_up
    assert svc.run_once() == 2  # the expired ones; the unexpired third stops the run
    assert starts(store) == before[2:]
    assert not store.disk_full


@pytest.mark.parametrize("enabled", [True, False])
def test_clean_forcibly_ratio_deletes_unexpired_files(make_store, clock: FakeClock, enabled: bool) -> None:
    store = make_store(disk_space_clean_forcibly_ratio=85, clean_file_forcibly_enable=enabled)
    fill(store, 4)
    age(store, {0: 1, 1: 1, 2: 1}, clock.now_ms())  # all young
    before = starts(store)
    disk = Disk(0.85)
    svc = CleanCommitLogService(store, clock, disk)
    assert svc.run_once() == 0  # over the max used ratio, not over clean-forcibly: only expired files go, none is
    assert starts(store) == before
    disk.used = 0.86
    if enabled:
        assert svc.run_once() == 3
        assert starts(store) == before[3:]
    else:
        assert svc.run_once() == 0
        assert starts(store) == before
    assert not store.disk_full  # 86 % is under the warning level


def test_warning_ratio_refuses_puts_until_space_returns(
    make_store, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    store = make_store(disk_space_warning_level_ratio=90, clean_file_forcibly_enable=False)
    put(store, 0)
    disk = Disk(0.91)
    svc = CleanCommitLogService(store, clock, disk)
    with caplog.at_level(logging.INFO, logger="rocketpipe.store.clean"):
        assert svc.check_disk_space() is True
        assert svc.check_disk_space() is True  # still full: no second line
        assert store.disk_full
        end = store.get_max_phy_offset()
        r = store.put_message(MessageInner(TOPIC, 0, BODY, store_host="127.0.0.1:10911"))
        assert r.status is PutStatus.SERVICE_NOT_AVAILABLE
        assert store.get_max_phy_offset() == end and store.get_max_offset(TOPIC, 0) == 1  # nothing half-written
        # reads keep working while full
        assert store.get_message(TOPIC, 0, 0, 1).status is GetStatus.FOUND
        disk.used = 0.90  # at the level, not over it
        assert svc.run_once() == 0
        assert not store.disk_full
        put(store, 1)
        assert store.get_max_offset(TOPIC, 0) == 2
    full = [r for r in caplog.records if r.levelno == logging.ERROR and "puts refused" in r.getMessage()]
    ok = [r for r in caplog.records if r.levelno == logging.INFO and "puts accepted again" in r.getMessage()]
    assert len(full) == 1 and "91%" in full[0].getMessage()
    assert len(ok) == 1


def test_ratios_are_clamped_as_java(make_store, clock: FakeClock) -> None:
    # warning 99 -> 90, clean-forcibly 99 -> 85, max used 99 -> 95
    store = make_store(
        disk_space_warning_level_ratio=99, disk_space_clean_forcibly_ratio=99, disk_max_used_space_ratio=99
    )
    svc = CleanCommitLogService(store, clock, Disk())
    assert svc.check_disk_space(0.91) is True
    assert svc.check_disk_space(0.90) is False
    assert svc.plan(0.86).clean_at_once
    assert not svc.plan(0.85).clean_at_once


def test_unknown_disk_usage_changes_nothing(make_store, clock: FakeClock) -> None:
    store = make_store()
    fill(store, 3)
    age(store, {0: 100, 1: 100}, clock.now_ms())
    svc = CleanCommitLogService(store, clock, Disk(-1.0))
    store.set_disk_full(True)  # as after an ENOSPC at segment allocation
    assert svc.check_disk_space() is True and store.disk_full
    plan = svc.plan()
    assert not plan.usage_exceeds and not plan.clean_at_once
    assert svc.run_once() == 0  # 13:30 and usage unknown: nothing to do
    store.set_disk_full(False)


def test_disk_partition_used_ratio_reads_the_real_filesystem(tmp_path: Path) -> None:
    used = disk_partition_used_ratio(tmp_path)
    st = os.statvfs(tmp_path)
    assert 0.0 <= used <= 1.0
    assert used == pytest.approx(1 - st.f_bavail / (st.f_blocks - st.f_bfree + st.f_bavail), abs=0.011)
    assert disk_partition_used_ratio(tmp_path / "missing") == -1.0


def test_disk_full_on_a_real_small_filesystem(small_fs, clock: FakeClock) -> None:
    root = small_fs(8)
    cfg = StoreConfig(
        root_dir=root / "store",
        mapped_file_size_commit_log=SEGMENT,
        mapped_file_size_consume_queue=CQ_FILE,
        message_index_enable=False,  # a key-index file is 20 MB
        clean_file_forcibly_enable=False,
    )
    store = MessageStore(cfg, clock)
    store.load()
    try:
        put(store, 0)
        svc = CleanCommitLogService(store, clock)  # real statvfs
        assert svc.check_disk_space() is False
        st = os.statvfs(root)
        ballast = root / "ballast"
        with ballast.open("wb") as f:  # leave about 5 % of the filesystem free
            f.write(b"\0" * (st.f_bavail * st.f_frsize - st.f_blocks * st.f_frsize // 20))
        assert svc.measure() > 0.90
        assert svc.check_disk_space() is True
        assert (
            store.put_message(MessageInner(TOPIC, 0, BODY, store_host="127.0.0.1:10911")).status
            is PutStatus.SERVICE_NOT_AVAILABLE
        )
        ballast.unlink()
        assert svc.check_disk_space() is False
        put(store, 1)
        assert store.get_max_offset(TOPIC, 0) == 2
    finally:
        store.close()


# ---------------------------------------------------------------------------------------------
# consume queues and the key index follow


def test_consume_queues_and_key_index_follow_the_commit_log(make_store, clock: FakeClock) -> None:
    clock.set(local_ms(4))
    store = make_store()
    put(store, 0, topic="Other")  # a second queue whose only message goes with the first segment
    n = fill(store, 4)
    cq_dir = store.config.root_dir / "consumequeue" / TOPIC / "0"
    cq_before = cq_files(cq_dir)
    age(store, {0: 100, 1: 100, 2: 100}, clock.now_ms())
    assert CleanCommitLogService(store, clock, Disk()).run_once() == 3
    min_phy = store.get_min_phy_offset()
    lo = store.get_min_offset(TOPIC, 0)
    assert 0 < lo < n and store.get_max_offset(TOPIC, 0) == n
    # the first message kept is the first one in the surviving segment
    first = store.get_message(TOPIC, 0, lo, 1)
    assert first.status is GetStatus.FOUND
    assert store.look_message_by_offset(min_phy) is not None
    assert store.look_message_by_offset(min_phy).queue_offset == lo
    # a reader behind the new minimum is told where to go (OFFSET_TOO_SMALL -> next = min)
    behind = store.get_message(TOPIC, 0, 3, 1)
    assert behind.status is GetStatus.OFFSET_TOO_SMALL and behind.next_begin_offset == lo
    # consume-queue files wholly below the new minimum are gone; the one holding it stays
    cq_after = cq_files(cq_dir)
    assert len(cq_after) < len(cq_before)
    entries = CQ_FILE // 20
    assert all(int(p.name) // 20 + entries > lo for p in cq_after)
    assert any(int(p.name) // 20 <= lo for p in cq_after)
    # the other queue lost its only message: its min offset moved past it
    assert store.get_min_offset("Other", 0) == store.get_max_offset("Other", 0) == 1
    # the key index no longer hands out deleted records
    assert store.query_message(TOPIC, "key0", 10, 0, 2**62).buffers == []
    assert len(store.query_message(TOPIC, f"key{n - 1}", 10, 0, 2**62).buffers) == 1


# ---------------------------------------------------------------------------------------------
# the broker's clean loop and real clients behind the new minimum


@pytest.fixture
def disk(monkeypatch: pytest.MonkeyPatch) -> Disk:
    """Disk usage seen by brokers built in this test (patched before they construct their service)."""
    d = Disk(0.10)
    monkeypatch.setattr(clean_mod, "disk_partition_used_ratio", d)
    return d


def retention_cluster(tmp_path: Path, clock: FakeClock) -> AbstractAsyncContextManager[LocalCluster]:
    return local_cluster(
        tmp_path / "store",
        clock=clock,
        mapped_file_size_commit_log=SEGMENT,
        mapped_file_size_consume_queue=CQ_FILE,
        clean_resource_interval=50,
        delete_commit_log_files_interval=5,
    )


async def produce(c: LocalCluster, n: int) -> None:
    async with Admin(c.namesrv_addr) as admin:
        await admin.create_topic(TOPIC, 1)
    async with Producer("ret-pg", namesrv_addr=c.namesrv_addr) as p:
        for i in range(n):
            r = await p.send(Message.build(TOPIC, BODY + b"%d" % i))
            assert r.send_status is SendStatus.SEND_OK and r.queue_offset == i


async def delete_by_retention(c: LocalCluster, clock: FakeClock) -> int:
    """Move the clock to a delete_when hour; wait for the broker's clean loop; return the new min offset."""
    store = c.broker.store
    assert len(store.commit_log_files()) >= 4 and store.get_min_offset(TOPIC, 0) == 0
    clock.set(local_ms(4, day=16))  # the real mtimes are years older than the fake clock: all expired
    await wait_until(
        lambda: len(store.commit_log_files()) == 1, timeout=10, what="retention deleting every full segment"
    )
    lo = store.get_min_offset(TOPIC, 0)
    assert lo > 0
    return lo


N = 250


async def test_broker_clean_loop_and_push_consumer_behind_the_new_min(
    tmp_path: Path, disk: Disk, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock(local_ms(13))
    group = "cg-behind"
    with caplog.at_level(logging.INFO, logger="rocketpipe.store.clean"):
        async with retention_cluster(tmp_path, clock) as c:
            await produce(c, N)
            c.broker.offsets.commit(group, TOPIC, 0, 5)  # the group had consumed 5 messages
            lo = await delete_by_retention(c, clock)

            def summary() -> list[str]:
                return [r.getMessage() for r in caplog.records if "commit-log clean deleted" in r.getMessage()]

            await wait_until(lambda: bool(summary()), what="the clean loop's summary line")
            (line,) = summary()  # one line for the whole run
            assert re.fullmatch(
                rf"commit-log clean deleted [4-9] file\(s\) reason=time used=10% min_offset={c.broker.store.get_min_phy_offset()}",
                line,
            )

            got: list[MessageExt] = []

            async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
                got.extend(msgs)
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

            consumer = PushConsumer(
                group, namesrv_addr=c.namesrv_addr, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
            )
            consumer.subscribe(TOPIC, "*")
            consumer.register_message_listener(listener)
            async with consumer:
                await wait_until(
                    lambda: len({m.queue_offset for m in got}) >= N - lo, timeout=30, what="messages from the new min"
                )
                await wait_until(
                    lambda: c.broker.offsets.query(group, TOPIC, 0) == N, timeout=30, what="offset committed to the end"
                )
            offsets = sorted({m.queue_offset for m in got})
            assert offsets == list(range(lo, N))  # moved to the min, nothing below it, nothing missed
            assert all(m.body == BODY + b"%d" % m.queue_offset for m in got)


async def test_lite_pull_consumer_behind_the_new_min(tmp_path: Path, disk: Disk) -> None:
    clock = FakeClock(local_ms(13))
    group = "lp-behind"
    async with retention_cluster(tmp_path, clock) as c:
        await produce(c, N)
        c.broker.offsets.commit(group, TOPIC, 0, 5)
        lo = await delete_by_retention(c, clock)
        async with Admin(c.namesrv_addr) as admin:
            queues = await admin.topic_queues(TOPIC)
        got: list[MessageExt] = []
        async with LitePullConsumer(
            group, namesrv_addr=c.namesrv_addr, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
        ) as lp:
            lp.assign(queues)

            async def enough() -> bool:
                got.extend(await lp.poll(0.2))
                return len(got) >= N - lo

            await wait_until(enough, timeout=30, what="messages from the new min")
        assert [m.queue_offset for m in got] == list(range(lo, N))


async def test_broker_refuses_sends_while_the_disk_is_full(tmp_path: Path, disk: Disk) -> None:
    clock = FakeClock(local_ms(13))
    async with retention_cluster(tmp_path, clock) as c:
        await produce(c, 3)
        disk.used = 0.95
        await wait_until(lambda: c.broker.store.disk_full, timeout=10, what="disk-full flag")
        async with Producer("ret-full", namesrv_addr=c.namesrv_addr) as p:
            with pytest.raises(BrokerError) as info:
                await p.send(Message.build(TOPIC, b"refused"))
            assert info.value.response_code == ResponseCode.SERVICE_NOT_AVAILABLE
            assert "disk" in info.value.remark.lower()
            assert c.broker.store.get_max_offset(TOPIC, 0) == 3
            disk.used = 0.50
            await wait_until(lambda: not c.broker.store.disk_full, timeout=10, what="disk OK again")
            r = await p.send(Message.build(TOPIC, b"accepted"))
            assert r.send_status is SendStatus.SEND_OK and r.queue_offset == 3
