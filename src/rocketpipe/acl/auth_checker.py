"""ACL 2.0 request checks of Apache RocketMQ 5.3 (L2, sans-IO): :class:`AuthChecker`.

Mirrors, for the remoting protocol, Java 5.3.3's broker pipeline: ``AuthenticationPipeline`` then
``AuthorizationPipeline`` (authentication runs first), ``DefaultAuthenticationContextBuilder`` +
``DefaultAuthenticationHandler``, ``DefaultAuthorizationContextBuilder`` (the request code -> resource
and action table, :func:`authorization_contexts`) and ``UserAuthorizationHandler`` +
``AclAuthorizationHandler`` (:meth:`AuthChecker.authorize`). Every refusal is answered
NO_PERMISSION (16) with Java's message as remark:

* ``username cannot be null.`` (no ``AccessKey``), ``User:<u> is not found.``, ``User:<u> is
  disabled.``, ``check signature failed.`` (authentication);
* ``User:<u> not found.``; ``User:<u> has no permission to access <resource> from <ip>, no matched
  policies.`` / ``…, the decision is deny.``; ``Authorization failed. Please verify your access
  rights and try again.`` (authorization of an unsigned request).

Whitelists hold request codes (as decimal text, Java's ``authenticationWhitelist`` /
``authorizationWhitelist``). Super users pass every authorization.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Protocol

from ..protocol.bodies.consumer import UnlockBatchRequestBody
from ..protocol.bodies.heartbeat import HeartbeatData
from ..protocol.codes import RequestCode, ResponseCode
from ..protocol.command import RemotingCommand
from .address import host_of
from .auth_metadata import AuthMetadata
from .auth_model import (
    Action,
    Decision,
    PolicyEntry,
    PolicyType,
    Resource,
    ResourcePattern,
    ResourceType,
    UserStatus,
    UserType,
)
from .errors import AuthenticationError, AuthorizationError
from .signer import ACCESS_KEY, SIGNATURE, cal_signature, signed_fields_text

__all__ = ["AuthChecker", "AuthorizationContext", "authorization_contexts", "pick_entry"]

log = logging.getLogger(__name__)

_RETRY = "%RETRY%"
#: MQVersion.V4_9_3's ordinal: requests up to it had ``_UNIQUE_KEY_QUERY`` unsigned.
_V4_9_3: Final = 400

A = Action
#: ``@RocketMQAction`` / ``@RocketMQResource`` of the request headers Java reads by annotation:
#: code name -> (a CLUSTER resource when no field names one, actions, ((wire field, type, splitter)…)).
_ANNOTATED: Final[dict[str, tuple[bool, tuple[Action, ...], tuple[tuple[str, str, str], ...]]]] = {
    "ACK_MESSAGE": (False, (A.SUB,), (("consumerGroup", "GROUP", ""), ("topic", "TOPIC", ""))),
    "CHANGE_MESSAGE_INVISIBLETIME": (False, (A.SUB,), (("consumerGroup", "GROUP", ""), ("topic", "TOPIC", ""))),
    "CHECK_TRANSACTION_STATE": (False, (A.PUB,), (("topic", "TOPIC", ""),)),
    "CLONE_GROUP_OFFSET": (False, (A.UPDATE,), (("destGroup", "GROUP", ""), ("topic", "TOPIC", ""))),
    "CONSUME_MESSAGE_DIRECTLY": (False, (A.SUB,), (("consumerGroup", "GROUP", ""), ("topic", "TOPIC", ""))),
    "UPDATE_AND_CREATE_TOPIC": (False, (A.CREATE,), (("topic", "TOPIC", ""),)),
    "DELETE_SUBSCRIPTIONGROUP": (False, (A.DELETE,), (("groupName", "GROUP", ""),)),
    "DELETE_TOPIC_IN_BROKER": (False, (A.DELETE,), (("topic", "TOPIC", ""),)),
    "GET_ALL_PRODUCER_INFO": (True, (A.GET,), ()),
    "GET_BROKER_CONSUME_STATS": (True, (A.GET,), ()),
    "GET_CONSUME_STATS": (False, (A.GET,), (("consumerGroup", "GROUP", ""), ("topic", "TOPIC", ""))),
    "GET_CONSUMER_CONNECTION_LIST": (False, (A.GET,), (("consumerGroup", "GROUP", ""),)),
    "GET_CONSUMER_RUNNING_INFO": (False, (A.GET,), (("consumerGroup", "GROUP", ""),)),
    "INVOKE_BROKER_TO_GET_CONSUMER_STATUS": (False, (A.GET,), (("topic", "TOPIC", ""), ("group", "GROUP", ""))),
    "GET_EARLIEST_MSG_STORETIME": (False, (A.GET,), (("topic", "TOPIC", ""),)),
    "GET_MAX_OFFSET": (False, (A.GET,), (("topic", "TOPIC", ""),)),
    "GET_MIN_OFFSET": (False, (A.GET,), (("topic", "TOPIC", ""),)),
    "GET_PRODUCER_CONNECTION_LIST": (True, (A.GET,), ()),
    "GET_SUBSCRIPTIONGROUP_CONFIG": (False, (A.GET,), (("group", "GROUP", ""),)),
    "GET_TOPIC_CONFIG": (False, (A.GET,), (("topic", "TOPIC", ""),)),
    "GET_TOPIC_STATS_INFO": (False, (A.GET,), (("topic", "TOPIC", ""),)),
    "NOTIFY_CONSUMER_IDS_CHANGED": (False, (A.SUB,), (("consumerGroup", "GROUP", ""),)),
    "PEEK_MESSAGE": (False, (A.SUB,), (("topic", "TOPIC", ""), ("consumerGroup", "GROUP", ""))),
    "POLLING_INFO": (False, (A.GET,), (("consumerGroup", "GROUP", ""), ("topic", "TOPIC", ""))),
    "POP_MESSAGE": (False, (A.SUB,), (("consumerGroup", "GROUP", ""), ("topic", "TOPIC", ""))),
    "NOTIFICATION": (False, (A.SUB,), (("consumerGroup", "GROUP", ""), ("topic", "TOPIC", ""))),
    "QUERY_CONSUME_QUEUE": (False, (A.GET,), (("topic", "TOPIC", ""), ("consumerGroup", "GROUP", ""))),
    "QUERY_CONSUME_TIME_SPAN": (False, (A.GET,), (("topic", "TOPIC", ""), ("group", "GROUP", ""))),
    "QUERY_CORRECTION_OFFSET": (
        False,
        (A.GET,),
        (("filterGroups", "GROUP", ","), ("compareGroup", "GROUP", ""), ("topic", "TOPIC", "")),
    ),
    "QUERY_SUBSCRIPTION_BY_CONSUMER": (False, (A.GET,), (("group", "GROUP", ""), ("topic", "TOPIC", ""))),
    "QUERY_TOPIC_CONSUME_BY_WHO": (False, (A.GET,), (("topic", "TOPIC", ""),)),
    "QUERY_TOPICS_BY_CONSUMER": (False, (A.GET,), (("group", "GROUP", ""),)),
    "PUSH_REPLY_MESSAGE_TO_CLIENT": (False, (A.SUB,), (("producerGroup", "GROUP", ""), ("topic", "TOPIC", ""))),
    "INVOKE_BROKER_TO_RESET_OFFSET": (False, (A.UPDATE,), (("group", "GROUP", ""), ("topic", "TOPIC", ""))),
    "RESUME_CHECK_HALF_MESSAGE": (False, (A.UPDATE,), (("topic", "TOPIC", ""),)),
    "SEARCH_OFFSET_BY_TIMESTAMP": (False, (A.GET,), (("topic", "TOPIC", ""),)),
    "VIEW_BROKER_STATS_DATA": (True, (A.GET,), ()),
    "VIEW_MESSAGE_BY_ID": (False, (A.GET,), (("topic", "TOPIC", ""),)),
    "ADD_WRITE_PERM_OF_BROKER": (True, (A.UPDATE,), ()),
    "WIPE_WRITE_PERM_OF_BROKER": (True, (A.UPDATE,), ()),
    "AUTH_CREATE_USER": (True, (A.UPDATE,), ()),
    "AUTH_UPDATE_USER": (True, (A.UPDATE,), ()),
    "AUTH_DELETE_USER": (True, (A.UPDATE,), ()),
    "AUTH_GET_USER": (True, (A.GET,), ()),
    "AUTH_LIST_USER": (True, (A.GET,), ()),
    "AUTH_CREATE_ACL": (True, (A.UPDATE,), ()),
    "AUTH_UPDATE_ACL": (True, (A.UPDATE,), ()),
    "AUTH_DELETE_ACL": (True, (A.UPDATE,), ()),
    "AUTH_GET_ACL": (True, (A.GET,), ()),
    "AUTH_LIST_ACL": (True, (A.GET,), ()),
}
_BY_CODE: Final = {int(getattr(RequestCode, n)): v for n, v in _ANNOTATED.items() if hasattr(RequestCode, n)}


@dataclass(frozen=True, slots=True)
class AuthorizationContext:
    """What one request asks for (Java ``DefaultAuthorizationContext``).

    Attributes:
        username: the signer (``AccessKey``), None for an unsigned request.
        resource: the literal resource asked for.
        actions: the actions; an entry covering any one of them matches.
        source_ip: the peer's address without port.
    """

    username: str | None
    resource: Resource
    actions: tuple[Action, ...]
    source_ip: str


def _is_retry(name: str | None) -> bool:
    return name is not None and name.startswith(_RETRY)


def authorization_contexts(cmd: RemotingCommand, remote_address: str, cluster_name: str) -> list[AuthorizationContext]:
    """``DefaultAuthorizationContextBuilder.build``: the resources and actions request ``cmd`` needs.

    Codes outside Java's table need nothing (an empty list).

    Raises:
        AuthorizationError: ``"parse authorization context error."`` (an unreadable body).
    """
    fields = cmd.ext_fields
    if not fields:
        return []
    user = fields.get(ACCESS_KEY)
    ip = host_of(remote_address)
    out: list[AuthorizationContext] = []

    def add(resource: Resource, *actions: Action) -> None:
        out.append(AuthorizationContext(user, resource, actions, ip))

    code = cmd.code
    try:
        if code == RequestCode.SEND_MESSAGE or code in (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE):
            topic_key, group_key = ("topic", "group") if code == RequestCode.SEND_MESSAGE else ("b", "a")
            topic = fields.get(topic_key)
            if _is_retry(topic):
                group = fields.get(group_key)
                add(Resource.group(group if group and group.strip() else topic), A.SUB)
            else:
                add(Resource.topic(topic), A.PUB)
        elif code == RequestCode.RECALL_MESSAGE:
            add(Resource.topic(fields.get("topic")), A.PUB)
        elif code == RequestCode.END_TRANSACTION:
            if fields.get("topic", "").strip():
                add(Resource.topic(fields["topic"]), A.PUB)
        elif code == RequestCode.CONSUMER_SEND_MSG_BACK:
            add(Resource.group(fields.get("group")), A.SUB)
        elif code == RequestCode.PULL_MESSAGE:
            if not _is_retry(fields.get("topic")):
                add(Resource.topic(fields.get("topic")), A.SUB)
            add(Resource.group(fields.get("consumerGroup")), A.SUB)
        elif code == RequestCode.QUERY_MESSAGE:
            add(Resource.topic(fields.get("topic")), A.SUB, A.GET)
        elif code == RequestCode.HEART_BEAT:
            data = HeartbeatData.decode(cmd.body)
            for consumer in data.consumer_data_set:
                add(Resource.group(consumer.group_name), A.SUB)
                for sub in consumer.subscription_data_set:
                    if not _is_retry(sub.topic):
                        add(Resource.topic(sub.topic), A.SUB)
        elif code == RequestCode.UNREGISTER_CLIENT:
            if fields.get("consumerGroup", "").strip():
                add(Resource.group(fields["consumerGroup"]), A.SUB)
        elif code == RequestCode.GET_CONSUMER_LIST_BY_GROUP:
            add(Resource.group(fields.get("consumerGroup")), A.SUB, A.GET)
        elif code in (RequestCode.QUERY_CONSUMER_OFFSET, RequestCode.UPDATE_CONSUMER_OFFSET):
            action = A.GET if code == RequestCode.QUERY_CONSUMER_OFFSET else A.UPDATE
            if not _is_retry(fields.get("topic")):
                add(Resource.topic(fields.get("topic")), A.SUB, action)
            add(Resource.group(fields.get("consumerGroup")), A.SUB, action)
        elif code in (RequestCode.LOCK_BATCH_MQ, RequestCode.UNLOCK_BATCH_MQ):
            body = UnlockBatchRequestBody.decode(cmd.body)
            add(Resource.group(body.consumer_group), A.SUB)
            for mq in body.mq_set:
                if not _is_retry(mq.topic):
                    add(Resource.topic(mq.topic), A.SUB)
        elif (spec := _BY_CODE.get(code)) is not None:
            cluster, actions, resource_fields = spec
            for wire, rtype, splitter in resource_fields:
                value = fields.get(wire)
                if value is None:
                    continue
                for v in [p for p in value.split(splitter) if p] if splitter else [value]:
                    if rtype == "TOPIC" and not _is_retry(v):
                        add(Resource.topic(v), *actions)
                    elif rtype in ("TOPIC", "GROUP"):
                        add(Resource.group(v), *actions)
                    else:
                        add(Resource.cluster(v), *actions)
            if not out and cluster:
                add(Resource.cluster(cluster_name), *actions)
    except Exception as err:
        raise AuthorizationError("parse authorization context error.") from err
    return out


def _compare(o1: PolicyEntry, o2: PolicyEntry) -> int:
    """``AclAuthorizationHandler.comparePolicyEntries``, quirks included (it is not a total order)."""
    r1, r2 = o1.resource, o2.resource
    compare = 0
    if r1.type is not r2.type:
        if r1.type is ResourceType.ANY:
            compare = 1
        if r2.type is ResourceType.ANY:
            compare = -1
    elif r1.pattern is r2.pattern:
        if r1.pattern is ResourcePattern.PREFIXED:
            n1, n2 = len(r1.name or ""), len(r2.name or "")
            compare = (n1 > n2) - (n1 < n2)
    elif r1.pattern in (ResourcePattern.LITERAL, ResourcePattern.PREFIXED):
        compare = -1
    if compare:
        return compare
    if o1.decision is Decision.DENY:
        return 1
    return -1 if o2.decision is Decision.DENY else 0


def _java_small_sort(items: list[PolicyEntry], cmp: Callable[[PolicyEntry, PolicyEntry], int]) -> list[PolicyEntry]:
    """``List.sort`` of Java (TimSort) as it runs on fewer than 32 elements: the first run made
    ascending (a strictly descending run reversed), then binary insertion. With an inconsistent
    comparator the outcome depends on these steps, so they are followed exactly."""
    a = list(items)
    n = len(a)
    if n < 2:
        return a
    run = 1
    if cmp(a[1], a[0]) < 0:
        run = 2
        while run < n and cmp(a[run], a[run - 1]) < 0:
            run += 1
        a[:run] = reversed(a[:run])
    else:
        run = 2
        while run < n and cmp(a[run], a[run - 1]) >= 0:
            run += 1
    for start in range(run, n):
        pivot = a[start]
        left, right = 0, start
        while left < right:
            mid = (left + right) >> 1
            if cmp(pivot, a[mid]) < 0:
                right = mid
            else:
                left = mid + 1
        a[left + 1 : start + 1] = a[left:start]
        a[left] = pivot
    return a


def pick_entry(
    policies: list[PolicyEntry], default: list[PolicyEntry], ctx: AuthorizationContext
) -> PolicyEntry | None:
    """``AclAuthorizationHandler.matchPolicyEntries``: the deciding entry among the CUSTOM
    entries matching ``ctx`` (the DEFAULT ones when none does), or None."""
    matched = [e for e in policies if e.matches(ctx.resource, list(ctx.actions), ctx.source_ip)]
    if not matched:
        matched = [e for e in default if e.matches(ctx.resource, list(ctx.actions), ctx.source_ip)]
    if not matched:
        return None
    return _java_small_sort(matched, _compare)[0]


class _Peer(Protocol):
    @property
    def remote_address(self) -> str: ...


class AuthChecker:
    """The ACL 2.0 checks of one broker over its :class:`~.auth_metadata.AuthMetadata`.

    Args:
        metadata: the users and ACLs (read at every request; changes apply at once).
        cluster_name: the cluster of ``Cluster:<name>`` resources (``brokerClusterName``).
        authentication_enabled, authorization_enabled: Java's ``authenticationEnabled`` /
            ``authorizationEnabled``.
        authentication_whitelist, authorization_whitelist: request codes exempted (Java's
            comma-separated ``…Whitelist`` strings, split and trimmed).
    """

    def __init__(
        self,
        metadata: AuthMetadata,
        cluster_name: str,
        *,
        authentication_enabled: bool = False,
        authorization_enabled: bool = False,
        authentication_whitelist: str | None = None,
        authorization_whitelist: str | None = None,
    ) -> None:
        self.metadata = metadata
        self.cluster_name = cluster_name
        self.authentication_enabled = authentication_enabled
        self.authorization_enabled = authorization_enabled
        self.authentication_whitelist = _codes(authentication_whitelist)
        self.authorization_whitelist = _codes(authorization_whitelist)

    def authenticate(self, cmd: RemotingCommand) -> None:
        """``DefaultAuthenticationHandler``: the signer exists, is enabled and signed right.

        Raises:
            AuthenticationError: Java's message.
        """
        if str(cmd.code) in self.authentication_whitelist:
            return
        fields = cmd.ext_fields or {}
        username = fields.get(ACCESS_KEY)
        if not username:
            raise AuthenticationError("username cannot be null.")
        user = self.metadata.users.get(username)
        if user is None:
            raise AuthenticationError(f"User:{username} is not found.")
        if user.user_status is UserStatus.DISABLE:
            raise AuthenticationError(f"User:{username} is disabled.")
        signed = fields
        if cmd.version <= _V4_9_3 and "_UNIQUE_KEY_QUERY" in fields:
            signed = {k: v for k, v in fields.items() if k != "_UNIQUE_KEY_QUERY"}
        expected = cal_signature(signed_fields_text(signed), user.password or "", cmd.body)
        given = fields.get(SIGNATURE)
        if given is None or not hmac.compare_digest(expected.encode(), given.encode()):
            raise AuthenticationError("check signature failed.")

    def authorize(self, cmd: RemotingCommand, remote_address: str) -> None:
        """``UserAuthorizationHandler`` + ``AclAuthorizationHandler`` for every context of ``cmd``.

        Raises:
            AuthorizationError: Java's message (the first refused context).
        """
        if str(cmd.code) in self.authorization_whitelist:
            return
        for ctx in authorization_contexts(cmd, remote_address, self.cluster_name):
            self._authorize_one(ctx)

    def _authorize_one(self, ctx: AuthorizationContext) -> None:
        if ctx.username is None:  # Java: a NullPointerException, reported as below
            raise AuthorizationError("Authorization failed. Please verify your access rights and try again.")
        user = self.metadata.users.get(ctx.username)
        if user is None:
            raise AuthorizationError(f"User:{ctx.username} not found.")
        if user.user_type is UserType.SUPER:
            return
        subject = f"User:{ctx.username}"
        where = f"{subject} has no permission to access {ctx.resource.key} from {ctx.source_ip}"
        policies = self.metadata.acls.get(subject)
        if policies is None:
            raise AuthorizationError(f"{where}, no matched policies.")
        custom = [e for p in policies if p.policy_type is PolicyType.CUSTOM for e in p.entries]
        default = [e for p in policies if p.policy_type is PolicyType.DEFAULT for e in p.entries]
        entry = pick_entry(custom, default, ctx)
        if entry is None:
            raise AuthorizationError(f"{where}, no matched policies.")
        if entry.decision is Decision.DENY:
            raise AuthorizationError(f"{where}, the decision is deny.")

    def check(self, cmd: RemotingCommand, remote_address: str) -> None:
        """Authentication (when enabled), then authorization (when enabled).

        Raises:
            AuthenticationError / AuthorizationError: the request is refused.
        """
        if self.authentication_enabled:
            self.authenticate(cmd)
        if self.authorization_enabled:
            self.authorize(cmd, remote_address)

    def guard(self, cmd: RemotingCommand, conn: _Peer) -> RemotingCommand | None:
        """The router guard: None when ``cmd`` may run, else the NO_PERMISSION response."""
        try:
            self.check(cmd, conn.remote_address)
        except (AuthenticationError, AuthorizationError) as err:
            log.debug("ACL 2.0 denied peer=%s code=%d reason=%s", conn.remote_address, cmd.code, err.remark)
            return cmd.response(ResponseCode.NO_PERMISSION, err.remark)
        return None


def _codes(whitelist: str | None) -> frozenset[str]:
    return frozenset(c.strip() for c in (whitelist or "").split(",") if c.strip())
