"""Request-reply, the parts that need no broker: ``create_reply_message`` (Java
``MessageUtil.createReplyMessage``), the pending-request table with its expiry scan on a fake
clock (``RequestFutureHolder``), the push decoded into a reply (``receiveReplyMessage``), the
runtime's PUSH_REPLY_MESSAGE_TO_CLIENT handler, the request code of a reply, and
``Producer.request`` / ``request_async`` with the send stubbed."""

from __future__ import annotations

import asyncio
import logging
import uuid
import zlib
from typing import Any

import pytest

from rocketpipe import (
    ClientClosedError,
    InvalidArgumentError,
    Message,
    MessageExt,
    MessageQueue,
    MessageUtil,
    Producer,
    ReplyTimeoutError,
    RequestCallback,
    RequestTimeoutError,
    SendResult,
    SendStatus,
    create_reply_message,
)
from rocketpipe.client import ClientConfig, ClientRuntime, get_reply_to_client
from rocketpipe.client.request_reply import (
    PROPERTY_REPLY_MESSAGE_ARRIVE_TIME,
    RequestFutureHolder,
    reply_message_from_push,
    reply_topic,
)
from rocketpipe.client.rpc import send_code
from rocketpipe.errors import HeaderError, SystemBusyError
from rocketpipe.protocol import message as pm
from rocketpipe.protocol.codes import RequestCode, ResponseCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.protocol.headers.send import ReplyMessageRequestHeader
from rocketpipe.protocol.sysflag import COMPRESSED_FLAG
from rocketpipe.testing.clock import FakeClock
from waiting import wait_until

NS = "127.0.0.1:9"  # never contacted: the tests below stub every network step


def _request(cluster: str | None = "DefaultCluster", **extra: str) -> MessageExt:
    props = {
        pm.PROPERTY_CORRELATION_ID: "c-1",
        pm.PROPERTY_MESSAGE_REPLY_TO_CLIENT: "10.0.0.1@42#1",
        pm.PROPERTY_MESSAGE_TTL: "3000",
        "UNIQ_KEY": "REQ-ID",
        "TAGS": "ask",
        **extra,
    }
    if cluster is not None:
        props[pm.PROPERTY_CLUSTER] = cluster
    return MessageExt(topic="Ask", body=b"q", properties=props)


def _reply(correlation_id: str | None, body: bytes = b"a") -> MessageExt:
    props = {pm.PROPERTY_MESSAGE_TYPE: "reply"}
    if correlation_id is not None:
        props[pm.PROPERTY_CORRELATION_ID] = correlation_id
    return MessageExt(topic="DefaultCluster_REPLY_TOPIC", body=body, properties=props, born_host="10.0.0.2:1")


# ------------------------------------------------------------------------------ create_reply_message


def test_create_reply_message_copies_the_request_properties_like_java() -> None:
    reply = create_reply_message(_request(), b"answer")
    assert reply.topic == "DefaultCluster_REPLY_TOPIC" == reply_topic("DefaultCluster")
    assert reply.body == b"answer" and reply.flag == 0
    # only these four: no tags, keys, UNIQ_KEY or WAIT of the request (Java's new Message())
    assert reply.properties == {
        "MSG_TYPE": "reply",
        "CORRELATION_ID": "c-1",
        "REPLY_TO_CLIENT": "10.0.0.1@42#1",
        "TTL": "3000",
    }
    assert create_reply_message(_request(cluster="Other"), "text").topic == "Other_REPLY_TOPIC"
    assert create_reply_message(_request(), "text").body == b"text"
    assert MessageUtil.create_reply_message(_request(), b"x") == create_reply_message(_request(), b"x")
    assert get_reply_to_client(_request()) == MessageUtil.get_reply_to_client(_request()) == "10.0.0.1@42#1"


def test_create_reply_message_skips_missing_properties() -> None:
    req = MessageExt(topic="Ask", body=b"q", properties={pm.PROPERTY_CLUSTER: "C"})
    assert create_reply_message(req, b"x").properties == {"MSG_TYPE": "reply"}


def test_create_reply_message_without_cluster_or_request_raises_java_texts() -> None:
    with pytest.raises(
        InvalidArgumentError, match=r"^create reply message fail, requestMessage error, property\[CLUSTER\] is null\.$"
    ):
        create_reply_message(_request(cluster=None), b"x")
    with pytest.raises(InvalidArgumentError, match=r"requestMessage cannot be null"):
        create_reply_message(None, b"x")


def test_a_reply_is_sent_with_send_reply_message_v2() -> None:
    reply = create_reply_message(_request(), b"x")
    assert send_code(reply.properties, False) == RequestCode.SEND_REPLY_MESSAGE_V2 == 325
    assert send_code({"MSG_TYPE": "other"}, False) == RequestCode.SEND_MESSAGE_V2
    assert send_code({}, True) == RequestCode.SEND_BATCH_MESSAGE


# ------------------------------------------------------------------------------ the pending-request table


class Callback:
    def __init__(self) -> None:
        self.ok: list[MessageExt] = []
        self.errors: list[BaseException] = []

    def on_success(self, message: MessageExt) -> None:
        self.ok.append(message)

    def on_exception(self, e: BaseException) -> None:
        self.errors.append(e)


class AsyncCallback(Callback):
    async def on_success(self, message: MessageExt) -> None:  # type: ignore[override]
        self.ok.append(message)

    async def on_exception(self, e: BaseException) -> None:  # type: ignore[override]
        self.errors.append(e)


def test_callbacks_are_request_callbacks() -> None:
    assert isinstance(Callback(), RequestCallback) and isinstance(AsyncCallback(), RequestCallback)


def test_holder_matches_a_reply_by_correlation_id() -> None:
    holder = RequestFutureHolder(FakeClock())
    cb = Callback()
    a = holder.register("a", 1000, cb)
    b = holder.register("b", 1000)
    assert len(holder) == 2 and "a" in holder and holder.get("b") is b
    reply = _reply("a")
    assert holder.complete(reply) is a
    assert a.done and a.response_msg is reply and cb.ok == [reply] and not cb.errors
    assert "a" not in holder and not b.done
    assert holder.complete(_reply("a")) is None  # a second (late) reply: nobody waits
    assert holder.complete(_reply("zzz")) is None
    assert holder.complete(_reply(None)) is None
    holder.remove(b)
    holder.remove(b)
    assert len(holder) == 0


def test_holder_scan_fails_expired_requests_on_its_clock() -> None:
    clock = FakeClock()
    holder = RequestFutureHolder(clock)
    cb = Callback()
    short = holder.register("short", 1000, cb)
    long = holder.register("long", 5000)
    clock.advance(1.0)
    assert holder.scan_expired() == []  # Java: expired only when strictly older than the timeout
    clock.advance(0.001)
    assert holder.scan_expired() == [short]
    assert "short" not in holder and "long" in holder
    assert short.done and short.response_msg is None
    assert isinstance(short.cause, ReplyTimeoutError) and str(short.cause) == "request timeout, no reply message."
    assert cb.errors == [short.cause] and not cb.ok
    clock.advance(10)
    assert holder.scan_expired() == [long] and len(holder) == 0


def test_holder_fail_and_fail_all() -> None:
    holder = RequestFutureHolder(FakeClock())
    cb1, cb2 = Callback(), Callback()
    f1 = holder.register("1", 1000, cb1)
    f2 = holder.register("2", 1000, cb2)
    boom = SystemBusyError("busy")
    assert holder.fail(f1, boom) and not holder.fail(f1, boom)
    assert not f1.send_request_ok and f1.cause is boom and f1.done and cb1.errors == [boom]
    closed = ClientClosedError("closed")
    assert holder.fail_all(closed) == 1
    assert f2.cause is closed and cb2.errors == [closed] and len(holder) == 0


def test_a_raising_callback_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    class Bad(Callback):
        def on_success(self, message: MessageExt) -> None:
            raise RuntimeError("bad callback")

    holder = RequestFutureHolder(FakeClock())
    holder.register("x", 1000, Bad())
    with caplog.at_level(logging.WARNING):
        assert holder.complete(_reply("x")) is not None
    assert "bad callback" in caplog.text


async def test_async_callbacks_run_as_tasks() -> None:
    clock = FakeClock()
    holder = RequestFutureHolder(clock)
    cb = AsyncCallback()
    holder.register("x", 1000, cb)
    holder.register("y", 1000, cb)
    reply = _reply("x")
    holder.complete(reply)
    clock.advance(2)
    holder.scan_expired()
    await wait_until(lambda: len(cb.ok) == 1 and len(cb.errors) == 1, what="async callbacks")
    assert cb.ok == [reply] and isinstance(cb.errors[0], ReplyTimeoutError)


async def test_future_wait_returns_the_reply_or_none() -> None:
    holder = RequestFutureHolder(FakeClock())
    fut = holder.register("w", 1000)
    assert await fut.wait_response_message(0.01) is None
    waiter = asyncio.ensure_future(fut.wait_response_message(10))
    reply = _reply("w")
    holder.complete(reply)
    assert await waiter is reply


# ------------------------------------------------------------------------------ the push


def _push_header(**kw: Any) -> ReplyMessageRequestHeader:
    fields: dict[str, Any] = {
        "producer_group": "rep-pg",
        "topic": "DefaultCluster_REPLY_TOPIC",
        "default_topic": "TBW102",
        "default_topic_queue_nums": 4,
        "queue_id": 0,
        "sys_flag": 0,
        "born_timestamp": 1_700_000_000_100,
        "flag": 7,
        "properties": pm.properties_to_string(
            {"MSG_TYPE": "reply", "CORRELATION_ID": "c-9", "PUSH_REPLY_TIME": "1700000000200", "k": "v"}
        ),
        "reconsume_times": None,
        "born_host": "10.0.0.2:50000",
        "store_host": "10.0.0.3:10911",
        "store_timestamp": 1_700_000_000_200,
    }
    fields.update(kw)
    return ReplyMessageRequestHeader(**fields)


def test_reply_from_push_copies_the_header() -> None:
    m = reply_message_from_push(_push_header(), b"answer", 1_700_000_000_300)
    assert (m.topic, m.body, m.flag, m.queue_id, m.sys_flag, m.reconsume_times) == (
        "DefaultCluster_REPLY_TOPIC",
        b"answer",
        7,
        0,
        0,
        0,
    )
    assert (m.born_host, m.store_host) == ("10.0.0.2:50000", "10.0.0.3:10911")
    assert (m.born_timestamp, m.store_timestamp) == (1_700_000_000_100, 1_700_000_000_200)
    assert m.properties == {
        "MSG_TYPE": "reply",
        "CORRELATION_ID": "c-9",
        "PUSH_REPLY_TIME": "1700000000200",
        "k": "v",
        PROPERTY_REPLY_MESSAGE_ARRIVE_TIME: "1700000000300",
    }
    assert reply_message_from_push(_push_header(reconsume_times=2, queue_id=3), b"", 0).reconsume_times == 2


def test_reply_from_push_inflates_a_compressed_body() -> None:
    body = b"z" * 10_000
    m = reply_message_from_push(_push_header(sys_flag=COMPRESSED_FLAG), zlib.compress(body), 1)
    assert m.body == body and m.sys_flag & COMPRESSED_FLAG == 0


def test_reply_from_push_keeps_a_body_that_does_not_inflate(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        m = reply_message_from_push(_push_header(sys_flag=COMPRESSED_FLAG), b"not zlib", 1)
    assert m.body == b"not zlib" and m.sys_flag & COMPRESSED_FLAG
    assert "uncompress" in caplog.text


def _push(header: ReplyMessageRequestHeader, body: bytes = b"answer") -> RemotingCommand:
    return RemotingCommand.request(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, header.to_ext_fields(), body)


class FakeConn:
    remote_address = "10.0.0.3:10911"


async def test_runtime_completes_the_request_and_answers_success(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    rt = ClientRuntime(ClientConfig(namesrv_addr=NS), clock=clock)
    try:
        handler = rt.router.handler_for(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT)
        assert handler is not None
        fut = rt.request_futures.register("c-9", 3000)
        resp = await handler(_push(_push_header()), FakeConn())  # type: ignore[arg-type]
        assert resp is not None and resp.code == ResponseCode.SUCCESS
        assert fut.response_msg is not None and fut.response_msg.body == b"answer"
        assert fut.response_msg.properties[PROPERTY_REPLY_MESSAGE_ARRIVE_TIME] == str(clock.now_ms())
        assert len(rt.request_futures) == 0

        # replies nobody waits for: SUCCESS, and one log line per minute
        with caplog.at_level(logging.WARNING, logger="rocketpipe.client.runtime"):
            for _ in range(3):
                resp = await handler(_push(_push_header()), FakeConn())  # type: ignore[arg-type]
                assert resp is not None and resp.code == ResponseCode.SUCCESS
        lines = [r for r in caplog.records if "not matched any request" in r.getMessage()]
        assert len(lines) == 1 and "c-9" in lines[0].getMessage()

        bad = RemotingCommand.request(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, {"topic": "T"}, b"")
        with pytest.raises(HeaderError):  # the router answers SYSTEM_ERROR
            await handler(bad, FakeConn())  # type: ignore[arg-type]
    finally:
        await rt.close()


async def test_runtime_close_fails_pending_requests() -> None:
    rt = ClientRuntime(ClientConfig(namesrv_addr=NS))
    cb = Callback()
    fut = rt.request_futures.register("p", 3000, cb)
    await rt.close()
    assert isinstance(fut.cause, ClientClosedError) and fut.done and len(cb.errors) == 1


# ------------------------------------------------------------------------------ Producer.request, send stubbed


class StubbedRequester(Producer):
    """``send`` replaced: records the request and lets the test play the broker."""

    def __init__(self) -> None:
        super().__init__("req-pg", namesrv_addr=NS)
        self.sent: list[tuple[Message, dict[str, Any]]] = []
        self.answer: Any = None  # "reply" | an exception | None (no reply)
        self._default_route_asked = True  # no TBW102 route lookup (no name server here)

    async def _publish_queues(self, topic: str, *, refresh: bool = False) -> tuple[list[MessageQueue], bool]:
        return [MessageQueue(topic, "b", 0)], False

    async def send(self, msg: Message, **kw: Any) -> SendResult:  # type: ignore[override]
        self.sent.append((msg, kw))
        if isinstance(self.answer, BaseException):
            raise self.answer
        if self.answer == "reply":
            reply = create_reply_message(
                MessageExt(topic=msg.topic, body=msg.body, properties={**msg.properties, "CLUSTER": "C"}),
                b"re:" + msg.body,
            )
            ext = MessageExt(topic=reply.topic, body=reply.body, properties=reply.properties)
            asyncio.get_running_loop().call_soon(self.runtime.request_futures.complete, ext)
        return SendResult(SendStatus.FLUSH_DISK_TIMEOUT, "id", "off", MessageQueue(msg.topic, "b", 0), 0)


async def test_request_sets_java_properties_and_returns_the_reply() -> None:
    p = StubbedRequester()
    p.answer = "reply"
    try:
        msg = Message.build("Ask", b"q")
        reply = await p.request(msg, 2.5, selector=lambda qs, m, a: qs[0], arg=1)
        assert reply.body == b"re:q" and reply.properties["MSG_TYPE"] == "reply"
        props = msg.properties
        assert str(uuid.UUID(props["CORRELATION_ID"])) == props["CORRELATION_ID"]
        assert props["REPLY_TO_CLIENT"] == p.runtime.client_id and props["TTL"] == "2500"
        assert reply.properties["CORRELATION_ID"] == props["CORRELATION_ID"]
        ((sent, kw),) = p.sent
        assert sent is msg and kw["arg"] == 1 and kw["selector"] is not None and 0 < kw["timeout"] <= 2.5
        assert len(p.runtime.request_futures) == 0
    finally:
        await p.close()


async def test_request_timeout_and_send_failure() -> None:
    p = StubbedRequester()
    try:
        with pytest.raises(
            ReplyTimeoutError, match=r"^send request message to <Ask> OK, but wait reply message timeout, 50 ms\.$"
        ) as ei:
            await p.request(Message.build("Ask", b"q"), 0.05)
        assert isinstance(ei.value, RequestTimeoutError) and ei.value.code == 10006
        p.answer = SystemBusyError("busy")
        with pytest.raises(SystemBusyError):
            await p.request(Message.build("Ask", b"q"), 1)
        assert len(p.runtime.request_futures) == 0
        for bad in (0, -1.0):
            with pytest.raises(InvalidArgumentError, match="timeout"):
                await p.request(Message.build("Ask", b"q"), bad)
        with pytest.raises(InvalidArgumentError, match="either queue= or selector="):
            await p.request(Message.build("Ask", b"q"), 1, queue=MessageQueue("Ask", "b", 0), selector=lambda *a: None)  # type: ignore[arg-type,return-value]
    finally:
        await p.close()


async def test_request_async_calls_back() -> None:
    p = StubbedRequester()
    cb = Callback()
    try:
        p.answer = "reply"
        await p.request_async(Message.build("Ask", b"one"), cb, 5)
        await wait_until(lambda: len(cb.ok) == 1, what="reply callback")
        assert cb.ok[0].body == b"re:one"
        p.answer = SystemBusyError("busy")
        await p.request_async(Message.build("Ask", b"two"), cb, 5)
        await wait_until(lambda: len(cb.errors) == 1, what="send failure callback")
        assert isinstance(cb.errors[0], SystemBusyError) and len(p.runtime.request_futures) == 0
        p.answer = None
        await p.request_async(Message.build("Ask", b"three"), cb, 5)
        assert len(p.runtime.request_futures) == 1
    finally:
        await p.close()
    assert len(cb.errors) == 2 and isinstance(cb.errors[1], ClientClosedError)  # pending at close
