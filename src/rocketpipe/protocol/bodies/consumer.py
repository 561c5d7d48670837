"""Consumer-side bodies (L1, sans-IO): GET_CONSUMER_LIST_BY_GROUP response
(``ConsumerListBody``), LOCK/UNLOCK_BATCH_MQ request/response bodies,
``GetConsumerStatusBody``, ``ConsumerConnection`` / ``Connection``, ``ConsumerRunningInfo``.

Mirrors ``remoting/protocol/body/{GetConsumerListByGroupResponseBody,LockBatchRequestBody,
LockBatchResponseBody,UnlockBatchRequestBody,GetConsumerStatusBody,ConsumerConnection,Connection,
ConsumerRunningInfo}``. Maps keyed by MessageQueue are written with object-literal keys (§4.2).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..message import MessageQueue
from . import javajson as jj
from .heartbeat import SubscriptionData

__all__ = [
    "Connection",
    "ConsumerConnection",
    "ConsumerListBody",
    "ConsumerRunningInfo",
    "GetConsumerListByGroupResponseBody",
    "GetConsumerStatusBody",
    "LockBatchRequestBody",
    "LockBatchResponseBody",
    "UnlockBatchRequestBody",
]


def _mq_set(v: Any) -> set[MessageQueue]:
    out: set[MessageQueue] = set()
    for x in jj.as_list(v):
        mq = jj.message_queue_from(x)
        if mq is not None:
            out.add(mq)
    return out


@dataclass(slots=True)
class ConsumerListBody:
    """GET_CONSUMER_LIST_BY_GROUP response body (Java ``GetConsumerListByGroupResponseBody``).

    Attributes:
        consumer_id_list: client ids of the group's live consumers.
    """

    consumer_id_list: list[str] = field(default_factory=list)

    def encode(self) -> bytes:
        """Encode as JSON."""
        return jj.dumps({"consumerIdList": self.consumer_id_list})

    @classmethod
    def decode(cls, data: bytes | memoryview | str) -> ConsumerListBody:
        """Decode.

        Raises:
            ProtocolError: the body is not JSON.
        """
        d = jj.as_dict(jj.loads(data))
        return cls([x for x in jj.as_list(d.get("consumerIdList")) if isinstance(x, str)])


#: The Java class name of :class:`ConsumerListBody`.
GetConsumerListByGroupResponseBody = ConsumerListBody


@dataclass(slots=True)
class LockBatchRequestBody:
    """LOCK_BATCH_MQ request body (Java ``LockBatchRequestBody``).

    Attributes:
        consumer_group: group.
        client_id: requesting client.
        only_this_broker: False lets 5.x strict mode fan out to replicas.
        mq_set: queues to lock.
    """

    consumer_group: str
    client_id: str
    mq_set: set[MessageQueue] = field(default_factory=set)
    only_this_broker: bool = False

    def to_obj(self) -> dict[str, Any]:
        """The fastjson bean form (queues sorted)."""
        return {
            "clientId": self.client_id,
            "consumerGroup": self.consumer_group,
            "mqSet": [mq.to_json() for mq in sorted(self.mq_set)],
            "onlyThisBroker": self.only_this_broker,
        }

    def encode(self) -> bytes:
        """Encode as JSON."""
        return jj.dumps(self.to_obj())

    @classmethod
    def decode(cls, data: bytes | memoryview | str) -> LockBatchRequestBody:
        """Decode.

        Raises:
            ProtocolError: the body is not JSON.
        """
        d = jj.as_dict(jj.loads(data))
        return cls(
            consumer_group=jj.as_str(d.get("consumerGroup"), "") or "",
            client_id=jj.as_str(d.get("clientId"), "") or "",
            mq_set=_mq_set(d.get("mqSet")),
            only_this_broker=jj.as_bool(d.get("onlyThisBroker")),
        )


@dataclass(slots=True)
class UnlockBatchRequestBody(LockBatchRequestBody):
    """UNLOCK_BATCH_MQ request body (Java ``UnlockBatchRequestBody``): same fields as lock."""

    @classmethod
    def decode(cls, data: bytes | memoryview | str) -> UnlockBatchRequestBody:
        """Decode.

        Raises:
            ProtocolError: the body is not JSON.
        """
        b = LockBatchRequestBody.decode(data)
        return cls(b.consumer_group, b.client_id, b.mq_set, b.only_this_broker)


@dataclass(slots=True)
class LockBatchResponseBody:
    """LOCK_BATCH_MQ response body (Java ``LockBatchResponseBody``).

    Attributes:
        lock_ok_mq_set: queues now locked by the requester.
    """

    lock_ok_mq_set: set[MessageQueue] = field(default_factory=set)

    def encode(self) -> bytes:
        """Encode as JSON (queues sorted)."""
        return jj.dumps({"lockOKMQSet": [mq.to_json() for mq in sorted(self.lock_ok_mq_set)]})

    @classmethod
    def decode(cls, data: bytes | memoryview | str) -> LockBatchResponseBody:
        """Decode.

        Raises:
            ProtocolError: the body is not JSON.
        """
        d = jj.as_dict(jj.loads(data))
        return cls(_mq_set(d.get("lockOKMQSet")))


@dataclass(slots=True)
class GetConsumerStatusBody:
    """GET_CONSUMER_STATUS_FROM_CLIENT response body (Java ``GetConsumerStatusBody``).

    Attributes:
        message_queue_table: queue -> offset.
        consumer_table: client id -> (queue -> offset).
    """

    message_queue_table: dict[MessageQueue, int] = field(default_factory=dict)
    consumer_table: dict[str, dict[MessageQueue, int]] = field(default_factory=dict)

    def encode(self) -> bytes:
        """Encode with object-literal MessageQueue keys (fastjson form)."""
        return jj.dumps(
            {
                "consumerTable": {k: dict(sorted(v.items())) for k, v in self.consumer_table.items()},
                "messageQueueTable": dict(sorted(self.message_queue_table.items())),
            }
        )

    @classmethod
    def decode(cls, data: bytes | memoryview | str) -> GetConsumerStatusBody:
        """Decode any MessageQueue-map shape.

        Raises:
            ProtocolError: the body is not JSON.
        """
        d = jj.as_dict(jj.loads(data))
        return cls(
            message_queue_table=jj.message_queue_map(d.get("messageQueueTable"), jj.as_int),
            consumer_table={
                str(k): jj.message_queue_map(v, jj.as_int) for k, v in jj.as_dict(d.get("consumerTable")).items()
            },
        )


@dataclass(slots=True)
class Connection:
    """A client connection (Java ``Connection``).

    Attributes:
        client_id: client id.
        client_addr: ``ip:port`` of the client.
        language: LanguageCode name, e.g. ``JAVA``/``PYTHON``.
        version: client's MQVersion ordinal.
    """

    client_id: str
    client_addr: str
    language: str = "PYTHON"
    version: int = 0

    def to_obj(self) -> dict[str, Any]:
        """The fastjson bean form."""
        return {
            "clientAddr": self.client_addr,
            "clientId": self.client_id,
            "language": self.language,
            "version": self.version,
        }

    @classmethod
    def from_obj(cls, d: Any) -> Connection:
        """Build from a parsed bean."""
        d = jj.as_dict(d)
        return cls(
            client_id=jj.as_str(d.get("clientId"), "") or "",
            client_addr=jj.as_str(d.get("clientAddr"), "") or "",
            language=jj.as_str(d.get("language"), "OTHER") or "OTHER",
            version=jj.as_int(d.get("version")),
        )


@dataclass(slots=True)
class ConsumerConnection:
    """GET_CONSUMER_CONNECTION_LIST response body (Java ``ConsumerConnection``).

    Attributes:
        connection_set: online clients.
        subscription_table: topic -> subscription.
        consume_type: e.g. ``CONSUME_PASSIVELY``.
        message_model: ``CLUSTERING``/``BROADCASTING``.
        consume_from_where: e.g. ``CONSUME_FROM_LAST_OFFSET``.
    """

    connection_set: list[Connection] = field(default_factory=list)
    subscription_table: dict[str, SubscriptionData] = field(default_factory=dict)
    consume_type: str | None = None
    message_model: str | None = None
    consume_from_where: str | None = None

    def encode(self) -> bytes:
        """Encode as JSON."""
        d: dict[str, Any] = {"connectionSet": [c.to_obj() for c in self.connection_set]}
        if self.consume_from_where is not None:
            d["consumeFromWhere"] = self.consume_from_where
        if self.consume_type is not None:
            d["consumeType"] = self.consume_type
        if self.message_model is not None:
            d["messageModel"] = self.message_model
        d["subscriptionTable"] = {k: v.to_obj() for k, v in self.subscription_table.items()}
        return jj.dumps(d)

    @classmethod
    def decode(cls, data: bytes | memoryview | str) -> ConsumerConnection:
        """Decode.

        Raises:
            ProtocolError: the body is not JSON.
        """
        d = jj.as_dict(jj.loads(data))
        return cls(
            connection_set=[Connection.from_obj(x) for x in jj.as_list(d.get("connectionSet"))],
            subscription_table={
                str(k): SubscriptionData.from_obj(v) for k, v in jj.as_dict(d.get("subscriptionTable")).items()
            },
            consume_type=jj.as_str(d.get("consumeType")),
            message_model=jj.as_str(d.get("messageModel")),
            consume_from_where=jj.as_str(d.get("consumeFromWhere")),
        )


@dataclass(slots=True)
class ConsumerRunningInfo:
    """GET_CONSUMER_RUNNING_INFO response body (Java ``ConsumerRunningInfo``), loosely typed.

    Attributes:
        properties: ``PROP_*`` keys -> values.
        subscription_set: subscriptions.
        mq_table: queue -> ProcessQueueInfo bean (parsed JSON dict; note Java's ``droped``).
        status_table: topic -> ConsumeStatus bean (parsed JSON dict).
        jstack: thread dump text, or None.
    """

    properties: dict[str, str] = field(default_factory=dict)
    subscription_set: list[SubscriptionData] = field(default_factory=list)
    mq_table: dict[MessageQueue, dict[str, Any]] = field(default_factory=dict)
    status_table: dict[str, dict[str, Any]] = field(default_factory=dict)
    jstack: str | None = None

    def encode(self) -> bytes:
        """Encode with object-literal MessageQueue keys (fastjson form)."""
        d: dict[str, Any] = {}
        if self.jstack is not None:
            d["jstack"] = self.jstack
        d["mqTable"] = dict(sorted(self.mq_table.items()))
        d["properties"] = self.properties
        d["statusTable"] = self.status_table
        d["subscriptionSet"] = [s.to_obj() for s in self.subscription_set]
        return jj.dumps(d)

    @classmethod
    def decode(cls, data: bytes | memoryview | str) -> ConsumerRunningInfo:
        """Decode any MessageQueue-map shape.

        Raises:
            ProtocolError: the body is not JSON.
        """
        d = jj.as_dict(jj.loads(data))
        return cls(
            properties={str(k): jj.as_str(v, "") or "" for k, v in jj.as_dict(d.get("properties")).items()},
            subscription_set=[SubscriptionData.from_obj(x) for x in jj.as_list(d.get("subscriptionSet"))],
            mq_table=jj.message_queue_map(d.get("mqTable"), jj.as_dict),
            status_table={str(k): jj.as_dict(v) for k, v in jj.as_dict(d.get("statusTable")).items()},
            jstack=jj.as_str(d.get("jstack")),
        )
