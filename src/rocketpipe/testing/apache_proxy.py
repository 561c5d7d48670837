"""Apache RocketMQ's own gRPC proxy (``rocketmq-proxy``) in cluster mode on 127.0.0.1 (L4).

The control of the gRPC interop tests: the same RocketMQ 5 SDK scenarios run against
rocketpipe's :class:`~rocketpipe.proxy.ProxyServer` and against this JVM, both in front of one
Apache cluster (:func:`rocketpipe.testing.apache.start_apache_cluster`)::

    with apache_cluster("5.3.3", tmp / "cluster") as c, apache_proxy("5.3.3", c.namesrv_addr, tmp / "proxy") as p:
        p.grpc_addr                                  # the SDKs' endpoint, "127.0.0.1:port"

The artifact ``org.apache.rocketmq:rocketmq-proxy`` and its dependencies come from Maven Central
through ``mvn`` (``tests/interop/apache-proxy/pom.xml``, resolved as the broker's classpath is);
``org.apache.rocketmq.proxy.ProxyStartup`` runs with a ``rmq-proxy.json`` of its own
(``proxyMode`` cluster, the name server, free gRPC and remoting ports), a small JVM, and
``ROCKETMQ_HOME`` / ``user.home`` in the work directory. Only the standard library and
:mod:`rocketpipe.testing.apache` are used.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from rocketpipe.testing.apache import (
    CLUSTER_NAME,
    SERVER_POM,
    JavaProcess,
    _free_port_block,
    _home_props,
    _java_env,
    _port_open,
    _wait,
    java_command,
    prepare_home,
    resolve_classpath,
    start_java,
)

#: The pom listing ``rocketmq-proxy`` (its own directory: the classpath cache is keyed by it).
PROXY_POM: Final = SERVER_POM.parent.parent / "apache-proxy" / "pom.xml"


@dataclass
class ApacheProxy:
    """A running ``rocketmq-proxy`` JVM (cluster mode).

    Attributes:
        version: the Apache RocketMQ version (e.g. ``"5.3.3"``).
        grpc_addr: the gRPC endpoint the SDKs use, ``"127.0.0.1:port"``.
        remoting_addr: the proxy's remoting port (unused by the gRPC tests; bound all the same).
        process: the JVM; its output in ``process.log``, the proxy's own log under
            ``home/logs/rocketmqlogs``.
    """

    version: str
    grpc_addr: str
    remoting_addr: str
    home: Path
    process: JavaProcess
    startup_seconds: float = 0.0

    def stop(self) -> None:
        """SIGTERM, SIGKILL after 5 s."""
        self.process.stop()


def proxy_config(
    namesrv_addr: str, grpc_port: int, remoting_port: int, cluster_name: str = CLUSTER_NAME
) -> dict[str, object]:
    """The ``rmq-proxy.json`` of a cluster-mode proxy in front of ``namesrv_addr`` with few threads."""
    return {
        "proxyMode": "cluster",
        "rocketMQClusterName": cluster_name,
        "namesrvAddr": namesrv_addr,
        "grpcServerPort": grpc_port,
        "remotingListenPort": remoting_port,
        "grpcBossLoopNum": 1,
        "grpcWorkerLoopNum": 2,
        "grpcThreadPoolNums": 4,
        "grpcProducerThreadPoolNums": 2,
        "grpcConsumerThreadPoolNums": 2,
        "grpcRouteThreadPoolNums": 1,
        "grpcClientManagerThreadPoolNums": 1,
        "grpcTransactionThreadPoolNums": 1,
        "producerProcessorThreadPoolNums": 2,
        "consumerProcessorThreadPoolNums": 2,
        "topicRouteServiceThreadPoolNums": 2,
        "metadataThreadPoolNums": 1,
        "transactionHeartbeatThreadPoolNums": 1,
        "renewThreadPoolNums": 1,
        "renewMaxThreadPoolNums": 2,
        "heartbeatSyncerThreadPoolNums": 1,
        "rocketmqMQClientNum": 1,
        "metricsExporterType": "DISABLE",
        "enablePrintJstack": False,
    }


def start_apache_proxy(
    version: str,
    namesrv_addr: str,
    work_dir: Path,
    *,
    classpath: Sequence[str] | None = None,
    timeout: float = 120.0,
    config: dict[str, object] | None = None,
) -> ApacheProxy:
    """Start ``rocketmq-proxy`` ``version`` in cluster mode in front of ``namesrv_addr``; return
    once its gRPC port accepts connections. ``config`` adds to / overrides :func:`proxy_config`.

    Raises:
        ApacheUnavailableError: Maven, Java, a port or the start-up failed (message has the log tail).
    """
    t0 = time.monotonic()
    cp = list(classpath) if classpath is not None else resolve_classpath(version, PROXY_POM)
    home = Path(work_dir).resolve()
    prepare_home(home)
    grpc_port = _free_port_block()
    remoting_port = _free_port_block()
    while remoting_port == grpc_port:
        remoting_port = _free_port_block()
    conf = home / "conf" / "rmq-proxy.json"
    conf.write_text(json.dumps({**proxy_config(namesrv_addr, grpc_port, remoting_port), **(config or {})}, indent=2))
    cmd = java_command(
        cp, "org.apache.rocketmq.proxy.ProxyStartup", "-pc", str(conf), "-pm", "cluster", props=_home_props(home)
    )
    process = start_java("proxy", cmd, home / "logs" / "proxy.out", _java_env(home), home)
    proxy = ApacheProxy(version, f"127.0.0.1:{grpc_port}", f"127.0.0.1:{remoting_port}", home, process)
    try:
        _wait(f"Apache's proxy gRPC port {grpc_port}", process, lambda: _port_open(grpc_port), t0 + timeout)
    except BaseException:
        proxy.stop()
        raise
    proxy.startup_seconds = time.monotonic() - t0
    return proxy


@contextlib.contextmanager
def apache_proxy(version: str, namesrv_addr: str, work_dir: Path, **kw: object) -> Iterator[ApacheProxy]:
    """``with apache_proxy("5.3.3", c.namesrv_addr, tmp) as p:`` — :func:`start_apache_proxy`, stopped on exit."""
    proxy = start_apache_proxy(version, namesrv_addr, work_dir, **kw)  # type: ignore[arg-type]
    try:
        yield proxy
    finally:
        proxy.stop()
