"""Consumer and producer registry (L3): client channels, subscriptions, expiry.

Mirrors ``ConsumerManager`` / ``ConsumerGroupInfo`` / ``ProducerManager`` and the expiry scan of
``ClientHousekeepingService``. Channels are opaque hashable objects (the broker passes its
``transport.Connection``); the registry never does I/O. Methods that change a group's client
set or subscriptions return whether they did, and the broker then pushes
NOTIFY_CONSUMER_IDS_CHANGED to every channel of the group (``DefaultConsumerIdsChangeListener``).

Change rules (``ConsumerGroupInfo.updateChannel`` / ``updateSubscription``):

* a channel not seen before in the group                       -> changed
* a subscribed topic added, or a registered topic no longer listed -> changed
* an existing topic with a larger ``subVersion``                -> replaced, not a change
* a channel removed (unregister, close, expiry)                -> changed for its groups
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol


class Subscription(Protocol):
    """What the registry needs of a ``SubscriptionData`` (``protocol.bodies.heartbeat``)."""

    topic: str
    sub_version: int


@dataclass(slots=True)
class ClientChannel:
    """One client connection of a group (``ClientChannelInfo``).

    Attributes:
        channel: the connection object.
        client_id: ``ip@instance`` id from the heartbeat.
        language: LanguageCode of the client's requests.
        version: MQVersion ordinal of the client's requests.
        last_update_ms: wall time of the last heartbeat (ms).
    """

    channel: Hashable
    client_id: str
    language: int
    version: int
    last_update_ms: int


@dataclass(slots=True)
class ConsumerGroup:
    """A consumer group's live state (``ConsumerGroupInfo``)."""

    group: str
    consume_type: str = "CONSUME_PASSIVELY"
    message_model: str = "CLUSTERING"
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"
    channels: dict[Hashable, ClientChannel] = field(default_factory=dict)
    subscriptions: dict[str, Any] = field(default_factory=dict)

    def client_ids(self) -> list[str]:
        """Client ids of the live channels, in registration order."""
        return [c.client_id for c in self.channels.values()]


class ClientRegistry:
    """Consumer groups and producer groups with their channels (owned by the loop thread)."""

    def __init__(self) -> None:
        self.consumers: dict[str, ConsumerGroup] = {}
        self.producers: dict[str, dict[Hashable, ClientChannel]] = {}

    # -- consumers -----------------------------------------------------------------------
    def register_consumer(
        self,
        group: str,
        client: ClientChannel,
        *,
        consume_type: str,
        message_model: str,
        consume_from_where: str,
        subscriptions: Iterable[Subscription],
    ) -> bool:
        """Register or refresh a consumer channel and its subscriptions.

        Returns:
            True when the group's channel set or subscribed topics changed.
        """
        info = self.consumers.get(group)
        if info is None:
            info = self.consumers[group] = ConsumerGroup(group)
        info.consume_type = consume_type
        info.message_model = message_model
        info.consume_from_where = consume_from_where
        changed = False
        old = info.channels.get(client.channel)
        if old is None:
            info.channels[client.channel] = client
            changed = True
        else:
            old.client_id = client.client_id
            old.language = client.language
            old.version = client.version
            old.last_update_ms = client.last_update_ms
        new_topics: set[str] = set()
        for sub in subscriptions:
            new_topics.add(sub.topic)
            cur = info.subscriptions.get(sub.topic)
            if cur is None:
                info.subscriptions[sub.topic] = sub
                changed = True
            elif sub.sub_version > cur.sub_version:
                info.subscriptions[sub.topic] = sub
        for topic in [t for t in info.subscriptions if t not in new_topics]:
            del info.subscriptions[topic]
            changed = True
        return changed

    def unregister_consumer(self, group: str, channel: Hashable) -> bool:
        """Remove a channel from a group; drop the group when it becomes empty.

        Returns:
            True when the channel was registered.
        """
        info = self.consumers.get(group)
        if info is None or info.channels.pop(channel, None) is None:
            return False
        if not info.channels:
            del self.consumers[group]
        return True

    def remove_channel(self, channel: Hashable) -> list[str]:
        """Remove a closed channel from every group; return the consumer groups it left."""
        left = [g for g, info in self.consumers.items() if channel in info.channels]
        for g in left:
            self.unregister_consumer(g, channel)
        for group, chans in list(self.producers.items()):
            chans.pop(channel, None)
            if not chans:
                del self.producers[group]
        return left

    def scan_expired(self, now_ms: int, timeout_ms: int) -> list[tuple[str, Hashable]]:
        """Remove channels whose last heartbeat is older than ``timeout_ms``.

        Returns:
            ``(consumer group, channel)`` pairs removed (producer channels are removed silently).
        """
        removed: list[tuple[str, Hashable]] = []
        for group, info in list(self.consumers.items()):
            for ch, cc in list(info.channels.items()):
                if now_ms - cc.last_update_ms > timeout_ms:
                    self.unregister_consumer(group, ch)
                    removed.append((group, ch))
        for pgroup, chans in list(self.producers.items()):
            for ch, cc in list(chans.items()):
                if now_ms - cc.last_update_ms > timeout_ms:
                    del chans[ch]
            if not chans:
                del self.producers[pgroup]
        return removed

    def expired_channels(self, now_ms: int, timeout_ms: int) -> set[Hashable]:
        """Channels (consumer or producer) whose last heartbeat is older than ``timeout_ms``."""
        out: set[Hashable] = set()
        for info in self.consumers.values():
            out.update(ch for ch, cc in info.channels.items() if now_ms - cc.last_update_ms > timeout_ms)
        for chans in self.producers.values():
            out.update(ch for ch, cc in chans.items() if now_ms - cc.last_update_ms > timeout_ms)
        return out

    def consumer_group(self, group: str) -> ConsumerGroup | None:
        """Return the live group state, or None."""
        return self.consumers.get(group)

    def subscription(self, group: str, topic: str) -> Any | None:
        """Return the registered SubscriptionData of (group, topic), or None."""
        info = self.consumers.get(group)
        return None if info is None else info.subscriptions.get(topic)

    def channels_of(self, group: str) -> list[Hashable]:
        """Return the channels of a consumer group."""
        info = self.consumers.get(group)
        return [] if info is None else list(info.channels)

    # -- producers -----------------------------------------------------------------------
    def register_producer(self, group: str, client: ClientChannel) -> None:
        """Register or refresh a producer channel (used for transaction check-back)."""
        self.producers.setdefault(group, {})[client.channel] = client

    def unregister_producer(self, group: str, channel: Hashable) -> None:
        """Remove a producer channel."""
        chans = self.producers.get(group)
        if chans is not None:
            chans.pop(channel, None)
            if not chans:
                del self.producers[group]
