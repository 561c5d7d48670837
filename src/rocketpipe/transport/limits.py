"""Connection limits of a remoting server (L2): :class:`ServerLimits` and :class:`PendingBytes`.

:class:`ServerLimits` holds the knobs (idle timeout, maximum connections, caps on bytes held for
incomplete frames, warning interval); :class:`PendingBytes` keeps the per-connection and
process-wide count of bytes held for incomplete frames and closes connections past the caps.
:class:`~.server.RemotingServer` owns one of each; every server connection reports to it.

The idle timeout mirrors ``NettyServerConfig.serverChannelMaxIdleTimeSeconds`` (Netty
``IdleStateHandler`` ``ALL_IDLE``); Java has no byte or connection caps, its frames are bounded by
``frameMaxLength`` (16 MiB) only, which :class:`~rocketpipe.protocol.frame.FrameDecoder` checks.

Imports: stdlib, :mod:`rocketpipe.errors`, :mod:`rocketpipe.ratelog`; not :mod:`.connection`
(which reports here): :class:`PendingBytes` sees a connection as a :class:`FrameHolder`.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, fields
from typing import Final, Protocol

from ..errors import InvalidArgumentError
from ..ratelog import RateLimitedLog

__all__ = ["FrameHolder", "PendingBytes", "ServerLimits"]

#: ``serverChannelMaxIdleTimeSeconds`` (NettyServerConfig).
DEFAULT_MAX_IDLE_SECONDS: Final = 120
#: Connections a server accepts at once (rocketpipe's own limit; Java has none).
DEFAULT_MAX_CONNECTIONS: Final = 4096
#: Largest frame plus slack for the bytes of the next frame read in the same chunk.
DEFAULT_MAX_PENDING_FRAME_BYTES: Final = 16 * 1024 * 1024 + 1024


@dataclass(frozen=True, kw_only=True)
class ServerLimits:
    """Limits one :class:`~.server.RemotingServer` applies to its connections.

    Field names are those of :class:`rocketpipe.broker.BrokerConfig` (Java ``NettyServerConfig``
    for the idle timeout), so :meth:`from_config` copies them by name.

    Attributes:
        server_channel_max_idle_time_seconds: close a connection with no inbound or outbound
            traffic for this long, seconds (floats allowed; 0 = never). Java
            ``serverChannelMaxIdleTimeSeconds``, 120.
        server_max_connections: open connections at once; one more is closed right after accept.
        server_max_pending_frame_bytes: bytes one connection may hold for an incomplete frame.
        server_max_pending_bytes_total: bytes all connections together may hold for incomplete
            frames; past it the connection holding most is closed, then the next, until under.
        server_warning_interval_seconds: at most one warning line per cause per this many
            seconds; the next line says how many events the silence stood for.

    Raises:
        InvalidArgumentError: a negative idle time, or a non-positive cap or interval.
    """

    server_channel_max_idle_time_seconds: float = DEFAULT_MAX_IDLE_SECONDS
    server_max_connections: int = DEFAULT_MAX_CONNECTIONS
    server_max_pending_frame_bytes: int = DEFAULT_MAX_PENDING_FRAME_BYTES
    server_max_pending_bytes_total: int = 256 * 1024 * 1024
    server_warning_interval_seconds: float = 60.0

    def __post_init__(self) -> None:
        if self.server_channel_max_idle_time_seconds < 0:
            raise InvalidArgumentError(
                f"server_channel_max_idle_time_seconds must be >= 0 (0 = never), not {self.server_channel_max_idle_time_seconds}"
            )
        for name in (
            "server_max_connections",
            "server_max_pending_frame_bytes",
            "server_max_pending_bytes_total",
            "server_warning_interval_seconds",
        ):
            if getattr(self, name) <= 0:
                raise InvalidArgumentError(f"{name} must be positive, not {getattr(self, name)}")

    @classmethod
    def from_config(cls, config: object) -> ServerLimits:
        """Copy the fields of the same names from ``config`` (e.g. a ``BrokerConfig``).

        Raises:
            AttributeError: ``config`` lacks one of the fields.
            InvalidArgumentError: a value is out of range.
        """
        return cls(**{f.name: getattr(config, f.name) for f in fields(cls)})


class FrameHolder(Protocol):
    """A server connection as :class:`PendingBytes` sees it (a :class:`~.connection.Connection`).

    Attributes:
        pending_frame_bytes: bytes it holds for an incomplete frame (kept by :class:`PendingBytes`).
    """

    pending_frame_bytes: int

    @property
    def remote_address(self) -> str:
        """The peer as ``"ip:port"`` (for the warning line)."""
        ...

    def close_now(self, reason: str, *, abort: bool = False) -> None:
        """Close at once (``abort``: RST, buffered bytes dropped)."""
        ...


class PendingBytes:
    """Bytes held for incomplete frames: per connection (``conn.pending_frame_bytes``) and in total.

    Each connection calls :meth:`update` after decoding what one socket read brought (so the
    cost is O(1) per read, not per frame) and :meth:`release` when it closes. Past a cap the
    offending connection is closed at once (RST; its buffer is dropped) with a rate-limited
    warning; past the total cap the connections holding most are closed first. Not counted:
    bytes still in a connection's stream-reader buffer, at most twice its 4 MiB limit, and only
    while its reader waits for the peer to take responses (reading is paused past that).

    Args:
        limits: the caps.
        connections: the server's open connections (searched only when the total cap is hit).
        warnings: where the warning lines go.

    Attributes:
        total: bytes held by all connections now.
        closed_over_frame_cap: connections closed by the per-connection cap.
        closed_over_total_cap: connections closed by the total cap.
    """

    def __init__(self, limits: ServerLimits, connections: Collection[FrameHolder], warnings: RateLimitedLog) -> None:
        self._frame_cap = limits.server_max_pending_frame_bytes
        self._total_cap = limits.server_max_pending_bytes_total
        self._connections = connections
        self._warnings = warnings
        self.total = 0
        self.closed_over_frame_cap = 0
        self.closed_over_total_cap = 0

    def update(self, conn: FrameHolder, held: int) -> None:
        """Record that ``conn`` now holds ``held`` bytes; close connections past a cap."""
        self.total += held - conn.pending_frame_bytes
        conn.pending_frame_bytes = held
        if held > self._frame_cap:
            self.closed_over_frame_cap += 1
            self._warnings.warning(
                "pending-frame-cap",
                "connection closed: %d bytes held for an incomplete frame, over server_max_pending_frame_bytes=%d remote=%s",
                held, self._frame_cap, conn.remote_address,
            )  # fmt: skip
            conn.close_now("incomplete frame over server_max_pending_frame_bytes", abort=True)
        elif self.total > self._total_cap:
            self._shed()

    def release(self, conn: FrameHolder) -> None:
        """Forget what ``conn`` held (it is closing)."""
        self.total -= conn.pending_frame_bytes
        conn.pending_frame_bytes = 0

    def _shed(self) -> None:
        """Close the connections holding most until the total is under the cap (O(n) each, rare)."""
        while self.total > self._total_cap:
            victim = max(self._connections, key=_held, default=None)
            if victim is None or victim.pending_frame_bytes == 0:
                return  # accounting drift cannot be fixed by closing anyone
            total, held = self.total, victim.pending_frame_bytes
            self.closed_over_total_cap += 1
            self._warnings.warning(
                "pending-total-cap",
                "connection closed: %d bytes held for incomplete frames by all connections, over server_max_pending_bytes_total=%d; "
                "this one held most (%d bytes) remote=%s",
                total, self._total_cap, held, victim.remote_address,
            )  # fmt: skip
            victim.close_now("incomplete frames of all connections over server_max_pending_bytes_total", abort=True)
            if victim.pending_frame_bytes:  # not released (a closed connection still listed): stop
                return


def _held(conn: FrameHolder) -> int:
    return conn.pending_frame_bytes
