"""Per-(topic, group) SQL92 filter data registered by heartbeats (``ConsumerFilterManager``),
and a cheap reader of a stored record's properties for ``isMatchedByCommitLog``.

Registration mirrors ``ConsumerFilterManager.register`` / ``FilterDataMapByTopic.register``
(5.x): TAG subscriptions and empty expressions are skipped; a new entry is kept only when it
compiles; an existing entry is replaced only by a larger ``clientVersion`` (= the
subscription's ``subVersion``), and is dropped when that newer expression does not compile
("let client report error": pulls then answer FILTER_DATA_NOT_EXIST). Topics the group no
longer lists are marked dead (kept, as in Java). The bloom-filter / consume-queue-ext part is
not implemented (it is off by default in Java and only an optimisation).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass

from ...protocol import sysflag as sf
from ...protocol.message import string_to_properties
from .sql92 import Sql92Expression, SQL92ParseError, compile_sql92

__all__ = ["ConsumerFilterData", "ConsumerFilterManager", "build_filter_data", "compile_filter", "record_properties"]

EXPRESSION_TYPE_SQL92 = "SQL92"

_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_BORN_HOST_POS = 48
_REC_MIN = _BORN_HOST_POS + 8 + 8 + 8 + 16  # IPv4 hosts, store ts, reconsume/prepared/body len


def is_tag_type(expression_type: str | None) -> bool:
    """``ExpressionType.isTagType``: null, empty or ``TAG``."""
    return not expression_type or expression_type == "TAG"


def compile_filter(expression_type: str, expression: str | None) -> Sql92Expression:
    """Compile a non-TAG expression (``FilterFactory.get(type).compile``).

    Raises:
        SQL92ParseError: unknown type, empty or invalid expression.
    """
    if expression_type != EXPRESSION_TYPE_SQL92:
        raise SQL92ParseError(f"Invalid MessageSelector. filter type {expression_type!r} is not supported")
    if not expression:
        raise SQL92ParseError(f"Expression can't be null! {expression_type}")
    return compile_sql92(expression)


@dataclass(slots=True)
class ConsumerFilterData:
    """Compiled filter of one group on one topic (Java ``ConsumerFilterData``, no bloom data)."""

    topic: str
    consumer_group: str
    expression: str
    expression_type: str
    client_version: int
    compiled: Sql92Expression
    born_time: int = 0
    dead_time: int = 0

    @property
    def is_dead(self) -> bool:
        """``deadTime >= bornTime`` with a non-zero dead time."""
        return self.dead_time != 0 and self.dead_time >= self.born_time


def build_filter_data(
    topic: str, group: str, expression: str | None, expression_type: str | None, client_version: int, now_ms: int = 0
) -> ConsumerFilterData | None:
    """``ConsumerFilterManager.build``: None for TAG types and for expressions that do not compile."""
    if is_tag_type(expression_type):
        return None
    try:
        compiled = compile_filter(expression_type or "", expression)
    except SQL92ParseError:
        return None
    return ConsumerFilterData(topic, group, expression or "", expression_type or "", client_version, compiled, now_ms)


class ConsumerFilterManager:
    """Registry of SQL92 filter data keyed by (topic, group); in memory only."""

    def __init__(self) -> None:
        self._data: dict[tuple[str, str], ConsumerFilterData] = {}

    def get(self, topic: str, group: str) -> ConsumerFilterData | None:
        """The filter data of ``group`` on ``topic`` (dead entries included, as in Java)."""
        return self._data.get((topic, group))

    def register(self, group: str, subscriptions: Iterable[object], now_ms: int = 0) -> None:
        """Register every subscription of a heartbeat's ConsumerData; mark dropped topics dead."""
        topics: set[str] = set()
        for sd in subscriptions:
            topic = getattr(sd, "topic", "")
            topics.add(topic)
            self.register_one(
                topic,
                group,
                getattr(sd, "sub_string", None),
                getattr(sd, "expression_type", None),
                int(getattr(sd, "sub_version", 0) or 0),
                now_ms,
            )
        for (topic, g), fd in self._data.items():
            if g == group and topic not in topics and not fd.is_dead:
                fd.dead_time = max(now_ms, fd.born_time)

    def register_one(
        self,
        topic: str,
        group: str,
        expression: str | None,
        expression_type: str | None,
        client_version: int,
        now_ms: int = 0,
    ) -> bool:
        """``FilterDataMapByTopic.register``; True when the entry was added, replaced or refreshed."""
        if is_tag_type(expression_type) or not expression:
            return False
        key = (topic, group)
        old = self._data.get(key)
        if old is None:
            fd = build_filter_data(topic, group, expression, expression_type, client_version, now_ms)
            if fd is None:
                return False
            self._data[key] = fd
            return True
        if client_version <= old.client_version:
            if client_version == old.client_version and old.is_dead:
                old.dead_time = 0
                return True
            return False
        if old.expression != expression or old.expression_type != expression_type:
            fd = build_filter_data(topic, group, expression, expression_type, client_version, now_ms)
            if fd is None:
                del self._data[key]
                return False
            self._data[key] = fd
            return True
        old.client_version = client_version
        old.dead_time = 0
        return True

    def unregister(self, group: str, now_ms: int = 0) -> None:
        """Mark every entry of ``group`` dead (the group has no channel left)."""
        for (_, g), fd in self._data.items():
            if g == group and not fd.is_dead:
                fd.dead_time = max(now_ms, fd.born_time)


def record_properties(buf: bytes | memoryview) -> dict[str, str]:
    """The property map of one stored record, without decoding the rest (``decodeProperties``).

    Returns an empty map for a record too short or malformed to hold properties (Java would
    evaluate against null, which for SQL92 means "no property matches").
    """
    try:
        n = len(buf)
        if n < _REC_MIN:
            return {}
        (total,) = _I32.unpack_from(buf, 0)
        (magic,) = _I32.unpack_from(buf, 4)
        (sys_flag,) = _I32.unpack_from(buf, 36)
        end = min(total, n)
        p = _BORN_HOST_POS
        p += 20 if sys_flag & sf.BORNHOST_V6_FLAG else 8
        p += 8  # store timestamp
        p += 20 if sys_flag & sf.STOREHOST_V6_FLAG else 8
        p += 4 + 8  # reconsume times, prepared transaction offset
        (blen,) = _I32.unpack_from(buf, p)
        p += 4 + blen
        if magic == sf.MAGIC_V2:
            (tlen,) = _I16.unpack_from(buf, p)
            p += 2 + tlen
        else:
            p += 1 + buf[p]
        (plen,) = _I16.unpack_from(buf, p)
        p += 2
        if blen < 0 or plen <= 0 or p + plen > end:
            return {}
        return string_to_properties(str(buf[p : p + plen], "utf-8"))
    except (struct.error, IndexError, UnicodeDecodeError, ValueError):
        return {}


def record_queue_offset(buf: bytes | memoryview) -> int:
    """QUEUEOFFSET field of a stored record (bytes 20..28)."""
    offset: int = struct.unpack_from(">q", buf, 20)[0]
    return offset
