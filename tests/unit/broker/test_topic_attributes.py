"""Topic attributes: Java 5.3.3's ``AttributeParser.parseToMap`` / ``parseToString``,
``AttributeUtil.alterCurrentAttributes`` over ``TopicAttributes.ALL``, the attributes'
``verify`` messages, ``TopicConfig.getTopicMessageType`` and the ``topics.json`` bean form."""

from __future__ import annotations

import pytest

from rocketpipe.broker.topics import TopicConfig, TopicTable
from rocketpipe.protocol.topic_attributes import (
    TOPIC_ATTRIBUTES,
    TopicAttributeError,
    TopicMessageType,
    alter_current_attributes,
    parse_to_map,
    parse_to_string,
    topic_message_type,
)

# ------------------------------------------------------------------ AttributeParser.parseToMap


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        (None, {}),
        ("", {}),
        ("+message.type=FIFO", {"+message.type": "FIFO"}),
        ("+message.type=FIFO,-queue.type", {"+message.type": "FIFO", "-queue.type": ""}),
        ("+a=1,", {"+a": "1"}),  # Java's split drops trailing empty strings
        (",", {}),
        ("+a=1=2", {"+a": "1"}),  # only the first two parts count
    ],
)
def test_parse_to_map_keeps_the_signs(text: str | None, parsed: dict[str, str]) -> None:
    assert parse_to_map(text) == parsed


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("message.type=FIFO", "add/alter attribute format is wrong: message.type"),
        ("-message.type=FIFO", "add/alter attribute format is wrong: -message.type"),
        ("message.type", "delete attribute format is wrong: message.type"),
        ("+a=1,,+b=2", "delete attribute format is wrong: "),
        ("+a=1,+a=2", "key duplication: +a"),
        ("+message.type=", "Index 1 out of bounds for length 1"),
    ],
)
def test_parse_to_map_refusals(text: str, message: str) -> None:
    with pytest.raises(TopicAttributeError) as exc:
        parse_to_map(text)
    assert str(exc.value) == message


def test_parse_to_string_writes_keys_without_value_bare() -> None:
    assert parse_to_string({"message.type": "FIFO", "x": ""}) == "message.type=FIFO,x"
    assert parse_to_string({}) == ""
    assert parse_to_string(None) == ""


# ------------------------------------------------------------------ alterCurrentAttributes


def alter(create: bool, current: dict[str, str], text: str) -> dict[str, str]:
    return alter_current_attributes(create, TOPIC_ATTRIBUTES, current, parse_to_map(text))


def test_create_sets_changeable_and_unchangeable_keys() -> None:
    assert alter(True, {}, "+message.type=FIFO,+queue.type=BatchCQ,+cleanup.policy=COMPACTION") == {
        "message.type": "FIFO",
        "queue.type": "BatchCQ",
        "cleanup.policy": "COMPACTION",
    }
    assert alter(True, {}, "+reserve.time=72") == {"reserve.time": "72"}
    assert alter(True, {}, "") == {}


def test_update_adds_changes_removes_and_keeps_the_rest() -> None:
    current = {"message.type": "FIFO", "queue.type": "SimpleCQ"}
    assert alter(False, current, "+message.type=DELAY") == {"message.type": "DELAY", "queue.type": "SimpleCQ"}
    assert alter(False, current, "-message.type") == {"queue.type": "SimpleCQ"}
    assert alter(False, current, "+reserve.time=-1") == {**current, "reserve.time": "-1"}
    assert alter(False, current, "") == current  # no attributes: unchanged
    assert current == {"message.type": "FIFO", "queue.type": "SimpleCQ"}  # never mutated


@pytest.mark.parametrize(
    ("create", "current", "text", "message"),
    [
        (True, {}, "-message.type", "only add attribute is supported while creating topic. key: message.type"),
        (True, {}, "+foo=bar", "unsupported key: foo"),
        (False, {}, "-message.type", "attempt to delete a nonexistent key: message.type"),
        (False, {"foo": "1"}, "-foo", "unsupported key: foo"),
        (
            False,
            {"queue.type": "SimpleCQ"},
            "+queue.type=BatchCQ",
            "attempt to update an unchangeable attribute. key: queue.type",
        ),
        (
            False,
            {"queue.type": "SimpleCQ"},
            "-queue.type",
            "attempt to update an unchangeable attribute. key: queue.type",
        ),
        (False, {}, "+cleanup.policy=DELETE", "attempt to update an unchangeable attribute. key: cleanup.policy"),
        (True, {}, "+a+b=1", "kv string format wrong."),
        (True, {}, "+=1", "kv string format wrong."),
        (
            False,
            {"message.type": "FIFO"},
            "+message.type=NORMAL,-message.type",
            "alter duplication key. key: message.type",
        ),
        (
            True,
            {},
            "+message.type=fifo",
            "value is not in set: [UNSPECIFIED, TRANSACTION, FIFO, MIXED, DELAY, NORMAL]",
        ),
        (True, {}, "+queue.type=Other", "value is not in set: [SimpleCQ, BatchCQ]"),
        (True, {}, "+cleanup.policy=KEEP", "value is not in set: [DELETE, COMPACTION]"),
        (True, {}, "+reserve.time=-2", "value is not in range(-1, 9223372036854775807)"),
        (True, {}, "+reserve.time=1h", 'For input string: "1h"'),
        (True, {}, "+reserve.time=9223372036854775808", 'For input string: "9223372036854775808"'),
    ],
)
def test_alter_refusals(create: bool, current: dict[str, str], text: str, message: str) -> None:
    with pytest.raises(TopicAttributeError) as exc:
        alter(create, current, text)
    assert str(exc.value) == message


def test_every_message_type_is_accepted_on_create() -> None:
    for kind in TopicMessageType:
        assert alter(True, {}, f"+message.type={kind.value}") == {"message.type": kind.value}


# ------------------------------------------------------------------ TopicConfig


def test_topic_message_type_defaults_to_normal_and_is_case_sensitive() -> None:
    assert topic_message_type(None) == TopicMessageType.NORMAL
    assert topic_message_type({}) == TopicMessageType.NORMAL
    assert topic_message_type({"message.type": "TRANSACTION"}) == TopicMessageType.TRANSACTION
    assert TopicConfig("T", attributes={"message.type": "FIFO"}).topic_message_type == TopicMessageType.FIFO
    with pytest.raises(ValueError):
        topic_message_type({"message.type": "fifo"})


def test_topic_config_json_round_trip_with_attributes() -> None:
    tc = TopicConfig("T", 4, 4, attributes={"message.type": "DELAY"})
    d = tc.to_json()
    assert d["attributes"] == {"message.type": "DELAY"}
    assert TopicConfig("P").to_json()["attributes"] == {}
    assert TopicConfig.from_json(d) == tc
    assert hash(tc) == hash(TopicConfig("T", 4, 4))  # attributes stay out of the hash
    assert tc != TopicConfig("T", 4, 4)  # but not out of equality
    # a 4.x topics.json has no attributes; a non-object is malformed
    assert TopicConfig.from_json({"topicName": "Old"}).attributes == {}
    with pytest.raises(TypeError):
        TopicConfig.from_json({"topicName": "Bad", "attributes": ["x"]})


def test_topic_table_persists_attributes() -> None:
    table = TopicTable("b", "c")
    table.put(TopicConfig("Fifo", 2, 2, attributes={"message.type": "FIFO"}), 1)
    again = TopicTable("b", "c")
    again.load_json(table.to_json())
    assert again.topics["Fifo"].attributes == {"message.type": "FIFO"}
    # an identical config (attributes included) is a no-op, a different message type is a change
    assert not again.put(TopicConfig("Fifo", 2, 2, attributes={"message.type": "FIFO"}), 2)
    assert again.put(TopicConfig("Fifo", 2, 2, attributes={"message.type": "DELAY"}), 3)
