"""Transactional messages on the embedded broker, driven with raw remoting requests.

Half messages (SEND with TRAN_MSG=true), END_TRANSACTION commit / rollback and its refusals,
the check service (CHECK_TRANSACTION_STATE to the producer's channel, TRANSACTION_CHECK_TIMES,
discard to TRANS_CHECK_MAX_TIME_TOPIC after transaction_check_max checks, check immunity), and
a restart between half and decision. Time is a FakeClock; check passes are run directly.
The client side (TransactionProducer) against this broker and the Java clients are in
tests/integration/client and tests/interop.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from broker_testkit import TIMEOUT, heartbeat_cmd, send

from rocketpipe.broker import Broker, BrokerConfig
from rocketpipe.protocol import message as pm
from rocketpipe.protocol import sysflag as sf
from rocketpipe.protocol.codes import RequestCode, ResponseCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.protocol.headers.transaction import CheckTransactionStateRequestHeader, EndTransactionRequestHeader
from rocketpipe.testing import FakeClock
from rocketpipe.transport import Connection, Router
from waiting import wait_until

HALF, OP, MAX_TIME = "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC", "TRANS_CHECK_MAX_TIME_TOPIC"
GROUP = "pg-tx"


def _config(tmp_path: Path, **kw: object) -> BrokerConfig:
    return BrokerConfig(
        store_dir=tmp_path,
        mapped_file_size_commit_log=1 << 20,
        transaction_check_interval=3_600_000,  # passes are run by the tests
        **kw,  # type: ignore[arg-type]
    )


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1_700_000_000_000)


@pytest.fixture
async def broker(tmp_path: Path, clock: FakeClock) -> AsyncIterator[Broker]:
    async with Broker(_config(tmp_path), clock=clock) as b:
        yield b


async def _send_half(conn: Connection, topic: str, body: bytes, **props: str) -> RemotingCommand:
    p = {pm.PROPERTY_TRANSACTION_PREPARED: "true", pm.PROPERTY_PRODUCER_GROUP: GROUP, **props}
    resp = await send(conn, topic, body, properties=p, queue_id=1)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    return resp


def _end_cmd(
    resp: RemotingCommand, state: int, *, group: str = GROUP, check: bool = False, **over: int
) -> RemotingCommand:
    ext = resp.ext_fields
    h = EndTransactionRequestHeader(
        producer_group=group,
        tran_state_table_offset=over.get("queue_offset", int(ext["queueOffset"])),
        commit_log_offset=over.get("commit_log_offset", pm.decode_offset_msg_id(ext["msgId"])[1]),
        commit_or_rollback=state,
        from_transaction_check=check,
        msg_id=ext.get("transactionId") or ext["msgId"],
        transaction_id=ext.get("transactionId"),
    )
    return RemotingCommand.request(RequestCode.END_TRANSACTION, h.to_ext_fields())


def _read(b: Broker, topic: str, queue_id: int = 0) -> list[pm.MessageExt]:
    res = b.store.get_message(topic, queue_id, 0, 1000)
    return [m for buf in res.buffers for m in pm.decode_records(buf)]


async def test_half_message_is_parked_then_committed_once(broker: Broker) -> None:
    conn = await Connection.connect(broker.address)
    try:
        resp = await _send_half(conn, "TopicTx", b"order-1", KEYS="k1", color="red")
        assert broker.store.get_max_offset("TopicTx", 1) == 0  # not visible yet
        [half] = _read(broker, HALF)
        assert resp.ext_fields["queueOffset"] == "0" and resp.ext_fields["queueId"] == "1"
        assert resp.ext_fields["msgId"] == half.offset_msg_id
        uniq = half.properties[pm.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX]
        assert resp.ext_fields["transactionId"] == uniq
        assert (
            half.properties[pm.PROPERTY_REAL_TOPIC] == "TopicTx" and half.properties[pm.PROPERTY_REAL_QUEUE_ID] == "1"
        )
        assert half.properties["__transactionId__"] == uniq
        assert half.sys_flag & sf.TRANSACTION_TYPE_MASK == sf.TRANSACTION_NOT_TYPE

        ok = await conn.request(_end_cmd(resp, sf.TRANSACTION_COMMIT_TYPE), TIMEOUT)
        assert ok.code == ResponseCode.SUCCESS, ok.remark
        [msg] = _read(broker, "TopicTx", 1)
        assert (msg.body, msg.properties["KEYS"], msg.properties["color"]) == (b"order-1", "k1", "red")
        assert msg.properties[pm.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] == uniq
        assert msg.sys_flag & sf.TRANSACTION_TYPE_MASK == sf.TRANSACTION_COMMIT_TYPE
        assert msg.prepared_transaction_offset == half.commit_log_offset
        [op] = _read(broker, OP)
        assert (op.tags, op.body) == ("d", b"0,")
        assert broker.transactions.committed == 1
    finally:
        await conn.close()


async def test_rollback_stores_only_the_op_message(broker: Broker) -> None:
    conn = await Connection.connect(broker.address)
    try:
        resp = await _send_half(conn, "TopicTx", b"gone")
        ok = await conn.request(_end_cmd(resp, sf.TRANSACTION_ROLLBACK_TYPE), TIMEOUT)
        assert ok.code == ResponseCode.SUCCESS
        assert broker.store.get_max_offset("TopicTx", 1) == 0
        assert [m.body for m in _read(broker, OP)] == [b"0,"]
        await broker.transactions.check_once()  # nothing left to ask about
        assert broker.transactions.check.checked == 0
        assert broker.offsets.query("CID_SYS_RMQ_TRANS", HALF, 0) == 1
        assert broker.offsets.query("CID_SYS_RMQ_TRANS", OP, 0) == 1
    finally:
        await conn.close()


async def test_end_transaction_refusals_and_unknown(broker: Broker) -> None:
    conn = await Connection.connect(broker.address)
    try:
        resp = await _send_half(conn, "TopicTx", b"x")
        off = pm.decode_offset_msg_id(resp.ext_fields["msgId"])[1]
        cases = [
            (_end_cmd(resp, sf.TRANSACTION_COMMIT_TYPE, group="other"), "The producer group wrong"),
            (_end_cmd(resp, sf.TRANSACTION_COMMIT_TYPE, queue_offset=5), "The transaction state table offset wrong"),
            (
                _end_cmd(resp, sf.TRANSACTION_COMMIT_TYPE, commit_log_offset=off + 1),
                "Find prepared transaction message failed",
            ),
        ]
        for cmd, remark in cases:
            r = await conn.request(cmd, TIMEOUT)
            assert (r.code, r.remark) == (ResponseCode.SYSTEM_ERROR, remark)
        # UNKNOW: no answer at all (Java returns null); a oneway send then a later commit still works
        await conn.oneway(_end_cmd(resp, sf.TRANSACTION_NOT_TYPE))
        r = await conn.request(_end_cmd(resp, sf.TRANSACTION_COMMIT_TYPE), TIMEOUT)
        assert r.code == ResponseCode.SUCCESS
        assert len(_read(broker, "TopicTx", 1)) == 1
    finally:
        await conn.close()


async def test_reject_transaction_message(tmp_path: Path, clock: FakeClock) -> None:
    async with Broker(_config(tmp_path, reject_transaction_message=True), clock=clock) as b:
        conn = await Connection.connect(b.address)
        try:
            p = {pm.PROPERTY_TRANSACTION_PREPARED: "true", pm.PROPERTY_PRODUCER_GROUP: GROUP}
            r = await send(conn, "TopicTx", b"x", properties=p)
            assert r.code == ResponseCode.NO_PERMISSION
            assert r.remark == "the broker[127.0.0.1] sending transaction message is forbidden"
        finally:
            await conn.close()


async def test_check_back_asks_the_producer_and_its_answer_commits(broker: Broker, clock: FakeClock) -> None:
    checks: list[tuple[CheckTransactionStateRequestHeader, pm.MessageExt]] = []
    router: Router = Router()

    async def on_check(cmd: RemotingCommand, conn: Connection) -> None:
        msg = pm.decode_records(bytes(cmd.body))[0]
        checks.append((CheckTransactionStateRequestHeader.from_ext_fields(cmd.ext_fields), msg))

    router.register(RequestCode.CHECK_TRANSACTION_STATE, on_check)
    conn = await Connection.connect(broker.address, router=router)
    try:
        assert (await conn.request(heartbeat_cmd("c1@1", "cg-unused", {}, producer=GROUP), TIMEOUT)).code == 0
        resp = await _send_half(conn, "TopicTx", b"unknown", KEYS="kk")
        await broker.transactions.check_once()  # younger than transaction_timeout (6 s): not asked
        assert checks == [] and broker.transactions.check.checked == 0
        clock.advance(7)
        await broker.transactions.check_once()
        await wait_until(lambda: len(checks) == 1, timeout=5, what="CHECK_TRANSACTION_STATE")
        h, msg = checks[0]
        [_, copy] = _read(broker, HALF)  # the half was appended again, checked once
        assert copy.properties["TRANSACTION_CHECK_TIMES"] == "1"
        assert (h.topic, h.tran_state_table_offset, h.commit_log_offset) == (HALF, 1, copy.commit_log_offset)
        assert h.offset_msg_id == copy.offset_msg_id and h.bname == broker.config.broker_name
        uniq = copy.properties[pm.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX]
        assert h.msg_id == h.transaction_id == uniq == resp.ext_fields["transactionId"]
        assert (msg.topic, msg.queue_id, msg.body, msg.properties["KEYS"]) == ("TopicTx", 1, b"unknown", "kk")
        # the producer answers for the copy it was shown
        answer = EndTransactionRequestHeader(
            producer_group=GROUP,
            tran_state_table_offset=h.tran_state_table_offset,
            commit_log_offset=h.commit_log_offset,
            commit_or_rollback=sf.TRANSACTION_COMMIT_TYPE,
            from_transaction_check=True,
            msg_id=uniq,
            transaction_id=h.transaction_id,
        )
        r = await conn.request(RemotingCommand.request(RequestCode.END_TRANSACTION, answer.to_ext_fields()), TIMEOUT)
        assert r.code == ResponseCode.SUCCESS, r.remark
        assert [m.body for m in _read(broker, "TopicTx", 1)] == [b"unknown"]
        clock.advance(60)
        await broker.transactions.check_once()  # finished: never asked again
        assert len(checks) == 1
        assert broker.offsets.query("CID_SYS_RMQ_TRANS", HALF, 0) == 2
    finally:
        await conn.close()


async def test_unanswered_half_is_discarded_after_check_max(tmp_path: Path, clock: FakeClock) -> None:
    async with Broker(_config(tmp_path, transaction_check_max=3), clock=clock) as b:
        conn = await Connection.connect(b.address)
        try:
            await _send_half(conn, "TopicTx", b"nobody answers")
        finally:
            await conn.close()
        for _ in range(3):  # no producer connected: the checks cannot be sent, the count still grows
            clock.advance(10)
            await b.transactions.check_once()
        assert b.transactions.check.checked == 3
        assert [m.properties.get("TRANSACTION_CHECK_TIMES") for m in _read(b, HALF)] == [None, "1", "2", "3"]
        clock.advance(10)
        await b.transactions.check_once()
        [dropped] = _read(b, MAX_TIME)
        assert (dropped.body, dropped.properties["TRANSACTION_CHECK_TIMES"]) == (b"nobody answers", "3")
        assert b.store.get_max_offset("TopicTx", 1) == 0
        assert b.offsets.query("CID_SYS_RMQ_TRANS", HALF, 0) == 4


async def test_check_immunity_time_defers_the_first_check(broker: Broker, clock: FakeClock) -> None:
    conn = await Connection.connect(broker.address)
    try:
        await _send_half(conn, "TopicTx", b"slow", CHECK_IMMUNITY_TIME_IN_SECONDS="60")
        clock.advance(10)  # past transaction_timeout, inside the immunity time
        await broker.transactions.check_once()
        assert broker.transactions.check.checked == 0
        [_, waiting] = _read(broker, HALF)  # re-appended once to wait its turn
        assert waiting.properties["TRAN_PREPARED_QUEUE_OFFSET"] == "0"
        # the producer's own decision after the immunity time is refused (5.x ILLEGAL_OPERATION)
        clock.advance(60)
        late = _end_cmd(
            RemotingCommand(code=0, ext_fields={"queueOffset": "0", "msgId": _read(broker, HALF)[0].offset_msg_id}),
            sf.TRANSACTION_COMMIT_TYPE,
        )
        r = await conn.request(late, TIMEOUT)
        assert r.code == ResponseCode.ILLEGAL_OPERATION
        await broker.transactions.check_once()
        assert broker.transactions.check.checked == 1  # now it is asked about
    finally:
        await conn.close()


async def test_half_survives_a_restart_and_commits_after_it(tmp_path: Path, clock: FakeClock) -> None:
    async with Broker(_config(tmp_path), clock=clock) as b:
        conn = await Connection.connect(b.address)
        try:
            first = await _send_half(conn, "TopicTx", b"before restart")
            await _send_half(conn, "TopicTx", b"decided after restart")
            await conn.request(_end_cmd(first, sf.TRANSACTION_ROLLBACK_TYPE), TIMEOUT)
        finally:
            await conn.close()
        clock.advance(10)
        await b.transactions.check_once()  # progress: half 0 finished; half 1 checked (no producer)
    async with Broker(_config(tmp_path), clock=clock) as b2:
        assert b2.offsets.query("CID_SYS_RMQ_TRANS", HALF, 0) == 2
        conn = await Connection.connect(b2.address)
        try:
            [_, _, copy] = _read(b2, HALF)
            resp = RemotingCommand(
                code=0, ext_fields={"queueOffset": str(copy.queue_offset), "msgId": copy.offset_msg_id}
            )
            r = await conn.request(_end_cmd(resp, sf.TRANSACTION_COMMIT_TYPE, check=True), TIMEOUT)
            assert r.code == ResponseCode.SUCCESS, r.remark
            assert [m.body for m in _read(b2, "TopicTx", 1)] == [b"decided after restart"]
        finally:
            await conn.close()
        clock.advance(60)
        await b2.transactions.check_once()
        assert b2.transactions.check.checked == 0


def test_bridge_op_offsets_and_immunity() -> None:
    from rocketpipe.broker.transaction import bridge

    assert bridge.op_offsets(b"3,4,x,") == [3, 4, -1]
    assert bridge.immunity_time_ms(None, 6000) == 6000
    assert bridge.immunity_time_ms("-1", 6000) == 6000
    assert bridge.immunity_time_ms("2", 6000) == 2000
    assert bridge.end_immunity_time_ms("2", 6000) == 6000
    assert bridge.end_immunity_time_ms("60", 6000) == 60000
