"""transport.dispatch: the answer of a connection built without a router (NO_HANDLERS)."""

from __future__ import annotations

from rocketpipe.protocol.codes import ResponseCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.transport.dispatch import NO_HANDLERS, answer


class FakeConn:
    """Records responses; stands in for a Connection."""

    remote_address = "10.0.0.1:1234"

    def __init__(self, closed: bool = False) -> None:
        self.sent: list[RemotingCommand] = []
        self.is_closed = closed
        self.waited = 0

    def send_response(self, cmd: RemotingCommand) -> None:
        self.sent.append(cmd)

    async def wait_writable(self) -> None:
        self.waited += 1


async def test_no_handlers_answers_request_code_not_supported() -> None:
    conn = FakeConn()
    req = RemotingCommand.request(4242)
    assert NO_HANDLERS.dispatch_inline(req, conn) is False
    await NO_HANDLERS.dispatch(req, conn)
    (resp,) = conn.sent
    assert (resp.code, resp.remark, resp.opaque) == (
        ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
        " request type 4242 not supported",
        req.opaque,
    )
    assert resp.is_response
    assert conn.waited == 1


async def test_no_handlers_leaves_oneway_and_closed_unanswered() -> None:
    oneway = RemotingCommand.request(4242, oneway=True)
    conn = FakeConn()
    await NO_HANDLERS.dispatch(oneway, conn)
    closed = FakeConn(closed=True)
    await NO_HANDLERS.dispatch(RemotingCommand.request(4242), closed)
    assert (conn.sent, conn.waited, closed.sent, closed.waited) == ([], 0, [], 0)


def test_answer_sets_opaque_and_response_bit() -> None:
    conn = FakeConn()
    req = RemotingCommand.request(10)
    answer(req, conn, RemotingCommand(code=0, opaque=999))
    answer(req, conn, None)
    (resp,) = conn.sent
    assert resp.opaque == req.opaque and resp.is_response
