"""Restart semantics: clean stop, and SIGKILL of a SYNC_FLUSH broker subprocess."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest
from broker_testkit import TIMEOUT, pull, records, send

from rocketpipe.broker import Broker, BrokerConfig
from rocketpipe.protocol.codes import RequestCode, ResponseCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.protocol.headers.offset import QueryConsumerOffsetRequestHeader, UpdateConsumerOffsetRequestHeader
from rocketpipe.store import MessageStore, load_json
from rocketpipe.transport import Connection
from waiting import wait_until

SEG = 1 << 20


def _commit(group: str, topic: str, queue_id: int, offset: int) -> RemotingCommand:
    h = UpdateConsumerOffsetRequestHeader(consumer_group=group, topic=topic, queue_id=queue_id, commit_offset=offset)
    return RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, h.to_ext_fields())


async def _query(c: Connection, group: str, topic: str, queue_id: int) -> int:
    h = QueryConsumerOffsetRequestHeader(consumer_group=group, topic=topic, queue_id=queue_id)
    r = await c.request(RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, h.to_ext_fields()), TIMEOUT)
    return int(r.ext_fields["offset"]) if r.code == ResponseCode.SUCCESS else -1


async def _all_bodies(c: Connection, topic: str, queue_id: int) -> list[bytes]:
    out: list[bytes] = []
    offset = 0
    while True:
        r = await pull(c, "reader", topic, queue_id, offset)
        if r.code != ResponseCode.SUCCESS:
            return out
        msgs = records(r)
        out.extend(m.body for m in msgs)
        offset = int(r.ext_fields["nextBeginOffset"])


async def test_broker_clean_restart_keeps_messages_offsets_topics_and_delay_progress(tmp_path: Path) -> None:
    cfg = BrokerConfig(store_dir=tmp_path, mapped_file_size_commit_log=SEG)
    async with Broker(cfg) as b:
        c = await Connection.connect(b.address)
        for i in range(20):
            assert (await send(c, "TopicRS", f"m{i}".encode(), queue_id=i % 2)).code == ResponseCode.SUCCESS
        assert (await c.request(_commit("g", "TopicRS", 0, 7), TIMEOUT)).code == ResponseCode.SUCCESS
        await send(c, "TopicRS", b"delayed", properties={"DELAY": "18"})  # 2 h: still parked after restart
        await c.close()
    async with Broker(cfg) as b2:
        c = await Connection.connect(b2.address)
        try:
            assert await _all_bodies(c, "TopicRS", 0) == [f"m{i}".encode() for i in range(0, 20, 2)] + []
            assert await _all_bodies(c, "TopicRS", 1) == [f"m{i}".encode() for i in range(1, 20, 2)]
            assert await _query(c, "g", "TopicRS", 0) == 7
            assert b2.topics.get("TopicRS") is not None
            assert b2.store.get_max_offset("SCHEDULE_TOPIC_XXXX", 17) == 1
            assert b2.schedule.offsets.get(18, 0) == 0
        finally:
            await c.close()


@pytest.fixture
def flush_calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, object]]:
    """Record the keyword arguments of every ``MessageStore.flush`` call (then flush for real)."""
    calls: list[dict[str, object]] = []
    real = MessageStore.flush

    def counting(self: MessageStore, **kw: object) -> int:
        calls.append(kw)
        return real(self, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(MessageStore, "flush", counting)
    return calls


async def test_broker_sync_flush_group_commit_batches_fsyncs(
    tmp_path: Path, flush_calls: list[dict[str, object]]
) -> None:
    # the periodic flush loop is parked for the whole test: every flush below is a group commit
    cfg = BrokerConfig(
        store_dir=tmp_path,
        mapped_file_size_commit_log=SEG,
        flush_disk_type="SYNC_FLUSH",
        flush_interval_commit_log_ms=3_600_000,
        flush_interval_consume_queue_ms=3_600_000,
    )
    async with Broker(cfg) as b:
        flush_calls.clear()  # the store's own flush after its first (unclean) load
        c = await Connection.connect(b.address)
        try:
            resps = await asyncio.gather(*(send(c, "TopicGC", f"m{i}".encode()) for i in range(64)))
            assert all(r.code == ResponseCode.SUCCESS for r in resps)
            assert b.store.flushed_offset >= b.store.get_max_phy_offset()
            # 64 concurrent durable sends share a handful of fsyncs, not one each
            assert 1 <= len(flush_calls) <= 8, len(flush_calls)
            assert b.group_commit.flush_count == len(flush_calls)
            # group commit syncs the commit log only; consume queues + checkpoint are periodic
            assert all(kw.get("consume_queues") is False for kw in flush_calls), flush_calls
        finally:
            await c.close()


async def test_broker_periodic_flush_uses_the_configured_pages_and_intervals(
    tmp_path: Path, flush_calls: list[dict[str, object]]
) -> None:
    cfg = BrokerConfig(
        store_dir=tmp_path,
        mapped_file_size_commit_log=SEG,
        flush_interval_commit_log_ms=20,
        flush_commit_log_least_pages=0,
        flush_interval_consume_queue_ms=3_600_000,
    )
    async with Broker(cfg) as b:
        flush_calls.clear()  # the store's own flush after its first (unclean) load
        c = await Connection.connect(b.address)
        try:
            assert (await send(c, "TopicPF", b"small")).code == ResponseCode.SUCCESS
            # far below 4 pages: only least_pages=0 (not a hard-coded 4 / 10 s thorough) flushes it
            await wait_until(
                lambda: b.store.flushed_offset >= b.store.get_max_phy_offset(), timeout=5, what="commit log flushed"
            )
            assert flush_calls and all(kw == {"consume_queues": False, "least_pages": 0} for kw in flush_calls), (
                flush_calls[:3]
            )
        finally:
            await c.close()


async def test_broker_sync_flush_survives_kill_9(tmp_path: Path) -> None:
    store = tmp_path / "store"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[3] / "src"), env.get("PYTHONPATH", "")])
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "rocketpipe.broker",
        "--store-dir",
        str(store),
        "--flush-disk-type",
        "SYNC_FLUSH",
        "--commitlog-file-size",
        str(SEG),
        stdout=asyncio.subprocess.PIPE,
        env=env,
    )
    try:
        assert proc.stdout is not None
        async with asyncio.timeout(30):
            line = (await proc.stdout.readline()).decode().strip()
        assert line.startswith("READY "), line
        addr = line.split()[1]
        c = await Connection.connect(addr)
        acked: list[bytes] = []
        resps = await asyncio.gather(*(send(c, "TopicK9", f"k{i}".encode()) for i in range(40)))
        for i, r in enumerate(resps):
            if r.code == ResponseCode.SUCCESS:
                acked.append(f"k{i}".encode())
        assert len(acked) == 40
        assert (await c.request(_commit("g9", "TopicK9", 0, 11), TIMEOUT)).code == ResponseCode.SUCCESS

        def offset_persisted() -> bool:
            obj = load_json(store / "config" / "consumerOffset.json")
            return bool(obj) and obj.get("offsetTable", {}).get("TopicK9@g9", {}).get("0") == 11

        await wait_until(offset_persisted, timeout=15, what="consumerOffset.json written")
        await c.close()
    finally:
        proc.kill()  # SIGKILL: no clean shutdown
        await proc.wait()
    assert (store / "abort").exists()
    async with Broker(BrokerConfig(store_dir=store, mapped_file_size_commit_log=SEG)) as b:
        c = await Connection.connect(b.address)
        try:
            assert sorted(await _all_bodies(c, "TopicK9", 0)) == sorted(acked)
            assert await _query(c, "g9", "TopicK9", 0) == 11
        finally:
            await c.close()
