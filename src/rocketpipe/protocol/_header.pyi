"""Types of the optional compiled fast path of :func:`rocketpipe.protocol.header_json.decode_json_header`
(``_header.c``)."""

from .codes import LanguageCode

def decode(
    data: bytes | bytearray | memoryview, languages: dict[str, LanguageCode], /
) -> tuple[int, int, int, str | None, dict[str, str], LanguageCode | int | None, int] | None: ...
