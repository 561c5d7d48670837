"""The RocketMQ client (L3): producer, push consumer, admin and their blocking facades.

Example::

    async with Producer("pg", namesrv_addr="127.0.0.1:9876") as producer:
        result = await producer.send(Message.build("Orders", b"...", tags="paid", keys=["o-1"]))

    consumer = PushConsumer("cg", namesrv_addr="127.0.0.1:9876")
    consumer.subscribe("Orders", "paid || refunded")

    @consumer.register_message_listener
    async def on_messages(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        ...
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    async with consumer:
        ...

    # request-reply: the replier answers with create_reply_message(request, body) + send
    reply = await producer.request(Message.build("Prices", b"EURUSD?"), timeout=3.0)

Layout: ``config`` (ClientConfig), ``rpc`` (one typed call per request code; the only
seconds→ms conversion), ``runtime`` (routes, heartbeats, periodic tasks), ``routing``
(pure queue/broker choice), ``producer/`` (with ``transaction``: transactional messages),
``request_reply`` (pending requests, the reply push, ``create_reply_message``), ``trace/`` (message
trace: Java's format, dispatcher, hooks), ``consumer/`` (push, allocate, rebalance,
process_queue, pull, concurrent, retry, offsets, listener), ``admin`` and ``sync``.
Imports transport, protocol, errors and clock; never broker, namesrv or store.
"""

from __future__ import annotations

from ..protocol.message import Message, MessageExt, MessageQueue
from .admin import Admin
from .config import ClientConfig, SessionCredentials
from .consumer.allocate import (
    allocate_averagely,
    allocate_averagely_by_circle,
    allocate_consistent_hash,
    by_config_strategy,
    by_machine_room_strategy,
    consistent_hash_strategy,
    machine_room_nearby_strategy,
)
from .consumer.assignment import MessageRequestMode
from .consumer.listener import ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus, MessageModel
from .consumer.lite_pull import LitePullConsumer
from .consumer.lite_pull_sync import SyncLitePullConsumer
from .consumer.local_offsets import LocalOffsetStore
from .consumer.offsets import ConsumeFromWhere
from .consumer.orderly import ConsumeOrderlyContext, ConsumeOrderlyStatus, MessageListenerOrderly
from .consumer.push import PushConsumer
from .consumer.push_controls import ConsumeMessageContext, ConsumeMessageHook
from .consumer.selector import MessageSelector
from .consumer.simple import ConsumeInitMode, ReceivedMessage, SimpleConsumer
from .inbound import CMResult, ConsumeMessageDirectlyResult
from .producer.producer import Producer
from .producer.selectors import MessageQueueSelector, select_by_hash, select_by_random
from .producer.transaction import (
    LocalTransactionState,
    TransactionListener,
    TransactionProducer,
    TransactionSendResult,
)
from .request_reply import MessageUtil, RequestCallback, create_reply_message, get_reply_to_client
from .rpc import PullRaw, PullStatus, SendResult, SendStatus
from .runtime import ClientRuntime
from .sync import SyncAdmin, SyncProducer, SyncTransactionProducer
from .trace import TraceType, TraceView

__all__ = [
    "Admin",
    "CMResult",
    "ClientConfig",
    "ClientRuntime",
    "ConsumeConcurrentlyContext",
    "ConsumeConcurrentlyStatus",
    "ConsumeFromWhere",
    "ConsumeInitMode",
    "ConsumeMessageContext",
    "ConsumeMessageDirectlyResult",
    "ConsumeMessageHook",
    "ConsumeOrderlyContext",
    "ConsumeOrderlyStatus",
    "LitePullConsumer",
    "LocalOffsetStore",
    "LocalTransactionState",
    "Message",
    "MessageExt",
    "MessageListenerOrderly",
    "MessageModel",
    "MessageQueue",
    "MessageQueueSelector",
    "MessageRequestMode",
    "MessageSelector",
    "MessageUtil",
    "Producer",
    "PullRaw",
    "PullStatus",
    "PushConsumer",
    "ReceivedMessage",
    "RequestCallback",
    "SendResult",
    "SendStatus",
    "SessionCredentials",
    "SimpleConsumer",
    "SyncAdmin",
    "SyncLitePullConsumer",
    "SyncProducer",
    "SyncTransactionProducer",
    "TraceType",
    "TraceView",
    "TransactionListener",
    "TransactionProducer",
    "TransactionSendResult",
    "allocate_averagely",
    "allocate_averagely_by_circle",
    "allocate_consistent_hash",
    "by_config_strategy",
    "by_machine_room_strategy",
    "consistent_hash_strategy",
    "create_reply_message",
    "get_reply_to_client",
    "machine_room_nearby_strategy",
    "select_by_hash",
    "select_by_random",
]
