"""The remoting command value type (L1, sans-IO).

Mirrors ``RemotingCommand`` (remoting/protocol): code, language, version, opaque, flag, remark,
extFields and body. Header encodings live in :mod:`.header_json` and :mod:`.header_binary`;
framing in :mod:`.frame`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace

from .codes import CURRENT_VERSION, FLAG_ONEWAY, FLAG_RESPONSE, LanguageCode, SerializeType

_opaque_counter = itertools.count(1)


def next_opaque() -> int:
    """Return a fresh request id (process-wide counter, wraps at 2**31)."""
    return next(_opaque_counter) & 0x7FFFFFFF


@dataclass(slots=True)
class RemotingCommand:
    """One remoting request or response.

    Attributes:
        code: request code (requests) or response code (responses).
        opaque: request id; a response carries its request's opaque.
        flag: bit 0 = response, bit 1 = oneway.
        remark: free text (error text of failed responses), or None.
        ext_fields: the custom header as a ``str -> str`` map (Java field names as keys).
        body: raw body bytes (``b""`` = none).
        language: sender language.
        version: sender MQVersion ordinal.
        serialize_type: header serialization used when this command is encoded.
    """

    code: int
    opaque: int = 0
    flag: int = 0
    remark: str | None = None
    ext_fields: dict[str, str] = field(default_factory=dict)
    body: bytes | memoryview = b""
    language: LanguageCode | int = LanguageCode.PYTHON
    version: int = CURRENT_VERSION
    serialize_type: SerializeType = SerializeType.JSON

    @classmethod
    def request(
        cls,
        code: int,
        ext_fields: dict[str, str] | None = None,
        body: bytes = b"",
        *,
        oneway: bool = False,
        serialize_type: SerializeType = SerializeType.JSON,
    ) -> RemotingCommand:
        """Build a request with a fresh opaque."""
        return cls(
            code=int(code),
            opaque=next_opaque(),
            flag=FLAG_ONEWAY if oneway else 0,
            ext_fields=ext_fields or {},
            body=body,
            serialize_type=serialize_type,
        )

    @property
    def is_response(self) -> bool:
        """True when the response bit (flag bit 0) is set."""
        return bool(self.flag & FLAG_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        """True when the oneway bit (flag bit 1) is set."""
        return bool(self.flag & FLAG_ONEWAY)

    def response(
        self,
        code: int = 0,
        remark: str | None = None,
        ext_fields: dict[str, str] | None = None,
        body: bytes | memoryview = b"",
    ) -> RemotingCommand:
        """Build the response to this request (same opaque, response bit set)."""
        return RemotingCommand(
            code=int(code),
            opaque=self.opaque,
            flag=FLAG_RESPONSE,
            remark=remark,
            ext_fields=ext_fields or {},
            body=body,
            version=CURRENT_VERSION,
            serialize_type=self.serialize_type,
        )

    def with_opaque(self, opaque: int) -> RemotingCommand:
        """Return a copy with another opaque."""
        return replace(self, opaque=opaque)
