"""Request-reply: SEND_REPLY_MESSAGE (324) / SEND_REPLY_MESSAGE_V2 (325).

Mirrors ``ReplyMessageProcessor`` (Apache RocketMQ 4.6+ / 5.3.3): a consumer answering a request
sends the reply (topic ``<cluster>_REPLY_TOPIC``, ``REPLY_TO_CLIENT`` = the requester's client
id); the broker pushes it at once to that client's connection with PUSH_REPLY_MESSAGE_TO_CLIENT
(326, a two-way call, 10 s) and, with ``store_reply_message_enable`` (default on), also stores
it. The answer's code is the push's: SUCCESS, or SYSTEM_ERROR with Java's remark when the
requester is not connected here or refused the push.
"""

from __future__ import annotations

import logging
from typing import Final

from ...errors import RocketMQError
from ...protocol import message as pm
from ...protocol.codes import RequestCode, ResponseCode
from ...protocol.command import RemotingCommand
from ...protocol.headers.send import ReplyMessageRequestHeader
from ...transport import Connection, Router
from .common import error
from .send import SendProcessor, decode_send_header

__all__ = ["ReplyProcessor"]

log = logging.getLogger(__name__)

#: ``Broker2Client.callClient`` timeout, seconds
PUSH_REPLY_TIMEOUT_S: Final = 10.0


class ReplyProcessor(SendProcessor):
    """Handler of SEND_REPLY_MESSAGE(_V2) (shares the send processor's checks)."""

    def register(self, router: Router) -> None:
        """Register the handlers on ``router``."""
        for code in (RequestCode.SEND_REPLY_MESSAGE, RequestCode.SEND_REPLY_MESSAGE_V2):
            router.register(code, self.handle_reply)

    async def handle_reply(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """Push the reply to its requester, store it, and answer (``processReplyMessageRequest``).

        Raises:
            HeaderError: the send header is malformed (answered SYSTEM_ERROR by the router).
        """
        b = self.broker
        ext_extra = {"MSG_REGION": b.config.region_id, "TRACE_ON": "true" if b.config.trace_on else "false"}
        h = decode_send_header(cmd)
        topic: str = h.topic or ""
        tc = self._msg_check(cmd, h, topic)
        if isinstance(tc, RemotingCommand):
            tc.ext_fields.update(ext_extra)
            return tc
        queue_id: int = h.queue_id if h.queue_id is not None and h.queue_id >= 0 else 0
        if h.queue_id is not None and h.queue_id < 0:
            queue_id = self._rand.randrange(99_999_999) % max(1, tc.write_queue_nums)
        props = pm.string_to_properties(h.properties or "")
        props.update(ext_extra)  # 5.x buildMsgContext: the stored and the pushed reply carry both
        inner = self._inner(
            topic,
            queue_id,
            bytes(cmd.body),
            h.flag or 0,
            pm.properties_to_string(props),
            h.sys_flag or 0,
            h.born_timestamp or 0,
            conn.remote_address,
            h.reconsume_times or 0,
        )
        remark = await self._push(h, props, inner.body, conn)
        if remark is not None:
            resp = error(cmd, ResponseCode.SYSTEM_ERROR, remark)
        else:
            resp = cmd.response(
                ResponseCode.SUCCESS, None, {"msgId": "0", "queueId": str(queue_id), "queueOffset": "0"}
            )
        if b.config.store_reply_message_enable:
            result = b.put_message(inner)
            if result.is_ok:
                resp.ext_fields.update(
                    {"msgId": result.msg_ids[0], "queueId": str(queue_id), "queueOffset": str(result.queue_offset)}
                )
            else:
                log.warning("reply message to topic=%s not stored: %s", topic, result.status)
        resp.ext_fields.update(ext_extra)
        return resp

    def _requester(self, client_id: str) -> Connection | None:
        """``ProducerManager.findChannel``: the connection of the producer with ``client_id``."""
        for chans in self.broker.clients.producers.values():
            for client in chans.values():
                if client.client_id == client_id:
                    conn: Connection = client.channel  # type: ignore[assignment]
                    return None if conn.is_closed else conn
        return None

    async def _push(self, h: object, props: dict[str, str], body: bytes, conn: Connection) -> str | None:
        """``pushReplyMessage``: PUSH_REPLY_MESSAGE_TO_CLIENT; None when the requester took it, else the remark."""
        sender = props.get(pm.PROPERTY_MESSAGE_REPLY_TO_CLIENT)
        if sender is None:
            log.warning("%s is null, can not reply message", pm.PROPERTY_MESSAGE_REPLY_TO_CLIENT)
            return f"reply message properties[{pm.PROPERTY_MESSAGE_REPLY_TO_CLIENT}] is null"
        target = self._requester(sender)
        if target is None:
            remark = f"push reply message fail, channel of <{sender}> not found."
            log.warning("%s", remark)
            return remark
        now = self.broker.clock.now_ms()
        pushed = dict(props)
        pushed[pm.PROPERTY_PUSH_REPLY_TIME] = str(now)
        header = ReplyMessageRequestHeader(
            producer_group=getattr(h, "producer_group", None),
            topic=getattr(h, "topic", None),
            default_topic=getattr(h, "default_topic", None),
            default_topic_queue_nums=getattr(h, "default_topic_queue_nums", None),
            queue_id=getattr(h, "queue_id", None),
            sys_flag=getattr(h, "sys_flag", None),
            born_timestamp=getattr(h, "born_timestamp", None),
            flag=getattr(h, "flag", None),
            properties=pm.properties_to_string(pushed),
            reconsume_times=getattr(h, "reconsume_times", None),
            unit_mode=bool(getattr(h, "unit_mode", False)),
            born_host=conn.remote_address,
            store_host=self.broker.address,
            store_timestamp=now,
        )
        request = RemotingCommand.request(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, header.to_ext_fields(), body)
        try:
            answer = await target.request(request, PUSH_REPLY_TIMEOUT_S)
        except (RocketMQError, OSError, TimeoutError) as exc:
            log.warning("push reply message to <%s> fail: %s", sender, exc)
            return f"push reply message to {sender}fail."
        if answer.code != ResponseCode.SUCCESS:
            log.warning("push reply message to <%s> return fail, response remark: %s", sender, answer.remark)
            return f"push reply message to {sender}fail."
        return None
