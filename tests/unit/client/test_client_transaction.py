"""Transactional producer, the parts that need no broker: END_TRANSACTION headers from a send
result and from a check, state mapping, listener outcomes (exception / None → UNKNOW, remark
text), the first phase with the send stubbed, the check-back on a fake connection, and the
runtime's producer table and CHECK_TRANSACTION_STATE dispatch (Java 5.3.3
``DefaultMQProducerImpl.sendMessageInTransaction`` / ``endTransaction`` /
``checkTransactionState``, ``ClientRemotingProcessor.checkTransactionState``)."""

from __future__ import annotations

import asyncio
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from rocketpipe import (
    InvalidArgumentError,
    LocalTransactionState,
    Message,
    MessageExt,
    Producer,
    SendResult,
    SendStatus,
    TransactionListener,
    TransactionProducer,
    TransactionSendResult,
)
from rocketpipe.client import ClientConfig, ClientRuntime
from rocketpipe.client.producer.transaction import (
    check_end_transaction_header,
    check_exception_remark,
    commit_or_rollback,
    end_transaction_header,
    execute_exception_remark,
    run_listener,
)
from rocketpipe.protocol.codes import RequestCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.protocol.headers.transaction import CheckTransactionStateRequestHeader, EndTransactionRequestHeader
from rocketpipe.protocol.message import MessageQueue, create_offset_msg_id, encode_record
from rocketpipe.protocol.sysflag import TRANSACTION_PREPARED_TYPE

NS = "127.0.0.1:9876"
COMMIT = LocalTransactionState.COMMIT_MESSAGE
ROLLBACK = LocalTransactionState.ROLLBACK_MESSAGE
UNKNOW = LocalTransactionState.UNKNOW


def _result(**kw: Any) -> SendResult:
    base: dict[str, Any] = {
        "send_status": SendStatus.SEND_OK,
        "msg_id": "7F0000010F2A0000000000000001",
        "offset_msg_id": create_offset_msg_id("127.0.0.1:10911", 123_456),
        "message_queue": MessageQueue("T", "broker-a", 3),
        "queue_offset": 42,
        "transaction_id": "7F0000010F2A0000000000000001",
    }
    base.update(kw)
    return SendResult(**base)


# ------------------------------------------------------------------------------ pure parts


def test_state_names_and_commit_or_rollback_values() -> None:
    assert [s.name for s in LocalTransactionState] == ["COMMIT_MESSAGE", "ROLLBACK_MESSAGE", "UNKNOW"]
    assert [commit_or_rollback(s) for s in LocalTransactionState] == [8, 12, 0]


def test_end_transaction_header_from_send_result() -> None:
    h = end_transaction_header("pg", "T", _result(), COMMIT)
    assert h.to_ext_fields() == {
        "topic": "T",
        "producerGroup": "pg",
        "tranStateTableOffset": "42",
        "commitLogOffset": "123456",
        "commitOrRollback": "8",
        "fromTransactionCheck": "false",
        "msgId": "7F0000010F2A0000000000000001",
        "transactionId": "7F0000010F2A0000000000000001",
        "bname": "broker-a",
    }
    # round trip through the typed decoder (what a broker reads)
    assert EndTransactionRequestHeader.from_ext_fields(h.to_ext_fields()) == h


def test_end_transaction_header_falls_back_to_msg_id_and_omits_missing_transaction_id() -> None:
    uniq_as_offset_id = create_offset_msg_id("10.0.0.1:10911", 999)
    h = end_transaction_header(
        "pg", "T", _result(offset_msg_id="", msg_id=uniq_as_offset_id, transaction_id=None), ROLLBACK
    )
    ext = h.to_ext_fields()
    assert (ext["commitLogOffset"], ext["commitOrRollback"], ext["msgId"]) == ("999", "12", uniq_as_offset_id)
    assert "transactionId" not in ext


def test_end_transaction_header_with_undecodable_ids_raises() -> None:
    with pytest.raises(InvalidArgumentError):
        end_transaction_header("pg", "T", _result(offset_msg_id="", msg_id="not-hex"), COMMIT)


def _half(props: dict[str, str] | None = None) -> MessageExt:
    return MessageExt(
        topic="T",
        body=b"x",
        properties={"UNIQ_KEY": "U1", "PGROUP": "pg", "TRAN_MSG": "true"} if props is None else props,
        queue_id=1,
        queue_offset=7,
        commit_log_offset=555,
        offset_msg_id="OFFSETID",
    )


def test_check_end_transaction_header_copies_the_check_fields() -> None:
    check = CheckTransactionStateRequestHeader(
        topic="RMQ_SYS_TRANS_HALF_TOPIC",
        tran_state_table_offset=7,
        commit_log_offset=556,
        msg_id="U1",
        transaction_id="TX1",
        offset_msg_id="OFFSETID",
        bname="broker-a",
    )
    h = check_end_transaction_header("pg", _half(), check, UNKNOW)
    assert h.to_ext_fields() == {
        "topic": "RMQ_SYS_TRANS_HALF_TOPIC",
        "producerGroup": "pg",
        "tranStateTableOffset": "7",
        "commitLogOffset": "556",  # from the check's header, as Java, not from the message
        "commitOrRollback": "0",
        "fromTransactionCheck": "true",
        "msgId": "U1",
        "transactionId": "TX1",
        "bname": "broker-a",
    }
    # no UNIQ_KEY: the message's (offset) id; a 4.x check has no topic and no bname
    h4 = check_end_transaction_header(
        "pg",
        _half({"PGROUP": "pg"}),
        CheckTransactionStateRequestHeader(tran_state_table_offset=7, commit_log_offset=5),
        COMMIT,
    )
    ext = h4.to_ext_fields()
    assert ext["msgId"] == "OFFSETID" and "topic" not in ext and "bname" not in ext and "transactionId" not in ext


class DbDownError(Exception):
    pass


def _raise_in_check() -> None:
    raise DbDownError("db down")


def test_exception_remarks_follow_java_texts() -> None:
    assert (
        execute_exception_remark(RuntimeError("boom")) == "executeLocalTransactionBranch exception: RuntimeError: boom"
    )
    assert execute_exception_remark(RuntimeError()) == "executeLocalTransactionBranch exception: RuntimeError"
    assert (
        execute_exception_remark(DbDownError("x"))
        == f"executeLocalTransactionBranch exception: {__name__}.DbDownError: x"
    )
    try:
        _raise_in_check()
    except DbDownError as exc:
        remark = check_exception_remark(exc)
    assert remark.startswith(f"checkLocalTransactionState Exception: {__name__}.DbDownError: db down, _raise_in_check(")
    assert "test_client_transaction.py:" in remark
    assert check_exception_remark(ValueError("v")) == "checkLocalTransactionState Exception: ValueError: v"


# ------------------------------------------------------------------------------ listener outcomes


async def test_run_listener_outcomes() -> None:
    loop_thread = threading.current_thread()
    seen: list[threading.Thread] = []

    async def a_commit(msg: Message, arg: object) -> LocalTransactionState:
        return COMMIT

    def plain_rollback(msg: Message, arg: object) -> LocalTransactionState:
        seen.append(threading.current_thread())
        return ROLLBACK

    def plain_none(msg: Message, arg: object) -> None:
        return None

    def plain_raises(msg: Message, arg: object) -> LocalTransactionState:
        raise RuntimeError("local tx failed")

    async def a_raises(msg: Message, arg: object) -> LocalTransactionState:
        raise KeyError("k")

    def plain_returns_coroutine(msg: Message, arg: object) -> Any:
        return a_commit(msg, arg)

    def wrong_type(msg: Message, arg: object) -> Any:
        return "COMMIT_MESSAGE"

    m = Message.build("T", b"x")
    assert await run_listener(a_commit, m, None) == (COMMIT, None)
    assert await run_listener(plain_rollback, m, None) == (ROLLBACK, None)
    assert seen and seen[0] is not loop_thread  # plain functions never block the loop
    assert await run_listener(plain_none, m, None) == (UNKNOW, None)
    state, exc = await run_listener(plain_raises, m, None)
    assert state is UNKNOW and isinstance(exc, RuntimeError)
    state, exc = await run_listener(a_raises, m, None)
    assert state is UNKNOW and isinstance(exc, KeyError)
    assert await run_listener(plain_returns_coroutine, m, None) == (COMMIT, None)
    assert await run_listener(wrong_type, m, None) == (UNKNOW, None)
    with ThreadPoolExecutor(1, thread_name_prefix="given") as pool:
        seen.clear()
        assert await run_listener(plain_rollback, m, None, executor=pool) == (ROLLBACK, None)
        assert seen[0].name.startswith("given")


# ------------------------------------------------------------------------------ first phase, send stubbed


class Recorder:
    """A listener of plain functions that records its calls."""

    def __init__(self, execute: Any = COMMIT, check: Any = COMMIT) -> None:
        self.execute, self.check = execute, check
        self.executed: list[tuple[Message, object]] = []
        self.checked: list[MessageExt] = []

    def execute_local_transaction(self, msg: Message, arg: object) -> LocalTransactionState | None:
        self.executed.append((msg, arg))
        if isinstance(self.execute, BaseException):
            raise self.execute
        return self.execute  # type: ignore[no-any-return]

    def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState | None:
        self.checked.append(msg)
        if isinstance(self.check, BaseException):
            raise self.check
        return self.check  # type: ignore[no-any-return]


class StubbedProducer(TransactionProducer):
    """send / end_transaction replaced: records what the first phase does."""

    def __init__(self, result: SendResult, **kw: Any) -> None:
        super().__init__("pg", namesrv_addr=NS, **kw)
        self.result = result
        self.sent: list[Message] = []
        self.ended: list[tuple[SendResult, LocalTransactionState, BaseException | None]] = []
        self.end_error: Exception | None = None

    async def send(self, msg: Message, **kw: Any) -> SendResult:  # type: ignore[override]
        self.sent.append(msg)
        return self.result

    async def end_transaction(
        self, msg: Message, send_result: SendResult, state: LocalTransactionState, error: BaseException | None = None
    ) -> None:
        self.ended.append((send_result, state, error))
        if self.end_error is not None:
            raise self.end_error


def test_recorder_is_a_transaction_listener() -> None:
    assert isinstance(Recorder(), TransactionListener)


async def test_missing_listener_raises_like_java() -> None:
    p = TransactionProducer("pg", namesrv_addr=NS)
    with pytest.raises(InvalidArgumentError, match="TransactionListener is null"):
        await p.send_message_in_transaction(Message.build("T", b"x"))


async def test_first_phase_properties_listener_and_end() -> None:
    listener = Recorder(COMMIT)
    p = StubbedProducer(_result(transaction_id="TXID"), transaction_listener=listener)
    msg = Message.build("T", b"x", tags="tg", keys=["k"], delay_time_level=3)
    r = await p.send_message_in_transaction(msg, arg={"order": 1})
    assert isinstance(r, TransactionSendResult)
    assert (r.local_transaction_state, r.send_status, r.transaction_id, r.queue_offset) == (
        COMMIT,
        SendStatus.SEND_OK,
        "TXID",
        42,
    )
    (sent,) = p.sent
    assert sent.properties["TRAN_MSG"] == "true" and sent.properties["PGROUP"] == "pg"
    assert "DELAY" not in sent.properties
    ((seen, arg),) = listener.executed
    assert seen is msg and arg == {"order": 1}
    assert msg.properties["__transactionId__"] == "TXID"
    ((res, state, err),) = p.ended
    assert res is p.result and state is COMMIT and err is None


async def test_first_phase_exception_and_none_are_unknow_with_the_error() -> None:
    boom = RuntimeError("boom")
    p = StubbedProducer(_result(transaction_id=None), transaction_listener=Recorder(boom))
    msg = Message.build("T", b"x")
    r = await p.send_message_in_transaction(msg)
    assert r.local_transaction_state is UNKNOW
    assert p.ended[0][1:] == (UNKNOW, boom)
    assert "__transactionId__" not in msg.properties
    p2 = StubbedProducer(_result(), transaction_listener=Recorder(None))
    assert (await p2.send_message_in_transaction(Message.build("T", b"x"))).local_transaction_state is UNKNOW


@pytest.mark.parametrize(
    "status", [SendStatus.FLUSH_DISK_TIMEOUT, SendStatus.FLUSH_SLAVE_TIMEOUT, SendStatus.SLAVE_NOT_AVAILABLE]
)
async def test_degraded_send_rolls_back_without_running_the_listener(status: SendStatus) -> None:
    listener = Recorder(COMMIT)
    p = StubbedProducer(_result(send_status=status), transaction_listener=listener)
    r = await p.send_message_in_transaction(Message.build("T", b"x"))
    assert r.local_transaction_state is ROLLBACK and r.send_status is status
    assert listener.executed == []
    assert p.ended[0][1:] == (ROLLBACK, None)


async def test_end_failure_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    from rocketpipe.errors import ConnectionClosedError

    p = StubbedProducer(_result(), transaction_listener=Recorder(COMMIT))
    p.end_error = ConnectionClosedError("gone")
    with caplog.at_level(logging.WARNING):
        r = await p.send_message_in_transaction(Message.build("T", b"x"))
    assert r.local_transaction_state is COMMIT
    assert "ending the broker transaction failed" in caplog.text


def test_prepared_sysflag_from_tran_msg_property() -> None:
    p = Producer("pg", namesrv_addr=NS)
    m = Message.build("T", b"x")
    assert p._prepare_single(m)[1] & TRANSACTION_PREPARED_TYPE == 0
    m.properties["TRAN_MSG"] = "true"
    assert p._prepare_single(m)[1] & TRANSACTION_PREPARED_TYPE == TRANSACTION_PREPARED_TYPE


# ------------------------------------------------------------------------------ check-back, fake connection


class FakeConn:
    def __init__(self) -> None:
        self.remote_address = "127.0.0.1:10911"
        self.is_closed = False
        self.sent: list[RemotingCommand] = []

    async def oneway(self, cmd: RemotingCommand) -> None:
        self.sent.append(cmd)


CHECK = CheckTransactionStateRequestHeader(
    topic="RMQ_SYS_TRANS_HALF_TOPIC",
    tran_state_table_offset=7,
    commit_log_offset=555,
    msg_id="U1",
    transaction_id="U1",
    bname="broker-a",
)


async def test_check_answers_on_the_asking_connection_in_a_check_thread() -> None:
    threads: list[str] = []

    class L(Recorder):
        def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState | None:
            threads.append(threading.current_thread().name)
            return super().check_local_transaction(msg)

    listener = L(check=ROLLBACK)
    p = TransactionProducer("pg", namesrv_addr=NS, transaction_listener=listener)
    conn = FakeConn()
    await p.check_transaction_state(conn, _half(), CHECK)  # type: ignore[arg-type]
    (cmd,) = conn.sent
    assert cmd.code == RequestCode.END_TRANSACTION and cmd.is_oneway and cmd.remark is None
    assert cmd.ext_fields["commitOrRollback"] == "12" and cmd.ext_fields["fromTransactionCheck"] == "true"
    assert threads[0].startswith("rocketpipe-tx-check-pg")
    await p.close()


async def test_check_exception_is_unknow_with_remark_and_async_check_runs_on_loop() -> None:
    p = TransactionProducer("pg", namesrv_addr=NS, transaction_listener=Recorder(check=DbDownError("db down")))
    conn = FakeConn()
    await p.check_transaction_state(conn, _half(), CHECK)  # type: ignore[arg-type]
    (cmd,) = conn.sent
    assert cmd.ext_fields["commitOrRollback"] == "0"
    assert cmd.remark is not None and cmd.remark.startswith(
        f"checkLocalTransactionState Exception: {__name__}.DbDownError: db down, check_local_transaction("
    )

    class AsyncListener:
        async def execute_local_transaction(self, msg: Message, arg: object) -> LocalTransactionState:
            return COMMIT

        async def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
            assert threading.current_thread() is threading.main_thread()
            return COMMIT

    p.transaction_listener = AsyncListener()
    await p.check_transaction_state(conn, _half(), CHECK)  # type: ignore[arg-type]
    assert conn.sent[1].ext_fields["commitOrRollback"] == "8"
    await p.close()


async def test_check_without_listener_or_when_closed_is_not_answered() -> None:
    conn = FakeConn()
    plain = Producer("pg", namesrv_addr=NS)
    await plain.check_transaction_state(conn, _half(), CHECK)  # type: ignore[arg-type]
    p = TransactionProducer("pg", namesrv_addr=NS)
    await p.check_transaction_state(conn, _half(), CHECK)  # type: ignore[arg-type]
    p.transaction_listener = Recorder()
    await p.close()
    await p.check_transaction_state(conn, _half(), CHECK)  # type: ignore[arg-type]
    assert conn.sent == []


async def test_check_hold_max_drops_extra_checks() -> None:
    gate, entered = asyncio.Event(), asyncio.Event()

    class Slow:
        async def execute_local_transaction(self, msg: Message, arg: object) -> LocalTransactionState:
            return COMMIT

        async def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
            entered.set()
            await gate.wait()
            return COMMIT

    p = TransactionProducer("pg", namesrv_addr=NS, transaction_listener=Slow(), check_request_hold_max=1)
    conn = FakeConn()
    first = asyncio.create_task(p.check_transaction_state(conn, _half(), CHECK))  # type: ignore[arg-type]
    await asyncio.wait_for(entered.wait(), 5)
    await p.check_transaction_state(conn, _half(), CHECK)  # type: ignore[arg-type]  # dropped at once
    gate.set()
    await first
    assert len(conn.sent) == 1
    await p.close()


def test_bad_check_settings() -> None:
    with pytest.raises(InvalidArgumentError):
        TransactionProducer("pg", namesrv_addr=NS, check_thread_pool_max_size=0)


# ------------------------------------------------------------------------------ runtime table and dispatch


def test_producer_table_and_heartbeat_groups() -> None:
    rt = ClientRuntime(ClientConfig(namesrv_addr=NS))
    a = TransactionProducer("pg", runtime=rt)
    b = TransactionProducer("pg", runtime=rt)
    assert rt.heartbeat_body() is None and rt.find_producer("pg") is None
    rt.register_producer("pg", a)
    rt.register_producer("pg", b)
    rt.register_producer("plain")
    assert rt.find_producer("pg") is b and rt.find_producer("plain") is None
    rt.unregister_producer("pg", b)
    assert rt.find_producer("pg") is a
    body = rt.heartbeat_body()
    assert body is not None and b'"groupName":"pg"' in body and b'"groupName":"plain"' in body
    rt.unregister_producer("pg", a)
    rt.unregister_producer("plain")
    assert rt.find_producer("pg") is None and rt.heartbeat_body() is None


def _check_request(pgroup: str | None) -> RemotingCommand:
    props = {"UNIQ_KEY": "U1", "TRAN_MSG": "true", "REAL_TOPIC": "T", "REAL_QID": "1"}
    if pgroup is not None:
        props["PGROUP"] = pgroup
    body = encode_record(topic="T", body=b"payload", properties=props, queue_id=1, physical_offset=555)
    return RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE, CHECK.to_ext_fields(), body, oneway=True)


async def test_runtime_dispatches_checks_by_pgroup(caplog: pytest.LogCaptureFixture) -> None:
    rt = ClientRuntime(ClientConfig(namesrv_addr=NS))
    listener = Recorder(check=COMMIT)
    p = TransactionProducer("pg", runtime=rt, transaction_listener=listener)
    rt.register_producer("pg", p)
    handler = rt.router.handler_for(RequestCode.CHECK_TRANSACTION_STATE)
    assert handler is not None
    conn = FakeConn()
    assert await handler(_check_request("pg"), conn) is None  # type: ignore[arg-type]
    (msg,) = listener.checked
    assert (msg.body, msg.topic, msg.msg_id, msg.commit_log_offset) == (b"payload", "T", "U1", 555)
    assert conn.sent[0].ext_fields["msgId"] == "U1" and conn.sent[0].ext_fields["producerGroup"] == "pg"
    with caplog.at_level(logging.INFO):
        await handler(_check_request("other"), conn)  # type: ignore[arg-type]
        await handler(_check_request(None), conn)  # type: ignore[arg-type]
        bad = RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE, {}, b"", oneway=True)
        await handler(bad, conn)  # type: ignore[arg-type]
    assert "producer group other, not in this client" in caplog.text
    assert "bad CHECK_TRANSACTION_STATE" in caplog.text
    assert len(conn.sent) == 1 and len(listener.checked) == 1
    await p.close()
    await rt.close()


def test_sync_facade_pickles_and_raises_without_listener() -> None:
    import pickle

    from rocketpipe import SyncTransactionProducer

    p = SyncTransactionProducer("pg", NS, check_request_hold_max=5)
    q = pickle.loads(pickle.dumps(p))
    try:
        with pytest.raises(InvalidArgumentError, match="TransactionListener is null"):
            q.send_message_in_transaction(Message.build("T", b"x"))
    finally:
        q.close()
        p.close()
