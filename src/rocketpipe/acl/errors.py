"""The ACL error (L2): :class:`AclError`. Imports only :mod:`rocketpipe.errors`."""

from __future__ import annotations

from ..errors import NoPermissionError

__all__ = ["AclError"]


class AclError(NoPermissionError):
    """A request or an ACL file refused by ACL 1.0 (Java ``AclException``).

    Its ``code`` is NO_PERMISSION (16), the code Apache 5.3's broker answers authentication and
    authorization failures with (``AuthenticationPipeline`` / ``AuthorizationPipeline``); ``remark``
    is the Java ``PlainPermissionManager`` message, for example ``"No accessKey is configured"``.
    """
