"""TLS of the gRPC endpoint: grpc's SSL server credentials from the same
:class:`~rocketpipe.transport.TlsServerConfig` (``tls.server.*``) as the remoting servers.

Modes: ``disabled`` serves plain HTTP/2; ``enforcing`` serves TLS only (a plain client's
connection fails). ``permissive`` is refused: Java's proxy (``ProxyAndTlsProtocolNegotiator``)
tells a TLS handshake from plain HTTP/2 on one port, grpc's Python server cannot.
``need_client_auth``: ``none``, or ``require`` (mutual TLS against ``trust_cert_path``);
``optional`` is refused (grpc's Python server either requires and verifies a client certificate
or asks for none). Java's default, a self-signed certificate made at start
(``tls.test.mode.enable``), is not done: ``enforcing`` needs a certificate and key.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

import grpc

from ..errors import InvalidArgumentError
from ..transport import TlsServerConfig

__all__ = ["check_grpc_tls", "server_credentials"]

_PEM_KEY: Final = re.compile(rb"-----BEGIN ([A-Z ]*)PRIVATE KEY-----.*?-----END \1PRIVATE KEY-----\r?\n?", re.S)
_PEM_CERT: Final = re.compile(rb"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----\r?\n?", re.S)


def check_grpc_tls(tls: TlsServerConfig | None) -> None:
    """Refuse the settings grpc's server cannot serve.

    Raises:
        InvalidArgumentError: ``mode`` ``permissive``, or ``need_client_auth`` ``optional``.
    """
    if tls is None or tls.mode == "disabled":
        return
    if tls.mode == "permissive":
        raise InvalidArgumentError(
            "the gRPC endpoint serves plain (tls.server.mode=disabled) or TLS (enforcing) on its port, "
            "not both (permissive)"
        )
    if tls.need_client_auth == "optional":
        raise InvalidArgumentError("the gRPC endpoint takes tls.server.need.client.auth none or require, not optional")


def _read(setting: str, path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as err:
        raise InvalidArgumentError(f"{setting}: cannot read {path!r}: {err}") from err


def _plain_key(pem: bytes, password: str | None, path: str) -> bytes:
    """The PEM private key unencrypted (grpc takes no password): as is when not encrypted, else
    decrypted with ``cryptography`` (re-encoded PKCS#8, in memory only)."""
    match = _PEM_KEY.search(pem)
    if match is None:
        raise InvalidArgumentError(f"tls.server.keyPath: no PEM private key in {path!r}")
    key = match.group(0)
    if password is None and b"ENCRYPTED" not in key:
        return key
    try:
        from cryptography.hazmat.primitives import serialization
    except ImportError as exc:
        raise InvalidArgumentError(
            f"tls.server.keyPassword: the gRPC endpoint needs the 'cryptography' package to decrypt {path!r}: {exc}"
        ) from None
    try:
        loaded = serialization.load_pem_private_key(key, None if password is None else password.encode("utf-8"))
    except (ValueError, TypeError) as err:
        raise InvalidArgumentError(f"tls.server.keyPassword: cannot decrypt {path!r}: {err}") from None
    return loaded.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def server_credentials(tls: TlsServerConfig) -> grpc.ServerCredentials:
    """grpc SSL server credentials of ``tls`` (``enforcing``); reads the files now.

    The certificate chain is every PEM certificate of ``cert_path``; the key is ``key_path``'s
    (or the private key inside ``cert_path``), decrypted with ``key_password`` when encrypted.
    With ``need_client_auth="require"`` client certificates must chain to ``trust_cert_path``.

    Raises:
        InvalidArgumentError: a mode or client-auth value grpc cannot serve (:func:`check_grpc_tls`),
            a file that cannot be read or holds no PEM certificate / key, a key that does not
            match the certificate or a wrong password (checked with :meth:`TlsServerConfig.server_context`).
    """
    check_grpc_tls(tls)
    if tls.cert_path is None:
        raise InvalidArgumentError("tls.server.mode=enforcing needs tls.server.certPath (cert_path)")
    tls.server_context()  # the checks of the remoting servers: PEM, key matches, password
    cert_pem = _read("tls.server.certPath", tls.cert_path)
    chain = b"".join(m.group(0) for m in _PEM_CERT.finditer(cert_pem))
    if not chain:
        raise InvalidArgumentError(f"tls.server.certPath: no PEM certificate in {tls.cert_path!r}")
    key_path = tls.key_path or tls.cert_path
    key = _plain_key(_read("tls.server.keyPath", key_path), tls.key_password, key_path)
    require = tls.need_client_auth == "require"
    roots = _read("tls.server.trustCertPath", tls.trust_cert_path) if require and tls.trust_cert_path else None
    return grpc.ssl_server_credentials([(key, chain)], root_certificates=roots, require_client_auth=require)
