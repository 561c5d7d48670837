"""Spark read and write throughput of ``format("rocketmq")`` against Spark's own ``rate`` source.

Everything runs in one SparkSession (``local[2]``, UI off) against ``rocketpipe serve`` in its own
process on 127.0.0.1, in the same run, interleaved over ``--rounds`` rounds after an untimed
warm-up, so the printed ratios compare numbers taken seconds apart:

* **rate** (the peer): ``readStream.format("rate-micro-batch")`` with ``rowsPerBatch`` = N, one
  micro-batch of N rows into the ``noop`` sink — what Spark itself does per row with no I/O;
* **batch read**: ``spark.read.format("rocketmq")`` of the N stored messages into ``noop``;
* **AvailableNow stream**: ``readStream.format("rocketmq")`` with ``Trigger.AvailableNow`` into
  ``noop`` (a fresh checkpoint each round);
* **sink**: ``df.write.format("rocketmq")`` of ``--sink-rows`` rows with a ``--sink-size``-byte
  body (Arrow writer), rows/s.

The two streaming queries also report their micro-batches alone (the sum of
``triggerExecution`` in the query progress), without the query's start and end: for the
rocketmq stream that leaves out Spark's start of the Python streaming-source process (a new
interpreter that imports pyspark, from ``pyspark.zip`` without bytecode, and the connector),
which the rate source does not have. Those rows compare per-batch throughput.

The N messages (``--size`` bytes, 1 KiB by default) are produced once, before the rounds, into a
topic of ``--queues`` queues. Broker options are passed with ``--serve-args`` (e.g. the pull caps
``"--max-transfer-count 1024"``); source options with ``--option k=v`` (repeatable).

Usage: ``python bench/spark_read.py [--messages N] [--rounds R] [--json PATH]``; ``make bench``
runs it after the produce/consume bench. Results go to ``out/bench/spark_read.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from rich.console import Console
from rich.table import Table

from peers import rocketpipe_serve
from rocketpipe import Admin, Message, Producer

TOPIC = "SparkBench"
SINK_TOPIC = "SparkSinkBench"
RATE_BATCHES = "rate, micro-batches only"
STREAM_BATCHES = "rocketmq stream, micro-batches only"


async def _produce(namesrv: str, n: int, size: int, queues: int) -> None:
    async with Admin(namesrv) as admin:
        await admin.create_topic(TOPIC, queue_nums=queues)
        await admin.create_topic(SINK_TOPIC, queue_nums=queues)
    body = (os.urandom(size // 2 + 1).hex().encode())[:size]
    async with Producer("spark-bench", namesrv_addr=namesrv) as producer:
        batch = 64
        pending: list[asyncio.Task[Any]] = []
        for i in range(0, n, batch):
            msgs = [Message.build(TOPIC, body, keys=f"k{j}") for j in range(i, min(n, i + batch))]
            pending.append(asyncio.create_task(producer.send_batch(msgs)))
            if len(pending) >= 8:
                await asyncio.gather(*pending)
                pending.clear()
        await asyncio.gather(*pending)


def _timed(fn: Callable[[], Any]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--messages", type=int, default=200_000, help="messages read per round")
    ap.add_argument("--size", type=int, default=1024, help="body size of the read messages, bytes")
    ap.add_argument("--queues", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sink-rows", type=int, default=100_000)
    ap.add_argument("--sink-size", type=int, default=200)
    ap.add_argument("--serve-args", default="", help="extra `rocketpipe serve` flags, one string")
    ap.add_argument("--option", action="append", default=[], help="source option k=v (repeatable)")
    ap.add_argument("--json", type=Path, default=Path("out/bench/spark_read.json"))
    args = ap.parse_args()
    opts = dict(kv.split("=", 1) for kv in args.option)
    console = Console(highlight=False)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    n = args.messages
    with (
        tempfile.TemporaryDirectory(prefix="rp-spark-bench-") as tmp,
        rocketpipe_serve(Path(tmp), "async", tuple(shlex.split(args.serve_args))) as served,
    ):
        namesrv: str = served.handle
        t = _timed(lambda: asyncio.run(_produce(namesrv, n, args.size, args.queues)))
        console.print(f"produced {n:,} × {args.size} B into {args.queues} queues in {t:.1f} s")
        from pyspark.sql import SparkSession
        from pyspark.sql import functions as F

        spark = (
            SparkSession.builder.master("local[2]")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        ckpt = Path(tmp) / "checkpoints"

        def source(reader: Any) -> Any:
            reader = reader.format("rocketmq").option("nameServer", namesrv).option("topic", TOPIC)
            for k, v in opts.items():
                reader = reader.option(k, v)
            return reader

        batch_secs: dict[str, float] = {}  # the last query's micro-batches, seconds

        def run_stream(key: str, df: Any) -> None:
            q = (
                df.writeStream.format("noop")
                .trigger(availableNow=True)
                .option("checkpointLocation", str(ckpt / f"{key}-{time.monotonic_ns()}"))
                .start()
            )
            q.awaitTermination()
            batch_secs[key] = sum(p["durationMs"].get("triggerExecution", 0) for p in q.recentProgress) / 1000

        def rate() -> None:
            run_stream("rate", spark.readStream.format("rate-micro-batch").option("rowsPerBatch", n).load())

        def batch_read() -> None:
            source(spark.read).load().write.format("noop").mode("overwrite").save()

        def stream_read() -> None:
            run_stream("rmq", source(spark.readStream).load())

        sink_df = (
            spark.range(args.sink_rows, numPartitions=2)
            .select(F.expr(f"repeat('x', {args.sink_size})").cast("binary").alias("body"))
            .cache()
        )
        sink_df.count()

        def sink() -> None:
            sink_df.write.format("rocketmq").option("nameServer", namesrv).option("topic", SINK_TOPIC).mode(
                "append"
            ).save()

        rows = source(spark.read).load().count()
        if rows != n:
            raise SystemExit(f"the source read {rows} rows, {n} were produced")
        scenarios: dict[str, tuple[int, Callable[[], None]]] = {
            "rate (Spark, no I/O)": (n, rate),
            "rocketmq batch read": (n, batch_read),
            "rocketmq AvailableNow stream": (n, stream_read),
            f"rocketmq sink ({args.sink_size} B rows)": (args.sink_rows, sink),
        }
        for _name, (_rows, fn) in scenarios.items():  # warm-up: JIT, Python workers, connections
            fn()
        secs: dict[str, list[float]] = {name: [] for name in scenarios}
        micro: dict[str, list[float]] = {RATE_BATCHES: [], STREAM_BATCHES: []}
        for r in range(args.rounds):
            for name, (_rows, fn) in scenarios.items():
                secs[name].append(_timed(fn))
            micro[RATE_BATCHES].append(batch_secs["rate"])
            micro[STREAM_BATCHES].append(batch_secs["rmq"])
            console.print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.2f}s" for k, v in secs.items()))
        spark.stop()
    rate_key = "rate (Spark, no I/O)"
    table = Table(title=f"Spark local[2], {n:,} × {args.size} B messages, {args.rounds} rounds (median)")
    for col in ("scenario", "rows/s", "× rate [min–max]"):
        table.add_column(col, justify="right" if col != "scenario" else "left")
    result: dict[str, Any] = {"messages": n, "size": args.size, "rounds": args.rounds, "options": opts, "scenarios": {}}
    for name, (rows_n, _fn) in scenarios.items():
        rates = [rows_n / s for s in secs[name]]
        ratios = [rows_n / s / (n / rs) for s, rs in zip(secs[name], secs[rate_key], strict=True)]
        med = statistics.median(rates)
        ratio = (
            ""
            if name == rate_key or name.startswith("rocketmq sink")
            else (f"{statistics.median(ratios):.2f} [{min(ratios):.2f}–{max(ratios):.2f}]")
        )
        table.add_row(name, f"{med:,.0f}", ratio)
        result["scenarios"][name] = {"rows": rows_n, "seconds": secs[name], "rows_per_s": med, "ratios_to_rate": ratios}
    for name in (RATE_BATCHES, STREAM_BATCHES):
        rates = [n / s for s in micro[name]]
        ratios = [r / (n / rs) for r, rs in zip(rates, micro[RATE_BATCHES], strict=True)]
        ratio = "" if name == RATE_BATCHES else f"{statistics.median(ratios):.2f} [{min(ratios):.2f}–{max(ratios):.2f}]"
        table.add_row(name, f"{statistics.median(rates):,.0f}", ratio)
        result["scenarios"][name] = {
            "rows": n,
            "seconds": micro[name],
            "rows_per_s": statistics.median(rates),
            "ratios_to_rate": ratios,
        }
    console.print(table)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2))


if __name__ == "__main__":
    main()
