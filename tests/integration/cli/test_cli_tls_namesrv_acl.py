"""``rocketpipe serve`` with TLS enforcing and ACL on the name server (``--namesrv-acl-enable``):
the broker signs its registrations (``--inner-client-*``) over TLS, CLI clients work with
``--use-tls``, an unsigned UNREGISTER_BROKER sent to the name server is refused, and the flag
combinations that cannot work are usage errors."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner

from integration.transport.test_tls_pki import Pki, make_pki
from rocketpipe.cli.errors import EXIT_USAGE
from rocketpipe.cli.main import app
from rocketpipe.protocol.codes import RequestCode, ResponseCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.protocol.headers.route import UnRegisterBrokerRequestHeader
from rocketpipe.testing.serve_process import serve_process
from rocketpipe.transport import ConnectionPool, TlsClientConfig

runner = CliRunner()

ACL = """\
accounts:
  - accessKey: broker-admin
    secretKey: broker-secret
    admin: true
"""


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


async def unregister_unsigned(namesrv_addr: str, broker_addr: str, ca: str) -> RemotingCommand:
    header = UnRegisterBrokerRequestHeader(
        broker_name="broker-a", broker_addr=broker_addr, cluster_name="DefaultCluster", broker_id=0
    )
    pool = ConnectionPool(ssl_context=TlsClientConfig(trust_cert_path=ca).client_context())
    try:
        cmd = RemotingCommand.request(RequestCode.UNREGISTER_BROKER, header.to_ext_fields())
        return await pool.request(namesrv_addr, cmd, 5.0)
    finally:
        await pool.close()


def test_tls_and_namesrv_acl_together(tmp_path: Path, pki: Pki, monkeypatch: pytest.MonkeyPatch) -> None:
    acl = tmp_path / "plain_acl.yml"
    acl.write_text(ACL, encoding="utf-8")
    monkeypatch.setenv("ROCKETMQ_INNER_SECRET_KEY", "broker-secret")
    log = tmp_path / "serve.log"
    args = (
        "--tls-server-mode", "enforcing", "--tls-server-cert", pki.server_cert, "--tls-server-key", pki.server_key,
        "--namesrv-acl-enable", "--acl-file", str(acl), "--inner-client-access-key", "broker-admin",
    )  # fmt: skip
    with serve_process(tmp_path / "store", extra_args=args, log_file=log) as sp:
        started = next(line for line in log.read_text(encoding="utf-8").splitlines() if "serve started" in line)
        assert "namesrvAclEnable=true" in started and "aclEnable=false" in started
        tls = ["--namesrv", sp.namesrv_addr, "--use-tls", "--tls-client-trust-cert", pki.ca]
        created = runner.invoke(app, ["topic", "create", "ns-acl", "--queues", "1", *tls])
        assert created.exit_code == 0, created.output
        assert "1 queue(s) in its route" in created.output  # the broker's signed registration got through
        resp = asyncio.run(unregister_unsigned(sp.namesrv_addr, sp.broker_addr, pki.ca))
        assert resp.code == ResponseCode.NO_PERMISSION and resp.remark == "No accessKey is configured"
        produced = runner.invoke(app, ["produce", "ns-acl", "--body", "x", *tls])
        assert produced.exit_code == 0, produced.output  # still routed: the broker was not unregistered
        assert "SEND_OK" in produced.output


def test_namesrv_acl_usage_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROCKETMQ_HOME", raising=False)
    monkeypatch.delenv("ROCKETMQ_INNER_ACCESS_KEY", raising=False)
    monkeypatch.delenv("ROCKETMQ_INNER_SECRET_KEY", raising=False)
    acl = tmp_path / "plain_acl.yml"
    acl.write_text(ACL, encoding="utf-8")
    data = ["--data-dir", str(tmp_path / "store")]
    cases = [
        (["--namesrv-acl-enable"], "--namesrv-acl-enable needs --acl-file"),
        (["--namesrv-acl-enable", "--acl-file", str(acl)], "needs --inner-client-access-key"),
        (["--namesrv-acl-enable", "--acl-file", str(acl), "--broker-only", "--namesrv", "127.0.0.1:1"],
         "cannot be used with --broker-only"),
        (["--inner-client-access-key", "broker-admin"], "go together"),
    ]  # fmt: skip
    for args, message in cases:
        result = runner.invoke(app, ["serve", *data, *args])
        assert result.exit_code == EXIT_USAGE, (args, result.output)
        assert message in " ".join(result.output.split()), (args, result.output)
    assert not (tmp_path / "store").exists()
