"""df.write / df.writeStream .format("rocketmq") against the embedded broker (real TCP, local[2]).

Messages are read back with rocketpipe's own pull API (``SyncAdmin.pull_raw``), never through
the Spark source, so a sink bug cannot hide behind a matching source bug.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from rocketpipe.client import SyncAdmin
from rocketpipe.protocol.message import MessageExt, decode_records
from rocketpipe.spark.options import SinkOptionError, parse_sink_options
from rocketpipe.spark.writer import SinkSchemaError, message_id_prefix, plan_columns
from waiting import wait_until_sync

pytestmark = pytest.mark.spark


def _topic(prefix: str, ns: str, queues: int = 4) -> str:
    topic = f"{prefix}_{uuid.uuid4().hex[:8]}"
    with SyncAdmin(namesrv_addr=ns) as admin:
        admin.create_topic(topic, queues)
    return topic


def pull_all(ns: str, topic: str) -> list[MessageExt]:
    """Every stored message of ``topic`` (all queues, offset 0 to the head)."""
    out: list[MessageExt] = []
    with SyncAdmin(namesrv_addr=ns) as admin:
        for mq in admin.topic_queues(topic):
            off, head = 0, admin.max_offset(mq)
            while off < head:
                res = admin.pull_raw(mq, off, 256)
                msgs = decode_records(res.body)
                assert msgs, f"empty pull of {mq} at {off} below head {head}"
                for m in msgs:
                    m.broker_name = mq.broker_name
                out.extend(msgs)
                off = msgs[-1].queue_offset + 1
    return out


def _writer(df, ns: str, **opts: str):
    w = df.write.format("rocketmq").option("nameServer", ns).mode("append")
    for k, v in opts.items():
        w = w.option(k, v)
    return w


def _rows(n: int, big_every: int = 0) -> list[tuple]:
    rows = []
    for i in range(n):
        body = (b"B%05d-" % i) * 20_000 if big_every and i % big_every == 3 else b"body-%d" % i
        keys = [f"k{i}", None, "shared"] if i % 5 else []
        props = {"seq": str(i), "ünï": "çødé", "UNIQ_KEY": "dropped", "nothing": None}
        rows.append((body, f"tag{i % 3}" if i % 7 else None, keys, props))
    return rows


ROW_SCHEMA = "body binary, tags string, keys array<string>, properties map<string,string>"


def _check_rows(msgs: list[MessageExt], n: int, big_every: int = 0) -> None:
    by_seq = {int(m.properties["seq"]): m for m in msgs}
    assert len(msgs) == n and sorted(by_seq) == list(range(n)), "missing or duplicated rows"
    for i, m in by_seq.items():
        assert m.body == ((b"B%05d-" % i) * 20_000 if big_every and i % big_every == 3 else b"body-%d" % i)
        assert m.tags == (f"tag{i % 3}" if i % 7 else None)
        assert m.keys == (f"k{i} shared" if i % 5 else None)
        assert m.properties["ünï"] == "çødé"
        assert "nothing" not in m.properties
        assert m.properties["UNIQ_KEY"] != "dropped" and len(m.properties["UNIQ_KEY"]) == 32
        assert m.properties["WAIT"] == "true"


@pytest.mark.parametrize("writer_input", ["arrow", "rows"])
def test_batch_write_then_pull_exact_rows(spark, ns: str, writer_input: str) -> None:
    topic = _topic("SinkBatch", ns)
    df = spark.createDataFrame(_rows(600, big_every=97), ROW_SCHEMA).repartition(3)
    # batchBytes 64 KiB: the 120 KB bodies go alone (compressed), the rest in batch requests
    _writer(df, ns, topic=topic, batchSize="50", batchBytes=str(64 * 1024), writerInput=writer_input).save()
    msgs = pull_all(ns, topic)
    _check_rows(msgs, 600, big_every=97)
    assert len({m.queue_id for m in msgs}) == 4, "batches were not spread over the queues"
    assert len({m.msg_id for m in msgs}) == 600
    # deterministic msgIds: per task (partition), one 20-hex prefix and the row indices 0..n-1
    # after it, so a retried task's duplicates carry the msgIds of its first attempt
    by_prefix: dict[str, list[int]] = {}
    for m in msgs:
        by_prefix.setdefault(m.msg_id[:20], []).append(int(m.msg_id[20:], 16))
    assert len(by_prefix) == 3  # the three partitions of the write
    assert all(sorted(v) == list(range(len(v))) for v in by_prefix.values())
    assert sum(len(v) for v in by_prefix.values()) == 600


def test_batch_write_topic_column_string_body_and_keys(spark, ns: str) -> None:
    a, b = _topic("SinkColA", ns, 2), _topic("SinkColB", ns, 2)
    rows = [(f"text-{i}", a if i % 2 else b, f"key{i}") for i in range(40)] + [("to-option", None, None)]
    df = spark.createDataFrame(rows, "body string, topic string, keys string")
    with pytest.raises(Exception, match="topic column is null and there is no topic option"):
        _writer(df, ns).save()
    _writer(df.where("topic IS NOT NULL"), ns).save()
    got_a, got_b = pull_all(ns, a), pull_all(ns, b)
    # the failed write may have delivered some rows before its task failed (at-least-once): compare sets
    assert {m.body.decode() for m in got_a} == {f"text-{i}" for i in range(40) if i % 2}
    assert {m.body.decode() for m in got_b} == {f"text-{i}" for i in range(40) if not i % 2}
    assert all(m.keys == "key" + m.body.decode().split("-")[1] and m.tags is None for m in got_a + got_b)
    # the topic option overrides the column (Kafka sink rule)
    c = _topic("SinkColC", ns, 2)
    _writer(df, ns, topic=c).save()
    assert sorted(m.body.decode() for m in pull_all(ns, c)) == sorted([f"text-{i}" for i in range(40)] + ["to-option"])


def test_batch_write_kafka_shaped_rows(spark, ns: str) -> None:
    """A DataFrame shaped for Spark's Kafka sink (key, value, headers) is written as is: value
    becomes the body, key the keys, headers user properties."""
    topic = _topic("SinkKafka", ns, 2)
    df = spark.sql(
        "SELECT CAST(concat('key-', id) AS BINARY) AS key, CAST(concat('value-', id) AS BINARY) AS value, "
        "array(named_struct('key', 'source', 'value', CAST('kafka-job' AS BINARY)), "
        "named_struct('key', 'n', 'value', CAST(CAST(id AS STRING) AS BINARY))) AS headers "
        "FROM range(30)"
    )
    _writer(df, ns, topic=topic).save()
    msgs = pull_all(ns, topic)
    assert sorted(m.body.decode() for m in msgs) == sorted(f"value-{i}" for i in range(30))
    for m in msgs:
        i = m.body.decode().split("-")[1]
        assert m.keys == f"key-{i}" and m.properties["source"] == "kafka-job" and m.properties["n"] == i


def test_batch_write_queue_id_routing(spark, ns: str) -> None:
    topic = _topic("SinkQueues", ns, 4)
    rows = [(b"q-%d" % i, i % 3 if i % 4 else None, "broker-a" if i % 8 == 1 else None) for i in range(200)]
    rows.append((b"q-2-" + b"big" * 40_000, 2, None))  # over batchBytes: sent alone (compressed) to queue 2
    df = spark.createDataFrame(rows, "body binary, queue_id int, broker_name string").repartition(2)
    _writer(df, ns, topic=topic, batchSize="4", batchBytes="65536").save()  # >= 4 round-robin batches per task
    msgs = pull_all(ns, topic)
    assert sorted(m.body for m in msgs) == sorted(r[0] for r in rows)
    assert [m.queue_id for m in msgs if len(m.body) > 1000] == [2]
    for m in msgs:
        i = int(m.body.split(b"-")[1])
        if i % 4:
            assert m.queue_id == i % 3, f"row {i} went to queue {m.queue_id}"
    assert any(m.queue_id == 3 for m in msgs), "rows without queue_id never reached queue 3"
    for q in range(4):
        offsets = sorted(m.queue_offset for m in msgs if m.queue_id == q)
        assert offsets == list(range(len(offsets)))
    bad = spark.createDataFrame([(b"x", 9)], "body binary, queue_id bigint")
    with pytest.raises(Exception, match="has no writable queue \\*:9"):
        _writer(bad, ns, topic=topic).save()


def _stream_ids(msgs: list[MessageExt], query_id: str, batches: range, partitions: int = 8) -> dict[int, set[int]]:
    """batch id → row values of the messages whose msgId has that batch's deterministic prefix."""
    prefixes = {message_id_prefix(query_id, b, p): b for b in batches for p in range(partitions)}
    out: dict[int, set[int]] = {}
    for m in msgs:
        batch = prefixes.get(m.msg_id[:20])
        assert batch is not None, f"msgId {m.msg_id} does not come from query {query_id} batches {batches}"
        out.setdefault(batch, set()).add(int(m.properties["n"]))
    return out


def test_stream_write_file_source_checkpoint_restart(spark, ns: str, tmp_path: Path) -> None:
    topic = _topic("SinkStream", ns, 4)
    src, ckpt = tmp_path / "in", tmp_path / "ckpt"
    src.mkdir()

    def add_file(k: int) -> None:
        lines = [json.dumps({"n": n, "txt": f"file{k}-row{n}"}) for n in range(100 * k, 100 * k + 100)]
        (src / f"part-{k}.json").write_text("\n".join(lines) + "\n")

    def run() -> tuple[str, list[int]]:
        df = spark.readStream.schema("n long, txt string").option("maxFilesPerTrigger", 1).json(str(src))
        out = df.selectExpr("CAST(txt AS BINARY) AS body", "map('n', CAST(n AS STRING)) AS properties", "'S' AS tags")
        q = (
            out.writeStream.format("rocketmq")
            .option("nameServer", ns)
            .option("topic", topic)
            .option("checkpointLocation", str(ckpt))
            .trigger(availableNow=True)
            .start()
        )
        assert q.awaitTermination(180), "AvailableNow query did not finish"
        assert q.exception() is None
        return q.id, [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]

    add_file(0)
    qid, sizes = run()
    assert sizes == [100]
    msgs = pull_all(ns, topic)
    assert sorted(int(m.properties["n"]) for m in msgs) == list(range(100))
    assert _stream_ids(msgs, qid, range(1)) == {0: set(range(100))}
    assert {m.body.decode() for m in msgs} == {f"file0-row{n}" for n in range(100)} and {m.tags for m in msgs} == {"S"}

    add_file(1)
    add_file(2)
    qid2, sizes = run()
    assert qid2 == qid, "the restarted query must keep its id (deterministic msgIds)"
    assert sizes == [100, 100]
    msgs = pull_all(ns, topic)
    assert sorted(int(m.properties["n"]) for m in msgs) == list(range(300)), "duplicates or gaps after restart"
    by_batch = _stream_ids(msgs, qid, range(3))
    assert set(by_batch) == {0, 1, 2} and by_batch[0] == set(range(100))
    # one file per micro-batch (maxFilesPerTrigger=1); files 1 and 2 may be taken in either order
    assert {frozenset(by_batch[1]), frozenset(by_batch[2])} == {frozenset(range(100, 200)), frozenset(range(200, 300))}


def test_stream_write_rate_source_rows_writer(spark, ns: str, tmp_path: Path) -> None:
    topic = _topic("SinkRate", ns, 2)
    df = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 25).option("numPartitions", 2).load()
    q = (
        df.selectExpr("CAST(value AS STRING) AS body", "CAST(value % 2 AS INT) AS queue_id")
        .writeStream.format("rocketmq")
        .option("nameServer", ns)
        .option("topic", topic)
        .option("writerInput", "rows")
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .start()
    )
    try:
        wait_until_sync(
            lambda: q.lastProgress is not None and q.lastProgress["batchId"] >= 2, timeout=120, what="3 micro-batches"
        )
    finally:
        q.stop()
    assert q.exception() is None
    msgs = pull_all(ns, topic)
    values = sorted(int(m.body) for m in msgs)
    assert len(values) == len(set(values)), "a row arrived twice"
    # batches 0-2 completed: their 75 rows all arrived; a batch cut short by stop() may be partial
    assert set(range(75)) <= set(values)
    assert all(m.queue_id == int(m.body) % 2 for m in msgs)


def test_bad_input_errors(spark, ns: str, tmp_path: Path) -> None:
    topic = _topic("SinkBad", ns, 1)
    ok = spark.createDataFrame([(b"x",)], "body binary")
    cases = [
        (spark.createDataFrame([("x",)], "payload string"), {"topic": topic}, "needs a 'body' column"),
        (spark.createDataFrame([(1,)], "body int"), {"topic": topic}, "column body has type int"),
        (ok, {}, "needs a topic"),
        (ok, {"topic": topic, "batchSize": "zero"}, "batchSize='zero' is not an integer"),
        (ok, {"topic": topic, "startingOffsets": "earliest"}, "unknown option"),
        (
            spark.createDataFrame([(b"x", {"a": 1})], "body binary, properties map<string,int>"),
            {"topic": topic},
            "needs map<string,string>",
        ),
        (
            spark.createDataFrame([(b"x", [1])], "body binary, keys array<int>"),
            {"topic": topic},
            "string or array<string>",
        ),
    ]
    for df, opts, text in cases:
        with pytest.raises(Exception, match=text):
            _writer(df, ns, **opts).save()
    with pytest.raises(Exception, match="option nameServer is required"):
        ok.write.format("rocketmq").option("topic", topic).mode("append").save()
    with pytest.raises(Exception, match="cannot overwrite a topic"):
        ok.write.format("rocketmq").option("nameServer", ns).option("topic", topic).mode("overwrite").save()
    nulls = spark.createDataFrame([(b"x",), (None,), (b"",)], "body binary").coalesce(1)
    with pytest.raises(Exception, match="body is null or empty"):
        _writer(nulls, ns, topic=topic).save()
    blank = spark.createDataFrame([(b"x", {"p": " "})], "body binary, properties map<string,string>")
    with pytest.raises(Exception, match="property 'p'=' ' is blank"):
        _writer(blank, ns, topic=topic).save()
    # the rate source's value (bigint) is taken for Kafka's value column, of the wrong type
    with pytest.raises(Exception, match="column value has type bigint; the rocketmq sink needs binary or string"):
        spark.readStream.format("rate").load().writeStream.format("rocketmq").option("nameServer", ns).option(
            "topic", topic
        ).option("checkpointLocation", str(tmp_path / "c")).start().awaitTermination(60)
    # planning-time errors sent nothing; the null-body task sent at most the row before the bad one
    assert [m.body for m in pull_all(ns, topic)] in ([], [b"x"])


def test_option_and_schema_planning_without_spark() -> None:
    from pyspark.sql.types import BinaryType, LongType, StringType, StructField, StructType

    opts = parse_sink_options({"namesrv_addr": "h:9876", "producer_group": "g1", "TOPIC": "T", "batchbytes": "2048"})
    assert (opts.name_server, opts.producer_group, opts.topic, opts.batch_bytes, opts.writer_input) == (
        "h:9876",
        "g1",
        "T",
        2048,
        "arrow",
    )
    with pytest.raises(SinkOptionError, match="batchBytes=8388608 is out of range"):
        parse_sink_options({"nameServer": "h:1", "batchBytes": str(8 * 1024 * 1024)})
    with pytest.raises(SinkOptionError, match="producerGroup='bad group' is invalid"):
        parse_sink_options({"nameServer": "h:1", "producerGroup": "bad group"})
    schema = StructType(
        [
            StructField("x", LongType()),
            StructField("queue_id", LongType()),
            StructField("body", StringType()),
            StructField("topic", StringType()),
        ]
    )
    plan = plan_columns(schema, parse_sink_options({"nameServer": "h:1"}))
    assert (plan.body, plan.topic, plan.queue_id, plan.tags, plan.used) == (2, 3, 1, None, frozenset({1, 2, 3}))
    with pytest.raises(SinkSchemaError, match="column queue_id has type string"):
        plan_columns(StructType([StructField("body", BinaryType()), StructField("queue_id", StringType())]), opts)
    # Kafka's sink columns: value for body, key (binary) for keys, headers as properties
    from pyspark.sql.types import ArrayType

    header = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
    kafka = StructType(
        [
            StructField("key", BinaryType()),
            StructField("value", BinaryType()),
            StructField("headers", ArrayType(header)),
            StructField("topic", StringType()),
        ]
    )
    plan = plan_columns(kafka, opts)
    assert (plan.body, plan.keys, plan.keys_is_binary, plan.headers, plan.topic) == (1, 0, True, 2, 3)
    with pytest.raises(SinkSchemaError, match="column headers has type array<string>"):
        plan_columns(
            StructType([StructField("value", BinaryType()), StructField("headers", ArrayType(StringType()))]), opts
        )
    with pytest.raises(SinkSchemaError, match="needs a 'body' column \\(or Kafka's 'value'"):
        plan_columns(StructType([StructField("payload", BinaryType())]), opts)
    # a batch writer carries one write id, the same in every unpickled copy (every task attempt)
    import pickle

    from rocketpipe.spark.writer import make_writer

    w = make_writer(opts, StructType([StructField("body", BinaryType())]), overwrite=False, streaming=False)
    copies = [pickle.loads(pickle.dumps(w)) for _ in range(2)]
    assert len(w.write_id) == 32 and {c.write_id for c in copies} == {w.write_id}  # type: ignore[attr-defined]
    other = make_writer(opts, StructType([StructField("body", BinaryType())]), overwrite=False, streaming=False)
    assert other.write_id != w.write_id  # type: ignore[attr-defined]
    assert message_id_prefix("q", 1, 2) == message_id_prefix("q", 1, 2) != message_id_prefix("q", 2, 1)
    assert len(message_id_prefix("q", 1, 2)) == 20
