"""fastjson quirks, quarantined (L1, sans-IO).

Java peers serialise bodies with fastjson 1.x (``RemotingSerializable.encode``), whose default
output is not always standard JSON (remoting-protocol.md §4):

* map keys of a non-String type are written with their own serializer: numbers bare
  (``{0:"10.0.0.1:10911"}``) and beans as object literals
  (``{{"brokerName":"b","queueId":0,"topic":"T"}:5}`` for ``Map<MessageQueue, …>``);
* with ``BrowserCompatible`` (standard route data) such keys are quoted instead.

:func:`loads` parses standard JSON with orjson and falls back to a small tolerant reader that also
accepts bare-number, bare-word and object/array member keys (object keys come back as
:class:`ObjectKey`, numbers as int/float). :func:`dumps` writes compact UTF-8 JSON where dict keys
may be ``str``, ``int`` (bare, or quoted with ``quote_non_string_keys=True``),
:class:`~rocketpipe.protocol.message.MessageQueue` or :class:`ObjectKey` (object literals, as
fastjson writes them). :func:`message_queue_map` reads every known shape of a
``Map<MessageQueue, V>``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import orjson

from ...errors import ProtocolError
from ..message import MessageQueue

__all__ = [
    "ObjectKey",
    "as_bool",
    "as_dict",
    "as_float",
    "as_int",
    "as_list",
    "as_str",
    "dumps",
    "loads",
    "message_queue_from",
    "message_queue_map",
]

V = TypeVar("V")


class ObjectKey(tuple):  # type: ignore[type-arg]
    """A JSON object used as a map key (fastjson bean key): a hashable tuple of sorted items."""

    __slots__ = ()

    @classmethod
    def of(cls, d: Mapping[str, Any]) -> ObjectKey:
        """Freeze a dict (nested dicts/lists are frozen too)."""
        return cls(sorted((str(k), _freeze(v)) for k, v in d.items()))

    def to_dict(self) -> dict[str, Any]:
        """Return the key as a plain dict."""
        return dict(self)


def _freeze(v: Any) -> Any:
    if isinstance(v, dict):
        return ObjectKey.of(v)
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    return v


# ---------------------------------------------------------------------------------------------
# Parsing

_WS = re.compile(r"[ \t\n\r]*")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_WORD = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_MAX_DEPTH = 200


class _Reader:
    __slots__ = ("depth", "i", "s")

    def __init__(self, s: str) -> None:
        self.s = s
        self.i = 0
        self.depth = 0

    def fail(self, what: str) -> ProtocolError:
        return ProtocolError(f"bad JSON body at {self.i}: {what}")

    def ws(self) -> None:
        self.i = _WS.match(self.s, self.i).end()  # type: ignore[union-attr]

    def value(self) -> Any:
        self.ws()
        s, i = self.s, self.i
        if i >= len(s):
            raise self.fail("unexpected end")
        c = s[i]
        if c == "{":
            return self.obj()
        if c == "[":
            return self.arr()
        if c == '"':
            return self.string()
        m = _NUMBER.match(s, i)
        if m:
            self.i = m.end()
            t = m.group()
            return float(t) if ("." in t or "e" in t or "E" in t) else int(t)
        m = _WORD.match(s, i)
        if m:
            self.i = m.end()
            w = m.group()
            if w == "true":
                return True
            if w == "false":
                return False
            if w == "null":
                return None
            raise self.fail(f"unexpected word {w!r}")
        raise self.fail(f"unexpected character {c!r}")

    def string(self) -> str:
        m = _STRING.match(self.s, self.i)
        if not m:
            raise self.fail("unterminated string")
        self.i = m.end()
        try:
            return orjson.loads(m.group())  # type: ignore[no-any-return]
        except orjson.JSONDecodeError:
            raise self.fail("bad string escape") from None

    def key(self) -> Any:
        self.ws()
        s, i = self.s, self.i
        if i < len(s) and s[i] not in '{["' and not _NUMBER.match(s, i):
            m = _WORD.match(s, i)
            if m and m.group() not in ("true", "false", "null"):
                # bare identifier key (tolerated, fastjson's parser accepts it too)
                self.i = m.end()
                return m.group()
        k = self.value()
        if isinstance(k, dict):
            return ObjectKey.of(k)
        if isinstance(k, list):
            return tuple(_freeze(x) for x in k)
        return k

    def enter(self) -> None:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise self.fail("nesting too deep")

    def obj(self) -> dict[Any, Any]:
        self.enter()
        self.i += 1
        out: dict[Any, Any] = {}
        self.ws()
        if self.s.startswith("}", self.i):
            self.i += 1
            self.depth -= 1
            return out
        while True:
            k = self.key()
            self.ws()
            if not self.s.startswith(":", self.i):
                raise self.fail("expected ':'")
            self.i += 1
            out[k] = self.value()
            self.ws()
            if self.s.startswith(",", self.i):
                self.i += 1
                continue
            if self.s.startswith("}", self.i):
                self.i += 1
                self.depth -= 1
                return out
            raise self.fail("expected ',' or '}'")

    def arr(self) -> list[Any]:
        self.enter()
        self.i += 1
        out: list[Any] = []
        self.ws()
        if self.s.startswith("]", self.i):
            self.i += 1
            self.depth -= 1
            return out
        while True:
            out.append(self.value())
            self.ws()
            if self.s.startswith(",", self.i):
                self.i += 1
                continue
            if self.s.startswith("]", self.i):
                self.i += 1
                self.depth -= 1
                return out
            raise self.fail("expected ',' or ']'")


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse a JSON body as written by fastjson (standard JSON or with non-string map keys).

    Raises:
        ProtocolError: the text is neither JSON nor fastjson's extended form, or not UTF-8.
    """
    if isinstance(data, memoryview):
        data = bytes(data)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    if isinstance(data, (bytes, bytearray)):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError:
            raise ProtocolError("JSON body is not UTF-8") from None
    else:
        text = data
    r = _Reader(text)
    v = r.value()
    r.ws()
    if r.i != len(text):
        raise r.fail("trailing data")
    return v


# ---------------------------------------------------------------------------------------------
# Writing


def _key(k: Any, quote: bool) -> str:
    if isinstance(k, str):
        return orjson.dumps(k).decode()
    if isinstance(k, bool):
        text = "true" if k else "false"
    elif isinstance(k, int):
        text = str(int(k))
    elif isinstance(k, float):
        text = orjson.dumps(k).decode()
    elif isinstance(k, MessageQueue):
        text = _enc(k.to_json(), quote)
    elif isinstance(k, ObjectKey):
        text = _enc(k.to_dict(), quote)
    elif isinstance(k, tuple):
        text = _enc(list(k), quote)
    else:
        raise TypeError(f"unsupported JSON map key {k!r}")
    return orjson.dumps(text).decode() if quote else text


def _enc(v: Any, quote: bool) -> str:
    if v is None or isinstance(v, (str, bool, int, float)):
        return orjson.dumps(v).decode()
    if isinstance(v, Mapping):
        return "{" + ",".join(f"{_key(k, quote)}:{_enc(x, quote)}" for k, x in v.items()) + "}"
    if isinstance(v, (set, frozenset)):
        try:
            items: Iterable[Any] = sorted(v)
        except TypeError:
            items = v
        return "[" + ",".join(_enc(x, quote) for x in items) + "]"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(_enc(x, quote) for x in v) + "]"
    if isinstance(v, MessageQueue):
        return _enc(v.to_json(), quote)
    if isinstance(v, ObjectKey):
        return _enc(v.to_dict(), quote)
    to_obj = getattr(v, "to_obj", None)
    if to_obj is not None:
        return _enc(to_obj(), quote)
    raise TypeError(f"cannot encode {type(v).__name__} as JSON")


def dumps(obj: Any, *, quote_non_string_keys: bool = False) -> bytes:
    """Encode ``obj`` as compact UTF-8 JSON the way fastjson does.

    Args:
        obj: dicts, lists/tuples, sets (written sorted), str/int/float/bool/None, MessageQueue,
            ObjectKey, or objects with a ``to_obj()`` method.
        quote_non_string_keys: False writes int keys bare and MessageQueue keys as object
            literals (fastjson default); True writes them as JSON strings (``BrowserCompatible``,
            i.e. standard JSON).

    Raises:
        TypeError: an unsupported value or key type.
    """
    return _enc(obj, quote_non_string_keys).encode()


# ---------------------------------------------------------------------------------------------
# Tolerant field readers for body decoders (missing/null/wrong type -> default)


def as_str(v: Any, default: str | None = None) -> str | None:
    """A string field (numbers/bools are stringified like Java would)."""
    if v is None:
        return default
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    return default


def as_int(v: Any, default: int = 0) -> int:
    """An int/long field; numeric strings accepted."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str):
        try:
            return int(v.strip())
        except ValueError:
            return default
    return default


def as_float(v: Any, default: float = 0.0) -> float:
    """A double field; numeric strings accepted."""
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return default
    return default


def as_bool(v: Any, default: bool = False) -> bool:
    """A boolean field; ``"true"`` (any case) strings accepted."""
    if isinstance(v, bool):
        return v
    if isinstance(v, str):
        return v.strip().lower() == "true"
    if isinstance(v, int):
        return v != 0
    return default


def as_dict(v: Any) -> dict[Any, Any]:
    """An object field (anything else reads as empty)."""
    return v if isinstance(v, dict) else {}


def as_list(v: Any) -> list[Any]:
    """An array field (anything else reads as empty)."""
    return v if isinstance(v, list) else []


def message_queue_from(k: Any) -> MessageQueue | None:
    """Read a MessageQueue from an object key, a dict, or a string holding its JSON/``toString``."""
    if isinstance(k, MessageQueue):
        return k
    d: Any = None
    if isinstance(k, ObjectKey):
        d = k.to_dict()
    elif isinstance(k, dict):
        d = k
    elif isinstance(k, str):
        s = k.strip()
        if s.startswith("{"):
            try:
                d = loads(s)
            except ProtocolError:
                return None
        elif s.startswith("MessageQueue [") and s.endswith("]"):
            parts = dict(p.strip().partition("=")[::2] for p in s[14:-1].split(","))
            d = {"topic": parts.get("topic"), "brokerName": parts.get("brokerName"), "queueId": parts.get("queueId")}
    if not isinstance(d, dict) or d.get("topic") is None or d.get("brokerName") is None:
        return None
    return MessageQueue(str(d["topic"]), str(d["brokerName"]), as_int(d.get("queueId"), 0))


def message_queue_map(v: Any, value: Callable[[Any], V]) -> dict[MessageQueue, V]:
    """Read a ``Map<MessageQueue, V>`` in any known shape.

    Accepts fastjson object-literal keys, string keys holding the MessageQueue JSON (standard
    JSON writers) and Gson's array of ``[key, value]`` pairs. Entries whose key is not a
    MessageQueue are skipped.

    Args:
        v: the parsed map value.
        value: converts one parsed value.
    """
    out: dict[MessageQueue, V] = {}
    if isinstance(v, dict):
        pairs: Iterable[Any] = v.items()
    elif isinstance(v, list):
        pairs = (p for p in v if isinstance(p, list) and len(p) == 2)
    else:
        return out
    for k, x in pairs:
        mq = message_queue_from(k)
        if mq is not None:
            out[mq] = value(x)
    return out
