"""plain_acl.yml parsing and the check order of ``PlainPermissionManager.validate`` (real files)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rocketpipe.acl import AclError, Permission, PlainPermissionManager, SessionCredentials, load_acl_file, sign_request
from rocketpipe.acl.validator import java_hash_map_order
from rocketpipe.protocol.codes import RequestCode, ResponseCode
from rocketpipe.protocol.command import RemotingCommand

ACL = """\
globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: pubonly1
    secretKey: pubsecret1
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - TopicA=PUB
      - TopicB=PUB|SUB
    groupPerms:
      - GroupX=DENY
  - accessKey: adminkey
    secretKey: adminsecret
    whiteRemoteAddress: 192.168.0.{1,2}
    admin: true
"""


class _Peer:
    def __init__(self, addr: str) -> None:
        self.remote_address = addr


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _signed(code: int, ext: dict[str, str], ak: str = "pubonly1", sk: str = "pubsecret1") -> RemotingCommand:
    cmd = RemotingCommand.request(code, dict(ext))
    sign_request(cmd, SessionCredentials(ak, sk))
    return cmd


@pytest.fixture
def manager(tmp_path: Path) -> PlainPermissionManager:
    return PlainPermissionManager(_write(tmp_path / "plain_acl.yml", ACL), reload_interval=0)


def _deny(manager: PlainPermissionManager, cmd: RemotingCommand, addr: str = "127.0.0.1:1") -> str:
    resp = manager.guard(cmd, _Peer(addr))
    assert resp is not None and resp.code == ResponseCode.NO_PERMISSION
    return resp.remark or ""


def test_yaml_is_compiled_as_java(tmp_path: Path) -> None:
    config = load_acl_file(_write(tmp_path / "a.yml", ACL))
    pub = config.accounts["pubonly1"]
    assert pub.default_topic_perm == Permission.DENY and pub.default_group_perm == Permission.SUB
    assert pub.resource_perms == {
        "TopicA": Permission.PUB,
        "TopicB": Permission.PUB | Permission.SUB,
        "%RETRY%GroupX": Permission.DENY,
    }
    assert not pub.admin and not pub.white_remote_address.match("127.0.0.1")
    assert config.accounts["adminkey"].admin
    assert config.global_white_remote_addresses[0].match("10.10.103.9")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("accounts:\n  - accessKey: short\n    secretKey: 12345678\n", "length should longer than 6"),
        ("accounts:\n  - accessKey: longenough\n    secretKey: 12345678\n    topicPerms: [TopicA]\n", "Res=Perm"),
        (
            "accounts:\n  - accessKey: longenough\n    secretKey: 12345678\n    topicPerms: [TopicA=ALL]\n",
            "expected permissions",
        ),
        ("globalWhiteRemoteAddresses: [300.1.1.1]\n", "Netaddress"),
        ("accounts: [\n", "not valid YAML"),
    ],
)
def test_malformed_files_raise_java_messages(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(AclError, match=message):
        load_acl_file(_write(tmp_path / "bad.yml", text))


def test_missing_file_raises(tmp_path: Path) -> None:
    with pytest.raises(AclError, match="cannot read"):
        PlainPermissionManager(tmp_path / "nope.yml")


def test_allowed_requests_pass(manager: PlainPermissionManager) -> None:
    peer = _Peer("127.0.0.1:1")
    assert manager.guard(_signed(RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": "TopicA"}), peer) is None
    pull = {"topic": "TopicB", "consumerGroup": "GroupY", "queueId": "0"}
    assert manager.guard(_signed(RequestCode.PULL_MESSAGE, pull), peer) is None
    assert manager.guard(_signed(RequestCode.GET_MAX_OFFSET, {"topic": "Any", "queueId": "0"}), peer) is None


def test_denials_carry_javas_messages(manager: PlainPermissionManager) -> None:
    assert _deny(manager, RemotingCommand.request(RequestCode.GET_MAX_OFFSET, {"topic": "T"})) == (
        "No accessKey is configured"
    )
    cmd = _signed(RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": "TopicA"}, ak="nobody12")
    assert _deny(manager, cmd) == "No acl config for nobody12"
    cmd = _signed(RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": "TopicA"}, sk="wrongsecret")
    assert _deny(manager, cmd) == "Check signature failed for accessKey=pubonly1"
    cmd = _signed(RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": "TopicA"})
    cmd.ext_fields["b"] = "TopicB"  # tampered after signing
    assert _deny(manager, cmd) == "Check signature failed for accessKey=pubonly1"
    pull = {"topic": "TopicA", "consumerGroup": "GroupY", "queueId": "0"}
    assert _deny(manager, _signed(RequestCode.PULL_MESSAGE, pull)) == "No permission for topic:TopicA"
    pull = {"topic": "TopicZ", "consumerGroup": "GroupY", "queueId": "0"}
    assert _deny(manager, _signed(RequestCode.PULL_MESSAGE, pull)) == "No default permission for topic:TopicZ"
    pull = {"topic": "TopicB", "consumerGroup": "GroupX", "queueId": "0"}
    assert _deny(manager, _signed(RequestCode.PULL_MESSAGE, pull)) == "No permission for group:GroupX"
    assert _deny(manager, _signed(RequestCode.UPDATE_AND_CREATE_TOPIC, {"topic": "New"})) == (
        "Need admin permission for request code=17, but accessKey=pubonly1 is not"
    )


def test_white_addresses_skip_checks_as_java(manager: PlainPermissionManager) -> None:
    anonymous = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, {"topic": "New"})
    assert manager.guard(anonymous, _Peer("10.10.103.7:5")) is None  # global white list
    unsigned = RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "T", "AccessKey": "adminkey"})
    assert manager.guard(unsigned, _Peer("192.168.0.2:5")) is None  # the account's white address
    assert _deny(manager, unsigned, "192.168.0.3:5") == "Check signature failed for accessKey=adminkey"


def test_trace_topic_sends_need_only_a_signature(manager: PlainPermissionManager) -> None:
    cmd = _signed(RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": "RMQ_SYS_TRACE_TOPIC"})
    assert manager.guard(cmd, _Peer("127.0.0.1:1")) is None


def test_file_changes_are_reloaded_and_bad_files_keep_the_old_rules(tmp_path: Path) -> None:
    path = _write(tmp_path / "plain_acl.yml", ACL)
    manager = PlainPermissionManager(path, reload_interval=0)
    pull = {"topic": "TopicA", "consumerGroup": "GroupY", "queueId": "0"}
    _deny(manager, _signed(RequestCode.PULL_MESSAGE, pull))
    _write(path, ACL.replace("TopicA=PUB", "TopicA=PUB|SUB"))
    os.utime(path, ns=(1, 1))  # a different mtime even on a coarse clock
    assert manager.guard(_signed(RequestCode.PULL_MESSAGE, pull), _Peer("127.0.0.1:1")) is None
    assert manager.loads == 2
    _write(path, "accounts: [\n")
    os.utime(path, ns=(2, 2))
    assert manager.guard(_signed(RequestCode.PULL_MESSAGE, pull), _Peer("127.0.0.1:1")) is None
    assert manager.loads == 2


def test_reload_interval_limits_stat_calls(tmp_path: Path) -> None:
    now = [100.0]
    path = _write(tmp_path / "plain_acl.yml", ACL)
    manager = PlainPermissionManager(path, reload_interval=5.0, monotonic=lambda: now[0])
    _write(path, ACL.replace("TopicA=PUB", "TopicA=PUB|SUB"))
    os.utime(path, ns=(1, 1))
    pull = {"topic": "TopicA", "consumerGroup": "GroupY", "queueId": "0"}
    _deny(manager, _signed(RequestCode.PULL_MESSAGE, pull))
    now[0] += 5.0
    assert manager.guard(_signed(RequestCode.PULL_MESSAGE, pull), _Peer("127.0.0.1:1")) is None


def test_java_hash_map_order_matches_java() -> None:
    # printed by java.util.HashMap.keySet() (JDK 17) after putting the keys in this order
    keys = ["AclInteropTopic", "%RETRY%acl-interop-cg", "TopicA", "%RETRY%cg", "T1", "T2", "%RETRY%groupé"]
    keys += ["zz", "a", "b", "c", "d", "e", "f", "g"]
    java = [
        "%RETRY%groupé",
        "zz",
        "a",
        "b",
        "c",
        "d",
        "e",
        "f",
        "g",
        "%RETRY%acl-interop-cg",
        "%RETRY%cg",
        "TopicA",
        "T1",
        "AclInteropTopic",
        "T2",
    ]
    pos = java_hash_map_order(keys)
    assert sorted(keys, key=pos.__getitem__) == java
    pos = java_hash_map_order(keys[:3])
    assert sorted(keys[:3], key=pos.__getitem__) == ["%RETRY%acl-interop-cg", "TopicA", "AclInteropTopic"]


def test_several_refusals_report_the_first_in_javas_order(manager: PlainPermissionManager) -> None:
    # topic PUB only, group DENY: Java's HashMap iterates [TopicA, %RETRY%GroupX] (JDK 17)
    pull = {"topic": "TopicA", "consumerGroup": "GroupX", "queueId": "0"}
    assert _deny(manager, _signed(RequestCode.PULL_MESSAGE, pull)) == "No permission for topic:TopicA"
    # whatever the insertion order, the iteration order is Java's
    assert java_hash_map_order(["%RETRY%GroupX", "TopicA"]) == {"TopicA": 0, "%RETRY%GroupX": 1}
