"""Helpers of the interop tests (imported by conftest.py and the test modules).

A module of its own (not conftest.py) so that ``from interop_support import ...`` is never
confused with another directory's conftest.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import threading
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocketpipe import (
    Admin,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    Message,
    MessageExt,
    MessageQueue,
    Producer,
    PushConsumer,
    SendResult,
)
from rocketpipe.protocol.message import decode_records
from rocketpipe.testing.apache import (
    JVM_OPTS,
    ApacheCluster,
    ApacheUnavailableError,
    _home_props,
    _java_env,
    resolve_classpath,
)
from waiting import wait_until

INTEROP_DIR = Path(__file__).resolve().parent
JAVA_PROJECT = INTEROP_DIR / "java"

#: Official Java client versions the Java → rocketpipe scenarios run with, by label.
JAVA_CLIENT_VERSIONS: dict[str, str] = {
    "java-5": os.environ.get("ROCKETPIPE_JAVA5_CLIENT_VERSION", "5.3.3"),
    "java-4": os.environ.get("ROCKETPIPE_JAVA4_CLIENT_VERSION", "4.9.8"),
}

#: Start-up, build and scenario durations, printed at the end of the session.
TIMINGS: dict[str, float] = {}


@dataclass
class Target:
    """Where a client test talks to: ``kind`` is ``embedded``, ``apache-5`` or ``apache-4``."""

    kind: str
    namesrv_addr: str
    broker_addr: str
    broker_name: str
    apache: ApacheCluster | None = None

    @property
    def is_apache(self) -> bool:
        return self.apache is not None


# ------------------------------------------------------------------------------ names and topics


def unique(prefix: str) -> str:
    """``<prefix>_<10 hex digits>``: a topic or group name no other test (or earlier run) uses."""
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


async def has_route(admin: Admin, topic: str, queues: int | None = None) -> bool:
    """True when the name server routes ``topic`` (with exactly ``queues`` queues when given);
    an error (no route yet) reads as False."""
    try:
        found = len(await admin.topic_queues(topic))
    except Exception:
        return False
    return found > 0 if queues is None else found == queues


async def read_topic(admin: Admin, topic: str) -> list[MessageExt]:
    """Every stored message of ``topic``: each queue from offset 0 to its max offset, by raw pulls."""
    out: list[MessageExt] = []
    for mq in await admin.topic_queues(topic):
        mx = await admin.max_offset(mq)
        offset = 0
        while offset < mx:
            raw = await admin.pull_raw(mq, offset, 32)
            batch = decode_records(raw.body)
            assert batch, f"nothing at {mq} offset {offset} < max {mx}"
            out.extend(batch)
            offset = batch[-1].queue_offset + 1
    return out


async def create_topic(admin: Admin, topic: str, queues: int) -> list[MessageQueue]:
    """Create ``topic`` with ``queues`` read / write queues, wait (30 s at most) until its route
    has them all, and return them."""
    await admin.create_topic(topic, queues)
    await wait_until(lambda: has_route(admin, topic, queues), timeout=30, what=f"route of {topic} with {queues} queues")
    return await admin.topic_queues(topic)


async def create_topic_on(t: Target, topic: str, queues: int) -> None:
    """:func:`create_topic` through an :class:`Admin` of its own on ``t``'s name server."""
    async with Admin(t.namesrv_addr) as admin:
        await create_topic(admin, topic, queues)


# ------------------------------------------------------------------------------ Java scenarios


@dataclass
class JavaClient:
    """The scenario project built against one official client version."""

    label: str
    version: str
    classpath: list[str]
    home: Path
    _mqadmin: MqadminSession | None = field(default=None, repr=False, compare=False)

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    async def run(
        self,
        scenario: str,
        namesrv_addr: str,
        *args: str,
        timeout: float = 90.0,
        jvm_props: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Run ``io.rocketpipe.interop.<scenario> <namesrv> args``; its last stdout line is JSON.

        ``jvm_props`` are extra ``-Dkey=value`` system properties (e.g. ``tls.enable``).
        """
        cmd = [
            "java",
            "-Xms64m",
            "-Xmx192m",
            *JVM_OPTS[3:],
            *(f"-D{k}={v}" for k, v in _home_props(self.home).items()),
            *(f"-D{k}={v}" for k, v in (jvm_props or {}).items()),
            "-cp",
            os.pathsep.join(self.classpath),
            f"io.rocketpipe.interop.{scenario}",
            namesrv_addr,
            *args,
        ]
        return await run_java_json(cmd, self.home, f"{scenario} ({self.label})", f"{self.label} {scenario}", timeout)

    async def mqadmin(self, namesrv_addr: str, *args: str, timeout: float = 60.0) -> tuple[int, str]:
        """Run ``mqadmin <args> -n <namesrv>`` (rocketmq-tools of this version): (exit code, stdout+stderr).

        The commands of one client run in one JVM (:class:`MqadminSession`), started at the first."""
        if self._mqadmin is None or not self._mqadmin.alive():
            self._mqadmin = MqadminSession.start(self)
        session = self._mqadmin
        t0 = time.monotonic()
        try:
            code, out = await asyncio.wait_for(asyncio.to_thread(session.run, [*args, "-n", namesrv_addr]), timeout)
        except TimeoutError:
            session.stop()
            raise AssertionError(f"mqadmin {' '.join(args)} ({self.label}) timed out after {timeout}s") from None
        TIMINGS[f"{self.label} mqadmin {args[0]}"] = time.monotonic() - t0
        return code, out

    def stop(self) -> None:
        """Stop the mqadmin JVM, if one was started."""
        if self._mqadmin is not None:
            self._mqadmin.stop()
            self._mqadmin = None


class MqadminSession:
    """``io.rocketpipe.interop.MqadminSession``: mqadmin commands one after another in one JVM of
    ``client``'s classpath (its JVM log: ``home/mqadmin-session.log``)."""

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self.popen = popen
        self.lock = threading.Lock()

    @classmethod
    def start(cls, client: JavaClient) -> MqadminSession:
        cmd = [
            "java",
            "-Xms64m",
            "-Xmx192m",
            *JVM_OPTS[3:],
            "-Djava.security.manager=allow",  # System.exit (bad options) trapped per command
            *(f"-D{k}={v}" for k, v in _home_props(client.home).items()),
            "-cp",
            os.pathsep.join(client.classpath),
            "io.rocketpipe.interop.MqadminSession",
        ]
        with (client.home / "mqadmin-session.log").open("ab") as log:
            popen = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env=_java_env(client.home),
                cwd=client.home,
                start_new_session=True,
            )
        return cls(popen)

    def alive(self) -> bool:
        return self.popen.poll() is None

    def run(self, args: list[str]) -> tuple[int, str]:
        """One command: (exit code, what it printed). Blocking."""
        assert not any("\t" in a or "\n" in a for a in args), args
        assert self.popen.stdin is not None and self.popen.stdout is not None
        with self.lock:
            self.popen.stdin.write(("\t".join(args) + "\n").encode())
            self.popen.stdin.flush()
            header = self.popen.stdout.readline().decode()
            if not header.startswith("@@mqadmin "):
                raise AssertionError(f"mqadmin session ended (exit {self.popen.poll()}): {header!r}")
            _, code, size = header.split()
            return int(code), self.popen.stdout.read(int(size)).decode(errors="replace")

    def stop(self) -> None:
        """Close its stdin (it exits), SIGKILL after 5 s."""
        with contextlib.suppress(OSError):
            assert self.popen.stdin is not None
            self.popen.stdin.close()
        try:
            self.popen.wait(5)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait(10)
        if self.popen.stdout is not None:
            self.popen.stdout.close()


def build_java_project(version: str, home: Path) -> list[str]:
    """``mvn -q [-o] package`` of tests/interop/java for client ``version``; the run classpath."""
    deps = resolve_classpath(version, JAVA_PROJECT / "pom.xml")
    build_dir = f"target/client-{version}"
    classes = JAVA_PROJECT / build_dir / "classes"
    sources = sorted((JAVA_PROJECT / "src").rglob("*.java"))
    newest_source = max(p.stat().st_mtime for p in [*sources, JAVA_PROJECT / "pom.xml"])
    stamp = classes / ".built"
    if not stamp.exists() or stamp.stat().st_mtime < newest_source:
        errors = ""
        for offline in (True, False):
            cmd = [
                "mvn",
                "-B",
                "-q",
                *(["-o"] if offline else []),
                "-f",
                str(JAVA_PROJECT / "pom.xml"),
                f"-Drocketmq.version={version}",
                f"-Dbuild.dir={build_dir}",
                "compile",
            ]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
            if proc.returncode == 0:
                break
            errors = (proc.stdout + proc.stderr)[-4000:]
        else:
            raise ApacheUnavailableError(f"building {JAVA_PROJECT} with rocketmq-client {version} failed:\n{errors}")
        stamp.touch()
    return [str(classes), *deps]


# ------------------------------------------------------------------------------ produce / consume


async def send_some(namesrv_addr: str, topic: str, n: int) -> list[SendResult]:
    """Send ``n`` messages ``m0``… (tags ``TA``, keys ``KK`` and ``k<i>``) one by one; their results."""
    async with Producer(unique("pg"), namesrv_addr=namesrv_addr) as p:
        return [await p.send(Message.build(topic, f"m{i}", tags="TA", keys=["KK", f"k{i}"])) for i in range(n)]


@asynccontextmanager
async def consumed(namesrv_addr: str, group: str, topic: str, n: int) -> AsyncIterator[PushConsumer]:
    """A push consumer of ``group`` that has consumed ``n`` messages of ``topic`` from the first
    offset (40 s at most) and persisted its offsets; it runs until the block ends."""
    got: list[MessageExt] = []
    consumer = PushConsumer(
        group, namesrv_addr=namesrv_addr, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    )
    consumer.subscribe(topic, "*")

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        got.extend(msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer.register_message_listener(listener)
    async with consumer:
        await wait_until(lambda: len(got) >= n, timeout=40, what=f"{n} messages consumed")
        await consumer.persist_offsets()
        yield consumer


async def run_java_json(cmd: list[str], home: Path, what: str, timing: str, timeout: float) -> dict[str, Any]:
    """Run the JVM ``cmd`` in ``home``; return the JSON object of its last stdout line that starts
    with ``{``, recording its time under ``TIMINGS[timing]``.

    Raises:
        AssertionError: ``what`` timed out after ``timeout`` s, exited non-zero or printed no JSON
            (the message has the tails of stdout and stderr).
    """
    t0 = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        *cmd,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=_java_env(home),
        cwd=home,
        start_new_session=True,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        proc.kill()
        out, err = await proc.communicate()
        raise AssertionError(
            f"{what} timed out after {timeout}s\nstdout:\n{out.decode()[-3000:]}\nstderr:\n{err.decode()[-3000:]}"
        ) from None
    TIMINGS[timing] = time.monotonic() - t0
    lines = [line for line in out.decode().splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise AssertionError(
            f"{what} exited {proc.returncode}\nstdout:\n{out.decode()[-3000:]}\nstderr:\n{err.decode()[-3000:]}"
        )
    result: dict[str, Any] = json.loads(lines[-1])
    return result
