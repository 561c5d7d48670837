"""The push consumer's send-back decision (L3): failed, timed-out and over-retried messages.

* **Concurrent failure** (``ConsumeMessageConcurrentlyService.sendMessageBack``): CLUSTERING →
  :meth:`SendBack.send_message_back` with the context's ``delay_level_when_next_consume``;
  BROADCASTING → dropped with a log line (no retry topic).
* **Send back** (``DefaultMQPushConsumerImpl.sendMessageBack``): CONSUMER_SEND_MSG_BACK to the
  message's broker (delay level 0 = the broker picks ``3 + reconsume_times``, < 0 = DLQ), else
  a plain re-send to ``%RETRY%<group>`` through an inner producer.
* **Orderly, max reconsume times reached** (``ConsumeMessageOrderlyService.sendMessageBack``):
  a plain send to ``%RETRY%<group>`` with ``RECONSUME_TIME = count + 1`` (> max), which every
  broker stores in ``%DLQ%<group>``; BROADCASTING drops it.
* **Consume timeout** (``ProcessQueue.cleanExpiredMsg``): :func:`send_back_expired`.

The retry-topic naming and delay arithmetic are :mod:`.retry`'s.

Imports sibling client modules (the producer lazily), protocol and errors.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Final

from ...errors import RocketMQError
from ...protocol.message import (
    PROPERTY_CONSUME_START_TIMESTAMP,
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_MAX_RECONSUME_TIMES,
    PROPERTY_ORIGIN_MESSAGE_ID,
    PROPERTY_RECONSUME_TIME,
    PROPERTY_RETRY_TOPIC,
    PROPERTY_TRANSACTION_PREPARED,
    Message,
    MessageExt,
)
from .. import rpc
from ..runtime import CLIENT_INNER_PRODUCER_GROUP
from .retry import default_delay_level, effective_max_reconsume_times, retry_topic

if TYPE_CHECKING:
    from ..producer.producer import Producer
    from ..runtime import ClientRuntime
    from .listener import ConsumeConcurrentlyContext
    from .pull import PullRequest

log = logging.getLogger(__name__)

#: Send-back RPC timeout (5 000 ms), seconds.
SEND_BACK_TIMEOUT: Final = 5.0
#: ConsumeMessageConcurrentlyService.cleanExpireMsg: at most 16 messages per queue per round.
CLEAN_EXPIRED_MAX: Final = 16
#: Delay level of a message sent back because its consumption timed out.
EXPIRED_DELAY_LEVEL: Final = 3


class SendBack:
    """Hands failed messages back to the broker for a push consumer.

    Args:
        runtime: client runtime (addresses, pool; shared by the inner producer).
        group: consumer group.
        clustering: False (BROADCASTING): failures are dropped, never sent back.
        max_reconsume_times: returns the consumer's ``max_reconsume_times`` (−1 = 16), read at
            each send-back.
    """

    def __init__(
        self, runtime: ClientRuntime, group: str, *, clustering: bool, max_reconsume_times: Callable[[], int]
    ) -> None:
        self._rt = runtime
        self._group = group
        self._clustering = clustering
        self._max_reconsume_times = max_reconsume_times
        self._producer: Producer | None = None

    async def concurrent(self, msg: MessageExt, ctx: ConsumeConcurrentlyContext) -> bool:
        """A concurrent listener failed ``msg``: send it back (True when handled or dropped)."""
        if not self._clustering:
            # ConsumeMessageConcurrentlyService: BROADCASTING failures are dropped, not sent back.
            log.warning("BROADCASTING, the message consume failed, drop it group=%s msg=%s", self._group, msg.msg_id)
            return True
        return await self.send_message_back(msg, ctx.delay_level_when_next_consume)

    async def orderly(self, msg: MessageExt, max_times: int) -> bool:
        """Orderly ``sendMessageBack``: a plain send to ``%RETRY%<group>``, delay ``3 + count``.

        ``RECONSUME_TIME`` is sent as the local count + 1 (> max): a 4.9 broker dead-letters on
        ``>=``, a 5.x broker on ``>`` or on the group's live queue lock, a broker without the
        lock check (the embedded one) on ``>`` — every one stores it in ``%DLQ%<group>``.

        Returns:
            False when the send failed (logged); True otherwise (BROADCASTING: dropped).
        """
        if not self._clustering:
            log.warning(
                "BROADCASTING orderly: max reconsume times reached, dropping group=%s msg=%s", self._group, msg.msg_id
            )
            return True
        try:
            await self._resend(msg, max_times, own_retry_topic=True)
            return True
        except RocketMQError as exc:
            log.warning("orderly send back failed group=%s msg=%s err=%s", self._group, msg.msg_id, exc)
            return False

    async def send_message_back(self, msg: MessageExt, delay_level: int = 0) -> bool:
        """CONSUMER_SEND_MSG_BACK, falling back to a re-send to ``%RETRY%<group>``.

        Mirrors ``DefaultMQPushConsumerImpl.sendMessageBack``.

        Args:
            msg: a message this consumer received.
            delay_level: 0 = broker decides (``3 + reconsume_times``); < 0 = DLQ.

        Returns:
            False only when both the send-back and the re-send failed (errors are logged).
        """
        rt = self._rt
        max_times = effective_max_reconsume_times(self._max_reconsume_times())
        try:
            addr = rt.find_broker_addr(msg.broker_name) or msg.store_host
            await rpc.consumer_send_msg_back(
                rt.pool,
                addr,
                commit_log_offset=msg.commit_log_offset,
                group=self._group,
                delay_level=delay_level,
                origin_msg_id=msg.msg_id,
                origin_topic=msg.topic,
                max_reconsume_times=max_times,
                broker_name=msg.broker_name or None,
                timeout=SEND_BACK_TIMEOUT,
            )
            return True
        except RocketMQError as exc:
            log.warning(
                "send back failed, re-sending to retry topic group=%s msg=%s err=%s", self._group, msg.msg_id, exc
            )
        try:
            await self._resend(msg, max_times, own_retry_topic=False)
            return True
        except RocketMQError as exc:
            log.warning("re-send to retry topic failed group=%s msg=%s err=%s", self._group, msg.msg_id, exc)
            return False

    async def _resend(self, msg: MessageExt, max_times: int, *, own_retry_topic: bool) -> None:
        """Send a copy of ``msg`` to ``%RETRY%<group>`` (delay ``3 + reconsume_times``).

        Args:
            own_retry_topic: ``RETRY_TOPIC`` = the message's topic (orderly); else it keeps a
                ``RETRY_TOPIC`` it already carries (a message read from the retry topic).

        Raises:
            RocketMQError: the send failed.
        """
        from ..producer.producer import Producer

        if self._producer is None:
            self._producer = Producer(CLIENT_INNER_PRODUCER_GROUP, runtime=self._rt)
        props = dict(msg.properties)
        props.setdefault(PROPERTY_ORIGIN_MESSAGE_ID, msg.msg_id)
        if own_retry_topic:
            props[PROPERTY_RETRY_TOPIC] = msg.topic
        else:
            props.setdefault(PROPERTY_RETRY_TOPIC, msg.topic)
        props[PROPERTY_RECONSUME_TIME] = str(msg.reconsume_times + 1)
        props[PROPERTY_MAX_RECONSUME_TIMES] = str(max_times)
        props.pop(PROPERTY_TRANSACTION_PREPARED, None)
        props[PROPERTY_DELAY_TIME_LEVEL] = str(default_delay_level(msg.reconsume_times))
        retry = Message(topic=retry_topic(self._group), body=msg.body, flag=msg.flag, properties=props)
        await self._producer.send(retry)

    async def close(self) -> None:
        """Close the inner producer if one was made."""
        if self._producer is not None:
            await self._producer.close()


async def send_back_expired(
    requests: Iterable[PullRequest],
    send_message_back: Callable[[MessageExt, int], Awaitable[bool]],
    *,
    consume_timeout: float,
    now_ms: Callable[[], int],
    group: str,
) -> None:
    """Send back messages consumed for longer than ``consume_timeout`` seconds (delay level 3).

    Mirrors ``ProcessQueue.cleanExpiredMsg``: per queue, up to :data:`CLEAN_EXPIRED_MAX` times,
    if the oldest cached message started consuming (``CONSUME_START_TIME``, epoch ms) more than
    ``consume_timeout`` ago, send it back and drop it from the cache (a late result of the
    listener for it is then ignored). A failed send-back ends that queue's turn.
    """
    limit_ms = int(consume_timeout * 1000)
    for req in list(requests):
        for _ in range(CLEAN_EXPIRED_MAX):
            m = req.pq.first_message()
            if m is None or req.pq.dropped:
                break
            started = m.properties.get(PROPERTY_CONSUME_START_TIMESTAMP)
            if not started or now_ms() - int(started) <= limit_ms:
                break
            log.warning("consume timeout, sending back group=%s mq=%s offset=%d", group, req.mq, m.queue_offset)
            if not await send_message_back(m, EXPIRED_DELAY_LEVEL):
                break
            req.pq.remove_messages([m])


__all__ = ["CLEAN_EXPIRED_MAX", "SEND_BACK_TIMEOUT", "SendBack", "send_back_expired"]
