"""The consumer calls of the gRPC endpoint over POP: ReceiveMessage, AckMessage,
ChangeInvisibleDuration, ForwardMessageToDeadLetterQueue, and the subscription half of the
client settings.

A receive pops from the broker named in the request's queue (any queue of the topic there),
re-checks each message as Java's ``PopMessageResultFilterImpl`` does (a message whose tag does not
match is acknowledged and not returned; one already consumed ``max_attempts`` times is forwarded
to ``%DLQ%<group>`` and not returned) and hands out receipt handles in the proxy's form
(``POP_CK`` + ``" "`` + commit-log offset, ``ConsumerProcessor.createHandle``). Forwarding to the
DLQ is CONSUMER_SEND_MSG_BACK with delay level -1 to the broker of the handle, then an ack
(``ProducerProcessor.forwardMessageToDeadLetterQueue``).

Mirrors Java 5.3.3's proxy ``ReceiveMessageActivity``, ``ReceiveMessageResponseStreamWriter``,
``AckMessageActivity``, ``ChangeInvisibleDurationActivity``, ``ForwardMessageToDLQActivity`` and
``GrpcClientSettingsManager.mergeSubscriptionData``.
"""

from __future__ import annotations

import enum
import logging
from typing import Any, Final

from google.protobuf import duration_pb2
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as spb

from ..broker.topics import validate_group, validate_topic
from ..client.consumer.pop_calls import PopStatus, ack_message, change_invisible_time, pop_message
from ..client.rpc import consumer_send_msg_back
from ..client.runtime import ClientRuntime
from ..errors import InvalidArgumentError, RocketMQError
from ..protocol.bodies.admin import SubscriptionGroupConfig
from ..protocol.bodies.heartbeat import SubscriptionData
from ..protocol.headers.pop import ConsumeInitMode, ExtraInfo
from ..protocol.message import MessageExt
from .convert import OK, PROPERTY_POP_CK, GrpcError, error_status, status, to_grpc_message

log = logging.getLogger(__name__)

#: ProxyConfig (5.3.3): grpcClientConsumer{Min,Max}LongPollingTimeoutMillis,
#: grpcClientConsumerLongPollingBatchSize, defaultInvisibleTimeMills, minInvisibleTimeMillsForRecv,
#: maxInvisibleTimeMills.
MIN_LONG_POLLING_MS: Final = 5_000
MAX_LONG_POLLING_MS: Final = 20_000
LONG_POLLING_BATCH_SIZE: Final = 32
DEFAULT_INVISIBLE_MS: Final = 60_000
MIN_INVISIBLE_MS_FOR_RECV: Final = 10_000
MAX_INVISIBLE_MS: Final = 12 * 3600 * 1000
#: SubscriptionGroupConfig defaults: retryMaxTimes (16) and CustomizedRetryPolicy's ``next`` (ms).
RETRY_MAX_TIMES: Final = 16
CUSTOMIZED_BACKOFF_MS: Final = (
    1_000, 5_000, 10_000, 30_000, 60_000, 120_000, 180_000, 240_000, 300_000, 360_000, 420_000,
    480_000, 540_000, 600_000, 1_200_000, 1_800_000, 3_600_000, 7_200_000,
)  # fmt: skip
#: ExponentialRetryPolicy defaults: initial (ms), max (ms), multiplier.
EXPONENTIAL_INITIAL_MS: Final = 5_000
EXPONENTIAL_MAX_MS: Final = 7_200_000
EXPONENTIAL_MULTIPLIER: Final = 2
#: MessagingProcessor.DEFAULT_TIMEOUT_MILLS, seconds.
CALL_TIMEOUT: Final = 3.0


def _ms(value: int) -> duration_pb2.Duration:
    d = duration_pb2.Duration()
    d.FromMilliseconds(value)
    return d


def subscription_settings(client: pb.Settings, group: SubscriptionGroupConfig | None = None) -> pb.Settings:
    """``mergeSubscriptionData``: the client's settings with batch size 32, long polling 20 s,
    FIFO = the group's ``consumeMessageOrderly``, ``retryMaxTimes + 1`` attempts and the group's
    retry policy (``groupRetryPolicy``: CUSTOMIZED ``next`` delays, ms, or EXPONENTIAL initial /
    max / multiplier; Java's defaults where absent); metrics off. ``group`` None (no such group
    on the broker) merges a default ``SubscriptionGroupConfig``."""
    out = pb.Settings()
    out.CopyFrom(client)
    sub = out.subscription
    sub.receive_batch_size = LONG_POLLING_BATCH_SIZE
    sub.long_polling_timeout.CopyFrom(_ms(MAX_LONG_POLLING_MS))
    sub.fifo = bool(group is not None and group.consume_message_orderly)
    out.backoff_policy.max_attempts = (group.retry_max_times if group is not None else RETRY_MAX_TIMES) + 1
    policy: dict[str, Any] = (group.group_retry_policy if group is not None else None) or {}
    if str(policy.get("type", "CUSTOMIZED")).upper() == "EXPONENTIAL":
        exp = policy.get("exponentialRetryPolicy") or {}
        eb = out.backoff_policy.exponential_backoff
        eb.initial.CopyFrom(_ms(int(exp.get("initial", EXPONENTIAL_INITIAL_MS))))
        eb.max.CopyFrom(_ms(int(exp.get("max", EXPONENTIAL_MAX_MS))))
        eb.multiplier = float(exp.get("multiplier", EXPONENTIAL_MULTIPLIER))
    else:
        custom = policy.get("customizedRetryPolicy") or {}
        delays = custom.get("next") or CUSTOMIZED_BACKOFF_MS
        out.backoff_policy.customized_backoff.ClearField("next")
        out.backoff_policy.customized_backoff.next.extend(_ms(int(ms)) for ms in delays)
    out.metric.on = False
    return out


class FilterResult(enum.Enum):
    """``PopMessageResultFilter.FilterResult``."""

    MATCH = "MATCH"
    NO_MATCH = "NO_MATCH"
    TO_DLQ = "TO_DLQ"


def filter_message(sub: SubscriptionData, msg: MessageExt, max_attempts: int) -> FilterResult:
    """``PopMessageResultFilterImpl.filterMessage``: NO_MATCH when a tag subscription does not
    list the message's tag, TO_DLQ when its reconsume times reached ``max_attempts``, else MATCH."""
    if sub.tags_set and not sub.is_sub_all and sub.expression_type == "TAG" and msg.tags not in sub.tags_set:
        return FilterResult.NO_MATCH
    if msg.reconsume_times >= max_attempts:
        return FilterResult.TO_DLQ
    return FilterResult.MATCH


def polling_time_ms(request: spb.ReceiveMessageRequest, settings: pb.Settings | None, remaining_ms: int) -> int:
    """``ReceiveMessageActivity``'s long-polling time, ms: the request's, else the time left
    minus half the request timeout; clamped to [5 s, 20 s] and to the time left.

    Raises:
        GrpcError: ILLEGAL_POLLING_TIME when less than 5 s are left.
    """
    if request.HasField("long_polling_timeout"):
        polling = request.long_polling_timeout.ToMilliseconds()
    else:
        timeout = settings.request_timeout.ToMilliseconds() if settings is not None else 3_000
        polling = remaining_ms - timeout // 2
    polling = min(max(polling, MIN_LONG_POLLING_MS), MAX_LONG_POLLING_MS)
    if polling > remaining_ms:
        if remaining_ms < MIN_LONG_POLLING_MS:
            raise GrpcError(
                pb.Code.ILLEGAL_POLLING_TIME,
                "The deadline time remaining is not enough for polling, please check network condition",
            )
        polling = remaining_ms
    return int(polling)


def _check_invisible(ms: int, minimum: int) -> None:
    if ms < minimum:
        raise GrpcError(pb.Code.ILLEGAL_INVISIBLE_TIME, f"the invisibleTime is too small. min is {minimum}")
    if ms > MAX_INVISIBLE_MS:
        raise GrpcError(pb.Code.ILLEGAL_INVISIBLE_TIME, f"the invisibleTime is too large. max is {MAX_INVISIBLE_MS}")


def check_names(topic: str, group: str) -> None:
    """``validateTopicAndConsumerGroup``.

    Raises:
        GrpcError: ILLEGAL_TOPIC or ILLEGAL_CONSUMER_GROUP.
    """
    problem = validate_topic(topic)
    if problem is not None:
        raise GrpcError(pb.Code.ILLEGAL_TOPIC, problem)
    problem = validate_group(group)
    if problem is not None:
        raise GrpcError(pb.Code.ILLEGAL_CONSUMER_GROUP, problem)


def _subscription(topic: str, expression: pb.FilterExpression) -> SubscriptionData:
    kind = "SQL92" if expression.type == pb.FilterType.SQL else "TAG"
    try:
        return SubscriptionData.build(topic, expression.expression or "*", expression_type=kind)
    except (InvalidArgumentError, ValueError) as exc:
        raise GrpcError(pb.Code.ILLEGAL_FILTER_EXPRESSION, str(exc)) from None


def _handle_message(topic: str, handle: str) -> MessageExt:
    """A stand-in popped message carrying ``handle`` (the proxy's form or the broker's)."""
    return MessageExt(topic=topic, body=b"", properties={PROPERTY_POP_CK: handle})


async def receive(
    runtime: ClientRuntime,
    request: spb.ReceiveMessageRequest,
    settings: pb.Settings | None,
    remaining_ms: int,
    now_ms: int,
) -> list[spb.ReceiveMessageResponse]:
    """The responses of one ReceiveMessage: a status, then one response per message.

    Raises:
        GrpcError: bad names, invisible time, polling time or filter expression.
        RocketMQError: the POP failed (answered with :func:`~.convert.error_status`).
    """
    polling = polling_time_ms(request, settings, remaining_ms)
    topic, group = request.message_queue.topic.name, request.group.name
    check_names(topic, group)
    invisible = request.invisible_duration.ToMilliseconds()
    if request.auto_renew:
        invisible = DEFAULT_INVISIBLE_MS  # enableProxyAutoRenew (renewal itself: a later step)
    else:
        _check_invisible(invisible, MIN_INVISIBLE_MS_FOR_RECV)
    sub = _subscription(topic, request.filter_expression)
    broker_name = request.message_queue.broker.name
    addr = await runtime.find_master_addr(broker_name, topic)
    fifo = bool(settings is not None and settings.subscription.fifo)
    result = await pop_message(
        runtime,
        addr,
        group=group,
        topic=topic,
        broker_name=broker_name,
        queue_id=-1,
        max_msg_nums=request.batch_size or LONG_POLLING_BATCH_SIZE,
        invisible_time=invisible / 1000,
        poll_time=polling / 1000,
        born_time_ms=now_ms,
        init_mode=ConsumeInitMode.MAX,
        subscription=sub,
        order=fifo,
    )
    if result.status is PopStatus.POLLING_FULL:
        return [spb.ReceiveMessageResponse(status=status(pb.Code.TOO_MANY_REQUESTS, "polling full"))]
    if result.status is not PopStatus.FOUND:
        return [spb.ReceiveMessageResponse(status=status(pb.Code.MESSAGE_NOT_FOUND, "no new message"))]
    max_attempts = settings.backoff_policy.max_attempts if settings is not None else RETRY_MAX_TIMES + 1
    kept = []
    skipped = 0
    for m in result.msg_found_list:
        handle = f"{m.properties[PROPERTY_POP_CK]} {m.commit_log_offset}"
        m.properties[PROPERTY_POP_CK] = handle
        verdict = filter_message(sub, m, max_attempts)
        if verdict is FilterResult.NO_MATCH:
            skipped += 1
            await ack_message(runtime, group, m, CALL_TIMEOUT)
        elif verdict is FilterResult.TO_DLQ:
            log.info(
                "gRPC receive %s/%s: message %s reached %d attempts, to the DLQ", group, topic, m.msg_id, max_attempts
            )
            await send_to_dlq(runtime, handle, m.msg_id, group, topic)
        else:
            kept.append(m)
    if skipped:
        log.info("gRPC receive %s/%s: acknowledged %d message(s) whose tag did not match", group, topic, skipped)
    if not kept:
        return [spb.ReceiveMessageResponse(status=status(pb.Code.MESSAGE_NOT_FOUND, "no match message"))]
    return [spb.ReceiveMessageResponse(status=status(OK))] + [
        spb.ReceiveMessageResponse(message=to_grpc_message(m, now_ms)) for m in kept
    ]


async def ack(runtime: ClientRuntime, request: spb.AckMessageRequest) -> spb.AckMessageResponse:
    """``AckMessageActivity``: one result per entry; the overall status is the entries' common
    code, or MULTIPLE_RESULTS."""
    topic, group = request.topic.name, request.group.name
    check_names(topic, group)
    entries = []
    for entry in request.entries:
        try:
            await ack_message(runtime, group, _handle_message(topic, entry.receipt_handle), CALL_TIMEOUT)
            st = status(OK)
        except InvalidArgumentError as exc:
            st = status(pb.Code.INVALID_RECEIPT_HANDLE, str(exc))
        except RocketMQError as exc:
            st = error_status(exc)
        entries.append(
            spb.AckMessageResultEntry(message_id=entry.message_id, receipt_handle=entry.receipt_handle, status=st)
        )
    codes = {e.status.code for e in entries}
    overall = status(codes.pop()) if len(codes) == 1 else status(pb.Code.MULTIPLE_RESULTS)
    return spb.AckMessageResponse(status=overall, entries=entries)


async def change_invisible(
    runtime: ClientRuntime, request: spb.ChangeInvisibleDurationRequest
) -> spb.ChangeInvisibleDurationResponse:
    """``ChangeInvisibleDurationActivity``: the new receipt handle (the broker's new handle plus
    the commit-log offset of the old one).

    Raises:
        GrpcError: bad names, invisible time or receipt handle.
        RocketMQError: the broker refused.
    """
    topic, group = request.topic.name, request.group.name
    check_names(topic, group)
    _check_invisible(request.invisible_duration.ToMilliseconds(), 0)
    handle = request.receipt_handle
    try:
        new = await change_invisible_time(
            runtime,
            group,
            _handle_message(topic, handle),
            request.invisible_duration.ToMilliseconds() / 1000,
            CALL_TIMEOUT,
        )
    except InvalidArgumentError as exc:
        raise GrpcError(pb.Code.INVALID_RECEIPT_HANDLE, str(exc)) from None
    parts = handle.split(" ")
    if len(parts) > 8:
        new = f"{new} {parts[-1]}"
    return spb.ChangeInvisibleDurationResponse(status=status(OK), receipt_handle=new)


async def send_to_dlq(runtime: ClientRuntime, handle: str, message_id: str, group: str, topic: str) -> None:
    """``ProducerProcessor.forwardMessageToDeadLetterQueue``: CONSUMER_SEND_MSG_BACK (delay level
    -1, max reconsume times 0, the handle's commit-log offset and real topic) to the master of
    the handle's broker, then acknowledge the handle.

    Raises:
        GrpcError: INVALID_RECEIPT_HANDLE (unparsable, or no commit-log offset).
        RocketMQError: the broker refused (BrokerError carries its response code) or is unreachable.
    """
    parts = handle.split(" ")
    try:
        info = ExtraInfo.parse(handle)
        commit_log_offset = int(parts[8]) if len(parts) > 8 else -1
    except (InvalidArgumentError, ValueError) as exc:
        raise GrpcError(pb.Code.INVALID_RECEIPT_HANDLE, str(exc)) from None
    if commit_log_offset < 0:
        raise GrpcError(pb.Code.INVALID_RECEIPT_HANDLE, "commit log offset is empty")
    addr = await runtime.find_master_addr(info.broker_name, topic)
    await consumer_send_msg_back(
        runtime.pool,
        addr,
        commit_log_offset=commit_log_offset,
        group=group,
        delay_level=-1,
        origin_msg_id=message_id,
        origin_topic=info.real_topic(topic, group),
        max_reconsume_times=0,
        broker_name=None,
        timeout=CALL_TIMEOUT,
    )
    await ack_message(runtime, group, _handle_message(topic, handle), CALL_TIMEOUT)


async def forward_to_dlq(
    runtime: ClientRuntime, request: spb.ForwardMessageToDeadLetterQueueRequest
) -> spb.ForwardMessageToDeadLetterQueueResponse:
    """``ForwardMessageToDLQActivity``: :func:`send_to_dlq` for the request's message; OK, or the
    broker's refusal as ``ResponseBuilder.buildStatus(code, remark)``.

    Raises:
        GrpcError: bad names or receipt handle.
        RocketMQError: the broker could not be reached.
    """
    topic, group = request.topic.name, request.group.name
    check_names(topic, group)
    await send_to_dlq(runtime, request.receipt_handle, request.message_id, group, topic)
    return spb.ForwardMessageToDeadLetterQueueResponse(status=status(OK))
