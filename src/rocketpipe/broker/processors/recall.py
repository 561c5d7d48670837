"""RECALL_MESSAGE (370, 5.3.2+): take back a timer message before its delivery time.

Mirrors ``RecallMessageProcessor`` (Apache RocketMQ 5.3.3): the recall handle of the send result
names the message (topic, broker, delivery step + 1, ``UNIQ_KEY``); the broker stores a *delete*
timer message for the same time (body ``"0"``, tag ``_RECALL_TAG_``, ``TIMER_DEL_UNIQKEY`` =
``"<topic>+<msgId>"``), and its timer drops the original when that time comes
(:meth:`~rocketpipe.broker.timer.TimerDelivery.tick`). Off unless ``recall_message_enable``.

Java's checks of a slave role and of ``startAcceptSendRequestTimeStamp`` have no counterpart:
rocketpipe's broker is always a master and accepts sends from its start.
"""

from __future__ import annotations

from typing import Final

from ...errors import InvalidArgumentError
from ...protocol import message as pm
from ...protocol import sysflag as sf
from ...protocol.codes import RequestCode, ResponseCode
from ...protocol.command import RemotingCommand
from ...protocol.headers.send import RecallMessageRequestHeader
from ...protocol.recall import decode_recall_handle, timer_delete_key
from ...store import MessageInner
from ...transport import Connection, Router
from ..context import BrokerContext
from ..timer import TimerMessageIllegalError, TimerNotEnabledError
from .common import decode_header, error
from .send import status_name

__all__ = ["RECALL_MESSAGE_TAG", "RecallProcessor"]

#: ``RecallMessageProcessor.RECALL_MESSAGE_TAG``: the tag of the delete message.
RECALL_MESSAGE_TAG: Final = "_RECALL_TAG_"
#: Put results that still answer SUCCESS (``handlePutMessageResult``).
_STORED: Final = frozenset({"PUT_OK", "FLUSH_DISK_TIMEOUT", "FLUSH_SLAVE_TIMEOUT", "SLAVE_NOT_AVAILABLE"})


class RecallProcessor:
    """Handler of RECALL_MESSAGE."""

    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker

    def register(self, router: Router) -> None:
        """Register the handler on ``router``."""
        router.register(RequestCode.RECALL_MESSAGE, self.recall)

    async def recall(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """Check the request and the handle, then store the delete timer message.

        Returns:
            SUCCESS with ``msgId`` (the recalled ``UNIQ_KEY``); NO_PERMISSION "recall failed,
            operation is forbidden" (``recall_message_enable`` off); SERVICE_NOT_AVAILABLE (no
            write permission and ``allow_recall_when_broker_not_writeable`` off);
            TOPIC_NOT_EXIST; ILLEGAL_OPERATION (a bad handle, another topic or broker, a time
            already passed or beyond ``timer_max_delay_sec``); SYSTEM_ERROR "recall failed,
            execute error" (the put failed). Every response carries ``MSG_REGION``.

        Raises:
            ProtocolError: ``topic`` or ``recallHandle`` is missing (answered by the router).
        """
        resp = self._recall(cmd, conn)
        resp.ext_fields["MSG_REGION"] = self.broker.config.region_id
        return resp

    def _recall(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        b = self.broker
        cfg = b.config
        h = decode_header(RecallMessageRequestHeader, cmd)
        if not cfg.recall_message_enable:
            return error(cmd, ResponseCode.NO_PERMISSION, "recall failed, operation is forbidden")
        if not sf.is_writeable(cfg.broker_permission) and not cfg.allow_recall_when_broker_not_writeable:
            return error(cmd, ResponseCode.SERVICE_NOT_AVAILABLE, "recall failed, broker service not available")
        topic: str = h.topic  # type: ignore[assignment]
        if b.topics.get(topic) is None:
            return error(cmd, ResponseCode.TOPIC_NOT_EXIST, f"recall failed, the topic[{topic}] not exist")
        try:
            handle = decode_recall_handle(h.recall_handle)
        except InvalidArgumentError as exc:
            return error(cmd, ResponseCode.ILLEGAL_OPERATION, str(exc))
        if handle.topic != topic:
            return error(cmd, ResponseCode.ILLEGAL_OPERATION, "recall failed, topic not match")
        if handle.broker_name != cfg.broker_name:
            return error(cmd, ResponseCode.ILLEGAL_OPERATION, "recall failed, broker service not available")
        now = b.clock.now_ms()
        try:
            timestamp = int(handle.timestamp_str)
        except ValueError:
            timestamp = -1
        left = timestamp - now
        if left <= 0 or left >= cfg.timer_max_delay_sec * 1000:
            return error(cmd, ResponseCode.ILLEGAL_OPERATION, "recall failed, timestamp invalid")
        props = {
            pm.PROPERTY_TAGS: RECALL_MESSAGE_TAG,
            pm.PROPERTY_TIMER_DEL_UNIQKEY: timer_delete_key(handle.topic, handle.message_id),
            pm.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: handle.message_id,
            pm.PROPERTY_TIMER_DELIVER_MS: handle.timestamp_str,
            pm.PROPERTY_BORN_TIMESTAMP: str(now),
            pm.PROPERTY_TRACE_CONTEXT: "",
        }
        if h.producer_group is not None:  # Java's null value is left out of the properties string
            props[pm.PROPERTY_PRODUCER_GROUP] = h.producer_group
        inner = MessageInner(
            topic=handle.topic,
            queue_id=0,
            body=b"0",
            flag=0,
            properties=props,
            sys_flag=0,
            born_timestamp=now,
            born_host=conn.remote_address,
            store_host=b.address,
            reconsume_times=0,
        )
        try:
            result = b.put_message(b.apply_delay(inner))
        except (TimerMessageIllegalError, TimerNotEnabledError):
            return error(cmd, ResponseCode.SYSTEM_ERROR, "recall failed, execute error")
        if status_name(result.status) not in _STORED:
            return error(cmd, ResponseCode.SYSTEM_ERROR, "recall failed, execute error")
        return cmd.response(ResponseCode.SUCCESS, None, {"msgId": handle.message_id})
