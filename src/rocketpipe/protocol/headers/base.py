"""Typed command headers: one metadata-driven codec for all of them (L1, sans-IO).

A header is a frozen dataclass deriving from :class:`CommandHeader`; each field declares its
Java wire name with :func:`wire`. :meth:`CommandHeader.to_ext_fields` and
:meth:`CommandHeader.from_ext_fields` convert to and from the ``str -> str`` extFields map the
way ``RemotingCommand.makeCustomHeaderToNet`` / ``decodeCommandCustomHeader`` do:

* None values are not sent; ints as decimal; bools as ``true``/``false``;
* decoding parses ``Boolean.parseBoolean`` style (only case-insensitive ``"true"`` is true);
* a missing field marked ``required`` (``@CFNotNull``) raises :class:`~rocketpipe.errors.HeaderError`;
* an unparsable value is left at the field's default; unknown keys are ignored.

Request header classes set ``REQUEST_CODE`` and are registered in :data:`REQUEST_HEADERS`.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, ClassVar, TypeVar

from ...errors import HeaderError

T = TypeVar("T", bound="CommandHeader")

#: request code -> request header class
REQUEST_HEADERS: dict[int, type[CommandHeader]] = {}

_MISSING: Any = dataclasses.MISSING


def wire(name: str, default: Any = None, *, required: bool = False) -> Any:
    """Declare a header field with its Java wire name.

    Args:
        name: the exact extFields key (the Java field name, e.g. ``consumerGroup``).
        default: the value when absent (None = not sent).
        required: True for ``@CFNotNull`` fields: decoding fails when the key is missing.
    """
    return dataclasses.field(default=default, metadata={"wire": name, "required": required})


def _parse_bool(s: str) -> bool:
    return s.lower() == "true"


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


class CommandHeader:
    """Base of typed headers. Subclasses are frozen dataclasses built with :func:`wire` fields."""

    REQUEST_CODE: ClassVar[int | None] = None
    _specs: ClassVar[tuple[_FieldSpec, ...] | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        code = cls.__dict__.get("REQUEST_CODE")
        if code is not None:
            REQUEST_HEADERS[int(code)] = cls
        cls._specs = None

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

    def to_ext_fields(self) -> dict[str, str]:
        """Return the extFields map of this header (None fields omitted)."""
        out: dict[str, str] = {}
        for spec in self._field_specs():
            v = getattr(self, spec.attr)
            if v is None:
                continue
            if isinstance(v, bool):
                out[spec.wire] = "true" if v else "false"
            elif isinstance(v, int):
                out[spec.wire] = str(int(v))
            else:
                out[spec.wire] = str(v)
        return out

    @classmethod
    def from_ext_fields(cls: type[T], ext: dict[str, str]) -> T:
        """Build the header from an extFields map.

        Raises:
            HeaderError: a required field is missing.
        """
        kwargs: dict[str, Any] = {}
        for spec in cls._field_specs():
            raw = ext.get(spec.wire)
            if raw is None:
                if spec.required:
                    raise HeaderError(
                        f"the custom field <{spec.wire}> is null ({cls.__name__})"
                    )
                continue
            kind = spec.kind
            try:
                if kind is str:
                    kwargs[spec.attr] = raw
                elif kind is bool:
                    kwargs[spec.attr] = _parse_bool(raw)
                elif kind is int:
                    kwargs[spec.attr] = int(raw.strip())
                else:
                    kwargs[spec.attr] = float(raw)
            except ValueError:
                if spec.required:
                    raise HeaderError(f"the custom field <{spec.wire}> is not a number: {raw!r}") from None
        return cls(**kwargs)
