"""The gRPC endpoint's topic message type check: what type a message is, whether its topic takes
it, and the cache of topics' types the check and QueryRoute read.

Mirrors Java 5.3.3's proxy: ``TopicMessageType.parseFromMessageProperty``
(:func:`message_type_of_properties`), ``DefaultTopicMessageTypeValidator`` (:func:`validate`),
``ProducerProcessor.isNeedCheckTopicMessageType`` and its retry / DLQ exception
(:func:`needs_check`), and ``ClusterMetadataService.topicConfigCache`` (:class:`TopicMessageTypeCache`:
``topicConfigCacheRefreshSeconds`` 20, ``topicConfigCacheExpiredSeconds`` 300,
``topicConfigCacheMaxNum`` 20000).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Final

from ..protocol import message as pm
from ..protocol.names import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX
from ..protocol.topic_attributes import TopicMessageType
from .convert import PROPERTY_SHARDING_KEY

__all__ = [
    "PROPERTY_TRANSFER_FLAG",
    "STATUS_MESSAGE_PREFIX",
    "TopicMessageTypeCache",
    "TopicMessageTypeMismatchError",
    "message_type_of_properties",
    "needs_check",
    "validate",
]

log = logging.getLogger(__name__)

#: How Java's proxy words the refusal in the gRPC status: ``new GrpcProxyException(proxyException)``
#: wraps it as its cause, so the message is the cause's ``toString()``.
STATUS_MESSAGE_PREFIX: Final = "org.apache.rocketmq.proxy.common.ProxyException: "

#: MessageConst.PROPERTY_TRANSFER_FLAG
PROPERTY_TRANSFER_FLAG: Final = "TRANSFER_FLAG"

_DELAY_PROPERTIES: Final = (
    pm.PROPERTY_DELAY_TIME_LEVEL,
    pm.PROPERTY_TIMER_DELIVER_MS,
    pm.PROPERTY_TIMER_DELAY_SEC,
    pm.PROPERTY_TIMER_DELAY_MS,
)

#: ProxyConfig topicConfigCache{Refresh,Expired}Seconds / topicConfigCacheMaxNum (5.3.3)
REFRESH_S: Final = 20.0
EXPIRE_S: Final = 300.0
MAX_ENTRIES: Final = 20000


class TopicMessageTypeMismatchError(ValueError):
    """A message whose type its topic does not take (``ProxyExceptionCode
    .MESSAGE_PROPERTY_CONFLICT_WITH_TYPE``); ``str(exc)`` is Java's message."""


def message_type_of_properties(properties: Mapping[str, str]) -> TopicMessageType:
    """``TopicMessageType.parseFromMessageProperty``: TRANSACTION (``TRAN_MSG=true``), else DELAY
    (``DELAY``, ``TIMER_DELIVER_MS``, ``TIMER_DELAY_SEC`` or ``TIMER_DELAY_MS``), else FIFO
    (``__SHARDINGKEY``), else NORMAL."""
    if properties.get(pm.PROPERTY_TRANSACTION_PREPARED) == "true":
        return TopicMessageType.TRANSACTION
    if any(properties.get(k) is not None for k in _DELAY_PROPERTIES):
        return TopicMessageType.DELAY
    if properties.get(PROPERTY_SHARDING_KEY) is not None:
        return TopicMessageType.FIFO
    return TopicMessageType.NORMAL


def validate(expected: TopicMessageType, actual: TopicMessageType) -> None:
    """``DefaultTopicMessageTypeValidator.validate``: an UNSPECIFIED message, or one of another
    type than its topic's when the topic is not MIXED, is refused.

    Raises:
        TopicMessageTypeMismatchError: with Java's message.
    """
    if actual is TopicMessageType.UNSPECIFIED or (actual is not expected and expected is not TopicMessageType.MIXED):
        raise TopicMessageTypeMismatchError(
            f"TopicMessageType validate failed, the expected type is {expected.value}, "
            f"but actual type is {actual.value}"
        )


def needs_check(topic: str, properties: Mapping[str, str]) -> bool:
    """``isNeedCheckTopicMessageType`` with ``sendMessage``'s exception: a message without
    ``TRANSFER_FLAG`` to a topic that is no retry or dead-letter topic."""
    if PROPERTY_TRANSFER_FLAG in properties:
        return False
    return not topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX))


@dataclass
class _Entry:
    value: TopicMessageType
    written: float
    accessed: float


class TopicMessageTypeCache:
    """Topic → :class:`TopicMessageType`, as Guava's cache of ``ClusterMetadataService``:
    an entry not read for ``expire_s`` seconds is gone; one written more than ``refresh_s``
    seconds ago is loaded again by the first reader while the others get the old value; at most
    ``max_entries`` (the least recently read go first). Concurrent misses share one load; a
    load that raises is not cached (the caller gets the exception).

    Difference from Java: its ``AbstractCacheLoader.reload`` refreshes on an executor and even
    the reader that triggers it gets the old value; here that first reader awaits the refresh
    (no background task to own and stop), and only the readers meanwhile get the old value.

    Args:
        load: ``async (topic) -> TopicMessageType``.
        clock: seconds, monotonic (injected in tests).
    """

    def __init__(
        self,
        load: Callable[[str], Awaitable[TopicMessageType]],
        *,
        refresh_s: float = REFRESH_S,
        expire_s: float = EXPIRE_S,
        max_entries: int = MAX_ENTRIES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._load = load
        self._refresh_s = refresh_s
        self._expire_s = expire_s
        self._max = max_entries
        self._clock = clock
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._loading: dict[str, asyncio.Future[TopicMessageType]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    async def get(self, topic: str) -> TopicMessageType:
        """The topic's type, loaded when missing, expired or due for a refresh.

        Raises:
            Exception: what ``load`` raised (nothing cached then).
        """
        now = self._clock()
        entry = self._entries.get(topic)
        if entry is not None and now - entry.accessed > self._expire_s:
            del self._entries[topic]
            entry = None
        if entry is None:
            return await self._load_once(topic)
        entry.accessed = now
        self._entries.move_to_end(topic)
        if now - entry.written <= self._refresh_s or topic in self._loading:
            return entry.value  # fresh, or another reader is refreshing it
        try:
            return await self._load_once(topic)
        except Exception as exc:  # AbstractCacheLoader.reload: the old value, written again
            log.warning("topic config of %s not refreshed (%s); its message type stays %s", topic, exc, entry.value)
            entry.written = self._clock()
            return entry.value

    async def _load_once(self, topic: str) -> TopicMessageType:
        pending = self._loading.get(topic)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[TopicMessageType] = asyncio.get_running_loop().create_future()
        self._loading[topic] = future
        try:
            value = await self._load(topic)
        except BaseException as exc:
            if isinstance(exc, Exception):
                future.set_exception(exc)
                future.exception()  # retrieved: the other waiters re-raise it
            else:
                future.cancel()
            raise
        else:
            future.set_result(value)
            now = self._clock()
            self._entries[topic] = _Entry(value, now, now)
            self._entries.move_to_end(topic)
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)
            return value
        finally:
            del self._loading[topic]
