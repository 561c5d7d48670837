"""Broker → client requests of consumers (L3): offset reset, running info, direct consume.

Mirrors the consumer half of ``ClientRemotingProcessor``:

=================================  ====  =====================================================
request                            code  what the client does
=================================  ====  =====================================================
RESET_CONSUMER_CLIENT_OFFSET       220   ``ResetOffsetBody`` → the group's consumer drops the
                                         affected process queues, stores + persists the new
                                         offsets, and its next rebalance pulls from there
                                         (``MQClientInstance.resetOffset``); no response
                                         needed (the broker sends it oneway)
GET_CONSUMER_RUNNING_INFO          307   ``ConsumerRunningInfo`` body (properties,
                                         subscriptions, mqTable, statusTable, optional
                                         jstack); SYSTEM_ERROR when the group is not here
CONSUME_MESSAGE_DIRECTLY           309   body = one stored message; the listener consumes it
                                         once (no offset change, no send-back) and the answer
                                         is a ``ConsumeMessageDirectlyResult``
=================================  ====  =====================================================

:func:`install_consumer_handlers` registers the three handlers on a runtime's router (once);
the consumer is looked up by group with :meth:`ClientRuntime.find_consumer` and must offer
``reset_offset`` / ``running_info`` / ``consume_message_directly``.
"""

from __future__ import annotations

import asyncio
import enum
import inspect
import logging
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import RocketMQError
from ..protocol.bodies import javajson as jj
from ..protocol.bodies.admin import ResetOffsetBody
from ..protocol.codes import RequestCode, ResponseCode
from ..protocol.command import RemotingCommand
from ..protocol.headers.consumer import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    ResetOffsetRequestHeader,
)
from ..protocol.message import MessageExt, MessageQueue, decode_records

if TYPE_CHECKING:
    from ..transport.connection import Connection
    from .runtime import ClientRuntime

log = logging.getLogger(__name__)


class CMResult(enum.Enum):
    """Outcome of a direct consume (Java ``CMResult``)."""

    CR_SUCCESS = "CR_SUCCESS"
    CR_LATER = "CR_LATER"
    CR_ROLLBACK = "CR_ROLLBACK"
    CR_COMMIT = "CR_COMMIT"
    CR_THROW_EXCEPTION = "CR_THROW_EXCEPTION"
    CR_RETURN_NULL = "CR_RETURN_NULL"


@dataclass(slots=True)
class ConsumeMessageDirectlyResult:
    """CONSUME_MESSAGE_DIRECTLY response body (Java ``ConsumeMessageDirectlyResult``)."""

    order: bool = False
    auto_commit: bool = True
    consume_result: CMResult | None = None
    remark: str | None = None
    spent_time_mills: int = 0

    def encode(self) -> bytes:
        """Encode as fastjson would (fields sorted)."""
        d: dict[str, Any] = {"autoCommit": self.auto_commit}
        if self.consume_result is not None:
            d["consumeResult"] = self.consume_result.value
        d["order"] = self.order
        if self.remark is not None:
            d["remark"] = self.remark
        d["spentTimeMills"] = self.spent_time_mills
        return jj.dumps(d)

    @classmethod
    def decode(cls, data: bytes | str) -> ConsumeMessageDirectlyResult:
        """Decode.

        Raises:
            ProtocolError: not JSON.
        """
        d = jj.as_dict(jj.loads(data))
        cr = jj.as_str(d.get("consumeResult"))
        return cls(
            order=jj.as_bool(d.get("order")),
            auto_commit=jj.as_bool(d.get("autoCommit"), True),
            consume_result=CMResult(cr) if cr in CMResult.__members__ else None,
            remark=jj.as_str(d.get("remark")),
            spent_time_mills=jj.as_int(d.get("spentTimeMills")),
        )


async def consume_directly(
    listener: Any, orderly: bool, msg: MessageExt, mq: MessageQueue
) -> ConsumeMessageDirectlyResult:
    """Call ``listener`` once with ``[msg]`` and map its outcome to a ``CMResult``.

    Mirrors ``ConsumeMessage{Concurrently,Orderly}Service.consumeMessageDirectly``: a
    concurrent CONSUME_SUCCESS / RECONSUME_LATER → CR_SUCCESS / CR_LATER; orderly SUCCESS /
    COMMIT / ROLLBACK / SUSPEND → CR_SUCCESS / CR_COMMIT / CR_ROLLBACK / CR_LATER; None →
    CR_RETURN_NULL; an exception → CR_THROW_EXCEPTION with its text as remark.
    """
    from .consumer.listener import ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus
    from .consumer.orderly import ConsumeOrderlyContext, ConsumeOrderlyStatus

    ctx: Any = ConsumeOrderlyContext(message_queue=mq) if orderly else ConsumeConcurrentlyContext(message_queue=mq)
    result = ConsumeMessageDirectlyResult(order=orderly, auto_commit=True)
    begin = time.monotonic()
    try:
        is_async = getattr(listener, "is_async", None)
        if is_async is None:
            is_async = inspect.iscoroutinefunction(listener) or inspect.iscoroutinefunction(type(listener).__call__)
        value = listener([msg], ctx) if is_async else await asyncio.to_thread(listener, [msg], ctx)
        if inspect.isawaitable(value):
            value = await value
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        result.consume_result = CMResult.CR_THROW_EXCEPTION
        result.remark = f"{type(exc).__name__}: {exc}"
        value = None
    else:
        mapping: dict[Any, CMResult] = {
            ConsumeConcurrentlyStatus.CONSUME_SUCCESS: CMResult.CR_SUCCESS,
            ConsumeConcurrentlyStatus.RECONSUME_LATER: CMResult.CR_LATER,
            ConsumeOrderlyStatus.SUCCESS: CMResult.CR_SUCCESS,
            ConsumeOrderlyStatus.COMMIT: CMResult.CR_COMMIT,
            ConsumeOrderlyStatus.ROLLBACK: CMResult.CR_ROLLBACK,
            ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT: CMResult.CR_LATER,
        }
        result.consume_result = mapping.get(value, CMResult.CR_RETURN_NULL)
    if orderly:
        result.auto_commit = bool(getattr(ctx, "auto_commit", True))
    result.spent_time_mills = int((time.monotonic() - begin) * 1000)
    return result


def thread_dump() -> str:
    """Return a ``jstack``-like dump of every Python thread's stack."""
    names = {t.ident: t.name for t in threading.enumerate()}
    out: list[str] = []
    for ident, frame in sys._current_frames().items():
        out.append(f'"{names.get(ident, ident)}"\n')
        out.extend(traceback.format_stack(frame))
        out.append("\n")
    return "".join(out)


def _not_here(cmd: RemotingCommand, group: str | None) -> RemotingCommand:
    return cmd.response(ResponseCode.SYSTEM_ERROR, f"The Consumer Group <{group}> not exist in this consumer")


def install_consumer_handlers(runtime: ClientRuntime) -> None:
    """Register the 220 / 307 / 309 handlers on ``runtime.router`` (idempotent)."""
    router = runtime.router
    if RequestCode.RESET_CONSUMER_CLIENT_OFFSET in router:
        return

    async def on_reset(cmd: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        h = ResetOffsetRequestHeader.from_ext_fields(cmd.ext_fields)
        body = ResetOffsetBody.decode(bytes(cmd.body)) if cmd.body else ResetOffsetBody()
        consumer = runtime.find_consumer(h.group or "")
        fn = getattr(consumer, "reset_offset", None)
        if fn is None:
            log.info("RESET_CONSUMER_CLIENT_OFFSET for unknown group=%s from=%s", h.group, conn.remote_address)
            return None
        log.info(
            "reset offsets group=%s topic=%s queues=%d from=%s",
            h.group,
            h.topic,
            len(body.offset_table),
            conn.remote_address,
        )
        await fn(h.topic or "", body.offset_table)
        return cmd.response(ResponseCode.SUCCESS)

    async def on_running_info(cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        h = GetConsumerRunningInfoRequestHeader.from_ext_fields(cmd.ext_fields)
        consumer = runtime.find_consumer(h.consumer_group or "")
        fn = getattr(consumer, "running_info", None)
        if fn is None:
            return _not_here(cmd, h.consumer_group)
        info = fn()
        info.properties.setdefault("PROP_NAMESERVER_ADDR", runtime.config.namesrv_addr)
        info.properties.setdefault("PROP_CLIENT_VERSION", "rocketpipe")
        if h.jstack_enable:
            info.jstack = thread_dump()
        return cmd.response(ResponseCode.SUCCESS, None, None, info.encode())

    async def on_consume_directly(cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        h = ConsumeMessageDirectlyResultRequestHeader.from_ext_fields(cmd.ext_fields)
        consumer = runtime.find_consumer(h.consumer_group or "")
        fn = getattr(consumer, "consume_message_directly", None)
        if fn is None:
            return _not_here(cmd, h.consumer_group)
        try:
            msgs = decode_records(bytes(cmd.body or b""))
        except RocketMQError as exc:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"bad message body: {exc}")
        if not msgs:
            return cmd.response(ResponseCode.SYSTEM_ERROR, "no message in the body")
        result = await fn(msgs[0], h.broker_name)
        return cmd.response(ResponseCode.SUCCESS, None, None, result.encode())

    router.register(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, on_reset)
    router.register(RequestCode.GET_CONSUMER_RUNNING_INFO, on_running_info)
    router.register(RequestCode.CONSUME_MESSAGE_DIRECTLY, on_consume_directly)


__all__ = ["CMResult", "ConsumeMessageDirectlyResult", "consume_directly", "install_consumer_handlers", "thread_dump"]
