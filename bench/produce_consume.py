"""Produce and consume throughput of rocketpipe against peers measured in the same run, 1 KiB messages.

The targets, each started fresh on 127.0.0.1 with its data in a temporary directory (see
``bench/peers.py``), all up for the whole run and stopped at its end:

* **rocketpipe**: ``python -m rocketpipe serve`` (broker + name server) in its own process;
* **Apache RocketMQ 5.3.3**: the real name server + broker JVMs (1 GiB heap), driven by the
  *same* rocketpipe Python client and the same scenarios, so the ratio compares brokers;
* **Redis 7 Streams** (Debian ``redis-server``, redis-py): the closest equivalent operations;
* **Java**: Apache RocketMQ 5.3.3 driven by its own Java client 5.3.3 (``bench/java_peer.py``): one
  JVM up for the whole run that runs each scenario when asked, in turn with the others.

The machine is shared and noisy, so the targets are interleaved: each scenario runs on every
target in turn (one busy at a time), in ``--rounds`` rounds on fresh topics; a rate is the
median over the rounds and a ratio the median [min–max] of the per-round ratios, so compared
numbers are always seconds apart. An untimed warm-up round at ``--warmup`` messages comes first
(JIT, page cache, connections).

RocketMQ scenarios (topics created first with 8 queues on both brokers):

* ``send ×1 in flight``: one ``Producer.send`` at a time (round-trip bound; p50/p99 latency);
* ``send ×64 in flight``: concurrent ``Producer.send`` calls pipelined on one connection;
* ``send_batch 32/req ×4``: ``Producer.send_batch`` (SEND_BATCH_MESSAGE), 4 requests in flight;
* ``pull_raw+decode``: ``Admin.pull_raw`` asking 1024 per request over every queue, records
  decoded with ``decode_records``. Both brokers run with their pull caps raised to 1024 messages /
  4 MiB (``maxTransferCountOnMessageInMemory`` / ``maxTransferBytesOnMessageInMemory``; Java's
  defaults of 32 / 256 KiB would cut every pull to 32), as ``XREADGROUP COUNT 1024`` returns 1024;
* ``push consumer``: a ``PushConsumer`` group from the first offset, async listener, from its
  first delivered message until every message is acknowledged (pulls of 32, Java's
  ``pullBatchSize``).

Every result also carries the CPU time of the server processes (``/proc/<pid>/stat``: the
broker + name server, the two JVMs, redis-server) and of the client (this process; the Java
peer's JVM) during the scenario, printed as µs per message.

Redis counterparts: ``XADD`` one call at a time; pipelines of 64 and of 128 ``XADD`` (as many
messages outstanding as the batch scenario); ``XREADGROUP COUNT 1024`` / ``COUNT 32`` + one
``XACK`` per batch. Durability: ``--flush async`` = ASYNC_FLUSH on both brokers and Redis AOF
``appendfsync everysec`` (written every event-loop turn, fsynced once a second); ``--flush sync``
= SYNC_FLUSH and ``appendfsync always``.

Usage: ``python bench/produce_consume.py [--peers apache,redis,java|none] [--messages N] [--rounds R]
[--warmup N] [--size BYTES] [--flush async|sync] [--json PATH]``; ``make bench`` runs the defaults.
A peer that cannot start is shown as "not measured: <reason>"; the run still completes. Results,
per round and medians, go to ``out/bench/produce_consume.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from rich.console import Console
from rich.table import Table

from java_peer import CLIENT_VERSION as JAVA_CLIENT_VERSION
from java_peer import COUNTERPART as JAVA_COUNTERPART
from java_peer import java_target
from peers import (
    APACHE_VERSION,
    TARGETS,
    Result,
    Served,
    Unavailable,
    body,
    one_line,
    process_cpu_s,
    quantiles_ms,
    redis_client_name,
    rocketpipe_at,
    xadd,
    xreadgroup,
)
from rocketpipe import eventloop
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

console = Console(highlight=False, width=None if sys.stdout.isatty() else 170)
TOPICS = ("serial", "pipelined", "batch")  # suffixes of "<prefix>-"


async def create_topics(namesrv: str, prefix: str, timeout: float = 60.0) -> None:
    """Create the ``prefix`` topics (8 queues) and wait until the name server routes them."""
    async with Admin(namesrv) as admin:
        deadline = time.monotonic() + timeout
        while True:  # the broker may not be registered for a moment after start-up
            try:
                for topic in TOPICS:
                    await admin.create_topic(f"{prefix}-{topic}", 8)
                for topic in TOPICS:
                    await admin.topic_queues(f"{prefix}-{topic}")
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.5)


async def send_serial(namesrv: str, topic: str, n: int, size: int) -> Result:
    async with Producer("bench-serial", namesrv_addr=namesrv) as p:
        await p.send(Message.build(topic, body(size, -1)))  # route + connection warm-up
        lat: list[float] = []
        t0 = time.perf_counter()
        for i in range(n):
            s = time.perf_counter()
            await p.send(Message.build(topic, body(size, i)))
            lat.append(time.perf_counter() - s)
        dt = time.perf_counter() - t0
    return Result("", n, dt, *quantiles_ms(lat))


async def send_pipelined(namesrv: str, topic: str, n: int, size: int, in_flight: int = 64) -> Result:
    async with Producer("bench-pipelined", namesrv_addr=namesrv) as p:
        await p.send(Message.build(topic, body(size, -1)))
        sem = asyncio.Semaphore(in_flight)

        async def one(i: int) -> None:
            async with sem:
                await p.send(Message.build(topic, body(size, i)))

        t0 = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(n)))
        dt = time.perf_counter() - t0
    return Result("", n, dt)


async def send_batch(namesrv: str, topic: str, n: int, size: int, per_batch: int = 32, in_flight: int = 4) -> Result:
    async with Producer("bench-batch", namesrv_addr=namesrv) as p:
        await p.send(Message.build(topic, body(size, -1)))
        sem = asyncio.Semaphore(in_flight)

        async def one(start: int) -> None:
            async with sem:
                await p.send_batch(
                    [Message.build(topic, body(size, i)) for i in range(start, min(n, start + per_batch))]
                )

        t0 = time.perf_counter()
        await asyncio.gather(*(one(s) for s in range(0, n, per_batch)))
        dt = time.perf_counter() - t0
    return Result("", n, dt)


async def pull_raw(namesrv: str, topic: str, per_pull: int = 1024) -> Result:
    async with Admin(namesrv) as admin:
        queues = await admin.topic_queues(topic)
        ends = {mq: await admin.max_offset(mq) for mq in queues}
        total = pulls = 0
        t0 = time.perf_counter()
        for mq in queues:
            offset = await admin.min_offset(mq)
            while offset < ends[mq]:
                raw = await admin.pull_raw(mq, offset, min(per_pull, ends[mq] - offset))
                total += len(decode_records(raw.body))
                pulls += 1
                if raw.next_begin_offset <= offset:
                    break
                offset = raw.next_begin_offset
        dt = time.perf_counter() - t0
    return Result("", total, dt, note=f"{total / max(1, pulls):.0f} msgs/pull")


async def push_consumer(namesrv: str, topic: str, expected: int, group: str, timeout: float = 300.0) -> Result:
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

    consumer = PushConsumer(group, namesrv_addr=namesrv, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(listener)
    t0 = time.perf_counter()
    async with consumer:
        await asyncio.wait_for(done.wait(), timeout)
        t_end = time.perf_counter()
    return Result("", seen, t_end - first[0], note=f"1st msg after {first[0] - t0:.2f} s")


@dataclass(frozen=True)
class Scenario:
    """One row: the RocketMQ scenario (any broker, by name server address) and its Redis counterpart."""

    name: str
    messages: int
    rocketmq: Callable[[str, int], Awaitable[Result]]  # (namesrv, size)
    redis_name: str
    redis: Callable[[Any, int], Result]  # (redis client, size)


def plan(n: int, prefix: str) -> list[Scenario]:
    """The scenarios of one round, in run order, on ``prefix-*`` topics / streams / groups."""
    serial, piped, batch = max(200, n // 20), n // 2, f"{prefix}-batch"
    return [
        Scenario(
            "send ×1 in flight",
            serial,
            lambda ns, sz: send_serial(ns, f"{prefix}-serial", serial, sz),
            "XADD ×1",
            lambda r, sz: xadd(r, f"{prefix}-serial", serial, sz, 1),
        ),
        Scenario(
            "send ×64 in flight",
            piped,
            lambda ns, sz: send_pipelined(ns, f"{prefix}-pipelined", piped, sz),
            "XADD ×64",
            lambda r, sz: xadd(r, f"{prefix}-pipelined", piped, sz, 64),
        ),
        Scenario(
            "send_batch 32/req ×4",
            n,
            lambda ns, sz: send_batch(ns, batch, n, sz),
            "XADD ×128",
            lambda r, sz: xadd(r, batch, n, sz, 128),
        ),
        Scenario(
            "pull_raw+decode",
            n,
            lambda ns, sz: pull_raw(ns, batch),
            "XREADGROUP 1024 + XACK",
            lambda r, sz: xreadgroup(r, batch, f"{prefix}-raw", n, 1024),
        ),
        Scenario(
            "push consumer",
            n,
            lambda ns, sz: push_consumer(ns, batch, n, f"{prefix}-push"),
            "XREADGROUP 32 + XACK",
            lambda r, sz: xreadgroup(r, batch, f"{prefix}-push", n, 32),
        ),
    ]


async def run_rounds(handles: dict[str, Served], args: argparse.Namespace) -> dict[str, list[list[Result]]]:
    """A warm-up round, then ``args.rounds`` rounds; per target, per measured round, the results.

    Within a round each scenario runs on every target in turn; a failing scenario is recorded as
    an error and the run goes on. Each result carries the CPU seconds its server processes and
    this process (the client) used during the scenario (connection set-up included).
    """
    out: dict[str, list[list[Result]]] = {t: [] for t in handles}
    rounds = ([("warmup", args.warmup)] if args.warmup > 0 else []) + [
        (f"r{i}", args.messages) for i in range(1, args.rounds + 1)
    ]
    for prefix, n in rounds:
        console.print(f"[dim]round {prefix}: {n:,} messages…[/dim]")
        per_target: dict[str, list[Result]] = {t: [] for t in handles}
        for t, h in handles.items():
            if t != "redis":
                try:
                    await create_topics(h.handle.namesrv if t == "java" else h.handle, prefix)
                except Exception as exc:  # the scenarios will fail and say so
                    console.print(f"[red]{t}: creating topics failed: {one_line(exc)}[/red]")
        for sc in plan(n, prefix):
            for t, h in handles.items():
                server0 = process_cpu_s(h.pids)
                client0 = process_cpu_s(h.client_pids) if h.client_pids else time.process_time()
                try:
                    if t == "redis":
                        r = sc.redis(h.handle, args.size)
                    elif t == "java":
                        r = await asyncio.to_thread(
                            h.handle.run, JAVA_COUNTERPART[sc.name], prefix, sc.messages, args.size
                        )
                    else:
                        r = await sc.rocketmq(h.handle, args.size)
                except Exception as exc:  # one failed scenario must not hide the others
                    r = Result("", error=one_line(exc))
                r.server_cpu_s = process_cpu_s(h.pids) - server0
                r.client_cpu_s = (process_cpu_s(h.client_pids) if h.client_pids else time.process_time()) - client0
                r.scenario = sc.redis_name if t == "redis" else JAVA_COUNTERPART[sc.name] if t == "java" else sc.name
                per_target[t].append(r)
        if prefix != "warmup":
            for t in handles:
                out[t].append(per_target[t])
    return out


def median_result(rounds: list[Result]) -> Result:
    """The median-rate round, with p50 / p99 medians over the rounds that did not fail (else the first error)."""
    ok = [r for r in rounds if r.error is None and r.seconds > 0]
    if not ok:
        return rounds[0]
    mid = sorted(ok, key=lambda r: r.rate)[len(ok) // 2]
    p50 = [r.p50_ms for r in ok if r.p50_ms is not None]
    p99 = [r.p99_ms for r in ok if r.p99_ms is not None]
    server = [r.server_cpu_s for r in ok if r.server_cpu_s is not None]
    client = [r.client_cpu_s for r in ok if r.client_cpu_s is not None]
    return Result(
        mid.scenario,
        mid.messages,
        mid.seconds,
        statistics.median(p50) if p50 else None,
        statistics.median(p99) if p99 else None,
        mid.note,
        server_cpu_s=statistics.median(server) if server else None,
        client_cpu_s=statistics.median(client) if client else None,
    )


def run(
    args: argparse.Namespace, names: list[str], targets: dict[str, Callable[[Path, str], Any]]
) -> dict[str, dict[str, Any]]:
    """Start the targets (each in its own temporary directory), run the rounds, stop everything."""
    runs: dict[str, dict[str, Any]] = {}
    with contextlib.ExitStack() as stack:
        handles: dict[str, Served] = {}
        for t in names:
            t0 = time.monotonic()
            try:
                tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix=f"rocketpipe-bench-{t}-")))
                handles[t] = stack.enter_context(targets[t](tmp, args.flush))
            except Exception as exc:  # Unavailable, or anything else: reported, never hidden
                runs[t] = {
                    "status": "not measured",
                    "reason": str(exc) if isinstance(exc, Unavailable) else one_line(exc),
                }
                console.print(f"[red]{t}: not measured: {runs[t]['reason']}[/red]")
                continue
            runs[t] = {"status": "measured", "startup_s": time.monotonic() - t0}
            where = f" (name server {handles[t].handle})" if isinstance(handles[t].handle, str) else ""
            console.print(f"[dim]{t}: started in {runs[t]['startup_s']:.1f} s{where}[/dim]")
        if "redis" in handles:
            runs["redis"]["client"] = redis_client_name()
        for t, rounds in eventloop.run(run_rounds(handles, args)).items():
            runs[t]["rounds"] = rounds
            runs[t]["results"] = (
                [median_result([rnd[i] for rnd in rounds]) for i in range(len(rounds[0]))] if rounds else []
            )
    return runs


def cell(r: Result | None, size: int) -> str:
    if r is None:
        return "-"
    if r.error:
        return f"failed: {r.error}"
    return f"{r.rate:,.0f} ({r.rate * size / 1e6:.1f} MB/s)"


def cpu(r: Result | None, which: str) -> str:
    us = None if r is None else r.cpu_us(which)
    return "-" if us is None else f"{us:.1f}"


def latency(r: Result | None) -> str:
    return "-" if r is None or r.p50_ms is None or r.p99_ms is None or r.error else f"{r.p50_ms:.2f} / {r.p99_ms:.2f}"


def comparison(
    runs: dict[str, dict[str, Any]], peer: str, args: argparse.Namespace
) -> tuple[Table, dict[str, dict[str, Any]]]:
    """rocketpipe vs ``peer`` per scenario: median rates, median [min–max] of the per-round ratios, latencies, notes."""
    run = runs[peer]
    name = {
        "apache": f"Apache {APACHE_VERSION}",
        "redis": "Redis",
        "java": f"Java client + Apache {APACHE_VERSION}",
    }.get(peer, f"rocketpipe@{args.baseline}")
    if peer == "java":
        title = (
            f"rocketpipe (Python client + broker) vs Apache RocketMQ {APACHE_VERSION} driven by its own Java client "
            f"{JAVA_CLIENT_VERSION} (one JVM for the whole run, its scenarios interleaved with the others')"
        )
    elif peer == "baseline":
        title = f"Same Python client, rocketpipe serve now vs at {args.baseline} (before/after, same run)"
    elif peer == "apache":
        title = f"Same Python client, two brokers ({'ASYNC' if args.flush == 'async' else 'SYNC'}_FLUSH): rocketpipe serve vs Apache RocketMQ {APACHE_VERSION}"
    else:
        title = (
            f"rocketpipe (client + broker) vs Redis Streams ({run.get('client', 'redis-py')}, "
            f"AOF {'everysec' if args.flush == 'async' else 'always'}, no RDB)"
        )
    missing = f"{name} not measured: {run['reason']}" if run["status"] != "measured" else None
    short = name.split()[0]
    t = Table(title=title, title_justify="left", caption=missing, caption_justify="left")
    cols = [
        "scenario",
        "rocketpipe msg/s",
        *([f"{name} counterpart"] if peer in ("redis", "java") else []),
        f"{name} msg/s",
        f"rocketpipe/{short} [min–max]",
        "p50/p99 ms rp",
        f"p50/p99 ms {short}",
        "server µs/msg rp",
        f"server µs/msg {short}",
        "client µs/msg rp",
        *([f"client µs/msg {short}"] if peer == "java" else []),
        "notes (rp | peer)",
    ]
    for col in cols:
        t.add_column(col, justify="right" if "msg/s" in col or "ms" in col or "[" in col else "left")
    mine = {r.scenario: r for r in runs["rocketpipe"].get("results", [])}
    theirs = {r.scenario: r for r in run.get("results", [])}
    ratios: dict[str, dict[str, Any]] = {}
    for i, sc in enumerate(plan(args.messages, "bench")):
        key = sc.redis_name if peer == "redis" else JAVA_COUNTERPART[sc.name] if peer == "java" else sc.name
        a, b = mine.get(sc.name), theirs.get(key)
        pairs = zip(
            [rnd[i] for rnd in runs["rocketpipe"].get("rounds", [])],
            [rnd[i] for rnd in run.get("rounds", [])],
            strict=False,
        )
        per_round = [x.rate / y.rate for x, y in pairs if x.rate > 0 and y.rate > 0]
        med = statistics.median(per_round) if per_round else None
        ratios[sc.name] = {"peer_scenario": key, "median": med, "rounds": per_round}
        shown = (
            "-"
            if med is None
            else f"{med:.2f}" + (f" [{min(per_round):.2f}–{max(per_round):.2f}]" if len(per_round) > 1 else "")
        )
        t.add_row(
            sc.name,
            cell(a, args.size),
            *([key] if peer in ("redis", "java") else []),
            "not measured" if missing else cell(b, args.size),
            shown,
            latency(a),
            latency(b),
            cpu(a, "server"),
            cpu(b, "server"),
            cpu(a, "client"),
            *([cpu(b, "client")] if peer == "java" else []),
            " | ".join(r.note or "" for r in (a, b) if r and r.note),
        )
    return t, ratios


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--peers",
        default="apache,redis,java",
        help="comma-separated peers among apache,redis,java; 'none' for rocketpipe only",
    )
    ap.add_argument(
        "--messages", type=int, default=50_000, help="messages of the batch/consume scenarios (others scale from it)"
    )
    ap.add_argument(
        "--rounds", type=int, default=3, help="measured rounds, interleaved across targets (medians reported)"
    )
    ap.add_argument("--warmup", type=int, default=20_000, help="messages of the untimed warm-up round (0: none)")
    ap.add_argument("--size", type=int, default=1024, help="body size in bytes")
    ap.add_argument("--flush", choices=("async", "sync"), default="async")
    ap.add_argument(
        "--baseline", metavar="REV", help="also run `rocketpipe serve` as of git revision REV (peer 'baseline')"
    )
    ap.add_argument("--json", type=Path, default=Path("out/bench/produce_consume.json"))
    args = ap.parse_args()
    peers = [] if args.peers.strip() == "none" else [p.strip() for p in args.peers.split(",") if p.strip()]
    targets: dict[str, Any] = {**TARGETS, "java": java_target}
    if args.baseline:
        targets["baseline"] = rocketpipe_at(args.baseline)
        peers.append("baseline")
    if unknown := [p for p in peers if p not in targets or p == "rocketpipe"]:
        ap.error(f"unknown peers {unknown}; choose among apache,redis,java or none")
    if args.rounds < 1 or args.messages < 1:
        ap.error("--rounds and --messages must be >= 1")

    load_start = os.getloadavg()
    runs = run(args, ["rocketpipe", *peers], targets)
    load_end = os.getloadavg()
    sc = plan(args.messages, "bench")
    console.print(
        f"{args.size} B bodies, {args.messages:,} messages (send ×1: {sc[0].messages:,}, ×64: {sc[1].messages:,}), {args.rounds} interleaved "
        f"rounds after a {args.warmup:,}-message warm-up; {os.cpu_count()} CPUs, load average {load_start[0]:.2f} at start / "
        f"{load_end[0]:.2f} at end; one target busy at a time, clients in this process on {eventloop.loop_factory().__module__.split('.')[0]}"
    )
    if runs["rocketpipe"]["status"] != "measured":
        console.print(f"[red]rocketpipe not measured: {runs['rocketpipe']['reason']}[/red]")
    ratios: dict[str, dict[str, dict[str, Any]]] = {}
    for peer in peers:
        table, ratios[peer] = comparison(runs, peer, args)
        console.print(table)
    if not peers:
        table = Table(title="rocketpipe serve, no peers", title_justify="left")
        for col in ("scenario", "msg/s", "p50/p99 ms", "broker µs/msg", "client µs/msg", "notes"):
            table.add_column(col)
        for r in runs["rocketpipe"].get("results", []):
            table.add_row(r.scenario, cell(r, args.size), latency(r), cpu(r, "server"), cpu(r, "client"), r.note or "")
        console.print(table)

    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_bytes(
        orjson.dumps(
            {
                "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "size": args.size,
                "messages": args.messages,
                "rounds": args.rounds,
                "warmup": args.warmup,
                "flush": args.flush,
                "cpus": os.cpu_count(),
                "loadavg_start": load_start,
                "loadavg_end": load_end,
                "apache_version": APACHE_VERSION,
                "targets": {
                    t: {
                        **r,
                        "results": [x.to_json() for x in r.get("results", [])],
                        "rounds": [[x.to_json() for x in rnd] for rnd in r.get("rounds", [])],
                    }
                    if r["status"] == "measured"
                    else r
                    for t, r in runs.items()
                },
                "ratios": ratios,
            },
            option=orjson.OPT_INDENT_2,
        )
    )
    console.print(f"written {args.json}")
    return 0 if runs["rocketpipe"]["status"] == "measured" else 1


if __name__ == "__main__":
    sys.exit(main())
