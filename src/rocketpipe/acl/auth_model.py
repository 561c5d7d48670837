"""ACL 2.0 model of Apache RocketMQ 5.3 (L2, sans-IO): users, resources, policies and the
matching rules.

Mirrors ``auth/authentication/model/User``, ``auth/authorization/model/{Acl,Policy,PolicyEntry,
Resource,Environment}`` and the enums ``UserType``, ``UserStatus``, ``Decision``, ``PolicyType``,
``common/action/Action``, ``common/resource/{ResourceType,ResourcePattern}`` of Java 5.3.3.
Names are matched case-insensitively on input (Java's ``getByName``) and written as Java writes
them (``Super``, ``enable``, ``Allow``, ``Custom``, ``Pub``, ``Topic``).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from enum import Enum
from typing import TypeVar

__all__ = [
    "Action",
    "Decision",
    "Policy",
    "PolicyEntry",
    "PolicyType",
    "Resource",
    "ResourcePattern",
    "ResourceType",
    "User",
    "UserStatus",
    "UserType",
    "by_name",
    "ip_in_range",
    "is_valid_ip_or_cidr",
    "subject_username",
]


class _Named(Enum):
    @property
    def java_name(self) -> str:
        """The name Java writes (``Super``, ``Allow`` …)."""
        return str(self.value)


E = TypeVar("E", bound=_Named)


class UserType(_Named):
    """``UserType``: a super user passes every authorization check."""

    SUPER = "Super"
    NORMAL = "Normal"


class UserStatus(_Named):
    """``UserStatus``: a disabled user fails authentication."""

    ENABLE = "enable"
    DISABLE = "disable"


class Decision(_Named):
    """``Decision`` of a policy entry."""

    ALLOW = "Allow"
    DENY = "Deny"


class PolicyType(_Named):
    """``PolicyType``: DEFAULT entries count only when no CUSTOM entry matches."""

    CUSTOM = "Custom"
    DEFAULT = "Default"


class Action(_Named):
    """``common.action.Action`` (UNKNOWN left out)."""

    ALL = "All"
    ANY = "Any"
    PUB = "Pub"
    SUB = "Sub"
    CREATE = "Create"
    UPDATE = "Update"
    DELETE = "Delete"
    GET = "Get"
    LIST = "List"


class ResourceType(_Named):
    """``common.resource.ResourceType`` (UNKNOWN left out)."""

    ANY = "Any"
    CLUSTER = "Cluster"
    NAMESPACE = "Namespace"
    TOPIC = "Topic"
    GROUP = "Group"


class ResourcePattern(_Named):
    """``common.resource.ResourcePattern``: how a resource name is matched."""

    ANY = "ANY"
    LITERAL = "LITERAL"
    PREFIXED = "PREFIXED"


def by_name(enum: type[E], name: str | None) -> E | None:
    """Java's ``getByName``: the member whose Java name equals ``name`` ignoring case, else None."""
    if name is None:
        return None
    low = name.lower()
    for member in enum:
        if member.java_name.lower() == low:
            return member
    return None


_RETRY = "%RETRY%"
_DLQ = "%DLQ%"


@dataclass(frozen=True, slots=True)
class Resource:
    """A resource or resource pattern (Java ``Resource``).

    Attributes:
        type: topic, group, cluster … or ANY (``*``: everything).
        name: the name, or the prefix for PREFIXED; None for ANY.
        pattern: LITERAL, PREFIXED (``Topic:abc*``) or ANY (``Topic:*``).
    """

    type: ResourceType
    name: str | None
    pattern: ResourcePattern

    @classmethod
    def parse(cls, key: str | None) -> Resource | None:
        """``Resource.of(String)``: ``*``, ``Topic:*``, ``Topic:pre*``, ``Group:g``; None when blank
        or of an unknown type."""
        if key is None or not key.strip():
            return None
        if key == "*":
            return cls(ResourceType.ANY, None, ResourcePattern.ANY)
        type_name, _, name = key.partition(":")
        rtype = by_name(ResourceType, type_name)
        if rtype is None:
            return None
        if name == "*":
            return cls(rtype, None, ResourcePattern.ANY)
        if name.endswith("*"):
            return cls(rtype, name[: name.index("*")], ResourcePattern.PREFIXED)
        return cls(rtype, name, ResourcePattern.LITERAL)

    @classmethod
    def topic(cls, name: str | None) -> Resource:
        """``Resource.ofTopic``."""
        return cls(ResourceType.TOPIC, name, ResourcePattern.LITERAL)

    @classmethod
    def group(cls, name: str | None) -> Resource:
        """``Resource.ofGroup``: a ``%RETRY%`` / ``%DLQ%`` name stands for its group."""
        if name is not None and name.startswith(_RETRY):
            name = name[len(_RETRY) :]
        elif name is not None and name.startswith(_DLQ):
            name = name[len(_DLQ) :]
        return cls(ResourceType.GROUP, name, ResourcePattern.LITERAL)

    @classmethod
    def cluster(cls, name: str) -> Resource:
        """``Resource.ofCluster``."""
        return cls(ResourceType.CLUSTER, name, ResourcePattern.LITERAL)

    @property
    def key(self) -> str:
        """``getResourceKey``: ``*``, ``Topic:*``, ``Topic:t``, ``Topic:pre*``."""
        if self.type is ResourceType.ANY:
            return "*"
        if self.pattern is ResourcePattern.ANY:
            return f"{self.type.java_name}:*"
        if self.pattern is ResourcePattern.PREFIXED:
            return f"{self.type.java_name}:{self.name}*"
        return f"{self.type.java_name}:{self.name}"

    def matches(self, other: Resource) -> bool:
        """``Resource.isMatch``: does this pattern cover the literal resource ``other``?"""
        if self.type is ResourceType.ANY:
            return True
        if self.type is not other.type:
            return False
        if self.pattern is ResourcePattern.ANY:
            return True
        if self.pattern is ResourcePattern.LITERAL:
            return other.name == self.name
        return other.name is not None and self.name is not None and other.name.startswith(self.name)


def is_valid_ip_or_cidr(text: str) -> bool:
    """``IPAddressUtils.isValidIPOrCidr``: an IPv4/IPv6 address or network."""
    try:
        if "/" in text:
            ipaddress.ip_network(text, strict=False)
        else:
            ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def ip_in_range(ip: str, range_: str) -> bool:
    """``IPAddressUtils.isIPInRange``: ``ip`` equals the address or lies in the network ``range_``."""
    try:
        addr = ipaddress.ip_address(ip)
        if "/" in range_:
            return addr in ipaddress.ip_network(range_, strict=False)
        return addr == ipaddress.ip_address(range_)
    except ValueError:
        return False


@dataclass(slots=True)
class PolicyEntry:
    """One rule (Java ``PolicyEntry`` + its ``Environment``).

    Attributes:
        resource: the resource pattern.
        actions: the actions it covers (``ALL`` covers every one).
        source_ips: the peer addresses or CIDRs it is limited to (empty: any).
        decision: ALLOW or DENY.
    """

    resource: Resource
    actions: list[Action]
    source_ips: list[str]
    decision: Decision

    def matches(self, resource: Resource, actions: list[Action], source_ip: str) -> bool:
        """``isMatchResource`` and ``isMatchAction`` and ``isMatchEnvironment``."""
        if not self.resource.matches(resource):
            return False
        if not self.actions:
            return False
        if Action.ANY not in actions and not any(a in self.actions or Action.ALL in self.actions for a in actions):
            return False
        return not self.source_ips or any(ip_in_range(source_ip, r) for r in self.source_ips)


@dataclass(slots=True)
class Policy:
    """A typed list of entries (Java ``Policy``)."""

    policy_type: PolicyType
    entries: list[PolicyEntry] = field(default_factory=list)

    def entry(self, resource: Resource) -> PolicyEntry | None:
        """The entry of exactly this resource pattern, if any."""
        return next((e for e in self.entries if e.resource == resource), None)

    def update_entries(self, new: list[PolicyEntry]) -> None:
        """``Policy.updateEntry``: replace the entries of the same resource, append the others."""
        for n in new:
            old = self.entry(n.resource)
            if old is None:
                self.entries.append(n)
            else:
                old.actions, old.source_ips, old.decision = n.actions, n.source_ips, n.decision


@dataclass(slots=True)
class User:
    """A user (Java ``User``): username = AccessKey, password = secret key of the signature."""

    username: str
    password: str | None
    user_type: UserType = UserType.NORMAL
    user_status: UserStatus = UserStatus.ENABLE

    @property
    def subject_key(self) -> str:
        """``User:<username>``."""
        return f"User:{self.username}"


def subject_username(subject_key: str | None) -> str | None:
    """``Subject.of``: the username of ``User:<name>`` (type matched ignoring case); None for any
    other subject type."""
    if subject_key is None:
        return None
    type_name, _, name = subject_key.partition(":")
    return name if type_name.lower() == "user" else None
