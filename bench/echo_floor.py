"""The floor of a Python request/response server on this host: what the event loop and the
kernel cost per round trip, with no protocol work.

A server process runs a uvloop ``asyncio.Protocol`` that answers every length-prefixed frame
(4-byte big-endian length, as the remoting protocol frames) with a 100-byte frame, parsing
nothing; this process sends 1,100-byte frames one at a time (one request in flight, as the
bench's ``send ×1``) and prints the round trips per second and the CPU each side used per round
trip (server from ``/proc/<pid>/stat``). Compare with ``send ×1``'s server and client µs in
``bench/produce_consume.py``: the difference is rocketpipe's own per-request work.

Usage: ``python bench/echo_floor.py [--round-trips N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import struct
import time

import uvloop

from peers import process_cpu_s

_LEN = struct.Struct(">i")
RESPONSE = _LEN.pack(96) + b"r" * 96
REQUEST = _LEN.pack(1100) + b"x" * 1100


class EchoServer(asyncio.Protocol):
    """Answers each whole frame with :data:`RESPONSE`."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        buf = self.buf
        buf += data
        while len(buf) >= 4:
            (n,) = _LEN.unpack_from(buf)
            if len(buf) < 4 + n:
                break
            del buf[: 4 + n]
            assert self.transport is not None
            self.transport.write(RESPONSE)


class EchoClient(asyncio.Protocol):
    """Completes :attr:`answered` when a whole response has arrived."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.answered: asyncio.Future[None] | None = None

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if len(self.buf) >= len(RESPONSE) and self.answered is not None:
            del self.buf[: len(RESPONSE)]
            self.answered.set_result(None)


def _serve(listener: socket.socket) -> None:
    async def main() -> None:
        server = await asyncio.get_running_loop().create_server(EchoServer, sock=listener)
        async with server:
            await server.serve_forever()

    uvloop.run(main())


async def _drive(port: int, server_pid: int, n: int) -> None:
    loop = asyncio.get_running_loop()
    transport, client = await loop.create_connection(EchoClient, "127.0.0.1", port)

    async def round_trip() -> None:
        client.answered = loop.create_future()
        transport.write(REQUEST)
        await client.answered

    for _ in range(2000):  # warm-up
        await round_trip()
    s0, c0, w0 = process_cpu_s((server_pid,)), time.process_time(), time.perf_counter()
    for _ in range(n):
        await round_trip()
    s1, c1, w1 = process_cpu_s((server_pid,)), time.process_time(), time.perf_counter()
    transport.close()
    print(
        f"echo floor: {n / (w1 - w0):,.0f} round trips/s; CPU per round trip: "
        f"server {1e6 * (s1 - s0) / n:.1f} µs, client {1e6 * (c1 - c0) / n:.1f} µs"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--round-trips", type=int, default=20_000)
    args = ap.parse_args()
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    pid = os.fork()
    if pid == 0:
        try:
            _serve(listener)
        finally:
            os._exit(0)
    listener.close()
    try:
        uvloop.run(_drive(port, pid, args.round_trips))
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)


if __name__ == "__main__":
    main()
