"""Typed command headers: one metadata-driven codec for all of them (L1, sans-IO).

A header is a frozen dataclass deriving from :class:`CommandHeader`; each field declares its
Java wire name with :func:`wire`. :meth:`CommandHeader.to_ext_fields` and
:meth:`CommandHeader.from_ext_fields` convert to and from the ``str -> str`` extFields map the
way ``RemotingCommand.makeCustomHeaderToNet`` / ``decodeCommandCustomHeader`` do:

* None values are not sent; ints as decimal; bools as ``true``/``false``;
* decoding parses ``Boolean.parseBoolean`` style (only case-insensitive ``"true"`` is true);
* a missing field marked ``required`` (``@CFNotNull``) raises :class:`~rocketpipe.errors.HeaderError`;
* an unparsable optional number is left at the field's default (Java logs it), an unparsable
  required one raises :class:`~rocketpipe.errors.HeaderError`; unknown keys are ignored.

Both directions are compiled once per class into straight-line functions (hot path: every send
and pull decodes one header).

Request header classes set ``REQUEST_CODE`` and are registered in :data:`REQUEST_HEADERS`.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, ClassVar, TypeVar

from ...errors import HeaderError

T = TypeVar("T", bound="CommandHeader")

#: request code -> request header class
REQUEST_HEADERS: dict[int, type[CommandHeader]] = {}


def wire(name: str, default: Any = None, *, required: bool = False) -> Any:
    """Declare a header field with its Java wire name.

    Args:
        name: the exact extFields key (the Java field name, e.g. ``consumerGroup``).
        default: the value when absent (None = not sent).
        required: True for ``@CFNotNull`` fields: decoding fails when the key is missing.
    """
    return dataclasses.field(default=default, metadata={"wire": name, "required": required})


class _FieldSpec(typing.NamedTuple):
    attr: str
    wire: str
    required: bool
    kind: type  # int, bool, str or float


def _kind_of(tp: Any) -> type:
    args = typing.get_args(tp)
    if args:  # Optional[X] / X | None
        tp = next(a for a in args if a is not type(None))
    if tp in (int, bool, str, float):
        return tp  # type: ignore[no-any-return]
    if isinstance(tp, type) and issubclass(tp, int):
        return int
    return str


def _format(v: Any) -> str:
    """Wire text of a value whose type differs from the declared kind (Java ``toString``)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(int(v))
    return str(v)


def _missing(cls: type, wire_name: str) -> HeaderError:
    return HeaderError(f"the custom field <{wire_name}> is null ({cls.__name__})")


def _not_a_number(cls: type, wire_name: str, raw: str) -> HeaderError:
    return HeaderError(f"the custom field <{wire_name}> is not a number: {raw!r} ({cls.__name__})")


def _compile_codec(cls: type, specs: tuple[_FieldSpec, ...]) -> tuple[Any, Any]:
    """Generate straight-line ``to_ext_fields`` / ``from_ext_fields`` bodies for one class
    (the technique ``dataclasses`` itself uses): no per-field dispatch at run time."""
    to_lines = ["def to_ext(self):", " out = {}"]
    for sp in specs:
        w = repr(sp.wire)
        to_lines.append(f" v = self.{sp.attr}")
        to_lines.append(" if v is not None:")
        if sp.kind is str:
            to_lines.append(f"  out[{w}] = v if type(v) is str else _format(v)")
        elif sp.kind is bool:
            to_lines.append(f"  out[{w}] = ('true' if v else 'false') if type(v) is bool else _format(v)")
        elif sp.kind is int:
            to_lines.append(f"  out[{w}] = str(v) if type(v) is int else _format(v)")
        else:
            to_lines.append(f"  out[{w}] = _format(v)")
    to_lines.append(" return out")
    ns: dict[str, Any] = {"_format": _format, "_missing": _missing, "_not_a_number": _not_a_number}
    from_lines = _direct_from_ext(cls, specs, ns) or _keyword_from_ext(specs)
    exec("\n".join(to_lines) + "\n\n" + "\n".join(from_lines), ns)
    return ns["to_ext"], ns["from_ext"]


def _decode_lines(sp: _FieldSpec, store: str, absent: str) -> list[str]:
    """Lines of a generated ``from_ext`` reading field ``sp``: ``store`` formats the statement
    that keeps a value, ``absent`` is the statement for a missing optional field (or None)."""
    w = repr(sp.wire)
    lines = [f" raw = get({w})", " if raw is None:"]
    lines.append(f"  {'raise _missing(cls, ' + w + ')' if sp.required else absent}")
    if sp.kind is str:
        lines.append(f" else: {store.format('raw')}")
    elif sp.kind is bool:
        lines.append(f" else: {store.format('raw.lower() == ' + repr('true'))}")
    else:
        conv = "int" if sp.kind is int else "float"
        lines.append(" else:")
        lines.append(f"  try: {store.format(conv + '(raw)')}")
        lines.append("  except ValueError:")
        lines.append(f"   {'raise _not_a_number(cls, ' + w + ', raw) from None' if sp.required else absent}")
    return lines


def _keyword_from_ext(specs: tuple[_FieldSpec, ...]) -> list[str]:
    """``from_ext`` that collects the present fields and calls ``cls(**kw)``."""
    lines = ["def from_ext(cls, ext):", " kw = {}", " get = ext.get"]
    for sp in specs:
        lines += _decode_lines(sp, f"kw[{sp.attr!r}] = {{}}", "pass")
    return [*lines, " return cls(**kw)"]


def _direct_from_ext(cls: type, specs: tuple[_FieldSpec, ...], ns: dict[str, Any]) -> list[str] | None:
    """``from_ext`` that makes the instance with ``object.__new__`` and sets every slot through
    its descriptor: what the frozen dataclass ``__init__`` does, without a keyword dict and one
    ``object.__setattr__`` call per field (a pull's header decodes in half the time).

    None (use :func:`_keyword_from_ext`) unless every field is a slot with a plain default and
    the class runs no ``__post_init__``.
    """
    if hasattr(cls, "__post_init__"):
        return None
    by_attr = {sp.attr: sp for sp in specs}
    lines = ["def from_ext(cls, ext):", " get = ext.get", " obj = _new(cls)"]
    ns["_new"] = object.__new__
    for f in dataclasses.fields(cls):
        slot = getattr(cls, f.name, None)
        if not isinstance(slot, types.MemberDescriptorType) or f.default is dataclasses.MISSING:
            return None
        ns[f"_set_{f.name}"] = slot.__set__
        ns[f"_default_{f.name}"] = f.default
        keep_default = f"_set_{f.name}(obj, _default_{f.name})"
        sp = by_attr.get(f.name)
        if sp is None:
            lines.append(f" {keep_default}")
        else:
            lines += _decode_lines(sp, f"_set_{f.name}(obj, {{}})", keep_default)
    return [*lines, " return obj"]


class CommandHeader:
    """Base of typed headers. Subclasses are frozen dataclasses built with :func:`wire` fields.

    Mirrors Java ``CommandCustomHeader``. The codec is generated per class on first use.
    """

    __slots__ = ()

    REQUEST_CODE: ClassVar[int | None] = None
    _specs: ClassVar[tuple[_FieldSpec, ...] | None] = None
    _codec: ClassVar[tuple[Any, Any] | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        code = cls.__dict__.get("REQUEST_CODE")
        if code is not None:
            REQUEST_HEADERS[int(code)] = cls
        cls._specs = None
        cls._codec = None

    @classmethod
    def _field_specs(cls) -> tuple[_FieldSpec, ...]:
        specs = cls.__dict__.get("_specs")
        if specs is None:
            hints = typing.get_type_hints(cls)
            specs = tuple(
                _FieldSpec(f.name, f.metadata["wire"], f.metadata.get("required", False), _kind_of(hints[f.name]))
                for f in dataclasses.fields(cls)  # type: ignore[arg-type]
                if "wire" in f.metadata
            )
            cls._specs = specs
        return specs

    @classmethod
    def _get_codec(cls) -> tuple[Any, Any]:
        codec = cls.__dict__.get("_codec")
        if codec is None:
            codec = cls._codec = _compile_codec(cls, cls._field_specs())
        return codec

    def to_ext_fields(self) -> dict[str, str]:
        """Return the extFields map of this header (None fields omitted; ints as decimal,
        bools as ``true``/``false``)."""
        codec = type(self).__dict__.get("_codec") or type(self)._get_codec()
        return codec[0](self)  # type: ignore[no-any-return]

    @classmethod
    def from_ext_fields(cls: type[T], ext: dict[str, str]) -> T:
        """Build the header from an extFields map (unknown keys ignored; an unparsable optional
        number is left at its default; booleans parse like Java ``Boolean.parseBoolean``).

        Raises:
            HeaderError: a required (``@CFNotNull``) field is missing or not a number.
        """
        codec = cls.__dict__.get("_codec") or cls._get_codec()
        return codec[1](cls, ext)  # type: ignore[no-any-return]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RpcRequestHeader(CommandHeader):
    """5.x base-class ext fields of most request headers (Java ``RpcRequestHeader``).

    Attributes:
        ns: namespace.
        nsd: True when resource names already carry the namespace.
        bname: the broker name the request is meant for (Java 5.x clients always send it).
        oway: oneway hint.
    """

    ns: str | None = wire("ns")
    nsd: bool | None = wire("nsd")
    bname: str | None = wire("bname")
    oway: bool | None = wire("oway")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TopicRequestHeader(RpcRequestHeader):
    """Adds the logical-queue (static topic) flag ``lo`` (Java ``TopicRequestHeader``,
    also the base of ``TopicQueueRequestHeader``)."""

    lo: bool | None = wire("lo")
