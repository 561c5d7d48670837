"""The client commands' connection options (L4, cli): ACL credentials and TLS.

``--access-key`` / ``--secret-key`` fall back to the environment variables
``ROCKETMQ_ACCESS_KEY`` and ``ROCKETMQ_SECRET_KEY``; given together they make the command's
clients sign every request (:class:`rocketpipe.client.config.SessionCredentials`, Java's
``AclClientRPCHook``).

``--use-tls`` (Java ``tls.enable``) makes every connection speak TLS, with
``--tls-client-trust-cert``, ``--tls-client-cert``, ``--tls-client-key``,
``--tls-client-key-password`` (or ``ROCKETMQ_TLS_CLIENT_KEY_PASSWORD``) and
``--tls-test-mode-enable`` (Java's ``tls.client.*`` and ``tls.test.mode.enable``); see
:func:`tls_from`. ``rocketpipe serve`` uses them for the broker's registrations.

Imports: the public API of :mod:`rocketpipe.client` (``rocketpipe.client.config``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import EXIT_USAGE, fail

if TYPE_CHECKING:
    from rocketpipe.client.config import SessionCredentials, TlsClientConfig

__all__ = [
    "AccessKeyOption",
    "SecretKeyOption",
    "TlsClientCertOption",
    "TlsClientKeyOption",
    "TlsClientKeyPasswordOption",
    "TlsClientTrustCertOption",
    "TlsTestModeOption",
    "UseTlsOption",
    "credentials_from",
    "tls_from",
]

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


UseTlsOption = Annotated[
    bool,
    typer.Option(
        "--use-tls",
        help="Connect with TLS to the name servers and brokers (Java: tls.enable / ClientConfig.useTLS).",
    ),
]
TlsClientTrustCertOption = Annotated[
    Path | None,
    typer.Option(
        "--tls-client-trust-cert",
        metavar="PATH",
        help="PEM CA certificates the servers' certificates must chain to (tls.client.trustCertPath; "
        "default: the system's CAs).",
        show_default=False,
    ),
]
TlsClientCertOption = Annotated[
    Path | None,
    typer.Option(
        "--tls-client-cert",
        metavar="PATH",
        help="PEM client certificate for mutual TLS (tls.client.certPath).",
        show_default=False,
    ),
]
TlsClientKeyOption = Annotated[
    Path | None,
    typer.Option(
        "--tls-client-key",
        metavar="PATH",
        help="PEM private key of --tls-client-cert (tls.client.keyPath).",
        show_default=False,
    ),
]
TlsClientKeyPasswordOption = Annotated[
    str | None,
    typer.Option(
        "--tls-client-key-password",
        envvar="ROCKETMQ_TLS_CLIENT_KEY_PASSWORD",
        metavar="PASSWORD",
        help="Password of an encrypted --tls-client-key (tls.client.keyPassword; prefer the environment variable).",
        show_default=False,
        show_envvar=True,
    ),
]
TlsTestModeOption = Annotated[
    bool,
    typer.Option(
        "--tls-test-mode-enable",
        help="Do not verify the servers' certificates (tls.test.mode.enable): encrypted, not authenticated.",
    ),
]


def tls_from(
    use_tls: bool,
    trust_cert: Path | None,
    cert: Path | None,
    key: Path | None,
    key_password: str | None,
    test_mode: bool,
) -> TlsClientConfig | None:
    """Return the TLS settings of ``--use-tls`` and the ``--tls-client-*`` options (None without TLS).

    The files are loaded now, so a bad one stops the command before it connects.

    Raises:
        typer.Exit: a ``--tls-*`` option without ``--use-tls``, a missing or unreadable file, a
            key that does not match its certificate or a wrong password (exit code 2, usage).
    """
    if not use_tls:
        if trust_cert or cert or key or test_mode:
            raise fail("--tls-client-* and --tls-test-mode-enable need --use-tls", EXIT_USAGE)
        return None
    from rocketpipe.client.config import TlsClientConfig
    from rocketpipe.errors import InvalidArgumentError

    try:
        tls = TlsClientConfig(
            trust_cert_path=None if trust_cert is None else str(trust_cert),
            cert_path=None if cert is None else str(cert),
            key_path=None if key is None else str(key),
            key_password=key_password,
            test_mode_enable=test_mode,
        )
        tls.client_context()
    except InvalidArgumentError as exc:
        raise fail(f"--use-tls: {exc}", EXIT_USAGE) from None
    return tls
