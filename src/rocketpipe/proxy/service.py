"""The ``apache.rocketmq.v2.MessagingService`` servicer: each gRPC call made into remoting calls
with rocketpipe's client (``grpc.aio``, in the caller's event loop).

Served: QueryRoute, QueryAssignment, Heartbeat, Telemetry (client settings; the brokers'
transaction check-backs as ``RecoverOrphanedTransactionCommand``), SendMessage (normal,
message-group, timer and transactional half messages; one message or a batch; timer messages'
entries carry the broker's recall handle), RecallMessage, EndTransaction
(:mod:`.transaction`), NotifyClientTermination, and the consumers' ReceiveMessage, AckMessage,
ChangeInvisibleDuration and ForwardMessageToDeadLetterQueue (:mod:`.consumer`). The other calls
answer UNIMPLEMENTED (the generated base class's default).

Mirrors Java 5.3.3's proxy ``GrpcMessagingApplication`` → ``RouteActivity``,
``SendMessageActivity``, ``ClientActivity``, ``EndTransactionActivity``,
``ForwardMessageToDLQActivity``, ``GrpcClientSettingsManager``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any, Final

from google.protobuf import duration_pb2
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as spb
from rocketmq.grpc_protocol import service_pb2_grpc as sgrpc

from ..broker.topics import validate_topic
from ..client import Admin, Producer, rpc
from ..errors import InvalidArgumentError, RocketMQError, TopicNotExistError
from ..protocol.bodies.admin import SubscriptionGroupConfig
from ..protocol.bodies.route import TopicRouteData
from ..protocol.headers.send import RecallMessageRequestHeader
from ..protocol.message import PROPERTY_TRANSACTION_PREPARED, Message, MessageQueue, java_string_hash
from ..protocol.recall import decode_recall_handle
from ..protocol.topic_attributes import TOPIC_MESSAGE_TYPE_ATTRIBUTE, TopicMessageType, topic_message_type
from . import consumer
from .channel import ChannelManager, TelemetryChannel
from .convert import OK, GrpcError, consistent_hash, error_status, status, to_remoting_message
from .message_type import (
    STATUS_MESSAGE_PREFIX,
    TopicMessageTypeCache,
    TopicMessageTypeMismatchError,
    message_type_of_properties,
    needs_check,
    validate,
)
from .route import MASTER_ID, assignments, message_queues
from .transaction import TransactionService

log = logging.getLogger(__name__)

#: ProxyConfig defaults (5.3.3): maxMessageSize, grpcClientProducerMaxAttempts,
#: grpcClientProducerBackoff{Initial,Max}Millis, grpcClientProducerBackoffMultiplier.
MAX_MESSAGE_SIZE: Final = 4 * 1024 * 1024
#: RecallMessageActivity's timeout of the broker call, seconds (``Duration.ofSeconds(2)``).
RECALL_TIMEOUT_S: Final = 2.0
PRODUCER_MAX_ATTEMPTS: Final = 3
PRODUCER_BACKOFF_INITIAL_MS: Final = 10
PRODUCER_BACKOFF_MAX_MS: Final = 1000
PRODUCER_BACKOFF_MULTIPLIER: Final = 2
#: TopicAttributes.TOPIC_MESSAGE_TYPE_ATTRIBUTE
MESSAGE_TYPE_ATTRIBUTE: Final = TOPIC_MESSAGE_TYPE_ATTRIBUTE.name


def _peer_host(context: Any) -> str:
    """``ipv4:127.0.0.1:5555`` → ``127.0.0.1:5555`` (the ``bornHost`` Java takes from the channel)."""
    peer = str(context.peer() or "")
    return peer.split(":", 1)[1] if peer.startswith(("ipv4:", "ipv6:")) else peer


def _ms(value: int) -> duration_pb2.Duration:
    d = duration_pb2.Duration()
    d.FromMilliseconds(value)
    return d


def producer_settings(client: pb.Settings, max_body_size: int, validate_message_type: bool = True) -> pb.Settings:
    """``GrpcClientSettingsManager.mergeProducerData``: the client's settings with the
    endpoint's backoff policy, ``validate_message_type`` (ProxyConfig
    ``enableTopicMessageTypeCheck``, on by default) and its ``max_body_size``; metrics off
    (``mergeMetric`` with ``metricCollectorMode`` OFF)."""
    out = pb.Settings()
    out.CopyFrom(client)
    out.backoff_policy.max_attempts = PRODUCER_MAX_ATTEMPTS
    eb = out.backoff_policy.exponential_backoff
    eb.initial.CopyFrom(_ms(PRODUCER_BACKOFF_INITIAL_MS))
    eb.max.CopyFrom(_ms(PRODUCER_BACKOFF_MAX_MS))
    eb.multiplier = PRODUCER_BACKOFF_MULTIPLIER
    out.publishing.validate_message_type = validate_message_type
    out.publishing.max_body_size = max_body_size
    out.metric.on = False
    return out


class MessagingService(sgrpc.MessagingServiceServicer):  # type: ignore[misc]
    """The servicer, over a remoting cluster reached through ``namesrv_addr``.

    Args:
        producer: rocketpipe's producer the endpoint sends with (started by the caller).
        admin: rocketpipe's admin client for routes and topic configs (started by the caller).
        max_body_size: bytes; larger bodies are refused with MESSAGE_BODY_TOO_LARGE.
        enable_topic_message_type_check: tell producers to check a message's type against the
            types its topic's queues accept, and refuse a mismatch in SendMessage with
            MESSAGE_PROPERTY_CONFLICT_WITH_TYPE (ProxyConfig ``enableTopicMessageTypeCheck``,
            True; :mod:`.message_type`). A topic's type is its ``message.type`` attribute (NORMAL
            when absent), cached per topic as Java's ``topicConfigCache`` (read again after 20 s).
    """

    def __init__(
        self,
        producer: Producer,
        admin: Admin,
        max_body_size: int = MAX_MESSAGE_SIZE,
        *,
        enable_topic_message_type_check: bool = True,
    ) -> None:
        self.producer = producer
        self.admin = admin
        self.max_body_size = max_body_size
        self.enable_topic_message_type_check = enable_topic_message_type_check
        #: client id → the settings the client last sent (``GrpcClientSettingsManager``)
        self.client_settings: dict[str, pb.Settings] = {}
        #: the clients' Telemetry streams and producer groups (``GrpcChannelManager``)
        self.channels = ChannelManager()
        self.transactions = TransactionService(
            producer.runtime, self.channels, request_timeout=producer.runtime.config.request_timeout
        )
        #: topic → its message type (``ClusterMetadataService.topicConfigCache``)
        self.topic_types = TopicMessageTypeCache(self._load_topic_message_type)

    # ------------------------------------------------------------------ routes
    async def _load_topic_message_type(self, topic: str) -> TopicMessageType:
        """The cache's loader (``ClusterTopicConfigCacheLoader``), as Java's
        ``ClusterMetadataService.getTopicMessageType`` reads a type: UNSPECIFIED for a topic the
        name server does not know (Java's ``EMPTY_TOPIC_CONFIG``); else the topic config
        (GET_TOPIC_CONFIG, 351) of a broker of the route (the first that answers), then
        ``TopicConfig.getTopicMessageType`` on its ``attributes``: ``message.type``, NORMAL when unset.

        Differences from Java: when no broker answers (a 4.x broker lacks GET_TOPIC_CONFIG) it is
        NORMAL, where Java says UNSPECIFIED (and the SDK would refuse every send); a value that is
        no ``TopicMessageType`` name gives UNSPECIFIED (Java's ``valueOf`` throws).

        Raises:
            RocketMQError: the route could not be read.
        """
        try:
            route = await self.admin.topic_route(topic)
        except TopicNotExistError:
            return TopicMessageType.UNSPECIFIED
        for addr in (a for bd in route.broker_datas for a in bd.broker_addrs.values()):
            try:
                cfg = await self.admin.examine_topic_config(addr, topic)
            except RocketMQError:
                continue
            attributes = cfg.get("attributes") or {}
            if not isinstance(attributes, dict):
                return TopicMessageType.UNSPECIFIED
            value = attributes.get(MESSAGE_TYPE_ATTRIBUTE)
            try:
                return topic_message_type({} if value is None else {MESSAGE_TYPE_ATTRIBUTE: str(value)})
            except ValueError:
                return TopicMessageType.UNSPECIFIED
        return TopicMessageType.NORMAL

    async def QueryRoute(self, request: spb.QueryRouteRequest, context: Any) -> spb.QueryRouteResponse:
        """The topic's queues, every broker at the endpoint the client used."""
        try:
            topic = request.topic.name
            problem = validate_topic(topic)
            if problem is not None:
                raise GrpcError(pb.Code.ILLEGAL_TOPIC, problem)
            route = await self.admin.topic_route(topic)
            kind = await self.topic_types.get(topic)
            queues = message_queues(route, request.topic, request.endpoints, kind.value)
        except Exception as exc:
            return spb.QueryRouteResponse(status=error_status(exc))
        return spb.QueryRouteResponse(status=status(OK), message_queues=queues)

    async def _group_config(self, group: str, route: TopicRouteData) -> SubscriptionGroupConfig | None:
        """The group's ``SubscriptionGroupConfig`` from the first master of ``route`` that answers
        (Java's proxy asks one broker of its cluster), or None when none knows the group."""
        for bd in route.broker_datas:
            addr = bd.broker_addrs.get(MASTER_ID)
            if addr is None:
                continue
            try:
                return await self.admin.examine_subscription_group_config(addr, group)
            except RocketMQError as exc:
                log.debug("subscription group %s from %s: %s", group, addr, exc)
        return None

    async def QueryAssignment(self, request: spb.QueryAssignmentRequest, context: Any) -> spb.QueryAssignmentResponse:
        """The PushConsumer's queues (``RouteActivity.queryAssignment``): one per readable broker
        with queue id -1 (POP from any of its queues), one per read queue for an orderly group;
        every broker at the endpoint the client used. FORBIDDEN when no queue is readable."""
        try:
            topic, group = request.topic.name, request.group.name
            consumer.check_names(topic, group)
            route = await self.admin.topic_route(topic)
            config = await self._group_config(group, route)
            fifo = bool(config is not None and config.consume_message_orderly)
            found = assignments(route, request.topic, request.endpoints, fifo)
        except Exception as exc:
            return spb.QueryAssignmentResponse(status=error_status(exc))
        if not found:
            return spb.QueryAssignmentResponse(status=status(pb.Code.FORBIDDEN, "no readable queue"))
        return spb.QueryAssignmentResponse(status=status(OK), assignments=found)

    # ------------------------------------------------------------------ clients
    async def Heartbeat(self, request: spb.HeartbeatRequest, context: Any) -> spb.HeartbeatResponse:
        """Accepted; a producer is (re)registered for the topics it publishes to
        (``ClientActivity.heartbeat`` → ``registerProducer``)."""
        client_id = _client_id(context)
        settings = self.client_settings.get(client_id)
        if settings is not None and settings.WhichOneof("pub_sub") == "publishing":
            await self._register_producer(client_id, settings.publishing)
        return spb.HeartbeatResponse(status=status(OK))

    async def _register_producer(self, client_id: str, publishing: pb.Publishing) -> None:
        """``ClientActivity.registerProducer`` for every published topic: the client becomes a
        producer of the group named after the topic; a TRANSACTION topic's group is heartbeated
        to the brokers so that their check-backs reach the endpoint."""
        for topic in publishing.topics:
            name = topic.name
            if not self.channels.register_producer(name, client_id) or name in self.transactions.transaction_groups():
                continue
            try:
                kind = await self.topic_types.get(name)
            except RocketMQError as exc:
                log.debug("producer of %s: no route: %s", name, exc)
                continue
            if kind is TopicMessageType.TRANSACTION:
                self.transactions.add_transaction_subscription(name, name)

    def _unregister_client(self, client_id: str) -> None:
        for group in self.channels.unregister_client(client_id):
            self.transactions.remove_group(group)

    async def NotifyClientTermination(
        self, request: spb.NotifyClientTerminationRequest, context: Any
    ) -> spb.NotifyClientTerminationResponse:
        """Forget the client's settings and its producer registrations."""
        client_id = _client_id(context)
        self.client_settings.pop(client_id, None)
        self._unregister_client(client_id)
        return spb.NotifyClientTerminationResponse(status=status(OK))

    async def Telemetry(
        self, request_iterator: AsyncIterator[spb.TelemetryCommand], context: Any
    ) -> AsyncIterator[spb.TelemetryCommand]:
        """The client's settings stream: every ``settings`` command is answered with the merged
        settings (``ClientActivity.processAndWriteClientSettings``; publishing settings register
        the client as a producer of their topics); a settings command with neither publishing
        nor subscription is answered BAD_REQUEST. The endpoint also writes the brokers'
        transaction check-backs to the stream (:class:`~.channel.TelemetryChannel`). When the
        stream ends, the client's producer registrations end with it."""
        client_id = _client_id(context)
        channel = self.channels.open(client_id)
        reader = asyncio.ensure_future(self._read_telemetry(request_iterator, client_id, channel))
        try:
            async for command in channel.commands():
                yield command
        finally:
            reader.cancel()
            if self.channels.close(channel):
                self._unregister_client(client_id)

    async def _read_telemetry(
        self, request_iterator: AsyncIterator[spb.TelemetryCommand], client_id: str, channel: TelemetryChannel
    ) -> None:
        try:
            async for command in request_iterator:
                if not command.HasField("settings"):
                    continue
                settings = command.settings
                kind = settings.WhichOneof("pub_sub")
                if kind == "publishing":
                    merged = producer_settings(settings, self.max_body_size, self.enable_topic_message_type_check)
                elif kind == "subscription":
                    merged = consumer.subscription_settings(settings, await self._subscription_group(settings))
                else:
                    channel.write(
                        spb.TelemetryCommand(
                            status=status(
                                pb.Code.BAD_REQUEST, "there is no publishing or subscription data in settings"
                            )
                        )
                    )
                    continue
                self.client_settings[client_id] = merged
                channel.write(spb.TelemetryCommand(status=status(OK), settings=merged))
                if kind == "publishing":
                    await self._register_producer(client_id, settings.publishing)
        except Exception:
            log.exception("gRPC Telemetry of client %s failed", client_id)
        finally:
            channel.close()

    async def _subscription_group(self, settings: pb.Settings) -> SubscriptionGroupConfig | None:
        """The config of the settings' group, from a broker of its first subscribed topic."""
        topics = [entry.topic.name for entry in settings.subscription.subscriptions]
        if not topics:
            return None
        try:
            route = await self.admin.topic_route(topics[0])
        except RocketMQError:
            return None
        return await self._group_config(settings.subscription.group.name, route)

    # ------------------------------------------------------------------ consume
    async def ReceiveMessage(
        self, request: spb.ReceiveMessageRequest, context: Any
    ) -> AsyncIterator[spb.ReceiveMessageResponse]:
        """Pop from the broker of the request's queue; a status, then the messages, then the
        delivery timestamp (ms since the epoch, as Java's stream writer ends every answer)."""
        remaining = context.time_remaining()
        remaining_ms = int(remaining * 1000) if remaining is not None else 60_000
        try:
            responses = await consumer.receive(
                self.admin.runtime,
                request,
                self.client_settings.get(_client_id(context)),
                remaining_ms,
                int(time.time() * 1000),
            )
        except Exception as exc:
            if not isinstance(exc, (GrpcError, RocketMQError)):
                log.exception("gRPC ReceiveMessage failed")
            responses = [spb.ReceiveMessageResponse(status=error_status(exc))]
        for response in responses:
            yield response
        # ReceiveMessageResponseStreamWriter.onComplete: the stream ends with the delivery time
        done = spb.ReceiveMessageResponse()
        done.delivery_timestamp.FromMilliseconds(int(time.time() * 1000))
        yield done

    async def AckMessage(self, request: spb.AckMessageRequest, context: Any) -> spb.AckMessageResponse:
        """Acknowledge popped messages by receipt handle."""
        try:
            return await consumer.ack(self.admin.runtime, request)
        except Exception as exc:
            return spb.AckMessageResponse(status=error_status(exc))

    async def ChangeInvisibleDuration(
        self, request: spb.ChangeInvisibleDurationRequest, context: Any
    ) -> spb.ChangeInvisibleDurationResponse:
        """Make a popped message invisible for another while; answers the new receipt handle."""
        try:
            return await consumer.change_invisible(self.admin.runtime, request)
        except Exception as exc:
            return spb.ChangeInvisibleDurationResponse(status=error_status(exc))

    async def ForwardMessageToDeadLetterQueue(
        self, request: spb.ForwardMessageToDeadLetterQueueRequest, context: Any
    ) -> spb.ForwardMessageToDeadLetterQueueResponse:
        """Store a received message into ``%DLQ%<group>`` and acknowledge it."""
        try:
            return await consumer.forward_to_dlq(self.admin.runtime, request)
        except Exception as exc:
            return spb.ForwardMessageToDeadLetterQueueResponse(status=error_status(exc))

    # ------------------------------------------------------------------ send
    async def SendMessage(self, request: spb.SendMessageRequest, context: Any) -> spb.SendMessageResponse:
        """Store the request's messages (``SendMessageActivity.sendMessage``): one message goes
        to a queue picked round-robin, or, with a message group, to
        ``consistentHash(group.hashCode(), writeQueues)``; several go as one batch. One
        ``SendResultEntry`` per message."""
        try:
            return await self._send(request, context)
        except Exception as exc:
            if not isinstance(exc, (GrpcError, RocketMQError)):
                log.exception("gRPC SendMessage failed")
            return spb.SendMessageResponse(status=error_status(exc))

    async def _send(self, request: spb.SendMessageRequest, context: Any) -> spb.SendMessageResponse:
        if not request.messages:
            raise GrpcError(pb.Code.MESSAGE_CORRUPTED, "no message to send")
        topic = request.messages[0].topic
        problem = validate_topic(topic.name)
        if problem is not None:
            raise GrpcError(pb.Code.ILLEGAL_TOPIC, problem)
        peer = _peer_host(context)
        msgs: list[Message] = []
        for proto in request.messages:
            if proto.topic != topic:
                raise GrpcError(pb.Code.MESSAGE_CORRUPTED, "topic in message is not same")
            # Java: "here use topicName as producerGroup for transactional checker"
            msg, half = to_remoting_message(proto, topic.name, peer, self.max_body_size)
            if half:
                if len(request.messages) > 1:
                    raise GrpcError(pb.Code.BAD_REQUEST, "a transactional message cannot be sent in a batch")
                # as Java's remoting SendMessageActivity: a half message's group gets check-backs
                self.transactions.add_transaction_subscription(topic.name, topic.name)
            msgs.append(msg)
        # ProducerProcessor.sendMessage: the first message's type against its topic's
        if self.enable_topic_message_type_check and needs_check(topic.name, msgs[0].properties):
            expected = await self.topic_types.get(topic.name)
            try:
                validate(expected, message_type_of_properties(msgs[0].properties))
            except TopicMessageTypeMismatchError as exc:
                raise GrpcError(pb.Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, STATUS_MESSAGE_PREFIX + str(exc)) from None
        if len(msgs) == 1:
            group = request.messages[0].system_properties.message_group
            if group:
                result = await self.producer.send(msgs[0], selector=_by_message_group, arg=group)
            else:
                result = await self.producer.send(msgs[0])
            ids = [msgs[0].properties["UNIQ_KEY"]]
            if msgs[0].properties.get(PROPERTY_TRANSACTION_PREPARED) == "true" and result.send_status.name == "SEND_OK":
                self.transactions.on_half_sent(topic.name, topic.name, result)
        else:
            result = await self.producer.send_batch(msgs)
            ids = [m.properties["UNIQ_KEY"] for m in msgs]
        code = _SEND_STATUS_CODES.get(str(result.send_status.name), pb.Code.INTERNAL_SERVER_ERROR)
        if code != OK:  # convertToSendMessageResponse: a stored-but-degraded status is a failure entry
            bad = status(code, f"send message failed, sendStatus={result.send_status.name}")
            return spb.SendMessageResponse(status=bad, entries=[spb.SendResultEntry(status=bad) for _ in ids])
        entries = [
            spb.SendResultEntry(
                status=status(OK),
                message_id=msg_id,
                transaction_id=result.transaction_id or "",
                offset=result.queue_offset + i,
                recall_handle=result.recall_handle or "",
            )
            for i, msg_id in enumerate(ids)
        ]
        return spb.SendMessageResponse(status=status(OK), entries=entries)

    async def RecallMessage(self, request: spb.RecallMessageRequest, context: Any) -> spb.RecallMessageResponse:
        """Recall a timer message before its delivery time (``RecallMessageActivity`` →
        ``ProducerProcessor.recallMessage``): the topic must be valid and, with the message type
        check on, of type DELAY; RECALL_MESSAGE goes to the broker the handle names, without a
        producer group, with a 2 s timeout. Answers the recalled message id."""
        try:
            msg_id = await self._recall(request)
        except Exception as exc:
            if not isinstance(exc, (GrpcError, RocketMQError)):
                log.exception("gRPC RecallMessage failed")
            return spb.RecallMessageResponse(status=error_status(exc))
        return spb.RecallMessageResponse(status=status(OK), message_id=msg_id)

    async def _recall(self, request: spb.RecallMessageRequest) -> str:
        topic = request.topic.name
        problem = validate_topic(topic)
        if problem is not None:
            raise GrpcError(pb.Code.ILLEGAL_TOPIC, problem)
        if self.enable_topic_message_type_check:
            try:
                validate(await self.topic_types.get(topic), TopicMessageType.DELAY)
            except TopicMessageTypeMismatchError as exc:
                raise GrpcError(pb.Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, STATUS_MESSAGE_PREFIX + str(exc)) from None
        try:
            handle = decode_recall_handle(request.recall_handle)
        except InvalidArgumentError as exc:  # Java: ProxyException(INTERNAL_SERVER_ERROR, e.getMessage())
            raise GrpcError(pb.Code.INTERNAL_SERVER_ERROR, STATUS_MESSAGE_PREFIX + str(exc)) from None
        rt = self.admin.runtime
        addr = rt.find_broker_addr(handle.broker_name) or await rt.find_master_addr(handle.broker_name, topic)
        header = RecallMessageRequestHeader(topic=topic, recall_handle=request.recall_handle, bname=handle.broker_name)
        return await rpc.recall_message(rt.pool, addr, header, RECALL_TIMEOUT_S)

    # ------------------------------------------------------------------ transactions
    async def EndTransaction(self, request: spb.EndTransactionRequest, context: Any) -> spb.EndTransactionResponse:
        """Commit or roll back a half message (``EndTransactionActivity.endTransaction``): the
        source CLIENT ends it after the local transaction, SERVER_CHECK answers a check-back
        (:meth:`.transaction.TransactionService.end_transaction`)."""
        try:
            await self.transactions.end_transaction(request)
        except Exception as exc:
            if not isinstance(exc, (GrpcError, RocketMQError)):
                log.exception("gRPC EndTransaction failed")
            return spb.EndTransactionResponse(status=error_status(exc))
        return spb.EndTransactionResponse(status=status(OK))


#: ``convertToSendMessageResponse``: SendStatus → the entry's code.
_SEND_STATUS_CODES: Final[dict[str, int]] = {
    "SEND_OK": pb.Code.OK,
    "FLUSH_DISK_TIMEOUT": pb.Code.MASTER_PERSISTENCE_TIMEOUT,
    "FLUSH_SLAVE_TIMEOUT": pb.Code.SLAVE_PERSISTENCE_TIMEOUT,
    "SLAVE_NOT_AVAILABLE": pb.Code.HA_NOT_AVAILABLE,
}


def _by_message_group(queues: Sequence[MessageQueue], msg: Message, group: object) -> MessageQueue:
    """``SendMessageQueueSelector`` with a sharding key: Guava's consistent hash of the group's
    ``String.hashCode`` over the write queues."""
    return queues[consistent_hash(java_string_hash(str(group)), len(queues))]


def _client_id(context: Any) -> str:
    """The ``x-mq-client-id`` metadata the SDKs send with every call."""
    for key, value in context.invocation_metadata() or ():
        if key == "x-mq-client-id":
            return str(value)
    return ""


__all__ = ["MessagingService", "producer_settings"]
