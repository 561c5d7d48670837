"""Rows → messages of the sink (``PartitionSender.add_columns``) without Spark or a broker.

The sender's producer is never used: ``_submit`` is replaced by a recorder, so each test sees
exactly which batches (destination, messages) a chunk of rows turns into.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rocketpipe.protocol.message import Message
from rocketpipe.spark.options import parse_sink_options
from rocketpipe.spark.writer import ColumnPlan, PartitionSender, SinkDataError

Sent = list[tuple[Any, list[Message], bool]]


def _plan(**cols: int) -> ColumnPlan:
    return ColumnPlan(
        body=cols.get("body", 0),
        topic=cols.get("topic"),
        tags=cols.get("tags"),
        keys=cols.get("keys"),
        keys_is_array=bool(cols.get("keys_is_array", 0)),
        properties=cols.get("properties"),
        queue_id=cols.get("queue_id"),
        broker_name=cols.get("broker_name"),
        width=8,
    )


@pytest.fixture()
def make() -> Iterator[Any]:
    senders: list[PartitionSender] = []

    def build(plan: ColumnPlan, prefix: str | None = None, **options: str) -> tuple[PartitionSender, Sent]:
        opts = parse_sink_options({"nameServer": "127.0.0.1:1", **options})
        sender = PartitionSender(opts, plan, prefix)
        senders.append(sender)
        sent: Sent = []

        def record(dest: Any, msgs: list[Message], *, single: bool) -> None:
            sent.append((dest, list(msgs), single))

        sender._submit = record  # type: ignore[method-assign]
        return sender, sent

    yield build
    for s in senders:
        s.close()


def _flush(sender: PartitionSender) -> None:
    for dest in list(sender._pending):
        sender._flush(dest)


def test_columns_become_properties_in_wire_order(make: Any) -> None:
    plan = _plan(body=0, topic=1, tags=2, keys=3, keys_is_array=1, properties=4)
    sender, sent = make(plan, prefix="AB" * 10, topic="Opt")
    cols = [
        [b"b0", "text-\u00e9", bytearray(b"b2")],
        ["Ignored", None, ""],  # the topic option overrides the column
        ["tagA", None, ""],
        [["k1", None, "", "k2"], [], [None, ""]],
        [{"p": "1", "TAGS": "system", "n": None}, [("x", "y")], None],
    ]
    sender.add_columns(3, cols)
    sender.add_columns(1, [[b"b3"], ["x"], [None], [None], [{}]])
    _flush(sender)
    assert len(sent) == 1 and sent[0][0] == "Opt" and sent[0][2] is False
    msgs = sent[0][1]
    assert [m.body for m in msgs] == [b"b0", "text-\u00e9".encode(), b"b2", b"b3"]
    assert [list(m.properties.items()) for m in msgs] == [
        [("p", "1"), ("TAGS", "tagA"), ("KEYS", "k1 k2"), ("WAIT", "true"), ("UNIQ_KEY", "AB" * 10 + "000000000000")],
        [("x", "y"), ("WAIT", "true"), ("UNIQ_KEY", "AB" * 10 + "000000000001")],
        [("WAIT", "true"), ("UNIQ_KEY", "AB" * 10 + "000000000002")],
        [("WAIT", "true"), ("UNIQ_KEY", "AB" * 10 + "000000000003")],
    ]
    assert all(type(m.body) is bytes for m in msgs)


def test_destinations_and_batch_limits(make: Any) -> None:
    plan = _plan(body=0, topic=1, queue_id=2, broker_name=3)
    sender, sent = make(plan, batchSize="2")
    sender.add_columns(
        5,
        [
            [b"a", b"b", b"c", b"d", b"e"],
            ["T", "T", "U", "T", "T"],
            [None, None, 1, None, 1],
            [None, None, "brk", None, None],
        ],
    )
    _flush(sender)
    assert [(d, [m.body for m in ms]) for d, ms, _ in sent] == [
        ("T", [b"a", b"b"]),  # batchSize 2 reached
        (("U", "brk", 1), [b"c"]),
        ("T", [b"d"]),
        (("T", None, 1), [b"e"]),
    ]


def test_batch_bytes_splits_and_big_messages_go_alone(make: Any) -> None:
    sender, sent = make(_plan(body=0), topic="T", batchBytes="1024")
    bodies = [b"x" * 400, b"y" * 400, b"z" * 400, b"w" * 2000, b"v" * 10]
    sender.add_columns(len(bodies), [bodies])
    _flush(sender)
    assert [([m.body[:1] for m in ms], single) for _, ms, single in sent] == [
        ([b"x", b"y"], False),  # entries of 22 + 52 + 400 bytes: a third would pass 1024
        ([b"w"], True),  # larger than a batch: sent alone
        ([b"z", b"v"], False),
    ]


@pytest.mark.parametrize(
    ("columns", "error"),
    [
        ([[b"ok", None]], r"row 1 of partition 0: body is null or empty"),
        ([[b"ok", b""]], r"row 1 of partition 0: body is null or empty"),
        ([[b"ok", b"x"], ["T", None]], r"row 1 of partition 0: topic column is null"),
        ([[b"ok", b"x"], ["T", "T"], [None, {"k": "a\x01b"}]], r"row 1: property 'k'='a\\x01b' is blank"),
        ([[b"ok", b"x"], ["T", "T"], [None, [("k", " ")]]], r"row 1: property 'k'=' ' is blank"),
    ],
)
def test_bad_row_fails_after_the_rows_before_it(make: Any, columns: list[list[Any]], error: str) -> None:
    sender, sent = make(_plan(body=0, topic=1, properties=2) if len(columns) > 2 else _plan(body=0, topic=1))
    while len(columns) < 2:
        columns.append(["T", "T"])
    with pytest.raises(SinkDataError, match=error):
        sender.add_columns(2, columns)
    _flush(sender)
    assert [[m.body for m in ms] for _, ms, _ in sent] == [[b"ok"]]


def test_kafka_key_and_headers_become_keys_and_properties(make: Any) -> None:
    """Kafka's ``key`` (binary) and ``headers`` (key/value structs): the key becomes KEYS, the
    headers user properties under a ``properties`` map that wins; a non-UTF-8 value fails."""
    plan = ColumnPlan(
        body=0, topic=None, tags=None, keys=1, keys_is_array=False, properties=3, queue_id=None, broker_name=None,
        width=4, keys_is_binary=True, headers=2,
    )  # fmt: skip
    sender, sent = make(plan, topic="T")
    sender.add_columns(
        3,
        [
            [b"v0", b"v1", b"v2"],
            [b"order-1", None, bytearray(b"k\xc3\xa9")],
            [
                [{"key": "h", "value": b"1"}, {"key": "trace", "value": b"abc"}, {"key": "h", "value": b"2"}],
                None,
                [{"key": "gone", "value": None}],
            ],
            [{"trace": "from-properties"}, None, None],
        ],
    )
    _flush(sender)
    msgs = [m for _, batch, _ in sent for m in batch]
    assert [m.properties.get("KEYS") for m in msgs] == ["order-1", None, "k\u00e9"]
    assert msgs[0].properties["h"] == "2" and msgs[0].properties["trace"] == "from-properties"
    assert "gone" not in msgs[2].properties
    with pytest.raises(SinkDataError, match="header 'bad' is not UTF-8"):
        sender.add_columns(1, [[b"v"], [None], [[{"key": "bad", "value": b"\xff"}]], [None]])
