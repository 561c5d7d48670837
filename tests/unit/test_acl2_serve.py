"""``rocketpipe serve``'s ACL 2.0 options: bad values end with a usage error before anything starts."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from rocketpipe.broker import BrokerConfig
from rocketpipe.cli.errors import EXIT_USAGE
from rocketpipe.cli.main import app
from rocketpipe.errors import InvalidArgumentError

runner = CliRunner()


def test_init_authentication_user_must_be_a_json_user(tmp_path: Path) -> None:
    for value in ("not json", "[]", '{"username": "root"}'):
        result = runner.invoke(app, ["serve", "--data-dir", str(tmp_path), "--init-authentication-user", value])
        assert result.exit_code == EXIT_USAGE, result.output
        assert "--init-authentication-user" in result.output


def test_acl2_options_need_a_broker() -> None:
    result = runner.invoke(app, ["serve", "--namesrv-only", "--authentication-enabled"])
    assert result.exit_code == EXIT_USAGE
    assert "ACL 2.0" in result.output


def test_broker_config_checks_the_init_user() -> None:
    with pytest.raises(InvalidArgumentError, match="username"):
        BrokerConfig(init_authentication_user='{"username": " ", "password": "x"}')
    assert BrokerConfig(authorization_enabled=True).auth_enabled
    assert not BrokerConfig(acl_enable=False).auth_enabled
