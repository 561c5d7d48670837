"""Requests/s of a trivial request over one connection (not a test: run it by hand).

    .venv/bin/python tests/integration/transport/bench_transport_rps.py [inflight] [total]

Starts an echo RemotingServer in a child process, connects one Connection, keeps ``inflight``
requests outstanding and prints requests/s plus the CPU per request of both processes. The
machine's load changes the rate a lot (2 shared vCPUs): report ``uptime`` with the numbers.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time

from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.transport import Connection, RemotingServer, Router

CODE = 9001


async def serve() -> None:
    """Echo server; prints its address, then its CPU per request when stdin closes."""
    count = 0
    router = Router()

    async def echo(cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        nonlocal count
        count += 1
        return cmd.response()

    router.register(CODE, echo)
    server = RemotingServer(router)
    print(await server.start(), flush=True)
    loop = asyncio.get_running_loop()
    cpu0 = time.process_time()
    await loop.run_in_executor(None, sys.stdin.read)
    cpu = time.process_time() - cpu0
    print(f"server_cpu_per_req_us={cpu / max(count, 1) * 1e6:.1f} count={count}", flush=True)
    await server.close()


async def bench(addr: str, inflight: int, total: int) -> None:
    conn = await Connection.connect(addr)
    sent = 0

    async def worker() -> None:
        nonlocal sent
        while sent < total:
            sent += 1
            await conn.request(RemotingCommand.request(CODE, {"topic": "T"}), 5.0)

    await asyncio.gather(*(conn.request(RemotingCommand.request(CODE), 5.0) for _ in range(1000)))
    t0, c0 = time.perf_counter(), time.process_time()
    await asyncio.gather(*(worker() for _ in range(inflight)))
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    print(
        f"inflight={inflight} total={total} req_per_s={total / dt:,.0f} "
        f"client_cpu_per_req_us={dc / total * 1e6:.1f} load={os.getloadavg()[0]:.2f}"
    )
    await conn.close()


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--serve":
        asyncio.run(serve())
        return
    inflight = int(sys.argv[1]) if len(sys.argv) > 1 else 64
    total = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdin is not None
    addr = child.stdout.readline().strip()
    try:
        asyncio.run(bench(addr, inflight, total))
    finally:
        child.stdin.close()
        print(child.stdout.read().strip())
        child.wait(10)


if __name__ == "__main__":
    main()
