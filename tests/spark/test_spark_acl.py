"""format("rocketmq") against secured brokers through a local[2] SparkSession: the source's and the
sink's ``accessKey`` / ``secretKey`` options against an ACL-enabled embedded broker (a real
plain_acl.yml), and ``useTLS`` / ``tls.client.trustCertPath`` against a TLS-enforcing name server
and broker; plus the option checks and the secrets kept out of ``repr`` and error messages.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from spark_cluster import ThreadedCluster

from integration.transport.test_tls import client_ssl, server_tls
from integration.transport.test_tls_pki import make_pki
from rocketpipe.client import ClientConfig, SyncAdmin
from rocketpipe.client.config import SessionCredentials
from rocketpipe.spark.offsets import QueueRange
from rocketpipe.spark.options import (
    SinkOptionError,
    SourceOptionError,
    parse_sink_options,
    parse_source_options,
)
from rocketpipe.spark.reader import ClientSpec, make_partitions

pytestmark = pytest.mark.spark

TOPIC = "SparkAclTopic"
SECRET = "sparksecret1"
ACL = f"""\
accounts:
  - accessKey: sparkrw1
    secretKey: {SECRET}
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms: [{TOPIC}=PUB|SUB]
    groupPerms: [TOOLS_CONSUMER=SUB]
  - accessKey: adminkey
    secretKey: adminsecret
    admin: true
"""
KEYS = {"accessKey": "sparkrw1", "secretKey": SECRET}


@pytest.fixture(scope="module")
def ns(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("spark-acl")
    acl = root / "plain_acl.yml"
    acl.write_text(ACL, encoding="utf-8")
    tc = ThreadedCluster(root / "store", acl_enable=True, acl_file=str(acl), auto_create_topic_enable=False)
    cluster = tc.start()
    admin = SyncAdmin(
        config=ClientConfig(cluster.namesrv_addr, credentials=SessionCredentials("adminkey", "adminsecret"))
    )
    try:
        admin.create_topic(TOPIC, 2)
    finally:
        admin.close()
    try:
        yield cluster.namesrv_addr
    finally:
        tc.close()


def _read(spark: Any, ns: str, **opts: str) -> Any:
    r = spark.read.format("rocketmq").option("nameServer", ns).option("topic", TOPIC)
    for k, v in opts.items():
        r = r.option(k, v)
    return r.load()


def _write(spark: Any, ns: str, bodies: list[str], **opts: str) -> None:
    w = spark.createDataFrame([(b,) for b in bodies], "body STRING").write.format("rocketmq")
    w = w.option("nameServer", ns).option("topic", TOPIC)
    for k, v in opts.items():
        w = w.option(k, v)
    w.mode("append").save()


def test_write_and_read_with_the_accounts_keys(spark: Any, ns: str) -> None:
    bodies = [f"acl-{i}" for i in range(30)]
    _write(spark, ns, bodies, **KEYS)
    rows = _read(spark, ns, **KEYS).select("body", "topic").collect()
    assert sorted(bytes(r["body"]).decode() for r in rows) == sorted(bodies)
    assert {r["topic"] for r in rows} == {TOPIC}


def _error_text(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def test_wrong_secret_or_no_keys_is_refused_by_the_broker(spark: Any, ns: str) -> None:
    wrong = {"accessKey": "sparkrw1", "secretKey": "not-the-secret-9"}
    with pytest.raises(Exception) as read_err:
        _read(spark, ns, **wrong).collect()
    text = _error_text(read_err.value)
    assert "Check signature failed" in text and "not-the-secret-9" not in text

    with pytest.raises(Exception) as write_err:
        _write(spark, ns, ["never"], **wrong, retries="0")
    text = _error_text(write_err.value)
    assert "Check signature failed" in text and "not-the-secret-9" not in text

    with pytest.raises(Exception, match="No accessKey is configured"):
        _read(spark, ns).collect()
    assert all(bytes(r["body"]) != b"never" for r in _read(spark, ns, **KEYS).select("body").collect())


def test_connection_options_are_checked_and_secrets_stay_out_of_repr() -> None:
    base = {"nameServer": "127.0.0.1:9876", "topic": TOPIC}
    cases: list[tuple[dict[str, str], str]] = [
        ({"accessKey": "ak"}, "accessKey and secretKey go together"),
        ({"secretKey": SECRET}, "accessKey and secretKey go together"),
        ({"securityToken": "tok"}, "securityToken needs accessKey and secretKey"),
        ({"tls.client.trustCertPath": "/ca.pem"}, "need useTLS=true"),
        ({"useTLS": "yes"}, "useTLS='yes' is not a boolean"),
        ({"useTLS": "true", "tls.client.keyPath": "/k.pem"}, "tls.client.keyPath needs tls.client.certPath"),
    ]
    for extra, message in cases:
        with pytest.raises(SourceOptionError, match=message):
            parse_source_options(base | extra, streaming=False)
        with pytest.raises(SinkOptionError, match=message):
            parse_sink_options(base | extra)

    secrets = {"secretKey": SECRET, "securityToken": "sts-token-7", "tls.client.keyPassword": "key-pass-8"}
    opts = {**base, "accessKey": "sparkrw1", "useTLS": "TRUE", **secrets}
    source = parse_source_options(opts, streaming=True)
    sink = parse_sink_options(opts)
    assert source.connection.use_tls and source.connection.tls_client_key_password == "key-pass-8"
    partition = make_partitions([QueueRange(TOPIC, "broker-a", 0, 0, 5)], source)[0]
    assert partition.client == ClientSpec.from_options(source)
    for shown in (repr(source), repr(sink), repr(partition), repr(pickle.loads(pickle.dumps(partition)))):
        assert "sparkrw1" in shown
        for value in secrets.values():
            assert value not in shown
    config = sink.connection.client_config("127.0.0.1:9876")
    assert config.credentials == SessionCredentials("sparkrw1", SECRET, "sts-token-7")
    assert config.use_tls and config.tls_client_key_password == "key-pass-8"


def test_tls_enforcing_cluster_with_use_tls(spark: Any, tmp_path: Path) -> None:
    pki = make_pki(tmp_path / "pki")
    enforcing = server_tls(pki, "enforcing")
    tc = ThreadedCluster(
        tmp_path / "store", namesrv_tls=enforcing, tls_server=enforcing, tls_enable=True, tls_client=client_ssl(pki)
    )
    cluster = tc.start()
    try:
        config = ClientConfig(cluster.namesrv_addr, use_tls=True, tls_client_trust_cert_path=pki.ca)
        admin = SyncAdmin(config=config)
        try:
            admin.create_topic(TOPIC, 2)
        finally:
            admin.close()
        tls = {"useTLS": "true", "tls.client.trustCertPath": pki.ca}
        _write(spark, cluster.namesrv_addr, ["tls-a", "tls-b", "tls-c"], **tls)
        rows = _read(spark, cluster.namesrv_addr, **tls).select("body").collect()
        assert sorted(bytes(r["body"]) for r in rows) == [b"tls-a", b"tls-b", b"tls-c"]
        assert cluster.broker.server.plain_refused == 0
        with pytest.raises(Exception, match="accepts TLS connections only"):
            _read(spark, cluster.namesrv_addr).collect()
    finally:
        tc.close()
