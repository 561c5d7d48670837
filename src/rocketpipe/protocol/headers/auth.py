"""ACL 2.0 request headers of Apache RocketMQ 5.3 (L1, sans-IO): AUTH_CREATE_USER (3001) …
AUTH_LIST_ACL (3010).

One class per Java header of ``remoting/protocol/header`` (``CreateUserRequestHeader`` …
``ListAclsRequestHeader``). None of their fields is ``@CFNotNull``: the broker checks them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..codes import RequestCode
from .base import CommandHeader, wire

__all__ = [
    "CreateAclRequestHeader",
    "CreateUserRequestHeader",
    "DeleteAclRequestHeader",
    "DeleteUserRequestHeader",
    "GetAclRequestHeader",
    "GetUserRequestHeader",
    "ListAclsRequestHeader",
    "ListUsersRequestHeader",
    "UpdateAclRequestHeader",
    "UpdateUserRequestHeader",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateUserRequestHeader(CommandHeader):
    """AUTH_CREATE_USER (3001): ``username`` (Java ``CreateUserRequestHeader``)."""

    REQUEST_CODE: ClassVar[int] = RequestCode.AUTH_CREATE_USER

    username: str | None = wire("username")


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateUserRequestHeader(CommandHeader):
    """AUTH_UPDATE_USER (3002): ``username`` (Java ``UpdateUserRequestHeader``)."""

    REQUEST_CODE: ClassVar[int] = RequestCode.AUTH_UPDATE_USER

    username: str | None = wire("username")


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteUserRequestHeader(CommandHeader):
    """AUTH_DELETE_USER (3003): ``username`` (Java ``DeleteUserRequestHeader``)."""

    REQUEST_CODE: ClassVar[int] = RequestCode.AUTH_DELETE_USER

    username: str | None = wire("username")


@dataclass(frozen=True, slots=True, kw_only=True)
class GetUserRequestHeader(CommandHeader):
    """AUTH_GET_USER (3004): ``username`` (Java ``GetUserRequestHeader``)."""

    REQUEST_CODE: ClassVar[int] = RequestCode.AUTH_GET_USER

    username: str | None = wire("username")


@dataclass(frozen=True, slots=True, kw_only=True)
class ListUsersRequestHeader(CommandHeader):
    """AUTH_LIST_USER (3005): ``filter``, a substring of the usernames (Java ``ListUsersRequestHeader``)."""

    REQUEST_CODE: ClassVar[int] = RequestCode.AUTH_LIST_USER

    filter: str | None = wire("filter")


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateAclRequestHeader(CommandHeader):
    """AUTH_CREATE_ACL (3006): ``subject`` such as ``User:alice`` (Java ``CreateAclRequestHeader``)."""

    REQUEST_CODE: ClassVar[int] = RequestCode.AUTH_CREATE_ACL

    subject: str | None = wire("subject")


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateAclRequestHeader(CommandHeader):
    """AUTH_UPDATE_ACL (3007): ``subject`` (Java ``UpdateAclRequestHeader``)."""

    REQUEST_CODE: ClassVar[int] = RequestCode.AUTH_UPDATE_ACL

    subject: str | None = wire("subject")


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteAclRequestHeader(CommandHeader):
    """AUTH_DELETE_ACL (3008) (Java ``DeleteAclRequestHeader``).

    Attributes:
        subject: ``User:<name>``.
        policy_type: ``Custom`` (default) or ``Default``.
        resource: one resource key (``Topic:t``); None deletes the whole ACL of the subject.
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.AUTH_DELETE_ACL

    subject: str | None = wire("subject")
    policy_type: str | None = wire("policyType")
    resource: str | None = wire("resource")


@dataclass(frozen=True, slots=True, kw_only=True)
class GetAclRequestHeader(CommandHeader):
    """AUTH_GET_ACL (3009): ``subject`` (Java ``GetAclRequestHeader``)."""

    REQUEST_CODE: ClassVar[int] = RequestCode.AUTH_GET_ACL

    subject: str | None = wire("subject")


@dataclass(frozen=True, slots=True, kw_only=True)
class ListAclsRequestHeader(CommandHeader):
    """AUTH_LIST_ACL (3010): substring filters on the subject and the resources (Java ``ListAclsRequestHeader``)."""

    REQUEST_CODE: ClassVar[int] = RequestCode.AUTH_LIST_ACL

    subject_filter: str | None = wire("subjectFilter")
    resource_filter: str | None = wire("resourceFilter")
