"""The ACL error (L2): :class:`AclError`. Imports only :mod:`rocketpipe.errors`."""

from __future__ import annotations

from ..errors import NoPermissionError

__all__ = ["AclError", "AuthenticationError", "AuthorizationError"]


class AclError(NoPermissionError):
    """A request or an ACL file refused by ACL 1.0 (Java ``AclException``).

    Its ``code`` is NO_PERMISSION (16), the code Apache 5.3's broker answers authentication and
    authorization failures with (``AuthenticationPipeline`` / ``AuthorizationPipeline``); ``remark``
    is the Java ``PlainPermissionManager`` message, for example ``"No accessKey is configured"``.
    """


class AuthenticationError(NoPermissionError):
    """ACL 2.0 authentication refused, or a user operation refused (Java ``AuthenticationException``).

    Answered NO_PERMISSION (16) with ``remark`` = Java's message, e.g. ``"User:bob is not found."``.
    """


class AuthorizationError(NoPermissionError):
    """ACL 2.0 authorization refused, or an ACL operation refused (Java ``AuthorizationException``).

    Answered NO_PERMISSION (16) with ``remark`` = Java's message, e.g. ``"User:bob has no
    permission to access Topic:T from 127.0.0.1, no matched policies."``.
    """
