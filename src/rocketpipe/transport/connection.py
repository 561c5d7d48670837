"""One multiplexed remoting connection over TCP (L2): :class:`Connection`.

A connection is the asyncio protocol of its socket: every read goes straight from
``data_received`` into a :class:`~rocketpipe.protocol.frame.FrameDecoder` (no reader task, no
``StreamReader`` buffer, no task switch per read: 10-15 % of a single send's CPU on either end).
Responses complete the pending request with the same opaque; requests from the peer (for
example ``NOTIFY_CONSUMER_IDS_CHANGED`` pushed by a broker on a client's connection) are handed
to a :class:`~.dispatch.Dispatcher` (a :class:`~.router.Router`): codes with an inline
(synchronous) handler are answered from the read callback, which then pauses reading while the
write buffer is above its high-water mark (``resume_writing`` resumes it); the others each run in
their own task owned by the connection. Outgoing frames are queued and written together on the
next loop iteration (several frames per socket write); a writer only waits when the transport
buffer is above its high-water mark (``pause_writing``). Request deadlines sit in one heap per
connection served by a single timer (cheaper than one ``asyncio.timeout`` per request); an
expired request's pending entry is removed.

Errors at this edge: ``OSError`` and lost connections become
:class:`~rocketpipe.errors.ConnectionClosedError`, timeouts
:class:`~rocketpipe.errors.RequestTimeoutError`. A malformed frame logs one line with the peer and
the reason and closes only this connection. Warnings a peer can trigger repeatedly (malformed
frames, responses nobody asked for) go through a :class:`~rocketpipe.ratelog.RateLimitedLog`:
the server's, shared by its connections, or one per client connection.

Server side, a connection also reports what it holds for an incomplete frame to the server's
:class:`~.limits.PendingBytes` once per socket read, and marks itself active on every read and
write for the server's idle sweep (both O(1): the broker's send/pull path goes through here).

Mirrors ``NettyRemotingAbstract`` (responseTable, processMessageReceived, invokeSyncImpl,
invokeOnewayImpl) and ``NettyRemotingClient.createChannel``.

Imports: stdlib asyncio, :mod:`rocketpipe.errors`, :mod:`rocketpipe.protocol`,
:mod:`rocketpipe.ratelog`, :mod:`.dispatch` (and :mod:`.limits` for types); never :mod:`.router`,
which imports this module to type its handlers.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import ssl
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from ..errors import ConnectionClosedError, InvalidArgumentError, RequestTimeoutError
from ..protocol.codes import FLAG_ONEWAY, FLAG_RESPONSE
from ..protocol.command import RemotingCommand, next_opaque
from ..protocol.frame import FrameDecoder, encode_frame_parts
from ..ratelog import RateLimitedLog
from .dispatch import NO_HANDLERS, Dispatcher
from .tls import handshake_error

if TYPE_CHECKING:
    from .limits import PendingBytes

__all__ = ["Connection", "format_address", "parse_address"]

log = logging.getLogger(__name__)

#: Parts at least this large are written as their own memoryview (no join copy).
_ZERO_COPY_MIN: Final = 64 * 1024
#: Queued-but-unflushed bytes above which the queue is flushed at once.
_FLUSH_NOW_BYTES: Final = 256 * 1024
#: Queued buffers above which the queue is flushed at once. Coalescing a whole burst into one
#: write makes two busy peers take turns (lock-step); small batches keep both ends working.
_FLUSH_NOW_PARTS: Final = 16
#: Seconds a graceful close waits for buffered bytes to leave before aborting.
_CLOSE_LINGER: Final = 1.0

#: How many abandoned request opaques a connection remembers (late answers to them log at DEBUG).
_ABANDONED_KEPT: Final = 1024
#: Seconds between two warnings of one cause on a client connection (servers use their limits).
_CLIENT_WARNING_INTERVAL: Final = 60.0


#: Added to the close reason of a client TLS connection the server closes before sending anything.
_TLS_REFUSED_HINT: Final = (
    " (the TLS server closed the connection before answering: it may require a client certificate"
    " (tls.server.need.client.auth=require) that this client did not send or that it does not trust)"
)


class _Expired(Exception):
    """Set on a pending request's future when its deadline passes (internal)."""


def parse_address(addr: str) -> tuple[str, int]:
    """Split ``"host:port"`` (or ``"[v6]:port"``) into host and port.

    Raises:
        InvalidArgumentError: not ``host:port`` with a numeric port.
    """
    host, sep, port = addr.strip().rpartition(":")
    if not sep or not host or not port.isdigit():
        raise InvalidArgumentError(f"bad address {addr!r}: expected host:port")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port)


def format_address(sockaddr: object) -> str:
    """Format a socket address tuple as ``"ip:port"`` (``"?"`` when unknown)."""
    if isinstance(sockaddr, tuple) and len(sockaddr) >= 2:
        return f"{sockaddr[0]}:{sockaddr[1]}"
    return "?"


class Connection(asyncio.Protocol):
    """A remoting connection: concurrent requests matched by opaque, plus inbound requests.

    Build one with :meth:`connect` (client side); :class:`~.server.RemotingServer` builds the
    server side. The connection is its transport's protocol (``asyncio.Protocol``); its
    ``connection_made`` / ``data_received`` / ``eof_received`` / ``connection_lost`` /
    ``pause_writing`` / ``resume_writing`` are for the event loop only. All methods must be
    called from the event loop that owns the connection.

    Attributes:
        remote_address: the peer as ``"ip:port"`` (``"?"`` before the transport is made).
        local_address: this end as ``"ip:port"``.
        pending_frame_bytes: bytes received and held for an incomplete frame, as of the last
            socket read (server side, kept by :class:`~.limits.PendingBytes`; 0 once closed).
        active: set on every socket read and write; the server's idle sweep clears it.
        quiet_since: loop time from which the idle sweep counts this connection as silent.
    """

    def __init__(
        self,
        *,
        router: Dispatcher[Connection] | None = None,
        warnings: RateLimitedLog | None = None,
        pending: PendingBytes | None = None,
        on_open: Callable[[Connection], None] | None = None,
    ) -> None:
        """A connection waiting for its transport (the loop calls ``connection_made``).

        Args:
            router: handlers for requests sent by the peer, a :class:`~.router.Router` (None:
                every request is answered ``REQUEST_CODE_NOT_SUPPORTED``).
            warnings: rate-limited log for warnings the peer can trigger (None: one of this
                connection's own, made on first use, one line per cause per minute).
            pending: the server's account of bytes held for incomplete frames (None: not
                counted, as on a client connection).
            on_open: called with the connection once its transport is made, before any byte is
                read (the server registers it, or closes it over ``server_max_connections``).
        """
        self._loop = asyncio.get_running_loop()
        self._transport: asyncio.Transport = None  # type: ignore[assignment]  # set by connection_made
        self._router: Dispatcher[Connection] = router if router is not None else NO_HANDLERS
        self._decoder = FrameDecoder()
        self._warnings = warnings
        self._pending_bytes = pending
        self._on_open = on_open
        #: called with every request this end sends (``request`` / ``oneway``) before it is
        #: encoded: the client's ACL signing (Java's client ``RPCHook.doBeforeRequest``); set by
        #: :class:`~.pool.ConnectionPool`. None costs one attribute test per request.
        self.request_hook: Callable[[RemotingCommand], None] | None = None
        #: True on a client connection opened with TLS (set by :meth:`connect`).
        self.tls = False
        self.pending_frame_bytes = 0
        self.active = False
        self.quiet_since = self._loop.time()
        self._pending: dict[int, asyncio.Future[RemotingCommand]] = {}
        #: opaques of requests given up (timed out / cancelled) whose late answer is expected
        #: (e.g. a long-polling pull or pop cut short by a close): logged at DEBUG, not WARNING
        self._abandoned: dict[int, None] = {}
        self._handler_tasks: set[asyncio.Task[None]] = set()
        self._out: list[bytes | memoryview] = []
        self._out_bytes = 0
        self._flush_handle: asyncio.Handle | None = None
        self._closed = False
        self._close_reason = ""
        self._close_callbacks: list[Callable[[Connection], None]] = []
        self._got_data = False  # a byte arrived (a TLS server closing before any is a refusal)
        self._inline_answered = False  # an inline handler answered during this read pass
        self._write_paused = False  # the transport's buffer is above its high-water mark
        self._read_paused = False  # reading paused until the peer takes our responses
        self._drain_waiters: list[asyncio.Future[None]] = []
        self._lost: asyncio.Future[None] = self._loop.create_future()  # done at connection_lost
        self._high_water = 0
        # Request deadlines: a heap of (loop time, seq, future) and one timer for its head.
        # One armed TimerHandle per connection instead of one asyncio.timeout per request:
        # asyncio.timeout costs ~6 us per request, a quarter of a small request's client CPU.
        self._deadlines: list[tuple[float, int, asyncio.Future[RemotingCommand]]] = []
        self._deadline_seq = itertools.count()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_when = float("inf")
        self.remote_address = "?"
        self.local_address = "?"

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    async def connect(
        cls,
        addr: str,
        *,
        router: Dispatcher[Connection] | None = None,
        connect_timeout: float = 3.0,
        ssl_context: ssl.SSLContext | None = None,
    ) -> Connection:
        """Open a TCP connection to ``addr``.

        Mirrors ``NettyRemotingClient.createChannel`` (connect timeout 3 s by default; with
        ``ssl_context``, the ``SslHandler`` Java adds when ``useTLS`` is set).

        Args:
            addr: ``"host:port"``.
            router: handlers for requests the peer sends on this connection.
            connect_timeout: seconds allowed for the TCP connect and, with TLS, the handshake.
            ssl_context: speak TLS (:meth:`.tls.TlsClientConfig.client_context`); the server's
                certificate is checked against ``addr``'s host when the context checks host
                names. None: plain TCP.

        Returns:
            The open connection.

        Raises:
            ConnectionClosedError: refused, unreachable or timed out (retriable); with TLS, a
                failed handshake, with the cause (``TLS handshake with <addr> failed: ...``).
            InvalidArgumentError: ``addr`` is not ``host:port``.
        """
        host, port = parse_address(addr)
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(connect_timeout):
                _, conn = await loop.create_connection(
                    lambda: cls(router=router),
                    host,
                    port,
                    ssl=ssl_context,
                    server_hostname=None if ssl_context is None else host,
                )
        except TimeoutError:
            raise ConnectionClosedError(f"connect to {addr} timed out after {connect_timeout}s") from None
        except (ssl.SSLError, ConnectionResetError, BrokenPipeError) as err:
            if ssl_context is None:
                raise ConnectionClosedError(f"connect to {addr} failed: {err}") from err
            raise handshake_error(addr, err) from err
        except OSError as err:
            raise ConnectionClosedError(f"connect to {addr} failed: {err}") from err
        conn.tls = ssl_context is not None
        log.debug("connected remote=%s local=%s", conn.remote_address, conn.local_address)
        return conn

    @property
    def is_closed(self) -> bool:
        """True once the connection is closed (locally, by the peer, or after an error)."""
        return self._closed

    @property
    def write_buffer_size(self) -> int:
        """Bytes written but not yet taken by the socket (queued here and in the transport)."""
        return self._transport.get_write_buffer_size() + self._out_bytes

    @property
    def reading_paused(self) -> bool:
        """True while reading is paused because the peer does not take the inline answers
        (the transport's write buffer is above its high-water mark)."""
        return self._read_paused

    @property
    def pending_count(self) -> int:
        """Number of requests awaiting a response."""
        return len(self._pending)

    def add_close_callback(self, fn: Callable[[Connection], None]) -> None:
        """Call ``fn(self)`` once when the connection closes (at once if already closed).

        Exceptions raised by ``fn`` are logged and ignored.
        """
        if self._closed:
            self._run_callback(fn)
        else:
            self._close_callbacks.append(fn)

    def close_now(self, reason: str, *, abort: bool = False) -> None:
        """Close from synchronous code (limits, idle sweep); idempotent.

        Like :meth:`close` but without waiting: pending requests fail with
        :class:`ConnectionClosedError` (naming ``reason``), handler tasks are cancelled, the
        buffered incomplete frame is dropped.

        Args:
            reason: why, for the close reason and the DEBUG line.
            abort: True resets the connection and drops queued frames; False writes queued
                frames first (a FIN).
        """
        self._shutdown(reason, abort=abort)

    async def close(self) -> None:
        """Close the connection; idempotent.

        Pending requests fail with :class:`ConnectionClosedError`; handler tasks of inbound
        requests are cancelled and awaited; queued frames are still written before the socket
        closes (up to about one second).
        """
        self._shutdown("closed locally")
        current = asyncio.current_task()
        tasks = [t for t in self._handler_tasks if t is not current]
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        try:
            async with asyncio.timeout(_CLOSE_LINGER):
                await asyncio.shield(self._lost)
        except TimeoutError:
            self._transport.abort()

    # ------------------------------------------------------------------ requests

    async def request(self, cmd: RemotingCommand, timeout: float | None) -> RemotingCommand:
        """Send request ``cmd`` and wait for its response.

        The response bit and the oneway bit of ``cmd.flag`` are cleared; if ``cmd.opaque`` is
        already awaiting a response on this connection, or belongs to an abandoned request (timed
        out or cancelled: its late response is dropped), a fresh opaque is assigned to ``cmd``.
        Mirrors ``NettyRemotingAbstract.invokeSyncImpl``.

        Args:
            cmd: the request.
            timeout: seconds to wait for the response, counted from the call (None = no
                limit).

        Returns:
            The response, whatever its code (map codes with ``error_for_response``).

        Raises:
            RequestTimeoutError: no response within ``timeout`` (retriable); the pending entry
                is removed and a late response is dropped.
            ConnectionClosedError: the connection is or becomes closed (retriable).
            ProtocolError: ``cmd`` cannot be encoded (frame over 16 MiB); nothing was sent.
        """
        if self._closed:
            raise self._closed_error()
        cmd.flag &= ~(FLAG_RESPONSE | FLAG_ONEWAY)
        pending, abandoned = self._pending, self._abandoned
        # a retry of a timed-out command must not be answered by the first attempt's late response
        while cmd.opaque in pending or cmd.opaque in abandoned:
            cmd.opaque = next_opaque()
        if self.request_hook is not None:
            self.request_hook(cmd)
        parts = encode_frame_parts(cmd)
        opaque = cmd.opaque
        fut: asyncio.Future[RemotingCommand] = self._loop.create_future()
        pending[opaque] = fut
        deadline = None if timeout is None else self._loop.time() + timeout
        try:
            self._enqueue(parts)
            if deadline is not None:
                self._add_deadline(deadline, fut)
            if self._transport.get_write_buffer_size() > self._high_water:
                async with asyncio.timeout_at(deadline):
                    await self.wait_writable()
            return await fut
        except (_Expired, TimeoutError):
            self._abandon(opaque)
            raise RequestTimeoutError(
                f"no response within {timeout}s remote={self.remote_address} code={cmd.code} opaque={opaque}"
            ) from None
        finally:
            if pending.get(opaque) is fut:
                del pending[opaque]
            # A cancelled caller: asyncio has usually cancelled the awaited future already (else
            # it is cancelled here; the deadline heap skips done futures). Either way the request
            # is abandoned, and its late response is dropped at DEBUG.
            if not fut.done() or fut.cancelled():
                fut.cancel()
                self._abandon(opaque)

    def _abandon(self, opaque: int) -> None:
        abandoned = self._abandoned
        abandoned[opaque] = None
        if len(abandoned) > _ABANDONED_KEPT:
            del abandoned[next(iter(abandoned))]

    def _add_deadline(self, deadline: float, fut: asyncio.Future[RemotingCommand]) -> None:
        heap = self._deadlines
        heapq.heappush(heap, (deadline, next(self._deadline_seq), fut))
        if len(heap) > 2 * len(self._pending) + 256:  # drop answered entries (amortised O(1))
            heap[:] = [e for e in heap if not e[2].done()]
            heapq.heapify(heap)
        if deadline < self._timer_when:
            self._arm_timer(deadline)

    def _arm_timer(self, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self._loop.call_at(when, self._on_timer)
        self._timer_when = when

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_when = float("inf")
        heap = self._deadlines
        now = self._loop.time()
        while heap and (heap[0][0] <= now or heap[0][2].done()):
            _, _, fut = heapq.heappop(heap)
            if not fut.done():
                fut.set_exception(_Expired())
        if heap:
            self._arm_timer(heap[0][0])

    async def oneway(self, cmd: RemotingCommand) -> None:
        """Send ``cmd`` as a oneway request (sets the oneway flag bit); no response is awaited.

        Mirrors ``NettyRemotingAbstract.invokeOnewayImpl``.

        Raises:
            ConnectionClosedError: the connection is closed (retriable).
            ProtocolError: ``cmd`` cannot be encoded; nothing was sent.
        """
        if self._closed:
            raise self._closed_error()
        cmd.flag = (cmd.flag & ~FLAG_RESPONSE) | FLAG_ONEWAY
        if self.request_hook is not None:
            self.request_hook(cmd)
        self._enqueue(encode_frame_parts(cmd))
        await self.wait_writable()

    def send_response(self, cmd: RemotingCommand) -> None:
        """Queue response ``cmd`` for writing (sets the response bit); never blocks.

        A response for a closed connection is dropped (logged at DEBUG): the peer is gone.

        Raises:
            ProtocolError: ``cmd`` cannot be encoded (frame over 16 MiB); nothing was sent.
        """
        if self._closed:
            log.debug(
                "response dropped, connection closed remote=%s opaque=%d",
                self.remote_address,
                cmd.opaque,
            )
            return
        cmd.flag |= FLAG_RESPONSE
        self._enqueue(encode_frame_parts(cmd))

    async def wait_writable(self) -> None:
        """Wait while the transport's write buffer is above its high-water mark.

        Raises:
            ConnectionClosedError: the connection was lost while waiting (retriable).
        """
        if self.write_buffer_size <= self._high_water:
            return
        self._flush()
        if self._closed:
            raise self._closed_error()
        if not self._write_paused:
            return
        waiter: asyncio.Future[None] = self._loop.create_future()
        self._drain_waiters.append(waiter)
        await waiter  # resume_writing sets it; a close fails it

    # ------------------------------------------------------------------ writing

    def _enqueue(self, parts: list[bytes | memoryview]) -> None:
        self._out.extend(parts)
        self._out_bytes += sum(map(len, parts))
        if self._out_bytes >= _FLUSH_NOW_BYTES or len(self._out) >= _FLUSH_NOW_PARTS:
            self._flush()
        elif self._flush_handle is None:
            self._flush_handle = self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        out = self._out
        if not out:
            return
        total = self._out_bytes
        self._out = []
        self._out_bytes = 0
        self.active = True
        transport = self._transport
        if transport.is_closing():
            return
        if total < _ZERO_COPY_MIN:  # no part is large: one joined write, no loop over the parts
            transport.write(out[0] if len(out) == 1 else b"".join(out))
            return
        small: list[bytes | memoryview] = []
        for part in out:
            if len(part) >= _ZERO_COPY_MIN:
                if small:
                    transport.write(b"".join(small))
                    small = []
                transport.write(part)
            else:
                small.append(part)
        if len(small) == 1:
            transport.write(small[0])
        elif small:
            transport.write(b"".join(small))

    # ------------------------------------------------------------------ reading

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """asyncio: the socket is connected (and, with TLS, the handshake done)."""
        self._transport = transport  # type: ignore[assignment]  # a stream transport
        self._high_water = self._transport.get_write_buffer_limits()[1]
        self.remote_address = format_address(transport.get_extra_info("peername"))
        self.local_address = format_address(transport.get_extra_info("sockname"))
        self.quiet_since = self._loop.time()
        if self._on_open is not None:
            self._on_open(self)

    def data_received(self, data: bytes) -> None:
        """asyncio: decode the frames completed by ``data`` and handle each one."""
        if self._closed:
            return
        self._got_data = True
        self.active = True
        self._decoder.feed(data)
        self._handle_frames()

    def _handle_frames(self) -> None:
        """Handle the whole frames buffered in the decoder, in order.

        Inline handlers answer here. When their answers take the transport's buffer above its
        high-water mark (the peer does not read them), reading pauses and the frames not yet
        handled stay in the decoder until ``resume_writing``. Java's ``NettyRemotingServer``
        does the same in ``channelWritabilityChanged`` (auto-read off while the channel is not
        writable), but handles every frame of the read already decoded; here the pause takes
        effect at the next request, so memory stays bounded per request, not per socket read.
        """
        decoder = self._decoder
        self._inline_answered = False
        while True:
            try:
                cmd = decoder.next()
            except Exception as err:
                self._warn(
                    "malformed-frame", "malformed frame, closing connection remote=%s reason=%s",
                    self.remote_address, err,
                )  # fmt: skip
                self._shutdown(f"malformed frame: {err}", abort=True)
                return
            if cmd is None:
                break
            try:
                self._on_command(cmd)
            except Exception as err:
                log.error("request handling failed remote=%s error=%r", self.remote_address, err)
                self._shutdown(f"request handling failed: {err!r}")
                return
            if self._closed:  # a handler closed the connection: the rest is not read
                return
            if self._inline_answered and self.write_buffer_size > self._high_water:
                self._flush()
                if self._write_paused and not self._closed:
                    self._read_paused = True
                    self._transport.pause_reading()
                    return  # the frames left wait in the decoder (they are not counted as pending)
        if self._inline_answered and self._out:
            # the answers to this read's requests leave in one write now, not one loop
            # iteration later (a round trip's worth of latency and an epoll call each)
            self._flush()
        held = decoder.buffered  # bytes of an incomplete frame (O(1))
        if held != self.pending_frame_bytes:
            if self._pending_bytes is None:
                self.pending_frame_bytes = held
            else:
                self._pending_bytes.update(self, held)  # may close this connection

    def _resume_reading(self) -> None:
        """Handle the frames left when reading paused, then read again (unless paused anew)."""
        if self._closed or not self._read_paused or self._write_paused:
            return
        self._read_paused = False
        self._handle_frames()
        if not self._read_paused and not self._closed:
            self._transport.resume_reading()

    def eof_received(self) -> bool:
        """asyncio: the peer closed its end; close ours (returns False)."""
        reason = "closed by peer"
        if not self._got_data and self.tls and not self._closed:
            reason += _TLS_REFUSED_HINT
        self._shutdown(reason)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        """asyncio: the socket is closed (``exc``: the error that closed it, if any)."""
        if not self._closed:
            reason = "closed by peer" if exc is None else f"read failed: {exc}"
            if not self._got_data and self.tls:
                reason += _TLS_REFUSED_HINT
            self._shutdown(reason, abort=exc is not None)  # also fails wait_writable's waiters
        if not self._lost.done():
            self._lost.set_result(None)

    def pause_writing(self) -> None:
        """asyncio: the transport's buffer went above its high-water mark."""
        self._write_paused = True

    def resume_writing(self) -> None:
        """asyncio: the transport's buffer drained below its low-water mark."""
        self._write_paused = False
        self._wake_drain_waiters()
        if self._read_paused and not self._closed:
            self._loop.call_soon(self._resume_reading)  # not from inside the transport's write path

    def _wake_drain_waiters(self) -> None:
        """Release :meth:`wait_writable` callers: done, or failed when the connection closed."""
        waiters, self._drain_waiters = self._drain_waiters, []
        for waiter in waiters:
            if not waiter.done():
                if self._closed:
                    waiter.set_exception(self._closed_error())
                else:
                    waiter.set_result(None)

    def _on_command(self, cmd: RemotingCommand) -> None:
        if cmd.is_response:
            fut = self._pending.pop(cmd.opaque, None)
            if fut is None and self._abandoned.pop(cmd.opaque, 0) is None:
                log.debug(
                    "late response to an abandoned request dropped remote=%s opaque=%d code=%d",
                    self.remote_address,
                    cmd.opaque,
                    cmd.code,
                )
            elif fut is None or fut.done():
                self._warn(
                    "unsolicited-response", "response with unknown opaque dropped remote=%s opaque=%d code=%d",
                    self.remote_address, cmd.opaque, cmd.code,
                )  # fmt: skip
            else:
                fut.set_result(cmd)
            return
        if self._router.dispatch_inline(cmd, self):
            self._inline_answered = True
            return
        task = self._loop.create_task(self._router.dispatch(cmd, self))
        self._handler_tasks.add(task)
        task.add_done_callback(self._handler_done)

    def _warn(self, cause: str, msg: str, *args: object) -> None:
        """A warning the peer can trigger repeatedly: at most one line per cause per interval."""
        warnings = self._warnings
        if warnings is None:
            warnings = self._warnings = RateLimitedLog(log, _CLIENT_WARNING_INTERVAL)
        warnings.warning(cause, msg, *args)

    def _handler_done(self, task: asyncio.Task[None]) -> None:
        self._handler_tasks.discard(task)
        if not task.cancelled() and (err := task.exception()) is not None:
            log.error("request dispatch failed remote=%s error=%r", self.remote_address, err)

    # ------------------------------------------------------------------ closing

    def _closed_error(self) -> ConnectionClosedError:
        return ConnectionClosedError(f"connection to {self.remote_address} closed: {self._close_reason}")

    def _shutdown(self, reason: str, *, abort: bool = False) -> None:
        """Mark closed, close the socket, fail pending requests, cancel handlers, run callbacks."""
        if self._closed:
            return
        self._closed = True
        self._close_reason = reason
        log.debug("connection closed remote=%s reason=%s", self.remote_address, reason)
        if self._pending_bytes is not None:
            self._pending_bytes.release(self)
        else:
            self.pending_frame_bytes = 0
        self._decoder = FrameDecoder()  # drop a buffered incomplete frame now (the reader stops)
        if abort:
            self._out.clear()
            self._out_bytes = 0
            if self._flush_handle is not None:
                self._flush_handle.cancel()
                self._flush_handle = None
            self._transport.abort()
        else:
            self._flush()
            self._transport.close()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_when = float("inf")
        self._deadlines.clear()
        self._wake_drain_waiters()
        if self._pending:
            err = self._closed_error()
            pending, self._pending = self._pending, {}
            for fut in pending.values():
                if not fut.done():
                    fut.set_exception(err)
        current = asyncio.current_task()
        for task in list(self._handler_tasks):
            if task is not current:
                task.cancel()
        callbacks, self._close_callbacks = self._close_callbacks, []
        for fn in callbacks:
            self._run_callback(fn)

    def _run_callback(self, fn: Callable[[Connection], None]) -> None:
        try:
            fn(self)
        except Exception:
            log.exception("close callback failed remote=%s", self.remote_address)

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<Connection remote={self.remote_address} local={self.local_address} {state}>"
