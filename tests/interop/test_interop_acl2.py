"""ACL 2.0 interop: the real mqadmin 5.3.3 (``createUser``, ``createAcl``, ``listUser``,
``getUser``, ``listAcl``, ``getAcl``, ``deleteAcl``, ``deleteUser``) against rocketpipe's broker and
against an Apache 5.3.3 broker started with ``authenticationEnabled`` / ``authorizationEnabled``,
the outputs compared line by line; then the same rules enforced on rocketpipe's producer by both
brokers, the refusals' codes and remarks compared.

mqadmin signs with the ``accessKey`` / ``secretKey`` of ``<rocketmq.home>/conf/tools.yml``; this
module gives it its own home with the Super user both brokers create at start
(``initAuthenticationUser``). Apache 5.3.3 needs its metadata providers named
(``authenticationMetadataProvider`` / ``authorizationMetadataProvider``: the RocksDB ones).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from interop_support import JAVA_CLIENT_VERSIONS, JavaClient, build_java_project, unique

from rocketpipe import Message
from rocketpipe.client import Admin, ClientConfig, Producer
from rocketpipe.client.config import SessionCredentials
from rocketpipe.errors import NoPermissionError
from rocketpipe.testing.apache import (
    APACHE_VERSIONS,
    ApacheCluster,
    ApacheUnavailableError,
    apache_cluster,
    prepare_home,
)
from rocketpipe.testing.cluster import local_cluster

ROOT = SessionCredentials("root", "rootsecret")
INIT_USER = '{"username":"root","password":"rootsecret"}'
APACHE_AUTH_CONF = {
    "authenticationEnabled": "true",
    "authorizationEnabled": "true",
    "authenticationMetadataProvider": "org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider",
    "authorizationMetadataProvider": "org.apache.rocketmq.auth.authorization.provider.LocalAuthorizationMetadataProvider",
    "initAuthenticationUser": INIT_USER,
}


@pytest.fixture(scope="module")
def mqadmin5(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JavaClient]:
    """The scenario project's classpath (rocketmq-tools 5.3.3) with a home whose tools.yml holds root."""
    version = JAVA_CLIENT_VERSIONS["java-5"]
    home = tmp_path_factory.mktemp("mqadmin-acl2")
    prepare_home(home)
    (home / "conf" / "tools.yml").write_text(f"accessKey: {ROOT.access_key}\nsecretKey: {ROOT.secret_key}\n")
    try:
        cp = build_java_project(version, home)
    except ApacheUnavailableError as exc:
        pytest.fail(f"official Java client {version} unavailable: {exc}", pytrace=False)
    client = JavaClient("java-5", version, cp, home)
    yield client
    client.stop()


@pytest.fixture(scope="module")
def apache_acl2(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApacheCluster]:
    version = APACHE_VERSIONS["apache-5"]
    try:
        with apache_cluster(version, tmp_path_factory.mktemp("apache-5-acl2"), broker_conf=APACHE_AUTH_CONF) as c:
            yield c
    except ApacheUnavailableError as exc:
        pytest.fail(f"Apache RocketMQ {version} with ACL 2.0 unavailable: {exc}", pytrace=False)


@pytest.fixture
async def rocketpipe_acl2(tmp_path: Path) -> AsyncIterator[tuple[str, str]]:
    async with local_cluster(
        tmp_path / "store", authentication_enabled=True, authorization_enabled=True, init_authentication_user=INIT_USER
    ) as c:
        yield c.namesrv_addr, c.broker_addr


_KEEP = re.compile(r"^(#|User:|\w+ \w+ to \S+ success\.|[a-z]\w*\s{2,})")


def _lines(out: str, broker_addr: str) -> list[str]:
    """mqadmin's answer lines (tables and ``… success.``), the broker address replaced, trailing blanks cut."""
    return [ln.replace(broker_addr, "<broker>").rstrip() for ln in out.splitlines() if _KEEP.match(ln)]


async def _session(mqadmin: JavaClient, namesrv: str, broker: str, user: str) -> list[list[str]]:
    """The same mqadmin commands in order; the answer lines of each."""
    b = ("-b", broker)
    commands = [
        ("createUser", *b, "-u", user, "-p", "s3cret-" + user),
        ("createAcl", *b, "-s", f"User:{user}", "-r", "Topic:AclOrders,Group:acl-cg", "-a", "Pub,Sub", "-d", "Allow",
         "-i", "127.0.0.1"),
        ("createAcl", *b, "-s", f"User:{user}", "-r", "Topic:log*", "-a", "Sub", "-d", "Deny"),
        ("getUser", *b, "-u", user),
        ("listUser", *b, "-f", user),
        ("getAcl", *b, "-s", f"User:{user}"),
        ("listAcl", *b, "-s", user),
        ("deleteAcl", *b, "-s", f"User:{user}", "-r", "Group:acl-cg"),
        ("listAcl", *b, "-s", user, "-r", "Topic"),
        ("deleteUser", *b, "-u", user),
        ("listUser", *b, "-f", user),
    ]  # fmt: skip
    answers = []
    for args in commands:
        code, out = await mqadmin.mqadmin(namesrv, *args)
        assert code == 0 and "Exception" not in out, out[-3000:]
        answers.append(_lines(out, broker))
    return answers


async def test_mqadmin_acl2_commands_answer_alike(
    mqadmin5: JavaClient, apache_acl2: ApacheCluster, rocketpipe_acl2: tuple[str, str]
) -> None:
    user = unique("alice").lower()
    apache = await _session(mqadmin5, apache_acl2.namesrv_addr, apache_acl2.broker_addr, user)
    ours = await _session(mqadmin5, *rocketpipe_acl2, user)
    assert apache[0] == ["create user to <broker> success."]
    assert any(f"User:{user}" in ln and "Topic:AclOrders" in ln for ln in apache[6]), apache
    assert ours == apache


async def _send(namesrv: str, creds: SessionCredentials, topic: str) -> tuple[int, str]:
    """(0, "") when stored, else the refusal's (code, remark)."""
    config = ClientConfig(namesrv_addr=namesrv, credentials=creds)
    async with Producer(unique("pg"), config=config, retry_times_when_send_failed=0) as producer:
        try:
            await producer.send(Message.build(topic, b"x"))
        except NoPermissionError as err:
            return err.response_code, err.remark
    return 0, ""


async def _enforce(namesrv: str, broker: str) -> tuple[list[tuple[int, str]], dict[str, int]]:
    """root creates topics, a user and its ACLs (a literal Deny stored *before* ``Topic:*`` Allow);
    the user's sends and a stranger's, in order; then the messages stored per topic."""
    from rocketpipe.client import admin_acl as acl

    topics = {name: f"Acl2{name}" for name in ("Orders", "Other", "Secret", "Open")}
    user = "bob"
    async with Admin(config=ClientConfig(namesrv_addr=namesrv, credentials=ROOT)) as admin:
        for t in topics.values():
            await admin.create_topic(t, 1, broker_addr=broker)
        if await acl.get_user(admin, broker, user) is None:
            await acl.create_user(admin, broker, user, "bobsecret")
        await acl.create_acl(admin, broker, f"User:{user}", [f"Topic:{topics['Orders']}"], ["Pub"], None, "Allow")
        await acl.create_acl(admin, broker, f"User:{user}", [f"Topic:{topics['Secret']}"], ["Pub"], None, "Deny")
        await acl.create_acl(admin, broker, f"User:{user}", ["Topic:Acl2Op*"], ["Pub"], ["10.0.0.0/8"], "Allow")
    bob = SessionCredentials(user, "bobsecret")
    results = [
        await _send(namesrv, bob, topics["Orders"]),
        await _send(namesrv, bob, topics["Other"]),
        await _send(namesrv, bob, topics["Secret"]),
        await _send(namesrv, bob, topics["Open"]),
        await _send(namesrv, SessionCredentials(user, "wrong"), topics["Orders"]),
        await _send(namesrv, SessionCredentials("nobody", "x"), topics["Orders"]),
    ]
    async with Admin(config=ClientConfig(namesrv_addr=namesrv, credentials=ROOT)) as admin:
        await acl.create_acl(admin, broker, f"User:{user}", ["Topic:*"], ["Pub"], None, "Allow")
    results.append(await _send(namesrv, bob, topics["Secret"]))  # Java's entry order decides here
    results.append(await _send(namesrv, bob, topics["Other"]))
    stored = {}
    async with Admin(config=ClientConfig(namesrv_addr=namesrv, credentials=ROOT)) as admin:
        for name, t in topics.items():
            stored[name] = sum([await admin.max_offset(mq) for mq in await admin.topic_queues(t)])
    return results, stored


async def test_rules_are_enforced_alike(apache_acl2: ApacheCluster, rocketpipe_acl2: tuple[str, str]) -> None:
    apache, apache_stored = await _enforce(apache_acl2.namesrv_addr, apache_acl2.broker_addr)
    ours, ours_stored = await _enforce(*rocketpipe_acl2)
    assert apache[0] == (0, "")
    assert apache[1][0] == 16 and "no matched policies" in apache[1][1], apache
    assert ours == apache
    # every refused send stored nothing: one message per accepted send, on both brokers
    accepted = dict.fromkeys(apache_stored, 0)
    for name, (code, _) in zip(
        ["Orders", "Other", "Secret", "Open", "Orders", "Orders", "Secret", "Other"], apache, strict=True
    ):
        accepted[name] += code == 0
    assert apache_stored == accepted and ours_stored == accepted, (apache_stored, ours_stored, apache)
