"""Request dispatch by request code (L2): :class:`Router`.

A :class:`Router` maps request codes to async handlers and turns a handler's outcome into the
response a Java server would write. It is shared by :class:`~.server.RemotingServer` (broker and
name-server requests) and by client-side connections (server-initiated requests such as
``NOTIFY_CONSUMER_IDS_CHANGED``). Mirrors ``NettyRemotingAbstract.processRequestCommand``.

A :class:`Router` is the :class:`~.dispatch.Dispatcher` of the connections it serves; the response
writing it shares with connections built without one lives in :mod:`.dispatch`.

Imports: stdlib, :mod:`rocketpipe.errors`, :mod:`rocketpipe.protocol`, :mod:`.dispatch`;
``connection`` only for typing (the connection never imports this module).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeAlias

from ..errors import ConnectionClosedError, RocketMQError
from ..protocol.codes import ResponseCode
from ..protocol.command import RemotingCommand
from .dispatch import answer, not_supported

if TYPE_CHECKING:
    from .connection import Connection

__all__ = ["DEFER", "Guard", "Handler", "InlineHandler", "Observer", "Router"]

log = logging.getLogger(__name__)

#: An async request handler: returns the response to write, or None to answer later with
#: :meth:`Connection.send_response` (long polling) or never (oneway requests).
Handler: TypeAlias = Callable[[RemotingCommand, "Connection"], Awaitable["RemotingCommand | None"]]

#: Returned by an inline handler to say "run the async handler for this request instead".
DEFER: object = object()

#: A synchronous fast path registered next to an async handler: runs in the connection's read
#: loop (no task per request) and returns the response, None (no response now) or
#: :data:`DEFER` (nothing done yet; the async handler runs in its own task as usual).
InlineHandler: TypeAlias = Callable[[RemotingCommand, "Connection"], "RemotingCommand | object | None"]

#: A check run before any handler (the broker's ACL, Java's server ``RPCHook.doBeforeRequest``):
#: returns None to let the request through, or the response that refuses it.
Guard: TypeAlias = Callable[[RemotingCommand, "Connection"], "RemotingCommand | None"]
#: Told of every answered request: ``(request code, response code, seconds, oneway)`` (the
#: broker's ``rocketmq_rpc_latency``; Java's ``RemotingMetricsManager``).
Observer: TypeAlias = Callable[[int, int, float, bool], None]


class Router:
    """Table of request handlers keyed by request code.

    Mirrors ``NettyRemotingAbstract.processorTable`` + ``processRequestCommand``: an unknown code
    answers ``REQUEST_CODE_NOT_SUPPORTED`` with remark ``" request type <code> not supported"``;
    a handler raising :class:`~rocketpipe.errors.RocketMQError` answers the error's ``code`` with
    ``str(err)`` as remark; any other exception answers ``SYSTEM_ERROR``; oneway requests are
    never answered.

    Attributes:
        guard: optional :data:`Guard` run on every request before its handler, in
            :meth:`dispatch_inline` (a connection always calls it first); None (the default)
            costs one attribute test per request.
        observer: optional :data:`Observer` told of each request answered by a handler (its
            time from dispatch to the answer being queued); None costs one attribute test.
    """

    __slots__ = ("_handlers", "_inline", "guard", "observer")

    def __init__(self) -> None:
        self._handlers: dict[int, Handler] = {}
        self._inline: dict[int, InlineHandler] = {}
        self.guard: Guard | None = None
        self.observer: Observer | None = None

    def register(self, code: int, handler: Handler, *, inline: InlineHandler | None = None) -> None:
        """Register ``handler`` for request ``code`` (replaces an earlier registration).

        Args:
            code: a request code (``RequestCode`` member or int).
            handler: ``async (request, connection) -> response | None``.
            inline: optional synchronous fast path with the same outcome as ``handler`` for the
                requests it accepts (it returns :data:`DEFER` for the others); it runs in the
                connection's read callback, saving a task per request.
        """
        self._handlers[int(code)] = handler
        if inline is None:
            self._inline.pop(int(code), None)
        else:
            self._inline[int(code)] = inline

    def dispatch_inline(self, cmd: RemotingCommand, conn: Connection) -> bool:
        """Handle ``cmd`` synchronously when its code has an inline handler that accepts it.

        Same outcome as :meth:`dispatch` (errors become error responses; oneway requests are
        not answered), except that back-pressure is left to the caller (the read callback).

        Returns:
            True when handled (or refused by :attr:`guard`); False when :meth:`dispatch` must
            run (no inline handler, or it returned :data:`DEFER`).
        """
        guard = self.guard
        if guard is not None:
            denial = guard(cmd, conn)
            if denial is not None:
                answer(cmd, conn, denial)
                return True
        fn = self._inline.get(cmd.code)
        if fn is None:
            return False
        observer = self.observer
        t0 = time.perf_counter() if observer is not None else 0.0
        try:
            resp = fn(cmd, conn)
        except RocketMQError as err:
            log.debug(
                "handler error peer=%s code=%d opaque=%d error=%r",
                conn.remote_address,
                cmd.code,
                cmd.opaque,
                err,
            )
            resp = cmd.response(err.code, str(err) or type(err).__name__)
        except Exception as err:
            log.exception(
                "handler failed peer=%s code=%d opaque=%d",
                conn.remote_address,
                cmd.code,
                cmd.opaque,
            )
            resp = cmd.response(ResponseCode.SYSTEM_ERROR, f"{type(err).__name__}: {err}")
        if resp is DEFER:
            return False
        answer(cmd, conn, resp)  # type: ignore[arg-type]
        if observer is not None and isinstance(resp, RemotingCommand):
            observer(cmd.code, resp.code, time.perf_counter() - t0, cmd.is_oneway)
        return True

    def handler_for(self, code: int) -> Handler | None:
        """Return the handler registered for ``code``, or None."""
        return self._handlers.get(code)

    def __contains__(self, code: object) -> bool:
        return code in self._handlers

    async def dispatch(self, cmd: RemotingCommand, conn: Connection) -> None:
        """Run the handler for request ``cmd`` and write its response on ``conn``.

        Nothing is written when the request is oneway or the handler returned None (it answers
        later with ``conn.send_response``). The response gets the request's opaque and the
        response bit whatever the handler put there. Never raises except
        :class:`asyncio.CancelledError`; handler failures become error responses.

        Args:
            cmd: the decoded request.
            conn: the connection it arrived on (responses are written there).
        """
        observer = self.observer
        t0 = time.perf_counter() if observer is not None else 0.0
        handler = self._handlers.get(cmd.code)
        if handler is None:
            resp: RemotingCommand | None = not_supported(cmd, conn)
        else:
            try:
                resp = await handler(cmd, conn)
            except asyncio.CancelledError:
                raise
            except RocketMQError as err:
                log.debug(
                    "handler error peer=%s code=%d opaque=%d error=%r",
                    conn.remote_address,
                    cmd.code,
                    cmd.opaque,
                    err,
                )
                resp = cmd.response(err.code, str(err) or type(err).__name__)
            except Exception as err:
                log.exception(
                    "handler failed peer=%s code=%d opaque=%d",
                    conn.remote_address,
                    cmd.code,
                    cmd.opaque,
                )
                resp = cmd.response(ResponseCode.SYSTEM_ERROR, f"{type(err).__name__}: {err}")
        if observer is not None and resp is not None:
            observer(cmd.code, resp.code, time.perf_counter() - t0, cmd.is_oneway)
        if resp is None or cmd.is_oneway:
            return
        answer(cmd, conn, resp)
        if conn.is_closed:
            return
        try:
            await conn.wait_writable()
        except ConnectionClosedError:
            pass  # the peer is gone; nothing left to answer
