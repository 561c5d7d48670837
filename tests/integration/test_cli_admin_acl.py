"""``rocketpipe admin`` against a secured cluster: the ``admin`` group's ``--access-key`` /
``--secret-key`` (or ROCKETMQ_ACCESS_KEY / ROCKETMQ_SECRET_KEY) sign every request of its commands,
and ``--use-tls`` with ``--tls-client-trust-cert`` reaches a TLS-enforcing name server and broker.

The clusters are rocketpipe's own (``local_cluster``, real TCP on 127.0.0.1, a real
plain_acl.yml); the commands run through typer's CliRunner in a worker thread so the cluster's loop
keeps serving.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import Result
from typer.testing import CliRunner

from integration.transport.test_tls import client_ssl, server_tls
from integration.transport.test_tls_pki import Pki, make_pki
from rocketpipe.cli.errors import EXIT_BROKER, EXIT_USAGE
from rocketpipe.cli.main import app
from rocketpipe.testing.cluster import LocalCluster, local_cluster
from waiting import wait_until

runner = CliRunner()

ACL = """\
accounts:
  - accessKey: producer1
    secretKey: pubsecret1
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms: [AdminAclTopic=PUB]
  - accessKey: adminkey
    secretKey: adminsecret
    admin: true
"""
ADMIN_KEYS = ("--access-key", "adminkey", "--secret-key", "adminsecret")


@pytest.fixture
async def acl_cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    acl = tmp_path / "plain_acl.yml"
    acl.write_text(ACL, encoding="utf-8")
    async with local_cluster(
        tmp_path / "store",
        mapped_file_size_commit_log=8 * 1024 * 1024,
        acl_enable=True,
        acl_file=str(acl),
        auto_create_topic_enable=False,
    ) as c:
        yield c


@pytest.fixture(autouse=True)
def no_keys_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ROCKETMQ_ACCESS_KEY", "ROCKETMQ_SECRET_KEY", "ROCKETMQ_TLS_CLIENT_KEY_PASSWORD"):
        monkeypatch.delenv(name, raising=False)


async def admin(group_options: tuple[str, ...], *args: str, env: dict[str, str] | None = None, code: int = 0) -> Result:
    """Run ``rocketpipe admin GROUP_OPTIONS ARGS`` and check its exit code."""
    result = await asyncio.to_thread(runner.invoke, app, ["admin", *group_options, *args], env=env)
    assert result.exit_code == code, f"exit {result.exit_code}: {result.output}"
    return result


def update_topic(c: LocalCluster, topic: str) -> tuple[str, ...]:
    return ("updateTopic", "-n", c.namesrv_addr, "-b", c.broker_addr, "-t", topic, "-r", "2", "-w", "2")


async def test_admin_only_command_needs_the_admin_account(acl_cluster: LocalCluster) -> None:
    c = acl_cluster
    unsigned = await admin((), *update_topic(c, "AdminAclTopic"), code=EXIT_BROKER)
    assert "No accessKey is configured" in unsigned.output
    producer = await admin(
        ("--access-key", "producer1", "--secret-key", "pubsecret1"), *update_topic(c, "AdminAclTopic"), code=EXIT_BROKER
    )
    assert "Need admin permission" in " ".join(producer.output.split())
    wrong = await admin(
        ("--access-key", "adminkey", "--secret-key", "not-the-secret"),
        *update_topic(c, "AdminAclTopic"),
        code=EXIT_BROKER,
    )
    assert "Check signature failed" in " ".join(wrong.output.split())
    assert c.broker.topics.get("AdminAclTopic") is None

    await admin(ADMIN_KEYS, *update_topic(c, "AdminAclTopic"))
    config = c.broker.topics.get("AdminAclTopic")
    assert config is not None and config.read_queue_nums == 2

    env = {"ROCKETMQ_ACCESS_KEY": "adminkey", "ROCKETMQ_SECRET_KEY": "adminsecret"}
    await admin((), *update_topic(c, "AdminAclTopicEnv"), env=env)
    assert c.broker.topics.get("AdminAclTopicEnv") is not None

    async def listed() -> bool:
        result = await admin(ADMIN_KEYS, "topicList", "-n", c.namesrv_addr, "--json")
        return {"AdminAclTopic", "AdminAclTopicEnv"} <= set(orjson.loads(result.stdout)["topicList"])

    await wait_until(listed, what="both topics in the signed topicList")


async def test_admin_group_usage_errors() -> None:
    half = await admin(("--access-key", "adminkey"), "topicList", "-n", "127.0.0.1:1", code=EXIT_USAGE)
    assert "--secret-key" in half.output
    no_tls = await admin(("--tls-test-mode-enable",), "topicList", "-n", "127.0.0.1:1", code=EXIT_USAGE)
    assert "need --use-tls" in no_tls.output


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture
async def tls_cluster(tmp_path: Path, pki: Pki) -> AsyncIterator[LocalCluster]:
    enforcing = server_tls(pki, "enforcing")
    async with local_cluster(
        tmp_path / "store", namesrv_tls=enforcing, tls_server=enforcing, tls_enable=True, tls_client=client_ssl(pki)
    ) as c:
        yield c


async def test_admin_reaches_a_tls_enforcing_cluster_with_use_tls(tls_cluster: LocalCluster, pki: Pki) -> None:
    c = tls_cluster
    tls = ("--use-tls", "--tls-client-trust-cert", pki.ca)
    await admin(tls, *update_topic(c, "AdminTlsTopic"))
    assert c.broker.topics.get("AdminTlsTopic") is not None

    rows: list[dict[str, Any]] = orjson.loads((await admin(tls, "clusterList", "-n", c.namesrv_addr, "--json")).stdout)
    assert [r["brokerAddr"] for r in rows] == [c.broker_addr]
    assert c.broker.server.tls_connections >= 1
    assert c.broker.server.plain_refused == 0

    plain = await admin((), "clusterList", "-n", c.namesrv_addr, "--json", code=EXIT_BROKER)
    assert "accepts TLS connections only" in " ".join(plain.output.split())
