"""TLS settings (no sockets, no files read): validation of TlsServerConfig, TlsClientConfig and
the ClientConfig / BrokerConfig TLS fields, and the client's handshake error texts."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from rocketpipe.broker.config import BrokerConfig
from rocketpipe.client import ClientConfig
from rocketpipe.errors import ConnectionClosedError, InvalidArgumentError
from rocketpipe.transport import TlsClientConfig, TlsServerConfig
from rocketpipe.transport.tls import TLS_CLIENT_AUTH_MODES, TLS_SERVER_MODES, handshake_error


def test_modes_are_javas() -> None:
    assert TLS_SERVER_MODES == ("disabled", "permissive", "enforcing")
    assert TLS_CLIENT_AUTH_MODES == ("none", "optional", "require")


def test_default_is_disabled_and_needs_nothing() -> None:
    cfg = TlsServerConfig()
    assert cfg.mode == "disabled" and not cfg.enabled
    assert cfg.server_context() is None
    assert BrokerConfig().tls_server == cfg
    assert not BrokerConfig().tls_enable
    assert ClientConfig(namesrv_addr="127.0.0.1:9876").tls_client_config() is None


def test_unknown_mode_is_refused() -> None:
    with pytest.raises(InvalidArgumentError, match=r"tls.server.mode must be one of disabled, permissive, enforcing"):
        TlsServerConfig(mode="strict")  # type: ignore[arg-type]


def test_unknown_client_auth_is_refused() -> None:
    with pytest.raises(InvalidArgumentError, match=r"tls.server.need.client.auth"):
        TlsServerConfig(need_client_auth="always")  # type: ignore[arg-type]


def test_enabled_mode_needs_a_certificate() -> None:
    with pytest.raises(InvalidArgumentError, match=r"needs tls.server.certPath"):
        TlsServerConfig(mode="enforcing")


def test_client_auth_needs_a_trust_cert(tmp_path: Path) -> None:
    cert = tmp_path / "c.pem"
    cert.write_text("x")
    with pytest.raises(InvalidArgumentError, match=r"needs tls.server.trustCertPath"):
        TlsServerConfig(mode="permissive", cert_path=str(cert), need_client_auth="require")


def test_missing_files_are_named(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.pem")
    with pytest.raises(InvalidArgumentError, match=r"tls.server.certPath: no such file .*nope.pem"):
        TlsServerConfig(mode="permissive", cert_path=missing)
    with pytest.raises(InvalidArgumentError, match=r"tls.client.trustCertPath: no such file"):
        TlsClientConfig(trust_cert_path=missing)
    with pytest.raises(InvalidArgumentError, match=r"tls.client.trustCertPath: no such file"):
        ClientConfig(namesrv_addr="127.0.0.1:9876", use_tls=True, tls_client_trust_cert_path=missing)


def test_client_key_needs_a_certificate(tmp_path: Path) -> None:
    key = tmp_path / "k.pem"
    key.write_text("x")
    with pytest.raises(InvalidArgumentError, match=r"tls.client.keyPath needs tls.client.certPath"):
        TlsClientConfig(key_path=str(key))


def test_client_config_maps_to_tls_client_config(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("x")
    cfg = ClientConfig(namesrv_addr="127.0.0.1:9876", use_tls=True, tls_client_trust_cert_path=str(ca))
    assert cfg.tls_client_config() == TlsClientConfig(trust_cert_path=str(ca))
    lax = ClientConfig(namesrv_addr="127.0.0.1:9876", use_tls=True, tls_test_mode_enable=True)
    assert lax.tls_client_config() == TlsClientConfig(test_mode_enable=True)


def test_handshake_errors_name_the_cause() -> None:
    verify = ssl.SSLCertVerificationError(1, "certificate verify failed")
    verify.verify_message = "unable to get local issuer certificate"
    err = handshake_error("127.0.0.1:1", verify)
    assert isinstance(err, ConnectionClosedError)
    assert str(err) == (
        "TLS handshake with 127.0.0.1:1 failed: server certificate not accepted: unable to get local issuer certificate"
    )
    closed = handshake_error("127.0.0.1:1", ConnectionResetError("Connection lost"))
    assert "the server may not speak TLS (tls.server.mode=disabled)" in str(closed)
