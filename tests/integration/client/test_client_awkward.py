"""Awkward cases of the push consumer over real TCP on 127.0.0.1 (at-least-once holds):

* a consumer process SIGKILLed while its listener holds a batch: the group's next consumer gets
  every message, the held batch included;
* the broker stopped and started again (same store, same port) while a producer sends and a
  push consumer consumes: every acknowledged send is consumed, without restarting the clients;
* a rebalance while a batch is in flight: the committed offset of the moved queue never passes
  the unfinished message, and every message is consumed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import sys
from pathlib import Path

from rocketpipe import (
    Admin,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
    SendStatus,
)
from rocketpipe.broker import Broker, BrokerConfig
from rocketpipe.client.config import ClientConfig
from rocketpipe.errors import RocketMQError
from rocketpipe.namesrv import NameServer
from rocketpipe.testing.cluster import LocalCluster
from waiting import wait_until

OK = ConsumeConcurrentlyStatus.CONSUME_SUCCESS
SCRIPT = Path(__file__).with_name("awkward_consumer.py")
SRC = Path(__file__).resolve().parents[3] / "src"


async def create_and_send(namesrv: str, topic: str, queues: int, n: int, prefix: str = "m") -> list[str]:
    async with Admin(namesrv) as admin:
        await admin.create_topic(topic, queues)
    bodies = [f"{prefix}{i}" for i in range(n)]
    async with Producer("pg-awk", namesrv_addr=namesrv) as p:
        for b in bodies:
            assert (await p.send(Message.build(topic, b))).send_status is SendStatus.SEND_OK
    return bodies


def collecting_consumer(namesrv: str, group: str, topic: str, got: list[str], **kw: object) -> PushConsumer:
    consumer = PushConsumer(
        group, namesrv_addr=namesrv, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, **kw
    )  # type: ignore[arg-type]
    consumer.subscribe(topic)

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        got.extend(m.body.decode() for m in msgs)
        return OK

    consumer.register_message_listener(listener)
    return consumer


# --------------------------------------------------------------------------- a. kill -9 mid-batch


async def test_consumer_killed_mid_batch_loses_nothing(cluster: LocalCluster, tmp_path: Path) -> None:
    topic, group = "AwkKill", "cg-awk-kill"
    sent = await create_and_send(cluster.namesrv_addr, topic, 2, 30)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    with open(tmp_path / "consumer-a.log", "wb") as err:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(SCRIPT),
            cluster.namesrv_addr,
            group,
            topic,
            "4",
            stdout=asyncio.subprocess.PIPE,
            stderr=err,
            env=env,
        )
    acked_by_a: set[str] = set()
    held: list[str] = []
    try:
        assert proc.stdout is not None
        async with asyncio.timeout(90):
            while not held:
                line = (await proc.stdout.readline()).decode()
                assert line, f"consumer A exited early: {(tmp_path / 'consumer-a.log').read_text()[-2000:]}"
                kind, *bodies = line.split()
                if kind == "ACK":
                    acked_by_a.update(bodies)
                elif kind == "HOLD":
                    held = bodies
        proc.kill()  # SIGKILL while the listener holds `held`
        assert await proc.wait() == -9
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert held and len(acked_by_a) >= 4 and not set(held) & acked_by_a
    got_b: list[str] = []
    b = collecting_consumer(cluster.namesrv_addr, group, topic, got_b)
    async with b:
        await wait_until(
            lambda: acked_by_a | set(got_b) >= set(sent), timeout=60, what="every message consumed by A or B"
        )
    assert acked_by_a | set(got_b) == set(sent)  # nothing lost, nothing invented
    assert set(held) <= set(got_b)  # the killed batch was delivered again


# --------------------------------------------------------------------------- b. broker restart


async def test_broker_restart_during_consumption(tmp_path: Path) -> None:
    topic, group = "AwkRestart", "cg-awk-restart"
    namesrv = NameServer()
    ns_addr = await namesrv.start()
    brokers: list[Broker] = []
    try:
        cfg = BrokerConfig(store_dir=tmp_path / "store", namesrv_addr=ns_addr)
        broker = Broker(cfg)
        brokers.append(broker)
        await broker.start()
        port = int(broker.address.rsplit(":", 1)[1])
        async with Admin(ns_addr) as admin:
            await admin.create_topic(topic, 2)
        # heartbeats every 2 s: a restarted broker knows the group again soon (it refuses
        # pulls of an unknown group, as Java's does, until the next heartbeat)
        client_cfg = ClientConfig(namesrv_addr=ns_addr, heartbeat_broker_interval=2.0, poll_name_server_interval=2.0)
        got: list[str] = []
        consumer = collecting_consumer(ns_addr, group, topic, got, config=client_cfg)
        attempted: set[str] = set()
        acked: set[str] = set()
        failures = 0
        stop = asyncio.Event()

        async def produce(p: Producer) -> None:
            nonlocal failures
            i = 0
            while not stop.is_set():
                body = f"r{i}"
                i += 1
                attempted.add(body)
                try:
                    r = await p.send(Message.build(topic, body))
                except RocketMQError:
                    failures += 1
                    await asyncio.sleep(0.05)  # pacing while the broker is away
                    continue
                if r.send_status is SendStatus.SEND_OK:
                    acked.add(body)
                await asyncio.sleep(0.005)  # pacing: about 100 sends a second at most

        async with (
            consumer,
            Producer("pg-awk-restart", config=dataclasses.replace(client_cfg, instance_name="producer")) as p,
        ):
            task = asyncio.create_task(produce(p))
            try:
                await wait_until(lambda: len(got) >= 20, timeout=30, what="consumption under way")
                await broker.close()
                await wait_until(lambda: failures >= 3, timeout=30, what="sends fail while the broker is down")
                consumed_while_down = len(got)
                broker = Broker(dataclasses.replace(cfg, listen_port=port))
                brokers.append(broker)
                await broker.start()
                assert broker.address.endswith(f":{port}")
                restarted_at = len(acked)
                await wait_until(lambda: len(acked) >= restarted_at + 30, timeout=60, what="sends succeed again")
            finally:
                stop.set()
                await task
            await wait_until(lambda: acked <= set(got), timeout=90, what="every acknowledged send consumed")
        assert acked <= set(got)
        assert len(got) > consumed_while_down  # the same consumer went on after the restart
        assert set(got) <= attempted
    finally:
        for b in reversed(brokers):
            await b.close()
        await namesrv.close()


# --------------------------------------------------------------------------- c. rebalance in flight


def queues_of(consumer: PushConsumer, topic: str) -> list[int]:
    return [mq.queue_id for mq in consumer.assigned_queues() if mq.topic == topic]


async def test_rebalance_with_a_batch_in_flight_never_commits_past_it(cluster: LocalCluster) -> None:
    topic, group = "AwkMove", "cg-awk-move"
    await create_and_send(cluster.namesrv_addr, topic, 2, 20)  # 10 per queue, offsets 0..9
    held_offset = 3
    release = asyncio.Event()
    holding: set[int] = set()
    done_a: set[tuple[int, int]] = set()
    done_b: set[tuple[int, int]] = set()
    a = PushConsumer(
        group, namesrv_addr=cluster.namesrv_addr, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    )
    a.subscribe(topic)

    async def slow(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        m = msgs[0]
        if m.queue_offset == held_offset and m.reconsume_times == 0:
            holding.add(m.queue_id)
            await release.wait()  # the batch stays in flight until the test says so
        done_a.add((m.queue_id, m.queue_offset))
        return OK

    a.register_message_listener(slow)
    b = PushConsumer(
        group, namesrv_addr=cluster.namesrv_addr, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    )
    b.subscribe(topic)

    async def fast(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        done_b.update((m.queue_id, m.queue_offset) for m in msgs)
        return OK

    b.register_message_listener(fast)
    seen: dict[int, list[int]] = {0: [], 1: []}
    stop_watch = asyncio.Event()

    async def watch_broker_offsets() -> None:
        while not stop_watch.is_set():
            for q in (0, 1):
                if (q, held_offset) not in done_a | done_b:
                    seen[q].append(cluster.broker.offsets.query(group, topic, q))
            await asyncio.sleep(0.01)  # sampling period of the watcher, not a synchronisation

    watcher = asyncio.create_task(watch_broker_offsets())
    every = {(q, o) for q in (0, 1) for o in range(10)}
    try:
        async with a:
            try:
                await wait_until(lambda: holding == {0, 1}, timeout=30, what="A holds offset 3 of both queues")
                # A finished everything else it pulled; its offsets stop at the held message
                await wait_until(lambda: len(done_a) == 18, timeout=30, what="A consumed the rest")
                await wait_until(
                    lambda: (
                        [a.committed_offsets().get(mq) for mq in a.assigned_queues() if mq.topic == topic]
                        == [held_offset] * 2
                    ),
                    timeout=10,
                    what="A's offsets stop at the held message",
                )
                async with b:
                    await wait_until(
                        lambda: len(queues_of(a, topic)) == 1 and len(queues_of(b, topic)) == 1,
                        timeout=30,
                        what="1 + 1 split",
                    )
                    (moved,) = queues_of(b, topic)
                    kept = 1 - moved
                    # B starts the moved queue at the held message, not after it
                    await wait_until(
                        lambda: (moved, held_offset) in done_b, timeout=30, what="B gets the in-flight message"
                    )
                    release.set()
                    await wait_until(
                        lambda: (kept, held_offset) in done_a, timeout=10, what="A finishes its own held message"
                    )
                    await wait_until(lambda: done_a | done_b >= every, timeout=30, what="every message consumed")
                    await wait_until(
                        lambda: all(cluster.broker.offsets.query(group, topic, q) == 10 for q in (0, 1)),
                        timeout=30,
                        what="both queues committed to the end",
                    )
            finally:
                release.set()  # never leave a listener blocked: close() waits for batches in flight
    finally:
        stop_watch.set()
        await watcher
    assert done_a | done_b == every
    assert seen[moved] and max(seen[moved]) <= held_offset, seen[moved][-5:]
    assert (moved, held_offset) in done_b
    # B never saw the kept queue's messages after A finished them (no needless redelivery there)
    assert not {(kept, o) for o in range(held_offset + 1, 10)} & done_b
