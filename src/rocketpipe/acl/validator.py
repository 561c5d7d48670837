"""The broker-side check (L2): :class:`PlainPermissionManager`.

Mirrors ``PlainAccessValidator`` + ``PlainPermissionManager.validate`` + ``PlainPermissionChecker``
(Java 5.0–5.2) and, for reloading, ``AclFileWatchService`` (Java hashes the file every 5 s; here
the file's mtime and size are looked at, at most every ``reload_interval`` seconds, from the
request path). A file that fails to parse on reload is logged and the previous rules stay.

The order of the checks, as Java's:

1. an address in ``globalWhiteRemoteAddresses``: allowed, nothing else checked;
2. no ``AccessKey``: ``"No accessKey is configured"``;
3. unknown key: ``"No acl config for <ak>"``;
4. the account's ``whiteRemoteAddress`` matches: allowed (no signature, no permission check);
5. wrong signature: ``"Check signature failed for accessKey=<ak>"``;
6. a send to ``RMQ_SYS_TRACE_TOPIC`` (needs only PUB on it): allowed;
7. admin accounts: allowed; an admin-only code: ``"Need admin permission for request
   code=<code>, but accessKey=<ak> is not"``;
8. each needed resource: ``"No permission for topic:<t>"`` / ``"group:<g>"`` when listed and
   refused, ``"No default permission for …"`` when the default refuses.

Denials are answered NO_PERMISSION (16) with that remark. (Java 4.9–5.2 brokers let the
``AclException`` escape the RPC hook and answer SYSTEM_ERROR (1) with the remark
``"org.apache.rocketmq.acl.common.AclException: <message>, <stack frame>"``; 5.3's ACL 2.0
answers NO_PERMISSION.)
"""

from __future__ import annotations

import hmac
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from ..protocol.codes import ResponseCode
from ..protocol.command import RemotingCommand
from .config import AclConfig, PlainAccessConfig, load_acl_file
from .errors import AclError
from .permission import ADMIN_CODES, AccessResource, Permission, check_permission, parse_access_resource
from .permission import print_resource as _print
from .signer import cal_signature

__all__ = ["PlainPermissionManager"]

log = logging.getLogger(__name__)

#: ``TopicValidator.RMQ_SYS_TRACE_TOPIC``.
TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"


def _java_string_hash(text: str) -> int:
    """``String.hashCode`` (UTF-16 code units, 32-bit overflow)."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h


def java_hash_map_order(keys: list[str]) -> dict[str, int]:
    """Position of each key when a ``java.util.HashMap`` filled with ``keys`` (in this order) is
    iterated: by bucket ``(h ^ h >>> 16) & (capacity - 1)`` at the final capacity (16, doubled
    while the size exceeds 3/4 of it), then by insertion within a bucket."""
    capacity = 16
    while len(keys) > capacity * 3 // 4:
        capacity *= 2
    order = sorted(
        range(len(keys)), key=lambda i: (((h := _java_string_hash(keys[i])) ^ (h >> 16)) & (capacity - 1), i)
    )
    return {keys[i]: pos for pos, i in enumerate(order)}


class _Peer(Protocol):
    @property
    def remote_address(self) -> str: ...


class PlainPermissionManager:
    """The ACL rules of one plain_acl.yml file, and the per-request check.

    Args:
        path: the ACL file (YAML, see :mod:`rocketpipe.acl.config`).
        reload_interval: seconds between looks at the file's mtime (0 = every request).
        admin_codes: request codes reserved to admin accounts (default :data:`ADMIN_CODES`;
            pass :data:`~.permission.JAVA_ADMIN_CODES` for Java's exact set).
        monotonic: the clock of the reload interval (seconds).

    Raises:
        AclError: the file is missing or malformed at construction.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        reload_interval: float = 1.0,
        admin_codes: frozenset[int] = ADMIN_CODES,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = Path(path)
        self.reload_interval = reload_interval
        self.admin_codes = admin_codes
        self._monotonic = monotonic
        self._stamp = self._file_stamp()
        self.config: AclConfig = load_acl_file(self.path)
        self._next_look = monotonic() + reload_interval
        #: how many times the file was (re)loaded successfully, the first load included.
        self.loads = 1

    def _file_stamp(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size

    def reload_if_changed(self) -> bool:
        """Reload the file when its mtime or size changed; True when new rules were loaded.

        A file that is gone or malformed is logged and the current rules are kept.
        """
        stamp = self._file_stamp()
        if stamp == self._stamp or stamp is None:
            return False
        self._stamp = stamp
        try:
            config = load_acl_file(self.path)
        except AclError as err:
            log.error("ACL file not reloaded, the previous rules stay: %s", err)
            return False
        self.config = config
        self.loads += 1
        log.info("ACL file reloaded path=%s accounts=%d", self.path, len(config.accounts))
        return True

    def validate(self, cmd: RemotingCommand, remote_address: str) -> None:
        """Check request ``cmd`` from ``"ip:port"``; return when allowed.

        Raises:
            AclError: the request is refused (Java's message as text).
        """
        now = self._monotonic()
        if now >= self._next_look:
            self._next_look = now + self.reload_interval
            self.reload_if_changed()
        res = parse_access_resource(cmd, remote_address)
        config = self.config
        for strategy in config.global_white_remote_addresses:
            if strategy.match(res.remote_ip):
                return
        if res.access_key is None:
            raise AclError("No accessKey is configured")
        owned = config.accounts.get(res.access_key)
        if owned is None:
            raise AclError(f"No acl config for {res.access_key}")
        if owned.white_remote_address.match(res.remote_ip):
            return
        expected = cal_signature(res.content, owned.secret_key, res.body)
        if res.signature is None or not hmac.compare_digest(expected, res.signature):
            raise AclError(f"Check signature failed for accessKey={res.access_key}")
        if res.resource_perms.get(TRACE_TOPIC) == Permission.PUB:
            return
        self._check_perm(res, owned)

    def _check_perm(self, res: AccessResource, owned: PlainAccessConfig) -> None:
        """``PlainPermissionChecker.check``."""
        if owned.admin:
            return
        if res.request_code in self.admin_codes:
            raise AclError(
                f"Need admin permission for request code={res.request_code}, but accessKey={owned.access_key} is not"
            )
        denied: list[tuple[str, str]] = []
        for resource, needed in res.resource_perms.items():
            is_group = resource.startswith("%RETRY%")
            perm = owned.resource_perms.get(resource)
            if perm is None:
                default = owned.default_group_perm if is_group else owned.default_topic_perm
                if not check_permission(needed, default):
                    denied.append((resource, f"No default permission for {_print(resource)}"))
            elif not check_permission(needed, perm):
                denied.append((resource, f"No permission for {_print(resource)}"))
        if denied:
            # Java walks a HashMap and reports the first refusal in *its* order
            first = java_hash_map_order(list(res.resource_perms))
            raise AclError(min(denied, key=lambda d: first[d[0]])[1])

    def guard(self, cmd: RemotingCommand, conn: _Peer) -> RemotingCommand | None:
        """The router guard: None when ``cmd`` may run, else the NO_PERMISSION response."""
        try:
            self.validate(cmd, conn.remote_address)
        except AclError as err:
            log.debug("ACL denied peer=%s code=%d reason=%s", conn.remote_address, cmd.code, err)
            return cmd.response(ResponseCode.NO_PERMISSION, err.remark)
        except Exception as err:  # a request the parser cannot read is refused, never let through
            log.warning("ACL check failed peer=%s code=%d error=%r", conn.remote_address, cmd.code, err)
            return cmd.response(ResponseCode.NO_PERMISSION, f"{type(err).__name__}: {err}")
        return None
