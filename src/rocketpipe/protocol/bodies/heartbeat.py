"""HEART_BEAT bodies (L1, sans-IO): ``SubscriptionData``, ``ConsumerData``, ``ProducerData``,
``HeartbeatData``.

Mirrors ``remoting/protocol/heartbeat`` and ``filter/FilterAPI.buildSubscriptionData``. Enum
values (consume type, message model, consume-from-where) travel as their Java names.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Final

from ...errors import InvalidArgumentError
from ..message import java_string_hash
from . import javajson as jj

__all__ = [
    "EXPRESSION_TYPE_SQL92",
    "EXPRESSION_TYPE_TAG",
    "SUB_ALL",
    "ConsumerData",
    "HeartbeatData",
    "ProducerData",
    "SubscriptionData",
]

#: ``SubscriptionData.SUB_ALL``: the subscribe-everything expression.
SUB_ALL: Final = "*"
#: ``ExpressionType.TAG`` / ``ExpressionType.SQL92``.
EXPRESSION_TYPE_TAG: Final = "TAG"
EXPRESSION_TYPE_SQL92: Final = "SQL92"


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(slots=True)
class SubscriptionData:
    """One topic subscription of a consumer group (Java ``SubscriptionData``).

    Attributes:
        topic: topic.
        sub_string: the expression (``*`` = all).
        tags_set: TAG expressions: the trimmed tags.
        code_set: TAG expressions: Java ``String.hashCode`` of each tag.
        sub_version: creation time, ms (SUBSCRIPTION_NOT_LATEST compares it).
        expression_type: ``TAG`` or ``SQL92``.
        class_filter_mode: obsolete filter-server mode.
    """

    topic: str
    sub_string: str = SUB_ALL
    tags_set: set[str] = field(default_factory=set)
    code_set: set[int] = field(default_factory=set)
    sub_version: int = field(default_factory=_now_ms)
    expression_type: str = EXPRESSION_TYPE_TAG
    class_filter_mode: bool = False

    @classmethod
    def build(
        cls,
        topic: str,
        sub_string: str | None,
        expression_type: str | None = None,
        *,
        sub_version: int | None = None,
    ) -> SubscriptionData:
        """Build a subscription like ``FilterAPI.buildSubscriptionData``.

        Empty/None/``*`` become ``*`` with empty sets; otherwise the expression is split on
        ``||``, each tag trimmed, empty tags dropped, and each kept tag's Java hash added to
        :attr:`code_set`. A blank ``expression_type`` keeps ``TAG``. Other types (``SQL92``)
        keep the expression verbatim with empty tag sets (``FilterAPI.build``).

        Args:
            topic: topic.
            sub_string: expression, e.g. ``"a || b"``.
            expression_type: ``TAG`` (default) or ``SQL92``.
            sub_version: ms timestamp; default now.

        Raises:
            InvalidArgumentError: the expression is only ``||`` separators (Java: "subString split error").
                Also an empty non-TAG expression.
        """
        sd = cls(topic=topic, sub_string=sub_string or SUB_ALL)
        if sub_version is not None:
            sd.sub_version = sub_version
        if expression_type and expression_type.strip():
            sd.expression_type = expression_type
        if sd.expression_type != EXPRESSION_TYPE_TAG:
            # FilterAPI.build: non-TAG expressions are kept verbatim, no tag sets
            if not sub_string:
                raise InvalidArgumentError(f"Expression can't be null! {sd.expression_type}")
            sd.sub_string = sub_string
            return sd
        if not sub_string or sub_string == SUB_ALL:
            sd.sub_string = SUB_ALL
            return sd
        parts = sub_string.split("||")
        while parts and parts[-1] == "":  # Java String.split drops trailing empty strings
            parts.pop()
        if not parts:
            raise InvalidArgumentError(f"subscription expression {sub_string!r} has no tag")
        for p in parts:
            tag = p.strip()
            if tag:
                sd.tags_set.add(tag)
                sd.code_set.add(java_string_hash(tag))
        return sd

    @property
    def is_sub_all(self) -> bool:
        """True for the ``*`` (or empty) TAG subscription."""
        return self.expression_type == EXPRESSION_TYPE_TAG and self.sub_string in ("", SUB_ALL)

    def to_obj(self) -> dict[str, Any]:
        """The fastjson bean form (sets written sorted)."""
        return {
            "classFilterMode": self.class_filter_mode,
            "codeSet": sorted(self.code_set),
            "expressionType": self.expression_type,
            "subString": self.sub_string,
            "subVersion": self.sub_version,
            "tagsSet": sorted(self.tags_set),
            "topic": self.topic,
        }

    @classmethod
    def from_obj(cls, d: Any) -> SubscriptionData:
        """Build from a parsed bean."""
        d = jj.as_dict(d)
        return cls(
            topic=jj.as_str(d.get("topic"), "") or "",
            sub_string=jj.as_str(d.get("subString"), SUB_ALL) or "",
            tags_set={x for x in jj.as_list(d.get("tagsSet")) if isinstance(x, str)},
            code_set={jj.as_int(x) for x in jj.as_list(d.get("codeSet")) if isinstance(x, (int, str))},
            sub_version=jj.as_int(d.get("subVersion")),
            expression_type=jj.as_str(d.get("expressionType"), EXPRESSION_TYPE_TAG) or EXPRESSION_TYPE_TAG,
            class_filter_mode=jj.as_bool(d.get("classFilterMode")),
        )

    def encode(self) -> bytes:
        """Encode as JSON."""
        return jj.dumps(self.to_obj())

    @classmethod
    def decode(cls, data: bytes | memoryview | str) -> SubscriptionData:
        """Decode JSON.

        Raises:
            ProtocolError: the body is not JSON.
        """
        return cls.from_obj(jj.loads(data))


@dataclass(slots=True)
class ConsumerData:
    """A consumer group in a heartbeat (Java ``ConsumerData``).

    Attributes:
        group_name: consumer group.
        consume_type: ``CONSUME_ACTIVELY`` (pull/lite), ``CONSUME_PASSIVELY`` (push), ``CONSUME_POP``.
        message_model: ``CLUSTERING`` or ``BROADCASTING``.
        consume_from_where: e.g. ``CONSUME_FROM_LAST_OFFSET``.
        subscription_data_set: the group's subscriptions.
        unit_mode: unit mode.
    """

    group_name: str
    consume_type: str = "CONSUME_PASSIVELY"
    message_model: str = "CLUSTERING"
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"
    subscription_data_set: list[SubscriptionData] = field(default_factory=list)
    unit_mode: bool = False

    def to_obj(self) -> dict[str, Any]:
        """The fastjson bean form."""
        return {
            "consumeFromWhere": self.consume_from_where,
            "consumeType": self.consume_type,
            "groupName": self.group_name,
            "messageModel": self.message_model,
            "subscriptionDataSet": [s.to_obj() for s in self.subscription_data_set],
            "unitMode": self.unit_mode,
        }

    @classmethod
    def from_obj(cls, d: Any) -> ConsumerData:
        """Build from a parsed bean."""
        d = jj.as_dict(d)
        return cls(
            group_name=jj.as_str(d.get("groupName"), "") or "",
            consume_type=jj.as_str(d.get("consumeType"), "CONSUME_PASSIVELY") or "CONSUME_PASSIVELY",
            message_model=jj.as_str(d.get("messageModel"), "CLUSTERING") or "CLUSTERING",
            consume_from_where=jj.as_str(d.get("consumeFromWhere"), "CONSUME_FROM_LAST_OFFSET")
            or "CONSUME_FROM_LAST_OFFSET",
            subscription_data_set=[SubscriptionData.from_obj(x) for x in jj.as_list(d.get("subscriptionDataSet"))],
            unit_mode=jj.as_bool(d.get("unitMode")),
        )


@dataclass(slots=True)
class ProducerData:
    """A producer group in a heartbeat (Java ``ProducerData``).

    Attributes:
        group_name: producer group.
    """

    group_name: str

    def to_obj(self) -> dict[str, Any]:
        """The fastjson bean form."""
        return {"groupName": self.group_name}

    @classmethod
    def from_obj(cls, d: Any) -> ProducerData:
        """Build from a parsed bean."""
        return cls(jj.as_str(jj.as_dict(d).get("groupName"), "") or "")


@dataclass(slots=True)
class HeartbeatData:
    """HEART_BEAT request body (Java ``HeartbeatData``).

    Attributes:
        client_id: client id (wire ``clientID``).
        producer_data_set: producer groups of this client.
        consumer_data_set: consumer groups of this client.
        heartbeat_fingerprint: 5.1.3+ heartbeat-V2 fingerprint; 0 = V1 semantics.
        without_sub: 5.1.3+ subscriptions omitted (wire ``withoutSub``).
    """

    client_id: str
    producer_data_set: list[ProducerData] = field(default_factory=list)
    consumer_data_set: list[ConsumerData] = field(default_factory=list)
    heartbeat_fingerprint: int = 0
    without_sub: bool = False

    def to_obj(self) -> dict[str, Any]:
        """The fastjson bean form."""
        return {
            "clientID": self.client_id,
            "consumerDataSet": [c.to_obj() for c in self.consumer_data_set],
            "heartbeatFingerprint": self.heartbeat_fingerprint,
            "producerDataSet": [p.to_obj() for p in self.producer_data_set],
            "withoutSub": self.without_sub,
        }

    def encode(self) -> bytes:
        """Encode as JSON."""
        return jj.dumps(self.to_obj())

    @classmethod
    def from_obj(cls, d: Any) -> HeartbeatData:
        """Build from a parsed bean."""
        d = jj.as_dict(d)
        return cls(
            client_id=jj.as_str(d.get("clientID"), "") or "",
            producer_data_set=[ProducerData.from_obj(x) for x in jj.as_list(d.get("producerDataSet"))],
            consumer_data_set=[ConsumerData.from_obj(x) for x in jj.as_list(d.get("consumerDataSet"))],
            heartbeat_fingerprint=jj.as_int(d.get("heartbeatFingerprint")),
            without_sub=jj.as_bool(d.get("withoutSub")),
        )

    @classmethod
    def decode(cls, data: bytes | memoryview | str) -> HeartbeatData:
        """Decode JSON.

        Raises:
            ProtocolError: the body is not JSON.
        """
        return cls.from_obj(jj.loads(data))
