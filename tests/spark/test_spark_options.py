"""Validation of the rocketmq source options (pure, no Spark)."""

from __future__ import annotations

import pytest

from rocketpipe.errors import InvalidArgumentError
from rocketpipe.protocol.message import MessageQueue
from rocketpipe.spark.options import DEFAULT_PULL_BATCH_SIZE, SourceOptionError, parse_source_options

BASE = {"nameserver": "127.0.0.1:9876", "topic": "A"}


def test_defaults() -> None:
    o = parse_source_options(BASE, streaming=True)
    assert o.name_server == "127.0.0.1:9876"
    assert o.topics == ("A",)
    assert o.starting_offsets.kind == "earliest"
    assert o.ending_offsets is None
    assert o.max_offsets_per_trigger is None
    assert o.fail_on_data_loss is True
    assert o.pull_batch_size == DEFAULT_PULL_BATCH_SIZE
    assert o.pull_timeout_s == 10.0
    assert (o.num_partitions, o.min_partitions, o.max_records_per_partition) == (None, None, None)  # Kafka's
    assert o.pull_concurrency == 8


def test_parses_values_case_insensitively() -> None:
    o = parse_source_options(
        {
            "NameServer": "ns:9876",
            "TOPIC": " A, B ,A",
            "startingOffsets": "latest",
            "maxOffsetsPerTrigger": "500",
            "failOnDataLoss": "FALSE",
            "pullBatchSize": "64",
            "pullTimeoutMs": "2500",
            "numPartitions": "4",
        },
        streaming=True,
    )
    assert o.topics == ("A", "B")
    assert o.starting_offsets.kind == "latest"
    assert (o.max_offsets_per_trigger, o.fail_on_data_loss, o.pull_batch_size, o.pull_timeout_s, o.num_partitions) == (
        500,
        False,
        64,
        2.5,
        4,
    )


@pytest.mark.parametrize(
    "extra, streaming, match",
    [
        ({"nameserver": ""}, True, "nameServer is required"),
        ({"topic": "  "}, True, "give exactly one of the options topic"),
        ({"topic": "A,,B"}, True, "empty topic name"),
        ({"maxoffsetspertrigger": "0"}, True, r"out of range; use a value in \[1,"),
        ({"maxoffsetspertrigger": "many"}, True, "not an integer"),
        ({"failondataloss": "yes"}, True, "'true' or 'false'"),
        ({"pullbatchsize": "100000"}, True, "out of range"),
        ({"pullconcurrency": "0"}, True, "pullConcurrency"),
        ({"endingoffsets": "latest"}, True, "batch reads only"),
        ({"startingoffsets": "first"}, True, "startingOffsets"),
        ({"startingoffsets": '{"B": {"broker-a:0": 1}}'}, True, "not in option topic"),
        ({"endingoffsets": "earliest"}, False, "endingOffsets"),
        ({"maxoffsetspertriger": "5"}, True, "unknown option"),
        ({"clientfactory": "nocolon"}, True, "module:callable"),
        ({"startingtimestamp": "yesterday"}, True, "option startingTimestamp: 'yesterday' is not a timestamp"),
        ({"startingoffsetsbytimestamp": '{"B": {"broker-a:0": 1}}'}, True, "not in option topic"),
        ({"startingoffsetsbytimestampstrategy": "earliest"}, True, "must be 'error' or 'latest'"),
        ({"endingtimestamp": "5"}, True, "batch reads only"),
        ({"endingoffsetsbytimestamp": '{"A": {"broker-a:0": -3}}'}, False, "option endingOffsetsByTimestamp"),
    ],
)
def test_rejects_with_a_fix(extra: dict[str, str], streaming: bool, match: str) -> None:
    with pytest.raises(SourceOptionError, match=match) as info:
        parse_source_options({**BASE, **extra}, streaming=streaming)
    assert isinstance(info.value, InvalidArgumentError) and isinstance(info.value, ValueError)


def test_batch_accepts_ending_offsets() -> None:
    o = parse_source_options({**BASE, "endingoffsets": '{"A": {"broker-a:0": 5}}'}, streaming=False)
    assert o.ending_offsets is not None and o.ending_offsets.kind == "json"


def test_auto_discovery_module_exposes_default_source() -> None:
    from pyspark.sql.datasource import DataSource

    import pyspark_rocketmq

    assert issubclass(pyspark_rocketmq.DefaultSource, DataSource)
    assert pyspark_rocketmq.DefaultSource.name() == "rocketmq"


def test_timestamp_options_win_over_offsets_as_in_kafka() -> None:
    o = parse_source_options(
        {
            **BASE,
            "startingoffsets": "latest",
            "startingtimestamp": "1700000000000",
            "startingoffsetsbytimestamp": '{"A": {"broker-a:0": 5}}',
            "startingoffsetsbytimestampstrategy": "LATEST",
            "endingoffsetsbytimestamp": '{"A": {"broker-a:0": 9}}',
        },
        streaming=False,
    )
    assert o.starting_timestamps is not None and o.starting_timestamps.all_ms == 1700000000000
    assert o.starting_timestamp_strategy == "latest"
    assert o.ending_timestamps is not None and o.ending_timestamps.per_queue is not None
    plain = parse_source_options(BASE, streaming=True)
    assert (plain.starting_timestamps, plain.ending_timestamps, plain.starting_timestamp_strategy) == (
        None,
        None,
        "error",
    )


def test_partition_planning_options() -> None:
    o = parse_source_options(
        {"nameServer": "ns:9876", "topic": "A", "minPartitions": "6", "maxRecordsPerPartition": "1000"}, streaming=False
    )
    assert (o.num_partitions, o.min_partitions, o.max_records_per_partition) == (None, 6, 1000)
    with pytest.raises(SourceOptionError, match="cannot be combined"):
        parse_source_options(
            {"nameServer": "ns:9876", "topic": "A", "numPartitions": "2", "minPartitions": "4"}, streaming=False
        )
    with pytest.raises(SourceOptionError, match="minPartitions"):
        parse_source_options({"nameServer": "ns:9876", "topic": "A", "minPartitions": "0"}, streaming=False)


@pytest.mark.parametrize(
    ("opts", "error"),
    [
        ({}, "give exactly one of the options topic"),
        ({"topic": "A", "subscribePattern": "A.*"}, "got topic, subscribePattern"),
        ({"subscribePattern": "A("}, "not a regular expression"),
        ({"assign": "[1]"}, "must be a JSON object"),
        ({"assign": '{"A": ["broker-a"]}'}, "'broker-a' of topic 'A' is not 'brokerName:queueId'"),
        ({"assign": '{"A": []}'}, "needs a non-empty list"),
    ],
)
def test_subscription_options_errors(opts: dict[str, str], error: str) -> None:
    with pytest.raises(SourceOptionError, match=error):
        parse_source_options({"nameServer": "ns:9876", **opts}, streaming=True)


def test_subscription_options() -> None:
    o = parse_source_options({"nameServer": "ns:9876", "subscribe": "A,B"}, streaming=True)
    assert (o.topics, o.topic_pattern, o.assigned) == (("A", "B"), None, None)
    o = parse_source_options({"nameServer": "ns:9876", "subscribePattern": "orders-.*"}, streaming=True)
    assert (o.topics, o.topic_pattern) == ((), "orders-.*")
    o = parse_source_options(
        {"nameServer": "ns:9876", "assign": '{"A": ["broker-a:0", "broker-b:3"]}'}, streaming=False
    )
    assert o.topics == ("A",) and o.assigned == {MessageQueue("A", "broker-a", 0), MessageQueue("A", "broker-b", 3)}
