"""Run one broker in the foreground: ``python -m rocketpipe.broker --store-dir DIR [...]``.

Prints ``READY <address>`` on stdout once serving (used by the crash-recovery test, which
kills the process with SIGKILL) and closes cleanly on SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from pathlib import Path

from .broker import Broker
from .config import BrokerConfig


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m rocketpipe.broker", description="Run an embedded RocketMQ broker.")
    p.add_argument("--store-dir", required=True, type=Path, help="store root directory")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="listen port (0 = any free port)")
    p.add_argument("--namesrv", default=None, help="name server address(es), ';'-separated")
    p.add_argument("--broker-name", default="broker-a")
    p.add_argument("--cluster", default="DefaultCluster")
    p.add_argument("--flush-disk-type", default="ASYNC_FLUSH", choices=["ASYNC_FLUSH", "SYNC_FLUSH"])
    p.add_argument("--commitlog-file-size", type=int, default=None, help="commit-log segment size in bytes")
    p.add_argument(
        "--enable-property-filter", action="store_true", help="accept SQL92 subscriptions (enablePropertyFilter)"
    )
    return p.parse_args(argv)


async def _serve(args: argparse.Namespace) -> None:
    cfg = BrokerConfig(
        store_dir=args.store_dir,
        host=args.host,
        listen_port=args.port,
        namesrv_addr=args.namesrv,
        broker_name=args.broker_name,
        broker_cluster_name=args.cluster,
        flush_disk_type=args.flush_disk_type,
        mapped_file_size_commit_log=args.commitlog_file_size,
        enable_property_filter=args.enable_property_filter,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):  # pragma: no cover - non-Unix
            pass
    async with Broker(cfg) as broker:
        print(f"READY {broker.address}", flush=True)
        await stop.wait()


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    asyncio.run(_serve(_parse(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
