"""Crash loops: no acknowledged message is ever lost, and what the store serves checks out.

``rocketpipe serve`` runs as a real subprocess (:class:`serve_process.ServeProcess`). Each round,
concurrent producers send messages with unique keys and bodies; after a random number of
acknowledgements (bounded) the broker is stopped while sends are still in flight, restarted on
the same store, and the whole topic is read back with raw pulls (no consumer-group state) and
checked against the ledger of everything sent so far:

* every message acknowledged ``SEND_OK`` is present, once, at the queue and queue offset the
  broker acknowledged, with its key and body exactly as sent;
* every queue's offsets run from its min offset to its max offset without gap or repeat, the
  max offset the broker reports equals what was read, commit-log offsets grow with queue offsets;
* every stored record has a matching body CRC and is one of the messages sent (an unacknowledged
  send may or may not be stored, never damaged); no message is stored twice (the producers do
  not retry, so one send is one put).

``test_sigkill_loop_sync_flush``: SIGKILL under SYNC_FLUSH (``--flush sync``), where the broker
acknowledges only after the fsync. ``test_sigterm_loop_async_flush``: SIGTERM (clean stop) under
ASYNC_FLUSH, where the broker flushes on the way out, so again nothing acknowledged may be lost.

The signal is delivered a random 0-30 ms after the round's last counted acknowledgement, so it
lands anywhere in the broker's work (mid-put, mid-fsync, between requests), with a request of each
sender in flight. The store is kept across rounds: each check covers every earlier round too.

Rounds: ``ROCKETPIPE_SIGKILL_ROUNDS`` (default 3 for the SIGKILL loop, 2 for the SIGTERM loop);
``ROCKETPIPE_SIGKILL_SEED`` replays a run (the seed is in every failure message).
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from serve_process import ServeProcess

from rocketpipe import Admin, Message, Producer, PullStatus, SendStatus
from rocketpipe.errors import ProtocolError, RocketMQError
from rocketpipe.protocol.message import MessageExt, body_crc, decode_records
from waiting import wait_until

TOPIC = "ReliabilityCrashLoop"
QUEUE_NUMS = 4
#: Concurrent senders: several requests are in flight when the broker is stopped.
SENDERS = 8
#: The broker is stopped after a random number of acknowledged sends in this range, per round.
STOP_AFTER_ACKS = (200, 5000)
#: The signal follows the last of those acknowledgements after a random delay up to this, seconds.
MAX_STOP_DELAY = 0.03
#: Cap of sends per sender per round (the loop is bounded even if the stop never happens).
MAX_SENDS_PER_SENDER = 5000
#: pytest-timeout budget per round (a round takes about 3 s here), seconds.
SECONDS_PER_ROUND = 20
#: Problems quoted in a failure message.
QUOTE = 20

ROUNDS_ENV = "ROCKETPIPE_SIGKILL_ROUNDS"
SEED_ENV = "ROCKETPIPE_SIGKILL_SEED"


def _rounds(default: int) -> int:
    return max(1, int(os.environ.get(ROUNDS_ENV, default)))


def _seed() -> int:
    return int(os.environ.get(SEED_ENV) or random.SystemRandom().randrange(2**32))


@dataclass(frozen=True, slots=True)
class Sent:
    """One attempted send."""

    round: int
    body: bytes


@dataclass(slots=True)
class Ledger:
    """Everything sent so far, across rounds, and what the broker answered.

    Attributes:
        attempted: key -> what was sent (every send, answered or not).
        acked: key -> (queue id, queue offset) of each SEND_OK answer.
        degraded: key -> status of answers other than SEND_OK (stored, durability not promised).
        failed: exception class name -> count of sends that raised after the stop.
    """

    seed: int
    attempted: dict[str, Sent] = field(default_factory=dict)
    acked: dict[str, tuple[int, int]] = field(default_factory=dict)
    degraded: dict[str, SendStatus] = field(default_factory=dict)
    failed: Counter[str] = field(default_factory=Counter)
    history: list[str] = field(default_factory=list)


@dataclass(slots=True)
class QueueRead:
    """All records of one queue, read with raw pulls."""

    queue_id: int
    min_offset: int
    max_offset: int
    messages: list[MessageExt]
    pull_max_offsets: set[int]


async def _topic_ready(admin: Admin) -> bool:
    try:
        return len(await admin.topic_queues(TOPIC)) == QUEUE_NUMS
    except RocketMQError:
        return False


async def _broker_registered(admin: Admin) -> bool:
    try:
        return bool((await admin.examine_broker_cluster_info()).broker_addr_table)
    except RocketMQError:
        return False


async def create_topic(serve: ServeProcess) -> None:
    async with Admin(serve.namesrv_addr) as admin:
        await wait_until(
            lambda: _broker_registered(admin), timeout=30, what="the broker to register with the name server"
        )
        await admin.create_topic(TOPIC, queue_nums=QUEUE_NUMS)
        await wait_until(lambda: _topic_ready(admin), timeout=30, what=f"the route of {TOPIC}")


async def produce_until_stopped(
    serve: ServeProcess, ledger: Ledger, round_no: int, rng: random.Random, stop_signal: int
) -> int:
    """Send from SENDERS tasks; after a random number of acks, deliver ``stop_signal`` to ``serve``.

    Returns the number of acknowledged sends of this round. A send that fails before the signal
    fails the test; after it, failures are expected (counted in ``ledger.failed``).
    """
    stop_after = rng.randint(*STOP_AFTER_ACKS)
    answered = 0
    stop_scheduled = stopped = False
    handles: list[asyncio.TimerHandle] = []
    bodies = random.Random(rng.getrandbits(64))

    def stop() -> None:
        nonlocal stopped
        stopped = True  # before the signal: a send failing from now on is expected
        serve.send_signal(stop_signal)

    async with Producer(
        "reliability-crash-loop", namesrv_addr=serve.namesrv_addr, retry_times_when_send_failed=0, send_msg_timeout=10.0
    ) as producer:

        async def sender(sender_no: int) -> None:
            nonlocal answered, stop_scheduled
            for n in range(MAX_SENDS_PER_SENDER):
                key = f"r{round_no:03d}-s{sender_no}-{n:05d}"
                body = key.encode() + b"|" + bodies.randbytes(bodies.randint(16, 2000))
                ledger.attempted[key] = Sent(round_no, body)
                try:
                    result = await producer.send(Message.build(TOPIC, body, tags=f"r{round_no}", keys=key))
                except RocketMQError as exc:
                    if not stopped:
                        raise AssertionError(
                            f"seed {ledger.seed} round {round_no}: send {key} failed before the stop: {exc!r}"
                        ) from exc
                    ledger.failed[type(exc).__name__] += 1
                    return
                if result.send_status is SendStatus.SEND_OK:
                    ledger.acked[key] = (result.message_queue.queue_id, result.queue_offset)
                else:
                    ledger.degraded[key] = result.send_status
                answered += 1
                if answered == stop_after and not stop_scheduled:
                    stop_scheduled = True
                    # not synchronisation: the signal lands at a random moment of the broker's
                    # work (mid-put, mid-fsync), not right after an answer went out
                    handles.append(asyncio.get_running_loop().call_later(rng.uniform(0.0, MAX_STOP_DELAY), stop))
                if stopped and not serve.running:
                    return

        try:
            await asyncio.gather(*(sender(i) for i in range(SENDERS)))
        finally:
            for handle in handles:
                handle.cancel()  # only matters when the senders ended before the stop
    assert stopped, f"seed {ledger.seed} round {round_no}: {answered} answers, never reached {stop_after}"
    return answered


async def read_topic(serve: ServeProcess, ledger: Ledger, round_no: int) -> list[QueueRead]:
    """Pull every record of every queue of TOPIC, from its min to its max offset."""
    reads = []
    async with Admin(serve.namesrv_addr) as admin:
        await wait_until(lambda: _topic_ready(admin), timeout=30, what=f"the route of {TOPIC} after restart {round_no}")
        for mq in await admin.topic_queues(TOPIC):
            min_offset, max_offset = await admin.min_offset(mq), await admin.max_offset(mq)
            read = QueueRead(mq.queue_id, min_offset, max_offset, [], set())
            offset = min_offset
            while offset < max_offset:
                raw = await admin.pull_raw(mq, offset, 32)
                where = f"seed {ledger.seed} round {round_no}: queue {mq.queue_id} offset {offset} (min {min_offset}, max {max_offset})"
                assert raw.status is PullStatus.FOUND, (
                    f"{where}: pull answered {raw.status.name}, next {raw.next_begin_offset}"
                )
                try:
                    batch = decode_records(raw.body)
                except ProtocolError as exc:
                    raise AssertionError(f"{where}: the broker served a malformed record: {exc}") from exc
                assert batch, f"{where}: FOUND with no record"
                read.messages += batch
                read.pull_max_offsets.add(raw.max_offset)
                assert raw.next_begin_offset > offset, (
                    f"{where}: next begin offset {raw.next_begin_offset} does not advance"
                )
                offset = raw.next_begin_offset
            reads.append(read)
    return reads


def check_store(ledger: Ledger, reads: list[QueueRead], round_no: int) -> list[str]:
    """Return every way the store disagrees with the ledger (empty = all good)."""
    problems: list[str] = []
    found: dict[str, tuple[int, int]] = {}
    for read in reads:
        offsets = [m.queue_offset for m in read.messages]
        if offsets != list(range(read.min_offset, read.max_offset)):
            dup = sorted(o for o, c in Counter(offsets).items() if c > 1)
            missing = sorted(set(range(read.min_offset, read.max_offset)) - set(offsets))
            problems.append(
                f"queue {read.queue_id}: offsets {read.min_offset}..{read.max_offset} read with repeats {dup[:QUOTE]} gaps {missing[:QUOTE]}"
            )
        if read.pull_max_offsets - {read.max_offset}:
            problems.append(
                f"queue {read.queue_id}: max offset {read.max_offset}, pulls reported {sorted(read.pull_max_offsets)}"
            )
        if read.min_offset != 0:
            problems.append(f"queue {read.queue_id}: min offset {read.min_offset}, expected 0 (nothing is deleted)")
        phys = [m.commit_log_offset for m in read.messages]
        if phys != sorted(set(phys)):
            problems.append(f"queue {read.queue_id}: commit-log offsets not strictly increasing with queue offsets")
        for m in read.messages:
            at = f"queue {read.queue_id} offset {m.queue_offset} (commit log {m.commit_log_offset})"
            key = m.keys or ""
            sent = ledger.attempted.get(key)
            if m.topic != TOPIC or m.queue_id != read.queue_id:
                problems.append(f"{at}: record of {m.topic}/{m.queue_id}")
            if m.body_crc != body_crc(m.body):
                problems.append(f"{at}: body CRC {m.body_crc} does not match the body (key {key!r})")
            if sent is None:
                problems.append(f"{at}: key {key!r} was never sent")
            elif m.body != sent.body:
                problems.append(f"{at}: body of {key} (sent in round {sent.round}) differs from what was sent")
            if key in found:
                problems.append(f"{at}: {key} stored twice (also at queue {found[key][0]} offset {found[key][1]})")
            found.setdefault(key, (read.queue_id, m.queue_offset))
    max_offsets = {read.queue_id: read.max_offset for read in reads}
    for key, (queue_id, offset) in ledger.acked.items():
        where = found.get(key)
        if where is None:
            sent = ledger.attempted[key]
            problems.append(
                f"LOST: {key} acknowledged in round {sent.round} at queue {queue_id} offset {offset} "
                f"(queue max offset now {max_offsets.get(queue_id)}), not in the store"
            )
        elif where != (queue_id, offset):
            problems.append(
                f"MOVED: {key} acknowledged at queue {queue_id} offset {offset}, stored at queue {where[0]} offset {where[1]}"
            )
    ledger.history.append(
        f"round {round_no}: {len(ledger.acked)} acked so far, {sum(max_offsets.values())} stored, "
        f"{len(set(found) - set(ledger.acked))} stored unacknowledged, failed after stop {dict(ledger.failed)}, "
        f"answered other than SEND_OK {dict(Counter(s.name for s in ledger.degraded.values()))}"
    )
    return problems


def assert_store_matches(ledger: Ledger, reads: list[QueueRead], round_no: int, serve: ServeProcess) -> None:
    problems = check_store(ledger, reads, round_no)
    assert not problems, (
        f"seed {ledger.seed} ({SEED_ENV}={ledger.seed} replays), after restart {round_no}: {len(problems)} problems:\n  "
        + "\n  ".join(problems[:QUOTE])
        + "\nhistory:\n  "
        + "\n  ".join(ledger.history)
        + f"\nserve log tail:\n{serve.log_tail()}"
    )


async def crash_loop(
    tmp_path: Path, flush: str, stop_signal: int, rounds: int, after_stop: Callable[[ServeProcess, int], None]
) -> Ledger:
    ledger = Ledger(seed=_seed())
    rng = random.Random(ledger.seed)
    with ServeProcess(tmp_path / "store", tmp_path / "serve.log", extra_args=["--flush", flush]) as serve:
        await create_topic(serve)
        for round_no in range(1, rounds + 1):
            await produce_until_stopped(serve, ledger, round_no, rng, stop_signal)
            await asyncio.to_thread(after_stop, serve, round_no)
            await asyncio.to_thread(serve.start)
            reads = await read_topic(serve, ledger, round_no)
            assert_store_matches(ledger, reads, round_no, serve)
        assert serve.terminate() == 0, f"serve did not stop cleanly:\n{serve.log_tail()}"
    print(f"seed {ledger.seed}, {flush} flush, {signal.Signals(stop_signal).name}:", *ledger.history, sep="\n  ")
    return ledger


def _reap_killed(serve: ServeProcess, round_no: int) -> None:
    status = serve.kill9()
    assert status == -signal.SIGKILL, (
        f"round {round_no}: serve ended with status {status} before the SIGKILL:\n{serve.log_tail()}"
    )


def _reap_terminated(serve: ServeProcess, round_no: int) -> None:
    status = serve.terminate()
    assert status == 0, f"round {round_no}: serve exited with status {status} after SIGTERM:\n{serve.log_tail()}"


@pytest.mark.timeout(max(300, SECONDS_PER_ROUND * _rounds(3)))
async def test_sigkill_loop_sync_flush(tmp_path: Path) -> None:
    rounds = _rounds(3)
    ledger = await crash_loop(tmp_path, "sync", signal.SIGKILL, rounds, _reap_killed)
    assert len(ledger.acked) + len(ledger.degraded) >= rounds * STOP_AFTER_ACKS[0]


@pytest.mark.timeout(max(300, SECONDS_PER_ROUND * _rounds(2)))
async def test_sigterm_loop_async_flush(tmp_path: Path) -> None:
    rounds = _rounds(2)
    ledger = await crash_loop(tmp_path, "async", signal.SIGTERM, rounds, _reap_terminated)
    assert len(ledger.acked) + len(ledger.degraded) >= rounds * STOP_AFTER_ACKS[0]
