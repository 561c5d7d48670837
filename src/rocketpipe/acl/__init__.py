"""ACL 1.0 (plain_acl.yml), sans-IO: credentials, request signing, address patterns, permissions.

Mirrors the Java ``rocketmq-acl`` module of 4.9.x / 5.0–5.2 (``AclClientRPCHook``, ``AclUtils``,
``AclSigner``, ``SessionCredentials``, ``Permission``, ``PlainAccessResource``,
``PlainAccessValidator``, ``PlainPermissionManager``, ``RemoteAddressStrategyFactory``).

Layer L2 (beside ``transport`` and ``store``): imports only the standard library, PyYAML,
:mod:`rocketpipe.errors` and :mod:`rocketpipe.protocol`. No asyncio, no sockets; the only I/O is
reading the ACL file (:meth:`PlainPermissionManager.reload_if_changed`). Used by the client
(signing, :func:`sign_request`) and by the broker (checking, :class:`PlainPermissionManager`).
"""

from __future__ import annotations

from .address import RemoteAddressStrategy, parse_remote_address_strategy
from .config import AclConfig, PlainAccessConfig, load_acl_file, parse_acl_config
from .errors import AclError
from .permission import (
    ADMIN_CODES,
    JAVA_ADMIN_CODES,
    AccessResource,
    Permission,
    check_permission,
    parse_access_resource,
    parse_perm,
)
from .signer import (
    ACCESS_KEY,
    SECURITY_TOKEN,
    SIGNATURE,
    SessionCredentials,
    cal_signature,
    combine_request_content,
    sign_request,
)
from .validator import PlainPermissionManager

__all__ = [
    "ACCESS_KEY",
    "ADMIN_CODES",
    "JAVA_ADMIN_CODES",
    "SECURITY_TOKEN",
    "SIGNATURE",
    "AccessResource",
    "AclConfig",
    "AclError",
    "Permission",
    "PlainAccessConfig",
    "PlainPermissionManager",
    "RemoteAddressStrategy",
    "SessionCredentials",
    "cal_signature",
    "check_permission",
    "combine_request_content",
    "load_acl_file",
    "parse_access_resource",
    "parse_acl_config",
    "parse_perm",
    "parse_remote_address_strategy",
    "sign_request",
]
