"""Throughput of a Spark batch read of format("rocketmq") from the embedded broker.

Not a test (pytest does not collect it). Run::

    PYSPARK_PYTHON=.venv/bin/python .venv/bin/python tests/spark/bench_spark_read.py [N] [--raise-caps] \
        [--variant k=v[,k=v]]...

Produces N (default 200 000) 1 KiB messages into 4 queues, then reads them with
``spark.read.format("rocketmq")`` into the ``noop`` sink on ``local[2]``: one warm-up and three
timed runs per variant (interleaved, so load changes hit every variant alike); prints the median
rows/s of each variant (a variant is a set of source options, e.g. ``pullConcurrency=1``). ``--raise-caps`` lifts the store's per-pull caps
(32 messages / 256 KiB, like Java's ``maxTransferCountOnMessageInMemory``) to 1024 / 4 MiB to
show the connector's own ceiling.
"""

from __future__ import annotations

import dataclasses
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from spark_cluster import ThreadedCluster

from rocketpipe.client import SyncAdmin, SyncProducer
from rocketpipe.protocol.message import Message


def main() -> None:
    argv = sys.argv[1:]
    variants = [
        dict(kv.split("=", 1) for kv in argv[i + 1].split(",") if kv) for i, a in enumerate(argv) if a == "--variant"
    ] or [{}]
    args = [a for i, a in enumerate(argv) if not a.startswith("--") and (i == 0 or argv[i - 1] != "--variant")]
    n = int(args[0]) if args else 200_000
    tc = ThreadedCluster(Path(tempfile.mkdtemp(prefix="rp-bench-")))
    c = tc.start()
    if "--raise-caps" in sys.argv:
        store = c.broker.store
        store.config = dataclasses.replace(
            store.config, max_transfer_count_on_message_in_memory=1024, max_transfer_bytes_on_message_in_memory=4 << 20
        )
    admin = SyncAdmin(namesrv_addr=c.namesrv_addr)
    admin.create_topic("Bench", 4)
    admin.close()
    producer = SyncProducer("bench", namesrv_addr=c.namesrv_addr)
    producer.start()
    body = os.urandom(512).hex().encode()  # 1 KiB, incompressible enough
    t = time.perf_counter()
    for i in range(0, n, 200):
        producer.send_batch([Message.build("Bench", body, tags="t", keys=f"k{j}") for j in range(i, min(n, i + 200))])
    print(f"produced {n} x 1 KiB in {time.perf_counter() - t:.1f}s", flush=True)
    producer.close()

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")

    def frame(opts: dict[str, str]):
        reader = spark.read.format("rocketmq").option("nameServer", c.namesrv_addr).option("topic", "Bench")
        for k, v in opts.items():
            reader = reader.option(k, v)
        return reader.load()

    assert frame({}).count() == n
    frame({}).write.format("noop").mode("overwrite").save()  # warm-up
    times: dict[int, list[float]] = {i: [] for i in range(len(variants))}
    for _ in range(3):
        for i, opts in enumerate(variants):
            t = time.perf_counter()
            frame(opts).write.format("noop").mode("overwrite").save()
            dt = time.perf_counter() - t
            times[i].append(dt)
            print(f"{opts or 'defaults'}: {dt:.2f}s = {n / dt:,.0f} rows/s", flush=True)
    for i, opts in enumerate(variants):
        med = statistics.median(times[i])
        print(f"median {opts or 'defaults'}: {med:.2f}s = {n / med:,.0f} rows/s")
    spark.stop()
    tc.close()


if __name__ == "__main__":
    main()
