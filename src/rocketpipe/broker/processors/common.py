"""Helpers shared by the broker processors (L3): error responses and header decoding."""

from __future__ import annotations

from typing import TypeVar

from ...errors import HeaderError
from ...protocol.codes import ResponseCode
from ...protocol.command import RemotingCommand
from ...protocol.headers.base import CommandHeader

H = TypeVar("H", bound=CommandHeader)


def decode_header(cls: type[H], cmd: RemotingCommand) -> H:
    """Decode ``cmd``'s extFields into ``cls``.

    Raises:
        HeaderError: a required field is missing or unparsable (answered SYSTEM_ERROR).
    """
    return cls.from_ext_fields(cmd.ext_fields or {})


def error(cmd: RemotingCommand, code: ResponseCode | int, remark: str) -> RemotingCommand:
    """Return an error response to ``cmd``."""
    return cmd.response(int(code), remark)


def require(value: object, name: str) -> None:
    """Raise :class:`HeaderError` when a header value is None.

    Raises:
        HeaderError: ``value`` is None.
    """
    if value is None:
        raise HeaderError(f"the custom field <{name}> is null")
