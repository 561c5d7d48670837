"""rocketpipe's clients with ``ClientConfig(credentials=SessionCredentials(...))`` against a broker
with ACL on (real TCP, a real plain_acl.yml): signed requests pass, the wrong account is refused.
"""

from __future__ import annotations

import asyncio
import pickle
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rocketpipe import ConsumeFromWhere, ConsumeInitMode, Message
from rocketpipe.client import Admin, ClientConfig, LitePullConsumer, Producer, SimpleConsumer, SyncProducer
from rocketpipe.client.config import SessionCredentials
from rocketpipe.errors import NoPermissionError
from rocketpipe.testing.cluster import LocalCluster, local_cluster

ACL = """\
accounts:
  - accessKey: producer1
    secretKey: pubsecret1
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms: [AclTopic=PUB]
  - accessKey: consumer1
    secretKey: subsecret1
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms: [AclTopic=SUB]
    groupPerms: [acl-cg=SUB]
  - accessKey: adminkey
    secretKey: adminsecret
    admin: true
"""

PUB = SessionCredentials("producer1", "pubsecret1")
SUB = SessionCredentials("consumer1", "subsecret1")
ADMIN = SessionCredentials("adminkey", "adminsecret")


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
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


def _config(cluster: LocalCluster, creds: SessionCredentials | None) -> ClientConfig:
    return ClientConfig(namesrv_addr=cluster.namesrv_addr, credentials=creds)


async def test_admin_producer_and_lite_pull_consumer_with_credentials(cluster: LocalCluster) -> None:
    async with Admin(config=_config(cluster, PUB)) as admin:
        with pytest.raises(NoPermissionError, match="Need admin permission"):
            await admin.create_topic("AclTopic", 1, broker_addr=cluster.broker_addr)
    assert cluster.broker.topics.get("AclTopic") is None
    async with Admin(config=_config(cluster, ADMIN)) as admin:
        await admin.create_topic("AclTopic", 1, broker_addr=cluster.broker_addr)
    assert cluster.broker.topics.get("AclTopic") is not None

    async with Producer("acl-pg", config=_config(cluster, PUB)) as producer:
        for i in range(3):
            await producer.send(Message.build("AclTopic", f"m{i}"))
    assert cluster.broker.store.get_max_offset("AclTopic", 0) == 3

    consumer = LitePullConsumer(
        "acl-cg",
        config=_config(cluster, SUB),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        poll_timeout=0.2,
    )
    consumer.subscribe("AclTopic")
    async with consumer:
        got: list[bytes] = []
        async with asyncio.timeout(20):
            while len(got) < 3:
                got += [bytes(m.body) for m in await consumer.poll(0.5)]
    assert sorted(got) == [b"m0", b"m1", b"m2"]


async def test_producer_without_or_with_the_wrong_credentials_is_refused(cluster: LocalCluster) -> None:
    async with Admin(config=_config(cluster, ADMIN)) as admin:
        await admin.create_topic("AclTopic", 1, broker_addr=cluster.broker_addr)
    for creds, remark in [
        (None, "No accessKey is configured"),
        (SUB, "No permission for topic:AclTopic"),
        (SessionCredentials("producer1", "not-the-secret"), "Check signature failed"),
    ]:
        async with Producer("acl-pg", config=_config(cluster, creds), retry_times_when_send_failed=0) as producer:
            with pytest.raises(NoPermissionError, match=remark):
                await producer.send(Message.build("AclTopic", "x"))
    assert cluster.broker.store.get_max_offset("AclTopic", 0) == 0


async def test_sync_producer_pickles_its_credentials(cluster: LocalCluster) -> None:
    async with Admin(config=_config(cluster, ADMIN)) as admin:
        await admin.create_topic("AclTopic", 1, broker_addr=cluster.broker_addr)
    producer = pickle.loads(pickle.dumps(SyncProducer("acl-sync-pg", config=_config(cluster, PUB))))

    def work() -> None:
        with producer:
            producer.send(Message.build("AclTopic", "sync"))

    await asyncio.to_thread(work)
    assert cluster.broker.store.get_max_offset("AclTopic", 0) == 1


async def test_simple_consumer_pops_only_with_sub_on_topic_and_group(cluster: LocalCluster) -> None:
    async with Admin(config=_config(cluster, ADMIN)) as admin:
        await admin.create_topic("AclTopic", 1, broker_addr=cluster.broker_addr)
    async with Producer("acl-pg", config=_config(cluster, PUB)) as producer:
        await producer.send(Message.build("AclTopic", "popped"))

    def simple(creds: SessionCredentials) -> SimpleConsumer:
        return SimpleConsumer(
            "acl-cg",
            config=_config(cluster, creds),
            subscriptions={"AclTopic": "*"},
            await_duration=0.3,
            init_mode=ConsumeInitMode.MIN,
        )

    async with simple(PUB) as refused:
        with pytest.raises(NoPermissionError):
            await refused.receive(4, 10.0)
    got = []
    async with simple(SUB) as consumer:
        async with asyncio.timeout(20):
            while not got:
                got = await consumer.receive(4, 10.0)
        await consumer.ack(got[0])
    assert [bytes(m.body) for m in got] == [b"popped"]
