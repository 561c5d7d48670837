"""rocketpipe: Apache RocketMQ's messaging system in pure Python.

Public API (re-exported lazily from :mod:`rocketpipe.client` and :mod:`rocketpipe.errors`, so
that ``import rocketpipe.protocol`` stays free of asyncio and sockets)::

    from rocketpipe import Producer, PushConsumer, Admin, Message
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_CLIENT_NAMES = (
    "TraceType",
    "TraceView",
    "RequestCallback",
    "create_reply_message",
    "LocalTransactionState",
    "SyncTransactionProducer",
    "TransactionListener",
    "TransactionProducer",
    "TransactionSendResult",
    "ConsumeMessageHook",
    "ConsumeMessageContext",
    "MessageListenerOrderly",
    "ConsumeOrderlyStatus",
    "ConsumeOrderlyContext",
    "LocalOffsetStore",
    "SimpleConsumer",
    "ReceivedMessage",
    "ConsumeInitMode",
    "SyncLitePullConsumer",
    "LitePullConsumer",
    "Admin",
    "ClientConfig",
    "ConsumeConcurrentlyContext",
    "ConsumeConcurrentlyStatus",
    "ConsumeFromWhere",
    "Message",
    "MessageExt",
    "MessageModel",
    "MessageQueue",
    "MessageSelector",
    "MessageUtil",
    "Producer",
    "PullRaw",
    "PullStatus",
    "PushConsumer",
    "SendResult",
    "SendStatus",
    "SessionCredentials",
    "SyncAdmin",
    "SyncProducer",
)
_ERROR_NAMES = (
    "BrokerError",
    "ClientClosedError",
    "ConnectionClosedError",
    "InvalidArgumentError",
    "ReplyTimeoutError",
    "RequestTimeoutError",
    "RocketMQError",
)

__all__ = [
    "Admin",
    "BrokerError",
    "ClientClosedError",
    "ClientConfig",
    "ConnectionClosedError",
    "ConsumeConcurrentlyContext",
    "ConsumeConcurrentlyStatus",
    "ConsumeFromWhere",
    "ConsumeInitMode",
    "ConsumeMessageContext",
    "ConsumeMessageHook",
    "ConsumeOrderlyContext",
    "ConsumeOrderlyStatus",
    "InvalidArgumentError",
    "LitePullConsumer",
    "LocalOffsetStore",
    "LocalTransactionState",
    "Message",
    "MessageExt",
    "MessageListenerOrderly",
    "MessageModel",
    "MessageQueue",
    "MessageSelector",
    "MessageUtil",
    "Producer",
    "PullRaw",
    "PullStatus",
    "PushConsumer",
    "ReceivedMessage",
    "ReplyTimeoutError",
    "RequestCallback",
    "RequestTimeoutError",
    "RocketMQError",
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
    "create_reply_message",
]

if TYPE_CHECKING:
    from .client import (
        Admin,
        ClientConfig,
        ConsumeConcurrentlyContext,
        ConsumeConcurrentlyStatus,
        ConsumeFromWhere,
        ConsumeInitMode,
        ConsumeMessageContext,
        ConsumeMessageHook,
        ConsumeOrderlyContext,
        ConsumeOrderlyStatus,
        LitePullConsumer,
        LocalOffsetStore,
        LocalTransactionState,
        Message,
        MessageExt,
        MessageListenerOrderly,
        MessageModel,
        MessageQueue,
        MessageSelector,
        MessageUtil,
        Producer,
        PullRaw,
        PullStatus,
        PushConsumer,
        ReceivedMessage,
        RequestCallback,
        SendResult,
        SendStatus,
        SessionCredentials,
        SimpleConsumer,
        SyncAdmin,
        SyncLitePullConsumer,
        SyncProducer,
        SyncTransactionProducer,
        TraceType,
        TraceView,
        TransactionListener,
        TransactionProducer,
        TransactionSendResult,
        create_reply_message,
    )
    from .errors import (
        BrokerError,
        ClientClosedError,
        ConnectionClosedError,
        InvalidArgumentError,
        ReplyTimeoutError,
        RequestTimeoutError,
        RocketMQError,
    )


def __getattr__(name: str) -> Any:
    if name in _CLIENT_NAMES:
        value = getattr(importlib.import_module(".client", __name__), name)
    elif name in _ERROR_NAMES:
        value = getattr(importlib.import_module(".errors", __name__), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
