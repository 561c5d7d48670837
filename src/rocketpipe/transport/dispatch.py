"""The contract between a connection and what answers the requests its peer sends (L2).

:class:`~.connection.Connection` hands every inbound request to a :class:`Dispatcher` (in
practice a :class:`~.router.Router`); the dispatcher answers through the connection's
:class:`Responder` side. Both modules import this one; the connection never imports the router
(the router imports the connection only to type its handlers), so the two form no import cycle.

Also here, shared by the router and by connections built without one: how a response is
written (:func:`answer`, ``NettyRemotingAbstract.processRequestCommand``'s callback) and the
``REQUEST_CODE_NOT_SUPPORTED`` answer (:func:`not_supported`, :data:`NO_HANDLERS`).

Imports: stdlib, :mod:`rocketpipe.errors`, :mod:`rocketpipe.protocol`.
"""

from __future__ import annotations

import logging
from collections.abc import Coroutine
from typing import Any, Final, Protocol, TypeVar

from ..errors import ConnectionClosedError, RocketMQError
from ..protocol.codes import FLAG_RESPONSE, ResponseCode
from ..protocol.command import RemotingCommand

__all__ = ["NO_HANDLERS", "Dispatcher", "Responder", "answer", "not_supported"]

log = logging.getLogger(__name__)

C_contra = TypeVar("C_contra", contravariant=True)


class Responder(Protocol):
    """The side of a connection a dispatcher writes responses on (a :class:`~.connection.Connection`)."""

    @property
    def remote_address(self) -> str:
        """The peer as ``"ip:port"`` (for log lines)."""
        ...

    @property
    def is_closed(self) -> bool:
        """True once the connection is closed (nothing more is written)."""
        ...

    def send_response(self, cmd: RemotingCommand) -> None:
        """Queue ``cmd`` for writing.

        Raises:
            RocketMQError: ``cmd`` cannot be encoded (e.g. over the frame limit).
        """
        ...

    async def wait_writable(self) -> None:
        """Wait until the write buffer is below its high-water mark.

        Raises:
            ConnectionClosedError: the connection closed meanwhile.
        """
        ...


class Dispatcher(Protocol[C_contra]):
    """What a connection of type ``C_contra`` hands the peer's requests to (a :class:`~.router.Router`)."""

    def dispatch_inline(self, cmd: RemotingCommand, conn: C_contra) -> bool:
        """Answer ``cmd`` synchronously from the read callback if possible; False: call :meth:`dispatch`."""
        ...

    def dispatch(self, cmd: RemotingCommand, conn: C_contra) -> Coroutine[Any, Any, None]:
        """Answer ``cmd`` (run in its own task). Never raises except ``CancelledError``."""
        ...


def answer(cmd: RemotingCommand, conn: Responder, resp: RemotingCommand | None) -> None:
    """Write ``resp`` to request ``cmd`` on ``conn``: the request's opaque and the response bit.

    Nothing is written for None, a oneway request or a closed connection. A response that
    cannot be encoded is logged and replaced by SYSTEM_ERROR with the reason as remark.
    """
    if resp is None or cmd.is_oneway:
        return
    resp.opaque = cmd.opaque
    resp.flag |= FLAG_RESPONSE
    if conn.is_closed:
        return
    try:
        conn.send_response(resp)
    except RocketMQError as err:  # e.g. a response body that exceeds the frame limit
        log.error(
            "response not encodable peer=%s code=%d opaque=%d error=%s",
            conn.remote_address,
            cmd.code,
            cmd.opaque,
            err,
        )
        conn.send_response(cmd.response(ResponseCode.SYSTEM_ERROR, str(err)))


def not_supported(cmd: RemotingCommand, conn: Responder) -> RemotingCommand:
    """The answer to a request code nobody handles (``REQUEST_CODE_NOT_SUPPORTED``, Java's remark)."""
    log.debug(
        "request code not supported peer=%s code=%d opaque=%d",
        conn.remote_address,
        cmd.code,
        cmd.opaque,
    )
    return cmd.response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {cmd.code} not supported")


class _NoHandlers:
    """The dispatcher of a connection built without a router: every request is not supported."""

    __slots__ = ()

    def dispatch_inline(self, cmd: RemotingCommand, conn: Responder) -> bool:
        return False

    async def dispatch(self, cmd: RemotingCommand, conn: Responder) -> None:
        answer(cmd, conn, not_supported(cmd, conn))
        if cmd.is_oneway or conn.is_closed:
            return
        try:
            await conn.wait_writable()
        except ConnectionClosedError:
            pass  # the peer is gone; nothing left to answer


#: Answers every request ``REQUEST_CODE_NOT_SUPPORTED`` (as an empty :class:`~.router.Router` does).
NO_HANDLERS: Final[Dispatcher[Responder]] = _NoHandlers()
