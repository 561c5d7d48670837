"""The Spark connector against a broker: embedded (rocketpipe), Apache 5.x and Apache 4.x.

``format("rocketmq")`` runs in a real ``local[2]`` SparkSession whose executors (other
processes) pull from / send to the target over TCP. Against Apache, routes come from the Apache
name server and the records are those the Apache broker stored, so each assertion is a claim
about the connector's wire compatibility.

The ``target`` fixture's embedded cluster lives on the test's event loop, so every blocking
Spark call runs in a worker thread (``asyncio.to_thread``).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from interop_support import Target, create_topic_on, unique

from rocketpipe import Admin, Message, Producer, SendResult, SendStatus
from rocketpipe.protocol.message import SYSTEM_PROPERTY_NAMES

_TESTS = Path(__file__).resolve().parents[1]
_VENV_PYTHON = _TESTS.parent / ".venv" / "bin" / "python"


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A ``local[2]`` SparkSession configured like ``tests/spark/conftest.py``'s (shared if one exists)."""
    python = str(_VENV_PYTHON) if _VENV_PYTHON.exists() else sys.executable
    os.environ["PYSPARK_PYTHON"] = python
    os.environ["PYSPARK_DRIVER_PYTHON"] = python
    paths = [str(_TESTS / "spark"), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    shared = SparkContext._active_spark_context is not None  # e.g. tests/spark's session in the same run
    session = (
        SparkSession.builder.master("local[2]")
        .appName("rocketpipe-interop-spark")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.streaming.stopTimeout", "10s")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        if not shared:
            session.stop()


def _user_props(props: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in props.items() if k not in SYSTEM_PROPERTY_NAMES}


def _check_row(row: Any, topic: str, broker: str, expected: dict[str, Any], res: SendResult) -> None:
    assert row["topic"] == topic and row["broker_name"] == broker
    assert (row["queue_id"], row["queue_offset"]) == (res.message_queue.queue_id, res.queue_offset)
    assert row["msg_id"] == res.msg_id
    assert bytes(row["body"]) == expected["body"]
    assert row["tags"] == expected["tags"]
    assert row["keys"] == expected["keys"]
    assert _user_props(row["properties"]) == expected["props"]
    assert row["properties"]["UNIQ_KEY"] == res.msg_id
    assert row["reconsume_times"] == 0
    assert row["born_timestamp"] is not None and row["store_timestamp"] >= row["born_timestamp"]


async def test_spark_source_reads_topic(target: Target, spark: Any, tmp_path: Path) -> None:
    """Producer → target; Spark batch read with start/end offsets and AvailableNow stream → every column checked."""
    topic = unique("SparkSrc")
    await create_topic_on(target, topic, 4)
    expected: list[tuple[dict[str, Any], SendResult]] = []
    async with Producer(unique("pg"), namesrv_addr=target.namesrv_addr) as p:
        for i in range(48):
            body = (b"big-%d-" % i) * 2000 if i % 16 == 5 else b"spark-%d" % i  # > 4 KiB: sent compressed
            exp = {"body": body, "tags": f"T{i % 3}", "keys": f"k{i} shared", "props": {"idx": str(i), "ünï": "çødé"}}
            r = await p.send(
                Message.build(topic, body, tags=exp["tags"], keys=[f"k{i}", "shared"], properties=exp["props"])
            )
            assert r.send_status is SendStatus.SEND_OK
            expected.append((exp, r))
        batch = [Message.build(topic, f"batch-{j}", properties={"j": str(j)}) for j in range(8)]
        r = await p.send_batch(batch)
        for j, (m, msg_id) in enumerate(zip(batch, r.msg_id.split(","), strict=True)):
            one = SendResult(r.send_status, msg_id, "", r.message_queue, r.queue_offset + j)
            expected.append(({"body": m.body, "tags": None, "keys": None, "props": {"j": str(j)}}, one))
    by_pos = {(r.message_queue.queue_id, r.queue_offset): (exp, r) for exp, r in expected}
    assert len(by_pos) == 56 and len({q for q, _ in by_pos}) == 4, "messages did not spread over the 4 queues"
    async with Admin(target.namesrv_addr) as admin:
        heads = {mq.queue_id: await admin.max_offset(mq) for mq in await admin.topic_queues(topic)}
    assert sum(heads.values()) == 56

    ns, broker = target.namesrv_addr, target.broker_name

    def batch_read(start: dict[int, int], end: dict[int, int]) -> list[Any]:
        return (
            spark.read.format("rocketmq")
            .option("nameServer", ns)
            .option("topic", topic)
            .option("startingOffsets", json.dumps({topic: {f"{broker}:{q}": o for q, o in start.items()}}))
            .option("endingOffsets", json.dumps({topic: {f"{broker}:{q}": o for q, o in end.items()}}))
            .load()
            .collect()
        )

    rows = await asyncio.to_thread(batch_read, dict.fromkeys(heads, 0), heads)
    assert sorted((r["queue_id"], r["queue_offset"]) for r in rows) == sorted(by_pos)
    for row in rows:
        exp, res = by_pos[(row["queue_id"], row["queue_offset"])]
        _check_row(row, topic, broker, exp, res)

    # a sub-range: [1, head - 1) of queue 0 only, the others empty
    rows = await asyncio.to_thread(
        batch_read,
        {q: (1 if q == 0 else h) for q, h in heads.items()},
        {q: (h - 1 if q == 0 else h) for q, h in heads.items()},
    )
    assert sorted(r["queue_offset"] for r in rows) == list(range(1, heads[0] - 1)) and {
        r["queue_id"] for r in rows
    } == {0}

    out, ckpt = tmp_path / "out", tmp_path / "ckpt"

    def stream() -> tuple[list[int], list[Any]]:
        q = (
            spark.readStream.format("rocketmq")
            .option("nameServer", ns)
            .option("topic", topic)
            .option("maxOffsetsPerTrigger", "20")
            .load()
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(ckpt))
            .trigger(availableNow=True)
            .start()
        )
        assert q.awaitTermination(180), "AvailableNow query did not finish"
        assert q.exception() is None
        sizes = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
        return sizes, spark.read.parquet(str(out)).collect()

    sizes, rows = await asyncio.to_thread(stream)
    assert sizes == [20, 20, 16]
    assert sorted((r["queue_id"], r["queue_offset"]) for r in rows) == sorted(by_pos)
    for row in rows:
        exp, res = by_pos[(row["queue_id"], row["queue_offset"])]
        _check_row(row, topic, broker, exp, res)


async def test_spark_sink_writes_topic(target: Target, spark: Any) -> None:
    """df.write.format("rocketmq") → target (batched and queue-routed sends) → read back with the Spark source."""
    topic = unique("SparkSink")
    await create_topic_on(target, topic, 4)
    data = []
    for i in range(120):
        body = (b"S%03d-" % i) * 300 if i % 40 == 9 else b"row-%d" % i
        data.append((body, f"t{i % 2}", [f"k{i}", "all"], {"i": str(i), "ünï": "çødé"}, i % 4 if i % 3 == 0 else None))
    ns = target.namesrv_addr

    def write_and_read() -> list[Any]:
        df = spark.createDataFrame(
            data, "body binary, tags string, keys array<string>, properties map<string,string>, queue_id int"
        )
        df.repartition(2).write.format("rocketmq").option("nameServer", ns).option("topic", topic).option(
            "batchSize", "16"
        ).mode("append").save()
        return spark.read.format("rocketmq").option("nameServer", ns).option("topic", topic).load().collect()

    rows = await asyncio.to_thread(write_and_read)
    by_i = {int(r["properties"]["i"]): r for r in rows}
    assert len(rows) == 120 and sorted(by_i) == list(range(120))
    for i, row in by_i.items():
        body, tags, keys, props, qid = data[i]
        assert row["topic"] == topic and row["broker_name"] == target.broker_name
        assert bytes(row["body"]) == body and row["tags"] == tags and row["keys"] == " ".join(keys)
        assert _user_props(row["properties"]) == props
        assert row["msg_id"] == row["properties"]["UNIQ_KEY"] and len(row["msg_id"]) == 32
        if qid is not None:
            assert row["queue_id"] == qid, f"row {i} asked for queue {qid}, stored in {row['queue_id']}"
    per_queue: dict[int, list[int]] = {}
    for r in rows:
        per_queue.setdefault(r["queue_id"], []).append(r["queue_offset"])
    assert sorted(per_queue) == [0, 1, 2, 3]
    assert all(sorted(v) == list(range(len(v))) for v in per_queue.values())


async def test_spark_sink_exactly_once(target: Target, spark: Any, tmp_path: Path) -> None:
    """deliveryGuarantee=exactly-once against the target: the driver's two-way END_TRANSACTION
    COMMITs are acknowledged and every row is read back once; then a replayed micro-batch whose
    first driver died after committing 8 of 20 halves finishes the logged decision (the target's
    unique-key query tells which halves are visible) and rolls the replay's halves back."""
    from rocketpipe.client.config import ClientConfig
    from rocketpipe.protocol.message import PROPERTY_PRODUCER_GROUP, PROPERTY_TRANSACTION_PREPARED
    from rocketpipe.spark.transactional import DecisionLog, finish_batch, half_of

    topic = unique("SparkEos")
    await create_topic_on(target, topic, 4)
    ns = target.namesrv_addr

    def write_and_read() -> list[Any]:
        df = spark.createDataFrame([(f"eos-{i}",) for i in range(200)], "body string").repartition(2)
        df.write.format("rocketmq").option("nameServer", ns).option("topic", topic).option(
            "deliveryGuarantee", "exactly-once"
        ).mode("append").save()
        return spark.read.format("rocketmq").option("nameServer", ns).option("topic", topic).load().collect()

    rows = await asyncio.to_thread(write_and_read)
    assert sorted(bytes(r["body"]).decode() for r in rows) == sorted(f"eos-{i}" for i in range(200))
    assert all(r["properties"]["TRAN_MSG"] == "true" for r in rows)

    group = "rocketpipe_spark_sink"
    keys = [unique("K").upper().replace("_", "")[:20] + f"{i:012X}" for i in range(20)]

    async def send_halves() -> list[Any]:
        async with Producer(group, namesrv_addr=ns) as p:
            props = {PROPERTY_TRANSACTION_PREPARED: "true", PROPERTY_PRODUCER_GROUP: group}
            return [half_of(await p.send(Message(topic, k.encode(), 0, {**props, "UNIQ_KEY": k}))) for k in keys]

    config = ClientConfig(namesrv_addr=ns)
    first = await send_halves()
    decisions = DecisionLog(tmp_path, "query-1")
    decisions.write_decision(3, first)
    assert (await finish_batch(config, group, first[:8], timeout=5)).committed == 8
    out = await finish_batch(config, group, await send_halves(), timeout=5, decisions=decisions, batch_id=3)
    assert (out.replay, out.committed, out.already_visible, out.rolled_back) == (True, 12, 8, 20)

    def read_back() -> list[Any]:
        return spark.read.format("rocketmq").option("nameServer", ns).option("topic", topic).load().collect()

    again = await asyncio.to_thread(read_back)
    assert sorted(r["msg_id"] for r in again if not bytes(r["body"]).startswith(b"eos-")) == sorted(keys)
