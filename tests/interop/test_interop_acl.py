"""ACL 1.0 interop: rocketpipe's signing against a real Apache 4.9.7 broker started with
``aclEnable=true`` and a plain_acl.yml, and the same requests against rocketpipe's broker.

Apache 4.9.x validates the signature before any permission, so a request refused for a
*permission* proves Java accepted rocketpipe's signature. Java's broker answers an ACL denial
SYSTEM_ERROR (1) with the remark ``"org.apache.rocketmq.acl.common.AclException: <message>, <frame>"``
(the exception escapes the RPC hook); rocketpipe answers NO_PERMISSION (16) with ``<message>``,
the code Apache 5.3 uses for authentication/authorization failures. The messages are compared.
Java clients 5.3.3 / 4.9.8 with ``AclClientRPCHook`` produce and consume on rocketpipe's broker.
Apache 5.3.3 has no ACL 1.0 (``aclEnable`` is ignored, ACL 2.0 replaced it); its ACL 2.0
authentication checks the same signature, and accepts rocketpipe's.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from interop_support import JavaClient, unique
from test_interop_tls import java_verifying_props

from integration.transport.test_tls_pki import Pki, make_pki
from rocketpipe import ConsumeFromWhere, Message
from rocketpipe.acl import SessionCredentials
from rocketpipe.broker import Broker, BrokerConfig
from rocketpipe.client import Admin, ClientConfig, LitePullConsumer, Producer
from rocketpipe.errors import BrokerError
from rocketpipe.protocol.codes import RequestCode, ResponseCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.testing.apache import APACHE_VERSIONS, ApacheCluster, ApacheUnavailableError, apache_cluster
from rocketpipe.testing.cluster import local_cluster
from rocketpipe.transport import ConnectionPool, TlsClientConfig, TlsServerConfig

TOPIC = "AclInteropTopic"
GROUP = "acl-interop-cg"

ACL = f"""\
globalWhiteRemoteAddresses: []
accounts:
  - accessKey: producer1
    secretKey: pubsecret1
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms: [{TOPIC}=PUB]
  - accessKey: consumer1
    secretKey: subsecret1
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms: [{TOPIC}=SUB]
    groupPerms: [{GROUP}=SUB]
  - accessKey: adminkey
    secretKey: adminsecret
    admin: true
"""

PUB = SessionCredentials("producer1", "pubsecret1")
SUB = SessionCredentials("consumer1", "subsecret1")
ADMIN = SessionCredentials("adminkey", "adminsecret")


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def _tls_props(pki: Pki) -> dict[str, str]:
    """Java's TLS system properties of an enforcing Apache name server and broker with our certificate."""
    return {
        "tls.server.mode": "enforcing",
        "tls.test.mode.enable": "false",
        "tls.server.certPath": pki.server_cert,
        "tls.server.keyPath": pki.server_key,
    }


_JAVA_REMARK = re.compile(r"AclException: (.*?)(?:, org\.apache\.rocketmq\.\S+\(.*\))?$", re.S)


@pytest.fixture(scope="module")
def apache_acl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApacheCluster]:
    version = APACHE_VERSIONS["apache-4"]
    try:
        with apache_cluster(version, tmp_path_factory.mktemp("apache-4-acl"), plain_acl=ACL) as c:
            yield c
    except ApacheUnavailableError as exc:
        pytest.fail(f"Apache RocketMQ {version} with ACL unavailable: {exc}", pytrace=False)


@pytest.fixture
async def rocketpipe_broker(tmp_path: Path) -> AsyncIterator[Broker]:
    acl = tmp_path / "plain_acl.yml"
    acl.write_text(ACL, encoding="utf-8")
    config = BrokerConfig(
        store_dir=tmp_path / "store", mapped_file_size_commit_log=1 << 24, acl_enable=True, acl_file=str(acl)
    )
    async with Broker(config) as b:
        yield b


def _create_topic(topic: str) -> RemotingCommand:
    ext = {
        "topic": topic,
        "defaultTopic": "TBW102",
        "readQueueNums": "1",
        "writeQueueNums": "1",
        "perm": "6",
        "topicFilterType": "SINGLE_TAG",
        "topicSysFlag": "0",
        "order": "false",
    }
    return RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, ext)


def _pull(topic: str, group: str) -> RemotingCommand:
    ext = {
        "consumerGroup": group,
        "topic": topic,
        "queueId": "0",
        "queueOffset": "0",
        "maxMsgNums": "32",
        "sysFlag": "0",
        "commitOffset": "0",
        "suspendTimeoutMillis": "0",
        "subscription": "*",
        "subVersion": "0",
    }
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, ext)


async def _call(
    addr: str, creds: SessionCredentials | None, cmd: RemotingCommand, tls: TlsClientConfig | None = None
) -> RemotingCommand:
    """One request to ``addr``, signed with ``creds`` (None: unsigned), over TLS with ``tls``."""
    pool = ConnectionPool(
        request_hook=None if creds is None else creds.sign, ssl_context=None if tls is None else tls.client_context()
    )
    try:
        return await pool.request(addr, cmd, 10.0)
    finally:
        await pool.close()


def _denials(topic: str, no_admin_topic: str) -> list[tuple[SessionCredentials | None, RemotingCommand, str]]:
    return [
        (None, _pull(topic, GROUP), "No accessKey is configured"),
        (SessionCredentials("stranger1", "whatever1"), _pull(topic, GROUP), "No acl config for stranger1"),
        (SessionCredentials("consumer1", "not-the-secret"), _pull(topic, GROUP), "Check signature failed for accessKey=consumer1"),
        # both the topic (PUB only) and the group (default DENY) refuse: Java reports the first in
        # its HashMap's order, and so does rocketpipe
        (PUB, _pull(topic, GROUP), f"No default permission for group:{GROUP}"),
        (SUB, _pull(topic, "other-group"), "No default permission for group:other-group"),
        (SUB, _create_topic(no_admin_topic), "Need admin permission for request code=17, but accessKey=consumer1 is not"),
    ]  # fmt: skip


async def test_apache_4_accepts_rocketpipe_signatures_and_denies_as_rocketpipe_does(
    apache_acl: ApacheCluster, rocketpipe_broker: Broker
) -> None:
    for addr in (apache_acl.broker_addr, rocketpipe_broker.address):
        resp = await _call(addr, ADMIN, _create_topic(TOPIC))
        assert resp.code == ResponseCode.SUCCESS, (addr, resp.remark)
    no_admin = unique("AclNoAdmin")
    before = [await _state(addr, no_admin) for addr in (apache_acl.broker_addr, rocketpipe_broker.address)]
    for creds, cmd, message in _denials(TOPIC, no_admin):
        java = await _call(apache_acl.broker_addr, creds, RemotingCommand.request(cmd.code, dict(cmd.ext_fields)))
        ours = await _call(rocketpipe_broker.address, creds, RemotingCommand.request(cmd.code, dict(cmd.ext_fields)))
        assert java.code == ResponseCode.SYSTEM_ERROR, java.remark
        m = _JAVA_REMARK.search(java.remark or "")
        assert m is not None and m.group(1) == message, java.remark
        assert (ours.code, ours.remark) == (ResponseCode.NO_PERMISSION, message)
    # nothing changed: the refused topic was not created, no offset moved on either broker
    after = [await _state(addr, no_admin) for addr in (apache_acl.broker_addr, rocketpipe_broker.address)]
    assert after == before
    assert all(not exists for exists, _ in after), after


async def _state(addr: str, no_admin_topic: str) -> tuple[bool, tuple[str | None, str | None]]:
    """Whether ``no_admin_topic`` exists on the broker at ``addr``, and :data:`GROUP`'s committed
    offset of :data:`TOPIC` queue 0 (the answer's code and offset), asked with the admin account."""
    stats = await _call(
        addr, ADMIN, RemotingCommand.request(RequestCode.GET_TOPIC_STATS_INFO, {"topic": no_admin_topic})
    )
    query = {"consumerGroup": GROUP, "topic": TOPIC, "queueId": "0"}
    offset = await _call(addr, ADMIN, RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, query))
    return stats.code == ResponseCode.SUCCESS, (str(offset.code), offset.ext_fields.get("offset"))


async def test_rocketpipe_clients_with_credentials_on_apache_4(apache_acl: ApacheCluster) -> None:
    resp = await _call(apache_acl.broker_addr, ADMIN, _create_topic(TOPIC))
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    bodies = [f"acl-{unique('m')}" for _ in range(3)]
    async with Producer(
        "acl-interop-pg", config=ClientConfig(namesrv_addr=apache_acl.namesrv_addr, credentials=PUB)
    ) as p:
        for body in bodies:
            await p.send(Message.build(TOPIC, body))
    consumer = LitePullConsumer(
        GROUP,
        config=ClientConfig(namesrv_addr=apache_acl.namesrv_addr, credentials=SUB),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        poll_timeout=0.2,
    )
    consumer.subscribe(TOPIC)
    got: set[str] = set()
    async with consumer:
        async with asyncio.timeout(60):
            while not set(bodies) <= got:
                got |= {bytes(m.body).decode() for m in await consumer.poll(0.5)}
    assert set(bodies) <= got


@pytest.mark.parametrize("transport", ["plain", "tls"])
async def test_java_clients_with_acl_client_rpc_hook_on_rocketpipe(
    java_client: JavaClient, tmp_path: Path, pki: Pki, transport: str
) -> None:
    """Java's own signer (``AclClientRPCHook``, clients 5.3.3 and 4.9.8) against rocketpipe's check,
    over plain TCP and over TLS (name server and broker enforcing, the Java client verifying our
    CA): allowed, wrong secret, unknown key, a denied permission, an admin-only request as a
    non-admin; every denial leaves the broker as it was."""
    acl = tmp_path / "plain_acl.yml"
    acl.write_text(ACL, encoding="utf-8")
    tls: dict[str, Any] = {}
    props: dict[str, str] | None = None
    client_tls: TlsClientConfig | None = None
    if transport == "tls":
        enforcing = TlsServerConfig(mode="enforcing", cert_path=pki.server_cert, key_path=pki.server_key)
        tls = {
            "namesrv_tls": enforcing,
            "tls_server": enforcing,
            "tls_enable": True,
            "tls_client": TlsClientConfig(trust_cert_path=pki.ca),
        }
        props = java_verifying_props(pki, java_client.home)
        client_tls = TlsClientConfig(trust_cert_path=pki.ca)
    async with local_cluster(
        tmp_path / "store", acl_enable=True, acl_file=str(acl), auto_create_topic_enable=False, **tls
    ) as c:
        resp = await _call(c.broker_addr, ADMIN, _create_topic(TOPIC), client_tls)
        assert resp.code == ResponseCode.SUCCESS, resp.remark
        no_admin = unique("AclNoAdmin")
        out = await java_client.run(
            AclScenarioArgs.name,
            c.namesrv_addr,
            *AclScenarioArgs.args(c.broker_addr, no_admin),
            timeout=120,
            jvm_props=props,
        )
        assert [s["status"] for s in out["sent"]] == ["SEND_OK"] * 3
        for key, message in (
            ("wrongSecret", "Check signature failed for accessKey=producer1"),
            ("unknownKey", "No acl config for stranger1"),
            ("noPub", f"No permission for topic:{TOPIC}"),
            ("adminOnly", "Need admin permission for request code=17, but accessKey=consumer1 is not"),
        ):
            assert (out.get(f"{key}Code"), out[key]) == (ResponseCode.NO_PERMISSION, message), (key, out)
        assert sorted(out["polled"]) == ["acl-0", "acl-1", "acl-2"]
        # nothing the refused requests asked for happened
        assert c.broker.store.get_max_offset(TOPIC, 0) == 3
        assert c.broker.topics.get(no_admin) is None
        if transport == "tls":
            assert c.broker.server.tls_connections >= 1 and c.broker.server.plain_refused == 0


class AclScenarioArgs:
    """``AclScenario``: namesrv topic group pubAk pubSk subAk subSk n timeoutSeconds brokerAddr noAdminTopic."""

    name = "AclScenario"

    @staticmethod
    def args(broker_addr: str, no_admin_topic: str) -> list[str]:
        return [
            TOPIC, GROUP, PUB.access_key, PUB.secret_key, SUB.access_key, SUB.secret_key, "3", "60",
            broker_addr, no_admin_topic,
        ]  # fmt: skip


# ------------------------------------------------------------------ Apache 5.3.3, ACL 2.0 authentication

SUPER = SessionCredentials("rocketmq5", "12345678")
#: broker.conf of an Apache 5.3.3 with ACL 2.0 authentication only, :data:`SUPER` its Super user
APACHE_5_AUTHENTICATION = {
    "authenticationEnabled": "true",
    "authenticationProvider": "org.apache.rocketmq.auth.authentication.provider.DefaultAuthenticationProvider",
    "authenticationMetadataProvider": (
        "org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider"
    ),
    "initAuthenticationUser": json.dumps({"username": SUPER.access_key, "password": SUPER.secret_key}),
    "innerClientAuthenticationCredentials": json.dumps({"accessKey": SUPER.access_key, "secretKey": SUPER.secret_key}),
}


@pytest.fixture(scope="module")
def apache_5_auth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApacheCluster]:
    """5.3.3 with ACL 2.0 authentication (no authorization): users sign as with ACL 1.0."""
    version = APACHE_VERSIONS["apache-5"]
    conf = APACHE_5_AUTHENTICATION
    try:
        with apache_cluster(version, tmp_path_factory.mktemp("apache-5-auth"), broker_conf=conf) as c:
            yield c
    except ApacheUnavailableError as exc:
        pytest.fail(f"Apache RocketMQ {version} with authentication unavailable: {exc}", pytrace=False)


async def test_apache_5_authentication_accepts_rocketpipe_signatures(apache_5_auth: ApacheCluster) -> None:
    topic = unique("AclAuth5")
    resp = await _call(apache_5_auth.broker_addr, SUPER, _create_topic(topic))
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    async with Producer(
        "acl5-pg", config=ClientConfig(namesrv_addr=apache_5_auth.namesrv_addr, credentials=SUPER)
    ) as p:
        result = await p.send(Message.build(topic, "authenticated"))
    assert result.send_status.name == "SEND_OK"
    wrong = SessionCredentials(SUPER.access_key, "not-the-secret")
    resp = await _call(apache_5_auth.broker_addr, wrong, _create_topic(unique("AclAuth5Wrong")))
    assert (resp.code, resp.remark) == (ResponseCode.NO_PERMISSION, "check signature failed.")
    resp = await _call(apache_5_auth.broker_addr, None, _create_topic(unique("AclAuth5Anon")))
    assert resp.code == ResponseCode.NO_PERMISSION, resp.remark


# ------------------------------------------------------------------ credentials and TLS together


@pytest.fixture(scope="module", params=["apache-4", "apache-5"])
def apache_acl_tls(
    request: pytest.FixtureRequest, pki: Pki, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[ApacheCluster, SessionCredentials, SessionCredentials]]:
    """An Apache name server and broker in ``tls.server.mode=enforcing`` with our certificate and
    access control on: 4.9.7 with ``aclEnable`` (ACL 1.0, :data:`ACL`), 5.3.3 with ACL 2.0
    authentication (5.3 ignores ``aclEnable``). Yields the cluster, an allowed and a refused
    credential for sending to :data:`TOPIC`."""
    version = APACHE_VERSIONS[request.param]
    work = tmp_path_factory.mktemp(f"{request.param}-acl-tls")
    kw: dict[str, Any] = {"tls_props": _tls_props(pki)}
    if request.param == "apache-4":
        kw["plain_acl"] = ACL
        allowed, refused = ADMIN, SUB  # consumer1 has SUB only on TOPIC
    else:
        kw["broker_conf"] = APACHE_5_AUTHENTICATION
        allowed, refused = SUPER, SessionCredentials(SUPER.access_key, "not-the-secret")
    try:
        with apache_cluster(version, work, **kw) as c:
            yield c, allowed, refused
    except ApacheUnavailableError as exc:
        pytest.fail(f"Apache RocketMQ {version} with access control and TLS unavailable: {exc}", pytrace=False)


async def test_rocketpipe_client_with_credentials_over_tls_on_apache(
    apache_acl_tls: tuple[ApacheCluster, SessionCredentials, SessionCredentials], pki: Pki
) -> None:
    """rocketpipe's producer and lite pull consumer, signing and speaking TLS (verifying our CA),
    against Apache 4.9.7 (ACL 1.0) and 5.3.3 (ACL 2.0 authentication), both TLS-enforcing; a
    refused credential's send is refused with the broker's code and stores nothing."""
    ac, allowed, refused = apache_acl_tls
    tls = TlsClientConfig(trust_cert_path=pki.ca)

    def config(creds: SessionCredentials) -> ClientConfig:
        return ClientConfig(namesrv_addr=ac.namesrv_addr, credentials=creds).with_tls(tls)

    resp = await _call(ac.broker_addr, allowed, _create_topic(TOPIC), tls)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    bodies = [f"acl-tls-{unique('m')}" for _ in range(3)]
    async with Producer(unique("acl-tls-pg"), config=config(allowed)) as p:
        for body in bodies:
            assert (await p.send(Message.build(TOPIC, body))).send_status.name == "SEND_OK"
    async with Admin(config=config(allowed)) as admin:
        (mq,) = await admin.topic_queues(TOPIC)
        stored = await admin.max_offset(mq)

    producer = Producer(unique("acl-tls-refused"), config=config(refused), retry_times_when_send_failed=0)
    async with producer:
        with pytest.raises(BrokerError) as refusal:
            await producer.send(Message.build(TOPIC, "refused"))
    if ac.version.startswith("4."):  # the AclException escapes Java 4.9's RPC hook: SYSTEM_ERROR
        assert refusal.value.response_code == ResponseCode.SYSTEM_ERROR
        # 4.9's checkPerm says "No default permission" for a listed resource too (5.0-5.2's
        # PlainPermissionChecker, which rocketpipe follows, says "No permission")
        assert f"AclException: No default permission for topic:{TOPIC}," in refusal.value.remark
    else:
        assert (refusal.value.response_code, refusal.value.remark) == (
            ResponseCode.NO_PERMISSION,
            "check signature failed.",
        )

    got: set[str] = set()
    consumer = LitePullConsumer(
        unique("acl-tls-cg") if not ac.version.startswith("4.") else GROUP,
        config=config(SUB if ac.version.startswith("4.") else allowed),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        poll_timeout=0.2,
    )
    consumer.subscribe(TOPIC)
    async with consumer:
        async with asyncio.timeout(60):
            while not set(bodies) <= got:
                got |= {bytes(m.body).decode() for m in await consumer.poll(0.5)}
    async with Admin(config=config(allowed)) as admin:
        assert await admin.max_offset(mq) == stored  # the refused send stored nothing
