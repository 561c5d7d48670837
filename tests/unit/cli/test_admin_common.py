"""Helpers of `rocketpipe admin`: Java-style booleans, timestamps, Properties text, options."""

from __future__ import annotations

from datetime import datetime

import pytest
import typer
from typer.testing import CliRunner

from rocketpipe.cli.commands.admin._common import human_time, java_bool, parse_timestamp, short_time, version_desc
from rocketpipe.cli.errors import EXIT_USAGE
from rocketpipe.cli.main import app
from rocketpipe.client.admin import parse_properties

runner = CliRunner()


def test_java_bool_is_parse_boolean() -> None:
    assert java_bool("true") and java_bool("TRUE") and java_bool(" True ")
    assert not java_bool("yes") and not java_bool("1") and not java_bool("false")
    assert java_bool(None, True) and not java_bool(None)


def test_parse_timestamp_forms() -> None:
    assert parse_timestamp("1676730526212") == 1676730526212
    expected = int(datetime(2024, 3, 5, 7, 8, 9, 123000).timestamp() * 1000)
    assert parse_timestamp("2024-03-05#07:08:09:123") == expected
    now = int(datetime.now().timestamp() * 1000)
    assert abs(parse_timestamp("now") - now) < 60_000
    with pytest.raises(typer.Exit) as exc:
        parse_timestamp("yesterday")
    assert exc.value.exit_code == EXIT_USAGE


def test_time_formats() -> None:
    ms = int(datetime(2024, 3, 5, 7, 8, 9, 45000).timestamp() * 1000)
    assert human_time(ms) == "2024-03-05 07:08:09,045"
    assert short_time(ms) == "2024-03-05 07:08:09"
    assert short_time(0) == "N/A"


def test_version_desc_is_mq_version() -> None:
    assert version_desc(409) == "V4_9_8"  # CURRENT_VERSION of rocketpipe's broker and clients
    assert version_desc(479) == "V5_3_3"
    assert version_desc(212) == "V4_0_0_SNAPSHOT" and version_desc(213) == "V4_0_0"
    assert version_desc(412) == "V5_0_0_SNAPSHOT" and version_desc(611) == "V5_9_9"
    assert version_desc(612) == "HIGHER_VERSION" and version_desc(5000) == "HIGHER_VERSION"
    assert version_desc(100) == "100"


def test_parse_properties() -> None:
    text = "#comment\nbrokerName=broker-a\n\nlistenPort = 10911\nflag:true\nempty=\n"
    assert parse_properties(text) == {"brokerName": "broker-a", "listenPort": "10911", "flag": "true", "empty": ""}


@pytest.mark.parametrize(
    ("command", "options"),
    [
        ("updateTopic", ["--brokerAddr", "--clusterName", "--readQueueNums", "--writeQueueNums", "--perm", "--order"]),
        ("deleteTopic", ["--topic", "--clusterName"]),
        ("updateSubGroup", ["--groupName", "--retryMaxTimes", "--retryQueueNums", "--consumeEnable"]),
        ("deleteSubGroup", ["--groupName", "--removeOffset"]),
        ("consumerProgress", ["--groupName", "--topicName", "--showClientIP"]),
        ("consumerConnection", ["--consumerGroup", "--brokerAddr"]),
        ("producerConnection", ["--producerGroup", "--topic"]),
        ("resetOffsetByTime", ["--group", "--topic", "--timestamp", "--force"]),
        ("queryMsgById", ["--msgId", "--sendMessage", "--bodyFormat"]),
        ("queryMsgByKey", ["--msgKey", "--beginTimestamp", "--endTimestamp", "--maxNum"]),
        ("queryMsgByOffset", ["--brokerName", "--queueId", "--offset"]),
        ("sendMessage", ["--body", "--key", "--tags", "--broker", "--qid"]),
        ("consumeMessage", ["--brokerName", "--queueId", "--offset", "--MessageNumber"]),
    ],
)
def test_mqadmin_long_option_names(command: str, options: list[str]) -> None:
    result = runner.invoke(app, ["admin", command, "--help"], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    for opt in [*options, "--namesrvAddr", "--json"]:
        assert opt in result.output, (command, opt)


def test_missing_required_option_is_usage_error() -> None:
    result = runner.invoke(app, ["admin", "topicRoute", "-n", "127.0.0.1:1"])
    assert result.exit_code == EXIT_USAGE


def test_unreachable_name_server_is_connection_error() -> None:
    result = runner.invoke(app, ["admin", "topicList", "-n", "127.0.0.1:1"])
    assert result.exit_code == 3, result.output
