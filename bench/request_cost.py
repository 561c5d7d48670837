"""What one request costs the broker's Python, without the kernel, the peer or the host's noise.

An embedded broker (in this process) receives real requests from a real :class:`Producer` and
:class:`Admin` over loopback; one of each kind is captured as it arrived (its frame bytes), then
replayed into a fresh server :class:`~rocketpipe.transport.Connection` whose transport only counts
writes: the same ``data_received`` → decode → handler → store → response encode path as a socket
read, minus the system calls. Per request kind it prints:

* **bytecodes** and **Python calls** per request, counted with ``sys.settrace`` over
  ``--traced`` requests. These are deterministic (the same code gives the same count on any
  host, loaded or not), so a change to the path shows up even when timings cannot;
* **µs per request**: the thread's CPU time over ``--requests`` replays, best of ``--rounds``
  (warm caches: the real broker pays about 3× this in user time, see the README);
* with ``--evict-kib K``, also **µs with cold caches**: a tenth as many replays, each timed
  alone right after K KiB were copied (2 K KiB touched), best of ``--rounds``. With K = 4096
  (``make bench``) that evicts the L1 and L2 caches (64 KiB and 2 MiB per core here) but not
  the 32 MiB L3: what a real broker's core finds after the kernel, the event loop and the
  client ran on it, which do not sweep the L3 either. Counted in a live broker
  thread serving a real producer over loopback (2026-11-29), a single send ran 2,664 bytecodes,
  ~260 of them the schedule-delivery timers firing more often under the tracer's slowdown,
  against the replay's 2,323: about 80 more, so the 3× gap between the warm replay and the real
  broker is the caches and the kernel, not Python work the replay leaves out.

Kinds: ``send`` (SEND_MESSAGE_V2, one 1 KiB message), ``send_batch`` (SEND_BATCH_MESSAGE, 32 ×
1 KiB), ``pull`` (PULL_MESSAGE of 32 stored messages, at a fixed offset). Replays store real
messages (the store grows by ``--requests`` records per kind and round). A pull is answered in
a task, so its replay awaits it, and whatever the event loop runs meanwhile (the broker's
timers: schedule delivery, expiry) is counted with it: its counts move by a few per cent.

Usage: ``python bench/request_cost.py [--requests N] [--rounds R] [--traced T] [--kinds send,pull]
[--by-function K] [--evict-kib K]`` (``--by-function``: also each kind's K functions with the
most bytecodes).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import FrameType
from typing import Any

from rich.console import Console
from rich.table import Table

from rocketpipe import Admin, Message, MessageQueue, Producer, eventloop
from rocketpipe.protocol.codes import RequestCode
from rocketpipe.protocol.frame import FrameDecoder
from rocketpipe.testing.cluster import create_topic_on_brokers, local_cluster
from rocketpipe.transport import Connection

TOPIC = "RequestCost"
KINDS = {
    "send": RequestCode.SEND_MESSAGE_V2,
    "send_batch": RequestCode.SEND_BATCH_MESSAGE,
    "pull": RequestCode.PULL_MESSAGE,
}


class CountingTransport:
    """The transport side a server connection touches, writing nothing."""

    def __init__(self) -> None:
        self.writes = 0

    def write(self, data: Any) -> None:
        self.writes += 1

    def is_closing(self) -> bool:
        return False

    def get_write_buffer_size(self) -> int:
        return 0

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return (16 * 1024, 64 * 1024)

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 40000) if name in ("peername", "sockname") else default

    def pause_reading(self) -> None: ...

    def resume_reading(self) -> None: ...

    def close(self) -> None: ...

    def abort(self) -> None: ...


def capture(codes: set[int]) -> tuple[dict[int, bytes], Callable[[], None]]:
    """Record the first whole frame of each of ``codes`` that server connections receive;
    returns the frames by code and a function that stops recording."""
    frames: dict[int, bytes] = {}
    original = Connection.data_received

    def data_received(self: Connection, data: bytes) -> None:
        if self._pending_bytes is not None:  # a server connection
            decoder = FrameDecoder()
            decoder.feed(data)
            start = 0
            for cmd in decoder:
                end = len(data) - decoder.buffered
                frame = bytes(data[start:end])
                start = end
                if cmd.code in codes and cmd.code not in frames:
                    frames[cmd.code] = frame
        original(self, data)

    Connection.data_received = data_received  # type: ignore[method-assign]

    def stop() -> None:
        Connection.data_received = original  # type: ignore[method-assign]

    return frames, stop


async def count_bytecodes(
    fn: Callable[[], Awaitable[None]], times: int, by_function: Counter[str]
) -> tuple[float, float]:
    """Bytecodes and Python calls per call of ``fn`` (``sys.settrace`` with opcode events);
    adds each function's own bytecodes to ``by_function``."""
    counts = [0, 0]

    def tracer(frame: FrameType, event: str, arg: object) -> Any:
        frame.f_trace_opcodes = True
        if event == "opcode":
            counts[0] += 1
            code = frame.f_code
            by_function[f"{code.co_qualname} ({Path(code.co_filename).name}:{code.co_firstlineno})"] += 1
        elif event == "call":
            counts[1] += 1
        return tracer

    sys.settrace(tracer)
    try:
        for _ in range(times):
            await fn()
    finally:
        sys.settrace(None)
    return counts[0] / times, counts[1] / times


async def cpu_us(fn: Callable[[], Awaitable[None]], times: int, rounds: int) -> float:
    """Best of ``rounds``: the thread's CPU µs per call of ``fn``."""
    best = float("inf")
    for _ in range(rounds):
        t0 = time.thread_time()
        for _ in range(times):
            await fn()
        best = min(best, (time.thread_time() - t0) / times * 1e6)
    return best


def cold_requests(requests: int) -> int:
    """Replays per cold round: a tenth of ``--requests`` (each one follows a multi-MiB copy)."""
    return max(1, requests // 10)


async def cold_cpu_us(fn: Callable[[], Awaitable[None]], kib: int, times: int, rounds: int) -> float:
    """Best of ``rounds``: the thread's CPU µs per call of ``fn``, each call made right after ``kib``
    KiB were copied (2 × ``kib`` KiB touched). Only the calls are timed, one clock pair each; the
    cost of a clock pair after the same copy is subtracted."""
    src, dst = bytearray(kib * 1024), bytearray(kib * 1024)
    clock = time.thread_time
    best = float("inf")
    for _ in range(rounds):
        spent = idle = 0.0
        for _ in range(times):
            dst[:] = src
            t0 = clock()
            await fn()
            spent += clock() - t0
            dst[:] = src
            t0 = clock()
            idle += clock() - t0
        best = min(best, (spent - idle) / times * 1e6)
    return best


Row = tuple[str, float, float | None, float, float, int]


async def measure(kinds: list[str], args: argparse.Namespace) -> list[Row]:
    codes = {int(KINDS[k]) for k in kinds}
    frames, stop = capture(codes)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        async with local_cluster(Path(tmp)) as cluster:
            await create_topic_on_brokers(cluster.namesrv_addr, TOPIC, 8, cluster.broker_addrs)
            body = b"x" * 1024
            async with Producer("request-cost", namesrv_addr=cluster.namesrv_addr) as producer:
                await producer.send(Message.build(TOPIC, body))
                result = await producer.send_batch([Message.build(TOPIC, body) for _ in range(32)])
            async with Admin(cluster.namesrv_addr) as admin:
                mq = MessageQueue(TOPIC, cluster.broker.config.broker_name, result.message_queue.queue_id)
                await admin.pull_raw(mq, 0, 32)
            stop()
            missing = [k for k in kinds if KINDS[k] not in frames]
            if missing:
                raise SystemExit(f"no request captured for {missing}")
            for kind in kinds:
                frame = frames[KINDS[kind]]
                conn = cluster.broker.server._new_connection()
                transport = CountingTransport()
                conn.connection_made(transport)  # type: ignore[arg-type]

                async def replay(conn: Connection = conn, frame: bytes = frame) -> None:
                    conn.data_received(frame)
                    for task in list(conn._handler_tasks):  # not answered inline (a pull): it runs now
                        await task

                for _ in range(min(2000, args.requests)):  # warm-up
                    await replay()
                by_function: Counter[str] = Counter()
                bytecodes, calls = await count_bytecodes(replay, args.traced, by_function)
                if args.by_function:
                    print(f"{kind}: bytecodes per request by function (own, not callees)")
                    for name, n in by_function.most_common(args.by_function):
                        print(f"  {n / args.traced:7.1f}  {name}")
                us = await cpu_us(replay, args.requests, args.rounds)
                cold = None
                if args.evict_kib:
                    cold = await cold_cpu_us(replay, args.evict_kib, cold_requests(args.requests), args.rounds)
                rows.append((kind, us, cold, bytecodes, calls, transport.writes))
                conn.close_now("replay done", abort=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=20_000, help="replays per timed round")
    ap.add_argument("--rounds", type=int, default=5, help="timed rounds (the best is printed)")
    ap.add_argument("--traced", type=int, default=200, help="replays counted with sys.settrace")
    ap.add_argument("--by-function", type=int, default=0, metavar="K", help="also print each kind's top K functions")
    ap.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated among {','.join(KINDS)}")
    ap.add_argument(
        "--evict-kib",
        type=int,
        default=0,
        metavar="K",
        help="also time with K KiB copied between requests (cold caches)",
    )
    args = ap.parse_args()
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    if unknown := [k for k in kinds if k not in KINDS]:
        ap.error(f"unknown kinds {unknown}")
    if min(args.requests, args.rounds, args.traced) < 1:
        ap.error("--requests, --rounds and --traced must be >= 1")
    if args.evict_kib < 0:
        ap.error("--evict-kib must be >= 0")
    rows = eventloop.run(measure(kinds, args))
    table = Table(title="broker cost of one request, replayed (no system calls)", title_justify="left")
    cols = ["request", "CPU µs (best)", "bytecodes", "Python calls", "responses"]
    if args.evict_kib:
        cols.insert(2, f"CPU µs, cold ({args.evict_kib} KiB)")
    for col in cols:
        table.add_column(col)
    for kind, us, cold, bytecodes, calls, writes in rows:
        cells = [kind, f"{us:.1f}", f"{bytecodes:,.0f}", f"{calls:,.0f}", f"{writes:,}"]
        if cold is not None:
            cells.insert(2, f"{cold:.1f}")
        table.add_row(*cells)
    Console().print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
