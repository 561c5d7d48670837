"""Topic attributes of Apache RocketMQ 5.x (L1, pure): the ``+key=value,-key`` modification
string, the supported keys and the create / update rules.

Mirrors 5.3.3's ``common/attribute``: ``AttributeParser`` (:func:`parse_to_map`,
:func:`parse_to_string`), ``AttributeUtil.alterCurrentAttributes``
(:func:`alter_current_attributes`), ``EnumAttribute`` / ``LongRangeAttribute``,
``TopicAttributes.ALL`` (:data:`TOPIC_ATTRIBUTES`) and ``TopicMessageType``. Every refusal
raises :class:`TopicAttributeError` whose message is the Java ``RuntimeException`` message; the
broker answers it as Java's ``AdminBrokerProcessor.updateAndCreateTopic`` does (SYSTEM_ERROR,
remark = the message). Imports nothing from rocketpipe.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

__all__ = [
    "CLEANUP_POLICY_ATTRIBUTE",
    "QUEUE_TYPE_ATTRIBUTE",
    "TOPIC_ATTRIBUTES",
    "TOPIC_MESSAGE_TYPE_ATTRIBUTE",
    "TOPIC_RESERVE_TIME_ATTRIBUTE",
    "EnumAttribute",
    "LongRangeAttribute",
    "TopicAttributeError",
    "TopicMessageType",
    "alter_current_attributes",
    "parse_to_map",
    "parse_to_string",
    "topic_message_type",
]

#: AttributeParser.ATTR_ARRAY_SEPARATOR_COMMA / ATTR_KEY_VALUE_EQUAL_SIGN / ATTR_ADD_PLUS_SIGN /
#: ATTR_DELETE_MINUS_SIGN
ATTR_ARRAY_SEPARATOR_COMMA: Final = ","
ATTR_KEY_VALUE_EQUAL_SIGN: Final = "="
ATTR_ADD_PLUS_SIGN: Final = "+"
ATTR_DELETE_MINUS_SIGN: Final = "-"

_JAVA_LONG_MIN: Final = -(2**63)
_JAVA_LONG_MAX: Final = 2**63 - 1
_JAVA_LONG = re.compile(r"[+-]?[0-9]+")


class TopicAttributeError(ValueError):
    """A refused attribute modification; ``str(exc)`` is the Java exception message."""


class TopicMessageType(StrEnum):
    """``TopicMessageType``: the ``message.type`` values (the enum name is the value)."""

    UNSPECIFIED = "UNSPECIFIED"
    NORMAL = "NORMAL"
    FIFO = "FIFO"
    DELAY = "DELAY"
    TRANSACTION = "TRANSACTION"
    MIXED = "MIXED"


@dataclass(frozen=True, slots=True)
class EnumAttribute:
    """``EnumAttribute``: a value out of a fixed set.

    Attributes:
        name: the key (``message.type`` …).
        changeable: may be added / changed / removed after the topic exists.
        universe: the allowed values, in the order Java's ``HashSet`` prints them (the refusal
            message lists them that way).
        default_value: Java's default (informational: an unset key stays unset).
    """

    name: str
    changeable: bool
    universe: tuple[str, ...]
    default_value: str

    def verify(self, value: str) -> None:
        """Raise :class:`TopicAttributeError` ``value is not in set: [...]`` for a value outside the set."""
        if value not in self.universe:
            raise TopicAttributeError(f"value is not in set: [{', '.join(self.universe)}]")


@dataclass(frozen=True, slots=True)
class LongRangeAttribute:
    """``LongRangeAttribute``: a Java ``long`` within ``[min, max]``.

    Attributes:
        name: the key (``reserve.time``).
        changeable: may be added / changed / removed after the topic exists.
        min, max: inclusive bounds.
        default_value: Java's default.
    """

    name: str
    changeable: bool
    min: int
    max: int
    default_value: int

    def verify(self, value: str) -> None:
        """Parse ``value`` as ``Long.parseLong`` does and check the range.

        Raises:
            TopicAttributeError: ``For input string: "v"`` (not a long) or
                ``value is not in range(min, max)``.
        """
        if not _JAVA_LONG.fullmatch(value) or not _JAVA_LONG_MIN <= int(value) <= _JAVA_LONG_MAX:
            raise TopicAttributeError(f'For input string: "{value}"')
        if not self.min <= int(value) <= self.max:
            raise TopicAttributeError(f"value is not in range({self.min}, {self.max})")


Attribute = EnumAttribute | LongRangeAttribute

#: TopicAttributes.QUEUE_TYPE_ATTRIBUTE (default SimpleCQ, fixed at creation)
QUEUE_TYPE_ATTRIBUTE: Final = EnumAttribute("queue.type", False, ("SimpleCQ", "BatchCQ"), "SimpleCQ")
#: TopicAttributes.CLEANUP_POLICY_ATTRIBUTE (default DELETE, fixed at creation)
CLEANUP_POLICY_ATTRIBUTE: Final = EnumAttribute("cleanup.policy", False, ("DELETE", "COMPACTION"), "DELETE")
#: TopicAttributes.TOPIC_MESSAGE_TYPE_ATTRIBUTE (default NORMAL, changeable)
TOPIC_MESSAGE_TYPE_ATTRIBUTE: Final = EnumAttribute(
    "message.type",
    True,
    ("UNSPECIFIED", "TRANSACTION", "FIFO", "MIXED", "DELAY", "NORMAL"),
    TopicMessageType.NORMAL.value,
)
#: TopicAttributes.TOPIC_RESERVE_TIME_ATTRIBUTE (hours kept in tiered storage; -1 = default)
TOPIC_RESERVE_TIME_ATTRIBUTE: Final = LongRangeAttribute("reserve.time", True, -1, _JAVA_LONG_MAX, -1)
#: TopicAttributes.ALL: key → attribute
TOPIC_ATTRIBUTES: Final[Mapping[str, Attribute]] = {
    a.name: a
    for a in (
        QUEUE_TYPE_ATTRIBUTE,
        CLEANUP_POLICY_ATTRIBUTE,
        TOPIC_MESSAGE_TYPE_ATTRIBUTE,
        TOPIC_RESERVE_TIME_ATTRIBUTE,
    )
}


def _java_split(text: str, sep: str) -> list[str]:
    """``String.split`` with a one-character literal: trailing empty strings are dropped."""
    parts = text.split(sep)
    while parts and parts[-1] == "" and len(parts) > 1:
        parts.pop()
    if parts == [""] and text:
        return []
    return parts


def _index(parts: list[str], i: int) -> str:
    if i >= len(parts):
        raise TopicAttributeError(f"Index {i} out of bounds for length {len(parts)}")
    return parts[i]


def parse_to_map(modification: str | None) -> dict[str, str]:
    """``AttributeParser.parseToMap``: ``"+k1=v1,-k2"`` → ``{"+k1": "v1", "-k2": ""}`` (keys keep
    their sign). None or ``""`` gives ``{}``.

    Raises:
        TopicAttributeError: ``add/alter attribute format is wrong: <key>`` (a ``k=v`` whose key
            has no ``+``), ``delete attribute format is wrong: <key>`` (a bare key without ``-``),
            ``key duplication: <key>``, or Java's index message for ``+k=`` (no value).
    """
    if not modification:
        return {}
    attributes: dict[str, str] = {}
    for kv in _java_split(modification, ATTR_ARRAY_SEPARATOR_COMMA):
        if ATTR_KEY_VALUE_EQUAL_SIGN in kv:
            splits = _java_split(kv, ATTR_KEY_VALUE_EQUAL_SIGN)
            key, value = _index(splits, 0), _index(splits, 1)
            if ATTR_ADD_PLUS_SIGN not in key:
                raise TopicAttributeError(f"add/alter attribute format is wrong: {key}")
        else:
            key, value = kv, ""
            if ATTR_DELETE_MINUS_SIGN not in key:
                raise TopicAttributeError(f"delete attribute format is wrong: {key}")
        if key in attributes:
            raise TopicAttributeError(f"key duplication: {key}")
        attributes[key] = value
    return attributes


def parse_to_string(attributes: Mapping[str, str] | None) -> str:
    """``AttributeParser.parseToString``: ``{"k": "v", "d": ""}`` → ``"k=v,d"`` (no signs added)."""
    if not attributes:
        return ""
    return ATTR_ARRAY_SEPARATOR_COMMA.join(
        k if not v else f"{k}{ATTR_KEY_VALUE_EQUAL_SIGN}{v}" for k, v in attributes.items()
    )


def _validate_key(real_key: str) -> None:
    if not real_key or ATTR_ADD_PLUS_SIGN in real_key or ATTR_DELETE_MINUS_SIGN in real_key:
        raise TopicAttributeError("kv string format wrong.")


def _validate_alter(supported: Mapping[str, Attribute], alter: Mapping[str, str], *, init: bool, delete: bool) -> None:
    for key, value in alter.items():
        attribute = supported.get(key)
        if attribute is None:
            raise TopicAttributeError(f"unsupported key: {key}")
        if not init and not attribute.changeable:
            raise TopicAttributeError(f"attempt to update an unchangeable attribute. key: {key}")
        if not delete:
            attribute.verify(value)


def alter_current_attributes(
    create: bool,
    supported: Mapping[str, Attribute],
    current: Mapping[str, str],
    requested: Mapping[str, str],
) -> dict[str, str]:
    """``AttributeUtil.alterCurrentAttributes``: apply ``requested`` (the signed map of
    :func:`parse_to_map`) to ``current`` and return the new attributes (unsigned keys).

    On ``create`` only ``+key`` is allowed and unchangeable keys may be set; on update ``+key``
    adds or changes a changeable key and ``-key`` removes an existing changeable key. Every value
    set is verified by its attribute. Nothing is changed on error. Faults are reported in the
    order Java finds them (keys in request order, then all unsupported / unchangeable / bad-value
    checks of the new keys, the changed ones, the removed ones); Java walks hash maps, so with
    several faults it may name another one first.

    Raises:
        TopicAttributeError: ``kv string format wrong.``, ``alter duplication key. key: k``,
            ``only add attribute is supported while creating topic. key: k``,
            ``attempt to delete a nonexistent key: k``, ``wrong format key: k``,
            ``unsupported key: k``, ``attempt to update an unchangeable attribute. key: k`` or the
            attribute's value refusal.
    """
    init: dict[str, str] = {}
    add: dict[str, str] = {}
    update: dict[str, str] = {}
    delete: dict[str, str] = {}
    seen: set[str] = set()
    for key, value in requested.items():
        real_key = key[1:]
        _validate_key(real_key)
        if real_key in seen:
            raise TopicAttributeError(f"alter duplication key. key: {real_key}")
        seen.add(real_key)
        if create:
            if not key.startswith(ATTR_ADD_PLUS_SIGN):
                raise TopicAttributeError(f"only add attribute is supported while creating topic. key: {real_key}")
            init[real_key] = value
        elif key.startswith(ATTR_ADD_PLUS_SIGN):
            (update if real_key in current else add)[real_key] = value
        elif key.startswith(ATTR_DELETE_MINUS_SIGN):
            if real_key not in current:
                raise TopicAttributeError(f"attempt to delete a nonexistent key: {real_key}")
            delete[real_key] = value
        else:
            raise TopicAttributeError(f"wrong format key: {real_key}")
    _validate_alter(supported, init, init=True, delete=False)
    _validate_alter(supported, add, init=False, delete=False)
    _validate_alter(supported, update, init=False, delete=False)
    _validate_alter(supported, delete, init=False, delete=True)
    final = {**current, **init, **add, **update}
    for key in delete:
        final.pop(key, None)
    return final


def topic_message_type(attributes: Mapping[str, str] | None) -> TopicMessageType:
    """``TopicConfig.getTopicMessageType``: the ``message.type`` attribute, NORMAL when unset.

    Raises:
        ValueError: a value that is no ``TopicMessageType`` name (Java's ``valueOf``; case-sensitive).
    """
    value = (attributes or {}).get(TOPIC_MESSAGE_TYPE_ATTRIBUTE.name)
    return TopicMessageType.NORMAL if value is None else TopicMessageType(value)
