"""Trace hooks (L3): what producers and consumers record into a :class:`~.dispatcher.TraceDispatcher`.

Mirrors the hooks of Java 5.3.3 ``org.apache.rocketmq.client.trace.hook``:

* :class:`SendTracer` — ``SendMessageTraceHookImpl`` (a Pub record per send attempt that got an
  answer: sends that raise, one-way sends and a broker answering without ``MSG_REGION`` or with
  ``TRACE_ON=false`` record nothing) and ``EndTransactionTraceHookImpl`` (an EndTransaction
  record per END_TRANSACTION, also for check-back answers);
* :class:`ConsumeTraceHook` — ``ConsumeMessageTraceHookImpl``, a
  :class:`~rocketpipe.client.consumer.push_controls.ConsumeMessageHook`: SubBefore before the
  listener, SubAfter after it; and for the lite pull consumer (``DefaultLitePullConsumerImpl.poll``)
  both at once for every polled batch, successful, cost 0.

Difference from Java: a consumed message without ``MSG_REGION`` (from a broker that does not
store it: Apache 4.9; 5.x brokers, rocketpipe's included, do) is traced with region
``DefaultRegion``; Java 5.3.3 leaves the region null, and its dispatcher then drops the records.

Hooks never raise into the user's path: the push consumer's hook runner logs hook errors, and
the producer calls :class:`SendTracer` after the send's outcome is known. Timestamps come from
the injected wall clock. Imports :mod:`.model`, :mod:`.dispatcher`, protocol and sibling client
modules.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from ...clock import Clock
from ...protocol.message import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_KEYS,
    PROPERTY_MSG_REGION,
    PROPERTY_TAGS,
    PROPERTY_TRACE_SWITCH,
    PROPERTY_TRANSACTION_PREPARED,
    MessageExt,
    MessageQueue,
    UniqueIdGenerator,
)
from ..consumer.push_controls import CONSUME_CONTEXT_TYPE, ConsumeMessageContext
from ..rpc import SendResult, SendStatus
from .dispatcher import TraceDispatcher
from .model import CONSUME_RETURN_TYPES, DEFAULT_TRACE_REGION_ID, MessageType, TraceBean, TraceContext, TraceType

__all__ = ["ConsumeTraceHook", "SendTracer", "pub_message_type"]

#: The 4.x scheduled-delivery property the Java hook also treats as a delayed message.
_START_DELIVER_TIME: Final = "__STARTDELIVERTIME"


def pub_message_type(props: Mapping[str, str]) -> MessageType:
    """The ``msgType`` of a Pub record (``sendKernelImpl``): ``Delay_Msg`` with a delay level or
    ``__STARTDELIVERTIME``, else ``Trans_Msg_Half`` with ``TRAN_MSG=true``, else ``Normal_Msg``."""
    if _START_DELIVER_TIME in props or PROPERTY_DELAY_TIME_LEVEL in props:
        return MessageType.Delay_Msg
    if props.get(PROPERTY_TRANSACTION_PREPARED) == "true":
        return MessageType.Trans_Msg_Half
    return MessageType.Normal_Msg


class SendTracer:
    """Pub and EndTransaction records of one producer.

    Args:
        dispatcher: where the records go (its ``trace_topic_name`` is never traced).
        group: the producer group.
        clock: wall clock (ms).
    """

    def __init__(self, dispatcher: TraceDispatcher, group: str, clock: Clock) -> None:
        self.dispatcher = dispatcher
        self._group = group
        self._clock = clock

    def now_ms(self) -> int:
        """Wall ms: take it before a send, pass it to :meth:`on_sent`."""
        return self._clock.now_ms()

    def on_sent(
        self,
        topic: str,
        props: Mapping[str, str],
        broker_addr: str,
        body_length: int,
        begin_ms: int,
        result: SendResult,
    ) -> None:
        """Record a Pub for an answered send (``sendMessageBefore`` + ``sendMessageAfter``).

        Args:
            topic: the message's topic.
            props: its properties (tags, keys, message type); ``{}`` for a batch.
            broker_addr: ``ip:port`` the request went to.
            body_length: bytes sent (compressed body, or the encoded batch).
            begin_ms: :meth:`now_ms` before the send.
            result: the broker's answer.
        """
        if topic.startswith(self.dispatcher.trace_topic_name) or result.region_id is None or not result.trace_on:
            return
        now = self._clock.now_ms()
        bean = TraceBean(
            topic=topic,
            msg_id=result.msg_id,
            offset_msg_id=result.offset_msg_id,
            tags=props.get(PROPERTY_TAGS),
            keys=props.get(PROPERTY_KEYS),
            store_host=broker_addr,
            store_time=begin_ms + (now - begin_ms) // 2,
            body_length=body_length,
            msg_type=pub_message_type(props),
        )
        self.dispatcher.append(
            TraceContext(
                TraceType.Pub,
                time_stamp=begin_ms,
                region_id=result.region_id,
                group_name=self._group,
                cost_time=now - begin_ms,
                is_success=result.send_status is SendStatus.SEND_OK,
                trace_beans=[bean],
            )
        )

    def on_end_transaction(
        self,
        topic: str,
        props: Mapping[str, str],
        msg_id: str,
        broker_addr: str | None,
        transaction_id: str | None,
        state: str,
        *,
        from_transaction_check: bool,
    ) -> None:
        """Record an EndTransaction (``EndTransactionTraceHookImpl.endTransaction``).

        Args:
            topic / props: the message's topic and properties (region: ``MSG_REGION``, else
                ``DefaultRegion``).
            msg_id: the half message's msg id.
            broker_addr: the broker the END_TRANSACTION goes to.
            transaction_id: the message's transaction id (its ``UNIQ_KEY``).
            state: ``COMMIT_MESSAGE``, ``ROLLBACK_MESSAGE`` or ``UNKNOW``.
            from_transaction_check: the answer to a broker's check-back.
        """
        if topic.startswith(self.dispatcher.trace_topic_name):
            return
        bean = TraceBean(
            topic=topic,
            msg_id=msg_id,
            tags=props.get(PROPERTY_TAGS),
            keys=props.get(PROPERTY_KEYS),
            store_host=broker_addr,
            msg_type=MessageType.Trans_msg_Commit,
            transaction_state=state,
            transaction_id=transaction_id,
            from_transaction_check=from_transaction_check,
        )
        self.dispatcher.append(
            TraceContext(
                TraceType.EndTransaction,
                time_stamp=self._clock.now_ms(),
                region_id=props.get(PROPERTY_MSG_REGION) or DEFAULT_TRACE_REGION_ID,
                group_name=self._group,
                trace_beans=[bean],
            )
        )


class ConsumeTraceHook:
    """SubBefore / SubAfter records of one consumer (``ConsumeMessageTraceHookImpl``).

    Args:
        dispatcher: where the records go.
        clock: wall clock (ms).
        ids: request-id generator (``MessageClientIDSetter.createUniqID``).
    """

    def __init__(self, dispatcher: TraceDispatcher, clock: Clock, ids: UniqueIdGenerator | None = None) -> None:
        self.dispatcher = dispatcher
        self._clock = clock
        self._ids = ids or UniqueIdGenerator()

    def hook_name(self) -> str:
        """``ConsumeMessageTraceHook``."""
        return "ConsumeMessageTraceHook"

    def consume_message_before(self, context: ConsumeMessageContext) -> None:
        """Record a SubBefore for the batch (messages with ``TRACE_ON=false`` left out)."""
        if not context.msg_list:
            return
        beans: list[TraceBean] = []
        region = DEFAULT_TRACE_REGION_ID
        for msg in context.msg_list:
            if msg.properties.get(PROPERTY_TRACE_SWITCH) == "false":
                continue
            beans.append(_consumed_bean(msg))
            region = msg.properties.get(PROPERTY_MSG_REGION) or DEFAULT_TRACE_REGION_ID
        ctx = TraceContext(
            TraceType.SubBefore,
            region_id=region,
            group_name=context.consumer_group,
            request_id=self._ids.next_id(),
            trace_beans=beans,
        )
        context.mq_trace_context = ctx
        if beans:
            ctx.time_stamp = self._clock.now_ms()
            self.dispatcher.append(ctx)

    def consume_message_after(self, context: ConsumeMessageContext) -> None:
        """Record a SubAfter: success, cost per message (ms), ``ConsumeReturnType`` ordinal."""
        before = context.mq_trace_context
        if not context.msg_list or not isinstance(before, TraceContext) or not before.trace_beans:
            return
        now = self._clock.now_ms()
        kind = context.props.get(CONSUME_CONTEXT_TYPE)
        self.dispatcher.append(
            TraceContext(
                TraceType.SubAfter,
                time_stamp=now,
                region_id=before.region_id,
                group_name=before.group_name,
                cost_time=max(0, now - before.time_stamp) // len(context.msg_list),
                is_success=context.success,
                request_id=before.request_id,
                context_code=CONSUME_RETURN_TYPES.index(kind) if kind in CONSUME_RETURN_TYPES else 0,
                trace_beans=before.trace_beans,
            )
        )

    def polled(self, group: str, msgs: Sequence[MessageExt], mq: MessageQueue) -> None:
        """A lite pull consumer handed out ``msgs``: SubBefore and SubAfter (success) at once."""
        context = ConsumeMessageContext(consumer_group=group, msg_list=list(msgs), mq=mq)
        self.consume_message_before(context)
        context.status = "CONSUME_SUCCESS"
        context.success = True
        self.consume_message_after(context)


def _consumed_bean(msg: MessageExt) -> TraceBean:
    return TraceBean(
        topic=msg.topic,
        msg_id=msg.msg_id,
        tags=msg.tags,
        keys=msg.keys,
        store_time=msg.store_timestamp,
        body_length=msg.store_size,
        retry_times=msg.reconsume_times,
    )
