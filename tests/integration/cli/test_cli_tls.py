"""CLI with TLS: ``rocketpipe serve --tls-server-mode enforcing`` in a subprocess (uvloop when
installed), ``topic``/``produce``/``consume`` with ``--use-tls``, and the usage errors of bad TLS
flags and certificate files (exit 2 before anything starts)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from integration.transport.test_tls_pki import KEY_PASSWORD, Pki, make_pki
from rocketpipe.cli.errors import EXIT_USAGE
from rocketpipe.cli.main import app
from rocketpipe.testing.serve_process import ServeProcess, serve_process
from waiting import wait_until_sync

runner = CliRunner()


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def server_flags(pki: Pki, mode: str = "enforcing") -> tuple[str, ...]:
    return ("--tls-server-mode", mode, "--tls-server-cert", pki.server_cert, "--tls-server-key", pki.server_key)


@pytest.fixture
def served(tmp_path: Path, pki: Pki) -> Iterator[ServeProcess]:
    log = tmp_path / "serve.log"
    with serve_process(tmp_path / "store", extra_args=server_flags(pki), log_file=log) as sp:
        yield sp


def test_cli_round_trip_over_tls_and_plain_is_told_to_use_tls(served: ServeProcess, pki: Pki, tmp_path: Path) -> None:
    log = (tmp_path / "serve.log").read_text(encoding="utf-8")
    started = next(line for line in log.splitlines() if "serve started" in line)
    assert "tlsServerMode=enforcing" in started and "tlsEnable=true" in started

    tls = ["--namesrv", served.namesrv_addr, "--use-tls", "--tls-client-trust-cert", pki.ca]
    created = runner.invoke(app, ["topic", "create", "cli-tls", "--queues", "1", *tls])
    assert created.exit_code == 0, created.output
    assert "1 queue(s) in its route" in created.output

    produced = runner.invoke(app, ["produce", "cli-tls", "--body", "secret", "--count", "3", *tls])
    assert produced.exit_code == 0, produced.output
    assert produced.output.count("SEND_OK") == 3

    consumed = runner.invoke(app, ["consume", "cli-tls", *tls, "--count", "3", "--timeout", "60"])
    assert consumed.exit_code == 0, consumed.output
    assert consumed.output.count("secret") == 3

    stats = runner.invoke(app, ["topic", "stats", "cli-tls", *tls])
    assert stats.exit_code == 0, stats.output
    assert "3 message(s)" in stats.output

    plain = runner.invoke(app, ["topic", "stats", "cli-tls", "--namesrv", served.namesrv_addr])
    assert plain.exit_code != 0
    assert "accepts TLS connections only" in " ".join(plain.output.split())

    wrong_ca = runner.invoke(
        app, ["topic", "stats", "cli-tls", "--namesrv", served.namesrv_addr, "--use-tls",
              "--tls-client-trust-cert", pki.other_ca],
    )  # fmt: skip
    assert wrong_ca.exit_code != 0
    assert "unable to get local issuer certificate" in " ".join(wrong_ca.output.split())


def test_serve_refuses_bad_tls_flags_and_files(tmp_path: Path, pki: Pki) -> None:
    data = ["--data-dir", str(tmp_path / "store")]
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n", encoding="utf-8")
    cases = [
        (["--tls-server-mode", "enforcing"], "needs --tls-server-cert"),
        (["--tls-server-cert", pki.server_cert], "need --tls-server-mode permissive or enforcing"),
        ([*server_flags(pki)[:2], "--tls-server-cert", str(junk), "--tls-server-key", pki.server_key],
         "cannot load certificate"),
        ([*server_flags(pki)[:2], "--tls-server-cert", str(tmp_path / "missing.pem")], "no such file"),
        ([*server_flags(pki), "--tls-server-need-client-auth", "require"], "needs tls.server.trustCertPath"),
        ([*server_flags(pki)[:4], "--tls-server-key", pki.server_key_encrypted, "--tls-server-key-password", "no"],
         "cannot load certificate"),
        ([*server_flags(pki), "--tls-server-trust-cert", pki.ca, "--tls-server-need-client-auth", "require"],
         "needs --use-tls --tls-client-cert"),
        (["--tls-server-mode", "strict"], "strict"),
        (["--namesrv-only", "--use-tls"], "cannot be used with --namesrv-only"),
        (["--tls-client-trust-cert", pki.ca], "need --use-tls"),
    ]  # fmt: skip
    for args, message in cases:
        result = runner.invoke(app, ["serve", *data, *args])
        assert result.exit_code == EXIT_USAGE, (args, result.output)
        assert message in " ".join(result.output.split()), (args, result.output)
    assert not (tmp_path / "store").exists()  # refused before anything started


def test_serve_takes_an_encrypted_key_with_its_password_from_the_environment(
    tmp_path: Path, pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROCKETMQ_TLS_SERVER_KEY_PASSWORD", KEY_PASSWORD)
    flags = (*server_flags(pki, "permissive")[:4], "--tls-server-key", pki.server_key_encrypted)
    with serve_process(tmp_path / "store", extra_args=flags) as sp:
        tls = ["--namesrv", sp.namesrv_addr, "--use-tls", "--tls-client-trust-cert", pki.ca]
        assert runner.invoke(app, ["topic", "create", "perm-tls", "--queues", "1", *tls]).exit_code == 0
        plain = runner.invoke(app, ["topic", "stats", "perm-tls", "--namesrv", sp.namesrv_addr])
        assert plain.exit_code == 0, plain.output  # permissive: plain clients too
        assert "1 queue(s)" in plain.output


def test_client_tls_usage_errors(pki: Pki, tmp_path: Path) -> None:
    ns = ["--namesrv", "127.0.0.1:1"]
    result = runner.invoke(app, ["produce", "t", "--body", "x", *ns, "--tls-client-trust-cert", pki.ca])
    assert result.exit_code == EXIT_USAGE
    assert "need --use-tls" in result.output
    result = runner.invoke(
        app, ["produce", "t", "--body", "x", *ns, "--use-tls", "--tls-client-trust-cert", str(tmp_path / "no.pem")]
    )
    assert result.exit_code == EXIT_USAGE
    assert "no such file" in " ".join(result.output.split())


def test_broker_only_registers_over_tls_with_use_tls(served: ServeProcess, pki: Pki, tmp_path: Path) -> None:
    flags = (*server_flags(pki), "--use-tls", "--tls-client-trust-cert", pki.ca)
    with serve_process(
        tmp_path / "store-b", namesrv_addr=served.namesrv_addr, broker_name="broker-b", extra_args=flags
    ):
        tls = ["--namesrv", served.namesrv_addr, "--use-tls", "--tls-client-trust-cert", pki.ca]
        created = runner.invoke(app, ["topic", "create", "two-brokers", "--queues", "1", *tls])
        assert created.exit_code == 0, created.output

        def both_routed() -> bool:  # broker-b registered over verified TLS
            return "2 queue(s)" in runner.invoke(app, ["topic", "stats", "two-brokers", *tls]).output

        wait_until_sync(both_routed, timeout=30, what="both brokers in the route")
