"""Produce and consume throughput of rocketpipe with 1 KiB messages (a baseline, no targets yet).

The broker and name server run in a separate process (``python -m rocketpipe serve`` on free
ports, its own store in a temporary directory), the clients in this one, as with a real
deployment on one machine. Scenarios:

* ``send, 1 in flight``: one ``Producer.send`` at a time (round-trip bound; p50/p99 latency);
* ``send, 64 in flight``: concurrent ``Producer.send`` calls pipelined on one connection;
* ``send_batch 32/request, 4 in flight``: ``Producer.send_batch`` (SEND_BATCH_MESSAGE);
* ``pull_raw 1024/request + decode``: ``Admin.pull_raw`` over every queue, records decoded with
  ``rocketpipe.protocol.message.decode_records`` (what the Spark source does, minus Arrow);
* ``push consumer``: a ``PushConsumer`` group from the first offset, async listener, until every
  message is acknowledged.

Peers (Redis, NATS, RabbitMQ, Java RocketMQ) are not installed here; their figures from
``/work/shared/reference/performance-baseline.md`` are printed for context, labelled as not
measured in this run.

Usage: ``python bench/produce_consume.py [--messages N] [--size BYTES] [--flush async|sync] [--json PATH]``
(``make bench`` runs it with the defaults).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import queue
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import orjson
from rich.console import Console
from rich.table import Table

from rocketpipe.client import (
    Admin,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
)
from rocketpipe.protocol.message import decode_records

console = Console(highlight=False)


@dataclass(slots=True)
class Result:
    """One scenario's numbers."""

    scenario: str
    messages: int
    seconds: float
    p50_ms: float | None = None
    p99_ms: float | None = None

    @property
    def rate(self) -> float:
        return self.messages / self.seconds if self.seconds > 0 else 0.0


class Server:
    """``python -m rocketpipe serve`` on free ports, stopped with SIGTERM."""

    def __init__(self, data_dir: Path, flush: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rocketpipe", "serve", "--port", "0", "--namesrv-port", "0", "--data-dir", str(data_dir), "--flush", flush],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        out = ""
        deadline = time.monotonic() + 60
        while "ready" not in out:
            try:
                out += self.lines.get(timeout=max(0.1, deadline - time.monotonic())) + "\n"
            except queue.Empty:
                self.stop()
                raise RuntimeError(f"rocketpipe serve did not start:\n{out}") from None
        m = re.search(r"name server listening on (\S+)", out)
        assert m, out
        self.namesrv = m.group(1)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def _body(size: int, i: int) -> bytes:
    head = f"{i:012d}".encode()
    return head + b"x" * max(0, size - len(head))


async def bench_send_serial(namesrv: str, topic: str, n: int, size: int) -> Result:
    async with Producer("bench-serial", namesrv_addr=namesrv) as p:
        await p.send(Message.build(topic, _body(size, -1)))  # route + connection warm-up
        lat: list[float] = []
        t0 = time.perf_counter()
        for i in range(n):
            s = time.perf_counter()
            await p.send(Message.build(topic, _body(size, i)))
            lat.append(time.perf_counter() - s)
        dt = time.perf_counter() - t0
    q = statistics.quantiles(lat, n=100)
    return Result("send ×1 in flight", n, dt, p50_ms=q[49] * 1e3, p99_ms=q[98] * 1e3)


async def bench_send_pipelined(namesrv: str, topic: str, n: int, size: int, in_flight: int = 64) -> Result:
    async with Producer("bench-pipelined", namesrv_addr=namesrv) as p:
        await p.send(Message.build(topic, _body(size, -1)))
        sem = asyncio.Semaphore(in_flight)

        async def one(i: int) -> None:
            async with sem:
                await p.send(Message.build(topic, _body(size, i)))

        t0 = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(n)))
        dt = time.perf_counter() - t0
    return Result(f"send ×{in_flight} in flight", n, dt)


async def bench_send_batch(namesrv: str, topic: str, n: int, size: int, per_batch: int = 32, in_flight: int = 4) -> Result:
    async with Producer("bench-batch", namesrv_addr=namesrv) as p:
        await p.send(Message.build(topic, _body(size, -1)))
        sem = asyncio.Semaphore(in_flight)

        async def one(start: int) -> None:
            async with sem:
                msgs = [Message.build(topic, _body(size, i)) for i in range(start, min(n, start + per_batch))]
                await p.send_batch(msgs)

        t0 = time.perf_counter()
        await asyncio.gather(*(one(s) for s in range(0, n, per_batch)))
        dt = time.perf_counter() - t0
    return Result(f"send_batch {per_batch}/req ×{in_flight}", n, dt)


async def bench_pull_raw(namesrv: str, topic: str, per_pull: int = 1024) -> Result:
    async with Admin(namesrv) as admin:
        queues = await admin.topic_queues(topic)
        ends = {mq: await admin.max_offset(mq) for mq in queues}
        total = 0
        t0 = time.perf_counter()
        for mq in queues:
            offset = await admin.min_offset(mq)
            while offset < ends[mq]:
                raw = await admin.pull_raw(mq, offset, min(per_pull, ends[mq] - offset))
                total += len(decode_records(raw.body))
                if raw.next_begin_offset <= offset:
                    break
                offset = raw.next_begin_offset
        dt = time.perf_counter() - t0
    return Result(f"pull_raw {per_pull}/req+decode", total, dt)


async def bench_push_consumer(namesrv: str, topic: str, expected: int, timeout: float = 300.0) -> Result:
    seen = 0
    done = asyncio.Event()
    first: list[float] = []

    async def listener(msgs: list[MessageExt], context: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        nonlocal seen
        if not first:
            first.append(time.perf_counter())
        seen += len(msgs)
        if seen >= expected:
            done.set()
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = PushConsumer("bench-push", namesrv_addr=namesrv, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(listener)
    t0 = time.perf_counter()
    async with consumer:
        await asyncio.wait_for(done.wait(), timeout)
        dt = time.perf_counter() - t0
    return Result("push consumer", seen, dt)


#: (system / scenario, figure, where) — from the project's performance notes
#: (/work/shared/reference/performance-baseline.md); none of these is measured by this script.
REFERENCE = [
    ("Redis XADD pipelined ×100", "142 k msg/s", "same VM kind, 100 B (§6)"),
    ("NATS JetStream publish_async ×100", "41.8 k msg/s", "same VM kind (§6)"),
    ("RabbitMQ publish+confirm ×100", "6.1 k msg/s", "same VM kind (§6)"),
    ("Redis XREADGROUP ×100 + XACK", "193 k msg/s", "same VM kind (§6)"),
    ("Java RocketMQ, 2 vCPU, sync repl.", "~2 k TPS", "published (§7)"),
    ("Java RocketMQ, 1 thread, 1 KiB", "4.5 k TPS", "published, 48-core (§7)"),
    ("goal: send ×64-128, async flush", "25 k / 50 k", "floor / target (§8)"),
    ("goal: batch 32/req, 1 KiB", "80 / 150 MB/s", "floor / target (§8)"),
    ("goal: pull consume 32/pull", "50 k / 150 k", "floor / target (§8)"),
]


async def run(args: argparse.Namespace, namesrv: str) -> list[Result]:
    n = args.messages
    results = [
        await bench_send_serial(namesrv, "bench-serial", max(200, n // 20), args.size),
        await bench_send_pipelined(namesrv, "bench-pipelined", n // 2, args.size),
        await bench_send_batch(namesrv, "bench-batch", n, args.size),
    ]
    results.append(await bench_pull_raw(namesrv, "bench-batch"))
    results.append(await bench_push_consumer(namesrv, "bench-batch", n))
    return results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--messages", type=int, default=50_000, help="messages for the batch scenario (others scale from it)")
    ap.add_argument("--size", type=int, default=1024, help="body size in bytes")
    ap.add_argument("--flush", choices=("async", "sync"), default="async")
    ap.add_argument("--json", type=Path, default=Path("out/bench/produce_consume.json"))
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="rocketpipe-bench-") as tmp:
        server = Server(Path(tmp) / "store", args.flush)
        try:
            results = asyncio.run(run(args, server.namesrv))
        finally:
            server.stop()

    table = Table(title=f"rocketpipe, measured in this run: {args.size} B bodies, {args.flush} flush, "
                  f"broker in its own process, {os.cpu_count()} CPUs", title_justify="left")
    for col in ("scenario", "msgs", "s", "msg/s", "MB/s", "p50 ms", "p99 ms"):
        table.add_column(col, justify="left" if col == "scenario" else "right", no_wrap=True)
    for r in results:
        table.add_row(r.scenario, f"{r.messages:,}", f"{r.seconds:.2f}", f"{r.rate:,.0f}", f"{r.rate * args.size / 1e6:.1f}",
                      "-" if r.p50_ms is None else f"{r.p50_ms:.2f}", "-" if r.p99_ms is None else f"{r.p99_ms:.2f}")
    console.print(table)
    ref = Table(title="Reference figures, NOT measured in this run (performance-baseline.md)", title_justify="left")
    ref.add_column("system / scenario")
    ref.add_column("figure", justify="right")
    ref.add_column("source")
    for row in REFERENCE:
        ref.add_row(*row)
    console.print(ref)

    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_bytes(orjson.dumps({
        "size": args.size, "flush": args.flush,
        "results": [{"scenario": r.scenario, "messages": r.messages, "seconds": r.seconds, "msg_per_s": r.rate,
                     "p50_ms": r.p50_ms, "p99_ms": r.p99_ms} for r in results],
    }, option=orjson.OPT_INDENT_2))
    console.print(f"written {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
