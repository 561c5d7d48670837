"""Permissions and what each request needs (L2): :class:`Permission`, :func:`parse_access_resource`.

Mirrors ``Permission`` (bits, ``checkPermission``, ``parsePermFromString``, ``ADMIN_CODE``) and
``PlainAccessResource.parse`` of Java 5.0–5.2 (4.9's, plus SEND_BATCH_MESSAGE). Groups are
resources named by their retry topic (``%RETRY%<group>``), as in Java.

What a request needs (Java's table; other codes need no resource, only a valid signature):

==========================  ===========================================================
SEND_MESSAGE(_V2), BATCH    PUB on the topic; a ``%RETRY%`` topic: SUB on its group
CONSUMER_SEND_MSG_BACK      SUB on the group
PULL_MESSAGE                SUB on the topic and on the group
QUERY_MESSAGE               SUB on the topic
HEART_BEAT                  SUB on every consumer group and subscribed topic of the body
UNREGISTER_CLIENT           SUB on the consumer group
GET_CONSUMER_LIST_BY_GROUP  SUB on the consumer group
UPDATE_CONSUMER_OFFSET      SUB on the group and on the topic
==========================  ===========================================================

rocketpipe adds the 5.x consumption codes that Java's 1.0 table predates (Apache 5.3's ACL 2.0
asks the same): POP_MESSAGE, PEEK_MESSAGE, ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME and
LITE_PULL_MESSAGE need SUB on the group and on the topic (a ``%RETRY%`` topic: the group only).

Admin-only codes: Java's ``Permission.ADMIN_CODE`` (:data:`JAVA_ADMIN_CODES`: create/update and
delete of topics and subscription groups, UPDATE_BROKER_CONFIG) plus rocketpipe's additions in
:data:`ADMIN_CODES` (broker-side offset resets and other metadata writes that Java 1.0 leaves to
any signed account).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from ..protocol.bodies.heartbeat import HeartbeatData
from ..protocol.codes import RequestCode
from ..protocol.command import RemotingCommand
from ..protocol.names import RETRY_GROUP_TOPIC_PREFIX
from .address import host_of
from .errors import AclError
from .signer import ACCESS_KEY, SECURITY_TOKEN, SIGNATURE, signed_fields_text

__all__ = [
    "ADMIN_CODES",
    "JAVA_ADMIN_CODES",
    "AccessResource",
    "Permission",
    "check_permission",
    "parse_access_resource",
    "parse_perm",
]


class Permission:
    """Permission bits (``org.apache.rocketmq.acl.common.Permission``)."""

    DENY: Final = 1
    ANY: Final = 1 << 1
    PUB: Final = 1 << 2
    SUB: Final = 1 << 3


#: ``Permission.ADMIN_CODE``: the request codes only an ``admin: true`` account may send.
JAVA_ADMIN_CODES: Final = frozenset(
    {
        RequestCode.UPDATE_AND_CREATE_TOPIC,
        RequestCode.UPDATE_BROKER_CONFIG,
        RequestCode.DELETE_TOPIC_IN_BROKER,
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
        RequestCode.DELETE_SUBSCRIPTIONGROUP,
    }
)

#: What rocketpipe's broker refuses to non-admin accounts: Java's set plus the other writes of
#: broker metadata (batch subscription-group updates, admin offset resets, broker write
#: permission, KV config and name-server topic edits).
ADMIN_CODES: Final = JAVA_ADMIN_CODES | frozenset(
    {
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST,
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
        RequestCode.RESET_CONSUMER_CLIENT_OFFSET,
        RequestCode.WIPE_WRITE_PERM_OF_BROKER,
        RequestCode.ADD_WRITE_PERM_OF_BROKER,
        RequestCode.PUT_KV_CONFIG,
        RequestCode.DELETE_KV_CONFIG,
        RequestCode.REGISTER_BROKER,
        RequestCode.UNREGISTER_BROKER,
        RequestCode.DELETE_TOPIC_IN_NAMESRV,
        RequestCode.REGISTER_TOPIC_IN_NAMESRV,
    }
)

_PERM_NAMES: Final = {
    "PUB": Permission.PUB,
    "SUB": Permission.SUB,
    "PUB|SUB": Permission.PUB | Permission.SUB,
    "SUB|PUB": Permission.PUB | Permission.SUB,
    "DENY": Permission.DENY,
}


def parse_perm(text: str | None) -> int:
    """``Permission.parsePermFromString``: PUB, SUB, PUB|SUB / SUB|PUB, DENY; anything else DENY."""
    if text is None:
        return Permission.DENY
    return _PERM_NAMES.get(text.strip(), Permission.DENY)


def check_permission(needed: int, owned: int) -> bool:
    """``Permission.checkPermission``: DENY owned refuses all; ANY needs PUB or SUB."""
    if owned & Permission.DENY:
        return False
    if needed & Permission.ANY:
        return bool(owned & (Permission.PUB | Permission.SUB))
    return bool(needed & owned)


def is_retry_topic(resource: str) -> bool:
    """True for ``%RETRY%<group>`` (a group resource)."""
    return resource.startswith(RETRY_GROUP_TOPIC_PREFIX)


def print_resource(resource: str) -> str:
    """``PlainAccessResource.printStr``: ``group:<g>`` or ``topic:<t>``."""
    if is_retry_topic(resource):
        return f"group:{resource[len(RETRY_GROUP_TOPIC_PREFIX) :]}"
    return f"topic:{resource}"


@dataclass(slots=True)
class AccessResource:
    """What one request asks for (Java ``PlainAccessResource`` built by ``parse``).

    Attributes:
        remote_ip: the peer's address without port.
        request_code: the request code.
        access_key, signature, security_token: from the ext fields (None when absent).
        resource_perms: resource (topic, or ``%RETRY%<group>``) -> needed permission bits.
        content: the signed ext-field text (sorted values, ``Signature`` excluded); the body
            follows it in the signed bytes (:func:`~.signer.combine_request_content`).
        body: the request body.
    """

    remote_ip: str
    request_code: int
    access_key: str | None = None
    signature: str | None = None
    security_token: str | None = None
    resource_perms: dict[str, int] = field(default_factory=dict)
    content: bytes = b""
    body: bytes | memoryview = b""

    def need(self, resource: str | None, perm: int) -> None:
        """``addResourceAndPerm`` (None resources are ignored)."""
        if resource is not None:
            self.resource_perms[resource] = perm


def _group(name: str | None) -> str | None:
    return None if name is None else RETRY_GROUP_TOPIC_PREFIX + name


#: 5.x consumption codes rocketpipe checks like a pull (not in Java's 1.0 table).
_CONSUME_5X: Final = frozenset(
    {
        RequestCode.POP_MESSAGE,
        RequestCode.PEEK_MESSAGE,
        RequestCode.ACK_MESSAGE,
        RequestCode.CHANGE_MESSAGE_INVISIBLETIME,
        RequestCode.LITE_PULL_MESSAGE,
    }
)

#: MQVersion.V4_9_3's ordinal: requests from clients up to it had ``_UNIQUE_KEY_QUERY`` unsigned.
_V4_9_3: Final = 400


def parse_access_resource(cmd: RemotingCommand, remote_address: str) -> AccessResource:
    """Build the :class:`AccessResource` of request ``cmd`` from peer ``"ip:port"``.

    Mirrors ``PlainAccessResource.parse`` (5.0–5.2).

    Raises:
        AclError: the HEART_BEAT body cannot be decoded.
    """
    code = cmd.code
    res = AccessResource(host_of(remote_address), code)
    ext = cmd.ext_fields
    if not ext:
        return res
    res.access_key = ext.get(ACCESS_KEY)
    res.signature = ext.get(SIGNATURE)
    res.security_token = ext.get(SECURITY_TOKEN)
    sub = Permission.SUB
    if code == RequestCode.SEND_MESSAGE:
        topic = ext.get("topic")
        if topic is not None and is_retry_topic(topic):
            res.need(_group(ext.get("group")), sub)
        else:
            res.need(topic, Permission.PUB)
    elif code in (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE):
        topic = ext.get("b")
        if topic is not None and is_retry_topic(topic):
            res.need(_group(ext.get("a")), sub)
        else:
            res.need(topic, Permission.PUB)
    elif code == RequestCode.CONSUMER_SEND_MSG_BACK:
        res.need(_group(ext.get("group")), sub)
    elif code == RequestCode.PULL_MESSAGE:
        res.need(ext.get("topic"), sub)
        res.need(_group(ext.get("consumerGroup")), sub)
    elif code == RequestCode.QUERY_MESSAGE:
        res.need(ext.get("topic"), sub)
    elif code == RequestCode.HEART_BEAT:
        try:
            data = HeartbeatData.decode(cmd.body)
        except Exception as err:
            raise AclError(str(err)) from err
        for consumer in data.consumer_data_set:
            res.need(_group(consumer.group_name), sub)
            for subscription in consumer.subscription_data_set:
                res.need(subscription.topic, sub)
    elif code in (RequestCode.UNREGISTER_CLIENT, RequestCode.GET_CONSUMER_LIST_BY_GROUP):
        res.need(_group(ext.get("consumerGroup")), sub)
    elif code == RequestCode.UPDATE_CONSUMER_OFFSET:
        res.need(_group(ext.get("consumerGroup")), sub)
        res.need(ext.get("topic"), sub)
    elif code in _CONSUME_5X:
        topic = ext.get("topic")
        if topic is not None and not is_retry_topic(topic):
            res.need(topic, sub)
        res.need(_group(ext.get("consumerGroup")), sub)
    if cmd.version <= _V4_9_3 and "_UNIQUE_KEY_QUERY" in ext:
        ext = {k: v for k, v in ext.items() if k != "_UNIQUE_KEY_QUERY"}
    res.content = signed_fields_text(ext)
    res.body = cmd.body
    return res
