"""ACL 2.0 user and ACL management of Apache RocketMQ 5.3: AUTH_CREATE_USER (3001) … AUTH_LIST_ACL (3010).

Mirrors the matching handlers of Java 5.3's ``AdminBrokerProcessor`` (``createUser`` … ``listAcl``,
``isNotSuperUserLogin``, ``handleAuthException``) over :class:`rocketpipe.acl.AuthMetadata`.
Answers: SUCCESS; INVALID_PARAMETER ``"The username is blank"``; NO_PERMISSION with Java's
``AuthenticationException`` / ``AuthorizationException`` message (``"The user is existed"``,
``"The subject of User:x is not exist."`` …); SYSTEM_ERROR for the checks Java makes outside its
exception handler (``"The super user can only be create by super user"``, a missing body).

The users and ACLs live in ``<store_dir>/config/authMetadata.json`` (Java: RocksDB under
``config/users`` and ``config/acls``), written atomically after each change, before the answer,
and read back at start. The Super users of ``init_authentication_user`` and
``inner_client_authentication_credentials`` are created at start when missing (Java's ``initUser``).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from ...acl.auth_metadata import AuthMetadata, acl_info_of, user_info_of, user_of
from ...acl.auth_model import UserType, subject_username
from ...acl.errors import AuthenticationError, AuthorizationError
from ...acl.signer import ACCESS_KEY
from ...backup_file import read_with_backup
from ...errors import ProtocolError
from ...protocol.bodies.auth import AclInfo, UserInfo
from ...protocol.codes import RequestCode, ResponseCode
from ...protocol.command import RemotingCommand
from ...protocol.headers.auth import (
    CreateAclRequestHeader,
    CreateUserRequestHeader,
    DeleteAclRequestHeader,
    DeleteUserRequestHeader,
    GetAclRequestHeader,
    GetUserRequestHeader,
    ListAclsRequestHeader,
    ListUsersRequestHeader,
    UpdateAclRequestHeader,
    UpdateUserRequestHeader,
)
from ...store.json_file import save_json
from ...transport import Connection, Router
from ..config import init_user_credentials
from ..context import BrokerContext
from .common import decode_header, error

log = logging.getLogger(__name__)

#: the file of the users and ACLs under ``<store_dir>/config``.
AUTH_METADATA_FILE = "authMetadata.json"


def load_auth_metadata(path: Path, *, recover: bool = False) -> AuthMetadata:
    """Read the users and ACLs saved at ``path`` (or its ``.bak``); empty when neither exists.

    Raises:
        MetadataError: both copies are unreadable and ``recover`` is False.
    """

    def decode(data: bytes) -> AuthMetadata:
        import orjson

        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError as err:
            raise ValueError(f"not JSON ({err})") from None
        return AuthMetadata.from_json(obj)

    loaded = read_with_backup(path, decode, recover=recover)
    return loaded.value if loaded.value is not None else AuthMetadata()


class AuthProcessor:
    """Handlers of the ACL 2.0 user and ACL requests.

    Attributes:
        metadata: the users and ACLs (also read by the broker's :class:`~rocketpipe.acl.AuthChecker`).
        path: the JSON file they are saved to.
    """

    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker
        config = broker.config
        self.path = broker.config_dir / AUTH_METADATA_FILE
        self.metadata = load_auth_metadata(self.path, recover=config.recover_metadata)
        self._lock = asyncio.Lock()
        created = self._init_users()
        if created:
            save_json(self.path, self.metadata.to_json())
            log.info("ACL 2.0 init users created count=%d path=%s", created, self.path)

    def _init_users(self) -> int:
        """Java's ``initUser``: the init and inner users, as Super, when missing; how many were created."""
        config = self.broker.config
        wanted: list[tuple[str, str]] = []
        if config.init_authentication_user:
            wanted.append(init_user_credentials(config.init_authentication_user))
        inner = config.inner_client_authentication_credentials
        if inner is not None:
            wanted.append((inner.access_key, inner.secret_key))
        created = 0
        for username, password in wanted:
            if username not in self.metadata.users:
                self.metadata.create_user(username, password, UserType.SUPER)
                created += 1
        return created

    def register(self, router: Router) -> None:
        """Register the handlers on ``router``."""
        router.register(RequestCode.AUTH_CREATE_USER, self.create_user)
        router.register(RequestCode.AUTH_UPDATE_USER, self.update_user)
        router.register(RequestCode.AUTH_DELETE_USER, self.delete_user)
        router.register(RequestCode.AUTH_GET_USER, self.get_user)
        router.register(RequestCode.AUTH_LIST_USER, self.list_user)
        router.register(RequestCode.AUTH_CREATE_ACL, self.create_acl)
        router.register(RequestCode.AUTH_UPDATE_ACL, self.update_acl)
        router.register(RequestCode.AUTH_DELETE_ACL, self.delete_acl)
        router.register(RequestCode.AUTH_GET_ACL, self.get_acl)
        router.register(RequestCode.AUTH_LIST_ACL, self.list_acl)

    # ------------------------------------------------------------------------------ helpers

    async def _save(self) -> None:
        """Write the tables (atomically, in a worker thread); the caller holds ``_lock``."""
        await asyncio.to_thread(save_json, self.path, self.metadata.to_json())

    def _not_super_login(self, cmd: RemotingCommand) -> bool:
        """``isNotSuperUserLogin``: signed by a known non-Super user (unsigned: False)."""
        access_key = (cmd.ext_fields or {}).get(ACCESS_KEY)
        if not access_key:
            return False
        user = self.metadata.users.get(access_key)
        return user is None or user.user_type is not UserType.SUPER

    @staticmethod
    def _user_body(cmd: RemotingCommand) -> UserInfo | None:
        if not cmd.body:
            return None
        return UserInfo.decode(cmd.body)

    @staticmethod
    def _refused(cmd: RemotingCommand, err: AuthenticationError | AuthorizationError) -> RemotingCommand:
        return error(cmd, ResponseCode.NO_PERMISSION, err.remark)

    # -------------------------------------------------------------------------------- users

    async def create_user(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """AUTH_CREATE_USER: the header's username, the body's password, type and status."""
        return await self._put_user(cmd, create=True)

    async def update_user(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """AUTH_UPDATE_USER: the body's non-blank fields replace the user's."""
        return await self._put_user(cmd, create=False)

    async def _put_user(self, cmd: RemotingCommand, *, create: bool) -> RemotingCommand:
        username = (
            decode_header(CreateUserRequestHeader, cmd).username
            if create
            else decode_header(UpdateUserRequestHeader, cmd).username
        )
        if not username:
            return error(cmd, ResponseCode.INVALID_PARAMETER, "The username is blank")
        try:
            info = self._user_body(cmd)
        except ProtocolError as err:
            return error(cmd, ResponseCode.SYSTEM_ERROR, str(err))
        if info is None:
            return error(cmd, ResponseCode.SYSTEM_ERROR, "The body of user is null")
        _, password, user_type, status = user_of(info)
        verb = "create" if create else "update"
        if user_type is UserType.SUPER and self._not_super_login(cmd):
            return error(cmd, ResponseCode.SYSTEM_ERROR, f"The super user can only be {verb} by super user")
        async with self._lock:
            md = self.metadata
            try:
                if create:
                    md.create_user(username, password, user_type, status)
                else:
                    old = md.users.get(username)
                    if old is None:
                        raise AuthenticationError("The user is not exist")
                    if old.user_type is UserType.SUPER and self._not_super_login(cmd):
                        raise AuthenticationError("The super user can only be update by super user")
                    md.update_user(username, password, user_type, status)
            except AuthenticationError as err:
                return self._refused(cmd, err)
            await self._save()
        return cmd.response(ResponseCode.SUCCESS)

    async def delete_user(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """AUTH_DELETE_USER: the user and its ACL; an unknown user is a success."""
        h = decode_header(DeleteUserRequestHeader, cmd)
        async with self._lock:
            md = self.metadata
            try:
                user = md.get_user(h.username)
                if user is None:
                    return cmd.response(ResponseCode.SUCCESS)
                if user.user_type is UserType.SUPER and self._not_super_login(cmd):
                    raise AuthenticationError("The super user can only be update by super user")
                md.delete_user(h.username)
            except AuthenticationError as err:
                return self._refused(cmd, err)
            await self._save()
        return cmd.response(ResponseCode.SUCCESS)

    async def get_user(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """AUTH_GET_USER: body ``UserInfo`` (password included), no body for an unknown user."""
        h = decode_header(GetUserRequestHeader, cmd)
        if not h.username or not h.username.strip():
            return error(cmd, ResponseCode.INVALID_PARAMETER, "The username is blank")
        user = self.metadata.users.get(h.username)
        body = b"" if user is None else user_info_of(user).encode()
        return cmd.response(ResponseCode.SUCCESS, body=body)

    async def list_user(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """AUTH_LIST_USER: body ``List<UserInfo>`` of the usernames containing ``filter``."""
        h = decode_header(ListUsersRequestHeader, cmd)
        users = self.metadata.list_users(h.filter)
        if not users:
            return cmd.response(ResponseCode.SUCCESS)
        body = b"[" + b",".join(user_info_of(u).encode() for u in users) + b"]"
        return cmd.response(ResponseCode.SUCCESS, body=body)

    # --------------------------------------------------------------------------------- ACLs

    async def create_acl(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """AUTH_CREATE_ACL: merge the body's policies into the subject's ACL."""
        return await self._put_acl(cmd, decode_header(CreateAclRequestHeader, cmd).subject)

    async def update_acl(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """AUTH_UPDATE_ACL: the same merge as create (as Java)."""
        return await self._put_acl(cmd, decode_header(UpdateAclRequestHeader, cmd).subject)

    async def _put_acl(self, cmd: RemotingCommand, subject: str | None) -> RemotingCommand:
        try:
            info = AclInfo.decode(cmd.body) if cmd.body else None
        except ProtocolError as err:
            return error(cmd, ResponseCode.SYSTEM_ERROR, str(err))
        if info is None or not info.policies:
            return error(cmd, ResponseCode.SYSTEM_ERROR, "The body of acl is null")
        async with self._lock:
            try:
                self.metadata.put_acl(subject, info)
            except AuthorizationError as err:
                return self._refused(cmd, err)
            await self._save()
        return cmd.response(ResponseCode.SUCCESS)

    async def delete_acl(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """AUTH_DELETE_ACL: one resource's entry, or the whole ACL without ``resource``."""
        h = decode_header(DeleteAclRequestHeader, cmd)
        async with self._lock:
            try:
                self.metadata.delete_acl(h.subject, h.policy_type, h.resource)
            except AuthorizationError as err:
                return self._refused(cmd, err)
            await self._save()
        return cmd.response(ResponseCode.SUCCESS)

    async def get_acl(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """AUTH_GET_ACL: body ``AclInfo``, no body when the subject has no ACL."""
        h = decode_header(GetAclRequestHeader, cmd)
        try:
            policies = self.metadata.get_acl(h.subject)
        except AuthorizationError as err:
            return self._refused(cmd, err)
        if policies is None:
            return cmd.response(ResponseCode.SUCCESS)
        key = f"User:{subject_username(h.subject)}"
        return cmd.response(ResponseCode.SUCCESS, body=acl_info_of(key, policies).encode())

    async def list_acl(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """AUTH_LIST_ACL: body ``List<AclInfo>`` filtered by subject and resource substrings."""
        h = decode_header(ListAclsRequestHeader, cmd)
        acls = self.metadata.list_acls(h.subject_filter, h.resource_filter)
        if not acls:
            return cmd.response(ResponseCode.SUCCESS)
        return cmd.response(ResponseCode.SUCCESS, body=b"[" + b",".join(a.encode() for a in acls) + b"]")
