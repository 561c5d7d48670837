"""A Spark standalone cluster (one master, one worker) from the pyspark install, for deployment tests.

``with standalone_cluster(work_dir, python=...) as sc:`` starts
``bin/spark-class org.apache.spark.deploy.master.Master`` and ``...deploy.worker.Worker`` of the
installed pyspark package on 127.0.0.1 (ephemeral RPC and web UI ports, read back from their
logs), waits until the master's ``/json/`` lists the worker as ALIVE, and yields a
:class:`Standalone` whose :meth:`Standalone.submit` runs ``bin/spark-submit --master spark://…``.
On exit (also after a failure) it stops the worker, then the master: SIGTERM to each one's
process group (the worker's executors included), SIGKILL after a bounded wait.

Every Spark process gets a copy of the test's environment without ``PYTHONPATH``,
``SPARK_CONF_DIR`` pointing at an empty directory (no user configuration leaks in), and
``PYSPARK_PYTHON`` / ``PYSPARK_DRIVER_PYTHON`` = ``python``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from waiting import wait_until_sync

_MASTER_URL = re.compile(r"Starting Spark master at (spark://\S+)")
_UI_PORT = re.compile(r"Bound MasterWebUI to \S+, and started at http://[^:/\s]+:(\d+)")


def spark_home() -> Path:
    """The pyspark package directory: it holds ``bin/spark-class``, ``bin/spark-submit`` and ``jars/``."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def spark_env(work_dir: Path, python: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of every process of the cluster and of ``spark-submit``."""
    conf_dir = work_dir / "conf"
    conf_dir.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("SPARK_")}
    env.update(
        SPARK_HOME=str(spark_home()),
        SPARK_CONF_DIR=str(conf_dir),
        SPARK_LOG_DIR=str(work_dir / "logs"),
        SPARK_PID_DIR=str(work_dir),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOCAL_DIRS=str(work_dir / "local"),
        SPARK_DAEMON_MEMORY="256m",
        # C1 only: the daemons and this short application never pay back C2's compile time.
        SPARK_DAEMON_JAVA_OPTS="-XX:TieredStopAtLevel=1",
        SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",
        PYSPARK_PYTHON=python,
        PYSPARK_DRIVER_PYTHON=python,
    )
    env.update(extra or {})
    return env


def _stop_group(proc: subprocess.Popen[Any], grace: float = 20.0) -> None:
    """SIGTERM the process group ``proc`` leads, then SIGKILL it after ``grace`` seconds."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    # Children (executors) may outlive their parent; the group id is still ours.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)


@dataclass
class Standalone:
    """A running standalone cluster.

    Attributes:
        master_url: ``spark://127.0.0.1:port``.
        ui_url: the master's web UI, ``http://127.0.0.1:port``.
        env: the environment its processes run with (pass it on to ``spark-submit``).
        work_dir: logs, the worker's directory (``worker/app-…/<executor>/stderr``), conf.
    """

    master_url: str
    ui_url: str
    env: dict[str, str]
    work_dir: Path
    _procs: list[subprocess.Popen[Any]] = field(default_factory=list)

    def state(self) -> dict[str, Any]:
        """The master's ``/json/`` document (workers, active and completed applications)."""
        with urllib.request.urlopen(self.ui_url + "/json/", timeout=5) as resp:
            doc: dict[str, Any] = json.load(resp)
        return doc

    def alive_workers(self) -> int:
        try:
            return sum(1 for w in self.state().get("workers", []) if w.get("state") == "ALIVE")
        except OSError:
            return 0

    def submit(
        self,
        args: Sequence[str],
        *,
        log: Path,
        timeout: float = 120.0,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``spark-submit --master <master_url> *args`` (in ``cwd``); stdout and stderr go to ``log`` too."""
        cmd = [str(spark_home() / "bin" / "spark-submit"), "--master", self.master_url, *args]
        with log.open("w") as out:
            proc = subprocess.Popen(
                cmd,
                env=env or self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                text=True,
                cwd=cwd,
            )
            try:
                proc.wait(timeout=timeout)
            finally:
                _stop_group(proc, grace=10.0)
        return subprocess.CompletedProcess(cmd, proc.returncode, log.read_text(), "")

    def logs(self) -> str:
        """The master's and worker's logs and every executor's stderr, for failure messages."""
        parts = []
        for p in sorted(self.work_dir.glob("*.log")) + sorted(self.work_dir.glob("worker/*/*/stderr")):
            parts.append(f"==> {p} <==\n{p.read_text(errors='replace')[-6000:]}")
        return "\n".join(parts)


def _launch(env: dict[str, str], cls: str, args: Sequence[str], log: Path) -> subprocess.Popen[Any]:
    out = log.open("w")
    try:
        return subprocess.Popen(
            [str(spark_home() / "bin" / "spark-class"), cls, *args],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    finally:
        out.close()


def _wait_for_line(proc: subprocess.Popen[Any], log: Path, pattern: re.Pattern[str], timeout: float) -> str:
    found: list[str] = []

    def seen() -> bool:
        m = pattern.search(log.read_text(errors="replace"))
        if m:
            found.append(m.group(1))
            return True
        if proc.poll() is not None:
            raise AssertionError(f"{log.name}: exited with {proc.returncode}:\n{log.read_text(errors='replace')}")
        return False

    wait_until_sync(seen, timeout=timeout, interval=0.1, what=f"{pattern.pattern!r} in {log}")
    return found[0]


@contextlib.contextmanager
def standalone_cluster(
    work_dir: Path, *, python: str, cores: int = 2, memory: str = "2g", timeout: float = 60.0
) -> Iterator[Standalone]:
    """A master and one worker (``cores`` cores, ``memory`` for executors) on 127.0.0.1."""
    work_dir.mkdir(parents=True, exist_ok=True)
    env = spark_env(work_dir, python)
    procs: list[subprocess.Popen[Any]] = []
    try:
        master_log = work_dir / "master.log"
        master = _launch(
            env,
            "org.apache.spark.deploy.master.Master",
            ["--host", "127.0.0.1", "--port", "0", "--webui-port", "0"],
            master_log,
        )
        procs.append(master)
        master_url = _wait_for_line(master, master_log, _MASTER_URL, timeout)
        ui_url = "http://127.0.0.1:" + _wait_for_line(master, master_log, _UI_PORT, timeout)
        sc = Standalone(master_url, ui_url, env, work_dir, procs)
        worker_log = work_dir / "worker.log"
        worker_args = ["--host", "127.0.0.1", "--port", "0", "--webui-port", "0", "--cores", str(cores)]
        worker_args += ["--memory", memory, "--work-dir", str(work_dir / "worker"), master_url]
        worker = _launch(env, "org.apache.spark.deploy.worker.Worker", worker_args, worker_log)
        procs.append(worker)

        def registered() -> bool:
            if worker.poll() is not None:
                raise AssertionError(f"the worker exited with {worker.returncode}:\n{worker_log.read_text()}")
            return sc.alive_workers() >= 1

        wait_until_sync(registered, timeout=timeout, interval=0.2, what="the worker registered with the master")
        yield sc
    finally:
        for proc in reversed(procs):
            _stop_group(proc)
