"""The gRPC endpoint's authentication (:mod:`rocketpipe.proxy.auth`: the SDKs' ``authorization``
metadata checked with Java 5.3.3's messages, the remoting calls signed as the caller), its TLS
settings (:mod:`rocketpipe.proxy.tls`) and the CLI's usage errors for them. No network."""

from __future__ import annotations

import asyncio
import contextvars
from pathlib import Path
from types import SimpleNamespace

import pytest
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.v5.util.signature import Signature
from typer.testing import CliRunner

from rocketpipe.acl.signer import ACCESS_KEY, SIGNATURE, SessionCredentials, cal_signature, signed_fields_text
from rocketpipe.cli.main import app
from rocketpipe.errors import InvalidArgumentError, NoPermissionError
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.proxy.auth import (
    CALLER,
    Account,
    AclFileAccounts,
    AuthenticationError,
    CallerSigner,
    StaticAccounts,
    authenticate,
    parse_authorization,
    signature_hex,
)
from rocketpipe.proxy.convert import error_status
from rocketpipe.proxy.tls import check_grpc_tls, server_credentials
from rocketpipe.transport import TlsServerConfig

DATE = "20250101T120000Z"
SOURCE = StaticAccounts({"app1": "app1-secret"})


def header(ak: str = "app1", signature: str | None = None) -> str:
    sig = signature_hex("app1-secret", DATE) if signature is None else signature
    return f"MQv2-HMAC-SHA1 Credential={ak}, SignedHeaders=x-mq-date-time, Signature={sig}"


def md(authorization: str | None, date: str | None = DATE) -> list[tuple[str, str]]:
    out = [("x-mq-client-id", "c1")]
    if authorization is not None:
        out.append(("authorization", authorization))
    if date is not None:
        out.append(("x-mq-date-time", date))
    return out


def run_auth(metadata: list[tuple[str, str]], source: object = SOURCE) -> SessionCredentials:
    return asyncio.run(authenticate(metadata, source))  # type: ignore[arg-type]


def test_the_sdks_own_metadata_authenticates() -> None:
    config = SimpleNamespace(credentials=SimpleNamespace(ak="app1", sk="app1-secret"), namespace="")
    creds = run_auth(Signature.metadata(config, "client-1"))
    assert (creds.access_key, creds.secret_key) == ("app1", "app1-secret")


def test_signature_is_hex_hmac_sha1_of_the_date_time() -> None:
    # HMAC-SHA1("key", "The quick brown fox jumps over the lazy dog"), the RFC 2104 example value
    assert signature_hex("key", "The quick brown fox jumps over the lazy dog") == (
        "de7c9b85b8b78aa6bc8a7a36f70a90701c9db4d9"
    )


def test_upper_case_hex_is_accepted_as_java_decodes_it() -> None:
    assert run_auth(md(header(signature=signature_hex("app1-secret", DATE).upper()))).access_key == "app1"


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        (md(None), "username cannot be null."),
        (md("MQv2-HMAC-SHA1 Credential=, SignedHeaders=x-mq-date-time, Signature=00"), "username cannot be null."),
        (md(header(), date=None), "datetime is null."),
        (md("MQv2-HMAC-SHA1"), "authentication header is incorrect."),
        (md("MQv2-HMAC-SHA1 Credential"), "authentication keyValues length is incorrect, actual length=1."),
        (
            md("MQv2-HMAC-SHA1 Credential=/, Signature=00"),
            "authentication credential length is incorrect, actual length=0.",
        ),
        (md(header(signature="xyz")), "create authentication context error."),
        (md(header(ak="nobody")), "User:nobody is not found."),
        (md(header(signature=signature_hex("other-secret", DATE))), "check signature failed."),
        (md(header().replace(", Signature=", ", Nothing=")), "check signature failed."),
        (md(header(), date="20250101T120001Z"), "check signature failed."),
    ],
)
def test_refusals_carry_javas_messages(metadata: list[tuple[str, str]], message: str) -> None:
    with pytest.raises(AuthenticationError) as err:
        run_auth(metadata)
    assert str(err.value) == message


def test_credential_scope_after_a_slash_is_ignored_as_java_does() -> None:
    assert parse_authorization(md(header(ak="app1/2025/region")))[0] == "app1"


def test_a_disabled_user_is_refused() -> None:
    class Disabled:
        async def account(self, access_key: str) -> Account | None:
            return Account("app1-secret", enabled=False)

    with pytest.raises(AuthenticationError, match=r"^User:app1 is disabled\.$"):
        run_auth(md(header()), Disabled())


def test_a_failing_source_refuses_with_javas_generic_message() -> None:
    class Down:
        async def account(self, access_key: str) -> Account | None:
            raise OSError("connection refused")

    with pytest.raises(AuthenticationError, match=r"^Authentication failed\. Please verify"):
        run_auth(md(header()), Down())


def test_acl_file_accounts_reload_when_the_file_changes(tmp_path: Path) -> None:
    path = tmp_path / "plain_acl.yml"
    path.write_text("accounts:\n  - accessKey: producer1\n    secretKey: pubsecret1\n", encoding="utf-8")
    now = [0.0]
    source = AclFileAccounts(path, reload_interval=1.0, monotonic=lambda: now[0])
    assert asyncio.run(source.account("producer1")) == Account("pubsecret1")
    assert asyncio.run(source.account("producer2")) is None
    path.write_text("accounts:\n  - accessKey: producer2\n    secretKey: pubsecret2-longer\n", encoding="utf-8")
    assert asyncio.run(source.account("producer2")) is None  # not looked at before the interval
    now[0] = 1.5
    assert asyncio.run(source.account("producer2")) == Account("pubsecret2-longer")
    path.write_text("accounts: [", encoding="utf-8")  # malformed: the previous accounts stay
    now[0] = 3.0
    assert asyncio.run(source.account("producer2")) == Account("pubsecret2-longer")


def signed_by(cmd: RemotingCommand, creds: SessionCredentials) -> bool:
    fields = cmd.ext_fields
    return fields.get(ACCESS_KEY) == creds.access_key and fields.get(SIGNATURE) == cal_signature(
        signed_fields_text(fields), creds.secret_key, cmd.body
    )


def test_caller_signer_signs_with_the_caller_else_the_endpoint_else_not_at_all() -> None:
    own = SessionCredentials("proxyadmin", "proxyadmin-secret")
    caller = SessionCredentials("app1", "app1-secret")

    def sign(signer: CallerSigner, who: SessionCredentials | None) -> RemotingCommand:
        cmd = RemotingCommand.request(10, {"topic": "orders"}, body=b"x")

        def inner() -> None:
            CALLER.set(who)
            signer.sign(cmd)

        contextvars.copy_context().run(inner)
        return cmd

    assert signed_by(sign(CallerSigner(own), caller), caller)
    assert signed_by(sign(CallerSigner(own), None), own)
    assert ACCESS_KEY not in sign(CallerSigner(None), None).ext_fields
    assert signed_by(sign(CallerSigner(None), caller), caller)


def test_a_brokers_no_permission_is_unauthorized_for_an_authenticated_caller() -> None:
    exc = NoPermissionError("No permission for topic:orders", response_code=16)

    def under(who: SessionCredentials | None) -> pb.Status:
        CALLER.set(who)
        return error_status(exc)

    caller = SessionCredentials("app1", "app1-secret")
    assert contextvars.copy_context().run(under, caller).code == pb.Code.UNAUTHORIZED
    assert contextvars.copy_context().run(under, None).code == pb.Code.FORBIDDEN


# ----------------------------------------------------------------------------- TLS settings


def test_grpc_refuses_permissive_and_optional_client_auth(tmp_path: Path) -> None:
    cert = tmp_path / "c.pem"
    cert.write_text("x", encoding="utf-8")
    check_grpc_tls(None)
    check_grpc_tls(TlsServerConfig(mode="disabled"))
    with pytest.raises(InvalidArgumentError, match="not both"):
        check_grpc_tls(TlsServerConfig(mode="permissive", cert_path=str(cert)))
    with pytest.raises(InvalidArgumentError, match="none or require"):
        check_grpc_tls(
            TlsServerConfig(
                mode="enforcing", cert_path=str(cert), trust_cert_path=str(cert), need_client_auth="optional"
            )
        )


def test_a_file_that_is_not_pem_is_refused_naming_the_setting(tmp_path: Path) -> None:
    cert = tmp_path / "c.pem"
    cert.write_text("not a certificate", encoding="utf-8")
    with pytest.raises(InvalidArgumentError, match=r"tls\.server\.certPath/keyPath"):
        server_credentials(TlsServerConfig(mode="enforcing", cert_path=str(cert), key_path=str(cert)))


runner = CliRunner()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tls-server-mode", "permissive", "--tls-server-cert", "{cert}"], "not both"),
        (["--tls-server-need-client-auth", "optional"], "not optional"),
        (["--tls-server-mode", "enforcing"], "needs --tls-server-cert"),
        (["--acl-file", "{cert}", "--authentication-enabled"], "exclude each other"),
        (["--authentication-enabled"], "needs --access-key"),
        (["--acl-file", "{missing}"], "--acl-file"),
    ],
)
def test_proxy_command_usage_errors(tmp_path: Path, args: list[str], message: str) -> None:
    cert = tmp_path / "c.pem"
    cert.write_text("x", encoding="utf-8")
    filled = [a.format(cert=cert, missing=tmp_path / "missing.yml") for a in args]
    result = runner.invoke(app, ["proxy", "-n", "127.0.0.1:9876", "--port", "0", *filled])
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())  # the console wraps long lines
