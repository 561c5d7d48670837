"""``rocketpipe serve`` as a real subprocess that a test can SIGKILL, stop and restart.

:class:`ServeProcess` runs ``python -m rocketpipe serve`` (name server and broker in one process)
on 127.0.0.1 with ports it picks itself, a store directory of the test's choosing and any extra
``serve`` flags, writing the process's stdout and stderr to a log file. Readiness is polled
(bounded), never a fixed sleep: the process itself listens on both ports (Linux ``/proc``), a TCP
connect to each succeeds, and it has its SIGTERM handler installed (so :meth:`terminate` right
after a start is a clean stop). It does not read the log, whose format may change.

Usage (inside ``tests/reliability`` the module imports as ``serve_process``; elsewhere under
``tests/`` as ``reliability.serve_process``)::

    from serve_process import ServeProcess

    with ServeProcess(tmp_path / "store", tmp_path / "serve.log", extra_args=["--flush", "sync"]) as serve:
        ...  # clients use serve.namesrv_addr; serve.broker_addr is the broker itself
        serve.kill9()            # SIGKILL, reaped; returns the exit status (-9)
        serve.restart()          # same store, same ports; waits until ready again
        assert serve.terminate() == 0   # SIGTERM, then wait (bounded) for a clean exit
    # leaving the block SIGKILLs the process if it still runs

Readiness does not cover the name server's routes: the broker registers with the name server
right after it starts listening, so a client should still wait for its topic's route (e.g.
``wait_until`` on ``Admin.topic_queues`` / ``Admin.examine_broker_cluster_info``) before producing.

The ports are picked below the kernel's ephemeral range (so no outgoing connection of another
test can hold them) and kept across restarts; only if one is taken by another process (before a
start, or when a start fails on it) are new ones picked, so read the addresses after each
:meth:`~ServeProcess.restart`. Instances never closed are SIGKILLed at interpreter exit (and, in
``tests/reliability``, after each test by an autouse fixture).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import random
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Final

from waiting import wait_until_sync

#: Host every process listens on and advertises.
HOST: Final = "127.0.0.1"
#: Lowest port tried when picking one (below it: well-known and registered services).
_PORT_FLOOR: Final = 20000
#: Attempts at starting when a start fails because another process took a picked port.
_START_ATTEMPTS: Final = 3
#: Characters of the log's tail quoted in a failure message.
_LOG_TAIL_CHARS: Final = 4000

#: Every instance not yet closed (strong references: a forgotten instance is still stopped).
_live: set[ServeProcess] = set()


def _ephemeral_floor() -> int:
    """First port of the kernel's ephemeral range (``net.ipv4.ip_local_port_range``)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _port_is_free(port: int) -> bool:
    """True if a server could listen on ``port`` now (SO_REUSEADDR, as ``serve``: TIME_WAIT does not count)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((HOST, port))
        except OSError:
            return False
    return True


def pick_free_ports(count: int, rng: random.Random | None = None) -> list[int]:
    """Return ``count`` distinct ports in [20000, ephemeral floor) that can be bound on 127.0.0.1 now.

    Raises:
        RuntimeError: no free port found after 200 tries.
    """
    rng = rng or random.Random()
    ceiling = max(_ephemeral_floor(), _PORT_FLOOR + 1000)
    ports: list[int] = []
    for _ in range(200):
        port = rng.randrange(_PORT_FLOOR, ceiling)
        if port not in ports and _port_is_free(port):
            ports.append(port)
            if len(ports) == count:
                return ports
    raise RuntimeError(f"no {count} free ports found in [{_PORT_FLOOR}, {ceiling})")


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=0.5):
            return True
    except OSError:
        return False


def _listening_inodes(port: int) -> set[str] | None:
    """Inodes of the TCP sockets listening on ``port`` (Linux ``/proc/net/tcp``), None without /proc."""
    inodes: set[str] = set()
    try:
        lines = Path("/proc/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        # local_address is "ADDRHEX:PORTHEX", state 0A = LISTEN, inode is the 10th field
        if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
            inodes.add(fields[9])
    return inodes


def _listens(pid: int, port: int) -> bool:
    """True if process ``pid`` holds a socket listening on ``port`` (not another process that took it).

    Where ``/proc`` cannot tell, a successful connect counts.
    """
    inodes = _listening_inodes(port)
    if inodes is None:
        return _accepts(port)
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    owned = set()
    for fd in fds:
        with contextlib.suppress(OSError):
            owned.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
    return any(f"socket:[{inode}]" in owned for inode in inodes) and _accepts(port)


def _catches(pid: int, sig: int) -> bool:
    """True if process ``pid`` has a handler for ``sig`` (``SigCgt`` in ``/proc/<pid>/status``).

    Where ``/proc`` cannot tell, True.
    """
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    for line in status.splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    return True


class ServeProcess:
    """One ``rocketpipe serve`` subprocess (name server + broker) on 127.0.0.1.

    Args:
        data_dir: the broker's store (``--data-dir``); kept across restarts.
        log_path: file receiving stdout and stderr of every run (appended, one header line
            per start).
        extra_args: more ``serve`` flags, e.g. ``["--flush", "sync"]``.
        start_timeout: seconds to wait for both ports to accept after each start.
        stop_timeout: seconds :meth:`terminate` waits for a clean exit before SIGKILL.
        env: extra environment variables for the subprocess (``NAMESRV_ADDR`` is always
            removed from the inherited environment).
        start: start in the constructor (default); else call :meth:`start` or enter the
            ``with`` block.

    Attributes:
        data_dir, log_path, extra_args: as given.
        namesrv_port, broker_port: the ports in use (may change if a restart finds one taken).
        starts: how many times the process was started.
    """

    def __init__(
        self,
        data_dir: Path,
        log_path: Path,
        *,
        extra_args: Sequence[str] = (),
        start_timeout: float = 60.0,
        stop_timeout: float = 60.0,
        env: dict[str, str] | None = None,
        start: bool = True,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.log_path = Path(log_path)
        self.extra_args = list(extra_args)
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self._env = {k: v for k, v in os.environ.items() if k != "NAMESRV_ADDR"} | (env or {})
        self.namesrv_port, self.broker_port = pick_free_ports(2)
        self.starts = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._signals_sent: set[int] = set()
        _live.add(self)
        if start:
            self.start()

    # ------------------------------------------------------------------ addresses

    @property
    def namesrv_addr(self) -> str:
        """``"127.0.0.1:port"`` of the name server (what clients are given)."""
        return f"{HOST}:{self.namesrv_port}"

    @property
    def broker_addr(self) -> str:
        """``"127.0.0.1:port"`` of the broker."""
        return f"{HOST}:{self.broker_port}"

    @property
    def pid(self) -> int | None:
        """Process id of the current run, or None before the first start."""
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        """True while the current run's process has not exited."""
        return self._proc is not None and self._proc.poll() is None

    @property
    def returncode(self) -> int | None:
        """Exit status of the last run (negative = killed by that signal), None while running."""
        return self._proc.poll() if self._proc is not None else None

    def log_text(self) -> str:
        """Everything the process wrote so far, all runs (undecodable bytes replaced)."""
        try:
            return self.log_path.read_bytes().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""

    def log_tail(self) -> str:
        """The last few thousand characters of :meth:`log_text`, for failure messages."""
        return self.log_text()[-_LOG_TAIL_CHARS:]

    # ------------------------------------------------------------------ life cycle

    def command(self) -> list[str]:
        """The argv of the next start."""
        return [
            sys.executable, "-m", "rocketpipe", "serve",
            "--host", HOST,
            "--namesrv-port", str(self.namesrv_port),
            "--port", str(self.broker_port),
            "--data-dir", str(self.data_dir),
            *self.extra_args,
        ]  # fmt: skip

    def start(self) -> ServeProcess:
        """Start the process and wait until it is ready (see the module docstring).

        Raises:
            RuntimeError: already running.
            AssertionError: the process exited before it was ready, or was not ready within
                ``start_timeout`` (it is killed then); the message quotes the log.
        """
        if self.running:
            raise RuntimeError(f"rocketpipe serve already running (pid {self.pid})")
        for attempt in range(1, _START_ATTEMPTS + 1):
            if not (_port_is_free(self.namesrv_port) and _port_is_free(self.broker_port)):
                self.namesrv_port, self.broker_port = pick_free_ports(2)  # taken since the last run
            self._spawn()
            if self._wait_ready():
                return self
            port_taken = not (_port_is_free(self.namesrv_port) and _port_is_free(self.broker_port))
            if not port_taken or attempt == _START_ATTEMPTS:
                break
            self.namesrv_port, self.broker_port = pick_free_ports(2)  # another process took one meanwhile
        status = self.returncode
        self.kill9()
        raise AssertionError(
            f"rocketpipe serve not ready (exit status {status}, ports {self.namesrv_port}/{self.broker_port}):\n{self.log_tail()}"
        )

    def _spawn(self) -> None:
        self._close_log()
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("ab")
        self.starts += 1
        self._signals_sent = set()
        self._log.write(f"=== start {self.starts}: {' '.join(self.command())}\n".encode())
        self._log.flush()
        self._proc = subprocess.Popen(
            self.command(), stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT, env=self._env,
            start_new_session=True,  # a Ctrl-C at the terminal reaches pytest only; we stop the process ourselves
        )  # fmt: skip

    def _wait_ready(self) -> bool:
        """Wait until the process is ready (True), or it exits (False).

        Ready: it listens on both ports, they accept, and it handles SIGTERM (``serve`` installs
        its stop handler only once both servers run; a SIGTERM before that kills it outright).

        Raises:
            AssertionError: neither within ``start_timeout`` (the process is SIGKILLed).
        """
        try:
            wait_until_sync(
                lambda: not self.running or self._ready(),
                timeout=self.start_timeout,
                interval=0.05,
                what=f"rocketpipe serve to accept on {self.namesrv_port} and {self.broker_port}",
            )
        except AssertionError as exc:
            self.kill9()
            raise AssertionError(f"{exc}; its log:\n{self.log_tail()}") from None
        return self.running

    def send_signal(self, sig: int) -> None:
        """Deliver ``sig`` to the current run without waiting (e.g. SIGKILL while requests are in flight).

        Reap it afterwards with :meth:`kill9` or :meth:`terminate` (which does not send SIGTERM
        again if it was already sent this run: ``serve`` restores the default action after the
        first one, so a second SIGTERM would cut its clean stop short).

        Raises:
            RuntimeError: never started.
        """
        if self._proc is None:
            raise RuntimeError("rocketpipe serve was never started")
        if self._proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self._proc.send_signal(sig)
                self._signals_sent.add(sig)

    def _ready(self) -> bool:
        assert self._proc is not None
        pid = self._proc.pid
        return all(_listens(pid, p) for p in (self.broker_port, self.namesrv_port)) and _catches(pid, signal.SIGTERM)

    def kill9(self) -> int:
        """SIGKILL the process and reap it; return its exit status (-9, or how it ended before).

        Raises:
            RuntimeError: never started.
        """
        if self._proc is None:
            raise RuntimeError("rocketpipe serve was never started")
        self.send_signal(signal.SIGKILL)
        status = self._proc.wait(timeout=30)
        self._close_log()
        return status

    def terminate(self, timeout: float | None = None) -> int:
        """SIGTERM (``serve`` then closes the broker, flushing its store) and wait for the exit.

        Args:
            timeout: seconds to wait; default ``stop_timeout``.

        Returns:
            The exit status (0 = clean stop).

        Raises:
            RuntimeError: never started.
            AssertionError: still running after ``timeout`` (it is SIGKILLed then); quotes the log.
        """
        if self._proc is None:
            raise RuntimeError("rocketpipe serve was never started")
        if signal.SIGTERM not in self._signals_sent:
            self.send_signal(signal.SIGTERM)
        limit = self.stop_timeout if timeout is None else timeout
        try:
            status = self._proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            self.kill9()
            raise AssertionError(
                f"rocketpipe serve did not stop within {limit}s of SIGTERM:\n{self.log_tail()}"
            ) from None
        self._close_log()
        return status

    def restart(self) -> ServeProcess:
        """Start again on the same store (and ports when still free); SIGTERM first if running.

        Raises:
            AssertionError: as :meth:`start` and :meth:`terminate`.
        """
        if self.running:
            self.terminate()
        return self.start()

    def close(self) -> None:
        """SIGKILL the process if it still runs; idempotent."""
        if self._proc is not None:
            self.kill9()
        self._close_log()
        _live.discard(self)

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> ServeProcess:
        if not self.running:
            self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ServeProcess(pid={self.pid}, namesrv={self.namesrv_addr}, broker={self.broker_addr}, data_dir={self.data_dir})"


def kill_all_under(directory: Path) -> list[int]:
    """Close (SIGKILL) every unclosed :class:`ServeProcess` whose store is under ``directory``.

    Only processes this module started are touched. Returns the pids that were still running.
    """
    directory = Path(directory).resolve()
    return _close_where(lambda serve: serve.data_dir.resolve().is_relative_to(directory))


def unclosed() -> list[ServeProcess]:
    """The instances not yet closed (running or not)."""
    return list(_live)


def close_all() -> list[int]:
    """Close (SIGKILL) every unclosed :class:`ServeProcess`; return the pids that were still running.

    Run at interpreter exit, so no ``serve`` outlives the test session.
    """
    return _close_where(lambda serve: True)


def _close_where(selected: Callable[[ServeProcess], bool]) -> list[int]:
    killed = []
    for serve in [s for s in _live if selected(s)]:
        if serve.running and serve.pid is not None:
            killed.append(serve.pid)
        serve.close()
    return killed


atexit.register(close_all)
