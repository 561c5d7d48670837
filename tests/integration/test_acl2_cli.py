"""``rocketpipe admin createUser … listAcl`` (ACL 2.0) against rocketpipe's broker with
``authentication_enabled`` / ``authorization_enabled`` (``local_cluster``, real TCP), signed by the
``admin`` group's ``--access-key`` / ``--secret-key``. The commands run through typer's CliRunner
in a worker thread so the cluster's loop keeps serving.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest
from click.testing import Result
from typer.testing import CliRunner

from rocketpipe.cli.errors import EXIT_BROKER, EXIT_USAGE
from rocketpipe.cli.main import app
from rocketpipe.testing.cluster import LocalCluster, local_cluster

runner = CliRunner()
ROOT = ("--access-key", "root", "--secret-key", "rootsecret")


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with local_cluster(
        tmp_path / "store",
        authentication_enabled=True,
        authorization_enabled=True,
        init_authentication_user='{"username":"root","password":"rootsecret"}',
    ) as c:
        yield c


@pytest.fixture(autouse=True)
def no_keys_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ROCKETMQ_ACCESS_KEY", "ROCKETMQ_SECRET_KEY"):
        monkeypatch.delenv(name, raising=False)


async def admin(keys: tuple[str, ...], *args: str, code: int = 0) -> Result:
    result = await asyncio.to_thread(runner.invoke, app, ["admin", *keys, *args])
    assert result.exit_code == code, f"exit {result.exit_code}: {result.output}"
    return result


async def test_user_and_acl_commands_print_as_mqadmin(cluster: LocalCluster) -> None:
    c = cluster
    target = ("-n", c.namesrv_addr, "-b", c.broker_addr)
    out = await admin(ROOT, "createUser", *target, "-u", "alice", "-p", "alicesecret")
    assert out.stdout == f"create user to {c.broker_addr} success.\n"
    await admin(ROOT, "createUser", "-n", c.namesrv_addr, "-c", "DefaultCluster", "-u", "bob", "-p", "b", "-t", "Super")
    listed = await admin(ROOT, "listUser", *target, "-f", "o")
    # Java: printf("%-16s  %-22s  %-22s  %-22s%n", ...)
    assert listed.stdout.splitlines() == [
        f"{'#UserName':<16}  {'#Password':<22}  {'#UserType':<22}  {'#UserStatus':<22}",
        f"{'bob':<16}  {'b':<22}  {'Super':<22}  {'enable':<22}",
        f"{'root':<16}  {'rootsecret':<22}  {'Super':<22}  {'enable':<22}",
    ]
    out = await admin(
        ROOT, "createAcl", *target, "-s", "User:alice", "-r", "Topic:Orders, Group:cg", "-a", "Pub,Sub", "-d", "Allow",
        "-i", "127.0.0.1",
    )  # fmt: skip
    assert out.stdout == f"create acl to {c.broker_addr} success.\n"
    acls = await admin(ROOT, "listAcl", *target)
    assert acls.stdout.splitlines()[1].split() == [
        "User:alice",
        "Custom",
        "Topic:Orders",
        "[Pub,",
        "Sub]",
        "[127.0.0.1]",
        "Allow",
    ]
    got = orjson.loads((await admin(ROOT, "getAcl", *target, "-s", "User:alice", "--json")).stdout)
    assert [e["resource"] for e in got["policies"][0]["entries"]] == ["Topic:Orders", "Group:cg"]
    user = orjson.loads((await admin(ROOT, "getUser", *target, "-u", "alice", "--json")).stdout)
    assert user == {"password": "alicesecret", "userStatus": "enable", "userType": "Normal", "username": "alice"}

    await admin(ROOT, "updateUser", *target, "-u", "alice", "-s", "disable")
    assert c.broker.auth_processor.metadata.users["alice"].user_status.java_name == "disable"
    await admin(ROOT, "deleteAcl", *target, "-s", "User:alice", "-r", "Group:cg")
    got = orjson.loads((await admin(ROOT, "getAcl", *target, "-s", "User:alice", "--json")).stdout)
    assert [e["resource"] for e in got["policies"][0]["entries"]] == ["Topic:Orders"]
    await admin(ROOT, "deleteUser", *target, "-u", "alice")
    assert "alice" not in c.broker.auth_processor.metadata.users
    assert c.broker.auth_processor.metadata.acls == {}


async def test_refusals_and_usage_errors(cluster: LocalCluster) -> None:
    c = cluster
    target = ("-n", c.namesrv_addr, "-b", c.broker_addr)
    unsigned = await admin((), "createUser", *target, "-u", "eve", "-p", "x", code=EXIT_BROKER)
    assert "username cannot be null." in " ".join(unsigned.output.split())
    bad = await admin(
        ROOT, "createAcl", *target, "-s", "User:nobody", "-r", "Topic:t", "-a", "Pub", "-d", "Allow", code=EXIT_BROKER
    )
    assert "The subject of User:nobody is not exist." in " ".join(bad.output.split())
    await admin(ROOT, "createUser", "-n", c.namesrv_addr, "-u", "eve", "-p", "x", code=EXIT_USAGE)
    await admin(ROOT, "updateUser", *target, "-u", "root", code=EXIT_USAGE)
    assert sorted(c.broker.auth_processor.metadata.users) == ["root"]
