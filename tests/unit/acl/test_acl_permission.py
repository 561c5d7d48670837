"""What each request code needs (Java's ``PlainAccessResource.parse``) and the permission bits."""

from __future__ import annotations

from rocketpipe.acl import JAVA_ADMIN_CODES, Permission, check_permission, parse_access_resource, parse_perm
from rocketpipe.acl.permission import ADMIN_CODES
from rocketpipe.protocol.bodies.heartbeat import ConsumerData, HeartbeatData, SubscriptionData
from rocketpipe.protocol.codes import RequestCode
from rocketpipe.protocol.command import RemotingCommand

PUB, SUB = Permission.PUB, Permission.SUB


def _needs(code: int, ext: dict[str, str], body: bytes = b"") -> dict[str, int]:
    return parse_access_resource(RemotingCommand.request(code, ext, body), "10.0.0.1:4444").resource_perms


def test_send_needs_pub_on_topic_and_retry_sends_need_sub_on_group() -> None:
    assert _needs(RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": "T"}) == {"T": PUB}
    assert _needs(RequestCode.SEND_BATCH_MESSAGE, {"a": "pg", "b": "T"}) == {"T": PUB}
    assert _needs(RequestCode.SEND_MESSAGE, {"group": "pg", "topic": "T"}) == {"T": PUB}
    assert _needs(RequestCode.SEND_MESSAGE_V2, {"a": "cg", "b": "%RETRY%cg"}) == {"%RETRY%cg": SUB}
    assert _needs(RequestCode.CONSUMER_SEND_MSG_BACK, {"group": "cg"}) == {"%RETRY%cg": SUB}


def test_pull_query_offset_and_group_calls_need_sub() -> None:
    assert _needs(RequestCode.PULL_MESSAGE, {"topic": "T", "consumerGroup": "cg"}) == {"T": SUB, "%RETRY%cg": SUB}
    assert _needs(RequestCode.QUERY_MESSAGE, {"topic": "T"}) == {"T": SUB}
    assert _needs(RequestCode.UPDATE_CONSUMER_OFFSET, {"topic": "T", "consumerGroup": "cg"}) == {
        "T": SUB,
        "%RETRY%cg": SUB,
    }
    assert _needs(RequestCode.UNREGISTER_CLIENT, {"clientID": "c", "consumerGroup": "cg"}) == {"%RETRY%cg": SUB}
    assert _needs(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "cg"}) == {"%RETRY%cg": SUB}
    assert _needs(RequestCode.GET_MAX_OFFSET, {"topic": "T", "queueId": "0"}) == {}


def test_heartbeat_needs_sub_on_each_group_and_subscribed_topic() -> None:
    body = HeartbeatData(
        client_id="c",
        consumer_data_set=[
            ConsumerData(
                group_name="cg", subscription_data_set=[SubscriptionData(topic="T1"), SubscriptionData(topic="T2")]
            )
        ],
    ).encode()
    assert _needs(RequestCode.HEART_BEAT, {"x": "y"}, body) == {"%RETRY%cg": SUB, "T1": SUB, "T2": SUB}


def test_permission_bits_as_java() -> None:
    assert parse_perm("PUB|SUB") == parse_perm("SUB|PUB") == PUB | SUB
    assert parse_perm(" SUB ") == SUB
    assert parse_perm(None) == parse_perm("bogus") == parse_perm("DENY") == Permission.DENY
    assert check_permission(PUB, PUB | SUB)
    assert not check_permission(SUB, PUB)
    assert not check_permission(PUB, Permission.DENY | PUB)
    assert check_permission(Permission.ANY, SUB)


def test_admin_codes_hold_javas_and_the_extra_writes() -> None:
    assert {
        RequestCode.UPDATE_AND_CREATE_TOPIC,
        RequestCode.DELETE_TOPIC_IN_BROKER,
        RequestCode.UPDATE_BROKER_CONFIG,
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
        RequestCode.DELETE_SUBSCRIPTIONGROUP,
    } == set(JAVA_ADMIN_CODES)
    assert JAVA_ADMIN_CODES < ADMIN_CODES
    assert RequestCode.INVOKE_BROKER_TO_RESET_OFFSET in ADMIN_CODES
    assert RequestCode.UPDATE_CONSUMER_OFFSET not in ADMIN_CODES  # consumers commit with SUB


def test_5x_consumption_codes_need_sub_on_topic_and_group() -> None:
    for code in (
        RequestCode.POP_MESSAGE,
        RequestCode.PEEK_MESSAGE,
        RequestCode.ACK_MESSAGE,
        RequestCode.CHANGE_MESSAGE_INVISIBLETIME,
        RequestCode.LITE_PULL_MESSAGE,
    ):
        assert _needs(code, {"topic": "T", "consumerGroup": "cg"}) == {"T": SUB, "%RETRY%cg": SUB}
    assert _needs(RequestCode.ACK_MESSAGE, {"topic": "%RETRY%cg_T", "consumerGroup": "cg"}) == {"%RETRY%cg": SUB}
