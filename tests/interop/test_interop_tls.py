"""TLS interop, with certificates made at test time (``cryptography``; EC P-256, PKCS#8 keys):

* rocketpipe's client with ``use_tls`` (verifying the certificate and the IP address) produces
  and consumes on an Apache 5.3.3 name server + broker started with
  ``-Dtls.server.mode=enforcing`` and our certificate (``tls.test.mode.enable=false``); a
  plain rocketpipe client is refused;
* the official Java clients 5.3.3 / 4.9.8 with ``-Dtls.enable=true`` (verifying our CA:
  ``tls.test.mode.enable=false``, ``tls.client.authServer=true``) produce on rocketpipe's name
  server and broker in ``enforcing`` mode; in test mode (no verification) too; and with a client
  certificate (``tls.client.certPath`` / ``keyPath``) when rocketpipe requires one
  (``need_client_auth="require"``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from interop_support import JavaClient, create_topic, unique

from integration.transport.test_tls_pki import Pki, make_pki
from rocketpipe import ConsumeFromWhere, Message
from rocketpipe.client import Admin, ClientConfig, LitePullConsumer, Producer
from rocketpipe.errors import RocketMQError
from rocketpipe.testing.apache import (
    APACHE_VERSIONS,
    ApacheCluster,
    ApacheUnavailableError,
    apache_cluster,
    remoting_request,
)
from rocketpipe.testing.cluster import local_cluster
from rocketpipe.transport import TlsClientConfig, TlsServerConfig
from waiting import wait_until


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def java_verifying_props(pki: Pki, home: Path) -> dict[str, str]:
    """A Java client that speaks TLS and checks the server's certificate against our CA."""
    return {
        "tls.enable": "true",
        "tls.test.mode.enable": "false",
        "tls.client.authServer": "true",
        "tls.client.trustCertPath": pki.ca,
        "tls.config.file": str(home / "no-tls.properties"),
    }


@pytest.fixture(scope="module")
def apache_tls(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApacheCluster]:
    version = APACHE_VERSIONS["apache-5"]
    props = {
        "tls.server.mode": "enforcing",
        "tls.test.mode.enable": "false",
        "tls.server.certPath": pki.server_cert,
        "tls.server.keyPath": pki.server_key,
    }
    try:
        with apache_cluster(version, tmp_path_factory.mktemp("apache-tls"), tls_props=props) as c:
            yield c
    except ApacheUnavailableError as exc:
        pytest.fail(f"Apache RocketMQ {version} with TLS unavailable: {exc}", pytrace=False)


async def test_rocketpipe_client_over_tls_to_apache_enforcing(apache_tls: ApacheCluster, pki: Pki) -> None:
    # the hand-built probe (no rocketpipe code): TLS is answered, plain is not
    assert remoting_request(apache_tls.namesrv_addr, 106, tls=True).code == 0
    with pytest.raises(OSError):
        remoting_request(apache_tls.namesrv_addr, 106)
    topic, group = unique("TlsApache"), unique("tls-cg")
    config = ClientConfig(namesrv_addr=apache_tls.namesrv_addr, use_tls=True, tls_client_trust_cert_path=pki.ca)
    async with Admin(config=config) as admin:
        await create_topic(admin, topic, 2)
    bodies = [f"tls-{i}".encode() for i in range(6)]
    async with Producer(unique("tls-pg"), config=config) as producer:
        for body in bodies:
            result = await producer.send(Message.build(topic, body))
            assert result.message_queue.broker_name == apache_tls.broker_name
    got: list[bytes] = []
    async with LitePullConsumer(
        group, config=config, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    ) as consumer:
        consumer.subscribe(topic)

        async def enough() -> bool:
            got.extend(m.body for m in await consumer.poll(0.5))
            return len(got) >= len(bodies)

        await wait_until(enough, timeout=60, what="the messages back from Apache over TLS")
    assert sorted(got) == sorted(bodies)

    # a plain client: Java's enforcing server closes the connection without an answer
    plain = ClientConfig(namesrv_addr=apache_tls.namesrv_addr, request_timeout=3.0)
    async with Admin(config=plain) as admin:
        with pytest.raises(RocketMQError):
            await admin.topic_queues(topic)


@pytest.mark.parametrize("mode", ["verifying", "test-mode", "mutual"])
async def test_java_client_over_tls_to_rocketpipe_enforcing(
    java_client: JavaClient, pki: Pki, tmp_path: Path, mode: str
) -> None:
    mutual = mode == "mutual"
    enforcing = TlsServerConfig(
        mode="enforcing", cert_path=pki.server_cert, key_path=pki.server_key,
        trust_cert_path=pki.ca if mutual else None, need_client_auth="require" if mutual else "none",
    )  # fmt: skip
    client_cert = {"cert_path": pki.client_cert, "key_path": pki.client_key} if mutual else {}
    async with local_cluster(
        tmp_path / "store",
        namesrv_tls=enforcing,
        tls_server=enforcing,
        tls_enable=True,
        tls_client=TlsClientConfig(trust_cert_path=pki.ca, **client_cert),
    ) as cluster:
        topic, n = unique("JavaTls"), 4
        config = ClientConfig(
            namesrv_addr=cluster.namesrv_addr, use_tls=True, tls_client_trust_cert_path=pki.ca,
            tls_client_cert_path=client_cert.get("cert_path"), tls_client_key_path=client_cert.get("key_path"),
        )  # fmt: skip
        async with Admin(config=config) as admin:
            await create_topic(admin, topic, 2)
        no_file = str(java_client.home / "no-tls.properties")
        if mode == "test-mode":
            props = {"tls.enable": "true", "tls.test.mode.enable": "true", "tls.config.file": no_file}
        else:
            props = java_verifying_props(pki, java_client.home)
        if mutual:
            props |= {"tls.client.certPath": pki.client_cert, "tls.client.keyPath": pki.client_key}
        res = await java_client.run(
            "ProducerScenario", cluster.namesrv_addr, topic, unique("jpg"), str(n), jvm_props=props, timeout=120
        )
        assert res["ok"], res.get("error")
        assert [r["status"] for r in res["sync"]] == ["SEND_OK"] * n
        assert [r["status"] for r in res["async"]] == ["SEND_OK"] * n
        assert res["batch"]["status"] == "SEND_OK"
        assert cluster.broker.server.tls_connections >= 1
        assert cluster.broker.server.plain_refused == 0
        async with Admin(config=config) as admin:
            stored = sum([await admin.max_offset(mq) for mq in await admin.topic_queues(topic)])
        assert stored >= 3 * n  # sync + async + batch (+ oneway, delay and big)
        if mutual:  # the same Java client without its certificate is refused
            props = java_verifying_props(pki, java_client.home)
            try:
                res = await java_client.run(
                    "ProducerScenario", cluster.namesrv_addr, topic, unique("jpg"), "1", jvm_props=props, timeout=120
                )
            except AssertionError as exc:
                res = {"ok": False, "error": str(exc)}
            assert not res["ok"]
