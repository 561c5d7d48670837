"""ACL 2.0 policy matching and decisions (``rocketpipe.acl.auth_*``), checked against the rules of
Java 5.3.3's ``Resource``, ``PolicyEntry``, ``AclAuthorizationHandler`` and the request-code table
of ``DefaultAuthorizationContextBuilder``."""

from __future__ import annotations

import pytest

from rocketpipe.acl.auth_checker import AuthChecker, AuthorizationContext, authorization_contexts, pick_entry
from rocketpipe.acl.auth_metadata import AuthMetadata
from rocketpipe.acl.auth_model import Action, Decision, PolicyEntry, Resource, ResourcePattern, ResourceType, UserType
from rocketpipe.acl.errors import AuthenticationError, AuthorizationError
from rocketpipe.acl.signer import SessionCredentials
from rocketpipe.protocol.bodies.auth import AclInfo
from rocketpipe.protocol.codes import RequestCode
from rocketpipe.protocol.command import RemotingCommand


@pytest.mark.parametrize(
    ("key", "parsed"),
    [
        ("*", (ResourceType.ANY, None, ResourcePattern.ANY)),
        ("Topic:*", (ResourceType.TOPIC, None, ResourcePattern.ANY)),
        ("topic:Orders", (ResourceType.TOPIC, "Orders", ResourcePattern.LITERAL)),
        ("Group:cg-*", (ResourceType.GROUP, "cg-", ResourcePattern.PREFIXED)),
        ("Cluster:DefaultCluster", (ResourceType.CLUSTER, "DefaultCluster", ResourcePattern.LITERAL)),
    ],
)
def test_resource_keys_parse_and_print_as_java(key: str, parsed: tuple[object, ...]) -> None:
    r = Resource.parse(key)
    assert r is not None and (r.type, r.name, r.pattern) == parsed
    assert r.key == (key if key != "topic:Orders" else "Topic:Orders")


@pytest.mark.parametrize("key", ["", "  ", "Queue:x", "Orders"])
def test_bad_resource_keys_are_none(key: str) -> None:
    assert Resource.parse(key) is None


def test_resource_matching() -> None:
    orders = Resource.topic("Orders")
    assert Resource.parse("*").matches(orders)  # type: ignore[union-attr]
    assert Resource.parse("Topic:*").matches(orders)  # type: ignore[union-attr]
    assert Resource.parse("Topic:Ord*").matches(orders)  # type: ignore[union-attr]
    assert not Resource.parse("Topic:Orx*").matches(orders)  # type: ignore[union-attr]
    assert not Resource.parse("Group:Orders").matches(orders)  # type: ignore[union-attr]
    assert Resource.group("%RETRY%cg") == Resource.group("cg") == Resource.group("%DLQ%cg")


def entry(key: str, decision: Decision, *actions: Action, ips: tuple[str, ...] = ()) -> PolicyEntry:
    r = Resource.parse(key)
    assert r is not None
    return PolicyEntry(r, list(actions) or [Action.PUB], list(ips), decision)


def ctx(resource: Resource, *actions: Action, ip: str = "127.0.0.1") -> AuthorizationContext:
    return AuthorizationContext("alice", resource, actions or (Action.PUB,), ip)


def test_entry_matches_any_requested_action_all_and_source_ips() -> None:
    e = entry("Topic:T", Decision.ALLOW, Action.SUB, ips=("10.0.0.0/8", "127.0.0.1"))
    t = Resource.topic("T")
    assert e.matches(t, [Action.PUB, Action.SUB], "10.1.2.3")
    assert e.matches(t, [Action.SUB], "127.0.0.1")
    assert not e.matches(t, [Action.SUB], "192.168.0.1")
    assert not e.matches(t, [Action.PUB], "127.0.0.1")
    assert entry("Topic:T", Decision.ALLOW, Action.ALL).matches(t, [Action.DELETE], "1.2.3.4")


def test_the_more_specific_entry_decides() -> None:
    t = Resource.topic("Secret")
    literal_deny = entry("Topic:Secret", Decision.DENY)
    any_allow = entry("Topic:*", Decision.ALLOW)
    prefix_allow = entry("Topic:Sec*", Decision.ALLOW)
    everything_allow = entry("*", Decision.ALLOW)
    assert pick_entry([any_allow, literal_deny], [], ctx(t)) is literal_deny
    assert pick_entry([everything_allow, literal_deny], [], ctx(t)) is literal_deny
    assert pick_entry([literal_deny, everything_allow], [], ctx(t)) is literal_deny
    # Java's comparator puts a shorter prefix first
    longer = entry("Topic:Secr*", Decision.DENY)
    assert pick_entry([longer, prefix_allow], [], ctx(t)) is prefix_allow


def test_java_order_quirk_literal_then_any_pattern() -> None:
    """Java's comparator gives 0 (then the decision) when the first entry has the ANY pattern,
    so a literal Deny stored *before* ``Topic:*`` Allow loses to it (Java 5.3.3 behaviour)."""
    t = Resource.topic("Secret")
    literal_deny = entry("Topic:Secret", Decision.DENY)
    any_allow = entry("Topic:*", Decision.ALLOW)
    assert pick_entry([literal_deny, any_allow], [], ctx(t)) is any_allow


def test_default_policy_counts_only_without_a_custom_match() -> None:
    t = Resource.topic("T")
    custom = [entry("Topic:T", Decision.DENY)]
    default = [entry("Topic:*", Decision.ALLOW)]
    assert pick_entry(custom, default, ctx(t)) is custom[0]
    assert pick_entry([], default, ctx(t)) is default[0]
    assert pick_entry([entry("Topic:X", Decision.ALLOW)], [], ctx(t)) is None


def metadata() -> AuthMetadata:
    md = AuthMetadata()
    md.create_user("root", "rootsecret", UserType.SUPER)
    md.create_user("alice", "alicesecret")
    return md


def send(topic: str, creds: SessionCredentials | None) -> RemotingCommand:
    cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": topic, "c": "TBW102"}, body=b"x")
    if creds is not None:
        creds.sign(cmd)
    return cmd


def test_checker_decisions_and_messages() -> None:
    md = metadata()
    md.put_acl("User:alice", AclInfo.of("User:alice", ["Topic:*"], ["Pub"], None, "Allow"))
    md.put_acl("User:alice", AclInfo.of("User:alice", ["Topic:Secret"], ["Pub"], None, "Deny"))
    checker = AuthChecker(md, "DefaultCluster", authentication_enabled=True, authorization_enabled=True)
    alice = SessionCredentials("alice", "alicesecret")
    checker.check(send("Public", alice), "127.0.0.1:5000")
    checker.check(send("Secret", SessionCredentials("root", "rootsecret")), "127.0.0.1:5000")
    with pytest.raises(AuthorizationError) as deny:
        checker.check(send("Secret", alice), "127.0.0.1:5000")
    assert (
        deny.value.remark == "User:alice has no permission to access Topic:Secret from 127.0.0.1, the decision is deny."
    )
    with pytest.raises(AuthenticationError, match="check signature failed"):
        checker.check(send("Public", SessionCredentials("alice", "bad")), "127.0.0.1:5000")
    with pytest.raises(AuthenticationError, match="username cannot be null"):
        checker.check(send("Public", None), "127.0.0.1:5000")
    only_authz = AuthChecker(md, "DefaultCluster", authorization_enabled=True)
    with pytest.raises(AuthorizationError, match="Authorization failed"):
        only_authz.check(send("Public", None), "127.0.0.1:5000")
    whitelisted = AuthChecker(
        md, "DefaultCluster", authentication_enabled=True, authentication_whitelist=f" {RequestCode.SEND_MESSAGE_V2} ,1"
    )
    whitelisted.check(send("Public", None), "127.0.0.1:5000")


def test_request_code_table() -> None:
    def contexts(code: int, fields: dict[str, str]) -> list[tuple[str, tuple[str, ...]]]:
        cmd = RemotingCommand.request(code, {"AccessKey": "alice", **fields})
        return [
            (c.resource.key, tuple(a.java_name for a in c.actions))
            for c in authorization_contexts(cmd, "10.0.0.1:1", "C")
        ]

    assert contexts(RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": "%RETRY%cg"}) == [("Group:pg", ("Sub",))]
    assert contexts(RequestCode.PULL_MESSAGE, {"topic": "T", "consumerGroup": "cg"}) == [
        ("Topic:T", ("Sub",)),
        ("Group:cg", ("Sub",)),
    ]
    assert contexts(RequestCode.UPDATE_CONSUMER_OFFSET, {"topic": "T", "consumerGroup": "cg"}) == [
        ("Topic:T", ("Sub", "Update")),
        ("Group:cg", ("Sub", "Update")),
    ]
    assert contexts(RequestCode.UPDATE_AND_CREATE_TOPIC, {"topic": "T"}) == [("Topic:T", ("Create",))]
    assert contexts(RequestCode.AUTH_LIST_ACL, {}) == [("Cluster:C", ("Get",))]
    assert contexts(RequestCode.GET_BROKER_CLUSTER_INFO, {}) == []


def test_metadata_round_trips_through_json() -> None:
    md = metadata()
    md.put_acl("User:alice", AclInfo.of("User:alice", ["Topic:a*", "Group:g"], ["Pub", "Sub"], ["10.0.0.0/8"], "Deny"))
    again = AuthMetadata.from_json(md.to_json())
    assert again.to_json() == md.to_json()
    assert again.users["root"].user_type is UserType.SUPER
    with pytest.raises(ValueError, match="wrong shape"):
        AuthMetadata.from_json({"users": {}})
