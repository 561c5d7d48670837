"""A real Apache RocketMQ (name server + broker JVMs) on 127.0.0.1, for interop tests (L4).

The artifacts (``rocketmq-namesrv``, ``rocketmq-broker``, ``rocketmq-tools``, ``rocketmq-client``
and their dependencies) come from Maven Central through the machine's ``mvn``, cached in the
local Maven repository (``~/.m2``); see ``tests/interop/apache/pom.xml``::

    cp = resolve_classpath("5.3.3")                 # mvn dependency:build-classpath (offline first)
    with apache_cluster("5.3.3", tmp_dir) as c:     # java ... NamesrvStartup / BrokerStartup
        c.namesrv_addr, c.broker_addr
        run_mqadmin(cp, "topicList", "-n", c.namesrv_addr)

Everything runs in a fresh ``ROCKETMQ_HOME`` / ``user.home`` / store directory under the given
work directory, with a small heap, on free ports; every wait is bounded, and the JVMs (own
process groups) are stopped — SIGTERM, then SIGKILL — by whoever started them.

Only the standard library is used here: starting and probing the Apache servers never goes
through rocketpipe's own protocol code (the readiness probe is a hand-built JSON remoting frame).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

#: The Apache RocketMQ server versions the interop suite runs against, by fixture label.
#: 4.9.8 is wanted for "apache-4", but its rocketmq-namesrv / rocketmq-broker artifacts are not
#: in the Maven repository reachable from CI (HTTP 404; 4.9.8 client/tools are there), so the
#: newest 4.x server that is, 4.9.7, stands in. Override with ROCKETPIPE_APACHE4_VERSION /
#: ROCKETPIPE_APACHE5_VERSION.
APACHE_VERSIONS: Final[dict[str, str]] = {
    "apache-5": os.environ.get("ROCKETPIPE_APACHE5_VERSION", "5.3.3"),
    "apache-4": os.environ.get("ROCKETPIPE_APACHE4_VERSION", "4.9.7"),
}

#: Default location of the pom listing the server-side artifacts.
SERVER_POM: Final = Path(__file__).resolve().parents[3] / "tests" / "interop" / "apache" / "pom.xml"

#: JVM options of every Apache JVM started here: small heap, serial GC, C1 only (fast start-up),
#: and the module opens RocketMQ's mmap code needs on Java 17. Direct memory may grow to 1 GiB
#: (runbroker.sh: 15 GiB): a 5.3.3 broker gives every thread that puts a message its own direct
#: encoder buffer of maxMessageSize + 64 KiB (``CommitLog.putMessageThreadLocal``), so after some
#: 60 threads a 256 MiB cap fails each new thread's puts (an END_TRANSACTION's commit, say) with
#: OutOfMemoryError. Direct memory is taken as used, not at start-up.
JVM_OPTS: Final[tuple[str, ...]] = (
    "-Xms256m",
    "-Xmx256m",
    "-XX:MaxDirectMemorySize=1g",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:-UsePerfData",
    "-Djava.net.preferIPv4Stack=true",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",  # 4.9.x unmaps deleted topics' files via Cleaner
)

#: One-second delay levels (as in the embedded test cluster), so that retries come back quickly.
FAST_DELAY_LEVELS: Final = " ".join(["1s"] * 18)

CLUSTER_NAME: Final = "RocketPipeInterop"
BROKER_NAME: Final = "apache-broker-a"

_LOGBACK: Final = """<?xml version="1.0" encoding="UTF-8"?>
<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>{log}</file>
    <encoder><pattern>%d{{HH:mm:ss.SSS}} %-5p %c{{1}} [%t] - %m%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
"""


class ApacheUnavailableError(RuntimeError):
    """Apache RocketMQ could not be obtained (Maven) or started; the message says why."""


# ---------------------------------------------------------------------------------- Maven


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rocketpipe" / "interop"


def resolve_classpath(
    version: str, pom: Path = SERVER_POM, *, timeout: float = 900.0, props: dict[str, str] | None = None
) -> list[str]:
    """The jars of ``pom`` with ``-Drocketmq.version=version`` (and ``props``), resolved by Maven.

    Runs ``mvn -B -q [-o] -f pom dependency:build-classpath`` — offline first (everything is
    normally cached in ``~/.m2``), online when that fails — and remembers the result (keyed by
    the pom's content and the properties) under ``~/.cache/rocketpipe/interop``.

    Raises:
        ApacheUnavailableError: ``mvn`` is missing or cannot resolve the artifacts (the message
            carries Maven's error lines).
    """
    all_props = {"rocketmq.version": version, **(props or {})}
    key = hashlib.sha256(pom.read_bytes() + json.dumps(all_props, sort_keys=True).encode()).hexdigest()[:16]
    cache = _cache_dir() / f"classpath-{pom.parent.name}-{version}-{key}.txt"
    if cache.exists():
        jars = [j for j in cache.read_text().strip().split(os.pathsep) if j]
        if jars and all(Path(j).exists() for j in jars):
            return jars
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ApacheUnavailableError("Maven (mvn) is not on PATH")
    cache.parent.mkdir(parents=True, exist_ok=True)
    out = cache.with_suffix(".tmp")
    defines = [f"-D{k}={v}" for k, v in all_props.items()]
    errors = ""
    for offline in (True, False):
        cmd = [
            mvn,
            "-B",
            "-q",
            *(["-o"] if offline else []),
            "-f",
            str(pom),
            *defines,
            "dependency:build-classpath",
            f"-Dmdep.outputFile={out}",
        ]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired as exc:
            raise ApacheUnavailableError(f"{' '.join(cmd)} timed out after {timeout}s") from exc
        if proc.returncode == 0 and out.exists():
            out.replace(cache)
            return [j for j in cache.read_text().strip().split(os.pathsep) if j]
        errors = "\n".join(line for line in (proc.stdout + proc.stderr).splitlines() if "ERROR" in line)[:4000]
    raise ApacheUnavailableError(f"Maven could not resolve Apache RocketMQ {version} ({pom}):\n{errors}")


# ---------------------------------------------------------------------------------- probing


def _free_port_block(offsets: Sequence[int] = (0,), attempts: int = 200) -> int:
    """A port P with P+o free on 127.0.0.1 for every o in ``offsets`` (best effort, racy)."""
    for _ in range(attempts):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if any(not 1024 < port + o < 65535 for o in offsets):
            continue
        socks: list[socket.socket] = []
        try:
            for o in offsets:
                s = socket.socket()
                socks.append(s)
                s.bind(("0.0.0.0", port + o))  # the 4.x servers bind every interface
            return port
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise ApacheUnavailableError("no free port block found")


@dataclass(frozen=True)
class RemotingReply:
    """A reply to :func:`remoting_request`."""

    code: int
    remark: str | None
    ext_fields: dict[str, str]
    body: bytes


def remoting_request(
    addr: str, code: int, ext: dict[str, str] | None = None, timeout: float = 3.0, *, tls: bool = False
) -> RemotingReply:
    """Send one JSON-serialised remoting request to ``addr`` and return the reply.

    A hand-built frame (length, header length, header JSON, body) so that the fixture and the
    tests' independent checks do not depend on the code they test. ``tls=True`` speaks TLS
    without checking the server's certificate (a server in ``tls.server.mode=enforcing``).
    """
    host, port = addr.rsplit(":", 1)
    header = json.dumps(
        {"code": code, "language": "JAVA", "version": 401, "opaque": 1, "flag": 0, "extFields": ext or {}}
    ).encode()
    frame = struct.pack(">II", 4 + len(header), len(header)) + header
    with contextlib.ExitStack() as stack:
        s = stack.enter_context(socket.create_connection((host, int(port)), timeout=timeout))
        if tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            s = stack.enter_context(ctx.wrap_socket(s))
        s.sendall(frame)
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">I", buf[:4])[0]:
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError(f"{addr} closed the connection")
            buf += chunk
    total = struct.unpack(">I", buf[:4])[0]
    hlen = struct.unpack(">I", buf[4:8])[0] & 0xFFFFFF
    reply = json.loads(buf[8 : 8 + hlen])
    return RemotingReply(
        int(reply["code"]), reply.get("remark"), dict(reply.get("extFields") or {}), buf[8 + hlen : 4 + total]
    )


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


# ---------------------------------------------------------------------------------- processes


@dataclass
class JavaProcess:
    """A JVM started by this module, in its own process group, output to ``log``."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    def alive(self) -> bool:
        return self.popen.poll() is None

    def tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM (the servers' shutdown hooks run), SIGKILL after ``grace`` seconds."""
        if self.popen.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, signal.SIGTERM)
        try:
            self.popen.wait(grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(10)


def java_command(
    classpath: Sequence[str],
    main: str,
    *args: str,
    jvm_opts: Sequence[str] = JVM_OPTS,
    props: dict[str, str] | None = None,
) -> list[str]:
    """``java <jvm_opts> -D... -cp <classpath> main args``."""
    java = shutil.which("java")
    if java is None:
        raise ApacheUnavailableError("java is not on PATH")
    return [
        java,
        *jvm_opts,
        *(f"-D{k}={v}" for k, v in (props or {}).items()),
        "-cp",
        os.pathsep.join(classpath),
        main,
        *args,
    ]


def start_java(
    name: str, cmd: Sequence[str], log: Path, env: dict[str, str] | None = None, cwd: Path | None = None
) -> JavaProcess:
    """Start ``cmd`` in its own session (so that :meth:`JavaProcess.stop` reaches all of it)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as out:
        popen = subprocess.Popen(
            list(cmd),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
    return JavaProcess(name, popen, log)


# ---------------------------------------------------------------------------------- cluster


@dataclass
class ApacheCluster:
    """A running Apache RocketMQ name server + one master broker.

    Attributes:
        version: the Apache RocketMQ version (e.g. ``"5.3.3"``).
        namesrv_addr / broker_addr: ``"127.0.0.1:port"``.
        classpath: the jars the JVMs run with (namesrv, broker, tools, client).
        home: the work directory (ROCKETMQ_HOME, user.home, store, logs).
        cluster_name / broker_name: as registered with the name server.
    """

    version: str
    namesrv_addr: str
    broker_addr: str
    classpath: list[str]
    home: Path
    cluster_name: str = CLUSTER_NAME
    broker_name: str = BROKER_NAME
    processes: list[JavaProcess] = field(default_factory=list)
    startup_seconds: float = 0.0

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    def stop(self) -> None:
        """Stop the broker, then the name server (bounded: ~5 s each, then SIGKILL)."""
        for p in reversed(self.processes):
            p.stop()

    def env(self) -> dict[str, str]:
        return _java_env(self.home)

    def mqadmin(self, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        """Run ``mqadmin <args> -n <namesrv>`` (rocketmq-tools of this version)."""
        return run_mqadmin(self.classpath, *args, "-n", self.namesrv_addr, home=self.home, timeout=timeout)


def _java_env(home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS"))
    }
    env["ROCKETMQ_HOME"] = str(home)
    return env


def _home_props(home: Path) -> dict[str, str]:
    return {
        "user.home": str(home),
        "rocketmq.home.dir": str(home),
        "rocketmq.client.logRoot": str(home / "logs"),
        "rocketmq.client.logLevel": "WARN",
        "rocketmq.namesrv.domain": "localhost.invalid",  # never ask jmenv.tbsite.net for a name server
    }


def prepare_home(home: Path) -> None:
    """ROCKETMQ_HOME with the logback files the 4.x start-up classes require."""
    conf = home / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    for name in ("namesrv", "broker", "tools"):
        (conf / f"logback_{name}.xml").write_text(_LOGBACK.format(log=home / "logs" / f"{name}.log"))


def run_mqadmin(
    classpath: Sequence[str], *args: str, home: Path, timeout: float = 60.0
) -> subprocess.CompletedProcess[str]:
    """``org.apache.rocketmq.tools.command.MQAdminStartup args`` with a bounded run time."""
    prepare_home(home)
    opts = ("-Xms64m", "-Xmx128m", *JVM_OPTS[3:])
    cmd = java_command(
        classpath, "org.apache.rocketmq.tools.command.MQAdminStartup", *args, jvm_opts=opts, props=_home_props(home)
    )
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, env=_java_env(home), cwd=home, check=False
    )


def _broker_conf(version: str, home: Path, namesrv_addr: str, port: int, extra: dict[str, str]) -> str:
    store = home / "store"
    conf: dict[str, str] = {
        "brokerClusterName": CLUSTER_NAME,
        "brokerName": BROKER_NAME,
        "brokerId": "0",
        "brokerRole": "ASYNC_MASTER",
        "flushDiskType": "ASYNC_FLUSH",
        "namesrvAddr": namesrv_addr,
        "listenPort": str(port),
        "brokerIP1": "127.0.0.1",
        "brokerIP2": "127.0.0.1",
        "storePathRootDir": str(store),
        "storePathCommitLog": str(store / "commitlog"),
        "autoCreateTopicEnable": "true",
        "autoCreateSubscriptionGroup": "true",
        "enablePropertyFilter": "true",
        "messageDelayLevel": FAST_DELAY_LEVELS,
        "mappedFileSizeCommitLog": str(64 * 1024 * 1024),
        "mappedFileSizeConsumeQueue": str(30_000 * 20),
        "diskMaxUsedSpaceRatio": "95",
        "deleteWhen": "04",
        "fileReservedTime": "1",
        "sendMessageThreadPoolNums": "2",
        "pullMessageThreadPoolNums": "4",
        "registerBrokerTimeoutMills": "6000",
        "brokerHeartbeatInterval": "1000",
    }
    if int(version.split(".")[0]) >= 5:
        conf.update(
            {
                "bindAddress": "127.0.0.1",  # 5.x NettyServerConfig; 4.x binds every interface
                "mappedFileSizeTimerLog": str(8 * 1024 * 1024),
                # TimerFlushService copies the timer wheel into its mapping byte by byte (2 x 7
                # days of 1 s slots x 32 B = 37 MiB, a Java loop, C1-compiled here) and forces it
                # every timerFlushIntervalMs (1 s): a third of a core for the broker's whole life.
                # Delivery reads the wheel in memory; only its persistence is less frequent.
                "timerFlushIntervalMs": "10000",
                "timerWheelEnable": "true",
                "recallMessageEnable": "true",  # RECALL_MESSAGE (5.3.2+), off by default
                "enableSlaveActingMaster": "false",
                "enableControllerMode": "false",
                "metricsExporterType": "DISABLE",
                "traceTopicEnable": "false",
            }
        )
    conf.update(extra)
    return "".join(f"{k}={v}\n" for k, v in conf.items())


def _wait(what: str, proc: JavaProcess, ready: Callable[[], bool], deadline: float) -> None:
    while True:
        try:
            if ready():
                return
        except OSError:
            pass
        if not proc.alive():
            raise ApacheUnavailableError(
                f"{proc.name} exited with {proc.popen.returncode} before {what}:\n{proc.tail()}"
            )
        if time.monotonic() > deadline:
            raise ApacheUnavailableError(f"timed out waiting for {what}:\n{proc.tail()}")
        time.sleep(0.2)


def start_apache_cluster(
    version: str,
    work_dir: Path,
    *,
    classpath: Sequence[str] | None = None,
    timeout: float = 120.0,
    broker_conf: dict[str, str] | None = None,
    broker_jvm_opts: Sequence[str] = JVM_OPTS,
    plain_acl: str | None = None,
    tls_props: dict[str, str] | None = None,
) -> ApacheCluster:
    """Start an Apache name server and broker ``version`` under ``work_dir``; wait until they serve.

    ``broker_jvm_opts`` replaces :data:`JVM_OPTS` for the broker JVM only (e.g. a larger heap and
    the C2 compiler for a benchmark; keep the ``--add-opens`` options); the name server always
    runs with :data:`JVM_OPTS`.

    ``plain_acl`` (the text of a plain_acl.yml) turns on the broker's ACL 1.0
    (``aclEnable=true``, the file written to ``$ROCKETMQ_HOME/conf/plain_acl.yml``). Only 4.x and
    5.0–5.2 brokers have ACL 1.0; 5.3 keeps ``aclEnable`` but ignores it (ACL 2.0 replaced it).

    ``tls_props`` are Java's TLS system properties for both JVMs (``TlsSystemConfig``: e.g.
    ``{"tls.server.mode": "enforcing", "tls.test.mode.enable": "false", "tls.server.certPath":
    ..., "tls.server.keyPath": ...}``; keys in PKCS#8 PEM). ``tls.config.file`` is pointed at a
    file that does not exist unless given, so ``/etc/rocketmq/tls.properties`` is never read.
    With ``tls.server.mode=enforcing`` the readiness checks speak TLS.

    The name server is ready when it answers GET_BROKER_CLUSTER_INFO (106); the cluster is
    ready when that answer lists our broker at its address. Stop it with
    :meth:`ApacheCluster.stop` (also done here when start-up fails).

    Raises:
        ApacheUnavailableError: Maven, Java, a port or a start-up failed (message has the log tail).
    """
    t0 = time.monotonic()
    deadline = t0 + timeout
    cp = list(classpath) if classpath is not None else resolve_classpath(version)
    home = Path(work_dir).resolve()
    prepare_home(home)
    env = _java_env(home)
    props = _home_props(home)
    tls = False
    if tls_props is not None:
        props |= {"tls.config.file": str(home / "conf" / "tls.properties.absent"), **tls_props}
        tls = tls_props.get("tls.server.mode") == "enforcing"

    ns_port = _free_port_block()
    ns_addr = f"127.0.0.1:{ns_port}"
    (home / "namesrv.conf").write_text(f"listenPort={ns_port}\nbindAddress=127.0.0.1\nrocketmqHome={home}\n")
    cluster = ApacheCluster(version, ns_addr, "", cp, home)
    try:
        ns = start_java(
            "namesrv",
            java_command(
                cp, "org.apache.rocketmq.namesrv.NamesrvStartup", "-c", str(home / "namesrv.conf"), props=props
            ),
            home / "logs" / "namesrv.out",
            env,
            home,
        )
        cluster.processes.append(ns)
        _wait(f"the name server on {ns_addr}", ns, lambda: remoting_request(ns_addr, 106, tls=tls).code == 0, deadline)

        # listenPort, the fast ("VIP") port listenPort-2 and the HA port listenPort+1
        port = _free_port_block((-2, 0, 1))
        cluster.broker_addr = f"127.0.0.1:{port}"
        extra_conf = dict(broker_conf or {})
        if plain_acl is not None:
            (home / "conf" / "plain_acl.yml").write_text(plain_acl, encoding="utf-8")
            extra_conf["aclEnable"] = "true"
        (home / "broker.conf").write_text(_broker_conf(version, home, ns_addr, port, extra_conf))
        broker = start_java(
            "broker",
            java_command(
                cp,
                "org.apache.rocketmq.broker.BrokerStartup",
                "-c",
                str(home / "broker.conf"),
                jvm_opts=broker_jvm_opts,
                props=props,
            ),
            home / "logs" / "broker.out",
            env,
            home,
        )
        cluster.processes.append(broker)

        def registered() -> bool:
            reply = remoting_request(ns_addr, 106, tls=tls)
            return reply.code == 0 and cluster.broker_addr.encode() in reply.body and _port_open(port)

        _wait(f"broker {cluster.broker_addr} registered with {ns_addr}", broker, registered, deadline)
    except BaseException:
        cluster.stop()
        raise
    cluster.startup_seconds = time.monotonic() - t0
    return cluster


@contextlib.contextmanager
def apache_cluster(version: str, work_dir: Path, **kw: object) -> Iterator[ApacheCluster]:
    """``with apache_cluster("5.3.3", tmp) as c:`` — :func:`start_apache_cluster`, stopped on exit."""
    cluster = start_apache_cluster(version, work_dir, **kw)  # type: ignore[arg-type]
    try:
        yield cluster
    finally:
        cluster.stop()
