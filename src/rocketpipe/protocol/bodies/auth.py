"""ACL 2.0 bodies of Apache RocketMQ 5.3 (L1, sans-IO): :class:`UserInfo`, :class:`AclInfo`,
:class:`PolicyInfo`, :class:`PolicyEntryInfo` (Java ``remoting/protocol/body/UserInfo`` and
``AclInfo`` with its nested ``PolicyInfo`` / ``PolicyEntryInfo``).

JSON as fastjson writes them: keys in alphabetical order, null fields left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from ...errors import ProtocolError

__all__ = ["AclInfo", "PolicyEntryInfo", "PolicyInfo", "UserInfo", "acl_infos", "user_infos"]


def _dump(d: dict[str, Any]) -> bytes:
    return orjson.dumps({k: v for k, v in sorted(d.items()) if v is not None})


def _load(data: bytes | memoryview) -> Any:
    try:
        return orjson.loads(bytes(data))
    except orjson.JSONDecodeError as err:
        raise ProtocolError(f"bad ACL 2.0 body: {err}") from None


def _str_list(v: Any) -> list[str] | None:
    if v is None:
        return None
    if not isinstance(v, list):
        raise ProtocolError(f"expected a JSON array, got {v!r}")
    return [str(x) for x in v]


def _opt_str(v: Any) -> str | None:
    return None if v is None else str(v)


@dataclass(slots=True)
class UserInfo:
    """A user as sent and answered (Java ``UserInfo``).

    Attributes:
        username, password: the credentials (AccessKey / secret of the signature).
        user_type: ``Super`` or ``Normal`` (case-insensitive on input).
        user_status: ``enable`` or ``disable``.
    """

    username: str | None = None
    password: str | None = None
    user_type: str | None = None
    user_status: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The fastjson object, null fields left out."""
        d = {
            "password": self.password,
            "userStatus": self.user_status,
            "userType": self.user_type,
            "username": self.username,
        }
        return {k: v for k, v in d.items() if v is not None}

    def encode(self) -> bytes:
        """JSON bytes, keys alphabetical (fastjson)."""
        return _dump(self.to_dict())

    @classmethod
    def from_dict(cls, d: Any) -> UserInfo:
        """Parse one JSON object. Raises ProtocolError: not an object."""
        if not isinstance(d, dict):
            raise ProtocolError(f"a user must be a JSON object, got {d!r}")
        return cls(
            _opt_str(d.get("username")),
            _opt_str(d.get("password")),
            _opt_str(d.get("userType")),
            _opt_str(d.get("userStatus")),
        )

    @classmethod
    def decode(cls, data: bytes | memoryview) -> UserInfo:
        """Parse a body. Raises ProtocolError: not JSON or not an object."""
        return cls.from_dict(_load(data))


def user_infos(data: bytes | memoryview) -> list[UserInfo]:
    """Parse a ``List<UserInfo>`` body (AUTH_LIST_USER). Raises ProtocolError."""
    v = _load(data)
    if not isinstance(v, list):
        raise ProtocolError("a user list must be a JSON array")
    return [UserInfo.from_dict(x) for x in v]


@dataclass(slots=True)
class PolicyEntryInfo:
    """One entry of a policy (Java ``AclInfo.PolicyEntryInfo``).

    Attributes:
        resource: ``Topic:name``, ``Group:name``, ``Topic:prefix*``, ``Topic:*``, ``*`` …
        actions: ``Pub``, ``Sub``, ``Create``, ``Update``, ``Delete``, ``Get``, ``List``, ``All``.
        source_ips: IPs or CIDRs the entry is limited to (None: any address).
        decision: ``Allow`` or ``Deny``.
    """

    resource: str | None = None
    actions: list[str] | None = None
    source_ips: list[str] | None = None
    decision: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The fastjson object, null fields left out."""
        d = {
            "actions": self.actions,
            "decision": self.decision,
            "resource": self.resource,
            "sourceIps": self.source_ips,
        }
        return {k: v for k, v in d.items() if v is not None}

    @classmethod
    def from_dict(cls, d: Any) -> PolicyEntryInfo:
        """Parse one JSON object. Raises ProtocolError."""
        if not isinstance(d, dict):
            raise ProtocolError(f"a policy entry must be a JSON object, got {d!r}")
        return cls(
            _opt_str(d.get("resource")),
            _str_list(d.get("actions")),
            _str_list(d.get("sourceIps")),
            _opt_str(d.get("decision")),
        )


@dataclass(slots=True)
class PolicyInfo:
    """A policy: its type (``Custom`` / ``Default``) and entries (Java ``AclInfo.PolicyInfo``)."""

    policy_type: str | None = None
    entries: list[PolicyEntryInfo] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The fastjson object, null fields left out."""
        d: dict[str, Any] = {"policyType": self.policy_type}
        if self.entries is not None:
            d["entries"] = [e.to_dict() for e in self.entries]
        return {k: v for k, v in sorted(d.items()) if v is not None}

    @classmethod
    def from_dict(cls, d: Any) -> PolicyInfo:
        """Parse one JSON object. Raises ProtocolError."""
        if not isinstance(d, dict):
            raise ProtocolError(f"a policy must be a JSON object, got {d!r}")
        entries = d.get("entries")
        if entries is not None and not isinstance(entries, list):
            raise ProtocolError("policy entries must be a JSON array")
        return cls(
            _opt_str(d.get("policyType")),
            None if entries is None else [PolicyEntryInfo.from_dict(e) for e in entries],
        )


@dataclass(slots=True)
class AclInfo:
    """The ACL of one subject (Java ``AclInfo``).

    Attributes:
        subject: ``User:<username>``.
        policies: its policies (None when absent).
    """

    subject: str | None = None
    policies: list[PolicyInfo] | None = field(default=None)

    @classmethod
    def of(
        cls,
        subject: str,
        resources: list[str],
        actions: list[str],
        source_ips: list[str] | None,
        decision: str,
    ) -> AclInfo:
        """``AclInfo.of``: one policy (type unset) with one entry per resource."""
        entries = [
            PolicyEntryInfo(r, list(actions), None if source_ips is None else list(source_ips), decision)
            for r in resources
        ]
        return cls(subject, [PolicyInfo(None, entries)])

    def to_dict(self) -> dict[str, Any]:
        """The fastjson object, null fields left out."""
        d: dict[str, Any] = {"subject": self.subject}
        if self.policies is not None:
            d["policies"] = [p.to_dict() for p in self.policies]
        return {k: v for k, v in sorted(d.items()) if v is not None}

    def encode(self) -> bytes:
        """JSON bytes, keys alphabetical (fastjson)."""
        return orjson.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, d: Any) -> AclInfo:
        """Parse one JSON object. Raises ProtocolError."""
        if not isinstance(d, dict):
            raise ProtocolError(f"an ACL must be a JSON object, got {d!r}")
        policies = d.get("policies")
        if policies is not None and not isinstance(policies, list):
            raise ProtocolError("policies must be a JSON array")
        return cls(
            _opt_str(d.get("subject")),
            None if policies is None else [PolicyInfo.from_dict(p) for p in policies],
        )

    @classmethod
    def decode(cls, data: bytes | memoryview) -> AclInfo:
        """Parse a body. Raises ProtocolError."""
        return cls.from_dict(_load(data))


def acl_infos(data: bytes | memoryview) -> list[AclInfo]:
    """Parse a ``List<AclInfo>`` body (AUTH_LIST_ACL). Raises ProtocolError."""
    v = _load(data)
    if not isinstance(v, list):
        raise ProtocolError("an ACL list must be a JSON array")
    return [AclInfo.from_dict(x) for x in v]
