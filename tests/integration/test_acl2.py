"""ACL 2.0 (Apache RocketMQ 5.3's users and ACLs) on rocketpipe's broker: AUTH_* requests through
:mod:`rocketpipe.client.admin_acl`, the users and ACLs kept across a restart, and the checks the
broker makes with ``authentication_enabled`` / ``authorization_enabled`` on the Python producer and
consumer. Real TCP on 127.0.0.1 (``local_cluster``), real files under ``tmp_path``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from rocketpipe import ConsumeInitMode, Message
from rocketpipe.client import Admin, ClientConfig, Producer, SimpleConsumer
from rocketpipe.client import admin_acl as acl
from rocketpipe.client.config import SessionCredentials
from rocketpipe.errors import InvalidParameterError, NoPermissionError, SystemError_
from rocketpipe.testing.cluster import LocalCluster, local_cluster

ROOT = SessionCredentials("root", "rootsecret")
ALICE = SessionCredentials("alice", "alicesecret")
AUTH: dict[str, Any] = {
    "authentication_enabled": True,
    "authorization_enabled": True,
    "init_authentication_user": '{"username": "root", "password": "rootsecret"}',
    "auto_create_topic_enable": False,
    "mapped_file_size_commit_log": 8 * 1024 * 1024,
}


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with local_cluster(tmp_path / "store", **AUTH) as c:
        yield c


def config(c: LocalCluster, creds: SessionCredentials | None) -> ClientConfig:
    return ClientConfig(namesrv_addr=c.namesrv_addr, credentials=creds)


async def setup_alice(c: LocalCluster, *topics: str) -> None:
    """root creates the topics and the Normal user alice."""
    async with Admin(config=config(c, ROOT)) as admin:
        for t in topics:
            await admin.create_topic(t, 1, broker_addr=c.broker_addr)
        await acl.create_user(admin, c.broker_addr, ALICE.access_key, ALICE.secret_key)


async def grant(
    c: LocalCluster, resources: list[str], actions: list[str], ips: list[str] | None, decision: str
) -> None:
    async with Admin(config=config(c, ROOT)) as admin:
        await acl.create_acl(admin, c.broker_addr, "User:alice", resources, actions, ips, decision)


async def send(c: LocalCluster, creds: SessionCredentials | None, topic: str) -> None:
    async with Producer("acl2-pg", config=config(c, creds), retry_times_when_send_failed=0) as producer:
        await producer.send(Message.build(topic, b"x"))


def stored(c: LocalCluster, topic: str) -> int:
    return c.broker.store.get_max_offset(topic, 0)


# ----------------------------------------------------------------------------- users and ACLs


async def test_users_crud_with_java_answers(cluster: LocalCluster) -> None:
    c = cluster
    b = c.broker_addr
    async with Admin(config=config(c, ROOT)) as admin:
        await acl.create_user(admin, b, "alice", "alicesecret")
        await acl.create_user(admin, b, "bob", "bobsecret", "Super")
        with pytest.raises(NoPermissionError, match=r"^code=16 The user is existed$"):
            await acl.create_user(admin, b, "alice", "other")
        with pytest.raises(NoPermissionError, match="password can not be blank"):
            await acl.create_user(admin, b, "carol", " ")
        with pytest.raises(InvalidParameterError, match="The username is blank"):
            await acl.get_user(admin, b, "")

        alice = await acl.get_user(admin, b, "alice")
        assert alice is not None
        assert alice.to_dict() == {
            "password": "alicesecret",
            "userStatus": "enable",
            "userType": "Normal",
            "username": "alice",
        }
        assert (
            alice.encode() == b'{"password":"alicesecret","userStatus":"enable","userType":"Normal","username":"alice"}'
        )
        assert await acl.get_user(admin, b, "nobody") is None
        assert [u.username for u in await acl.list_users(admin, b)] == ["alice", "bob", "root"]
        assert [u.username for u in await acl.list_users(admin, b, "o")] == ["bob", "root"]

        await acl.update_user(admin, b, "alice", "newsecret", user_status="disable")
        alice = await acl.get_user(admin, b, "alice")
        assert alice is not None and (alice.password, alice.user_status, alice.user_type) == (
            "newsecret",
            "disable",
            "Normal",
        )
        with pytest.raises(NoPermissionError, match="The user is not exist"):
            await acl.update_user(admin, b, "nobody", "x")

        await acl.delete_user(admin, b, "bob")
        await acl.delete_user(admin, b, "nobody")  # Java: no error
    assert sorted(c.broker.auth_processor.metadata.users) == ["alice", "root"]


async def test_acls_crud_merge_filters_and_validation(cluster: LocalCluster) -> None:
    c = cluster
    b = c.broker_addr
    async with Admin(config=config(c, ROOT)) as admin:
        await acl.create_user(admin, b, "alice", "alicesecret")
        await acl.create_acl(admin, b, "User:alice", ["Topic:Orders", "Group:cg"], ["Pub", "Sub"], None, "Allow")
        await acl.update_acl(admin, b, "User:alice", ["Topic:Orders", "Topic:log*"], ["Sub"], ["10.0.0.0/8"], "Deny")
        got = await acl.get_acl(admin, b, "User:alice")
        assert got is not None
        assert got.to_dict() == {
            "policies": [
                {
                    "entries": [
                        {
                            "actions": ["Sub"],
                            "decision": "Deny",
                            "resource": "Topic:Orders",
                            "sourceIps": ["10.0.0.0/8"],
                        },
                        {"actions": ["Pub", "Sub"], "decision": "Allow", "resource": "Group:cg"},
                        {"actions": ["Sub"], "decision": "Deny", "resource": "Topic:log*", "sourceIps": ["10.0.0.0/8"]},
                    ],
                    "policyType": "Custom",
                }
            ],
            "subject": "User:alice",
        }
        only_groups = await acl.list_acl(admin, b, None, "Group")
        assert [[e.resource for p in a.policies or [] for e in p.entries or []] for a in only_groups] == [["Group:cg"]]
        assert await acl.list_acl(admin, b, "bob") == []

        refusals = [
            (["Nothing:x"], ["Pub"], None, "Allow", "The resource is null."),
            (["Topic:t"], ["Fly"], None, "Allow", "The actions is empty."),
            (["Topic:t"], ["Any"], None, "Allow", "The actions can not be Any."),
            (["Topic:t"], ["Pub"], ["300.1.1.1"], "Allow", "The source ip is invalid."),
            (["Topic:t"], ["Pub"], None, "Maybe", "The decision is null or illegal."),
        ]
        for resources, actions, ips, decision, remark in refusals:
            with pytest.raises(NoPermissionError, match=f"^code=16 {remark}$".replace(".", r"\.")):
                await acl.create_acl(admin, b, "User:alice", resources, actions, ips, decision)
        with pytest.raises(NoPermissionError, match=r"The subject of User:bob is not exist\."):
            await acl.create_acl(admin, b, "User:bob", ["Topic:t"], ["Pub"], None, "Allow")
        with pytest.raises(NoPermissionError, match=r"The subject is not exist\."):
            await acl.get_acl(admin, b, "User:bob")

        await acl.delete_acl(admin, b, "User:alice", "Topic:Orders")
        got = await acl.get_acl(admin, b, "User:alice")
        assert got is not None and [e.resource for e in (got.policies or [])[0].entries or []] == [
            "Group:cg",
            "Topic:log*",
        ]
        await acl.delete_acl(admin, b, "User:alice")
        assert await acl.get_acl(admin, b, "User:alice") is None
        with pytest.raises(NoPermissionError, match=r"The acl is not exist\."):
            await acl.delete_acl(admin, b, "User:alice")

        await acl.create_acl(admin, b, "User:alice", ["Topic:t"], ["Pub"], None, "Allow")
        await acl.delete_user(admin, b, "alice")  # takes the ACL with it
    assert c.broker.auth_processor.metadata.acls == {}


async def test_users_and_acls_survive_a_restart(tmp_path: Path) -> None:
    store = tmp_path / "store"
    async with local_cluster(store, **AUTH) as c, Admin(config=config(c, ROOT)) as admin:
        await acl.create_user(admin, c.broker_addr, "alice", "alicesecret")
        await acl.create_acl(admin, c.broker_addr, "User:alice", ["Topic:*"], ["Pub"], ["127.0.0.1"], "Allow")
        before = await acl.list_acl(admin, c.broker_addr)
    assert (store / "config" / "authMetadata.json").is_file()
    async with local_cluster(store, **AUTH) as c, Admin(config=config(c, ROOT)) as admin:
        assert [u.username for u in await acl.list_users(admin, c.broker_addr)] == ["alice", "root"]
        assert await acl.list_acl(admin, c.broker_addr) == before
        assert (await acl.get_user(admin, c.broker_addr, "alice")).password == "alicesecret"  # type: ignore[union-attr]


async def test_a_normal_user_needs_cluster_rights_and_cannot_make_super_users(cluster: LocalCluster) -> None:
    c = cluster
    await setup_alice(c)
    async with Admin(config=config(c, ALICE)) as admin:
        with pytest.raises(
            NoPermissionError,
            match=r"User:alice has no permission to access Cluster:DefaultCluster from 127\.0\.0\.1, no matched policies\.",
        ):
            await acl.list_users(admin, c.broker_addr)
    await grant(c, ["Cluster:DefaultCluster"], ["Update", "Get"], None, "Allow")
    async with Admin(config=config(c, ALICE)) as admin:
        assert len(await acl.list_users(admin, c.broker_addr)) == 2
        with pytest.raises(SystemError_, match="The super user can only be create by super user"):
            await acl.create_user(admin, c.broker_addr, "eve", "evesecret", "Super")
        await acl.create_user(admin, c.broker_addr, "dave", "davesecret")
    assert sorted(c.broker.auth_processor.metadata.users) == ["alice", "dave", "root"]


# -------------------------------------------------------------------------------- enforcement


async def test_authentication_refusals(cluster: LocalCluster) -> None:
    c = cluster
    await setup_alice(c, "Orders")
    await grant(c, ["Topic:Orders"], ["Pub"], None, "Allow")
    for creds, remark in [
        (None, "username cannot be null."),
        (SessionCredentials("nobody", "x"), "User:nobody is not found."),
        (SessionCredentials("alice", "wrong"), "check signature failed."),
    ]:
        with pytest.raises(NoPermissionError) as err:
            await send(c, creds, "Orders")
        assert err.value.remark == remark
    assert stored(c, "Orders") == 0
    async with Admin(config=config(c, ROOT)) as admin:
        await acl.update_user(admin, c.broker_addr, "alice", user_status="disable")
    with pytest.raises(NoPermissionError, match=r"User:alice is disabled\."):
        await send(c, ALICE, "Orders")
    assert stored(c, "Orders") == 0


async def test_producer_allowed_and_denied_per_action_and_topic(cluster: LocalCluster) -> None:
    c = cluster
    await setup_alice(c, "Orders", "Other")
    await grant(c, ["Topic:Orders"], ["Pub"], None, "Allow")
    await grant(c, ["Topic:Other"], ["Sub"], None, "Allow")
    await send(c, ALICE, "Orders")
    assert stored(c, "Orders") == 1
    with pytest.raises(NoPermissionError) as err:
        await send(c, ALICE, "Other")
    assert err.value.remark == "User:alice has no permission to access Topic:Other from 127.0.0.1, no matched policies."
    assert stored(c, "Other") == 0
    await send(c, ROOT, "Other")  # a Super user passes without any ACL
    assert stored(c, "Other") == 1


async def test_deny_on_a_literal_wins_over_allow_on_every_topic(cluster: LocalCluster) -> None:
    c = cluster
    await setup_alice(c, "Public", "Secret")
    await grant(c, ["Topic:*"], ["Pub"], None, "Allow")
    await grant(c, ["Topic:Secret"], ["Pub"], None, "Deny")
    await send(c, ALICE, "Public")
    with pytest.raises(NoPermissionError) as err:
        await send(c, ALICE, "Secret")
    assert (
        err.value.remark == "User:alice has no permission to access Topic:Secret from 127.0.0.1, the decision is deny."
    )
    assert (stored(c, "Public"), stored(c, "Secret")) == (1, 0)


async def test_source_ips_limit_an_entry(cluster: LocalCluster) -> None:
    c = cluster
    await setup_alice(c, "Orders")
    await grant(c, ["Topic:Orders"], ["Pub"], ["10.0.0.0/8"], "Allow")
    with pytest.raises(NoPermissionError, match="no matched policies"):
        await send(c, ALICE, "Orders")
    assert stored(c, "Orders") == 0
    await grant(c, ["Topic:Orders"], ["Pub"], ["127.0.0.0/8", "10.0.0.1"], "Allow")
    await send(c, ALICE, "Orders")
    assert stored(c, "Orders") == 1


async def test_consumer_needs_sub_on_topic_and_group(cluster: LocalCluster) -> None:
    c = cluster
    await setup_alice(c, "Orders")
    await send(c, ROOT, "Orders")
    await grant(c, ["Topic:Orders"], ["Sub"], None, "Allow")

    def simple() -> SimpleConsumer:
        return SimpleConsumer(
            "acl2-cg",
            config=config(c, ALICE),
            subscriptions={"Orders": "*"},
            await_duration=0.3,
            init_mode=ConsumeInitMode.MIN,
        )

    async with simple() as refused:
        with pytest.raises(NoPermissionError, match="Group:acl2-cg"):
            await refused.receive(4, 10.0)
    await grant(c, ["Group:acl2-cg"], ["Sub"], None, "Allow")
    got = []
    async with simple() as consumer:
        async with asyncio.timeout(20):
            while not got:
                got = await consumer.receive(4, 10.0)
        await consumer.ack(got[0])
    assert bytes(got[0].body) == b"x"
