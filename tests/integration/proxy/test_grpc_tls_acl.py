"""The gRPC endpoint over TLS, and the SDKs' credentials checked against the broker's ACL, driven
by the official RocketMQ 5 Python SDK (``rocketmq-python-client``) over real TCP in front of the
embedded broker. Certificates are made at test time (``make_pki``).

The SDK's ``tls_enable=True`` channel trusts grpc's default roots; the tests hand it the test CA
by wrapping ``grpc.ssl_channel_credentials`` (a user sets ``GRPC_DEFAULT_SSL_ROOTS_FILE_PATH``,
which grpc reads once per process).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from rocketmq import ClientConfiguration, Credentials, SendReceipt
from rocketmq import Message as SdkMessage
from rocketmq import Producer as SdkProducer
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as spb
from rocketmq.grpc_protocol import service_pb2_grpc as sgrpc
from rocketmq.v5.exception import ClientException

from integration.transport.test_tls_pki import KEY_PASSWORD, Pki, make_pki
from rocketpipe import Admin
from rocketpipe.client import ClientConfig
from rocketpipe.client import admin_acl as acl2
from rocketpipe.client.config import SessionCredentials
from rocketpipe.errors import InvalidArgumentError
from rocketpipe.proxy import ProxyServer
from rocketpipe.proxy.auth import AclFileAccounts, signature_hex
from rocketpipe.testing.cluster import LocalCluster, local_cluster
from rocketpipe.transport import TlsServerConfig

TOPIC = "orders"

ACL = """\
accounts:
  - accessKey: proxyadmin
    secretKey: proxyadmin-secret
    admin: true
  - accessKey: producer1
    secretKey: pubsecret1
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms:
      - orders=PUB
  - accessKey: consumer1
    secretKey: subsecret1
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms:
      - orders=SUB
"""
ENDPOINT_ADMIN = SessionCredentials("proxyadmin", "proxyadmin-secret")


def sdk_message(body: bytes) -> SdkMessage:
    m = SdkMessage()
    m.topic = TOPIC
    m.body = body
    return m


def sdk_send(endpoint: str, ak: str, sk: str, bodies: list[bytes], tls: bool = False) -> list[SendReceipt]:
    """Start the SDK's producer with ``Credentials(ak, sk)``, send ``bodies`` (blocking), stop it."""
    producer = SdkProducer(ClientConfiguration(endpoint, Credentials(ak, sk)), (TOPIC,), tls_enable=tls)
    producer.startup()
    try:
        return [producer.send(sdk_message(b)) for b in bodies]
    finally:
        producer.shutdown()


def stored_count(c: LocalCluster) -> int:
    return sum(c.broker.store.get_max_offset(TOPIC, q) for q in range(4))


async def stored_bodies(c: LocalCluster) -> list[bytes]:
    from rocketpipe.protocol.message import decode_records

    out: list[bytes] = []
    async with Admin(config=ClientConfig(c.namesrv_addr, credentials=ENDPOINT_ADMIN)) as admin:
        for q in await admin.topic_queues(TOPIC):
            raw = await admin.pull_raw(q, 0, 64)
            if raw.body:
                out.extend(m.body for m in decode_records(raw.body))
    return sorted(out)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("grpc-pki"))


@pytest.fixture
def trust_test_ca(pki: Pki, monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK's ``grpc.ssl_channel_credentials()`` trusts the test CA."""
    real: Callable[..., grpc.ChannelCredentials] = grpc.ssl_channel_credentials
    roots = Path(pki.ca).read_bytes()

    @functools.wraps(real)
    def with_test_ca(root_certificates: bytes | None = None, *args: Any, **kwargs: Any) -> grpc.ChannelCredentials:
        return real(root_certificates or roots, *args, **kwargs)

    monkeypatch.setattr(grpc, "ssl_channel_credentials", with_test_ca)


# ----------------------------------------------------------------------------- TLS


@pytest.fixture
async def plain_cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with local_cluster(tmp_path / "store", auto_create_topic_enable=False) as c:
        async with Admin(c.namesrv_addr) as admin:
            await admin.create_topic(TOPIC, 4)
        yield c


async def test_sdk_producer_sends_over_tls(plain_cluster: LocalCluster, pki: Pki, trust_test_ca: None) -> None:
    tls = TlsServerConfig(
        mode="enforcing", cert_path=pki.server_cert, key_path=pki.server_key_encrypted, key_password=KEY_PASSWORD
    )
    async with ProxyServer(plain_cluster.namesrv_addr, port=0, tls_server=tls) as proxy:
        assert proxy.tls_enabled
        receipts = await asyncio.to_thread(sdk_send, proxy.address, "", "", [b"tls-1", b"tls-2"], True)
    assert len(receipts) == 2
    assert await stored_bodies(plain_cluster) == [b"tls-1", b"tls-2"]


async def query_route(target: str, credentials: grpc.ChannelCredentials | None) -> spb.QueryRouteResponse:
    channel = grpc.aio.insecure_channel(target) if credentials is None else grpc.aio.secure_channel(target, credentials)
    async with channel:
        request = spb.QueryRouteRequest(topic=pb.Resource(name=TOPIC))
        response: spb.QueryRouteResponse = await sgrpc.MessagingServiceStub(channel).QueryRoute(
            request, metadata=(("x-mq-client-id", "t"),), timeout=5
        )
        return response


async def test_tls_endpoint_refuses_plain_clients_and_serves_tls_ones(plain_cluster: LocalCluster, pki: Pki) -> None:
    tls = TlsServerConfig(mode="enforcing", cert_path=pki.server_cert, key_path=pki.server_key)
    trusted = grpc.ssl_channel_credentials(Path(pki.ca).read_bytes())
    async with ProxyServer(plain_cluster.namesrv_addr, port=0, tls_server=tls) as proxy:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await query_route(proxy.address, None)
        assert err.value.code() == grpc.StatusCode.UNAVAILABLE
        response = await query_route(proxy.address, trusted)
    assert response.status.code == pb.Code.OK
    assert len(response.message_queues) == 4


async def test_mutual_tls_needs_a_client_certificate_of_the_trusted_ca(plain_cluster: LocalCluster, pki: Pki) -> None:
    tls = TlsServerConfig(
        mode="enforcing",
        cert_path=pki.server_cert,
        key_path=pki.server_key,
        trust_cert_path=pki.ca,
        need_client_auth="require",
    )
    ca = Path(pki.ca).read_bytes()
    with_cert = grpc.ssl_channel_credentials(ca, Path(pki.client_key).read_bytes(), Path(pki.client_cert).read_bytes())
    async with ProxyServer(plain_cluster.namesrv_addr, port=0, tls_server=tls) as proxy:
        assert (await query_route(proxy.address, with_cert)).status.code == pb.Code.OK
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await query_route(proxy.address, grpc.ssl_channel_credentials(ca))
        assert err.value.code() == grpc.StatusCode.UNAVAILABLE


def test_settings_grpc_cannot_serve_are_refused(pki: Pki) -> None:
    with pytest.raises(InvalidArgumentError, match="not both"):
        ProxyServer("127.0.0.1:9876", tls_server=TlsServerConfig(mode="permissive", cert_path=pki.server_cert))
    optional = TlsServerConfig(
        mode="enforcing", cert_path=pki.server_cert, key_path=pki.server_key, trust_cert_path=pki.ca,
        need_client_auth="optional",
    )  # fmt: skip
    with pytest.raises(InvalidArgumentError, match="none or require"):
        ProxyServer("127.0.0.1:9876", tls_server=optional)


async def test_a_key_that_does_not_match_the_certificate_is_an_error_at_start(
    plain_cluster: LocalCluster, pki: Pki
) -> None:
    tls = TlsServerConfig(mode="enforcing", cert_path=pki.server_cert, key_path=pki.other_server_key)
    proxy = ProxyServer(plain_cluster.namesrv_addr, port=0, tls_server=tls)
    with pytest.raises(InvalidArgumentError, match=r"tls\.server"):
        await proxy.start()
    assert proxy.service is None  # nothing started


# ----------------------------------------------------------------------------- ACL 1.0


@pytest.fixture
async def acl_cluster(tmp_path: Path) -> AsyncIterator[tuple[LocalCluster, Path]]:
    acl_file = tmp_path / "plain_acl.yml"
    acl_file.write_text(ACL, encoding="utf-8")
    async with local_cluster(
        tmp_path / "store", auto_create_topic_enable=False, acl_enable=True, acl_file=str(acl_file)
    ) as c:
        async with Admin(config=ClientConfig(c.namesrv_addr, credentials=ENDPOINT_ADMIN)) as admin:
            await admin.create_topic(TOPIC, 4)
        yield c, acl_file


@pytest.fixture
async def acl_proxy(acl_cluster: tuple[LocalCluster, Path]) -> AsyncIterator[ProxyServer]:
    c, acl_file = acl_cluster
    config = ClientConfig(c.namesrv_addr, credentials=ENDPOINT_ADMIN)
    async with ProxyServer(c.namesrv_addr, port=0, config=config, auth=AclFileAccounts(acl_file)) as p:
        yield p


async def test_sdk_producer_with_the_right_credentials_sends(
    acl_cluster: tuple[LocalCluster, Path], acl_proxy: ProxyServer
) -> None:
    receipts = await asyncio.to_thread(sdk_send, acl_proxy.address, "producer1", "pubsecret1", [b"a", b"b"])
    assert len(receipts) == 2
    assert await stored_bodies(acl_cluster[0]) == [b"a", b"b"]


def sdk_refusal(endpoint: str, ak: str, sk: str, tls: bool = False) -> Exception:
    """The SDK's exception when it cannot send with these credentials. A refused QueryRoute is
    raised as "failed to fetch topic:… route." and its status only logged (checked with caplog)."""
    with pytest.raises(Exception) as err:  # the SDK raises a bare Exception here
        sdk_send(endpoint, ak, sk, [b"refused"], tls)
    return err.value


@pytest.mark.parametrize(
    ("ak", "sk", "message"),
    [
        ("producer1", "wrong-secret", "check signature failed."),
        ("nobody12", "whatever1", "User:nobody12 is not found."),
        ("", "", "username cannot be null."),
    ],
)
async def test_bad_credentials_are_refused_unauthorized_and_store_nothing(
    acl_cluster: tuple[LocalCluster, Path],
    acl_proxy: ProxyServer,
    ak: str,
    sk: str,
    message: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    exc = await asyncio.to_thread(sdk_refusal, acl_proxy.address, ak, sk)
    assert str(exc) == f"failed to fetch topic:{TOPIC} route."
    # Code.UNAUTHORIZED, as Java's proxy answers an AuthenticationException, with Java's message
    assert f"query topic raise exception, 40100, {message}" in caplog.text
    assert stored_count(acl_cluster[0]) == 0


async def test_a_user_without_pub_is_refused_by_the_broker_acl(
    acl_cluster: tuple[LocalCluster, Path], acl_proxy: ProxyServer
) -> None:
    exc = await asyncio.to_thread(sdk_refusal, acl_proxy.address, "consumer1", "subsecret1")
    assert isinstance(exc, ClientException)
    assert "40100" in str(exc)  # UNAUTHORIZED: what Java's proxy answers an AuthorizationException
    assert "No permission for topic:orders" in str(exc)  # the broker's ACL 1.0 remark for consumer1
    assert stored_count(acl_cluster[0]) == 0


async def test_raw_call_with_a_forged_signature_gets_the_unauthorized_status(
    acl_cluster: tuple[LocalCluster, Path], acl_proxy: ProxyServer
) -> None:
    date = "20250101T000000Z"
    good = signature_hex("pubsecret1", date)
    forged = signature_hex("pubsecret2", date)

    async def call(signature: str) -> spb.QueryRouteResponse:
        auth = f"MQv2-HMAC-SHA1 Credential=producer1, SignedHeaders=x-mq-date-time, Signature={signature}"
        async with grpc.aio.insecure_channel(acl_proxy.address) as channel:
            response: spb.QueryRouteResponse = await sgrpc.MessagingServiceStub(channel).QueryRoute(
                spb.QueryRouteRequest(topic=pb.Resource(name=TOPIC)),
                metadata=(("x-mq-client-id", "raw"), ("x-mq-date-time", date), ("authorization", auth)),
                timeout=5,
            )
            return response

    refused = await call(forged)
    assert (refused.status.code, refused.status.message) == (pb.Code.UNAUTHORIZED, "check signature failed.")
    assert not refused.message_queues
    accepted = await call(good)
    assert accepted.status.code == pb.Code.OK
    assert len(accepted.message_queues) == 4


# ----------------------------------------------------------------------------- ACL 2.0

ROOT = SessionCredentials("root", "rootsecret")


@pytest.fixture
async def acl2_cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with local_cluster(
        tmp_path / "store",
        auto_create_topic_enable=False,
        authentication_enabled=True,
        authorization_enabled=True,
        init_authentication_user='{"username": "root", "password": "rootsecret"}',
    ) as c:
        async with Admin(config=ClientConfig(c.namesrv_addr, credentials=ROOT)) as admin:
            await admin.create_topic(TOPIC, 4, broker_addr=c.broker_addr)
            await acl2.create_user(admin, c.broker_addr, "alice", "alicesecret")
            await acl2.create_user(admin, c.broker_addr, "bob", "bobsecret")
            await acl2.create_acl(admin, c.broker_addr, "User:alice", [f"Topic:{TOPIC}"], ["Pub"], None, "Allow")
        yield c


async def test_acl2_users_are_read_from_the_brokers(
    acl2_cluster: LocalCluster, caplog: pytest.LogCaptureFixture
) -> None:
    c = acl2_cluster
    config = ClientConfig(c.namesrv_addr, credentials=ROOT)
    async with ProxyServer(c.namesrv_addr, port=0, config=config, auth="brokers") as proxy:
        receipts = await asyncio.to_thread(sdk_send, proxy.address, "alice", "alicesecret", [b"alice"])
        assert len(receipts) == 1
        await asyncio.to_thread(sdk_refusal, proxy.address, "alice", "not-her-secret")
        assert "query topic raise exception, 40100, check signature failed." in caplog.text
        no_acl = await asyncio.to_thread(sdk_refusal, proxy.address, "bob", "bobsecret")
        assert isinstance(no_acl, ClientException)
        assert "40100" in str(no_acl)
    assert stored_count(c) == 1


# ----------------------------------------------------------------------------- rocketpipe serve


def test_serve_grpc_port_with_tls_and_acl(
    tmp_path: Path, pki: Pki, trust_test_ca: None, caplog: pytest.LogCaptureFixture
) -> None:
    from integration.cli.test_cli_grpc import Running
    from rocketpipe.client import SyncAdmin
    from waiting import wait_until_sync

    acl_file = tmp_path / "plain_acl.yml"
    acl_file.write_text(ACL, encoding="utf-8")
    served = Running(
        [
            "serve", "--port", "0", "--namesrv-port", "0", "--grpc-port", "0", "--data-dir", str(tmp_path / "store"),
            "--tls-server-mode", "enforcing", "--tls-server-cert", pki.server_cert, "--tls-server-key", pki.server_key,
            "--acl-enable", "--acl-file", str(acl_file),
            "--inner-client-access-key", ENDPOINT_ADMIN.access_key,
            "--inner-client-secret-key", ENDPOINT_ADMIN.secret_key,
        ]
    )  # fmt: skip
    try:
        served.wait_for(r"(ready)")
        namesrv = served.wait_for(r"name server listening on (\S+)")
        endpoint = served.wait_for(r"gRPC endpoint \(RocketMQ 5 SDKs\) on (\S+) \(tls=true, authentication=acl1\)")
        config = ClientConfig(namesrv, credentials=ENDPOINT_ADMIN, use_tls=True, tls_client_trust_cert_path=pki.ca)
        with SyncAdmin(config=config) as admin:
            admin.create_topic(TOPIC, queue_nums=4)
            wait_until_sync(lambda: len(admin.topic_queues(TOPIC)) == 4, timeout=30, what="topic routed")
            receipts = sdk_send(endpoint, "producer1", "pubsecret1", [b"served"], tls=True)
            refused = sdk_refusal(endpoint, "producer1", "wrong-secret", tls=True)
            queues = admin.topic_queues(TOPIC)
            total = sum(admin.max_offset(q) for q in queues)
        assert len(receipts) == 1
        assert str(refused) == f"failed to fetch topic:{TOPIC} route."
        assert "query topic raise exception, 40100, check signature failed." in caplog.text
        assert total == 1  # the accepted message only
    finally:
        assert served.stop() == 0
