"""Transport over real TCP on 127.0.0.1: multiplexing, oneway, timeouts, closes, inbound requests,
malformed frames and the connection pool."""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from rocketpipe.errors import (
    ClientClosedError,
    ConnectionClosedError,
    RequestTimeoutError,
    TopicNotExistError,
)
from rocketpipe.protocol.codes import RequestCode, ResponseCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.protocol.frame import FrameDecoder, encode_frame
from rocketpipe.transport import Connection, ConnectionPool, RemotingServer, Router
from waiting import wait_until

ECHO = 9001  # answers with the request body
GATED = 9002  # answers once the test releases the request's gate
SILENT = 9003  # never answers (returns None and keeps the request)
ONEWAY_SINK = 9004  # records oneway requests
FAILS = 9005  # raises a RocketMQError
CALL_BACK = 9006  # server asks the client something on the client's own connection
INLINE_BIG = 9007  # answered inline (in the read callback) with a 256 KiB body
BIG_BODY = b"r" * (256 * 1024)


@dataclass
class Peer:
    server: RemotingServer
    addr: str
    gates: dict[str, asyncio.Event] = field(default_factory=dict)
    held: list[tuple[RemotingCommand, Connection]] = field(default_factory=list)
    oneways: list[RemotingCommand] = field(default_factory=list)
    started: list[str] = field(default_factory=list)
    inline_answered: int = 0
    max_write_buffer: int = 0  # the largest write buffer an INLINE_BIG request found, bytes


@pytest.fixture
async def peer() -> AsyncIterator[Peer]:
    router = Router()
    server = RemotingServer(router)
    p = Peer(server=server, addr="")

    async def echo(cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        return cmd.response(body=cmd.body, ext_fields=dict(cmd.ext_fields))

    async def gated(cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        key = cmd.ext_fields["key"]
        gate = p.gates.setdefault(key, asyncio.Event())
        p.started.append(key)
        await gate.wait()
        return cmd.response(ext_fields={"key": key})

    async def silent(cmd: RemotingCommand, conn: Connection) -> None:
        p.held.append((cmd, conn))
        return None

    async def sink(cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        p.oneways.append(cmd)
        return cmd.response()  # must not be written: the request is oneway

    async def fails(cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        raise TopicNotExistError("no route for T")

    async def call_back(cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        notify = RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": "g1"})
        answer = await conn.request(notify, timeout=5.0)
        return cmd.response(code=answer.code, body=answer.body)

    for code, h in [
        (ECHO, echo),
        (GATED, gated),
        (SILENT, silent),
        (ONEWAY_SINK, sink),
        (FAILS, fails),
        (CALL_BACK, call_back),
    ]:
        router.register(code, h)

    def inline_big(cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        p.inline_answered += 1
        p.max_write_buffer = max(p.max_write_buffer, conn.write_buffer_size)
        return cmd.response(body=BIG_BODY)

    async def big(cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        raise AssertionError("answered inline")

    router.register(INLINE_BIG, big, inline=inline_big)
    p.addr = await server.start()
    try:
        yield p
    finally:
        await server.close()


@pytest.fixture
async def client(peer: Peer) -> AsyncIterator[Connection]:
    conn = await Connection.connect(peer.addr)
    try:
        yield conn
    finally:
        await conn.close()


async def test_many_concurrent_requests_are_matched_by_opaque(client: Connection) -> None:
    reqs = [RemotingCommand.request(ECHO, {"i": str(i)}, body=b"x" * i) for i in range(300)]
    resps = await asyncio.gather(*(client.request(r, timeout=10) for r in reqs))
    for req, resp in zip(reqs, resps, strict=False):
        assert resp.opaque == req.opaque
        assert resp.ext_fields["i"] == req.ext_fields["i"]
        assert resp.body == req.body
    assert client.pending_count == 0


async def test_out_of_order_completion(peer: Peer, client: Connection) -> None:
    keys = [f"k{i}" for i in range(10)]
    tasks = [asyncio.create_task(client.request(RemotingCommand.request(GATED, {"key": k}), 10)) for k in keys]
    await wait_until(lambda: len(peer.started) == len(keys), what="all handlers started")
    # slow handlers do not block the reader: a quick request overtakes them
    quick = await client.request(RemotingCommand.request(ECHO, body=b"q"), timeout=5)
    assert quick.body == b"q" and not any(t.done() for t in tasks)
    for k in reversed(keys):  # complete in reverse order, one at a time
        peer.gates[k].set()
        idx = keys.index(k)
        resp = await tasks[idx]
        assert resp.ext_fields["key"] == k
        assert all(not t.done() for t in tasks[:idx])


async def test_large_body_round_trip_memoryview(client: Connection) -> None:
    body = bytes(range(256)) * 8192  # 2 MiB
    req = RemotingCommand.request(ECHO, body=memoryview(body))  # type: ignore[arg-type]
    resp = await client.request(req, timeout=10)
    assert resp.body == body


async def test_oneway_sets_flag_and_gets_no_response(
    peer: Peer, client: Connection, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="rocketpipe.transport")
    await client.oneway(RemotingCommand.request(ONEWAY_SINK, {"a": "1"}))
    await wait_until(lambda: len(peer.oneways) == 1, what="oneway delivered")
    assert peer.oneways[0].is_oneway
    # a later round trip proves no stray response arrived first
    resp = await client.request(RemotingCommand.request(ECHO), timeout=5)
    assert resp.code == 0
    assert "unknown opaque" not in caplog.text


async def test_timeout_removes_pending_and_late_response_is_dropped(
    peer: Peer, client: Connection, caplog: pytest.LogCaptureFixture
) -> None:
    req = RemotingCommand.request(SILENT)
    with pytest.raises(RequestTimeoutError):
        await client.request(req, timeout=0.2)
    assert client.pending_count == 0
    assert not client.is_closed
    (held, server_conn) = peer.held[0]
    with caplog.at_level(logging.DEBUG, logger="rocketpipe.transport"):
        server_conn.send_response(held.response(body=b"late"))  # expected: logged at DEBUG only
        await wait_until(lambda: "abandoned request dropped" in caplog.text, what="late response log")
        assert f"opaque={req.opaque}" in caplog.text
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
        stray = held.response(body=b"stray")
        stray.opaque = req.opaque + 10_000  # never asked for: a peer bug, worth a WARNING
        server_conn.send_response(stray)
        await wait_until(lambda: "unknown opaque" in caplog.text, what="stray response log")
        assert [r.levelno for r in caplog.records if "unknown opaque" in r.getMessage()] == [logging.WARNING]
    resp = await client.request(RemotingCommand.request(ECHO, body=b"still ok"), timeout=5)
    assert resp.body == b"still ok"


async def test_a_cancelled_request_is_abandoned_and_its_late_response_dropped_quietly(
    peer: Peer, client: Connection, caplog: pytest.LogCaptureFixture
) -> None:
    """Cancelling the caller cancels the awaited future too (asyncio): the request still counts as
    abandoned, so its late response is a DEBUG line, not a stray-response WARNING."""
    task = asyncio.create_task(client.request(RemotingCommand.request(SILENT), timeout=30))
    await wait_until(lambda: len(peer.held) == 1, what="request held")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert client.pending_count == 0
    held, server_conn = peer.held[0]
    with caplog.at_level(logging.DEBUG, logger="rocketpipe.transport"):
        server_conn.send_response(held.response(body=b"late"))
        await wait_until(lambda: "abandoned request dropped" in caplog.text, what="late response log")
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


async def test_a_request_resent_after_its_timeout_is_not_answered_by_the_first_attempts_response(
    peer: Peer, client: Connection
) -> None:
    """A retry that reuses the timed-out command gets a fresh opaque (as one still pending would):
    the first attempt's late response cannot stand in for the retry's."""
    req = RemotingCommand.request(SILENT)
    with pytest.raises(RequestTimeoutError):
        await client.request(req, timeout=0.2)
    first_opaque = req.opaque
    retry = asyncio.create_task(client.request(req, timeout=5))
    await wait_until(lambda: len(peer.held) == 2, what="retry held")
    assert req.opaque != first_opaque
    (first, server_conn), (second, _) = peer.held
    server_conn.send_response(first.response(body=b"first attempt"))
    server_conn.send_response(second.response(body=b"retry"))
    assert (await retry).body == b"retry"


async def test_answer_later_with_send_response(peer: Peer, client: Connection) -> None:
    task = asyncio.create_task(client.request(RemotingCommand.request(SILENT), timeout=5))
    await wait_until(lambda: len(peer.held) == 1, what="request held")
    held, server_conn = peer.held[0]
    server_conn.send_response(held.response(code=ResponseCode.PULL_NOT_FOUND, remark="later"))
    resp = await task
    assert (resp.code, resp.remark) == (ResponseCode.PULL_NOT_FOUND, "later")


async def test_peer_close_fails_pending_requests(peer: Peer, client: Connection) -> None:
    closed: list[Connection] = []
    client.add_close_callback(closed.append)
    tasks = [asyncio.create_task(client.request(RemotingCommand.request(SILENT), timeout=30)) for _ in range(3)]
    await wait_until(lambda: len(peer.held) == 3, what="requests held by the server")
    await peer.held[0][1].close()  # the server side closes the connection
    for t in tasks:
        with pytest.raises(ConnectionClosedError):
            await t
    assert client.is_closed and closed == [client]
    with pytest.raises(ConnectionClosedError):
        await client.request(RemotingCommand.request(ECHO), timeout=1)
    with pytest.raises(ConnectionClosedError):
        await client.oneway(RemotingCommand.request(ECHO))
    await wait_until(lambda: not peer.server.connections, what="server forgot the connection")


async def test_local_close_fails_pending_and_is_idempotent(client: Connection) -> None:
    task = asyncio.create_task(client.request(RemotingCommand.request(SILENT), timeout=30))
    await wait_until(lambda: client.pending_count == 1, what="request pending")
    await client.close()
    await client.close()
    with pytest.raises(ConnectionClosedError):
        await task
    assert client.is_closed


async def test_router_errors_over_tcp(client: Connection) -> None:
    resp = await client.request(RemotingCommand.request(7777), timeout=5)
    assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert resp.remark == " request type 7777 not supported"
    resp = await client.request(RemotingCommand.request(FAILS), timeout=5)
    assert resp.code == ResponseCode.TOPIC_NOT_EXIST
    assert "no route for T" in (resp.remark or "")


async def test_server_request_routed_to_client_router(peer: Peer) -> None:
    client_router = Router()
    seen: list[RemotingCommand] = []

    async def ids_changed(cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        seen.append(cmd)
        return cmd.response(body=cmd.ext_fields["consumerGroup"].encode())

    client_router.register(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, ids_changed)
    conn = await Connection.connect(peer.addr, router=client_router)
    try:
        resp = await conn.request(RemotingCommand.request(CALL_BACK), timeout=5)
        assert resp.code == 0 and resp.body == b"g1"
        assert seen[0].code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED
        # a client without a router answers REQUEST_CODE_NOT_SUPPORTED
        bare = await Connection.connect(peer.addr)
        try:
            resp = await bare.request(RemotingCommand.request(CALL_BACK), timeout=5)
            assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        finally:
            await bare.close()
    finally:
        await conn.close()


@pytest.mark.parametrize(
    "garbage, reason",
    [
        (struct.pack(">i", 17 * 1024 * 1024) + b"\0" * 64, "out of range"),  # over 16 MiB
        (struct.pack(">ii", 12, 8) + b"not json", "bad JSON header"),  # bad header
        (struct.pack(">ii", 8, (7 << 24) | 4) + b"abcd", "serialize type"),  # unknown type
        (struct.pack(">ii", 8, 100) + b"abcd", "header length"),  # header beyond the frame
    ],
)
async def test_malformed_frame_closes_only_that_connection(
    peer: Peer, caplog: pytest.LogCaptureFixture, garbage: bytes, reason: str
) -> None:
    good = await Connection.connect(peer.addr)
    try:
        await wait_until(lambda: len(peer.server.connections) == 1, what="good conn accepted")
        reader, writer = await asyncio.open_connection(*peer.addr.split(":"))
        local = "{}:{}".format(*writer.get_extra_info("sockname")[:2])
        with caplog.at_level(logging.WARNING, logger="rocketpipe.transport"):
            writer.write(garbage)
            await writer.drain()
            assert await asyncio.wait_for(reader.read(), 10) == b""  # closed by the server
        lines = [r.getMessage() for r in caplog.records if "malformed frame" in r.getMessage()]
        assert len(lines) == 1
        assert f"remote={local}" in lines[0] and reason in lines[0]
        writer.close()
        resp = await good.request(RemotingCommand.request(ECHO, body=b"alive"), timeout=5)
        assert resp.body == b"alive"
        assert peer.server.connections and all(not c.is_closed for c in peer.server.connections)
        # and new connections are still accepted
        again = await Connection.connect(peer.addr)
        assert (await again.request(RemotingCommand.request(ECHO), timeout=5)).code == 0
        await again.close()
    finally:
        await good.close()


async def test_frames_split_across_writes_and_coalesced(peer: Peer) -> None:
    """Raw socket: two requests in one write, the second split byte by byte."""
    reader, writer = await asyncio.open_connection(*peer.addr.split(":"))
    try:
        a = RemotingCommand.request(ECHO, {"n": "a"})
        b = RemotingCommand.request(ECHO, {"n": "b"})
        fa, fb = encode_frame(a), encode_frame(b)
        writer.write(fa + fb[:3])
        await writer.drain()
        for i in range(3, len(fb)):
            writer.write(fb[i : i + 1])
        await writer.drain()
        dec = FrameDecoder()
        got: dict[int, RemotingCommand] = {}
        while len(got) < 2:
            data = await asyncio.wait_for(reader.read(65536), 10)
            assert data
            dec.feed(data)
            for cmd in dec:
                got[cmd.opaque] = cmd
        assert got[a.opaque].ext_fields["n"] == "a" and got[b.opaque].ext_fields["n"] == "b"
    finally:
        writer.close()


async def test_inline_answers_pause_reading_while_the_peer_does_not_read(peer: Peer) -> None:
    """A peer that sends many requests and reads nothing: the server pauses reading as soon as
    its write buffer is full of inline answers (per request, not per socket read), instead of
    buffering without bound; once the peer reads, every answer arrives, in order, and reading
    resumes."""
    reader, writer = await asyncio.open_connection(*peer.addr.split(":"))
    try:
        n = 200  # 50 MiB of answers: far more than the socket buffers and the transport hold
        requests = [RemotingCommand.request(INLINE_BIG, {"i": str(i)}) for i in range(n)]
        await wait_until(lambda: len(peer.server.connections) == 1, what="connection accepted")
        (conn,) = peer.server.connections
        writer.write(b"".join(encode_frame(r) for r in requests))  # ~20 KiB: one socket read
        await writer.drain()
        await wait_until(lambda: conn.reading_paused, what="reading paused by back-pressure")
        assert peer.inline_answered < n
        more = [RemotingCommand.request(INLINE_BIG, {"i": str(i)}) for i in range(n, 2 * n)]
        for r in more:  # one write per request, each given a loop pass: a server still reading would
            writer.write(encode_frame(r))  # take them in one read each and answer every one
            await asyncio.sleep(0)
        await writer.drain()
        requests += more
        n *= 2
        dec = FrameDecoder()
        got: list[RemotingCommand] = []
        while len(got) < n:
            data = await asyncio.wait_for(reader.read(1 << 20), 10)
            assert data, f"closed after {len(got)} answers"
            dec.feed(data)
            got.extend(dec)
        assert [c.opaque for c in got] == [r.opaque for r in requests]
        assert all(c.body == BIG_BODY for c in got)
        assert peer.inline_answered == n
        # never more than about one answer above the high-water mark (64 KiB by default)
        assert peer.max_write_buffer < 1024 * 1024
        await wait_until(lambda: not conn.reading_paused, what="reading resumed")
    finally:
        writer.close()


async def test_connect_refused_is_connection_closed_error() -> None:
    server = RemotingServer(Router())
    addr = await server.start()
    await server.close()
    with pytest.raises(ConnectionClosedError):
        await Connection.connect(addr, connect_timeout=2)


async def test_pool_single_flight_and_eviction(peer: Peer) -> None:
    pool = ConnectionPool()
    try:
        conns = await asyncio.gather(*(pool.get(peer.addr) for _ in range(20)))
        assert all(c is conns[0] for c in conns)
        await wait_until(lambda: len(peer.server.connections) == 1, what="one accepted conn")
        assert len(peer.server.connections) == 1
        resp = await pool.request(peer.addr, RemotingCommand.request(ECHO, body=b"p"), 5)
        assert resp.body == b"p"
        await pool.oneway(peer.addr, RemotingCommand.request(ONEWAY_SINK))
        await wait_until(lambda: len(peer.oneways) == 1, what="pooled oneway")
        await conns[0].close()
        fresh = await pool.get(peer.addr)
        assert fresh is not conns[0] and not fresh.is_closed
        assert pool.connections == {peer.addr: fresh}
    finally:
        await pool.close()
        await pool.close()
    with pytest.raises(ClientClosedError):
        await pool.get(peer.addr)


async def test_pool_connect_failure_is_shared_and_retried() -> None:
    server = RemotingServer(Router())
    dead = await server.start()
    await server.close()
    pool = ConnectionPool(connect_timeout=2)
    try:
        results = await asyncio.gather(*(pool.get(dead) for _ in range(5)), return_exceptions=True)
        assert all(isinstance(r, ConnectionClosedError) for r in results)
        with pytest.raises(ConnectionClosedError):
            await pool.request(dead, RemotingCommand.request(ECHO), timeout=2)
    finally:
        await pool.close()


async def test_server_close_leaves_no_tasks(peer: Peer) -> None:
    conns = [await Connection.connect(peer.addr) for _ in range(3)]
    held = asyncio.create_task(conns[0].request(RemotingCommand.request(GATED, {"key": "z"}), 30))
    await wait_until(lambda: peer.started == ["z"], what="gated handler running")
    await peer.server.close()
    with pytest.raises(ConnectionClosedError):
        await held
    for c in conns:
        await wait_until(lambda c=c: c.is_closed, what="client saw the close")
        await c.close()
    others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    assert others == []
    assert peer.server.connections == set()


async def test_mixed_timeouts_only_expire_their_own_requests(peer: Peer, client: Connection) -> None:
    # many answered requests first, so answered deadlines pile up and get compacted
    for _ in range(3):
        await asyncio.gather(*(client.request(RemotingCommand.request(ECHO), timeout=30) for _ in range(200)))
    long_wait = asyncio.create_task(client.request(RemotingCommand.request(SILENT), timeout=30))
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(RequestTimeoutError):
        await client.request(RemotingCommand.request(SILENT), timeout=0.3)
    assert 0.25 <= loop.time() - started < 5
    assert not long_wait.done() and client.pending_count == 1
    # a cancelled caller does not disturb later deadlines
    cancelled = asyncio.create_task(client.request(RemotingCommand.request(SILENT), timeout=0.2))
    await wait_until(lambda: client.pending_count == 2, what="second request pending")
    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    assert client.pending_count == 1
    with pytest.raises(RequestTimeoutError):
        await client.request(RemotingCommand.request(SILENT), timeout=0.2)
    long_wait.cancel()
    with pytest.raises(asyncio.CancelledError):
        await long_wait
    assert client.pending_count == 0
