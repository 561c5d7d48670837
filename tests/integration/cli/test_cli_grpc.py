"""The gRPC endpoint from the command line: ``rocketpipe serve --grpc-port`` and ``rocketpipe proxy``,
each in a process of its own, driven by the official RocketMQ 5 Python SDK (``rocketmq-python-client``)
over real TCP; what reached the store is read back with rocketpipe's remoting client."""

from __future__ import annotations

import asyncio
import os
import queue
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from rocketmq import ClientConfiguration, Credentials, FilterExpression, SimpleConsumer
from rocketmq import Message as SdkMessage
from rocketmq import Producer as SdkProducer

from rocketpipe import Admin
from rocketpipe.client import SyncAdmin
from rocketpipe.protocol.message import MessageExt, decode_records
from rocketpipe.testing.cluster import LocalCluster, local_cluster
from waiting import wait_until_sync


class Running:
    """A ``python -m rocketpipe ARGS`` process whose merged stdout/stderr a thread collects."""

    def __init__(self, args: Sequence[str]) -> None:
        env = {k: v for k, v in os.environ.items() if k != "NAMESRV_ADDR"}
        cmd = [sys.executable, "-m", "rocketpipe", *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        self.lines: queue.Queue[str] = queue.Queue()
        self.out = ""
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        for line in self.proc.stdout or ():
            self.lines.put(line)

    def _collect(self) -> str:
        while not self.lines.empty():
            self.out += self.lines.get_nowait()
        return self.out

    def wait_for(self, pattern: str, timeout: float = 60.0) -> str:
        """The first group of ``pattern`` once the output shows it."""
        found: list[str] = []

        def seen() -> bool:
            m = re.search(pattern, self._collect())
            if m is None and self.proc.poll() is not None:
                raise AssertionError(f"exited with {self.proc.returncode} before {pattern!r}:\n{self._collect()}")
            if m is not None:
                found.append(m.group(1))
            return m is not None

        wait_until_sync(seen, timeout=timeout, interval=0.05, what=f"{pattern!r} in the output")
        return found[0]

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """Send ``sig`` and return the exit code (killed after 30 s)."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(10)
            self.proc.stdout and self.proc.stdout.close()


@pytest.fixture
def running() -> Iterator[list[Running]]:
    started: list[Running] = []
    yield started
    for r in started:
        r.stop(signal.SIGKILL)


def sdk_send(endpoint: str, topic: str, bodies: list[bytes], tag: str = "TagA") -> list[str]:
    """Send ``bodies`` with the SDK's Producer through ``endpoint``; the message ids."""
    producer = SdkProducer(ClientConfiguration(endpoint, Credentials()), (topic,))
    producer.startup()
    try:
        ids = []
        for body in bodies:
            m = SdkMessage()
            m.topic, m.body, m.tag = topic, body, tag
            ids.append(producer.send(m).message_id)
        return ids
    finally:
        producer.shutdown()


def stored(admin: SyncAdmin, topic: str) -> list[MessageExt]:
    out: list[MessageExt] = []
    for q in admin.topic_queues(topic):
        raw = admin.pull_raw(q, 0, 64)
        if raw.body:
            out.extend(decode_records(raw.body))
    return out


def test_serve_grpc_port_serves_the_sdk_producer_and_stops_cleanly(tmp_path: Path, running: list[Running]) -> None:
    store = str(tmp_path / "store")
    served = Running(["serve", "--port", "0", "--namesrv-port", "0", "--grpc-port", "0", "--data-dir", store])
    running.append(served)
    served.wait_for(r"(ready)")
    namesrv = served.wait_for(r"name server listening on (\S+)")
    endpoint = served.wait_for(r"gRPC endpoint \(RocketMQ 5 SDKs\) on (\S+)")
    assert endpoint.startswith("127.0.0.1:") and not endpoint.endswith(":0")
    with SyncAdmin(namesrv_addr=namesrv) as admin:
        admin.create_topic("GrpcServe", queue_nums=2)
        wait_until_sync(lambda: len(admin.topic_queues("GrpcServe")) == 2, timeout=30, what="topic routed")
        ids = sdk_send(endpoint, "GrpcServe", [b"a", b"b", b"c"])
        got = {m.msg_id: m.body for m in stored(admin, "GrpcServe")}
    assert got == dict(zip(ids, [b"a", b"b", b"c"], strict=True))
    assert served.stop() == 0
    out = served._collect()
    assert "rocketpipe: stopped" in out and "Traceback" not in out


def sdk_receive(endpoint: str, group: str, topic: str, want: int) -> dict[str, bytes]:
    """Receive with the SDK's SimpleConsumer, acknowledging each message, until ``want`` distinct
    messages arrived (at most 20 long-polling receives); message id → body."""
    consumer = SimpleConsumer(
        ClientConfiguration(endpoint, Credentials()), group, {topic: FilterExpression("TagA")}, await_duration=5
    )
    consumer.startup()
    got: dict[str, bytes] = {}
    try:
        for _ in range(20):
            for m in consumer.receive(16, 15):
                got[m.message_id] = m.body
                consumer.ack(m)
            if len(got) >= want:
                return got
        raise AssertionError(f"after 20 receives: {got}")
    finally:
        consumer.shutdown()


async def test_proxy_command_fronts_a_remoting_cluster_for_sdk_producer_and_consumer(
    tmp_path: Path, running: list[Running]
) -> None:
    async with local_cluster(tmp_path / "store", auto_create_topic_enable=False) as cluster:
        async with Admin(cluster.namesrv_addr) as admin:
            await admin.create_topic("GrpcProxy", 4)
        proc = Running(["proxy", "-n", cluster.namesrv_addr, "--port", "0"])
        running.append(proc)
        endpoint = await asyncio.to_thread(proc.wait_for, r"gRPC endpoint \(RocketMQ 5 SDKs\) on (\S+) for")
        await asyncio.to_thread(proc.wait_for, r"(ready)")
        assert endpoint.startswith("127.0.0.1:") and not endpoint.endswith(":0")
        bodies = [f"p{i}".encode() for i in range(6)]
        ids = await asyncio.to_thread(sdk_send, endpoint, "GrpcProxy", bodies)
        assert await stored_async(cluster, "GrpcProxy") == sorted(bodies)  # in the cluster's store
        got = await asyncio.to_thread(sdk_receive, endpoint, "GrpcProxyGroup", "GrpcProxy", len(bodies))
        assert got == dict(zip(ids, bodies, strict=True))
        assert await asyncio.to_thread(proc.stop, signal.SIGINT) == 0
    out = proc._collect()
    assert "rocketpipe proxy: stopped" in out and "Traceback" not in out


async def stored_async(cluster: LocalCluster, topic: str) -> list[bytes]:
    async with Admin(cluster.namesrv_addr) as admin:
        out: list[bytes] = []
        for q in await admin.topic_queues(topic):
            raw = await admin.pull_raw(q, 0, 64)
            if raw.body:
                out.extend(m.body for m in decode_records(raw.body))
    return sorted(out)
