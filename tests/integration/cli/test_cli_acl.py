"""CLI with ACL: ``rocketpipe serve --acl-enable --acl-file`` in a subprocess, ``topic``/``produce``/
``consume`` with ``--access-key``/``--secret-key`` (or ROCKETMQ_ACCESS_KEY / ROCKETMQ_SECRET_KEY),
and the warning of ``serve`` on a non-loopback host without ACL.
"""

from __future__ import annotations

from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rocketpipe import eventloop
from rocketpipe.cli.commands.serve import _is_loopback
from rocketpipe.cli.errors import EXIT_BROKER, EXIT_USAGE
from rocketpipe.cli.main import app
from rocketpipe.testing.serve_process import ServeProcess, serve_process

runner = CliRunner()

ACL = """\
accounts:
  - accessKey: producer1
    secretKey: pubsecret1
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms: [cli-acl=PUB]
  - accessKey: consumer1
    secretKey: subsecret1
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms: [cli-acl=SUB]
    groupPerms: [cli-acl-group=SUB]
  - accessKey: adminkey
    secretKey: adminsecret
    admin: true
"""


@pytest.fixture
def acl_file(tmp_path: Path) -> Path:
    path = tmp_path / "plain_acl.yml"
    path.write_text(ACL, encoding="utf-8")
    return path


@pytest.fixture
def served(tmp_path: Path, acl_file: Path) -> Iterator[ServeProcess]:
    with serve_process(tmp_path / "store", extra_args=("--acl-enable", "--acl-file", str(acl_file))) as sp:
        yield sp


def test_serve_start_line_says_acl_is_on(tmp_path: Path, acl_file: Path) -> None:
    log = tmp_path / "serve.log"
    args = ("--acl-enable", "--acl-file", str(acl_file))
    with serve_process(tmp_path / "store", extra_args=args, log_file=log):
        started = next(line for line in log.read_text(encoding="utf-8").splitlines() if "serve started" in line)
    assert " aclEnable=true " in started and f" aclFile={acl_file} " in started
    assert "without --acl-enable" not in log.read_text(encoding="utf-8")


def test_cli_commands_sign_with_access_and_secret_keys(served: ServeProcess, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROCKETMQ_ACCESS_KEY", raising=False)
    monkeypatch.delenv("ROCKETMQ_SECRET_KEY", raising=False)
    ns = ["--namesrv", served.namesrv_addr]
    denied = runner.invoke(app, ["topic", "create", "cli-acl", "--queues", "1", *ns])
    assert denied.exit_code == EXIT_BROKER, denied.output
    assert "No accessKey is configured" in denied.output
    created = runner.invoke(
        app,
        ["topic", "create", "cli-acl", "--queues", "1", *ns, "--access-key", "adminkey", "--secret-key", "adminsecret"],
    )
    assert created.exit_code == 0, created.output

    refused = runner.invoke(
        app,
        ["produce", "cli-acl", "--body", "x", *ns, "--access-key", "consumer1", "--secret-key", "subsecret1"],
    )
    assert refused.exit_code == EXIT_BROKER, refused.output
    assert "No permission for topic:cli-acl" in refused.output

    env = {"ROCKETMQ_ACCESS_KEY": "producer1", "ROCKETMQ_SECRET_KEY": "pubsecret1"}
    produced = runner.invoke(app, ["produce", "cli-acl", "--body", "signed", "--count", "2", *ns], env=env)
    assert produced.exit_code == 0, produced.output
    assert produced.output.count("SEND_OK") == 2

    consumed = runner.invoke(
        app,
        [
            "consume",
            "cli-acl",
            *ns,
            "--group",
            "cli-acl-group",
            "--count",
            "2",
            "--timeout",
            "60",
            "--access-key",
            "consumer1",
            "--secret-key",
            "subsecret1",
        ],
    )
    assert consumed.exit_code == 0, consumed.output
    assert consumed.output.count("signed") == 2

    stats = runner.invoke(app, ["topic", "stats", "cli-acl", *ns], env=env)
    assert stats.exit_code == 0, stats.output
    assert "2 message(s)" in stats.output


def test_access_key_without_secret_key_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROCKETMQ_SECRET_KEY", raising=False)
    result = runner.invoke(app, ["produce", "t", "--body", "x", "--namesrv", "127.0.0.1:1", "--access-key", "ak12345"])
    assert result.exit_code == EXIT_USAGE
    assert "--secret-key" in result.output


def test_serve_refuses_bad_acl_flags_and_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROCKETMQ_HOME", raising=False)
    data = ["--data-dir", str(tmp_path / "store")]
    bad = tmp_path / "bad.yml"
    bad.write_text("accounts:\n  - accessKey: short\n    secretKey: x\n", encoding="utf-8")
    cases = [
        (["--acl-file", str(bad)], "--acl-file needs --acl-enable"),
        (["--acl-enable"], "--acl-enable needs --acl-file"),
        (["--acl-enable", "--acl-file", str(bad)], "length should longer than 6"),
        (["--acl-enable", "--acl-file", str(tmp_path / "missing.yml")], "cannot read ACL file"),
    ]
    for args, message in cases:
        result = runner.invoke(app, ["serve", *data, *args])
        assert result.exit_code == EXIT_USAGE, result.output
        assert message in " ".join(result.output.split())
    assert not (tmp_path / "store").exists()  # refused before anything started


@pytest.mark.parametrize(
    ("host", "acl", "warnings"),
    [
        ("192.0.2.10", False, 1),
        ("127.0.0.1", False, 0),
        ("localhost", False, 0),
        ("192.0.2.10", True, 0),
        ("127.0.0.1", True, 0),
    ],
)
def test_serve_warns_once_on_a_non_loopback_host_without_acl(
    tmp_path: Path, acl_file: Path, monkeypatch: pytest.MonkeyPatch, host: str, acl: bool, warnings: int
) -> None:
    started: list[str] = []

    def fake_run(coro: Coroutine[Any, Any, Any]) -> None:  # nothing listens: the servers never start
        coro.close()
        started.append(host)

    monkeypatch.setattr(eventloop, "run", fake_run)
    log = tmp_path / "serve.log"
    args = ["serve", "--host", host, "--data-dir", str(tmp_path / "store"), "--log-file", str(log)]
    if acl:
        args += ["--acl-enable", "--acl-file", str(acl_file)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert started == [host]
    assert log.read_text(encoding="utf-8").count("without --acl-enable") == warnings
    # with ACL on the broker only, a non-loopback host is told that the name server checks nothing
    assert log.read_text(encoding="utf-8").count("without --namesrv-acl-enable") == (acl and not _is_loopback(host))


def test_loopback_detection() -> None:
    assert _is_loopback("127.0.0.1") and _is_loopback("127.1.2.3") and _is_loopback("::1")
    assert _is_loopback("LOCALHOST")
    assert not _is_loopback("0.0.0.0") and not _is_loopback("10.0.0.1") and not _is_loopback("example.org")
