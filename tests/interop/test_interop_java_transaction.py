"""The official Java clients' TransactionMQProducer (5.3.x and 4.9.8) against a broker.

``TransactionScenario`` (tests/interop/java) sends with TransactionMQProducer +
TransactionListener; the broker is either the real Apache RocketMQ 5.3.3 (the control, a
cluster of this module with fast transaction checks) or rocketpipe's ``local_cluster`` with the
same check interval / timeout. Every message is then read back from every queue of the topic
(``Admin.pull_raw``) and checked against what the Java side reported.

* commit: executeLocalTransaction says COMMIT_MESSAGE → each message visible exactly once;
* rollback: ROLLBACK_MESSAGE → none visible, never checked (waited on: a later marker
  transaction, committed by its check-back, is visible — a check round ran after the rollbacks);
* unknown-then-check: UNKNOW, the check-back commits even idx and rolls back odd idx → even
  visible once, odd never (again after a marker);
* crash: the producer halts its JVM with every half message acknowledged and no END_TRANSACTION
  sent; nothing is visible; a second process of the same producer group answers the broker's
  check-backs with COMMIT_MESSAGE → all visible exactly once;
* the committed record's shape (properties, sysFlag, preparedTransactionOffset naming the half
  message) is the same on rocketpipe as on Apache 5.3.3.

Apache 5.3.3 batches the op messages that mark a half message as resolved
(``transactionOpBatchInterval``, 3 s by default). With check-backs every second after one second
(as here) its check service would not see the ops of resolved transactions in time: it
re-checks rolled-back messages and — when the producer answers COMMIT_MESSAGE again — commits a
message twice. The control cluster therefore writes its ops every 100 ms.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from interop_support import TIMINGS, JavaClient, create_topic, read_topic, unique

from rocketpipe import Admin, MessageExt
from rocketpipe.protocol import sysflag
from rocketpipe.protocol.message import create_offset_msg_id
from rocketpipe.testing.apache import APACHE_VERSIONS, ApacheCluster, ApacheUnavailableError, apache_cluster
from rocketpipe.testing.cluster import local_cluster
from waiting import wait_until

#: Check-back interval and the age (ms) at which a half message is first checked, on both brokers.
CHECK_INTERVAL_MS = 1000
TRANSACTION_TIMEOUT_MS = 1000

#: The Apache control broker: fast check-backs, ops written well within one check interval.
APACHE_TX_CONF = {
    "transactionCheckInterval": str(CHECK_INTERVAL_MS),
    "transactionTimeOut": str(TRANSACTION_TIMEOUT_MS),
    "transactionOpBatchInterval": "100",
}

#: Where both brokers keep half messages (TopicValidator.RMQ_SYS_TRANS_HALF_TOPIC).
HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"

UTF8_KEY, UTF8_VALUE = "\u00fcn\u00ef", "\u00e7\u00f8d\u00e9"

#: Properties Apache 5.3.3 and rocketpipe add to every stored message and 4.9.7 does not (see
#: test_interop_java.VERSION_DEPENDENT): left out of the record comparison, which also runs
#: against the 4.9.7 control.
APACHE5_ONLY = {"MSG_REGION", "TRACE_ON"}


@dataclass
class TxBroker:
    """A broker the Java producer talks to: ``kind`` is ``apache-5`` or ``rocketpipe``."""

    kind: str
    namesrv_addr: str
    broker_name: str


@pytest.fixture(scope="module")
def apache_tx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApacheCluster]:
    """An Apache 5.3.3 cluster of its own (the session's ``apache_5`` checks every minute)."""
    version = APACHE_VERSIONS["apache-5"]
    try:
        with apache_cluster(version, tmp_path_factory.mktemp("apache-5-tx"), broker_conf=APACHE_TX_CONF) as c:
            TIMINGS["apache-5 (fast transaction checks) start-up"] = c.startup_seconds
            yield c
    except ApacheUnavailableError as exc:
        pytest.fail(f"Apache RocketMQ {version} (apache-5, transactions) unavailable: {exc}", pytrace=False)


@asynccontextmanager
async def rocketpipe_broker(tmp_path: Path) -> AsyncIterator[TxBroker]:
    """rocketpipe's name server + broker with the control's check interval and timeout."""
    async with local_cluster(
        tmp_path / "store",
        transaction_check_interval=CHECK_INTERVAL_MS,
        transaction_timeout=TRANSACTION_TIMEOUT_MS,
    ) as c:
        yield TxBroker("rocketpipe", c.namesrv_addr, c.broker.config.broker_name)


@pytest.fixture(params=["apache-5", "rocketpipe"])
async def tx_broker(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TxBroker]:
    if request.param == "rocketpipe":
        async with rocketpipe_broker(tmp_path) as b:
            yield b
        return
    ac: ApacheCluster = request.getfixturevalue("apache_tx")
    yield TxBroker("apache-5", ac.namesrv_addr, ac.broker_name)


# ------------------------------------------------------------------------------ helpers


async def run_tx(java_client: JavaClient, b: TxBroker, topic: str, group: str, mode: str, n: int) -> dict[str, Any]:
    """``TransactionScenario <namesrv> topic group mode n 30``; fails on the scenario's error."""
    res = await java_client.run("TransactionScenario", b.namesrv_addr, topic, group, mode, str(n), "30", timeout=60)
    assert res["ok"], f"{mode}: {res.get('error')}"
    assert res["mode"] == mode
    if mode != "crash":  # every END_TRANSACTION of an answered check-back was written before exit
        assert res["checkExecutorDrained"], f"{mode}: a check-back callback was still running"
    return res


async def visible(admin: Admin, topic: str, msg_ids: set[str]) -> bool:
    return msg_ids <= {m.msg_id for m in await read_topic(admin, topic)}


def check_message(m: MessageExt, topic: str, mode: str, i: int) -> None:
    """What TransactionScenario.msg(topic, mode, i) sent, as committed on ``topic``."""
    assert m.topic == topic
    assert m.body == f"tx-{mode}-{i}".encode()
    assert m.tags == f"Tag{i % 3}"
    assert m.keys == f"key-{i} tx"
    assert m.properties["mode"] == mode and m.properties["idx"] == str(i)
    assert m.properties[UTF8_KEY] == UTF8_VALUE
    assert m.sys_flag & sysflag.TRANSACTION_TYPE_MASK == sysflag.TRANSACTION_COMMIT_TYPE, m.sys_flag


def check_marker(m: MessageExt, topic: str) -> None:
    assert m.topic == topic and m.body == b"marker" and m.keys == "marker" and m.tags == "TagM"
    assert m.properties["marker"] == "1"
    assert m.sys_flag & sysflag.TRANSACTION_TYPE_MASK == sysflag.TRANSACTION_COMMIT_TYPE, m.sys_flag


def check_sends(res: dict[str, Any], b: TxBroker, topic: str, n: int, local_state: str) -> dict[str, int]:
    """The TransactionSendResults (SEND_OK, ``local_state``, our topic / broker, transaction id =
    msg id) and what executeLocalTransaction saw; returns msg id → idx."""
    sends = res["sends"]
    assert [(s["idx"], s["status"], s["localState"]) for s in sends] == [(i, "SEND_OK", local_state) for i in range(n)]
    for s in sends:
        assert s["queue"]["topic"] == topic and s["queue"]["brokerName"] == b.broker_name
        assert s["transactionId"] == s["msgId"]
    ids = {s["msgId"]: s["idx"] for s in sends}
    assert len(ids) == n
    executed = {e["msgId"]: e for e in res["executed"]}
    for msg_id, i in ids.items():
        e = executed[msg_id]
        assert e["idx"] == i and e["topic"] == topic
        assert e["transactionId"] == msg_id
        assert e["transactionIdProperty"] == msg_id  # the broker's SendMessageResponseHeader.transactionId
        assert e["properties"]["TRAN_MSG"] == "true" and e["properties"]["PGROUP"]
    return ids


def check_checks(checks: list[dict[str, Any]], topic: str, mode: str, ids: dict[str, int]) -> None:
    """Every check-back names one of ``ids`` and carries the message as sent (real topic restored)."""
    for c in checks:
        i = ids[c["msgId"]]
        assert c["idx"] == i and c["transactionId"] == c["msgId"]
        assert c["topic"] == topic, c
        assert c["body"] == f"tx-{mode}-{i}" and c["keys"] == f"key-{i} tx" and c["tags"] == f"Tag{i % 3}"
        assert c["properties"]["mode"] == mode and c["properties"][UTF8_KEY] == UTF8_VALUE


def marker_id(res: dict[str, Any], b: TxBroker, topic: str) -> str:
    """The marker's msg id: sent UNKNOW, checked, answered COMMIT_MESSAGE."""
    m = res["marker"]
    assert (m["status"], m["localState"], m["queue"]["topic"]) == ("SEND_OK", "UNKNOW", topic)
    assert m["queue"]["brokerName"] == b.broker_name
    assert res["markerChecked"], "the marker was never checked back"
    answers = {c["answer"] for c in res["checks"] if c["msgId"] == m["msgId"]}
    assert answers == {"COMMIT_MESSAGE"}
    return str(m["msgId"])


# ------------------------------------------------------------------------------ commit


async def test_java_transaction_commit(java_client: JavaClient, tx_broker: TxBroker) -> None:
    """executeLocalTransaction → COMMIT_MESSAGE: every message visible exactly once, intact."""
    b = tx_broker
    topic, group, n = unique("JavaTxCommit"), unique("jtxc"), 8
    async with Admin(b.namesrv_addr) as admin:
        await create_topic(admin, topic, 4)
        res = await run_tx(java_client, b, topic, group, "commit", n)
        ids = check_sends(res, b, topic, n, "COMMIT_MESSAGE")
        assert {e["returned"] for e in res["executed"]} == {"COMMIT_MESSAGE"}
        assert res["checks"] == [], "a transaction committed at once was checked back"
        await wait_until(lambda: visible(admin, topic, set(ids)), timeout=20, what="every committed message visible")
        stored = await read_topic(admin, topic)
    assert sorted(m.msg_id for m in stored) == sorted(ids), "not each message exactly once"
    for m in stored:
        check_message(m, topic, "commit", ids[m.msg_id])
    print(f"[{b.kind}] committed record:", json.dumps(record_shape(stored[0], topic, group), sort_keys=True))


# ------------------------------------------------------------------------------ rollback


async def test_java_transaction_rollback(java_client: JavaClient, tx_broker: TxBroker) -> None:
    """executeLocalTransaction → ROLLBACK_MESSAGE: nothing visible and nothing checked back, also
    after a check round (the later marker transaction, committed by its check, is visible)."""
    b = tx_broker
    topic, group, n = unique("JavaTxRollback"), unique("jtxr"), 6
    async with Admin(b.namesrv_addr) as admin:
        await create_topic(admin, topic, 4)
        res = await run_tx(java_client, b, topic, group, "rollback", n)
        ids = check_sends(res, b, topic, n, "ROLLBACK_MESSAGE")
        marker = marker_id(res, b, topic)
        checked = {c["msgId"] for c in res["checks"]}
        assert checked == {marker}, f"rolled-back transactions were checked back: {res['checkCounts']}"
        await wait_until(lambda: visible(admin, topic, {marker}), timeout=20, what="the marker committed")
        stored = await read_topic(admin, topic)
    assert [m.msg_id for m in stored] == [marker], f"rolled back but visible: {[m.msg_id for m in stored]} ({ids})"
    check_marker(stored[0], topic)


# ------------------------------------------------------------------------------ unknown, then check-back


async def test_java_transaction_unknown_then_check(java_client: JavaClient, tx_broker: TxBroker) -> None:
    """executeLocalTransaction → UNKNOW; the broker checks every message back; the listener
    commits even idx, rolls back odd idx: even visible exactly once, odd never."""
    b = tx_broker
    topic, group, n = unique("JavaTxCheck"), unique("jtxu"), 6
    async with Admin(b.namesrv_addr) as admin:
        await create_topic(admin, topic, 4)
        res = await run_tx(java_client, b, topic, group, "unknown-then-check", n)
        ids = check_sends(res, b, topic, n, "UNKNOW")
        assert res["allChecked"], f"not every message checked back in 30 s: {res['checkCounts']}"
        marker = marker_id(res, b, topic)
        counts = res["checkCounts"]
        assert set(counts) == {*ids, marker}
        check_checks([c for c in res["checks"] if c["msgId"] != marker], topic, "unknown-then-check", ids)
        for c in res["checks"]:
            if c["msgId"] != marker:
                assert c["answer"] == ("COMMIT_MESSAGE" if c["idx"] % 2 == 0 else "ROLLBACK_MESSAGE")
        first = sorted(c["msSinceSend"] for c in res["checks"] if c["msgId"] != marker)
        print(f"[{b.kind}] check counts {counts}; ms from send to check: {first}")
        even = {msg_id for msg_id, i in ids.items() if i % 2 == 0}
        await wait_until(
            lambda: visible(admin, topic, even | {marker}), timeout=20, what="even messages and the marker committed"
        )
        stored = await read_topic(admin, topic)
    assert sorted(m.msg_id for m in stored) == sorted(even | {marker}), "not even idx + marker, each exactly once"
    for m in stored:
        if m.msg_id == marker:
            check_marker(m, topic)
        else:
            check_message(m, topic, "unknown-then-check", ids[m.msg_id])


# ------------------------------------------------------------------------------ producer crash, another member answers


async def test_java_transaction_crash_then_check(java_client: JavaClient, tx_broker: TxBroker) -> None:
    """The producer halts (Runtime.halt) after its half messages were acknowledged, before any
    END_TRANSACTION: nothing is visible. A second process of the same producer group answers the
    broker's check-backs with COMMIT_MESSAGE: then every message is visible exactly once."""
    b = tx_broker
    topic, group, n = unique("JavaTxCrash"), unique("jtxk"), 6
    async with Admin(b.namesrv_addr) as admin:
        await create_topic(admin, topic, 4)
        crashed = await run_tx(java_client, b, topic, group, "crash", n)
        assert crashed["halted"]
        executed = crashed["executed"]
        assert sorted(e["idx"] for e in executed) == list(range(n))
        ids = {e["msgId"]: e["idx"] for e in executed}
        for e in executed:
            assert e["sendStatus"] == "SEND_OK" and e["returned"] is None  # never resolved
            assert e["transactionId"] == e["msgId"] == e["transactionIdProperty"]
        assert {c["answer"] for c in crashed["checks"]} <= {None}
        assert await read_topic(admin, topic) == [], "half messages visible before any commit"

        answered = await run_tx(java_client, b, topic, group, "check-only", n)
        assert answered["allChecked"], f"not every half message checked back: {answered['checkCounts']}"
        assert set(answered["checkCounts"]) == set(ids)
        check_checks(answered["checks"], topic, "crash", ids)
        assert {c["answer"] for c in answered["checks"]} == {"COMMIT_MESSAGE"}
        print(
            f"[{b.kind}] check-only process: counts {answered['checkCounts']}; "
            f"first check after {min(c['msSinceStart'] for c in answered['checks'])} ms; "
            f"TRANSACTION_CHECK_TIMES {sorted(c['properties'].get('TRANSACTION_CHECK_TIMES', '-') for c in answered['checks'])}"
        )
        await wait_until(lambda: visible(admin, topic, set(ids)), timeout=20, what="every checked message committed")
        stored = await read_topic(admin, topic)
    assert sorted(m.msg_id for m in stored) == sorted(ids), "not each message exactly once"
    for m in stored:
        check_message(m, topic, "crash", ids[m.msg_id])


# ------------------------------------------------------------------------------ differential: the committed record


def record_shape(m: MessageExt, topic: str, group: str) -> dict[str, Any]:
    """A committed record's observable shape, names of this run replaced by placeholders."""

    def stable(v: str) -> str:
        return v.replace(topic, "<topic>").replace(group, "<group>")

    volatile = {"UNIQ_KEY", "__transactionId__", "CLUSTER", "REAL_QID"}
    return {
        "property_keys": sorted(k for k in m.properties if k not in APACHE5_ONLY),
        "stable_properties": {
            k: stable(v) for k, v in m.properties.items() if k not in volatile and k not in APACHE5_ONLY
        },
        "REAL_QID is the queue": m.properties.get("REAL_QID") == str(m.queue_id),
        "__transactionId__ is UNIQ_KEY": m.properties.get("__transactionId__") == m.msg_id,
        "sys_flag": m.sys_flag,
        "prepared < commit log offset": m.prepared_transaction_offset < m.commit_log_offset,
    }


async def _half_shape(admin: Admin, m: MessageExt, topic: str, group: str) -> dict[str, Any]:
    """What the committed record's preparedTransactionOffset points at (VIEW_MESSAGE_BY_ID)."""
    half = await admin.view_message(create_offset_msg_id(m.store_host, m.prepared_transaction_offset))
    return {
        "topic": half.topic,
        "same UNIQ_KEY": half.msg_id == m.msg_id,
        "sys_flag": half.sys_flag,
        "body": half.body == m.body,
        "property_keys": sorted(k for k in half.properties if k not in APACHE5_ONLY),
        "REAL_TOPIC": half.properties.get("REAL_TOPIC", "").replace(topic, "<topic>"),
        "PGROUP": half.properties.get("PGROUP", "").replace(group, "<group>"),
    }


async def _committed_records(java_client: JavaClient, b: TxBroker) -> dict[str, dict[str, Any]]:
    """Committed at once (commit, idx 0) and committed by a check-back (unknown-then-check, idx 0):
    the records and the half messages their preparedTransactionOffset names."""
    out: dict[str, dict[str, Any]] = {}
    async with Admin(b.namesrv_addr) as admin:
        for mode, n in (("commit", 1), ("unknown-then-check", 2)):
            topic, group = unique("JavaTxShape"), unique("jtxs")
            await create_topic(admin, topic, 2)
            res = await run_tx(java_client, b, topic, group, mode, n)
            want = {s["msgId"] for s in res["sends"] if s["idx"] == 0}
            await wait_until(lambda: visible(admin, topic, want), timeout=20, what=f"{mode} idx 0 committed")  # noqa: B023
            (m,) = [m for m in await read_topic(admin, topic) if m.msg_id in want]
            out[mode] = {"record": record_shape(m, topic, group), "half": await _half_shape(admin, m, topic, group)}
    return out


async def test_java_transaction_record_matches_apache(
    java_client: JavaClient, apache_tx: ApacheCluster, tmp_path: Path
) -> None:
    """The committed record rocketpipe stores (property names and stable values, sysFlag, the
    half message its preparedTransactionOffset names) is the one Apache 5.3.3 stores, for a
    transaction committed at once and for one committed by a check-back."""
    theirs = await _committed_records(java_client, TxBroker("apache-5", apache_tx.namesrv_addr, apache_tx.broker_name))
    print("Apache 5.3.3:", json.dumps(theirs, indent=1, sort_keys=True))
    async with rocketpipe_broker(tmp_path) as b:
        ours = await _committed_records(java_client, b)
    diffs: list[str] = []
    for mode, parts in theirs.items():
        for part, fields in parts.items():
            for name, want in fields.items():
                got = ours[mode][part][name]
                if got != want:
                    diffs.append(f"{mode} {part} {name}: rocketpipe has {got!r}, Apache has {want!r}")
    assert not diffs, "rocketpipe differs from Apache:\n" + "\n".join(diffs)
