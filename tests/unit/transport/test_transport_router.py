"""Router.dispatch: Java server response rules (NettyRemotingAbstract.processRequestCommand)."""

from __future__ import annotations

from rocketpipe.errors import NoPermissionError, TopicNotExistError
from rocketpipe.protocol.codes import FLAG_RESPONSE, ResponseCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.transport import Router


class FakeConn:
    """Records responses; stands in for a Connection."""

    remote_address = "10.0.0.1:1234"

    def __init__(self, closed: bool = False) -> None:
        self.sent: list[RemotingCommand] = []
        self.is_closed = closed

    def send_response(self, cmd: RemotingCommand) -> None:
        self.sent.append(cmd)

    async def wait_writable(self) -> None:
        return None


async def test_unknown_code_answers_request_code_not_supported() -> None:
    conn = FakeConn()
    req = RemotingCommand.request(4242)
    await Router().dispatch(req, conn)  # type: ignore[arg-type]
    (resp,) = conn.sent
    assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert resp.remark == " request type 4242 not supported"
    assert resp.opaque == req.opaque
    assert resp.flag & FLAG_RESPONSE


async def test_handler_response_gets_request_opaque_and_response_bit() -> None:
    router = Router()

    async def handler(cmd: RemotingCommand, conn: object) -> RemotingCommand:
        return RemotingCommand(code=0, opaque=999, body=b"ok")

    router.register(10, handler)
    conn = FakeConn()
    req = RemotingCommand.request(10)
    await router.dispatch(req, conn)  # type: ignore[arg-type]
    (resp,) = conn.sent
    assert (resp.code, resp.opaque, resp.body) == (0, req.opaque, b"ok")
    assert resp.is_response


async def test_rocketmq_error_maps_to_its_code_and_text() -> None:
    router = Router()

    async def handler(cmd: RemotingCommand, conn: object) -> RemotingCommand:
        raise TopicNotExistError("topic T not exist")

    router.register(10, handler)
    conn = FakeConn()
    await router.dispatch(RemotingCommand.request(10), conn)  # type: ignore[arg-type]
    (resp,) = conn.sent
    assert resp.code == ResponseCode.TOPIC_NOT_EXIST
    assert resp.remark == str(TopicNotExistError("topic T not exist"))


async def test_other_exception_is_system_error() -> None:
    router = Router()

    async def handler(cmd: RemotingCommand, conn: object) -> RemotingCommand:
        raise KeyError("boom")

    router.register(10, handler)
    conn = FakeConn()
    await router.dispatch(RemotingCommand.request(10), conn)  # type: ignore[arg-type]
    (resp,) = conn.sent
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert "boom" in (resp.remark or "")


async def test_oneway_is_never_answered_even_on_error_or_unknown_code() -> None:
    router = Router()
    calls: list[int] = []

    async def handler(cmd: RemotingCommand, conn: object) -> RemotingCommand:
        calls.append(cmd.code)
        raise NoPermissionError("no")

    router.register(10, handler)
    conn = FakeConn()
    await router.dispatch(RemotingCommand.request(10, oneway=True), conn)  # type: ignore[arg-type]
    await router.dispatch(RemotingCommand.request(11, oneway=True), conn)  # type: ignore[arg-type]
    assert calls == [10]
    assert conn.sent == []


async def test_none_means_answer_later_and_closed_connection_gets_nothing() -> None:
    router = Router()

    async def later(cmd: RemotingCommand, conn: object) -> None:
        return None

    async def now(cmd: RemotingCommand, conn: object) -> RemotingCommand:
        return cmd.response()

    router.register(10, later)
    router.register(11, now)
    conn = FakeConn()
    await router.dispatch(RemotingCommand.request(10), conn)  # type: ignore[arg-type]
    assert conn.sent == []
    closed = FakeConn(closed=True)
    await router.dispatch(RemotingCommand.request(11), closed)  # type: ignore[arg-type]
    assert closed.sent == []
    assert 10 in router and router.handler_for(11) is now


# ---------------------------------------------------------------- inline (read-loop) handlers


async def test_inline_handler_answers_without_a_task_and_defer_falls_back() -> None:
    from rocketpipe.transport import DEFER

    router = Router()
    calls: list[str] = []

    async def handler(cmd: RemotingCommand, conn: object) -> RemotingCommand:
        calls.append("async")
        return RemotingCommand(code=0, body=b"slow")

    def inline(cmd: RemotingCommand, conn: object) -> RemotingCommand | object:
        calls.append("inline")
        return DEFER if cmd.body == b"defer" else RemotingCommand(code=0, opaque=5, body=b"fast")

    router.register(10, handler, inline=inline)
    conn = FakeConn()
    req = RemotingCommand.request(10)
    assert router.dispatch_inline(req, conn)  # type: ignore[arg-type]
    (resp,) = conn.sent
    assert (resp.body, resp.opaque, resp.is_response) == (b"fast", req.opaque, True)
    deferred = RemotingCommand.request(10, body=b"defer")
    assert not router.dispatch_inline(deferred, conn)  # type: ignore[arg-type]
    await router.dispatch(deferred, conn)  # type: ignore[arg-type]
    assert calls == ["inline", "inline", "async"]
    assert not router.dispatch_inline(RemotingCommand.request(11), conn)  # type: ignore[arg-type]


def test_inline_handler_errors_and_oneway_follow_dispatch_rules() -> None:
    router = Router()

    async def handler(cmd: RemotingCommand, conn: object) -> None:
        return None

    def inline(cmd: RemotingCommand, conn: object) -> RemotingCommand:
        if cmd.body == b"perm":
            raise NoPermissionError("no")
        if cmd.body == b"bug":
            raise ValueError("boom")
        return RemotingCommand(code=0)

    router.register(10, handler, inline=inline)
    conn = FakeConn()
    assert router.dispatch_inline(RemotingCommand.request(10, body=b"perm"), conn)  # type: ignore[arg-type]
    assert router.dispatch_inline(RemotingCommand.request(10, body=b"bug"), conn)  # type: ignore[arg-type]
    assert router.dispatch_inline(RemotingCommand.request(10, oneway=True), conn)  # type: ignore[arg-type]
    assert [r.code for r in conn.sent] == [ResponseCode.NO_PERMISSION, ResponseCode.SYSTEM_ERROR]
    assert conn.sent[1].remark == "ValueError: boom"
    router.register(10, handler)  # re-registering without inline removes the fast path
    assert not router.dispatch_inline(RemotingCommand.request(10), conn)  # type: ignore[arg-type]
