"""Raw ``apache.rocketmq.v2.MessagingService`` calls for tests (integration and interop): a
SendMessage that the SDKs' own client-side checks would never let through, so that only the
endpoint's checks decide. The message ids come from the official Python SDK's codec and the
headers are the ones it sends (without a signature)."""

from __future__ import annotations

import uuid

import grpc
from google.protobuf import timestamp_pb2
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as spb
from rocketmq.grpc_protocol import service_pb2_grpc as sgrpc
from rocketmq.v5.util.message_id_codec import MessageIdCodec


def raw_message(topic: str, body: str, *, group: str = "", deliver_at_ms: int = 0) -> pb.Message:
    """A message as an SDK builds it: NORMAL, or FIFO with ``group``, or DELAY at ``deliver_at_ms``."""
    sp = pb.SystemProperties(
        message_id=MessageIdCodec().next_message_id(),
        body_encoding=pb.Encoding.IDENTITY,
        message_type=pb.MessageType.NORMAL,
        born_host="127.0.0.1",
    )
    sp.born_timestamp.GetCurrentTime()
    if group:
        sp.message_group = group
        sp.message_type = pb.MessageType.FIFO
    if deliver_at_ms:
        sp.delivery_timestamp.CopyFrom(timestamp_pb2.Timestamp(seconds=deliver_at_ms // 1000))
        sp.message_type = pb.MessageType.DELAY
    return pb.Message(topic=pb.Resource(name=topic), body=body.encode(), system_properties=sp)


def _metadata() -> tuple[tuple[str, str], ...]:
    return (
        ("x-mq-language", "PYTHON"),
        ("x-mq-protocol", "GRPC_V2"),
        ("x-mq-client-version", "5.1.2"),
        ("x-mq-request-id", str(uuid.uuid4())),
        ("x-mq-client-id", f"raw-{uuid.uuid4()}"),
    )


async def raw_send(endpoint: str, messages: list[pb.Message], timeout: float = 10.0) -> spb.SendMessageResponse:
    """One SendMessage to ``endpoint`` (``host:port``, plain HTTP/2) with the SDK's headers."""
    async with grpc.aio.insecure_channel(endpoint) as channel:
        stub = sgrpc.MessagingServiceStub(channel)
        response: spb.SendMessageResponse = await stub.SendMessage(
            spb.SendMessageRequest(messages=messages), timeout=timeout, metadata=_metadata()
        )
    return response


async def raw_recall(endpoint: str, topic: str, recall_handle: str, timeout: float = 10.0) -> spb.RecallMessageResponse:
    """One RecallMessage to ``endpoint`` with the SDK's headers (the Python SDK 5.1.2 has no recall call)."""
    async with grpc.aio.insecure_channel(endpoint) as channel:
        stub = sgrpc.MessagingServiceStub(channel)
        request = spb.RecallMessageRequest(topic=pb.Resource(name=topic), recall_handle=recall_handle)
        response: spb.RecallMessageResponse = await stub.RecallMessage(request, timeout=timeout, metadata=_metadata())
    return response


#: The calls of the published interface that Apache's 5.3.3 proxy does not serve
#: (``GrpcMessagingApplication`` has no such methods): (name, an empty request).
UNSERVED_CALLS: tuple[tuple[str, object], ...] = (
    ("PullMessage", spb.PullMessageRequest()),
    ("UpdateOffset", spb.UpdateOffsetRequest()),
    ("GetOffset", spb.GetOffsetRequest()),
    ("QueryOffset", spb.QueryOffsetRequest()),
    ("SyncLiteSubscription", spb.SyncLiteSubscriptionRequest()),
)


async def call_status(endpoint: str, name: str, request: object, timeout: float = 10.0) -> grpc.StatusCode:
    """Make the call ``name`` (a stream is read to its end) and return its gRPC status code."""
    async with grpc.aio.insecure_channel(endpoint) as channel:
        method = getattr(sgrpc.MessagingServiceStub(channel), name)
        try:
            if name == "PullMessage":  # server streaming
                async for _ in method(request, timeout=timeout):
                    pass
            else:
                await method(request, timeout=timeout)
        except grpc.aio.AioRpcError as exc:
            code: grpc.StatusCode = exc.code()
            return code
    return grpc.StatusCode.OK
