"""Message request mode and server-side assignment bodies (L1, sans-IO).

* :class:`SetMessageRequestModeRequestBody` — SET_MESSAGE_REQUEST_MODE (401) request body, and
  the value type of the broker's request-mode table;
* :class:`MessageRequestModeSerializeWrapper` — GET_ALL_MESSAGE_REQUEST_MODE (402) response body
  and the content of ``config/messageRequestMode.json`` (``MessageRequestModeManager.encode()``);
* :class:`QueryAssignmentRequestBody` / :class:`QueryAssignmentResponseBody` with
  :class:`MessageQueueAssignment` — QUERY_ASSIGNMENT (400).

Mirrors ``remoting/protocol/body/{SetMessageRequestModeRequestBody,MessageRequestModeSerializeWrapper,
QueryAssignmentRequestBody,QueryAssignmentResponseBody}`` and ``common/message/{MessageQueueAssignment,
MessageRequestMode}`` of apache/rocketmq 5.x (none of them exist in 4.x). ``encode()`` writes
what fastjson writes (bean properties sorted by name, null properties omitted, enums by name);
golden vectors captured from Java 5.3.3 are in ``tests/vectors/java_assignment``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ...errors import ProtocolError
from ..message import MessageQueue
from . import javajson as jj

__all__ = [
    "MessageModel",
    "MessageQueueAssignment",
    "MessageRequestMode",
    "MessageRequestModeSerializeWrapper",
    "QueryAssignmentRequestBody",
    "QueryAssignmentResponseBody",
    "SetMessageRequestModeRequestBody",
]


class MessageRequestMode(str, Enum):
    """How a consumer reads an assigned queue (Java ``MessageRequestMode``)."""

    PULL = "PULL"
    POP = "POP"


class MessageModel(str, Enum):
    """Consumer message model (Java ``MessageModel``)."""

    BROADCASTING = "BROADCASTING"
    CLUSTERING = "CLUSTERING"


def _enum(cls: type[Any], v: Any, what: str, default: Any) -> Any:
    """An enum field by name; absent/null → ``default``; an unknown name is a protocol error (fastjson throws)."""
    if v is None:
        return default
    if isinstance(v, str):
        try:
            return cls(v)
        except ValueError:
            pass
    raise ProtocolError(f"bad {what}: {v!r}")


def _int(v: Any, what: str) -> int:
    """An int field (absent/null → 0); a non-numeric value is a protocol error (fastjson throws)."""
    if v is None:
        return 0
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise ProtocolError(f"bad {what}: {v!r}")
    try:
        return int(v)
    except ValueError:
        raise ProtocolError(f"bad {what}: {v!r}") from None


def _obj(data: bytes | memoryview | str, what: str) -> dict[Any, Any]:
    obj = jj.loads(data)
    if not isinstance(obj, dict):
        raise ProtocolError(f"{what} is not a JSON object")
    return obj


@dataclass(slots=True)
class SetMessageRequestModeRequestBody:
    """SET_MESSAGE_REQUEST_MODE (401) body (Java ``SetMessageRequestModeRequestBody``).

    Attributes:
        topic: the topic (None when absent from the JSON).
        consumer_group: the group (None when absent).
        mode: PULL (default) or POP.
        pop_share_queue_num: in POP mode, how many following consumers' queues each consumer
            also pops (``<= 0`` or ``>= consumers - 1``: every queue). Default 0.
    """

    topic: str | None = None
    consumer_group: str | None = None
    mode: MessageRequestMode = MessageRequestMode.PULL
    pop_share_queue_num: int = 0

    def to_obj(self) -> dict[str, Any]:
        """The fastjson bean form (sorted property names; null properties omitted)."""
        d: dict[str, Any] = {}
        if self.consumer_group is not None:
            d["consumerGroup"] = self.consumer_group
        d["mode"] = self.mode.value
        d["popShareQueueNum"] = self.pop_share_queue_num
        if self.topic is not None:
            d["topic"] = self.topic
        return d

    @classmethod
    def from_obj(cls, d: Any) -> SetMessageRequestModeRequestBody:
        """Build from a parsed bean.

        Raises:
            ProtocolError: not an object, ``mode`` is not PULL/POP, or ``popShareQueueNum`` is
                not an integer.
        """
        if not isinstance(d, dict):
            raise ProtocolError("SetMessageRequestModeRequestBody is not a JSON object")
        return cls(
            topic=jj.as_str(d.get("topic")),
            consumer_group=jj.as_str(d.get("consumerGroup")),
            mode=_enum(MessageRequestMode, d.get("mode"), "mode", MessageRequestMode.PULL),
            pop_share_queue_num=_int(d.get("popShareQueueNum"), "popShareQueueNum"),
        )

    def encode(self) -> bytes:
        """Encode as JSON, e.g. ``{"consumerGroup":"G","mode":"POP","popShareQueueNum":0,"topic":"T"}``."""
        return jj.dumps(self.to_obj())

    @classmethod
    def decode(cls, data: bytes | memoryview | str) -> SetMessageRequestModeRequestBody:
        """Decode.

        Raises:
            ProtocolError: not a JSON object, or a bad ``mode``.
        """
        return cls.from_obj(_obj(data, "SetMessageRequestModeRequestBody"))


@dataclass(slots=True)
class MessageRequestModeSerializeWrapper:
    """GET_ALL_MESSAGE_REQUEST_MODE (402) body = ``MessageRequestModeManager.encode()``.

    Attributes:
        message_request_mode_map: topic → consumer group → its request mode.
    """

    message_request_mode_map: dict[str, dict[str, SetMessageRequestModeRequestBody]] = field(default_factory=dict)

    def to_obj(self) -> dict[str, Any]:
        """``{"messageRequestModeMap": {topic: {group: body}}}`` (the map in insertion order)."""
        return {
            "messageRequestModeMap": {
                t: {g: b.to_obj() for g, b in groups.items()} for t, groups in self.message_request_mode_map.items()
            }
        }

    @classmethod
    def from_obj(cls, d: Any) -> MessageRequestModeSerializeWrapper:
        """Build from a parsed object; entries that are not objects are skipped.

        Raises:
            ProtocolError: an entry has a bad ``mode``.
        """
        out: dict[str, dict[str, SetMessageRequestModeRequestBody]] = {}
        for topic, groups in jj.as_dict(jj.as_dict(d).get("messageRequestModeMap")).items():
            if not isinstance(topic, str) or not isinstance(groups, dict):
                continue
            for group, body in groups.items():
                if isinstance(group, str) and isinstance(body, dict):
                    out.setdefault(topic, {})[group] = SetMessageRequestModeRequestBody.from_obj(body)
        return cls(out)

    def encode(self) -> bytes:
        """Encode as compact JSON (what Java answers GET_ALL_MESSAGE_REQUEST_MODE with)."""
        return jj.dumps(self.to_obj())

    @classmethod
    def decode(cls, data: bytes | memoryview | str) -> MessageRequestModeSerializeWrapper:
        """Decode.

        Raises:
            ProtocolError: not a JSON object, or a bad ``mode``.
        """
        return cls.from_obj(_obj(data, "MessageRequestModeSerializeWrapper"))


@dataclass(slots=True)
class QueryAssignmentRequestBody:
    """QUERY_ASSIGNMENT (400) request body (Java ``QueryAssignmentRequestBody``).

    Attributes:
        topic: the subscribed topic (or ``%RETRY%<group>``).
        consumer_group: the group.
        client_id: the asking client's id (``ip@instance``).
        strategy_name: allocate strategy name (``AVG``, ``AVG_BY_CIRCLE``, …).
        message_model: CLUSTERING or BROADCASTING; None when absent.
    """

    topic: str | None = None
    consumer_group: str | None = None
    client_id: str | None = None
    strategy_name: str | None = None
    message_model: MessageModel | None = None

    def to_obj(self) -> dict[str, Any]:
        """The fastjson bean form (sorted property names; null properties omitted)."""
        d: dict[str, Any] = {
            "clientId": self.client_id,
            "consumerGroup": self.consumer_group,
            "messageModel": None if self.message_model is None else self.message_model.value,
            "strategyName": self.strategy_name,
            "topic": self.topic,
        }
        return {k: v for k, v in d.items() if v is not None}

    def encode(self) -> bytes:
        """Encode as JSON."""
        return jj.dumps(self.to_obj())

    @classmethod
    def decode(cls, data: bytes | memoryview | str) -> QueryAssignmentRequestBody:
        """Decode.

        Raises:
            ProtocolError: not a JSON object, or an unknown ``messageModel``.
        """
        d = _obj(data, "QueryAssignmentRequestBody")
        return cls(
            topic=jj.as_str(d.get("topic")),
            consumer_group=jj.as_str(d.get("consumerGroup")),
            client_id=jj.as_str(d.get("clientId")),
            strategy_name=jj.as_str(d.get("strategyName")),
            message_model=_enum(MessageModel, d.get("messageModel"), "messageModel", None),
        )


@dataclass(frozen=True, slots=True)
class MessageQueueAssignment:
    """One assigned queue (Java ``MessageQueueAssignment``).

    Attributes:
        message_queue: the queue; queue id -1 in POP mode means "any queue of this broker".
        mode: how to read it (PULL or POP).
        attachments: optional string map (None when absent).
    """

    message_queue: MessageQueue
    mode: MessageRequestMode = MessageRequestMode.PULL
    attachments: dict[str, str] | None = field(default=None, compare=False, hash=False)

    def to_obj(self) -> dict[str, Any]:
        """The fastjson bean form."""
        d: dict[str, Any] = {}
        if self.attachments is not None:
            d["attachments"] = dict(sorted(self.attachments.items()))
        d["messageQueue"] = self.message_queue.to_json()
        d["mode"] = self.mode.value
        return d


@dataclass(slots=True)
class QueryAssignmentResponseBody:
    """QUERY_ASSIGNMENT (400) response body (Java ``QueryAssignmentResponseBody``).

    Attributes:
        message_queue_assignments: the assigned queues; None (JSON ``{}``) means "no valid
            result, keep the current assignment" (unknown topic, strategy or group); an empty
            list means "release everything".
    """

    message_queue_assignments: list[MessageQueueAssignment] | None = None

    def encode(self) -> bytes:
        """Encode as JSON; assignments written in queue order (Java writes its HashSet's order)."""
        if self.message_queue_assignments is None:
            return b"{}"
        items = sorted(self.message_queue_assignments, key=lambda a: a.message_queue)
        return jj.dumps({"messageQueueAssignments": [a.to_obj() for a in items]})

    @classmethod
    def decode(cls, data: bytes | memoryview | str) -> QueryAssignmentResponseBody:
        """Decode; entries without a valid ``messageQueue`` are skipped.

        Raises:
            ProtocolError: not a JSON object, or an entry with a bad ``mode``.
        """
        d = _obj(data, "QueryAssignmentResponseBody")
        raw = d.get("messageQueueAssignments")
        if raw is None:
            return cls(None)
        out: list[MessageQueueAssignment] = []
        for x in jj.as_list(raw):
            if not isinstance(x, dict):
                continue
            mq = jj.message_queue_from(x.get("messageQueue"))
            if mq is None:
                continue
            att = x.get("attachments")
            attachments = {str(k): str(v) for k, v in att.items()} if isinstance(att, dict) else None
            out.append(
                MessageQueueAssignment(
                    mq, _enum(MessageRequestMode, x.get("mode"), "mode", MessageRequestMode.PULL), attachments
                )
            )
        return cls(out)
