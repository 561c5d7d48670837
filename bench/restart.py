"""Restart time of ``rocketpipe serve`` against store size, after a clean stop and after SIGKILL.

For each size N (``--sizes``, default ``100k,1M``; the issue's full set is ``100k,1M,3M``):

1. **build**: N messages of ``--size`` bytes (1 KiB) are put by driving
   :class:`rocketpipe.store.MessageStore` directly (``put_messages`` batches of 32 over 8 queues of
   one topic, every message with a UNIQ_KEY and a KEYS word as a producer with keys sends them;
   a second thread calls ``store.flush()`` every second as the broker's flush service does) into
   a temporary directory on the disk of ``--dir``, with the store's default sizes (1 GiB
   commit-log files), then closed cleanly. **put msg/s** is N over the time spent in
   ``put_messages``.
2. **clean**: ``python -m rocketpipe serve`` (name server + broker, ports picked free here) on
   that directory; the time from launching the process until the broker port accepts a TCP
   connection.
3. **after SIGKILL**: a producer sends batches (32 x 4 in flight) to that broker for
   ``--kill-after`` seconds, the broker is killed with SIGKILL in mid-send, and the restart is
   timed the same way; the broker is then stopped with SIGTERM.

Row ``0`` is an empty store: the fixed cost of starting the interpreter and both servers.
Before the sizes, ``--ab-messages`` messages are put with the key index on and off, interleaved
over ``--rounds`` rounds after an untimed warm-up; the medians of put msg/s and of process CPU per message (put and flush
threads, less sensitive to a busy machine than wall-clock rates) and their on/off ratios show
what indexing costs the put path.
Goals of issue 8 on this machine: at 1M messages, clean <= 2 s and after SIGKILL <= 5 s.

Usage: ``python bench/restart.py [--sizes 100k,1M,3M] [--size BYTES] [--kill-after S]
[--ab-messages N] [--rounds R] [--dir PATH] [--json PATH]``; ``make bench-restart`` runs the
defaults. Results go to ``out/bench/restart.json``, the broker logs of each size (store recovery
lines included) to ``out/bench/restart-<N>.log``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import orjson
from rich.console import Console
from rich.table import Table

from peers import _free_port, _stop, one_line
from rocketpipe.client import Message, Producer
from rocketpipe.store import MessageInner, MessageStore, StoreConfig

console = Console(highlight=False, width=None if sys.stdout.isatty() else 170)
TOPIC = "RestartBench"
QUEUES = 8
BATCH = 32
START_TIMEOUT = 900.0  # seconds a start may take before the run gives up


def parse_size(text: str) -> int:
    """``100k`` / ``1M`` / ``2500`` -> messages."""
    t = text.strip().lower()
    mult = {"k": 1_000, "m": 1_000_000}.get(t[-1:], 1)
    return int(float(t[:-1] if mult > 1 else t) * mult)


def batch(start: int, n: int, body: bytes, queue_id: int) -> list[MessageInner]:
    """``n`` messages from number ``start``: UNIQ_KEY in the Java client's 32-hex layout, KEYS ``order-<i>``."""
    pid = os.getpid() & 0xFFFF
    return [
        MessageInner(
            TOPIC,
            queue_id,
            body,
            properties={
                "TAGS": "TagA",
                "KEYS": f"order-{i}",
                "UNIQ_KEY": f"7F000001{pid:04X}1B2C3D4E{i >> 16:08X}{i & 0xFFFF:04X}",
                "WAIT": "true",
            },
            born_timestamp=1_700_000_000_000,
            born_host="127.0.0.1:50000",
            store_host="127.0.0.1:10911",
        )
        for i in range(start, start + n)
    ]


@dataclass(frozen=True)
class Built:
    """What building one store measured."""

    put_msg_per_s: float  # messages / seconds spent inside put_messages (wall clock)
    cpu_us_per_msg: float  # process CPU (put and flush threads) per message, until everything is flushed
    commit_log_bytes: int


def build(root: Path, n: int, size: int, *, index: bool = True) -> Built:
    """Put ``n`` messages into a new store at ``root``, flush, close."""
    body = os.urandom(size)
    stop = threading.Event()
    errors: list[BaseException] = []
    with MessageStore(StoreConfig(root_dir=root, message_index_enable=index)) as store:

        def flusher() -> None:  # the broker's periodic flush (commit log, consume queues, index)
            while not stop.wait(1.0):
                try:
                    store.flush()
                except BaseException as exc:  # reported after the run
                    errors.append(exc)
                    return

        t = threading.Thread(target=flusher, name="bench-flush", daemon=True)
        spent = 0.0
        cpu0 = time.process_time()
        t.start()
        try:
            for i, start in enumerate(range(0, n, BATCH)):
                msgs = batch(start, min(BATCH, n - start), body, i % QUEUES)
                t0 = time.perf_counter()
                r = store.put_messages(msgs)
                spent += time.perf_counter() - t0
                if r.status.name != "PUT_OK":
                    raise RuntimeError(f"put_messages: {r.status.name}")
        finally:
            stop.set()
            t.join()
        store.flush()
        cpu = time.process_time() - cpu0
        end = store.get_max_phy_offset()
    if errors:
        raise RuntimeError(f"flush failed: {one_line(errors[0])}")
    return Built(n / spent, cpu / n * 1e6, end)


class Serve:
    """One ``python -m rocketpipe serve`` process on free ports, output in a log file."""

    def __init__(self, store: Path, log: Path) -> None:
        self.store, self.log = store, log
        self.broker_port, self.namesrv_port = _free_port(), _free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def namesrv(self) -> str:
        return f"127.0.0.1:{self.namesrv_port}"

    def start(self) -> float:
        """Launch and wait until the broker port accepts a connection; return the seconds taken."""
        with open(self.log, "ab") as out:
            t0 = time.monotonic()
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "rocketpipe",
                    "serve",
                    "--port",
                    str(self.broker_port),
                    "--namesrv-port",
                    str(self.namesrv_port),
                    "--data-dir",
                    str(self.store),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.broker_port), timeout=1.0):
                    return time.monotonic() - t0
            except OSError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError(f"rocketpipe serve exited with {self.proc.returncode}: {self.tail()}")
            if time.monotonic() - t0 > START_TIMEOUT:
                raise RuntimeError(f"broker port not open after {START_TIMEOUT:.0f} s: {self.tail()}")
            time.sleep(0.01)  # polling a port, not synchronising threads

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)

    def stop(self) -> None:
        if self.proc is not None:
            _stop(self.proc)

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-400:].replace("\n", " | ")


async def send_until_killed(serve: Serve, seconds: float, size: int) -> int:
    """Send batches for ``seconds``, SIGKILL the broker mid-send; return messages acknowledged."""
    acked = 0
    body = os.urandom(size)
    producer = Producer("bench-restart", namesrv_addr=serve.namesrv)
    await producer.start()
    try:
        deadline = time.monotonic() + 60
        while True:  # the broker registers with the name server shortly after its port opens
            try:
                await producer.send(Message.build(TOPIC, body))
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.2)

        async def sender() -> None:
            nonlocal acked
            while True:
                await producer.send_batch([Message.build(TOPIC, body, keys=f"k{acked}") for _ in range(BATCH)])
                acked += BATCH

        tasks = [asyncio.create_task(sender()) for _ in range(4)]
        await asyncio.sleep(seconds)
        serve.kill()  # while the senders have requests in flight
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(producer.close(), 10)
    return acked


def restart_cycle(store: Path, log: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Clean start, load while sending, SIGKILL, start again; the two start times."""
    log.unlink(missing_ok=True)
    serve = Serve(store, log)
    try:
        clean = serve.start()
        acked = asyncio.run(send_until_killed(serve, args.kill_after, args.size))
        serve = Serve(store, log)
        killed = serve.start()
    finally:
        serve.stop()
    return {"clean_s": clean, "after_sigkill_s": killed, "acked_before_kill": acked}


def ab_put_rate(tmp: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Put msg/s and CPU per message with the key index on and off, interleaved rounds; medians and ratios."""
    runs: dict[str, list[Built]] = {"on": [], "off": []}
    for on in (True, False):  # untimed warm-up: imports, allocator, page cache
        build(tmp / f"ab-warmup-{on}", min(args.ab_messages, 20_000), args.size, index=on)
        shutil.rmtree(tmp / f"ab-warmup-{on}")
    for r in range(args.rounds):
        for name, on in (("on", True), ("off", False)):
            root = tmp / f"ab-{r}-{name}"
            runs[name].append(build(root, args.ab_messages, args.size, index=on))
            shutil.rmtree(root)
    out: dict[str, Any] = {"rounds": {k: [asdict(b) for b in v] for k, v in runs.items()}}
    for metric in ("put_msg_per_s", "cpu_us_per_msg"):
        per_round = [getattr(a, metric) / getattr(b, metric) for a, b in zip(runs["on"], runs["off"], strict=True)]
        out[metric] = {
            "on": statistics.median(getattr(b, metric) for b in runs["on"]),
            "off": statistics.median(getattr(b, metric) for b in runs["off"]),
            "ratio": statistics.median(per_round),
            "ratios": per_round,
        }
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="100k,1M", help="comma-separated store sizes in messages, e.g. 100k,1M,3M")
    ap.add_argument("--size", type=int, default=1024, help="body size in bytes")
    ap.add_argument("--kill-after", type=float, default=3.0, help="seconds of sending before the SIGKILL")
    ap.add_argument("--ab-messages", type=int, default=100_000, help="messages per index on/off put round (0: skip)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved index on/off rounds")
    ap.add_argument(
        "--dir", type=Path, default=Path("out/bench"), help="parent of the scratch stores (same disk as the data)"
    )
    ap.add_argument("--json", type=Path, default=Path("out/bench/restart.json"))
    args = ap.parse_args()
    try:
        sizes = [parse_size(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        ap.error(f"--sizes: cannot parse {args.sizes!r}")
    if any(n < 0 for n in sizes) or args.rounds < 1:
        ap.error("sizes must be >= 0 and --rounds >= 1")

    logging.getLogger("rocketpipe").setLevel(logging.ERROR)  # the producer's complaints about the killed broker
    args.dir.mkdir(parents=True, exist_ok=True)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    load_start = os.getloadavg()
    rows: list[dict[str, Any]] = []
    ab: dict[str, Any] | None = None
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="restart-") as d:
        tmp = Path(d)
        if args.ab_messages > 0:
            console.print(f"put rate, key index on vs off: {args.rounds} x {args.ab_messages:,} messages each ...")
            ab = ab_put_rate(tmp, args)
        for n in [0, *sizes]:
            store = tmp / f"store-{n}"
            console.print(f"{n:,} messages: building ...", end="")
            t0 = time.monotonic()
            built = build(store, n, args.size) if n else None
            rate = built.put_msg_per_s if built else None
            mb = built.commit_log_bytes / 1e6 if built else 0.0
            console.print(f" {time.monotonic() - t0:.0f} s ({mb:,.0f} MB); restarting ...", end="")
            try:
                row = {
                    "messages": n,
                    "commit_log_mb": mb,
                    "put_msg_per_s": rate,
                    **restart_cycle(store, args.json.parent / f"restart-{n}.log", args),
                }
            except Exception as exc:  # shown in the table; the other sizes still run
                row = {"messages": n, "commit_log_mb": mb, "put_msg_per_s": rate, "error": one_line(exc)}
            console.print(" done" if "error" not in row else f" [red]{row['error']}[/red]")
            rows.append(row)
            shutil.rmtree(store, ignore_errors=True)
    load_end = os.getloadavg()

    table = Table(
        title=f"rocketpipe serve restart time vs store size ({args.size} B messages); until the broker port accepts",
        title_justify="left",
        caption="goal (issue 8) at 1M messages: clean <= 2 s, after SIGKILL <= 5 s",
        caption_justify="left",
    )
    for col in (
        "messages",
        "commit log MB",
        "put msg/s",
        "clean restart s",
        "after-SIGKILL restart s",
        "acked before kill",
    ):
        table.add_column(col, justify="right")
    for r in rows:
        if "error" in r:
            table.add_row(f"{r['messages']:,}", f"{r['commit_log_mb']:,.0f}", "-", r["error"], "", "")
            continue
        table.add_row(
            f"{r['messages']:,}",
            f"{r['commit_log_mb']:,.0f}",
            "-" if r["put_msg_per_s"] is None else f"{r['put_msg_per_s']:,.0f}",
            f"{r['clean_s']:.2f}",
            f"{r['after_sigkill_s']:.2f}",
            f"{r['acked_before_kill']:,}",
        )
    console.print(f"{os.cpu_count()} CPUs, load average {load_start[0]:.2f} at start / {load_end[0]:.2f} at end")
    console.print(table)
    if ab is not None:
        for metric, unit in (("put_msg_per_s", "msg/s"), ("cpu_us_per_msg", "CPU us/msg")):
            m = ab[metric]
            console.print(
                f"put_messages x{BATCH}, key index on vs off, {unit}: {m['on']:,.1f} vs {m['off']:,.1f}, ratio on/off "
                f"{m['ratio']:.2f} [rounds: {', '.join(f'{x:.2f}' for x in m['ratios'])}]"
            )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_bytes(
        orjson.dumps(
            {
                "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "size": args.size,
                "kill_after_s": args.kill_after,
                "cpus": os.cpu_count(),
                "loadavg_start": load_start,
                "loadavg_end": load_end,
                "rows": rows,
                "put_index_on_off": ab,
            },
            option=orjson.OPT_INDENT_2,
        )
    )
    console.print(f"written {args.json}")
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
