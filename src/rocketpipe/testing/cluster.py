"""An embedded name server + broker on 127.0.0.1, for tests and demos (L4).

``async with local_cluster(tmp_path) as c:`` starts a :class:`~rocketpipe.namesrv.NameServer`
and a :class:`~rocketpipe.broker.Broker` registered with it, both on free ports, and closes
them (brokers first) on exit. ``local_cluster(tmp_path, brokers=2)`` runs two broker groups
(``broker-a``, ``broker-b``) in one cluster.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..broker import Broker, BrokerConfig
from ..client import Admin
from ..clock import SYSTEM_CLOCK, Clock
from ..errors import RocketMQError
from ..namesrv import NameServer
from ..transport.tls import TlsServerConfig


@dataclass(frozen=True, slots=True)
class LocalCluster:
    """A running local cluster.

    Attributes:
        namesrv_addr: ``"127.0.0.1:port"`` of the name server.
        broker_addr: ``"127.0.0.1:port"`` of the first broker (``broker-a``).
        broker: the first broker object (inspect its tables in tests).
        namesrv: the name-server object.
        brokers: every broker, ``broker-a``, ``broker-b``, … in order.
    """

    namesrv_addr: str
    broker_addr: str
    broker: Broker
    namesrv: NameServer
    brokers: tuple[Broker, ...] = ()

    @property
    def broker_addrs(self) -> list[str]:
        """The brokers' ``"127.0.0.1:port"`` addresses, in order."""
        return [b.address for b in self.brokers]


def broker_name(index: int) -> str:
    """``broker-a``, ``broker-b``, … for broker ``index`` (0-based) of a local cluster."""
    return f"broker-{chr(ord('a') + index)}"


@asynccontextmanager
async def local_cluster(
    store_dir: Path,
    *,
    clock: Clock = SYSTEM_CLOCK,
    brokers: int = 1,
    namesrv_tls: TlsServerConfig | None = None,
    **broker_overrides: Any,
) -> AsyncIterator[LocalCluster]:
    """Start a name server and ``brokers`` broker groups (one master each) registered with it.

    Args:
        store_dir: the first broker's store root (e.g. pytest's ``tmp_path``); broker ``i > 0``
            stores under the sibling ``<store_dir>-broker-<letter>``.
        clock: wall clock for the brokers (a :class:`~rocketpipe.testing.FakeClock` in tests).
        brokers: number of broker groups, 1..26, named ``broker-a``, ``broker-b``, … in the
            cluster ``broker_cluster_name`` (``DefaultCluster``).
        **broker_overrides: any :class:`~rocketpipe.broker.BrokerConfig` field for every broker
            (e.g. ``flush_disk_type="SYNC_FLUSH"``, ``mapped_file_size_commit_log=1 << 20``);
            not ``broker_name`` when ``brokers > 1``. TLS: ``tls_server=TlsServerConfig(...)``
            for the brokers' ports, ``tls_enable=True, tls_client=TlsClientConfig(...)`` for
            their registrations with a TLS name server.
        namesrv_tls: TLS of the name server's port (None: plain).

    Yields:
        A :class:`LocalCluster`; every broker's route is already registered.

    Raises:
        OSError: a port or a store directory is unusable.
        ValueError: ``brokers`` is out of range, or ``broker_name`` is given with several brokers.
    """
    if not 1 <= brokers <= 26:
        raise ValueError(f"brokers must be 1..26, not {brokers}")
    if brokers > 1 and "broker_name" in broker_overrides:
        raise ValueError("broker_name cannot be set for several brokers (they are broker-a, broker-b, ...)")
    namesrv = NameServer(tls_server=namesrv_tls)
    ns_addr = await namesrv.start()
    started: list[Broker] = []
    try:
        for i in range(brokers):
            root = Path(store_dir) if i == 0 else Path(f"{store_dir}-{broker_name(i)}")
            overrides = dict(broker_overrides)
            if brokers > 1:
                overrides["broker_name"] = broker_name(i)
            cfg = BrokerConfig(store_dir=root, namesrv_addr=ns_addr, **overrides)
            broker = Broker(cfg, clock=clock)
            await broker.start()
            started.append(broker)
        first = started[0]
        yield LocalCluster(ns_addr, first.address, first, namesrv, tuple(started))
    finally:
        for broker in reversed(started):
            await broker.close()
        await namesrv.close()


async def create_topic_on_brokers(
    namesrv_addr: str, topic: str, queue_nums: int, broker_addrs: Sequence[str], timeout: float = 20.0
) -> None:
    """Create ``topic`` with ``queue_nums`` queues on every broker of ``broker_addrs`` and wait
    until the name server routes all of them (each broker registers the topic with its next
    heartbeat to the name server).

    Raises:
        TimeoutError: the route did not list ``queue_nums × len(broker_addrs)`` queues within
            ``timeout`` seconds.
        RocketMQError: a broker refused to create the topic.
    """
    want = queue_nums * len(broker_addrs)
    async with Admin(namesrv_addr) as admin:
        for addr in broker_addrs:
            await admin.create_topic(topic, queue_nums, broker_addr=addr)
        async with asyncio.timeout(timeout):
            while True:
                try:
                    if len(await admin.topic_queues(topic)) == want:
                        return
                except RocketMQError:  # not routed yet
                    pass
                await asyncio.sleep(0.05)
