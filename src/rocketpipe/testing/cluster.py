"""An embedded name server + broker on 127.0.0.1, for tests and demos (L4).

``async with local_cluster(tmp_path) as c:`` starts a :class:`~rocketpipe.namesrv.NameServer`
and a :class:`~rocketpipe.broker.Broker` registered with it, both on free ports, and closes
them (broker first) on exit.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..broker import Broker, BrokerConfig
from ..clock import SYSTEM_CLOCK, Clock
from ..namesrv import NameServer


@dataclass(frozen=True, slots=True)
class LocalCluster:
    """A running local cluster.

    Attributes:
        namesrv_addr: ``"127.0.0.1:port"`` of the name server.
        broker_addr: ``"127.0.0.1:port"`` of the broker.
        broker: the broker object (inspect its tables in tests).
        namesrv: the name-server object.
    """

    namesrv_addr: str
    broker_addr: str
    broker: Broker
    namesrv: NameServer


@asynccontextmanager
async def local_cluster(
    store_dir: Path, *, clock: Clock = SYSTEM_CLOCK, **broker_overrides: Any
) -> AsyncIterator[LocalCluster]:
    """Start a name server and one broker registered with it.

    Args:
        store_dir: the broker's store root (e.g. pytest's ``tmp_path``).
        clock: wall clock for the broker (a :class:`~rocketpipe.testing.FakeClock` in tests).
        **broker_overrides: any :class:`~rocketpipe.broker.BrokerConfig` field (e.g.
            ``flush_disk_type="SYNC_FLUSH"``, ``mapped_file_size_commit_log=1 << 20``).

    Yields:
        A :class:`LocalCluster`; the broker's route is already registered.

    Raises:
        OSError: a port or the store directory is unusable.
    """
    namesrv = NameServer()
    ns_addr = await namesrv.start()
    try:
        cfg = BrokerConfig(store_dir=Path(store_dir), namesrv_addr=ns_addr, **broker_overrides)
        broker = Broker(cfg, clock=clock)
        await broker.start()
        try:
            yield LocalCluster(ns_addr, broker.address, broker, namesrv)
        finally:
            await broker.close()
    finally:
        await namesrv.close()
