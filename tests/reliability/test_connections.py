"""Stalled, idle and abusive connections: the server's limits hold, over real TCP on 127.0.0.1.

A :class:`RemotingServer` (and a :class:`NameServer`) with small :class:`ServerLimits`:

* a connection with no traffic either way for the idle time is closed, with one warning line; a
  busy one is not (``serverChannelMaxIdleTimeSeconds``);
* connections holding incomplete frames past the process-wide cap: the one holding most is
  closed first and the others keep working; the per-connection cap; a declared frame over
  16 MiB is refused from its length field alone;
* the issue's probe scaled down (many connections each sending part of a big frame, then
  silent): what the server holds stays under the cap by its own accounting;
* past ``server_max_connections`` a connection is closed at accept, the others keep working;
* 20,000 responses nobody asked for: one warning line, then one line with the count.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from rocketpipe.broker import Broker, BrokerConfig
from rocketpipe.errors import InvalidArgumentError
from rocketpipe.namesrv import NameServer
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.protocol.frame import FrameDecoder, encode_frame
from rocketpipe.ratelog import RateLimitedLog
from rocketpipe.transport import Connection, RemotingServer, Router
from rocketpipe.transport.limits import ServerLimits
from waiting import wait_until

ECHO = 9101
MiB = 1024 * 1024
#: Limits with everything off or huge; each test lowers the one it exercises.
WIDE = ServerLimits(
    server_channel_max_idle_time_seconds=0,
    server_max_connections=1000,
    server_max_pending_frame_bytes=64 * MiB,
    server_max_pending_bytes_total=1024 * MiB,
)


class FakeMonotonic:
    """A seconds clock the test moves by hand (for :class:`RateLimitedLog`)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class RawPeer:
    """A bare TCP client: writes arbitrary bytes, reads frames back."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        host, port = writer.get_extra_info("sockname")[:2]
        self.address = f"{host}:{port}"
        self._decoder = FrameDecoder()

    @classmethod
    async def open(cls, addr: str) -> RawPeer:
        host, port = addr.rsplit(":", 1)
        return cls(*await asyncio.open_connection(host, int(port)))

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def read_frame(self, timeout: float = 10.0) -> RemotingCommand:
        async with asyncio.timeout(timeout):
            while (cmd := self._decoder.next()) is None:
                data = await self.reader.read(65536)
                assert data, "connection closed before a frame arrived"
                self._decoder.feed(data)
        return cmd

    async def closed_by_server(self, timeout: float = 10.0) -> bool:
        """True once the server closed (EOF or reset); fails the test after ``timeout``."""
        async with asyncio.timeout(timeout):
            try:
                while await self.reader.read(65536):
                    pass
            except ConnectionError:
                pass
        return True

    def close(self) -> None:
        self.writer.transport.abort()


ServerFactory = Callable[..., Awaitable[RemotingServer]]


@pytest.fixture
async def make_server() -> AsyncIterator[ServerFactory]:
    """``await make_server(limits, warnings=None)``: a started server answering ECHO; closed at teardown."""
    servers: list[RemotingServer] = []

    async def make(limits: ServerLimits, warnings: RateLimitedLog | None = None) -> RemotingServer:
        router = Router()

        async def echo(cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
            return cmd.response(body=cmd.body)

        router.register(ECHO, echo)
        server = RemotingServer(router, limits=limits, warnings=warnings)
        servers.append(server)
        await server.start()
        return server

    yield make
    for server in servers:
        await server.close()


@pytest.fixture
async def peers() -> AsyncIterator[list[RawPeer]]:
    """Raw peers a test opens (append them); all aborted at teardown."""
    opened: list[RawPeer] = []
    yield opened
    for peer in opened:
        peer.close()


def server_side(server: RemotingServer, peer: RawPeer) -> Connection | None:
    """The server's connection for ``peer`` (None once closed)."""
    return next((c for c in server.connections if c.remote_address == peer.address), None)


def held(server: RemotingServer, peer: RawPeer) -> int:
    conn = server_side(server, peer)
    return -1 if conn is None else conn.pending_frame_bytes


def echo_frame(body_size: int) -> bytes:
    return encode_frame(RemotingCommand.request(ECHO, body=b"x" * body_size))


def warnings_with(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and text in r.getMessage()]


def accounting_is_consistent(server: RemotingServer) -> bool:
    return server.pending_bytes.total == sum(c.pending_frame_bytes for c in server.connections)


# ---------------------------------------------------------------------------------------- idle


async def test_idle_connection_is_closed_and_a_busy_one_is_not(
    make_server: ServerFactory, peers: list[RawPeer], caplog: pytest.LogCaptureFixture
) -> None:
    server = await make_server(ServerLimits(server_channel_max_idle_time_seconds=0.5))
    idle = await RawPeer.open(server.address or "")
    busy = await Connection.connect(server.address or "")
    peers.append(idle)
    try:
        await wait_until(lambda: len(server.connections) == 2, what="both connections accepted")
        closed = asyncio.create_task(idle.closed_by_server(timeout=30))
        with caplog.at_level(logging.WARNING, logger="rocketpipe.transport"):
            for _ in range(3000):  # bounded: ends when the idle peer is closed
                if closed.done():
                    break
                assert (await busy.request(RemotingCommand.request(ECHO, body=b"ping"), timeout=5)).body == b"ping"
                await asyncio.sleep(0.05)  # pacing of the busy peer's traffic, not synchronisation
            assert await closed
        assert not busy.is_closed and server.idle_closed == 1
        lines = warnings_with(caplog, "idle connection closed")
        assert len(lines) == 1 and f"remote={idle.address}" in lines[0]
        assert (await busy.request(RemotingCommand.request(ECHO, body=b"still"), timeout=5)).body == b"still"
    finally:
        await busy.close()


async def test_name_server_closes_idle_connections(peers: list[RawPeer]) -> None:
    async with NameServer(limits=ServerLimits(server_channel_max_idle_time_seconds=0.3)) as ns:
        peer = await RawPeer.open(ns.address or "")
        peers.append(peer)
        assert await peer.closed_by_server(timeout=30)
        await wait_until(lambda: not ns.connections, what="name server forgot the idle connection")


async def test_idle_timeout_zero_means_never(make_server: ServerFactory, peers: list[RawPeer]) -> None:
    server = await make_server(WIDE)
    peer = await RawPeer.open(server.address or "")
    peers.append(peer)
    await wait_until(lambda: len(server.connections) == 1, what="accepted")
    assert server._sweeper is None  # no sweep task at all
    await peer.send(echo_frame(3))
    assert (await peer.read_frame()).body == b"xxx"


# --------------------------------------------------------------------- incomplete-frame bytes


async def test_past_the_total_cap_the_biggest_holder_is_closed_first(
    make_server: ServerFactory, peers: list[RawPeer], caplog: pytest.LogCaptureFixture
) -> None:
    limits = ServerLimits(
        server_channel_max_idle_time_seconds=0,
        server_max_pending_frame_bytes=16 * MiB,
        server_max_pending_bytes_total=2 * MiB,
    )
    server = await make_server(limits)
    big, mid, small = [await RawPeer.open(server.address or "") for _ in range(3)]
    peers.extend([big, mid, small])
    big_frame, mid_frame, small_frame = echo_frame(8 * MiB), echo_frame(MiB // 2), echo_frame(MiB // 2 - 100_000)
    with caplog.at_level(logging.WARNING, logger="rocketpipe.transport"):
        await big.send(big_frame[: 3 * MiB // 2])
        await wait_until(lambda: held(server, big) == 3 * MiB // 2, what="big peer's 1.5 MiB held")
        await mid.send(mid_frame[:-1000])
        await wait_until(lambda: held(server, mid) == len(mid_frame) - 1000, what="mid peer's bytes held")
        assert server.pending_bytes.total <= limits.server_max_pending_bytes_total and accounting_is_consistent(server)
        await small.send(small_frame[:-1])  # pushes the total past 2 MiB
        assert await big.closed_by_server()
        await wait_until(lambda: held(server, small) == len(small_frame) - 1, what="small peer's bytes held")
    assert server.pending_bytes.closed_over_total_cap == 1
    assert server.pending_bytes.total == len(mid_frame) - 1000 + len(small_frame) - 1
    assert accounting_is_consistent(server)
    lines = warnings_with(caplog, "server_max_pending_bytes_total")
    assert len(lines) == 1 and f"remote={big.address}" in lines[0] and "held most (1572864 bytes)" in lines[0]
    # the others finish their frames and are answered
    await mid.send(mid_frame[-1000:])
    await small.send(small_frame[-1:])
    assert len((await mid.read_frame()).body) == MiB // 2
    assert len((await small.read_frame()).body) == MiB // 2 - 100_000
    await wait_until(lambda: server.pending_bytes.total == 0, what="nothing held any more")


async def test_per_connection_cap_closes_only_that_connection(
    make_server: ServerFactory, peers: list[RawPeer], caplog: pytest.LogCaptureFixture
) -> None:
    limits = ServerLimits(server_channel_max_idle_time_seconds=0, server_max_pending_frame_bytes=MiB)
    server = await make_server(limits)
    greedy, fine = await RawPeer.open(server.address or ""), await RawPeer.open(server.address or "")
    peers.extend([greedy, fine])
    frame = echo_frame(MiB - 200)  # a whole frame under the cap passes
    await fine.send(frame)
    assert len((await fine.read_frame()).body) == MiB - 200
    with caplog.at_level(logging.WARNING, logger="rocketpipe.transport"):
        await greedy.send(echo_frame(4 * MiB)[: 3 * MiB // 2])
        assert await greedy.closed_by_server()
    assert server.pending_bytes.closed_over_frame_cap == 1
    assert server.pending_bytes.total == 0 and accounting_is_consistent(server)
    lines = warnings_with(caplog, "server_max_pending_frame_bytes")
    assert len(lines) == 1 and f"remote={greedy.address}" in lines[0]
    await fine.send(echo_frame(10))
    assert (await fine.read_frame()).body == b"x" * 10


async def test_frame_declared_over_16_mib_is_refused_from_its_length(
    make_server: ServerFactory, peers: list[RawPeer], caplog: pytest.LogCaptureFixture
) -> None:
    server = await make_server(WIDE)
    peer = await RawPeer.open(server.address or "")
    peers.append(peer)
    with caplog.at_level(logging.WARNING, logger="rocketpipe.transport"):
        await peer.send(struct.pack(">i", 16 * MiB - 3))  # 4 + length > 16 MiB (Java frameMaxLength)
        assert await peer.closed_by_server()
    assert server.pending_bytes.total == 0
    assert len(warnings_with(caplog, "malformed frame")) == 1


async def test_many_stalled_partial_frames_stay_under_the_cap(make_server: ServerFactory, peers: list[RawPeer]) -> None:
    """The issue's probe (64 x 15 MiB of 16 MiB frames, then silent) scaled to 16 x 1 MiB, cap 4 MiB."""
    cap, each, count = 4 * MiB, MiB, 16
    server = await make_server(
        ServerLimits(
            server_channel_max_idle_time_seconds=0,
            server_max_pending_frame_bytes=2 * MiB,
            server_max_pending_bytes_total=cap,
        )
    )
    stalled = [await RawPeer.open(server.address or "") for _ in range(count)]
    peers.extend(stalled)
    frame_start = echo_frame(8 * MiB)[:each]
    await asyncio.gather(*(p.send(frame_start) for p in stalled))

    def settled() -> bool:
        full = sum(1 for p in stalled if held(server, p) == each)
        return full + server.pending_bytes.closed_over_total_cap == count

    await wait_until(settled, timeout=60, what="every stalled peer either held in full or closed")
    assert server.pending_bytes.total <= cap and accounting_is_consistent(server)
    # each close leaves more than cap - each held, and only whole 1 MiB holders remain: exactly 4
    assert len(server.connections) == cap // each
    assert server.pending_bytes.closed_over_total_cap == count - cap // each


# ------------------------------------------------------------------------------ connections


async def test_connections_past_the_maximum_are_closed_at_accept(
    make_server: ServerFactory, peers: list[RawPeer], caplog: pytest.LogCaptureFixture
) -> None:
    server = await make_server(ServerLimits(server_channel_max_idle_time_seconds=0, server_max_connections=2))
    first, second = await Connection.connect(server.address or ""), await Connection.connect(server.address or "")
    try:
        await wait_until(lambda: len(server.connections) == 2, what="two accepted")
        with caplog.at_level(logging.WARNING, logger="rocketpipe.transport"):
            extra = [await RawPeer.open(server.address or "") for _ in range(5)]
            peers.extend(extra)
            for peer in extra:
                assert await peer.closed_by_server()
        assert server.refused == 5 and len(server.connections) == 2
        lines = warnings_with(caplog, "server_max_connections=2")
        assert len(lines) == 1  # one line per interval, however many were refused
        for conn in (first, second):
            assert (await conn.request(RemotingCommand.request(ECHO, body=b"ok"), timeout=5)).body == b"ok"
        await first.close()
        await wait_until(lambda: len(server.connections) == 1, what="server saw the close")
        again = await RawPeer.open(server.address or "")
        peers.append(again)
        await again.send(echo_frame(2))
        assert (await again.read_frame()).body == b"xx"
    finally:
        await first.close()
        await second.close()


# ------------------------------------------------------------------------------- warnings


async def test_unsolicited_responses_log_one_line_then_the_count(
    make_server: ServerFactory, peers: list[RawPeer], caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeMonotonic()
    warnings = RateLimitedLog(logging.getLogger("rocketpipe.transport.server"), 60.0, monotonic=clock)
    server = await make_server(WIDE, warnings)
    peer = await RawPeer.open(server.address or "")
    peers.append(peer)

    def responses(start: int, n: int) -> bytes:
        out = []
        for opaque in range(start, start + n):
            resp = RemotingCommand.request(ECHO).response()
            resp.opaque = opaque
            out.append(encode_frame(resp))
        return b"".join(out)

    with caplog.at_level(logging.WARNING, logger="rocketpipe.transport"):
        await peer.send(responses(1, 20_000))
        await wait_until(
            lambda: warnings.counts.get("unsolicited-response") == 20_000, timeout=60, what="20,000 responses seen"
        )
        assert len(warnings_with(caplog, "unknown opaque")) == 1
        clock.now += 61
        await peer.send(responses(20_001, 1))
        await wait_until(lambda: warnings.counts.get("unsolicited-response") == 20_001, what="one more response seen")
    lines = warnings_with(caplog, "unknown opaque")
    assert len(lines) == 2
    assert "+19999 more of cause=unsolicited-response" in lines[1]
    # the connection was not closed for it (Java drops such responses and goes on)
    await peer.send(echo_frame(5))
    assert (await peer.read_frame()).body == b"xxxxx"


# --------------------------------------------------------------------------------- config


def test_server_limits_defaults_are_the_broker_config_defaults() -> None:
    assert ServerLimits.from_config(BrokerConfig()) == ServerLimits()
    assert ServerLimits().server_channel_max_idle_time_seconds == 120  # serverChannelMaxIdleTimeSeconds


@pytest.mark.parametrize(
    "bad",
    [
        {"server_channel_max_idle_time_seconds": -1},
        {"server_max_connections": 0},
        {"server_max_pending_frame_bytes": 0},
        {"server_max_pending_bytes_total": -5},
        {"server_warning_interval_seconds": 0},
    ],
)
def test_server_limits_reject_out_of_range_values(bad: dict[str, float]) -> None:
    with pytest.raises(InvalidArgumentError, match=next(iter(bad))):
        ServerLimits(**bad)  # type: ignore[arg-type]


async def test_broker_server_uses_the_config_limits(tmp_path: Path, peers: list[RawPeer]) -> None:
    config = BrokerConfig(
        store_dir=tmp_path / "store", listen_port=0, server_max_connections=1, server_channel_max_idle_time_seconds=7
    )
    async with Broker(config) as broker:
        assert broker.server.limits == ServerLimits.from_config(config)
        first = await RawPeer.open(broker.server.address or "")
        peers.append(first)
        await wait_until(lambda: len(broker.server.connections) == 1, what="first accepted")
        second = await RawPeer.open(broker.server.address or "")
        peers.append(second)
        assert await second.closed_by_server()
        assert broker.server.refused == 1
