"""TLS over real TCP on 127.0.0.1 with certificates made at test time: the server modes
(disabled / permissive / enforcing), mutual TLS, certificate verification errors, and a producer
and consumer round trip through a TLS name server and broker."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from integration.transport.test_tls_pki import Pki, make_pki
from rocketpipe.client import Admin, ClientConfig, ConsumeFromWhere, LitePullConsumer, Message, Producer
from rocketpipe.errors import ConnectionClosedError, SystemError_
from rocketpipe.protocol.codes import ResponseCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.testing.cluster import local_cluster
from rocketpipe.transport import Connection, ConnectionPool, RemotingServer, Router, ServerLimits
from rocketpipe.transport.server import TLS_REQUIRED_REMARK
from rocketpipe.transport.tls import TlsClientConfig, TlsServerConfig, TlsServerMode
from waiting import wait_until

ECHO = 9001


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def echo_router() -> Router:
    router = Router()

    async def echo(cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        return cmd.response(ResponseCode.SUCCESS, body=cmd.body)

    router.register(ECHO, echo)
    return router


def server_tls(pki: Pki, mode: TlsServerMode, **kw: str) -> TlsServerConfig:
    return TlsServerConfig(mode=mode, cert_path=pki.server_cert, key_path=pki.server_key, **kw)  # type: ignore[arg-type]


def client_ssl(pki: Pki, **kw: object) -> TlsClientConfig:
    args: dict[str, object] = {"trust_cert_path": pki.ca} | kw
    return TlsClientConfig(**args)  # type: ignore[arg-type]


async def echo_over(addr: str, tls: TlsClientConfig | None, body: bytes = b"ping") -> bytes:
    conn = await Connection.connect(addr, ssl_context=None if tls is None else tls.client_context())
    try:
        resp = await conn.request(RemotingCommand.request(ECHO, body=body), 5.0)
        assert resp.code == ResponseCode.SUCCESS
        return bytes(resp.body)
    finally:
        await conn.close()


@pytest.fixture
async def serve(pki: Pki) -> AsyncIterator[list[RemotingServer]]:
    servers: list[RemotingServer] = []
    yield servers
    for s in servers:
        await s.close()


async def start(servers: list[RemotingServer], tls: TlsServerConfig | None) -> RemotingServer:
    server = RemotingServer(echo_router(), "127.0.0.1", 0, tls=tls)
    servers.append(server)
    await server.start()
    return server


async def test_enforcing_serves_tls_and_answers_plain_clients_that_tls_is_required(
    pki: Pki, serve: list[RemotingServer], caplog: pytest.LogCaptureFixture
) -> None:
    server = await start(serve, server_tls(pki, "enforcing"))
    assert server.address is not None and server.tls_mode == "enforcing"
    assert await echo_over(server.address, client_ssl(pki)) == b"ping"

    conn = await Connection.connect(server.address)  # plain
    resp = await conn.request(RemotingCommand.request(ECHO, body=b"plain"), 5.0)
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark == TLS_REQUIRED_REMARK
    assert "tls.server.mode=enforcing" in resp.remark and "use_tls=True" in resp.remark
    await wait_until(lambda: conn.is_closed, what="the server closing the plain connection")
    assert server.plain_refused == 1

    # the plain client through a pool: the error the user sees carries the remark
    pool = ConnectionPool()
    try:
        from rocketpipe.errors import error_for_response

        resp = await pool.request(server.address, RemotingCommand.request(ECHO), 5.0)
        err = error_for_response(resp.code, resp.remark)
        assert isinstance(err, SystemError_) and "accepts TLS connections only" in str(err)
    finally:
        await pool.close()

    # the server still serves TLS clients
    assert await echo_over(server.address, client_ssl(pki), b"after") == b"after"
    assert server.tls_connections == 2


async def test_permissive_serves_plain_and_tls_on_one_port(pki: Pki, serve: list[RemotingServer]) -> None:
    server = await start(serve, server_tls(pki, "permissive"))
    assert server.address is not None
    plain, tls = await asyncio.gather(
        echo_over(server.address, None, b"plain"), echo_over(server.address, client_ssl(pki), b"tls")
    )
    assert (plain, tls) == (b"plain", b"tls")
    assert server.tls_connections == 1
    # a big body crosses TLS records and the plain stream alike
    big = bytes(range(256)) * 8192
    assert await echo_over(server.address, client_ssl(pki), big) == big
    assert await echo_over(server.address, None, big) == big


async def test_tls_client_on_a_plain_server_gets_a_clear_error(pki: Pki, serve: list[RemotingServer]) -> None:
    server = await start(serve, None)
    assert server.address is not None and server.tls_mode == "disabled"
    with pytest.raises(ConnectionClosedError, match=r"TLS handshake with 127\.0\.0\.1:\d+ failed"):
        await echo_over(server.address, client_ssl(pki))
    assert await echo_over(server.address, None) == b"ping"  # the server carries on


async def test_wrong_ca_names_the_verification_failure(pki: Pki, serve: list[RemotingServer]) -> None:
    server = await start(serve, server_tls(pki, "enforcing"))
    assert server.address is not None
    with pytest.raises(ConnectionClosedError, match=r"server certificate not accepted: unable to get local issuer"):
        await echo_over(server.address, client_ssl(pki, trust_cert_path=pki.other_ca))
    # the same client with test mode (no verification) gets through
    assert await echo_over(server.address, TlsClientConfig(test_mode_enable=True)) == b"ping"


async def test_server_certificate_for_another_host_is_refused(pki: Pki, serve: list[RemotingServer]) -> None:
    server = await start(serve, server_tls(pki, "enforcing"))
    assert server.address is not None
    port = server.address.rsplit(":", 1)[1]
    # localhost is in the certificate's subjectAltName, so this works
    assert await echo_over(f"localhost:{port}", client_ssl(pki)) == b"ping"
    elsewhere = await start(
        serve, TlsServerConfig(mode="enforcing", cert_path=pki.elsewhere_cert, key_path=pki.elsewhere_key)
    )
    assert elsewhere.address is not None
    with pytest.raises(
        ConnectionClosedError, match=r"IP address mismatch, certificate is not valid for '127\.0\.0\.1'"
    ):
        await echo_over(elsewhere.address, client_ssl(pki))


async def test_a_server_certificate_from_another_ca_is_refused(pki: Pki, serve: list[RemotingServer]) -> None:
    other = await start(
        serve, TlsServerConfig(mode="enforcing", cert_path=pki.other_server_cert, key_path=pki.other_server_key)
    )
    assert other.address is not None
    with pytest.raises(ConnectionClosedError, match=r"server certificate not accepted: unable to get local issuer"):
        await echo_over(other.address, client_ssl(pki))


async def test_mutual_tls_refuses_a_client_without_a_certificate(
    pki: Pki, serve: list[RemotingServer], caplog: pytest.LogCaptureFixture
) -> None:
    server = await start(serve, server_tls(pki, "enforcing", trust_cert_path=pki.ca, need_client_auth="require"))
    assert server.address is not None
    mutual = client_ssl(pki, cert_path=pki.client_cert, key_path=pki.client_key)
    assert await echo_over(server.address, mutual) == b"ping"
    caplog.set_level(logging.WARNING, logger="rocketpipe.transport.server")
    # TLS 1.3: the client's handshake ends before the server checks; the refusal arrives as an
    # alert on the first read, so the request (or the connect) fails naming it
    with pytest.raises(
        ConnectionClosedError,
        match=r"(?i)closed.*may require a client certificate \(tls.server.need.client.auth=require\)|certificate required",
    ):
        await echo_over(server.address, client_ssl(pki))
    await wait_until(lambda: "TLS handshake failed" in caplog.text, what="the server's warning")
    assert "PEER_DID_NOT_RETURN_A_CERTIFICATE" in caplog.text.upper() or "certificate" in caplog.text
    assert await echo_over(server.address, mutual, b"again") == b"again"


async def test_optional_client_auth_takes_clients_with_and_without_certificates(
    pki: Pki, serve: list[RemotingServer]
) -> None:
    server = await start(serve, server_tls(pki, "permissive", trust_cert_path=pki.ca, need_client_auth="optional"))
    assert server.address is not None
    assert await echo_over(server.address, client_ssl(pki)) == b"ping"
    mutual = client_ssl(pki, cert_path=pki.client_cert, key_path=pki.client_key)
    assert await echo_over(server.address, mutual) == b"ping"


async def test_silent_and_vanishing_connections_do_not_hurt_the_server(pki: Pki, serve: list[RemotingServer]) -> None:
    server = await start(serve, server_tls(pki, "permissive"))
    assert server.address is not None
    host, port = server.address.rsplit(":", 1)
    # one connects and closes without a byte, one sends half a TLS record and closes
    _, w1 = await asyncio.open_connection(host, int(port))
    w1.close()
    _, w2 = await asyncio.open_connection(host, int(port))
    w2.write(b"\x16\x03\x01")
    await w2.drain()
    w2.close()
    # one stays silent while others are served
    _, silent = await asyncio.open_connection(host, int(port))
    assert await echo_over(server.address, None) == b"ping"
    assert await echo_over(server.address, client_ssl(pki)) == b"ping"
    silent.close()
    await wait_until(lambda: not server._detecting, what="the detections to end")


async def test_close_stops_a_tls_server_with_connections_open(pki: Pki) -> None:
    server = RemotingServer(echo_router(), "127.0.0.1", 0, tls=server_tls(pki, "enforcing"))
    addr = await server.start()
    conn = await Connection.connect(addr, ssl_context=client_ssl(pki).client_context())
    await wait_until(lambda: len(server.connections) == 1, what="the accepted connection")
    await server.close()
    await wait_until(lambda: conn.is_closed, what="the client seeing the close")
    with pytest.raises(ConnectionClosedError):
        await Connection.connect(addr, ssl_context=client_ssl(pki).client_context(), connect_timeout=2.0)


async def test_producer_and_consumer_round_trip_through_tls_name_server_and_broker(pki: Pki, tmp_path: Path) -> None:
    enforcing = server_tls(pki, "enforcing")
    async with local_cluster(
        tmp_path / "store", namesrv_tls=enforcing, tls_server=enforcing, tls_enable=True, tls_client=client_ssl(pki)
    ) as cluster:
        assert cluster.broker.server.tls_mode == "enforcing"
        config = ClientConfig(namesrv_addr=cluster.namesrv_addr, use_tls=True, tls_client_trust_cert_path=pki.ca)
        async with Admin(config=config) as admin:
            await admin.create_topic("TlsTopic", 2, broker_addr=cluster.broker_addr)

            async def routed() -> bool:
                try:
                    return len(await admin.topic_queues("TlsTopic")) == 2
                except Exception:
                    return False

            await wait_until(routed, timeout=20, what="the topic's route over TLS")
        async with Producer("tls-pg", config=config) as producer:
            for i in range(10):
                await producer.send(Message.build("TlsTopic", f"m{i}"))
        got: list[bytes] = []
        async with LitePullConsumer(
            "tls-cg", config=config, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
        ) as c:
            c.subscribe("TlsTopic")

            async def enough() -> bool:
                got.extend(m.body for m in await c.poll(0.2))
                return len(got) >= 10

            await wait_until(enough, timeout=20, what="10 messages over TLS")
        assert sorted(got) == sorted(f"m{i}".encode() for i in range(10))
        assert cluster.broker.server.tls_connections >= 2  # producer, consumer (and admin)
        assert cluster.broker.server.plain_refused == 0

        # a plain client is told the name server wants TLS
        plain = ClientConfig(namesrv_addr=cluster.namesrv_addr, request_timeout=2.0)
        async with Admin(config=plain) as admin:
            with pytest.raises(Exception, match=r"accepts TLS connections only"):
                await admin.topic_queues("TlsTopic")


async def test_connections_still_starting_count_against_the_connection_cap(pki: Pki) -> None:
    limits = ServerLimits(server_max_connections=2)
    server = RemotingServer(echo_router(), "127.0.0.1", 0, limits=limits, tls=server_tls(pki, "permissive"))
    addr = await server.start()
    host, port = addr.rsplit(":", 1)
    try:
        silent = [await asyncio.open_connection(host, int(port)) for _ in range(2)]
        await wait_until(lambda: len(server._detecting) == 2, what="two connections waiting for their first byte")
        reader, _ = await asyncio.open_connection(host, int(port))
        assert await reader.read() == b""  # the third is closed at once
        assert server.refused == 1
        for _, w in silent:
            w.close()
        await wait_until(lambda: not server._detecting, what="the silent ones to go")
        assert await echo_over(addr, client_ssl(pki)) == b"ping"
    finally:
        await server.close()


async def test_a_connection_silent_past_the_idle_timeout_is_closed_before_its_first_byte(pki: Pki) -> None:
    limits = ServerLimits(server_channel_max_idle_time_seconds=0.2)
    server = RemotingServer(echo_router(), "127.0.0.1", 0, limits=limits, tls=server_tls(pki, "enforcing"))
    addr = await server.start()
    host, port = addr.rsplit(":", 1)
    try:
        reader, writer = await asyncio.open_connection(host, int(port))
        async with asyncio.timeout(5):
            assert await reader.read() == b""  # closed by the server, nothing sent
        writer.close()
        assert not server._detecting and not server.connections
    finally:
        await server.close()
