"""Message trace (L3): Java's trace format, the trace dispatcher and the client hooks.

Mirrors ``org.apache.rocketmq.client.trace`` of Java 5.3.3. With ``enable_msg_trace=True`` a
:class:`~rocketpipe.client.Producer` (and :class:`~rocketpipe.client.TransactionProducer`),
:class:`~rocketpipe.client.PushConsumer` or :class:`~rocketpipe.client.LitePullConsumer`
records Pub / EndTransaction / SubBefore / SubAfter contexts (:mod:`.hooks`), which a
:class:`TraceDispatcher` batches into trace messages on ``RMQ_SYS_TRACE_TOPIC`` (or
``customized_trace_topic``) keyed by msg id; :meth:`~rocketpipe.client.Admin.query_trace`
reads them back (:func:`trace_views`), as ``mqadmin queryMsgTraceById`` does.

Modules: :mod:`.model` (records), :mod:`.codec` (the text format; pure), :mod:`.dispatcher`
(buffer and sends), :mod:`.hooks` (what producers and consumers record). None imports the
producer: the dispatcher's trace producer comes from a factory
(:func:`rocketpipe.client.producer.producer.new_trace_dispatcher`).
"""

from __future__ import annotations

from .codec import (
    TraceMessage,
    TraceTransferBean,
    decode_trace_data,
    encode_context,
    pack_trace_messages,
    trace_views,
)
from .dispatcher import TraceDispatcher, TraceSender
from .hooks import ConsumeTraceHook, SendTracer
from .model import (
    CONTENT_SPLITOR,
    DEFAULT_TRACE_REGION_ID,
    FIELD_SPLITOR,
    RMQ_SYS_TRACE_TOPIC,
    MessageType,
    TraceBean,
    TraceContext,
    TraceType,
    TraceView,
)

__all__ = [
    "CONTENT_SPLITOR",
    "DEFAULT_TRACE_REGION_ID",
    "FIELD_SPLITOR",
    "RMQ_SYS_TRACE_TOPIC",
    "ConsumeTraceHook",
    "MessageType",
    "SendTracer",
    "TraceBean",
    "TraceContext",
    "TraceDispatcher",
    "TraceMessage",
    "TraceSender",
    "TraceTransferBean",
    "TraceType",
    "TraceView",
    "decode_trace_data",
    "encode_context",
    "pack_trace_messages",
    "trace_views",
]
