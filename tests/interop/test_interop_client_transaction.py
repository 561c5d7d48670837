"""rocketpipe's TransactionProducer against the real Apache RocketMQ 5.3.3 and 4.9.7 brokers and
against rocketpipe's own broker (``rocketpipe serve`` in its own process, same check timings).

Half message → local transaction → END_TRANSACTION, and the broker's CHECK_TRANSACTION_STATE
answered by the producer group (also by a new producer after the first one went away before
ending its transaction). rocketpipe's broker must store exactly what Apache 5.3.3 stores.

The Apache broker checks half messages every ``transactionCheckInterval`` (30 s / 60 s by
default) once they are older than ``transactionTimeOut`` (6 s), so this module starts its own
Apache clusters (one per version, module scope) with a 1 s interval and a 2 s timeout. 5.x
writes the "op" records of ended transactions in batches every ``transactionOpBatchInterval``
(3 s by default); with a timeout shorter than that the broker would check, and a check answer
could commit, a half message the producer had already ended, so that interval is 200 ms here.

"Never visible" and "exactly once" are waited for without sleeping: after the message under
test, the same producer sends a *sentinel* transaction left UNKNOW and committed by the
check-back. The broker checks half messages in queue order, so once the sentinel is visible the
check pass has gone over the message under test; its outcome is final by then.

Each test prints the stored message it checked (``pytest -s``): the facts rocketpipe's broker
must reproduce (properties, sysflag, prepared transaction offset).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from interop_support import TIMINGS, create_topic, read_topic, unique

from rocketpipe import (
    Admin,
    LocalTransactionState,
    Message,
    MessageExt,
    PullStatus,
    SendResult,
    SendStatus,
    SyncAdmin,
    SyncTransactionProducer,
    TransactionProducer,
)
from rocketpipe.protocol.message import decode_offset_msg_id, decode_records
from rocketpipe.protocol.sysflag import TRANSACTION_COMMIT_TYPE, TRANSACTION_TYPE_MASK
from rocketpipe.testing.apache import APACHE_VERSIONS, ApacheCluster, ApacheUnavailableError, apache_cluster
from rocketpipe.testing.serve_process import serve_process
from waiting import wait_until, wait_until_sync

COMMIT = LocalTransactionState.COMMIT_MESSAGE
ROLLBACK = LocalTransactionState.ROLLBACK_MESSAGE
UNKNOW = LocalTransactionState.UNKNOW

#: Broker settings of this module's clusters (milliseconds, as in broker.conf).
TX_BROKER_CONF = {
    "transactionCheckInterval": "1000",
    "transactionTimeOut": "2000",
    "transactionOpBatchInterval": "200",  # 5.x only; 4.9.x ignores the unknown key
}

#: Long enough for a few check passes (timeout 2 s + interval 1 s each).
CHECK_WAIT = 60.0


@dataclass(frozen=True)
class EmbeddedTx:
    """rocketpipe's broker, shaped like the :class:`ApacheCluster` attributes the tests read."""

    namesrv_addr: str
    broker_addr: str
    broker_name: str = "broker-a"
    major: int = 5  # behaves as Apache 5.3.3 (``__transactionId__``, transactionId in send results)
    label: str = "embedded"


@pytest.fixture(scope="module", params=["embedded", "apache-5", "apache-4"])
def tx_cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    label = request.param
    if label == "embedded":
        args = ("--transaction-check-interval", TX_BROKER_CONF["transactionCheckInterval"])
        args += ("--transaction-timeout", TX_BROKER_CONF["transactionTimeOut"])
        with serve_process(tmp_path_factory.mktemp("tx-embedded") / "store", extra_args=args) as s:
            yield EmbeddedTx(s.namesrv_addr, s.broker_addr)
        return
    version = APACHE_VERSIONS[label]
    try:
        with apache_cluster(version, tmp_path_factory.mktemp(f"tx-{label}"), broker_conf=TX_BROKER_CONF) as c:
            TIMINGS[f"{label} (transaction checks) start-up"] = c.startup_seconds
            yield c
    except ApacheUnavailableError as exc:
        pytest.fail(f"Apache RocketMQ {version} ({label}) unavailable: {exc}", pytrace=False)


# ------------------------------------------------------------------------------ helpers


class Script:
    """A transaction listener whose answers are looked up by the message's KEYS.

    ``execute_local_transaction`` is a coroutine, ``check_local_transaction`` a plain function
    (it runs in the producer's check thread): both kinds of listener method get exercised.
    A key without an entry answers None (= UNKNOW); an exception in the table is raised.
    """

    def __init__(self, execute: dict[str, Any] | None = None, check: dict[str, Any] | None = None) -> None:
        self.execute = execute or {}
        self.check = check or {}
        self.executed: list[tuple[str | None, object]] = []
        self.checked: list[MessageExt] = []
        self.check_threads: set[str] = set()

    async def execute_local_transaction(self, msg: Message, arg: object) -> LocalTransactionState | None:
        self.executed.append((msg.keys, arg))
        return self._answer(self.execute.get(msg.keys or ""))

    def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState | None:
        self.checked.append(msg)
        self.check_threads.add(threading.current_thread().name)
        return self._answer(self.check.get(msg.keys or ""))

    @staticmethod
    def _answer(v: Any) -> LocalTransactionState | None:
        if isinstance(v, BaseException):
            raise v
        return v  # type: ignore[no-any-return]

    def checked_keys(self) -> list[str | None]:
        return [m.keys for m in self.checked]


async def with_keys(admin: Admin, topic: str, keys: str) -> list[MessageExt]:
    return [m for m in await read_topic(admin, topic) if m.keys == keys]


async def settle(admin: Admin, p: TransactionProducer, script: Script, topic: str) -> None:
    """Send a sentinel left UNKNOW, committed by the check-back; return once it is visible."""
    key = unique("sentinel")
    script.check[key] = COMMIT
    r = await p.send_message_in_transaction(Message.build(topic, b"sentinel", keys=[key]))
    assert r.local_transaction_state is UNKNOW

    async def visible() -> bool:
        return bool(await with_keys(admin, topic, key))

    await wait_until(visible, timeout=CHECK_WAIT, what=f"sentinel {key} committed by the check-back")


def dump(label: str, what: str, m: MessageExt) -> None:
    """Print the facts of one stored message (``pytest -s`` shows them)."""
    facts = {
        "topic": m.topic,
        "queue_id": m.queue_id,
        "queue_offset": m.queue_offset,
        "commit_log_offset": m.commit_log_offset,
        "sys_flag": m.sys_flag,
        "prepared_transaction_offset": m.prepared_transaction_offset,
        "born_timestamp": m.born_timestamp,
        "store_timestamp": m.store_timestamp,
        "properties": dict(sorted(m.properties.items())),
    }
    print(f"\n[{label} {APACHE_VERSIONS.get(label, 'rocketpipe')}] {what}: {json.dumps(facts)}")


def label_of(c: Any) -> str:
    return getattr(c, "label", None) or ("apache-5" if c.major >= 5 else "apache-4")


def half_commit_log_offset(r: SendResult) -> int:
    return decode_offset_msg_id(r.offset_msg_id)[1]


def assert_committed_shape(c: ApacheCluster, m: MessageExt, r: SendResult, group: str, topic: str) -> None:
    """What Apache stores for a committed transactional message (both versions unless said)."""
    assert m.topic == topic and m.queue_id == r.message_queue.queue_id
    assert m.msg_id == r.msg_id  # UNIQ_KEY kept
    assert m.sys_flag & TRANSACTION_TYPE_MASK == TRANSACTION_COMMIT_TYPE  # 8
    props = m.properties
    # the broker copies the half's properties string: REAL_TOPIC / REAL_QID / TRAN_MSG survive
    assert props["REAL_TOPIC"] == topic
    assert props["REAL_QID"] == str(r.message_queue.queue_id)
    assert props["TRAN_MSG"] == "true"
    assert props["PGROUP"] == group
    assert props["WAIT"] == "true"
    if c.major >= 5:  # 5.x: the broker puts __transactionId__ (= UNIQ_KEY) on the half message
        assert props["__transactionId__"] == r.msg_id
    else:
        assert "__transactionId__" not in props


# ------------------------------------------------------------------------------ scenarios


async def test_transaction_commit(tx_cluster: ApacheCluster) -> None:
    """COMMIT_MESSAGE from the local transaction: visible once on the real topic, never checked."""
    c, label = tx_cluster, label_of(tx_cluster)
    topic, group = unique("TxCommit"), unique("txpg")
    script = Script(execute={"c1": COMMIT}, check={"c1": ROLLBACK})
    async with Admin(c.namesrv_addr) as admin:
        await create_topic(admin, topic, 2)
        async with TransactionProducer(group, namesrv_addr=c.namesrv_addr, transaction_listener=script) as p:
            # a plain send first (a TransactionProducer is a Producer), so that the half is not at
            # commit-log offset 0 and the prepared offset below says something
            plain = await p.send(Message.build(topic, "plain-body", keys=["plain"]))
            assert plain.send_status is SendStatus.SEND_OK
            msg = Message.build(topic, "commit-body", tags="TagC", keys=["c1"], properties={"color": "red"})
            r = await p.send_message_in_transaction(msg, arg={"order": 7})
            assert r.send_status is SendStatus.SEND_OK and r.local_transaction_state is COMMIT
            assert r.msg_id == msg.unique_key and r.message_queue.topic == topic
            # 5.x answers the send with transactionId = UNIQ_KEY; 4.9.x sends none
            assert r.transaction_id == (r.msg_id if c.major >= 5 else None)
            assert script.executed == [("c1", {"order": 7})]
            assert msg.properties["TRAN_MSG"] == "true" and msg.properties["PGROUP"] == group

            async def visible() -> bool:
                return bool(await with_keys(admin, topic, "c1"))

            await wait_until(visible, timeout=30, what="the committed message")
            await settle(admin, p, script, topic)
        (m,) = await with_keys(admin, topic, "c1")
    dump(label, "committed by END_TRANSACTION", m)
    assert m.body == b"commit-body" and m.tags == "TagC" and m.properties["color"] == "red"
    assert_committed_shape(c, m, r, group, topic)
    # prepared offset = the half's commit-log offset (the END's commitLogOffset)
    assert m.prepared_transaction_offset == half_commit_log_offset(r) > 0
    assert "TRANSACTION_CHECK_TIMES" not in m.properties
    assert "c1" not in script.checked_keys()


async def test_transaction_rollback(tx_cluster: ApacheCluster) -> None:
    """ROLLBACK_MESSAGE: never visible, never checked."""
    c = tx_cluster
    topic, group = unique("TxRollback"), unique("txpg")
    script = Script(execute={"r1": ROLLBACK}, check={"r1": COMMIT})  # a stray check would commit it
    async with Admin(c.namesrv_addr) as admin:
        await create_topic(admin, topic, 2)
        async with TransactionProducer(group, namesrv_addr=c.namesrv_addr, transaction_listener=script) as p:
            r = await p.send_message_in_transaction(Message.build(topic, "rollback-body", keys=["r1"]))
            assert r.send_status is SendStatus.SEND_OK and r.local_transaction_state is ROLLBACK
            await settle(admin, p, script, topic)
        assert await with_keys(admin, topic, "r1") == []
        assert [m.body for m in await read_topic(admin, topic)] == [b"sentinel"]
    assert "r1" not in script.checked_keys()


async def test_transaction_unknown_then_check_commits(tx_cluster: ApacheCluster) -> None:
    """UNKNOW (returned, or an exception) from the local transaction; the broker's check-back
    asks the group and the check listener's COMMIT_MESSAGE makes the message visible once."""
    c, label = tx_cluster, label_of(tx_cluster)
    topic, group = unique("TxUnknown"), unique("txpg")
    script = Script(
        execute={"u1": UNKNOW, "u2": RuntimeError("local transaction failed")},
        check={"u1": COMMIT, "u2": COMMIT},
    )
    async with Admin(c.namesrv_addr) as admin:
        await create_topic(admin, topic, 2)
        async with TransactionProducer(group, namesrv_addr=c.namesrv_addr, transaction_listener=script) as p:
            r1 = await p.send_message_in_transaction(
                Message.build(topic, "unknown-body", tags="TagU", keys=["u1"], properties={"n": "1"})
            )
            r2 = await p.send_message_in_transaction(Message.build(topic, "raised-body", keys=["u2"]))
            assert r1.local_transaction_state is UNKNOW and r2.local_transaction_state is UNKNOW

            async def both_visible() -> bool:
                keys = {m.keys for m in await read_topic(admin, topic)}
                return {"u1", "u2"} <= keys

            await wait_until(both_visible, timeout=CHECK_WAIT, what="both committed by the check-back")
            await settle(admin, p, script, topic)
        (m1,) = await with_keys(admin, topic, "u1")
        (m2,) = await with_keys(admin, topic, "u2")
    checks = {m.keys: m for m in script.checked}
    check1 = checks["u1"]
    dump(label, "half message as CHECK_TRANSACTION_STATE delivers it", check1)
    dump(label, "committed by the check-back", m1)
    # the check's message: real topic and queue back in place, the half's properties
    assert check1.topic == topic and check1.queue_id == r1.message_queue.queue_id
    assert check1.msg_id == r1.msg_id and check1.body == b"unknown-body"
    assert check1.properties["PGROUP"] == group and check1.properties["TRAN_MSG"] == "true"
    assert check1.properties["TRANSACTION_CHECK_TIMES"] == "1"
    assert all(name.startswith("rocketpipe-tx-check-") for name in script.check_threads)
    # committed once each; the prepared offset is the checked copy of the half, not the first half
    assert m1.body == b"unknown-body" and m1.tags == "TagU" and m1.properties["n"] == "1"
    assert m2.body == b"raised-body"
    assert_committed_shape(c, m1, r1, group, topic)
    assert m1.prepared_transaction_offset == check1.commit_log_offset
    assert m1.prepared_transaction_offset != half_commit_log_offset(r1)
    assert m1.properties["TRANSACTION_CHECK_TIMES"] == "1"
    assert script.checked_keys().count("u1") == 1 and script.checked_keys().count("u2") == 1


class CrashBeforeEnd(TransactionProducer):
    """A producer that dies between its local transaction and END_TRANSACTION."""

    async def end_transaction(self, *args: Any, **kwargs: Any) -> None:
        return None


async def test_transaction_check_answered_by_a_new_producer_of_the_group(tx_cluster: ApacheCluster) -> None:
    """The first producer never ends its transaction and closes; the broker's check-back goes to
    a producer of the same group started afterwards, whose answer commits the message."""
    c = tx_cluster
    topic, group = unique("TxTakeover"), unique("txpg")
    first = Script(execute={"t1": COMMIT}, check={"t1": ROLLBACK})
    second = Script(check={"t1": COMMIT})
    async with Admin(c.namesrv_addr) as admin:
        await create_topic(admin, topic, 2)
        p1 = CrashBeforeEnd(group, namesrv_addr=c.namesrv_addr, transaction_listener=first)
        try:
            r = await p1.send_message_in_transaction(Message.build(topic, "takeover-body", keys=["t1"]))
            assert r.local_transaction_state is COMMIT  # decided locally, never told to the broker
        finally:
            await p1.close()
        # no END, no producer of the group: the half cannot have been committed yet
        assert await with_keys(admin, topic, "t1") == []
        started = time.monotonic()
        async with TransactionProducer(group, namesrv_addr=c.namesrv_addr, transaction_listener=second) as p2:

            async def visible() -> bool:
                return bool(await with_keys(admin, topic, "t1"))

            await wait_until(visible, timeout=CHECK_WAIT, what="the half committed by the new producer's answer")
            TIMINGS[f"{label_of(c)} check-back takeover"] = time.monotonic() - started
            await settle(admin, p2, second, topic)
        (m,) = await with_keys(admin, topic, "t1")
    assert m.body == b"takeover-body" and m.properties["PGROUP"] == group
    assert first.checked == []
    assert second.checked_keys().count("t1") == 1
    assert second.checked[0].msg_id == r.msg_id


class PlainListener:
    """Plain-function listener methods (they run in worker threads)."""

    def __init__(self) -> None:
        self.executed: list[str | None] = []

    def execute_local_transaction(self, msg: Message, arg: object) -> LocalTransactionState:
        self.executed.append(msg.keys)
        return COMMIT

    def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        return ROLLBACK


def test_sync_transaction_producer_commits(tx_cluster: ApacheCluster) -> None:
    """The blocking facade, with a listener of plain functions."""
    c = tx_cluster
    topic = unique("TxSync")
    listener = PlainListener()
    with SyncAdmin(c.namesrv_addr) as admin:
        admin.create_topic(topic, 2)

        def routed() -> bool:
            try:
                return len(admin.topic_queues(topic)) == 2
            except Exception:  # no route yet
                return False

        wait_until_sync(routed, timeout=30, what=f"route of {topic}")
        with SyncTransactionProducer(unique("txpg"), c.namesrv_addr, transaction_listener=listener) as p:
            r = p.send_message_in_transaction(Message.build(topic, "sync-body", keys=["s1"]), "arg")
        assert r.local_transaction_state is COMMIT and listener.executed == ["s1"]

        def bodies() -> list[bytes]:
            out: list[bytes] = []
            for mq in admin.topic_queues(topic):
                raw = admin.pull_raw(mq, 0, 32)
                if raw.status is PullStatus.FOUND:
                    out.extend(m.body for m in decode_records(raw.body))
            return out

        wait_until_sync(lambda: bodies() == [b"sync-body"], timeout=30, what="the committed message")
