"""``--access-key`` / ``--secret-key`` for the client commands (L4, cli).

The options fall back to the environment variables ``ROCKETMQ_ACCESS_KEY`` and
``ROCKETMQ_SECRET_KEY``; given together they make the command's clients sign every request
(:class:`rocketpipe.client.config.SessionCredentials`, Java's ``AclClientRPCHook``).

Imports: the public API of :mod:`rocketpipe.client`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import EXIT_USAGE, fail

if TYPE_CHECKING:
    from rocketpipe.client.config import SessionCredentials

__all__ = ["AccessKeyOption", "SecretKeyOption", "credentials_from"]

AccessKeyOption = Annotated[
    str | None,
    typer.Option(
        "--access-key",
        envvar="ROCKETMQ_ACCESS_KEY",
        metavar="AK",
        help="ACL accessKey: sign every request (with --secret-key).",
        show_default=False,
    ),
]
SecretKeyOption = Annotated[
    str | None,
    typer.Option(
        "--secret-key",
        envvar="ROCKETMQ_SECRET_KEY",
        metavar="SK",
        help="ACL secretKey that signs the requests (prefer the environment variable).",
        show_default=False,
        show_envvar=True,
    ),
]


def credentials_from(access_key: str | None, secret_key: str | None) -> SessionCredentials | None:
    """Return the credentials of ``--access-key`` / ``--secret-key``, or None when neither is set.

    Raises:
        typer.Exit: only one of the two is set (exit code 2, usage).
    """
    if not access_key and not secret_key:
        return None
    if not access_key or not secret_key:
        raise fail(
            "--access-key and --secret-key go together (or ROCKETMQ_ACCESS_KEY / ROCKETMQ_SECRET_KEY)", EXIT_USAGE
        )
    from rocketpipe.client.config import SessionCredentials

    return SessionCredentials(access_key, secret_key)
