"""Benchmark targets for ``produce_consume.py``: the brokers and the Redis Streams peer.

Every target is a context manager that starts its server(s) on 127.0.0.1 (free ports, data in
the given temporary directory), yields what the client needs, and stops them (SIGTERM, then
SIGKILL after a bounded wait) on exit. A target that cannot start raises :class:`Unavailable`
with a one-line reason, which the benchmark prints as "not measured: <reason>".

* :func:`rocketpipe_serve` — ``python -m rocketpipe serve`` in its own process; yields the name
  server address.
* :func:`apache_broker` — a real Apache RocketMQ 5.3.3 name server + broker (JVMs from the
  artifacts cached in ``~/.m2``, via :mod:`rocketpipe.testing.apache`) with a 1 GiB heap, G1 and
  the C2 compiler; yields the name server address.
* :func:`redis_server` — Debian's ``redis-server`` with AOF ``appendfsync everysec`` (``always``
  for ``--flush sync``) and no RDB snapshots; yields a redis-py client. The Redis operations
  (:func:`xadd`, :func:`xreadgroup`) are here too, since they use another client API.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rocketpipe.testing.serve_process import ServeStartError, serve_process, stop_process

APACHE_VERSION = "5.3.3"
#: pull caps of both RocketMQ brokers (Java's defaults: 32 messages, 256 KiB), raised so that one
#: pull can return 1024 × 1 KiB as ``XREADGROUP COUNT 1024`` does; a push consumer still pulls 32
MAX_TRANSFER_COUNT = 1024
MAX_TRANSFER_BYTES = 4 * 1024 * 1024


class Unavailable(Exception):
    """A target could not start; ``str(exc)`` is the reason printed in the tables."""


@dataclass(frozen=True, slots=True)
class Served:
    """A started target: what the scenarios need (``handle``), its server processes (``pids``) and,
    when the client is not this process, the client's processes (``client_pids``)."""

    handle: Any
    pids: tuple[int, ...]
    client_pids: tuple[int, ...] = ()


_TICK = os.sysconf("SC_CLK_TCK")


def process_cpu_s(pids: tuple[int, ...]) -> float:
    """User + system CPU seconds used so far by ``pids`` (all their threads), from ``/proc/<pid>/stat``.

    Resolution: one clock tick (10 ms); a process that has gone counts 0.
    """
    total = 0
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "; field 3 is fields[0]
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return total / _TICK


@dataclass(slots=True)
class Result:
    """One scenario's numbers on one target (``error`` set when it failed)."""

    scenario: str
    messages: int = 0
    seconds: float = 0.0
    p50_ms: float | None = None
    p99_ms: float | None = None
    note: str | None = None
    error: str | None = None
    server_cpu_s: float | None = None  # CPU seconds of the server processes during the scenario
    client_cpu_s: float | None = None  # CPU seconds of the bench process (the client) during the scenario

    def cpu_us(self, which: str) -> float | None:
        """``"server"`` / ``"client"`` CPU per message in µs (``None`` when not measured)."""
        cpu = self.server_cpu_s if which == "server" else self.client_cpu_s
        return None if cpu is None or not self.messages or self.error else cpu / self.messages * 1e6

    @property
    def rate(self) -> float:
        return self.messages / self.seconds if self.seconds > 0 and self.error is None else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "messages": self.messages,
            "seconds": self.seconds,
            "msg_per_s": self.rate,
            "p50_ms": self.p50_ms,
            "p99_ms": self.p99_ms,
            "note": self.note,
            "error": self.error,
            "server_cpu_us_per_msg": self.cpu_us("server"),
            "client_cpu_us_per_msg": self.cpu_us("client"),
        }


def body(size: int, i: int) -> bytes:
    """A ``size``-byte payload carrying its index (the same bytes for every target)."""
    head = f"{i:012d}".encode()
    return head + b"x" * max(0, size - len(head))


def quantiles_ms(lat: list[float]) -> tuple[float, float]:
    q = statistics.quantiles(lat, n=100)
    return q[49] * 1e3, q[98] * 1e3


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:200]


def _stop(proc: subprocess.Popen[Any], grace: float = 30.0) -> None:
    stop_process(proc, grace)


# ---------------------------------------------------------------------------- rocketpipe serve


@contextlib.contextmanager
def rocketpipe_serve(
    tmp: Path, flush: str, extra_args: tuple[str, ...] = (), src: Path | None = None
) -> Iterator[Served]:
    """``python -m rocketpipe serve`` on free ports (plus ``extra_args``); yields the name server address.

    ``src``: run the ``rocketpipe`` package found there (a ``src/`` directory) instead of the
    installed one, e.g. an earlier commit's (see :func:`rocketpipe_at`).
    """
    try:
        caps = ("--max-transfer-count", str(MAX_TRANSFER_COUNT), "--max-transfer-bytes", str(MAX_TRANSFER_BYTES))
        with serve_process(tmp / "store", flush=flush, extra_args=(*caps, *extra_args), src=src) as served:
            yield Served(served.namesrv_addr, (served.pid,))
    except ServeStartError as exc:
        raise Unavailable(str(exc)) from None


def rocketpipe_at(rev: str) -> Callable[[Path, str], contextlib.AbstractContextManager[Served]]:
    """A target running ``rocketpipe serve`` as of git revision ``rev`` (its ``src/`` extracted with
    ``git archive`` into the target's temporary directory), for before/after ratios in one run.

    When ``rev`` has a ``setup.py``, its optional C extensions are built in place first, so the
    baseline runs compiled as the current tree does (without them it would run the pure-Python
    loops and flatter every later commit).

    Raises (when entered):
        Unavailable: ``rev`` is not a revision of this repository.
    """

    @contextlib.contextmanager
    def target(tmp: Path, flush: str) -> Iterator[Served]:
        root = Path(__file__).resolve().parents[1]
        out = tmp / "src-at-rev"
        out.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(root), "archive", "--format=tar", rev, "src"], capture_output=True, check=False
        )
        if archive.returncode != 0:
            raise Unavailable(f"git archive {rev}: {archive.stderr.decode(errors='replace').strip()}")
        subprocess.run(["tar", "-x", "-C", str(out)], input=archive.stdout, check=True)
        setup = subprocess.run(["git", "-C", str(root), "show", f"{rev}:setup.py"], capture_output=True, check=False)
        if setup.returncode == 0:
            (out / "setup.py").write_bytes(setup.stdout)
            project = subprocess.run(
                ["git", "-C", str(root), "show", f"{rev}:pyproject.toml"], capture_output=True, check=True
            )
            (out / "pyproject.toml").write_bytes(project.stdout)  # the src layout the build needs
            built = subprocess.run(
                [sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=out, capture_output=True, check=False
            )
            if built.returncode != 0:
                last = (built.stderr.decode(errors="replace").strip().splitlines() or ["?"])[-1]
                raise Unavailable(f"building {rev}'s C extensions failed: {last}")
        with rocketpipe_serve(tmp, flush, src=out / "src") as served:
            yield served

    return target


# ---------------------------------------------------------------------------- Apache RocketMQ


@contextlib.contextmanager
def apache_broker(tmp: Path, flush: str) -> Iterator[Served]:
    """Apache RocketMQ 5.3.3 name server + broker; yields the name server address.

    Broker tuning is Apache's own default where the interop fixture deviates for fast start-up:
    1 GiB heap / direct memory, G1, C2 (no ``TieredStopAtLevel=1``), 1 GiB commit-log files,
    thread pools sized as ``BrokerConfig`` sizes them by CPU count.
    """
    try:
        from rocketpipe.testing.apache import JVM_OPTS, ApacheUnavailableError, start_apache_cluster
    except ImportError as exc:
        raise Unavailable(one_line(exc)) from exc
    jvm = (
        "-Xms1g",
        "-Xmx1g",
        "-XX:MaxDirectMemorySize=1g",
        "-XX:+UseG1GC",
        "-XX:-UsePerfData",
        *(o for o in JVM_OPTS if o.startswith(("--add-opens", "-Djava.net."))),
    )
    cpus = os.cpu_count() or 2
    conf = {
        "flushDiskType": "ASYNC_FLUSH" if flush == "async" else "SYNC_FLUSH",
        "mappedFileSizeCommitLog": str(1024 * 1024 * 1024),
        "mappedFileSizeConsumeQueue": str(300_000 * 20),
        "sendMessageThreadPoolNums": str(min(cpus, 4)),
        "pullMessageThreadPoolNums": str(16 + 2 * cpus),
        "maxTransferCountOnMessageInMemory": str(MAX_TRANSFER_COUNT),
        "maxTransferBytesOnMessageInMemory": str(MAX_TRANSFER_BYTES),
    }
    try:
        cluster = start_apache_cluster(
            APACHE_VERSION, tmp / "apache", broker_conf=conf, broker_jvm_opts=jvm, timeout=180.0
        )
    except ApacheUnavailableError as exc:
        raise Unavailable(one_line(exc)) from exc
    try:
        yield Served(cluster.namesrv_addr, tuple(p.popen.pid for p in cluster.processes))
    finally:
        cluster.stop()  # SIGTERM to each JVM's process group, SIGKILL after 5 s


# ---------------------------------------------------------------------------- Redis Streams


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def redis_server(tmp: Path, flush: str) -> Iterator[Served]:
    """``redis-server`` on 127.0.0.1, AOF everysec (``always`` for sync flush), no RDB; yields a client."""
    exe = shutil.which("redis-server")
    if exe is None:
        raise Unavailable("redis-server not installed (apt-get install -y redis-server)")
    try:
        import redis
    except ImportError:
        raise Unavailable("redis-py not installed (pip install redis)") from None
    data = tmp / "redis"
    data.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    cmd = [
        exe,
        "--bind",
        "127.0.0.1",
        "--port",
        str(port),
        "--dir",
        str(data),
        "--save",
        "",
        "--appendonly",
        "yes",
        "--appendfsync",
        "everysec" if flush == "async" else "always",
        "--daemonize",
        "no",
        "--logfile",
        str(data / "redis.log"),
    ]
    proc = subprocess.Popen(
        cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        client = redis.Redis(host="127.0.0.1", port=port)
        deadline = time.monotonic() + 20
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise Unavailable(f"redis-server did not start (exit {proc.poll()})") from None
                time.sleep(0.1)
        yield Served(client, (proc.pid,))
        client.close()
    finally:
        _stop(proc, grace=10.0)


def xadd(r: Any, stream: str, n: int, size: int, depth: int) -> Result:
    """XADD ``n`` payloads, ``depth`` per pipeline round trip (1 = plain calls, latencies kept)."""
    r.xadd(stream, {"d": body(size, -1)})  # connection warm-up
    lat: list[float] = []
    t0 = time.perf_counter()
    if depth == 1:
        for i in range(n):
            s = time.perf_counter()
            r.xadd(stream, {"d": body(size, i)})
            lat.append(time.perf_counter() - s)
    else:
        with r.pipeline(transaction=False) as p:
            for start in range(0, n, depth):
                for i in range(start, min(n, start + depth)):
                    p.xadd(stream, {"d": body(size, i)})
                p.execute()
    dt = time.perf_counter() - t0
    return Result(f"XADD ×{depth}", n, dt, *(quantiles_ms(lat) if lat else (None, None)))


def xreadgroup(r: Any, stream: str, group: str, expected: int, count: int, timeout: float = 300.0) -> Result:
    """XREADGROUP COUNT ``count`` + one XACK per batch from the stream's start until ``expected`` (bounded)."""
    r.xgroup_create(stream, group, id="0")
    total = 0
    t0 = time.perf_counter()
    while total < expected and time.perf_counter() - t0 < timeout:
        resp = r.xreadgroup(group, "c1", {stream: ">"}, count=count)
        if not resp or not resp[0][1]:
            break
        ids = [mid for mid, _ in resp[0][1]]
        r.xack(stream, group, *ids)
        total += len(ids)
    dt = time.perf_counter() - t0
    return Result(
        f"XREADGROUP {count} + XACK", total, dt, note=None if total >= expected else f"only {total} of {expected}"
    )


def redis_client_name() -> str:
    """``redis-py <version>`` and its reply parser (hiredis when installed, else pure Python)."""
    try:
        import redis
        from redis.utils import HIREDIS_AVAILABLE
    except ImportError:
        return "redis-py"
    return f"redis-py {redis.__version__}, {'hiredis' if HIREDIS_AVAILABLE else 'pure-Python'} parser"


#: target name -> context manager factory ``(tmp, flush)``; "rocketpipe" is always run.
TARGETS: dict[str, Callable[[Path, str], contextlib.AbstractContextManager[Served]]] = {
    "rocketpipe": rocketpipe_serve,
    "apache": apache_broker,
    "redis": redis_server,
}
