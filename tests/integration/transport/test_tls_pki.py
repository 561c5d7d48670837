"""Test certificates made at test time with ``cryptography`` (a CA, server and client certificates,
a second CA that signed nothing the servers use), plus checks that the TLS settings load them and
refuse bad files with an error naming the setting.

Other TLS tests import :func:`make_pki` (``from integration.transport.test_tls_pki import ...``).
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from rocketpipe.errors import InvalidArgumentError
from rocketpipe.transport import TlsClientConfig, TlsServerConfig

KEY_PASSWORD = "server-key-pass"


@dataclass(frozen=True)
class Pki:
    """Paths of PEM files: ``ca`` signed ``server``/``client`` and ``elsewhere`` (a server certificate
    for ``elsewhere.invalid`` only); ``other_ca`` signed ``other_server``."""

    ca: str
    server_cert: str
    server_key: str
    server_key_encrypted: str
    client_cert: str
    client_key: str
    other_ca: str
    other_server_cert: str
    other_server_key: str
    elsewhere_cert: str
    elsewhere_key: str


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _cert(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: str,
    issuer_key: ec.EllipticCurvePrivateKey,
    *,
    ca: bool = False,
    server: bool = False,
    names: list[x509.GeneralName] | None = None,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        builder = builder.add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    else:
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False
        )
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(
                names or [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
    return builder.sign(issuer_key, hashes.SHA256())


def _write_cert(path: Path, cert: x509.Certificate) -> str:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return str(path)


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey, password: str | None = None) -> str:
    encryption: serialization.KeySerializationEncryption = (
        serialization.NoEncryption() if password is None else serialization.BestAvailableEncryption(password.encode())
    )
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption))
    return str(path)


def make_pki(directory: Path) -> Pki:
    """Write a CA, a server certificate for 127.0.0.1/localhost, a client certificate and a second
    CA with its own server certificate into ``directory``; keys are EC P-256, PKCS#8 PEM."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _cert("rocketpipe-test-ca", ca_key, "rocketpipe-test-ca", ca_key, ca=True)
    server_key = ec.generate_private_key(ec.SECP256R1())
    server = _cert("127.0.0.1", server_key, "rocketpipe-test-ca", ca_key, server=True)
    client_key = ec.generate_private_key(ec.SECP256R1())
    client = _cert("rocketpipe-test-client", client_key, "rocketpipe-test-ca", ca_key)
    other_key = ec.generate_private_key(ec.SECP256R1())
    other = _cert("other-test-ca", other_key, "other-test-ca", other_key, ca=True)
    other_server_key = ec.generate_private_key(ec.SECP256R1())
    other_server = _cert("127.0.0.1", other_server_key, "other-test-ca", other_key, server=True)
    elsewhere_key = ec.generate_private_key(ec.SECP256R1())
    elsewhere = _cert(
        "elsewhere.invalid", elsewhere_key, "rocketpipe-test-ca", ca_key, server=True,
        names=[x509.DNSName("elsewhere.invalid")],
    )  # fmt: skip
    return Pki(
        ca=_write_cert(directory / "ca.pem", ca),
        server_cert=_write_cert(directory / "server.pem", server),
        server_key=_write_key(directory / "server.key", server_key),
        server_key_encrypted=_write_key(directory / "server-enc.key", server_key, KEY_PASSWORD),
        client_cert=_write_cert(directory / "client.pem", client),
        client_key=_write_key(directory / "client.key", client_key),
        other_ca=_write_cert(directory / "other-ca.pem", other),
        other_server_cert=_write_cert(directory / "other-server.pem", other_server),
        other_server_key=_write_key(directory / "other-server.key", other_server_key),
        elsewhere_cert=_write_cert(directory / "elsewhere.pem", elsewhere),
        elsewhere_key=_write_key(directory / "elsewhere.key", elsewhere_key),
    )


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def test_server_context_loads_the_made_certificates(pki: Pki) -> None:
    ctx = TlsServerConfig(
        mode="enforcing", cert_path=pki.server_cert, key_path=pki.server_key,
        trust_cert_path=pki.ca, need_client_auth="require",
    ).server_context()  # fmt: skip
    assert ctx is not None
    assert ctx.verify_mode == ssl.CERT_REQUIRED


def test_encrypted_key_needs_its_password(pki: Pki) -> None:
    ok = TlsServerConfig(
        mode="permissive", cert_path=pki.server_cert, key_path=pki.server_key_encrypted, key_password=KEY_PASSWORD
    )
    assert ok.server_context() is not None
    wrong = TlsServerConfig(
        mode="permissive", cert_path=pki.server_cert, key_path=pki.server_key_encrypted, key_password="nope"
    )
    with pytest.raises(InvalidArgumentError, match=r"tls.server.certPath/keyPath"):
        wrong.server_context()


def test_key_of_another_certificate_is_refused(pki: Pki) -> None:
    cfg = TlsServerConfig(mode="enforcing", cert_path=pki.server_cert, key_path=pki.client_key)
    with pytest.raises(InvalidArgumentError, match=r"cannot load certificate"):
        cfg.server_context()


def test_not_a_pem_file_is_refused(pki: Pki, tmp_path: Path) -> None:
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    with pytest.raises(InvalidArgumentError, match=r"cannot load certificate"):
        TlsServerConfig(mode="enforcing", cert_path=str(junk), key_path=pki.server_key).server_context()
    with pytest.raises(InvalidArgumentError, match=r"tls.client.trustCertPath"):
        TlsClientConfig(trust_cert_path=str(junk)).client_context()


def test_client_context_verifies_unless_test_mode(pki: Pki) -> None:
    strict = TlsClientConfig(trust_cert_path=pki.ca, cert_path=pki.client_cert, key_path=pki.client_key)
    ctx = strict.client_context()
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    lax = TlsClientConfig(test_mode_enable=True).client_context()
    assert lax.verify_mode == ssl.CERT_NONE and not lax.check_hostname
