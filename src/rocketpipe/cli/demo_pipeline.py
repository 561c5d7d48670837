"""The demo's Spark side: session, the two streaming queries, and the result tables (L4, cli).

Two Structured Streaming queries read topic ``flights`` with ``format("rocketmq")``, both with
``Trigger.AvailableNow`` and ``maxOffsetsPerTrigger``:

* **delay stats**: parse the JSON body, event time = scheduled departure (local New York wall
  time, from year/month/day/sched_dep_time), ``withWatermark(event_time, 7 days)``, group by
  ``window(event_time, "1 day")``, carrier and origin, and compute flights, departed, cancelled,
  average/max departure delay, average arrival delay and the share of departures delayed more
  than 15 minutes. Output mode *update* through ``foreachBatch``: each micro-batch writes the
  windows it changed to ``checkpoints/delay_stats_updates/batch_id=N``; after the query the
  last version of every window is written to ``delay_stats`` (Parquet). Unlike *append* mode,
  this also emits the last windows, which the watermark never closes when the stream stops.
* **msg ids**: every row's ``msg_id``, ``queue_id``, ``queue_offset`` to ``spark_msg_ids``
  (Parquet file sink, exactly-once through its ``_spark_metadata`` log), for reconciliation.

Spark runs ``local[2]`` with the UI off, the JVM on its C1 compiler only
(``-XX:TieredStopAtLevel=1``) and no empty micro-batches; its JVM logs (a log4j2 file appender) and the stderr of
the JVM and its Python workers go to ``spark.log`` in the output directory, and
``PYSPARK_PYTHON`` and ``PYSPARK_DRIVER_PYTHON`` are this interpreter, through a launcher that has Spark's Python processes
import pyspark compiled from site-packages rather than from ``pyspark.zip``
(:mod:`~rocketpipe.cli.spark_python`).

Imports: ``pyspark`` (the ``spark`` extra) lazily; the Spark source is used only through
``format("rocketmq")``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from . import spark_python
from .flights import FLIGHT_SCHEMA_DDL

#: Watermark delay of the delay-stats query.
WATERMARK_DELAY: Final = "7 days"
#: Window length of the delay-stats query.
WINDOW: Final = "1 day"
#: Restarts (from the checkpoint) allowed after transient Spark failures, over both queries.
MAX_QUERY_RESTARTS: Final = 3
#: Spark gives a new Python planner/worker process 10 s (hard-coded) to connect back; on a
#: loaded 2-core machine that can pass. These messages mark that failure.
_TRANSIENT_MARKERS: Final = ("Python worker failed to connect back", "Timed out while waiting for the Python worker")

_LOG4J2: Final = """\
status = error
rootLogger.level = warn
rootLogger.appenderRef.file.ref = file
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.append = true
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{{HH:mm:ss.SSS}} %p %c{{1}}: %m%n%ex
"""


@dataclass(frozen=True, slots=True)
class DemoPaths:
    """Where the demo reads and writes.

    Attributes:
        out_dir: root of all outputs.
    """

    out_dir: Path

    @property
    def store(self) -> Path:
        """Broker store directory."""
        return self.out_dir / "store"

    @property
    def delay_stats(self) -> Path:
        """Final per-window delay statistics (Parquet)."""
        return self.out_dir / "delay_stats"

    @property
    def spark_msg_ids(self) -> Path:
        """Every (msg_id, queue_id, queue_offset) the Spark query read (Parquet)."""
        return self.out_dir / "spark_msg_ids"

    @property
    def checkpoints(self) -> Path:
        """Streaming checkpoints and the per-batch stats updates."""
        return self.out_dir / "checkpoints"

    @property
    def stats_updates(self) -> Path:
        """Windows changed by each micro-batch (``batch_id=N`` partitions)."""
        return self.checkpoints / "delay_stats_updates"

    @property
    def spark_log(self) -> Path:
        """Spark's JVM log."""
        return self.out_dir / "spark.log"

    @property
    def broker_log(self) -> Path:
        """The ``rocketpipe serve`` process's log (name server and broker)."""
        return self.out_dir / "broker.log"

    @property
    def picture(self) -> Path:
        """The picture of the average departure delay by day (PNG, from ``delay_stats``)."""
        return self.out_dir / "delays.png"

    @property
    def summary(self) -> Path:
        """The reconciliation summary (JSON)."""
        return self.out_dir / "summary.json"


@dataclass(slots=True)
class SparkOutcome:
    """What the Spark queries produced.

    Attributes:
        rows_read: rows the msg-id query wrote (one per message read).
        msg_ids: the set of distinct msg ids read.
        flights_aggregated: sum of ``flights`` over the final delay-stats windows.
        windows: rows of the final delay-stats table.
        batches: micro-batches run by the delay-stats query.
        carriers: per-carrier summary (list of dicts, worst average departure delay first).
        worst_days: the worst (day, carrier, origin) windows (list of dicts).
        seconds: wall time of the queries and the consolidation.
        query_seconds: wall time of the streaming queries alone.
        restarts: queries restarted from their checkpoint after a transient Spark failure.
    """

    rows_read: int
    msg_ids: set[str]
    flights_aggregated: int
    windows: int
    batches: int
    carriers: list[dict[str, Any]]
    worst_days: list[dict[str, Any]]
    seconds: float
    query_seconds: float = 0.0
    restarts: int = 0


@contextlib.contextmanager
def _stderr_to(path: Path) -> Iterator[None]:
    """Point file descriptor 2 at ``path`` for the duration (the JVM started inside keeps it)."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(path, "ab") as log:
            os.dup2(log.fileno(), 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def start_spark(paths: DemoPaths) -> Any:
    """Start (or get) the demo's local SparkSession.

    Args:
        paths: output locations (the JVM log goes to ``paths.spark_log``).

    Returns:
        A ``pyspark.sql.SparkSession`` on ``local[2]`` with the UI off, session time zone UTC
        and 2 shuffle partitions, the JVM with C1 only, no empty micro-batches, and the
        launcher of :func:`~rocketpipe.cli.spark_python.install_launcher` as its Python.

    Raises:
        ModuleNotFoundError: pyspark is not installed (the ``spark`` extra).
        OSError: the log4j configuration cannot be written.
    """
    paths.out_dir.mkdir(parents=True, exist_ok=True)
    python = spark_python.install_launcher()
    # a source Spark finds itself (format("rocketmq")) plans and reads under PYSPARK_DRIVER_PYTHON
    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = python
    from pyspark.sql import SparkSession

    log4j = paths.checkpoints / "log4j2.properties"
    log4j.parent.mkdir(parents=True, exist_ok=True)
    log4j.write_text(_LOG4J2.format(log=paths.spark_log.resolve()))
    # C1 only: in a run of half a minute the C2 compiler's CPU is not paid back (on 2 cores the
    # demo took 29 s with it off vs 33-36 s with it on, the JVM's CPU 24 s vs 38 s).
    # a URI (spaces as %20): Spark splits the options at spaces
    java_opts = f"-Dlog4j2.configurationFile={log4j.resolve().as_uri()} -XX:TieredStopAtLevel=1"
    paths.spark_log.unlink(missing_ok=True)
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("rocketpipe-demo")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.extraJavaOptions", java_opts)
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.streaming.stopGracefullyOnShutdown", "true")
        # no empty micro-batch after the data (it only evicts state; the update-mode output is complete)
        .config("spark.sql.streaming.noDataMicroBatches.enabled", "false")
        .config("spark.sql.warehouse.dir", str((paths.checkpoints / "warehouse").resolve()))
        .config("spark.pyspark.python", python)
    )
    # The JVM (and the Python workers it forks) write their stderr to spark.log, not the screen.
    with _stderr_to(paths.spark_log):
        return builder.getOrCreate()


def is_transient_spark_error(exc: BaseException) -> bool:
    """Return whether a Spark failure is a Python worker start-up timeout (worth a restart)."""
    text = str(exc)
    return any(marker in text for marker in _TRANSIENT_MARKERS)


def warm_up(spark: Any, namesrv: str, topic: str) -> int:
    """Run one small batch read so Spark starts its Python planner and worker processes early.

    The demo calls this while it is still publishing, so the streaming queries do not pay the
    first-Python-data-source cost (several seconds) afterwards.

    Args:
        spark: the session.
        namesrv: name-server address.
        topic: a small topic that already holds a message or a few.

    Returns:
        The number of rows read.
    """
    df = spark.read.format("rocketmq").option("nameServer", namesrv).option("topic", topic).load()
    return len(df.select("msg_id").collect())


#: Columns each query reads (a user schema selects them: the others never reach the JVM).
IDS_COLUMNS: Final = "msg_id STRING, queue_id INT, queue_offset LONG"
STATS_COLUMNS: Final = "body BINARY"


def _source(spark: Any, namesrv: str, topic: str, max_offsets_per_trigger: int, columns: str) -> Any:
    return (
        spark.readStream.format("rocketmq")
        .schema(columns)
        .option("nameServer", namesrv)
        .option("topic", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
        .load()
    )


def delay_stats_frame(raw: Any) -> Any:
    """Return the streaming delay-statistics aggregation over a ``rocketmq`` stream.

    Args:
        raw: a streaming DataFrame of the source with at least ``body`` (a flight as JSON).

    Returns:
        A streaming DataFrame: window_start, window_end, carrier, origin, flights, departed,
        cancelled, avg_dep_delay, max_dep_delay, avg_arr_delay, delayed_15_share.
    """
    from pyspark.sql import functions as F

    flights = raw.select(F.from_json(F.col("body").cast("string"), FLIGHT_SCHEMA_DDL).alias("f")).select("f.*")
    event_time = F.make_timestamp(
        F.col("year"),
        F.col("month"),
        F.col("day"),
        (F.col("sched_dep_time") / 100).cast("int"),
        F.col("sched_dep_time") % 100,
        F.lit(0),
    )
    return (
        flights.withColumn("event_time", event_time)
        .withWatermark("event_time", WATERMARK_DELAY)
        .groupBy(F.window("event_time", WINDOW), F.col("carrier"), F.col("origin"))
        .agg(
            F.count(F.lit(1)).alias("flights"),
            F.count("dep_delay").alias("departed"),
            F.avg("dep_delay").alias("avg_dep_delay"),
            F.max("dep_delay").alias("max_dep_delay"),
            F.avg("arr_delay").alias("avg_arr_delay"),
            F.avg((F.col("dep_delay") > 15).cast("double")).alias("delayed_15_share"),
        )
        .select(
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            "carrier",
            "origin",
            "flights",
            "departed",
            (F.col("flights") - F.col("departed")).alias("cancelled"),
            "avg_dep_delay",
            "max_dep_delay",
            "avg_arr_delay",
            "delayed_15_share",
        )
    )


def supervise(
    starters: dict[str, Callable[[], Any]],
    *,
    timeout: float,
    on_tick: Callable[[dict[str, list[Any]]], None] | None = None,
    max_restarts: int = MAX_QUERY_RESTARTS,
    poll_s: float = 0.5,
) -> tuple[dict[str, list[Any]], int]:
    """Start streaming queries and wait for all of them, restarting transient failures.

    Args:
        starters: name → function that starts the query and returns the ``StreamingQuery``
            (called again for a restart; the query resumes from its checkpoint).
        timeout: seconds to wait for all queries.
        on_tick: called about every ``poll_s`` seconds with every query object started so far.
        max_restarts: restarts allowed over all queries (starts that raise count too).
        poll_s: seconds each ``awaitTermination`` waits.

    Returns:
        ``(runs, restarts)``: every query object per name, oldest first, and the restarts made.

    Raises:
        TimeoutError: not finished in time (every query is stopped).
        Exception: a non-transient failure, or one past the restart budget.
    """
    restarts = 0

    def start(starter: Callable[[], Any]) -> Any:
        nonlocal restarts
        while True:
            try:
                return starter()
            except Exception as exc:
                if not is_transient_spark_error(exc) or restarts >= max_restarts:
                    raise
                restarts += 1

    runs: dict[str, list[Any]] = {}
    deadline = time.monotonic() + timeout
    try:
        for name, fn in starters.items():
            runs[name] = [start(fn)]
        pending = set(starters)
        while pending:
            for name in sorted(pending):
                q = runs[name][-1]
                q.awaitTermination(poll_s)
                if q.isActive:
                    continue
                exc = q.exception()
                if exc is None:
                    pending.discard(name)
                elif is_transient_spark_error(exc) and restarts < max_restarts:
                    # Resumes from the checkpoint; the demo's sinks make a replayed micro-batch
                    # idempotent (file sink log, batch-id partitions).
                    restarts += 1
                    runs[name].append(start(starters[name]))
                else:
                    raise exc
            if on_tick is not None:
                on_tick(runs)
            if time.monotonic() > deadline:
                raise TimeoutError(f"the Spark queries did not finish within {timeout:.0f} s")
    finally:
        for qs in runs.values():
            for q in qs:
                if q.isActive:
                    q.stop()
    return runs, restarts


def run_queries(
    spark: Any,
    *,
    namesrv: str,
    topic: str,
    paths: DemoPaths,
    max_offsets_per_trigger: int,
    on_progress: Callable[[int], None] | None = None,
    timeout: float = 600.0,
) -> SparkOutcome:
    """Run both streaming queries to completion (AvailableNow) and collect the results.

    Args:
        spark: the session from :func:`start_spark`.
        namesrv: name-server address of the cluster.
        topic: topic to read (all messages present when the queries start).
        paths: output locations (previous outputs there are replaced).
        max_offsets_per_trigger: rows per micro-batch over all queues.
        on_progress: called with the rows read so far by the msg-id query.
        timeout: seconds to wait for the queries.

    Returns:
        The outcome (counts, msg ids, summary tables).

    A query that fails because a Python worker did not start in time (a transient failure on a
    loaded machine, :func:`is_transient_spark_error`) is restarted from its checkpoint, up to
    :data:`MAX_QUERY_RESTARTS` times in all.

    Raises:
        TimeoutError: the queries did not finish in time (they are stopped).
        Exception: a query failed (Spark's ``StreamingQueryException``).
    """
    from pyspark.sql import functions as F
    from pyspark.sql.window import Window

    started = time.monotonic()
    for p in (
        paths.delay_stats,
        paths.spark_msg_ids,
        paths.checkpoints / "msg_ids",
        paths.checkpoints / "stats",
        paths.stats_updates,
    ):
        shutil.rmtree(p, ignore_errors=True)
    updates_dir = str(paths.stats_updates.resolve())

    def write_updates(df: Any, batch_id: int) -> None:
        df.write.mode("overwrite").parquet(f"{updates_dir}/batch_id={batch_id}")

    def start_ids() -> Any:
        return (
            _source(spark, namesrv, topic, max_offsets_per_trigger, IDS_COLUMNS)
            .writeStream.format("parquet")
            .option("path", str(paths.spark_msg_ids.resolve()))
            .option("checkpointLocation", str((paths.checkpoints / "msg_ids").resolve()))
            .queryName("flights_msg_ids")
            .trigger(availableNow=True)
            .start()
        )

    def start_stats() -> Any:
        return (
            delay_stats_frame(_source(spark, namesrv, topic, max_offsets_per_trigger, STATS_COLUMNS))
            .writeStream.outputMode("update")
            .foreachBatch(write_updates)
            .option("checkpointLocation", str((paths.checkpoints / "stats").resolve()))
            .queryName("flights_delay_stats")
            .trigger(availableNow=True)
            .start()
        )

    def rows_read(runs: dict[str, list[Any]]) -> int:
        return sum(int(p.get("numInputRows", 0)) for q in runs.get("ids", []) for p in q.recentProgress)

    runs, restarts = supervise(
        {"ids": start_ids, "stats": start_stats},
        timeout=timeout,
        on_tick=None if on_progress is None else (lambda r: on_progress(rows_read(r))),
    )
    if on_progress is not None:
        on_progress(rows_read(runs))
    query_seconds = time.monotonic() - started
    batches = sum(1 for q in runs["stats"] for p in q.recentProgress if int(p.get("numInputRows", 0)) > 0)
    for qs in runs.values():  # keep the per-micro-batch progress (durations, offsets) for the curious
        for attempt, q in enumerate(qs):
            suffix = "" if attempt == 0 else f".restart{attempt}"
            (paths.checkpoints / f"{q.name}{suffix}.progress.json").write_text(
                "[\n" + ",\n".join(p.json for p in q.recentProgress) + "\n]\n"
            )

    # Last version of every window, by micro-batch id.
    updates = spark.read.parquet(updates_dir)
    latest = Window.partitionBy("window_start", "carrier", "origin").orderBy(F.col("batch_id").desc())
    final = (
        updates.withColumn("_rn", F.row_number().over(latest))
        .filter(F.col("_rn") == 1)
        .drop("_rn", "batch_id")
        .orderBy("window_start", "carrier", "origin")
    )
    final.coalesce(1).write.mode("overwrite").parquet(str(paths.delay_stats.resolve()))

    stats = spark.read.parquet(str(paths.delay_stats.resolve())).toPandas()
    ids = spark.read.parquet(str(paths.spark_msg_ids.resolve())).select("msg_id").toPandas()["msg_id"]
    carriers = carrier_summary(stats)
    worst = worst_windows(stats)
    return SparkOutcome(
        rows_read=len(ids),
        msg_ids=set(ids.tolist()),
        flights_aggregated=int(stats["flights"].sum()) if len(stats) else 0,
        windows=len(stats),
        batches=batches,
        carriers=carriers,
        worst_days=worst,
        seconds=time.monotonic() - started,
        query_seconds=query_seconds,
        restarts=restarts,
    )


def carrier_summary(stats: Any) -> list[dict[str, Any]]:
    """Roll the per-window table up to carriers, worst average departure delay first.

    Args:
        stats: the final delay-stats table as a pandas DataFrame.

    Returns:
        One dict per carrier: carrier, flights, cancelled, avg_dep_delay (weighted by departed
        flights), max_dep_delay, avg_arr_delay (weighted by departed flights, an
        approximation when arrivals are missing), delayed_15_share.
    """
    if len(stats) == 0:
        return []
    df = stats.copy()
    w = df["departed"].astype("float64")
    df["dep_sum"] = df["avg_dep_delay"].fillna(0.0) * w
    df["arr_w"] = df["avg_arr_delay"].notna() * w
    df["arr_sum"] = df["avg_arr_delay"].fillna(0.0) * w
    df["late_sum"] = df["delayed_15_share"].fillna(0.0) * w
    g = df.groupby("carrier").agg(
        flights=("flights", "sum"),
        departed=("departed", "sum"),
        cancelled=("cancelled", "sum"),
        dep_sum=("dep_sum", "sum"),
        arr_sum=("arr_sum", "sum"),
        arr_w=("arr_w", "sum"),
        late_sum=("late_sum", "sum"),
        max_dep_delay=("max_dep_delay", "max"),
    )
    out: list[dict[str, Any]] = []
    for carrier, r in g.iterrows():
        departed = float(r["departed"])
        out.append(
            {
                "carrier": str(carrier),
                "flights": int(r["flights"]),
                "cancelled": int(r["cancelled"]),
                "avg_dep_delay": float(r["dep_sum"]) / departed if departed else None,
                "max_dep_delay": None if r["max_dep_delay"] != r["max_dep_delay"] else float(r["max_dep_delay"]),
                "avg_arr_delay": float(r["arr_sum"]) / float(r["arr_w"]) if r["arr_w"] else None,
                "delayed_15_share": float(r["late_sum"]) / departed if departed else None,
            }
        )
    out.sort(key=lambda d: -(d["avg_dep_delay"] if d["avg_dep_delay"] is not None else float("-inf")))
    return out


def worst_windows(stats: Any, n: int = 5, min_flights: int = 20) -> list[dict[str, Any]]:
    """Return the ``n`` windows with the highest average departure delay.

    Args:
        stats: the final delay-stats table as a pandas DataFrame.
        n: rows to return.
        min_flights: ignore windows with fewer flights than this (tiny samples).

    Returns:
        Dicts with day, carrier, origin, flights, avg_dep_delay, delayed_15_share.
    """
    if len(stats) == 0:
        return []
    big = stats[stats["flights"] >= min_flights]
    if len(big) == 0:
        big = stats
    top = big.sort_values("avg_dep_delay", ascending=False, na_position="last").head(n)
    return [
        {
            "day": str(r["window_start"])[:10],
            "carrier": str(r["carrier"]),
            "origin": str(r["origin"]),
            "flights": int(r["flights"]),
            "avg_dep_delay": None if r["avg_dep_delay"] != r["avg_dep_delay"] else float(r["avg_dep_delay"]),
            "delayed_15_share": None
            if r["delayed_15_share"] != r["delayed_15_share"]
            else float(r["delayed_15_share"]),
        }
        for _, r in top.iterrows()
    ]
