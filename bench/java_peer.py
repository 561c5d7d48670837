"""The produce/consume scenarios driven by Apache RocketMQ's own Java client against its own broker.

Target ``java`` of ``bench/produce_consume.py``: a real Apache RocketMQ 5.3.3 broker (as the
``apache`` target starts it) and ``io.rocketpipe.interop.BenchScenario`` (tests/interop/java,
built with rocketmq-client 5.3.3 from Maven Central) in one JVM with G1 and the C2 compiler, up
for the whole bench. The bench sends it one scenario at a time (a line on its stdin), in turn
with the other targets, so its ratios are interleaved like theirs; its warm-up is the bench's
warm-up round. Scenario counterparts: the same sends; the Python ``pull_raw + decode`` against
the Java ``DefaultLitePullConsumer`` (32 per pull, like the broker's cap); the push consumer
against ``DefaultMQPushConsumer``.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from peers import Result, Served, Unavailable, apache_broker, one_line

CLIENT_VERSION = "5.3.3"
#: Python scenario name -> the Java scenario it is compared with.
COUNTERPART = {
    "send ×1 in flight": "send x1 in flight",
    "send ×64 in flight": "send x64 in flight",
    "send_batch 32/req ×4": "send_batch 32/req x4",
    "pull_raw+decode": "lite pull",
    "push consumer": "push consumer",
}
_JVM = ("-Xms512m", "-Xmx1g", "-XX:+UseG1GC", "-Djava.net.preferIPv4Stack=true")


def _classpath(home: Path) -> list[str]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "interop"))
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    try:
        from interop_support import build_java_project
    except ImportError as exc:
        raise Unavailable(f"cannot load the Java scenario builder: {one_line(exc)}") from exc
    try:
        return build_java_project(CLIENT_VERSION, home)
    except Exception as exc:
        raise Unavailable(f"building the Java scenarios failed: {one_line(exc)}") from exc


#: seconds one scenario may take before the JVM is declared stuck
SCENARIO_TIMEOUT = 900.0


@dataclass(slots=True)
class JavaClient:
    """The running ``BenchScenario`` JVM: :meth:`run` asks it for one scenario at a time."""

    namesrv: str
    proc: subprocess.Popen[str]

    def run(self, scenario: str, prefix: str, n: int, size: int) -> Result:
        """Run the Java ``scenario`` (a :data:`COUNTERPART` value) on the ``prefix-*`` topics with
        ``n`` messages of ``size`` bytes; blocks. A failed scenario comes back as a :class:`Result` with ``error``.

        Raises:
            RuntimeError: the JVM did not answer within :data:`SCENARIO_TIMEOUT` or exited (it is
                then stopped, so that a late answer cannot pass for the next scenario's, and
                every later call raises too).
        """
        stdin, stdout = self.proc.stdin, self.proc.stdout
        assert stdin is not None and stdout is not None
        if self.proc.poll() is not None:
            raise RuntimeError(f"the Java client exited with {self.proc.returncode}")
        stdin.write(f"run {prefix} {n} {size} {scenario}\n")
        stdin.flush()
        try:
            line = _read_json_line(stdout, SCENARIO_TIMEOUT)
        except RuntimeError:
            self.proc.kill()
            self.proc.wait()
            raise
        if "error" in line:
            return Result(scenario, error=str(line["error"])[:200])
        return Result(scenario, int(line["messages"]), float(line["seconds"]))


def _read_json_line(out: IO[str], timeout: float) -> dict[str, object]:
    """The next line of ``out`` that is a JSON object (the JVM may log other lines).

    Raises:
        RuntimeError: none within ``timeout`` seconds, or the stream ended.
    """
    got: list[dict[str, object]] = []

    def read() -> None:
        for line in out:
            if line.startswith("{"):
                got.append(json.loads(line))
                return

    reader = threading.Thread(target=read, name="java-peer-out", daemon=True)
    reader.start()
    reader.join(timeout)
    if not got:
        raise RuntimeError(f"BenchScenario gave no answer within {timeout:.0f} s (or exited)")
    return got[0]


@contextlib.contextmanager
def java_target(tmp: Path, flush: str) -> Iterator[Served]:
    """Apache RocketMQ 5.3.3 (name server + broker) and the ``BenchScenario`` JVM; yields a
    :class:`Served` whose ``handle`` is the :class:`JavaClient`, ``pids`` the broker's JVMs and
    ``client_pids`` the client JVM. Stops both at exit.

    Raises:
        Unavailable: the Java project cannot be built, or a JVM does not start.
    """
    classpath = _classpath(tmp / "java-home")
    with apache_broker(tmp, flush) as served:
        cmd = [
            "java",
            *_JVM,
            f"-Duser.home={tmp / 'java-home'}",
            "-cp",
            ":".join(classpath),
            "io.rocketpipe.interop.BenchScenario",
            served.handle,
        ]
        proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1
        )
        try:
            assert proc.stdout is not None
            try:
                _read_json_line(proc.stdout, 120)
            except RuntimeError as exc:
                raise Unavailable(f"BenchScenario did not start: {exc}") from None
            yield Served(JavaClient(served.handle, proc), served.pids, client_pids=(proc.pid,))
        finally:
            with contextlib.suppress(OSError, ValueError):
                if proc.stdin is not None:
                    proc.stdin.write("quit\n")
                    proc.stdin.close()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
