"""The gRPC endpoint's client channels: each SDK's Telemetry stream as a queue the endpoint can
write server commands into, and the producer groups those clients publish for.

Java's proxy keeps one ``GrpcClientChannel`` per client id (``GrpcChannelManager``) whose
``writeTelemetryCommand`` puts a command on the client's Telemetry stream, and registers it as a
producer of every topic the client publishes to (``ClientActivity.registerProducer``: the topic
name is the producer group), so that ``ProducerManager.getAvailableChannel(group)`` can pick a
live channel of the group for a broker's transaction check. :class:`ChannelManager` is both
tables; :class:`TelemetryChannel` is one stream.

Mirrors Java 5.3.3's proxy ``GrpcChannelManager``, ``GrpcClientChannel`` (``setClientObserver``,
``writeTelemetryCommand``, ``isActive``) and the broker's ``ProducerManager``
(``registerProducer``, ``unregisterProducer``, ``getAvailableChannel``, ``groupOnline``).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import AsyncIterator

from rocketmq.grpc_protocol import service_pb2 as spb

log = logging.getLogger(__name__)


class TelemetryChannel:
    """One client's open Telemetry stream, as the endpoint writes to it.

    Commands written with :meth:`write` are handed out, in order, by :meth:`commands`, which the
    Telemetry handler yields to the client; :meth:`close` ends the iteration.

    Args:
        client_id: the ``x-mq-client-id`` of the stream's client.
    """

    def __init__(self, client_id: str) -> None:
        self.client_id = client_id
        self._queue: asyncio.Queue[spb.TelemetryCommand | None] = asyncio.Queue()
        self._closed = False

    @property
    def is_active(self) -> bool:
        """True until :meth:`close` (Java ``GrpcClientChannel.isActive``: an observer is set)."""
        return not self._closed

    def write(self, command: spb.TelemetryCommand) -> bool:
        """Queue ``command`` for the client; False (and nothing queued) once the channel is closed."""
        if self._closed:
            return False
        self._queue.put_nowait(command)
        return True

    def close(self) -> None:
        """End :meth:`commands` after the commands already written (idempotent)."""
        if not self._closed:
            self._closed = True
            self._queue.put_nowait(None)

    async def commands(self) -> AsyncIterator[spb.TelemetryCommand]:
        """The written commands, in order, until :meth:`close`."""
        while True:
            command = await self._queue.get()
            if command is None:
                return
            yield command


class ChannelManager:
    """Client id → its Telemetry channel, and producer group → the client ids publishing for it.

    A producer group of a gRPC client is the name of a topic it publishes to (Java's proxy:
    "use topic name as producer group").
    """

    def __init__(self) -> None:
        self._channels: dict[str, TelemetryChannel] = {}
        #: group → client ids, in registration order (dict as an ordered set)
        self._groups: dict[str, dict[str, None]] = {}
        self._rr = itertools.count(1)

    def open(self, client_id: str) -> TelemetryChannel:
        """A new channel for ``client_id``'s Telemetry stream; it replaces (and closes) an older
        one of the same client (Java ``setClientObserver`` replaces the observer)."""
        channel = TelemetryChannel(client_id)
        old = self._channels.get(client_id)
        self._channels[client_id] = channel
        if old is not None:
            old.close()
        return channel

    def close(self, channel: TelemetryChannel) -> bool:
        """Close ``channel`` and forget it; False when a newer stream of its client had already
        replaced it (the client is still connected)."""
        channel.close()
        if self._channels.get(channel.client_id) is not channel:
            return False
        del self._channels[channel.client_id]
        return True

    def channel(self, client_id: str) -> TelemetryChannel | None:
        """The client's open channel, or None."""
        return self._channels.get(client_id)

    def register_producer(self, group: str, client_id: str) -> bool:
        """Record ``client_id`` as a producer of ``group``; True when it was not one yet."""
        members = self._groups.setdefault(group, {})
        if client_id in members:
            return False
        members[client_id] = None
        return True

    def unregister_client(self, client_id: str) -> list[str]:
        """Remove ``client_id`` from every producer group; returns the groups left without a
        producer (Java: no longer ``groupOnline``)."""
        emptied = []
        for group, members in list(self._groups.items()):
            if client_id not in members:
                continue
            del members[client_id]
            if not members:
                del self._groups[group]
                emptied.append(group)
        return emptied

    def group_online(self, group: str) -> bool:
        """True while some client is registered as a producer of ``group``."""
        return bool(self._groups.get(group))

    def available_channel(self, group: str) -> TelemetryChannel | None:
        """A live channel of a producer of ``group``, taken round robin over the group's
        clients (``ProducerManager.getAvailableChannel``), or None when no producer of the
        group has an open Telemetry stream."""
        members = list(self._groups.get(group, ()))
        if not members:
            return None
        start = next(self._rr) % len(members)
        for i in range(len(members)):
            channel = self._channels.get(members[(start + i) % len(members)])
            if channel is not None and channel.is_active:
                return channel
        return None


__all__ = ["ChannelManager", "TelemetryChannel"]
