"""ACL 1.0 on rocketpipe's broker over real TCP: allowed, denied, wrong secret, unknown key,
admin-only codes, hot reload; every denial checks the response code and that nothing changed.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from broker_testkit import TIMEOUT, pull_cmd, send_cmd

from rocketpipe.acl import SessionCredentials
from rocketpipe.broker import Broker, BrokerConfig
from rocketpipe.errors import InvalidArgumentError
from rocketpipe.protocol.codes import RequestCode, ResponseCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.transport import Connection
from waiting import wait_until

ACL = """\
accounts:
  - accessKey: pubonly1
    secretKey: pubsecret1
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms: [TopicA=PUB]
  - accessKey: consumer1
    secretKey: subsecret1
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms: [TopicA=SUB]
    groupPerms: [cg=SUB]
  - accessKey: adminkey
    secretKey: adminsecret
    admin: true
"""

PUB = SessionCredentials("pubonly1", "pubsecret1")
SUB = SessionCredentials("consumer1", "subsecret1")
ADMIN = SessionCredentials("adminkey", "adminsecret")


@pytest.fixture
def acl_file(tmp_path: Path) -> Path:
    path = tmp_path / "plain_acl.yml"
    path.write_text(ACL, encoding="utf-8")
    return path


@pytest.fixture
async def broker(tmp_path: Path, acl_file: Path) -> AsyncIterator[Broker]:
    config = BrokerConfig(
        store_dir=tmp_path / "store",
        mapped_file_size_commit_log=1 << 24,
        acl_enable=True,
        acl_file=str(acl_file),
        auto_create_topic_enable=False,
    )
    async with Broker(config) as b:
        assert b.acl is not None
        b.acl.reload_interval = 0.0  # look at the file on every request
        yield b


async def _connect(broker: Broker, creds: SessionCredentials | None) -> Connection:
    conn = await Connection.connect(broker.address)
    conn.request_hook = None if creds is None else creds.sign
    return conn


async def _call(broker: Broker, creds: SessionCredentials | None, cmd: RemotingCommand) -> RemotingCommand:
    conn = await _connect(broker, creds)
    try:
        return await conn.request(cmd, TIMEOUT)
    finally:
        await conn.close()


def _create_topic(topic: str) -> RemotingCommand:
    ext = {
        "topic": topic,
        "defaultTopic": "TBW102",
        "readQueueNums": "4",
        "writeQueueNums": "4",
        "perm": "6",
        "topicFilterType": "SINGLE_TAG",
        "topicSysFlag": "0",
        "order": "false",
    }
    return RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, ext)


def _offset_update(group: str, topic: str, offset: int) -> RemotingCommand:
    ext = {"consumerGroup": group, "topic": topic, "queueId": "0", "commitOffset": str(offset)}
    return RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, ext)


def _stored(broker: Broker, topic: str) -> int:
    """Messages in the topic's four queues."""
    return sum(broker.store.get_max_offset(topic, q) for q in range(4))


async def _topic_a(broker: Broker) -> None:
    resp = await _call(broker, ADMIN, _create_topic("TopicA"))
    assert resp.code == ResponseCode.SUCCESS, resp.remark


async def test_allowed_publish_and_subscribe(broker: Broker) -> None:
    await _topic_a(broker)
    resp = await _call(broker, PUB, send_cmd("TopicA", b"hello"))
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    resp = await _call(broker, SUB, pull_cmd("cg", "TopicA", 0, 0))
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    resp = await _call(broker, SUB, _offset_update("cg", "TopicA", 1))
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    assert broker.offsets.query("cg", "TopicA", 0) == 1


async def test_pub_only_account_cannot_pull_and_sub_account_cannot_send(broker: Broker) -> None:
    await _topic_a(broker)
    resp = await _call(broker, PUB, pull_cmd("cg", "TopicA", 0, 0))
    assert (resp.code, resp.remark) == (ResponseCode.NO_PERMISSION, "No permission for topic:TopicA")
    resp = await _call(broker, SUB, send_cmd("TopicA", b"x"))
    assert (resp.code, resp.remark) == (ResponseCode.NO_PERMISSION, "No permission for topic:TopicA")
    assert _stored(broker, "TopicA") == 0


@pytest.mark.parametrize(
    ("creds", "remark"),
    [
        (None, "No accessKey is configured"),
        (SessionCredentials("pubonly1", "wrong-secret"), "Check signature failed for accessKey=pubonly1"),
        (SessionCredentials("stranger", "whatever1"), "No acl config for stranger"),
    ],
)
async def test_anonymous_wrong_secret_and_unknown_key_change_nothing(
    broker: Broker, creds: SessionCredentials | None, remark: str
) -> None:
    await _topic_a(broker)
    resp = await _call(broker, creds, send_cmd("TopicA", b"x"))
    assert (resp.code, resp.remark) == (ResponseCode.NO_PERMISSION, remark)
    resp = await _call(broker, creds, _create_topic("TopicNew"))
    assert (resp.code, resp.remark) == (ResponseCode.NO_PERMISSION, remark)
    assert _stored(broker, "TopicA") == 0
    assert broker.topics.get("TopicNew") is None


async def test_non_admin_is_refused_admin_codes_and_nothing_changes(broker: Broker) -> None:
    await _topic_a(broker)
    need_admin = "Need admin permission for request code={}, but accessKey=consumer1 is not"
    resp = await _call(broker, SUB, _create_topic("TopicNew"))
    assert (resp.code, resp.remark) == (ResponseCode.NO_PERMISSION, need_admin.format(17))
    assert broker.topics.get("TopicNew") is None
    delete = RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "TopicA"})
    resp = await _call(broker, SUB, delete)
    assert (resp.code, resp.remark) == (ResponseCode.NO_PERMISSION, need_admin.format(215))
    assert broker.topics.get("TopicA") is not None
    reset = RemotingCommand.request(
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
        {"topic": "TopicA", "group": "cg", "timestamp": "0", "isForce": "true"},
    )
    resp = await _call(broker, SUB, reset)
    assert (resp.code, resp.remark) == (ResponseCode.NO_PERMISSION, need_admin.format(222))
    config = RemotingCommand.request(RequestCode.UPDATE_BROKER_CONFIG, None, b"brokerPermission=2\n")
    resp = await _call(broker, SUB, config)
    assert (resp.code, resp.remark) == (ResponseCode.NO_PERMISSION, need_admin.format(25))
    assert broker.config.broker_permission == 6
    group = RemotingCommand.request(RequestCode.DELETE_SUBSCRIPTIONGROUP, {"groupName": "cg"})
    resp = await _call(broker, SUB, group)
    assert (resp.code, resp.remark) == (ResponseCode.NO_PERMISSION, need_admin.format(207))
    # the admin may do it
    resp = await _call(broker, ADMIN, delete)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    assert broker.topics.get("TopicA") is None


async def test_offset_update_of_a_group_without_sub_changes_nothing(broker: Broker) -> None:
    await _topic_a(broker)
    assert (await _call(broker, SUB, _offset_update("cg", "TopicA", 0))).code == ResponseCode.SUCCESS
    resp = await _call(broker, SUB, _offset_update("othergroup", "TopicA", 5))
    assert (resp.code, resp.remark) == (ResponseCode.NO_PERMISSION, "No default permission for group:othergroup")
    resp = await _call(broker, PUB, _offset_update("cg", "TopicA", 5))
    assert (resp.code, resp.remark) == (ResponseCode.NO_PERMISSION, "No permission for topic:TopicA")
    assert broker.offsets.query("othergroup", "TopicA", 0) < 0
    assert broker.offsets.query("cg", "TopicA", 0) == 0


async def test_oneway_denials_are_not_answered_and_the_connection_stays_usable(broker: Broker) -> None:
    await _topic_a(broker)
    conn = await _connect(broker, None)
    try:
        await conn.oneway(send_cmd("TopicA", b"x"))  # refused, and not answered
        conn.request_hook = PUB.sign
        await conn.oneway(send_cmd("TopicA", b"y"))  # signed by the hook: stored
        await wait_until(lambda: _stored(broker, "TopicA") == 1, what="the signed oneway send")
        resp = await conn.request(send_cmd("TopicA", b"z"), TIMEOUT)
        assert resp.code == ResponseCode.SUCCESS, resp.remark
    finally:
        await conn.close()
    assert _stored(broker, "TopicA") == 2


async def test_edited_acl_file_applies_without_restart(broker: Broker, acl_file: Path) -> None:
    await _topic_a(broker)
    resp = await _call(broker, PUB, pull_cmd("cg", "TopicA", 0, 0))
    assert resp.code == ResponseCode.NO_PERMISSION
    acl_file.write_text(ACL.replace("topicPerms: [TopicA=PUB]", "topicPerms: [TopicA=PUB|SUB]"), encoding="utf-8")
    os.utime(acl_file, ns=(1, 1))  # a new mtime even on a coarse file-system clock

    async def pull_allowed() -> bool:
        return (await _call(broker, PUB, pull_cmd("cg", "TopicA", 0, 0))).code != ResponseCode.NO_PERMISSION

    await wait_until(pull_allowed, what="the edited ACL file to apply")
    assert broker.acl is not None and broker.acl.loads == 2


def test_acl_enable_without_file_or_rocketmq_home_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROCKETMQ_HOME", raising=False)
    with pytest.raises(InvalidArgumentError, match="acl_file"):
        BrokerConfig(store_dir=tmp_path, acl_enable=True)
    monkeypatch.setenv("ROCKETMQ_HOME", str(tmp_path))
    assert BrokerConfig(store_dir=tmp_path, acl_enable=True).acl_file == str(tmp_path / "conf" / "plain_acl.yml")


async def test_acl_off_lets_anonymous_requests_through(tmp_path: Path) -> None:
    async with Broker(BrokerConfig(store_dir=tmp_path, mapped_file_size_commit_log=1 << 24)) as b:
        assert b.acl is None and b.router.guard is None
        resp = await _call(b, None, _create_topic("Free"))
        assert resp.code == ResponseCode.SUCCESS
