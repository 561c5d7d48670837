"""ACL 2.0 administration of Apache RocketMQ 5.3 (L3, client): users and ACLs on one broker.

Mirrors ``DefaultMQAdminExt`` / ``MQClientAPIImpl`` ``createUser`` … ``listAcl`` (request codes
AUTH_CREATE_USER 3001 … AUTH_LIST_ACL 3010, bodies :class:`~rocketpipe.protocol.bodies.auth.UserInfo`
and :class:`~rocketpipe.protocol.bodies.auth.AclInfo`). Each call goes to one broker address
(``"host:port"``); the ``Admin``'s credentials sign it, so with ``authorizationEnabled`` the
signer must be a Super user or hold ``Cluster:<cluster>`` Update (writes) / Get (reads).

Use the functions with an :class:`~rocketpipe.client.Admin`, or mix :class:`AdminAclMixin` into it::

    await create_user(admin, broker, "alice", "alice-secret")
    await create_acl(admin, broker, "User:alice", ["Topic:Orders"], ["Pub"], None, "Allow")

Errors: a refusal raises the :class:`~rocketpipe.errors.BrokerError` of the answer's code
(NoPermissionError for 16 with Java's message as ``remark``; InvalidParameterError for
``"The username is blank"``); TransportError when the broker is unreachable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ..errors import error_for_response
from ..protocol.bodies.auth import AclInfo, UserInfo, acl_infos, user_infos
from ..protocol.codes import RequestCode, ResponseCode
from ..protocol.command import RemotingCommand
from ..protocol.headers.auth import (
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
from ..protocol.headers.base import CommandHeader

if TYPE_CHECKING:
    from .runtime import ClientRuntime

__all__ = [
    "AdminAclMixin",
    "create_acl",
    "create_user",
    "delete_acl",
    "delete_user",
    "get_acl",
    "get_user",
    "list_acl",
    "list_users",
    "update_acl",
    "update_user",
]


class _HasRuntime(Protocol):
    @property
    def runtime(self) -> ClientRuntime: ...


async def _call(admin: _HasRuntime, addr: str, code: int, header: CommandHeader, body: bytes = b"") -> RemotingCommand:
    cmd = RemotingCommand.request(code, header.to_ext_fields(), body=body)
    runtime = admin.runtime
    resp = await runtime.pool.request(addr, cmd, runtime.config.request_timeout)
    if resp.code != ResponseCode.SUCCESS:
        raise error_for_response(resp.code, resp.remark)
    return resp


async def create_user(
    admin: _HasRuntime,
    broker_addr: str,
    username: str,
    password: str,
    user_type: str | None = None,
    user_status: str | None = None,
) -> None:
    """AUTH_CREATE_USER: a user ``username`` / ``password`` of type ``Super`` or ``Normal``
    (None: Normal) and status ``enable`` / ``disable`` (None: enable).

    Raises:
        NoPermissionError: ``"The user is existed"``, ``"password can not be blank"``, or not allowed.
        SystemError_: a Super user created by a non-Super signer.
    """
    info = UserInfo(username, password, user_type, user_status)
    await _call(
        admin, broker_addr, RequestCode.AUTH_CREATE_USER, CreateUserRequestHeader(username=username), info.encode()
    )


async def update_user(
    admin: _HasRuntime,
    broker_addr: str,
    username: str,
    password: str | None = None,
    user_type: str | None = None,
    user_status: str | None = None,
) -> None:
    """AUTH_UPDATE_USER: the given (non-None, non-blank) fields replace the user's.

    Raises:
        NoPermissionError: ``"The user is not exist"`` or not allowed.
    """
    info = UserInfo(username, password, user_type, user_status)
    await _call(
        admin, broker_addr, RequestCode.AUTH_UPDATE_USER, UpdateUserRequestHeader(username=username), info.encode()
    )


async def delete_user(admin: _HasRuntime, broker_addr: str, username: str) -> None:
    """AUTH_DELETE_USER: the user and its ACL (an unknown user is no error)."""
    await _call(admin, broker_addr, RequestCode.AUTH_DELETE_USER, DeleteUserRequestHeader(username=username))


async def get_user(admin: _HasRuntime, broker_addr: str, username: str) -> UserInfo | None:
    """AUTH_GET_USER: the user (password included, as Java answers), None when unknown."""
    resp = await _call(admin, broker_addr, RequestCode.AUTH_GET_USER, GetUserRequestHeader(username=username))
    return UserInfo.decode(resp.body) if resp.body else None


async def list_users(admin: _HasRuntime, broker_addr: str, filter_: str | None = None) -> list[UserInfo]:
    """AUTH_LIST_USER: the users whose name contains ``filter_`` (all for None), by name."""
    resp = await _call(admin, broker_addr, RequestCode.AUTH_LIST_USER, ListUsersRequestHeader(filter=filter_))
    return user_infos(resp.body) if resp.body else []


async def create_acl(
    admin: _HasRuntime,
    broker_addr: str,
    subject: str,
    resources: list[str],
    actions: list[str],
    source_ips: list[str] | None,
    decision: str,
) -> None:
    """AUTH_CREATE_ACL: one entry per resource (``Topic:t``, ``Group:g``, ``Topic:pre*``,
    ``Topic:*``, ``*``) with ``actions`` (Pub, Sub, Create, Update, Delete, Get, List, All),
    ``source_ips`` (IPs or CIDRs; None: any) and ``decision`` (Allow / Deny), merged into the
    ACL of ``subject`` (``User:<name>``).

    Raises:
        NoPermissionError: a validation message (``"The resource is null."``, ``"The decision
            is null or illegal."`` …), ``"The subject of User:x is not exist."``, or not allowed.
    """
    info = AclInfo.of(subject, resources, actions, source_ips, decision)
    await _call(admin, broker_addr, RequestCode.AUTH_CREATE_ACL, CreateAclRequestHeader(subject=subject), info.encode())


async def update_acl(
    admin: _HasRuntime,
    broker_addr: str,
    subject: str,
    resources: list[str],
    actions: list[str],
    source_ips: list[str] | None,
    decision: str,
) -> None:
    """AUTH_UPDATE_ACL: the same merge as :func:`create_acl` (Java treats both alike)."""
    info = AclInfo.of(subject, resources, actions, source_ips, decision)
    await _call(admin, broker_addr, RequestCode.AUTH_UPDATE_ACL, UpdateAclRequestHeader(subject=subject), info.encode())


async def delete_acl(
    admin: _HasRuntime, broker_addr: str, subject: str, resource: str | None = None, policy_type: str | None = None
) -> None:
    """AUTH_DELETE_ACL: the entry of ``resource`` (of ``policy_type``, default Custom), or the
    whole ACL of ``subject`` when ``resource`` is None.

    Raises:
        NoPermissionError: ``"The acl is not exist."``, ``"The subject is not exist."`` or not allowed.
    """
    header = DeleteAclRequestHeader(subject=subject, policy_type=policy_type, resource=resource)
    await _call(admin, broker_addr, RequestCode.AUTH_DELETE_ACL, header)


async def get_acl(admin: _HasRuntime, broker_addr: str, subject: str) -> AclInfo | None:
    """AUTH_GET_ACL: the ACL of ``subject``, None when it has none.

    Raises:
        NoPermissionError: ``"The subject is not exist."`` or not allowed.
    """
    resp = await _call(admin, broker_addr, RequestCode.AUTH_GET_ACL, GetAclRequestHeader(subject=subject))
    return AclInfo.decode(resp.body) if resp.body else None


async def list_acl(
    admin: _HasRuntime, broker_addr: str, subject_filter: str | None = None, resource_filter: str | None = None
) -> list[AclInfo]:
    """AUTH_LIST_ACL: the ACLs whose subject contains ``subject_filter``, with the entries whose
    resource contains ``resource_filter`` (Java's filters), by subject."""
    header = ListAclsRequestHeader(subject_filter=subject_filter, resource_filter=resource_filter)
    resp = await _call(admin, broker_addr, RequestCode.AUTH_LIST_ACL, header)
    return acl_infos(resp.body) if resp.body else []


class AdminAclMixin:
    """The functions above as methods of an object with a ``runtime`` (an ``Admin``)."""

    @property
    def runtime(self) -> ClientRuntime:  # provided by Admin
        raise NotImplementedError

    async def create_user(
        self,
        broker_addr: str,
        username: str,
        password: str,
        user_type: str | None = None,
        user_status: str | None = None,
    ) -> None:
        """See :func:`create_user`."""
        await create_user(self, broker_addr, username, password, user_type, user_status)

    async def update_user(
        self,
        broker_addr: str,
        username: str,
        password: str | None = None,
        user_type: str | None = None,
        user_status: str | None = None,
    ) -> None:
        """See :func:`update_user`."""
        await update_user(self, broker_addr, username, password, user_type, user_status)

    async def delete_user(self, broker_addr: str, username: str) -> None:
        """See :func:`delete_user`."""
        await delete_user(self, broker_addr, username)

    async def get_user(self, broker_addr: str, username: str) -> UserInfo | None:
        """See :func:`get_user`."""
        return await get_user(self, broker_addr, username)

    async def list_users(self, broker_addr: str, filter_: str | None = None) -> list[UserInfo]:
        """See :func:`list_users`."""
        return await list_users(self, broker_addr, filter_)

    async def create_acl(
        self,
        broker_addr: str,
        subject: str,
        resources: list[str],
        actions: list[str],
        source_ips: list[str] | None,
        decision: str,
    ) -> None:
        """See :func:`create_acl`."""
        await create_acl(self, broker_addr, subject, resources, actions, source_ips, decision)

    async def update_acl(
        self,
        broker_addr: str,
        subject: str,
        resources: list[str],
        actions: list[str],
        source_ips: list[str] | None,
        decision: str,
    ) -> None:
        """See :func:`update_acl`."""
        await update_acl(self, broker_addr, subject, resources, actions, source_ips, decision)

    async def delete_acl(
        self, broker_addr: str, subject: str, resource: str | None = None, policy_type: str | None = None
    ) -> None:
        """See :func:`delete_acl`."""
        await delete_acl(self, broker_addr, subject, resource, policy_type)

    async def get_acl(self, broker_addr: str, subject: str) -> AclInfo | None:
        """See :func:`get_acl`."""
        return await get_acl(self, broker_addr, subject)

    async def list_acl(
        self, broker_addr: str, subject_filter: str | None = None, resource_filter: str | None = None
    ) -> list[AclInfo]:
        """See :func:`list_acl`."""
        return await list_acl(self, broker_addr, subject_filter, resource_filter)
