"""SimpleConsumer end to end against a local cluster whose broker has POP installed.

The broker runs on a fake wall clock, so invisible durations pass when the test advances it;
the revive step is run through ``PopService.revive_due`` (its loop would do the same).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rocketpipe import Admin, BrokerError, InvalidArgumentError, Message, Producer
from rocketpipe.broker.pop import PopService, install
from rocketpipe.client.consumer.simple import ReceivedMessage, SimpleConsumer, receipt_handle
from rocketpipe.protocol.codes import ResponseCode
from rocketpipe.protocol.headers.pop import ConsumeInitMode
from rocketpipe.testing import FakeClock, LocalCluster, local_cluster
from waiting import wait_until

GROUP = "simple-cg"


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[tuple[LocalCluster, PopService, FakeClock]]:
    clock = FakeClock()
    async with local_cluster(tmp_path / "store", clock=clock) as c:
        svc = install(c.broker)
        await svc.start()
        try:
            yield c, svc, clock
        finally:
            await svc.close()


async def _produce(c: LocalCluster, topic: str, bodies: list[str], tags: str | None = None) -> None:
    async with Producer("simple-pg", namesrv_addr=c.namesrv_addr) as p:
        for body in bodies:
            await p.send(Message.build(topic, body, tags=tags))


def _consumer(c: LocalCluster, subs: dict[str, str], **kw: object) -> SimpleConsumer:
    kw.setdefault("await_duration", 0.3)
    kw.setdefault("init_mode", ConsumeInitMode.MIN)
    return SimpleConsumer(GROUP, namesrv_addr=c.namesrv_addr, subscriptions=subs, **kw)  # type: ignore[arg-type]


async def _receive_all(sc: SimpleConsumer, n: int, invisible: float = 10.0) -> list[ReceivedMessage]:
    got: list[ReceivedMessage] = []

    async def enough() -> bool:
        got.extend(await sc.receive(32, invisible))
        return len(got) >= n

    await wait_until(enough, timeout=15, what=f"{n} messages received")
    return got


async def test_client_simple_receive_ack_not_redelivered(env) -> None:
    c, svc, clock = env
    bodies = [f"m{i}" for i in range(10)]
    await _produce(c, "SimpleT", bodies)
    async with _consumer(c, {"SimpleT": "*"}) as sc:
        got = await _receive_all(sc, 10)
        assert sorted(m.body.decode() for m in got) == bodies
        for m in got:
            assert isinstance(m, ReceivedMessage) and m.topic == "SimpleT" and m.broker_name == "broker-a"
            ei = receipt_handle(m)
            assert ei.queue_offset == m.queue_offset and ei.retry == "0" and ei.invisible_time == 10_000
            assert m.receipt_handle == ei.build() and m.first_pop_time == ei.pop_time
            await sc.ack(m)
        assert svc.table.in_flight(GROUP) == 0
        clock.advance(11)
        assert svc.revive_due() == 0
        assert await sc.receive(32, 10) == []


async def test_client_simple_unacked_message_comes_back_with_reconsume_times(env) -> None:
    c, svc, clock = env
    await _produce(c, "SimpleT", ["a", "b"])
    async with _consumer(c, {"SimpleT": "*"}) as sc:
        got = await _receive_all(sc, 2)
        keep = next(m for m in got if m.body == b"a")
        await sc.ack(next(m for m in got if m.body == b"b"))
        clock.advance(10)
        assert svc.revive_due() == 1
        again = await _receive_all(sc, 1)
        assert [(m.body, m.reconsume_times, m.topic) for m in again] == [(b"a", 1, "SimpleT")]
        assert receipt_handle(again[0]).retry == "1"  # read from %RETRY%simple-cg_SimpleT
        assert again[0].msg_id == keep.msg_id
        # the expired handle is refused; the new one acks
        with pytest.raises(BrokerError) as exc:
            await sc.ack(keep)
        assert exc.value.response_code == ResponseCode.NO_MESSAGE
        await sc.ack(again[0])
        clock.advance(20)
        assert svc.revive_due() == 0


async def test_client_simple_change_invisible_duration(env) -> None:
    c, svc, clock = env
    await _produce(c, "SimpleT", ["x"])
    async with _consumer(c, {"SimpleT": "*"}) as sc:
        (m,) = await _receive_all(sc, 1)
        old = m.receipt_handle
        new = await sc.change_invisible_duration(m, 60)
        assert new != old and m.receipt_handle == new and receipt_handle(m).invisible_time == 60_000
        clock.advance(30)  # past the first 10 s, inside the new 60 s
        assert svc.revive_due() == 0
        assert await sc.receive(32, 10) == []
        await sc.ack(m)
        clock.advance(60)
        assert svc.revive_due() == 0 and svc.table.in_flight(GROUP) == 0


async def test_client_simple_more_consumers_than_queues_share_one_queue(env) -> None:
    c, svc, _clock = env
    async with Admin(c.namesrv_addr) as admin:
        await admin.create_topic("SimpleOne", 1, broker_addr=c.broker_addr)

    async def routed() -> bool:
        async with Admin(c.namesrv_addr) as admin:
            try:
                return len(await admin.topic_queues("SimpleOne")) == 1
            except BrokerError:
                return False

    await wait_until(routed, timeout=10, what="route of SimpleOne")
    bodies = [f"n{i}" for i in range(30)]
    await _produce(c, "SimpleOne", bodies)
    consumers = [_consumer(c, {"SimpleOne": "*"}) for _ in range(3)]
    for sc in consumers:
        await sc.start()
    try:
        got: dict[int, list[ReceivedMessage]] = {i: [] for i in range(3)}

        async def everything() -> bool:
            batches = await asyncio.gather(*(sc.receive(4, 30) for sc in consumers))
            for i, batch in enumerate(batches):
                got[i].extend(batch)
            return sum(len(v) for v in got.values()) >= 30

        await wait_until(everything, timeout=20, what="all messages received")
        all_bodies = [m.body.decode() for v in got.values() for m in v]
        assert sorted(all_bodies) == sorted(bodies)  # each message exactly once
        assert sum(1 for v in got.values() if v) >= 2  # more than one consumer got work
        assert {m.queue_id for v in got.values() for m in v} == {0}
        for i, sc in enumerate(consumers):
            if got[i]:
                await sc.ack_batch(got[i])
        assert svc.table.in_flight(GROUP) == 0
    finally:
        for sc in consumers:
            await sc.close()


async def test_client_simple_tag_subscription_and_long_poll(env) -> None:
    c, svc, _clock = env
    await _produce(c, "SimpleTag", ["skip"], tags="other")
    async with _consumer(c, {"SimpleTag": "want"}, await_duration=5.0) as sc:
        task = asyncio.ensure_future(sc.receive(8, 10))
        await wait_until(lambda: svc.polling_count >= 1, timeout=5, what="receive held on the broker")
        await _produce(c, "SimpleTag", ["hit"], tags="want")
        got = await asyncio.wait_for(task, 10)
        assert [m.body for m in got] == [b"hit"] and got[0].tags == "want"
        await sc.ack(got[0])


async def test_client_simple_rejects_bad_arguments(env) -> None:
    c, _svc, _clock = env
    with pytest.raises(InvalidArgumentError):
        SimpleConsumer(GROUP, namesrv_addr=c.namesrv_addr, await_duration=-1)
    sc = _consumer(c, {"SimpleT": "*"})
    with pytest.raises(InvalidArgumentError):
        await sc.receive(1, 1)  # not started
    await _produce(c, "SimpleT", ["z"])
    async with sc:
        with pytest.raises(InvalidArgumentError):
            await sc.receive(33, 1)
        with pytest.raises(InvalidArgumentError):
            await sc.receive(1, 0)
