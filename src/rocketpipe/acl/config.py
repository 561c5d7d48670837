"""The plain_acl.yml model (L2): :class:`AclConfig`, :class:`PlainAccessConfig`, :func:`load_acl_file`.

Mirrors Java's ``PlainAccessConfig`` / ``PlainAccessData`` and ``PlainPermissionManager.load``.
The file (YAML, keys as in Java)::

    globalWhiteRemoteAddresses: ["10.10.103.*", "192.168.0.*"]
    accounts:
      - accessKey: RocketMQ            # at least 7 characters (Java: longer than 6)
        secretKey: 12345678            # at least 7 characters
        whiteRemoteAddress:            # optional: requests from here skip signature and perms
        admin: false
        defaultTopicPerm: DENY         # DENY (the default when missing), PUB, SUB, PUB|SUB
        defaultGroupPerm: SUB
        topicPerms: ["topicA=DENY", "topicB=PUB|SUB", "topicC=SUB"]
        groupPerms: ["groupA=DENY", "groupB=PUB|SUB", "groupC=SUB"]

Errors raise :class:`~.errors.AclError` with Java's messages (``checkPlainAccessConfig``,
``Permission.checkResourcePerms``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..protocol.names import RETRY_GROUP_TOPIC_PREFIX
from .address import RemoteAddressStrategy, parse_remote_address_strategy
from .errors import AclError
from .permission import Permission, parse_perm

__all__ = ["AclConfig", "PlainAccessConfig", "load_acl_file", "parse_acl_config"]

#: ``AclConstants.ACCESS_KEY_MIN_LENGTH`` / ``SECRET_KEY_MIN_LENGTH``: keys must be longer.
KEY_MIN_LENGTH = 6


@dataclass(frozen=True, slots=True)
class PlainAccessConfig:
    """One account (Java ``PlainAccessConfig`` compiled as ``PlainAccessResource.build``).

    Attributes:
        access_key, secret_key: the credentials (each longer than 6 characters).
        white_remote_address: requests of this account from a matching address skip the
            signature and permission checks (Java's behaviour).
        admin: may send the admin-only request codes, and every resource is allowed.
        default_topic_perm, default_group_perm: :class:`~.permission.Permission` bits for
            resources not listed (DENY when not configured).
        resource_perms: topic or ``%RETRY%<group>`` -> permission bits.
    """

    access_key: str
    secret_key: str
    white_remote_address: RemoteAddressStrategy
    admin: bool = False
    default_topic_perm: int = Permission.DENY
    default_group_perm: int = Permission.DENY
    resource_perms: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AclConfig:
    """A whole ACL file: the global white list and the accounts by access key."""

    global_white_remote_addresses: tuple[RemoteAddressStrategy, ...] = ()
    accounts: dict[str, PlainAccessConfig] = field(default_factory=dict)


def _str_list(value: Any, name: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        raise AclError(f"{name} must be a list of strings")
    return [str(v) for v in value if v is not None]


def _resource_perms(items: list[str], is_topic: bool, out: dict[str, int]) -> None:
    for item in items:
        parts = [p for p in item.split("=") if p]
        if len(parts) != 2:
            raise AclError(
                f"Parse Resource format error for {item}.\n"
                "The expected resource format is 'Res=Perm'. For example: topicA=SUB"
            )
        name, perm_text = parts[0].strip(), parts[1].strip()
        perm = parse_perm(perm_text)
        if perm_text != "DENY" and perm == Permission.DENY:
            raise AclError(
                f"Parse resource permission error for {item}.\n"
                "The expected permissions are 'SUB' or 'PUB' or 'SUB|PUB' or 'PUB|SUB'."
            )
        out[name if is_topic else RETRY_GROUP_TOPIC_PREFIX + name] = perm


def _account(raw: Any) -> PlainAccessConfig:
    if not isinstance(raw, dict):
        raise AclError("each entry of accounts must be a mapping")
    ak, sk = raw.get("accessKey"), raw.get("secretKey")
    if ak is None or sk is None or len(str(ak)) <= KEY_MIN_LENGTH or len(str(sk)) <= KEY_MIN_LENGTH:
        raise AclError(f"The accessKey={ak} and secretKey={sk} cannot be null and length should longer than 6")
    perms: dict[str, int] = {}
    _resource_perms(_str_list(raw.get("topicPerms"), "topicPerms"), True, perms)
    _resource_perms(_str_list(raw.get("groupPerms"), "groupPerms"), False, perms)
    admin = raw.get("admin", False)
    white = raw.get("whiteRemoteAddress")
    return PlainAccessConfig(
        access_key=str(ak),
        secret_key=str(sk),
        white_remote_address=parse_remote_address_strategy(None if white is None else str(white)),
        admin=admin is True or str(admin).lower() == "true",
        default_topic_perm=parse_perm(_opt_str(raw.get("defaultTopicPerm"))),
        default_group_perm=parse_perm(_opt_str(raw.get("defaultGroupPerm"))),
        resource_perms=perms,
    )


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def parse_acl_config(data: Any) -> AclConfig:
    """Compile the parsed YAML document of an ACL file (None or empty = no accounts).

    A repeated access key: the last account wins (Java logs a warning and overwrites).

    Raises:
        AclError: a malformed account, permission or address pattern.
    """
    if data is None:
        return AclConfig()
    if not isinstance(data, dict):
        raise AclError("the ACL file must be a YAML mapping")
    white = tuple(
        parse_remote_address_strategy(p)
        for p in _str_list(data.get("globalWhiteRemoteAddresses"), "globalWhiteRemoteAddresses")
    )
    accounts_raw = data.get("accounts") or []
    if not isinstance(accounts_raw, list):
        raise AclError("accounts must be a list")
    accounts = {acc.access_key: acc for acc in map(_account, accounts_raw)}
    return AclConfig(white, accounts)


def load_acl_file(path: str | Path) -> AclConfig:
    """Read and compile an ACL file.

    Raises:
        AclError: the file is missing, unreadable, not YAML, or malformed.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise AclError(f"cannot read ACL file {path}: {err}") from err
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise AclError(f"ACL file {path} is not valid YAML: {err}") from err
    return parse_acl_config(data)
