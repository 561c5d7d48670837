"""Broker failure isolation: released held pulls, JSON persistence, NOTIFY_CONSUMER_IDS_CHANGED."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

import rocketpipe.broker.broker as broker_module
from rocketpipe.broker import Broker, BrokerConfig
from rocketpipe.broker.groups import ClientChannel
from rocketpipe.broker.pull_hold import HeldPull
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.store import load_json, save_json
from waiting import wait_until


@pytest.fixture
async def broker(tmp_path: Path):
    async with Broker(BrokerConfig(store_dir=tmp_path, mapped_file_size_commit_log=1 << 20)) as b:
        yield b


def _held(channel: object) -> HeldPull:
    return HeldPull(topic="T", queue_id=0, offset=0, deadline=0.0, code_set=None, request=None, channel=channel)


async def test_broker_one_failing_answer_does_not_lose_the_other_released_pulls(
    broker: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    answered: list[object] = []

    def rerun(entry: HeldPull) -> None:
        if entry.channel == "broken":
            raise RuntimeError("send_response failed")
        answered.append(entry.channel)

    monkeypatch.setattr(broker.pull_processor, "rerun", rerun)
    broker._rerun_held([_held("a"), _held("broken"), _held("b")])
    assert answered == ["a", "b"]


async def test_broker_persist_restores_the_dirty_flag_when_a_write_fails(
    broker: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(path: Path, obj: Any) -> None:
        if path.name == "topics.json":
            raise OSError(28, "No space left on device")
        save_json(path, obj)

    monkeypatch.setattr(broker_module, "save_json", failing)
    broker.topics.dirty = True  # (not topics_changed(): that would also wake the persist loop)
    broker.offsets.commit("g", "T", 0, 5)
    broker.offsets.dirty = True
    with pytest.raises(OSError):
        await broker._persist(force=False)
    assert broker.topics.dirty  # retried next round
    assert not broker.offsets.dirty  # the other file was still written
    assert load_json(broker.config_dir / "consumerOffset.json") is not None
    monkeypatch.setattr(broker_module, "save_json", save_json)
    await broker._persist(force=False)
    assert not broker.topics.dirty
    assert load_json(broker.config_dir / "topics.json") is not None


async def test_broker_never_writes_one_json_file_twice_at_once(broker: Broker, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write abandoned by a cancelled persist (close cancels the persist loop) is still running
    in its thread; the next persist of that file must wait for it, not race it."""
    gate = threading.Event()
    lock = threading.Lock()
    in_flight: dict[str, int] = {}
    overlaps: list[str] = []
    entered: list[str] = []

    def tracking(path: Path, obj: Any) -> None:
        with lock:
            in_flight[path.name] = in_flight.get(path.name, 0) + 1
            if in_flight[path.name] > 1:
                overlaps.append(path.name)
                gate.set()  # let the test fail fast instead of hanging
            first = path.name == "topics.json" and "topics.json" not in entered
            entered.append(path.name)
        try:
            if first:
                gate.wait(10)
            save_json(path, obj)
        finally:
            with lock:
                in_flight[path.name] -= 1

    monkeypatch.setattr(broker_module, "save_json", tracking)
    first = asyncio.create_task(broker._persist(force=True))
    await wait_until(lambda: "topics.json" in entered, timeout=5, what="first topics.json write started")
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    second = asyncio.create_task(broker._persist(force=True))
    # either the second write of topics.json overlaps the first (the bug) or it waits for it
    await wait_until(
        lambda: bool(overlaps) or getattr(broker, "save_waits", 0) > 0,
        timeout=5,
        what="second persist reached topics.json",
    )
    gate.set()
    await second
    assert overlaps == []
    assert entered.count("topics.json") == 2


class _FakeChannel:
    """A client channel whose oneway sends either complete at once or never drain."""

    def __init__(self, name: str, *, slow: bool) -> None:
        self.remote_address = name
        self.is_closed = False
        self.slow = slow
        self.sent: list[RemotingCommand] = []
        self._never = asyncio.Event()

    async def oneway(self, cmd: RemotingCommand) -> None:
        self.sent.append(cmd)
        if self.slow:
            await self._never.wait()  # a peer that stopped reading: the write never drains


async def test_broker_notify_is_not_delayed_by_a_slow_client(broker: Broker) -> None:
    slow, fast = _FakeChannel("slow:1", slow=True), _FakeChannel("fast:2", slow=False)
    for i, ch in enumerate((slow, fast)):
        broker.clients.register_consumer(
            "ng",
            ClientChannel(channel=ch, client_id=f"c{i}", language=0, version=0, last_update_ms=0),
            consume_type="CONSUME_PASSIVELY",
            message_model="CLUSTERING",
            consume_from_where="CONSUME_FROM_LAST_OFFSET",
            subscriptions=[],
        )
    broker.notify_consumer_ids_changed("ng")
    await wait_until(lambda: len(fast.sent) == 1, timeout=5, what="fast client notified despite the slow one")
    assert len(slow.sent) == 1
    broker.clients.remove_channel(slow)
    broker.clients.remove_channel(fast)
