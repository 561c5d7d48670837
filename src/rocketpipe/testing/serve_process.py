"""``rocketpipe serve`` in a process of its own, for demos and benchmarks (L4).

``with serve_process(data_dir) as s:`` starts ``python -m rocketpipe serve`` (a name server and
a broker on free ports of 127.0.0.1), waits for its "ready" line and yields the addresses; on
exit it stops the process with SIGTERM (the broker flushes its store), then SIGKILL after a
bounded wait. The broker then has a core of its own instead of sharing one event loop and one
GIL with the clients, as an embedded :func:`~rocketpipe.testing.cluster.local_cluster` does.
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ServeProcess", "ServeStartError", "serve_process", "stop_process"]


class ServeStartError(RuntimeError):
    """``rocketpipe serve`` exited or printed no "ready" line in time; the message ends with its output."""


@dataclass(frozen=True, slots=True)
class ServeProcess:
    """A running ``rocketpipe serve``.

    Attributes:
        namesrv_addr: ``"127.0.0.1:port"`` of its name server.
        broker_addr: ``"127.0.0.1:port"`` of its broker.
        pid: the process id (for CPU accounting from ``/proc``).
        metrics_addr: ``"host:port"`` of its Prometheus endpoint (``--metrics-port``), or None.
        console_url: URL of its web console (``--console-port``), or None.
    """

    namesrv_addr: str
    broker_addr: str
    pid: int
    metrics_addr: str | None = None
    console_url: str | None = None


def stop_process(proc: subprocess.Popen[Any], grace: float = 30.0) -> None:
    """SIGTERM ``proc`` and wait up to ``grace`` seconds, then SIGKILL it (no-op if it has exited)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@contextlib.contextmanager
def serve_process(
    data_dir: Path,
    *,
    flush: str = "async",
    extra_args: Sequence[str] = (),
    src: Path | None = None,
    start_timeout: float = 60.0,
    log_file: Path | None = None,
    namesrv_addr: str | None = None,
    broker_name: str | None = None,
) -> Iterator[ServeProcess]:
    """Run ``python -m rocketpipe serve --port 0 --namesrv-port 0`` for the block.

    With ``namesrv_addr`` it runs only a broker (``--broker-only``) registered with that name
    server, e.g. a second broker group of a :func:`~rocketpipe.testing.cluster.local_cluster`;
    the yielded ``namesrv_addr`` is then that address.

    Args:
        data_dir: the broker's store root (``--data-dir``).
        flush: ``"async"`` or ``"sync"`` (``--flush``, Java's ``flushDiskType``).
        extra_args: more ``serve`` flags, e.g. ``("--max-transfer-count", "1024")``.
        src: run the ``rocketpipe`` package found in this ``src/`` directory instead of the
            installed one (an earlier commit's, for before/after benchmarks).
        start_timeout: seconds to wait for the "ready" line.
        log_file: the server's log file (``--log-file``); None = its stderr, merged with stdout
            and read by this helper.

    Yields:
        The addresses and pid of the running server.

    Raises:
        ServeStartError: it exited or was not ready within ``start_timeout`` seconds.
    """
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(src), env.get("PYTHONPATH", "")) if p)
    cmd = [sys.executable, "-m", "rocketpipe", "serve", "--port", "0"]
    cmd += ["--namesrv-port", "0"] if namesrv_addr is None else ["--broker-only", "--namesrv", namesrv_addr]
    if broker_name is not None:
        cmd += ["--broker-name", broker_name]
    cmd += ["--data-dir", str(data_dir), "--flush", flush, *extra_args]
    if log_file is not None:
        cmd += ["--log-file", str(log_file)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        lines: queue.Queue[str] = queue.Queue()

        # drains the pipe for the server's whole life, so it never blocks on a full pipe
        def drain() -> None:
            for line in proc.stdout or ():
                lines.put(line)

        threading.Thread(target=drain, name="serve-output", daemon=True).start()
        out = ""
        deadline = time.monotonic() + start_timeout
        while "ready" not in out:
            left = deadline - time.monotonic()
            try:
                out += lines.get(timeout=max(0.1, min(left, 1.0)))
            except queue.Empty:
                if proc.poll() is not None or left <= 0:
                    state = f"exited with {proc.returncode}" if proc.poll() is not None else "not ready"
                    raise ServeStartError(f"rocketpipe serve {state} after start: {out[-300:]!r}") from None
        ns = re.search(r"name server listening on (\S+)", out)
        broker = re.search(r"broker \S+ listening on (\S+)", out)
        ns_addr = namesrv_addr if namesrv_addr is not None else (ns.group(1) if ns else None)
        if ns_addr is None or broker is None:
            raise ServeStartError(f"no name server or broker address in {out[-300:]!r}")
        metrics = re.search(r"Prometheus metrics on http://(\S+)/metrics", out)
        web = re.search(r"web console on (\S+)", out)
        yield ServeProcess(
            ns_addr, broker.group(1), proc.pid, metrics.group(1) if metrics else None, web.group(1) if web else None
        )
    finally:
        stop_process(proc)
