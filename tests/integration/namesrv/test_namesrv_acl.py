"""The name server's ACL (rocketpipe; Java's name server checks none): with ``acl_enable`` the
requests that change its state need an admin account's signature, route queries stay open, and
a broker signs its registrations with ``inner_client_authentication_credentials``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rocketpipe.acl import SessionCredentials
from rocketpipe.broker import Broker, BrokerConfig
from rocketpipe.client import Admin
from rocketpipe.errors import InvalidArgumentError
from rocketpipe.namesrv import NameServer
from rocketpipe.protocol.codes import RequestCode, ResponseCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.protocol.headers.route import DeleteTopicFromNamesrvRequestHeader, UnRegisterBrokerRequestHeader
from rocketpipe.transport import ConnectionPool
from waiting import wait_until

ACL = """\
accounts:
  - accessKey: broker-admin
    secretKey: broker-secret
    admin: true
  - accessKey: producer1
    secretKey: pubsecret1
    defaultTopicPerm: PUB
"""
ADMIN = SessionCredentials("broker-admin", "broker-secret")
USER = SessionCredentials("producer1", "pubsecret1")


@pytest.fixture
async def namesrv(tmp_path: Path) -> AsyncIterator[NameServer]:
    acl = tmp_path / "plain_acl.yml"
    acl.write_text(ACL, encoding="utf-8")
    ns = NameServer(acl_enable=True, acl_file=str(acl))
    await ns.start()
    yield ns
    await ns.close()


async def send(addr: str, cmd: RemotingCommand, creds: SessionCredentials | None) -> RemotingCommand:
    pool = ConnectionPool(request_hook=None if creds is None else creds.sign)
    try:
        return await pool.request(addr, cmd, 5.0)
    finally:
        await pool.close()


async def test_signed_broker_registers_and_unsigned_writes_are_refused(namesrv: NameServer, tmp_path: Path) -> None:
    assert namesrv.address is not None
    signed = Broker(
        BrokerConfig(
            store_dir=tmp_path / "signed",
            namesrv_addr=namesrv.address,
            broker_name="signed",
            inner_client_authentication_credentials=ADMIN,
        )
    )
    unsigned = Broker(BrokerConfig(store_dir=tmp_path / "unsigned", namesrv_addr=namesrv.address, broker_name="plain"))
    await signed.start()
    await unsigned.start()
    try:
        assert signed.registrations >= 1
        assert unsigned.registrations == 0  # REGISTER_BROKER answered NO_PERMISSION
        names = set(namesrv.routes.cluster_info().broker_addr_table)
        assert names == {"signed"}

        # route queries need no signature
        async with Admin(namesrv.address) as admin:
            await admin.create_topic("AclNs", 2, broker_addr=signed.address)

            async def routed() -> bool:
                try:
                    return len(await admin.topic_queues("AclNs")) == 2
                except Exception:
                    return False

            await wait_until(routed, what="the route of AclNs")

        # an unsigned UNREGISTER_BROKER changes nothing
        header = UnRegisterBrokerRequestHeader(
            broker_name="signed", broker_addr=signed.address, cluster_name="DefaultCluster", broker_id=0
        )
        resp = await send(
            namesrv.address, RemotingCommand.request(RequestCode.UNREGISTER_BROKER, header.to_ext_fields()), None
        )
        assert resp.code == ResponseCode.NO_PERMISSION
        assert resp.remark == "No accessKey is configured"
        assert set(namesrv.routes.cluster_info().broker_addr_table) == {"signed"}

        # a signed request of a non-admin account: refused too
        delete = DeleteTopicFromNamesrvRequestHeader(topic="AclNs")
        cmd = RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_NAMESRV, delete.to_ext_fields())
        resp = await send(namesrv.address, cmd, USER)
        assert resp.code == ResponseCode.NO_PERMISSION
        assert resp.remark == (
            f"Need admin permission for request code={RequestCode.DELETE_TOPIC_IN_NAMESRV}, "
            "but accessKey=producer1 is not"
        )
        assert namesrv.routes.route("AclNs") is not None

        # the admin account may
        cmd = RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_NAMESRV, delete.to_ext_fields())
        resp = await send(namesrv.address, cmd, ADMIN)
        assert resp.code == ResponseCode.SUCCESS
        assert namesrv.routes.route("AclNs") is None
    finally:
        await unsigned.close()
        await signed.close()


def test_acl_enable_needs_a_file() -> None:
    with pytest.raises(InvalidArgumentError, match="acl_enable needs acl_file"):
        NameServer(acl_enable=True)
