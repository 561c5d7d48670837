"""``deliveryGuarantee=exactly-once``: rows as half messages the driver commits (embedded broker, local[2]).

Messages are read back with rocketpipe's pull API, never through the Spark source. The broker's
own END_TRANSACTION counters (``TransactionService.committed`` / ``rolled_back``) show what the
driver and the tasks ended.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from spark_cluster import ThreadedCluster, started
from test_spark_sink import ROW_SCHEMA, _check_rows, _rows, _topic, pull_all

from rocketpipe.broker.topics import TRANS_HALF_TOPIC
from rocketpipe.client import Message, Producer, SyncAdmin
from rocketpipe.client.config import ClientConfig
from rocketpipe.protocol.message import PROPERTY_PRODUCER_GROUP, PROPERTY_TRANSACTION_PREPARED
from rocketpipe.spark.options import SinkOptionError, parse_sink_options
from rocketpipe.spark.transactional import DecisionLog, Half, finish_batch, half_of
from rocketpipe.spark.writer import message_id_prefix
from waiting import wait_until_sync

pytestmark = pytest.mark.spark

GROUP = "rocketpipe_spark_sink"


def _ended(cluster: ThreadedCluster) -> tuple[int, int]:
    """(committed, rolled back) END_TRANSACTIONs the broker has processed so far."""
    assert cluster.cluster is not None
    tx = cluster.cluster.brokers[0].transactions
    return tx.committed, tx.rolled_back


def test_options() -> None:
    base = {"nameServer": "127.0.0.1:9876", "topic": "T"}
    assert not parse_sink_options(base).exactly_once
    o = parse_sink_options({**base, "deliveryGuarantee": "EXACTLY-ONCE", "transactionLogDir": "/x"})
    assert o.exactly_once and o.transaction_log_dir == "/x"
    with pytest.raises(SinkOptionError, match="deliveryGuarantee='at-most-once' is invalid"):
        parse_sink_options({**base, "deliveryGuarantee": "at-most-once"})


def test_batch_write_commits_every_half(spark, ns: str, cluster: ThreadedCluster) -> None:
    topic = _topic("EosBatch", ns)
    before = _ended(cluster)
    df = spark.createDataFrame(_rows(600, big_every=97), ROW_SCHEMA).repartition(3)
    df.write.format("rocketmq").option("nameServer", ns).option("topic", topic).option(
        "deliveryGuarantee", "exactly-once"
    ).mode("append").save()
    msgs = pull_all(ns, topic)
    _check_rows(msgs, 600, big_every=97)  # every row once, properties kept through the half
    # committed messages keep the half's properties, as on Apache (bridge.committed_message)
    assert all(m.properties["TRAN_MSG"] == "true" and m.properties["PGROUP"] == GROUP for m in msgs)
    committed, rolled_back = _ended(cluster)
    assert (committed - before[0], rolled_back - before[1]) == (600, 0)


def test_batch_write_failed_job_leaves_nothing_visible(spark, ns: str, cluster: ThreadedCluster) -> None:
    """A task fails on a bad row after storing halves: it rolls them back, the job aborts and
    rolls back the other tasks' halves. The at-least-once sink delivers rows in the same case."""
    topic = _topic("EosAbort", ns, 2)
    rows = [(f"row-{i}" if i != 450 else None,) for i in range(500)]
    df = spark.createDataFrame(rows, "body string").coalesce(1)
    before = _ended(cluster)
    with pytest.raises(Exception, match="body is null or empty"):
        df.write.format("rocketmq").option("nameServer", ns).option("topic", topic).option(
            "deliveryGuarantee", "exactly-once"
        ).option("batchSize", "50").mode("append").save()
    assert pull_all(ns, topic) == []
    committed, rolled_back = _ended(cluster)
    assert committed == before[0]
    # rows 0..449 were queued before the bad row; those already sent were stored and rolled back
    assert 0 < rolled_back - before[1] <= 450


def test_stream_write_logs_decisions(spark, ns: str, cluster: ThreadedCluster, tmp_path: Path) -> None:
    topic = _topic("EosStream", ns)
    src, txlog = tmp_path / "in", tmp_path / "txlog"
    src.mkdir()
    for k in range(3):
        lines = [json.dumps({"n": n}) for n in range(100 * k, 100 * k + 100)]
        (src / f"part-{k}.json").write_text("\n".join(lines) + "\n")
    df = spark.readStream.schema("n long").option("maxFilesPerTrigger", 1).json(str(src))
    q = (
        df.selectExpr("CAST(n AS STRING) AS body", "map('n', CAST(n AS STRING)) AS properties")
        .writeStream.format("rocketmq")
        .option("nameServer", ns)
        .option("topic", topic)
        .option("deliveryGuarantee", "exactly-once")
        .option("transactionLogDir", str(txlog))
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    assert q.awaitTermination(180), "AvailableNow query did not finish"
    assert q.exception() is None
    msgs = pull_all(ns, topic)
    assert sorted(int(m.body) for m in msgs) == list(range(300))
    decisions = DecisionLog(txlog, q.id)
    for b in range(3):
        logged = decisions.decision(b)
        assert logged is not None and len(logged) == 100 and decisions.is_done(b)
        prefixes = {message_id_prefix(q.id, b, p) for p in range(8)}
        assert {h.msg_id[:20] for h in logged} <= prefixes


def test_stream_write_needs_a_transaction_log(spark, ns: str, tmp_path: Path) -> None:
    df = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 5).load()
    q = (
        df.selectExpr("CAST(value AS STRING) AS body")
        .writeStream.format("rocketmq")
        .option("nameServer", ns)
        .option("topic", "T")
        .option("deliveryGuarantee", "exactly-once")
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .start()
    )
    try:
        with pytest.raises(Exception, match="needs option transactionLogDir"):
            q.awaitTermination(60)
    finally:
        q.stop()


def _send_halves(cluster: ThreadedCluster, ns: str, topic: str, keys: list[str]) -> list[Half]:
    async def go() -> list[Half]:
        async with Producer(GROUP, namesrv_addr=ns) as p:
            out = []
            for k in keys:
                props = {PROPERTY_TRANSACTION_PREPARED: "true", PROPERTY_PRODUCER_GROUP: GROUP, "UNIQ_KEY": k}
                out.append(half_of(await p.send(Message(topic, f"body-{k}".encode(), 0, props))))
            return out

    return cluster.run(go())


def test_replayed_batch_finishes_the_logged_decision(ns: str, cluster: ThreadedCluster, tmp_path: Path) -> None:
    """The driver died after committing 8 of a batch's 20 halves: the replay (same rows, new
    halves) commits the 12 others of the logged decision, rolls its own back; a second replay
    after the done mark commits nothing."""
    topic = _topic("EosReplay", ns, 2)
    keys = [f"{uuid.uuid4().hex[:20].upper()}{i:012X}" for i in range(20)]
    first = _send_halves(cluster, ns, topic, keys)
    decisions = DecisionLog(tmp_path, "query-1")
    decisions.write_decision(7, first)
    config = ClientConfig(namesrv_addr=ns)
    # the first driver's commit got through 8 halves: commit them alone, with no log
    out = cluster.run(finish_batch(config, GROUP, first[:8], timeout=5))
    assert out.committed == 8 and not out.replay
    assert not decisions.is_done(7)

    before = _ended(cluster)
    replay = _send_halves(cluster, ns, topic, keys)
    out = cluster.run(finish_batch(config, GROUP, replay, timeout=5, decisions=decisions, batch_id=7))
    assert (out.replay, out.committed, out.already_visible, out.rolled_back) == (True, 12, 8, 20)
    assert decisions.is_done(7)
    assert _ended(cluster) == (before[0] + 12, before[1] + 20)
    msgs = pull_all(ns, topic)
    assert sorted(m.msg_id for m in msgs) == sorted(keys), "every row exactly once"

    again = _send_halves(cluster, ns, topic, keys)
    out = cluster.run(finish_batch(config, GROUP, again, timeout=5, decisions=decisions, batch_id=7))
    assert (out.committed, out.already_visible, out.rolled_back) == (0, 20, 20)
    assert sorted(m.msg_id for m in pull_all(ns, topic)) == sorted(keys)


def _visible(ns: str, topic: str) -> int:
    with SyncAdmin(namesrv_addr=ns) as admin:
        return sum(admin.max_offset(mq) for mq in admin.topic_queues(topic))


def _run_driver(args: list[str]) -> subprocess.Popen[str]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    return subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("eos_driver.py")), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        start_new_session=True,
    )


def _write_parts(src: Path, parts: int, rows: int) -> None:
    """``parts`` JSON files of ``rows`` numbered rows each (0, 1, … in order), the stream's input."""
    src.mkdir()
    for k in range(parts):
        (src / f"part-{k}.json").write_text("".join(f'{{"n": {n}}}\n' for n in range(rows * k, rows * (k + 1))))


def _finished(driver: subprocess.Popen[str]) -> str:
    """The driver's output once it exited 0 (its process group killed if it outlives 600 s)."""
    try:
        out, _ = driver.communicate(timeout=600)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
        driver.wait(30)
    assert driver.returncode == 0, out[-3000:]
    return out


def _assert_each_row_once(ns: str, topic: str, n: int) -> list[int]:
    """The topic holds rows 0 … n-1, each exactly once; returns them sorted."""
    values = sorted(int(m.body) for m in pull_all(ns, topic))
    assert len(values) == len(set(values)), f"{len(values) - len(set(values))} rows delivered twice"
    assert values == list(range(n)), f"{n - len(set(values))} rows missing"
    return values


def test_driver_killed_mid_commit_then_restarted_delivers_each_row_once(ns: str, tmp_path: Path) -> None:
    """SIGKILL of the whole driver (JVM and Python workers) once the first micro-batch's decision
    is logged and some of its halves are visible, but not all; the restarted query replays the
    batch, finishes the logged decision and goes on: each of the 3 x 5,000 rows once."""
    rows = 5_000
    topic = _topic("EosKill", ns, 4)
    src, ckpt, txlog = tmp_path / "in", tmp_path / "ckpt", tmp_path / "txlog"
    _write_parts(src, 3, rows)
    args = [ns, topic, str(src), str(ckpt), str(txlog)]

    driver = _run_driver(args)
    try:
        seen: dict[str, object] = {}

        def mid_commit() -> bool:
            if driver.poll() is not None:
                raise AssertionError(f"driver exited before the kill: {driver.communicate()[0][-3000:]}")
            decisions = list(txlog.glob("*/0.decision"))
            if not decisions:
                return False
            seen["visible"] = _visible(ns, topic)
            seen["done"] = (decisions[0].parent / "0.done").exists()
            return 0 < seen["visible"] < rows  # type: ignore[operator]

        wait_until_sync(mid_commit, timeout=240, interval=0.01, what="batch 0 half committed")
        os.killpg(driver.pid, signal.SIGKILL)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
        driver.wait(30)
    assert seen["done"] is False
    partial = int(seen["visible"])  # type: ignore[call-overload]

    _finished(_run_driver(args))
    values = _assert_each_row_once(ns, topic, 3 * rows)
    query_dir = next(txlog.iterdir())
    assert all((query_dir / f"{b}.done").exists() for b in range(3))
    print(f"killed with {partial} of {rows} rows of batch 0 committed; after restart {len(values)} rows, 0 duplicates")


def _halves_stored(cluster: ThreadedCluster) -> int:
    assert cluster.cluster is not None
    return cluster.cluster.brokers[0].store.get_max_offset(TRANS_HALF_TOPIC, 0)


def _sockets_to(port: int) -> set[str]:
    """Inodes of this machine's IPv4 TCP sockets connected to ``port`` (``/proc/net/tcp``)."""
    inodes = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[2].rsplit(":", 1)[1], 16) == port and fields[3] == "01":  # ESTABLISHED
            inodes.add(fields[9])
    return inodes


def _python_writers(session: int, broker_port: int) -> list[int]:
    """Pids of the Python workers of process session ``session`` (forked by ``pyspark.daemon``)
    connected to the broker: the sink's write tasks, not the driver's planning processes."""
    connected = _sockets_to(broker_port)
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[3]) != session or b"pyspark.daemon" not in (stat.parent / "cmdline").read_bytes():
                continue
            links = {os.readlink(fd) for fd in (stat.parent / "fd").iterdir()}
        except OSError:
            continue  # exited meanwhile
        if any(link.startswith("socket:[") and link[8:-1] in connected for link in links):
            pids.append(int(stat.parent.name))
    return pids


def test_python_workers_killed_mid_write_are_retried_and_deliver_each_row_once(tmp_path: Path) -> None:
    """SIGKILL of every Python worker that is sending halves (the write tasks: connected to the
    broker; ``local[2,4]`` retries a failed task) while the first micro-batch's halves are sent:
    the killed attempts' halves are never committed, the retries' are; each of the 2 x 5,000 rows
    is read back once.

    A broker of its own: the module's broker re-puts the undecided halves of the other tests into
    the half topic at each transaction check (as Java's check service does), which would move
    the half count this test watches."""
    rows = 5_000
    with started(tmp_path / "broker") as tc:
        assert tc.cluster is not None
        ns, broker_port = tc.cluster.namesrv_addr, int(tc.cluster.broker_addr.rsplit(":", 1)[1])
        topic = _topic("EosExecKill", ns, 4)
        src, ckpt, txlog = tmp_path / "in", tmp_path / "ckpt", tmp_path / "txlog"
        _write_parts(src, 2, rows)

        driver = _run_driver([ns, topic, str(src), str(ckpt), str(txlog), "local[2,4]"])
        writers: list[int] = []
        try:

            def mid_write() -> bool:
                if driver.poll() is not None:
                    raise AssertionError(f"driver exited before the kill: {driver.communicate()[0][-3000:]}")
                if list(txlog.glob("*/0.decision")):
                    raise AssertionError("batch 0 reached its commit before the workers were killed")
                if _halves_stored(tc) < 500:
                    return False
                writers[:] = _python_writers(driver.pid, broker_port)
                return bool(writers)

            wait_until_sync(mid_write, timeout=240, interval=0.01, what="batch 0 halves being sent")
            for pid in writers:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        except BaseException:
            if driver.poll() is None:
                os.killpg(driver.pid, signal.SIGKILL)
            driver.wait(30)
            raise
        _finished(driver)
        values = _assert_each_row_once(ns, topic, 2 * rows)
        stored, committed = _halves_stored(tc), _ended(tc)[0]
        assert committed == 2 * rows and stored > 2 * rows, (stored, committed)
        print(f"killed {len(writers)} workers; {stored} halves stored, {committed} committed, {len(values)} rows")
