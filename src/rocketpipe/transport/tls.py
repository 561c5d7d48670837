"""TLS settings and contexts (L2): :class:`TlsServerConfig`, :class:`TlsClientConfig`.

Apache RocketMQ reads its TLS settings from system properties (``tls.server.mode``,
``tls.server.certPath`` …, ``tls.enable``, ``tls.client.*``; ``TlsSystemConfig``) and builds
Netty ``SslContext``\\ s from them (``TlsHelper.buildSslContext``). rocketpipe takes the same
settings, in snake_case, as two frozen dataclasses and builds :class:`ssl.SSLContext`\\ s.

Server modes (``tls.server.mode``, :data:`TLS_SERVER_MODES`):

* ``disabled``: plain TCP only; the accept path is the plain one (no first-byte look).
* ``permissive``: plain and TLS on one port. The server peeks at the connection's first byte
  before any transport exists: ``0x16`` (a TLS handshake record) means TLS, anything else plain,
  as Java's ``NettyRemotingServer.TlsModeHandler``. A plain connection then runs exactly as in
  ``disabled`` mode (no per-message cost).
* ``enforcing``: TLS only. A plain client's requests are answered ``SYSTEM_ERROR`` with a remark
  saying the server needs TLS, then the connection is closed (Java only closes it).

Differences from Java (on purpose): rocketpipe's default is ``disabled`` (Java's is
``permissive``, with ``tls.test.mode.enable=true`` serving a self-signed certificate); a server
in ``permissive``/``enforcing`` needs ``cert_path`` and ``key_path``; a client verifies the
server's certificate and host name unless ``test_mode_enable`` is set (Java's client trusts any
certificate unless ``tls.client.authServer=true`` and test mode is off); client authentication
(``need_client_auth`` ``optional``/``require``) needs ``trust_cert_path`` (Java's
``tls.server.authClient=false`` accepts any client certificate; Python's ``ssl`` cannot).

Imports: stdlib (ssl), :mod:`rocketpipe.errors`.
"""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass
from typing import Final, Literal, get_args

from ..errors import ConnectionClosedError, InvalidArgumentError

__all__ = [
    "HANDSHAKE_MAGIC_CODE",
    "TLS_CLIENT_AUTH_MODES",
    "TLS_SERVER_MODES",
    "TlsClientAuth",
    "TlsClientConfig",
    "TlsServerConfig",
    "TlsServerMode",
    "handshake_error",
]

#: ``tls.server.mode`` values (Java ``TlsMode``).
TlsServerMode = Literal["disabled", "permissive", "enforcing"]
TLS_SERVER_MODES: Final[tuple[str, ...]] = get_args(TlsServerMode)
#: ``tls.server.need.client.auth`` values (Netty ``ClientAuth``, lower case as Java parses them).
TlsClientAuth = Literal["none", "optional", "require"]
TLS_CLIENT_AUTH_MODES: Final[tuple[str, ...]] = get_args(TlsClientAuth)
#: First byte of a TLS handshake record (``TlsModeHandler.HANDSHAKE_MAGIC_CODE``).
HANDSHAKE_MAGIC_CODE: Final = 0x16

_VERIFY: Final = {"none": ssl.CERT_NONE, "optional": ssl.CERT_OPTIONAL, "require": ssl.CERT_REQUIRED}


def _check_file(setting: str, path: str | None) -> None:
    if path is not None and not os.path.isfile(path):
        raise InvalidArgumentError(f"{setting}: no such file {path!r}")


def _load_chain(ctx: ssl.SSLContext, prefix: str, cert: str, key: str | None, password: str | None) -> None:
    try:
        ctx.load_cert_chain(cert, key, password)
    except (ssl.SSLError, OSError) as err:
        raise InvalidArgumentError(
            f"{prefix}.certPath/keyPath: cannot load certificate {cert!r} with key {key!r}: {err}"
        ) from err


def _load_trust(ctx: ssl.SSLContext, setting: str, path: str) -> None:
    try:
        ctx.load_verify_locations(cafile=path)
    except (ssl.SSLError, OSError) as err:
        raise InvalidArgumentError(f"{setting}: cannot load trusted certificates {path!r}: {err}") from err


@dataclass(frozen=True, slots=True, kw_only=True)
class TlsServerConfig:
    """TLS settings of a listening server (broker or name server).

    Mirrors Java's ``TlsSystemConfig`` server settings (``tls.server.*``).

    Attributes:
        mode: ``tls.server.mode``: ``"disabled"`` (default here; Java's default is
            ``permissive``), ``"permissive"`` (plain and TLS on one port) or ``"enforcing"``.
        cert_path: ``tls.server.certPath``, PEM certificate chain (needed unless disabled).
        key_path: ``tls.server.keyPath``, PEM private key (None: the key is in ``cert_path``).
        key_password: ``tls.server.keyPassword``, password of an encrypted key.
        trust_cert_path: ``tls.server.trustCertPath``, PEM CA certificates that client
            certificates must chain to (needed when ``need_client_auth`` is not ``none``).
        need_client_auth: ``tls.server.need.client.auth``: ``"none"`` (default), ``"optional"``
            (a client certificate, when sent, must verify) or ``"require"`` (mutual TLS).

    Raises:
        InvalidArgumentError: unknown mode or client-auth value, a missing file, or client auth
            without ``trust_cert_path``. Files are read by :meth:`server_context`.
    """

    mode: TlsServerMode = "disabled"
    cert_path: str | None = None
    key_path: str | None = None
    key_password: str | None = None
    trust_cert_path: str | None = None
    need_client_auth: TlsClientAuth = "none"

    def __post_init__(self) -> None:
        if self.mode not in TLS_SERVER_MODES:
            raise InvalidArgumentError(f"tls.server.mode must be one of {', '.join(TLS_SERVER_MODES)}: {self.mode!r}")
        if self.need_client_auth not in TLS_CLIENT_AUTH_MODES:
            raise InvalidArgumentError(
                f"tls.server.need.client.auth must be one of {', '.join(TLS_CLIENT_AUTH_MODES)}: "
                f"{self.need_client_auth!r}"
            )
        if self.mode == "disabled":
            return
        if not self.cert_path:
            raise InvalidArgumentError(f"tls.server.mode={self.mode} needs tls.server.certPath (cert_path)")
        if self.need_client_auth != "none" and not self.trust_cert_path:
            raise InvalidArgumentError(
                f"tls.server.need.client.auth={self.need_client_auth} needs tls.server.trustCertPath "
                "(trust_cert_path): the CA that client certificates must chain to"
            )
        _check_file("tls.server.certPath", self.cert_path)
        _check_file("tls.server.keyPath", self.key_path)
        _check_file("tls.server.trustCertPath", self.trust_cert_path)

    @property
    def enabled(self) -> bool:
        """True in ``permissive`` and ``enforcing`` modes."""
        return self.mode != "disabled"

    def server_context(self) -> ssl.SSLContext | None:
        """Build the server-side context (None when disabled); reads the files now.

        Raises:
            InvalidArgumentError: a file cannot be read or is not a PEM certificate / key (or
                the key does not match the certificate, or the password is wrong).
        """
        if self.mode == "disabled" or self.cert_path is None:
            return None
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        _load_chain(ctx, "tls.server", self.cert_path, self.key_path, self.key_password)
        if self.trust_cert_path:
            _load_trust(ctx, "tls.server.trustCertPath", self.trust_cert_path)
        ctx.verify_mode = _VERIFY[self.need_client_auth]
        return ctx


@dataclass(frozen=True, slots=True, kw_only=True)
class TlsClientConfig:
    """TLS settings of the connecting side (clients, and a broker towards its name servers).

    Mirrors Java's ``TlsSystemConfig`` client settings (``tls.client.*``, ``tls.test.mode.enable``).

    Attributes:
        trust_cert_path: ``tls.client.trustCertPath``, PEM CA certificates the server's
            certificate must chain to (None: the system's default CAs).
        cert_path: ``tls.client.certPath``, PEM client certificate for mutual TLS (None: none sent).
        key_path: ``tls.client.keyPath``, its PEM private key (None: the key is in ``cert_path``).
        key_password: ``tls.client.keyPassword``, password of an encrypted key.
        test_mode_enable: ``tls.test.mode.enable``: True skips the server certificate and host
            name checks (encryption without authentication; Java's default is True, here False).

    Raises:
        InvalidArgumentError: a named file does not exist, or ``key_path`` without ``cert_path``.
    """

    trust_cert_path: str | None = None
    cert_path: str | None = None
    key_path: str | None = None
    key_password: str | None = None
    test_mode_enable: bool = False

    def __post_init__(self) -> None:
        if self.key_path and not self.cert_path:
            raise InvalidArgumentError("tls.client.keyPath needs tls.client.certPath (cert_path)")
        _check_file("tls.client.trustCertPath", self.trust_cert_path)
        _check_file("tls.client.certPath", self.cert_path)
        _check_file("tls.client.keyPath", self.key_path)

    def client_context(self) -> ssl.SSLContext:
        """Build the client-side context; reads the files now.

        Returns:
            A context that verifies the server's certificate against ``trust_cert_path`` (or the
            system CAs) and its host name against the address connected to, unless
            ``test_mode_enable``.

        Raises:
            InvalidArgumentError: a file cannot be read or is not PEM (or the key does not match).
        """
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        if self.test_mode_enable:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        elif self.trust_cert_path:
            _load_trust(ctx, "tls.client.trustCertPath", self.trust_cert_path)
        else:
            ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
        if self.cert_path:
            _load_chain(ctx, "tls.client", self.cert_path, self.key_path, self.key_password)
        return ctx


def handshake_error(addr: str, err: BaseException) -> ConnectionClosedError:
    """The error a client raises when the TLS handshake with ``addr`` fails, naming the cause.

    Verification failures carry OpenSSL's reason (``certificate verify failed: unable to get
    local issuer certificate`` …); a connection closed during the handshake says the server may
    not speak TLS (``tls.server.mode=disabled``) or refused the client's certificate.
    """
    if isinstance(err, ssl.SSLCertVerificationError):
        reason = f"server certificate not accepted: {err.verify_message or err}"
    elif isinstance(err, ssl.SSLError):
        reason = f"{err.reason or err}"
        if err.reason and "ALERT" in err.reason.upper():
            reason += " (the server refused this client's certificate, or sent none it accepts)"
    else:
        reason = (
            f"connection closed during the handshake ({err or type(err).__name__}): the server may not "
            "speak TLS (tls.server.mode=disabled) or refused this client's certificate"
        )
    return ConnectionClosedError(f"TLS handshake with {addr} failed: {reason}")
