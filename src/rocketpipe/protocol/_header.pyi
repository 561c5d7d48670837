"""Types of the optional compiled fast paths of :func:`rocketpipe.protocol.header_json.decode_json_header`
and of the frame decoder's ``_decode_payload`` (``_header.c``)."""

from .codes import LanguageCode, SerializeType
from .command import RemotingCommand

def decode(
    data: bytes | bytearray | memoryview, languages: dict[str, LanguageCode], /
) -> tuple[int, int, int, str | None, dict[str, str], LanguageCode | int | None, int] | None: ...
def decode_payload(
    buf: bytes | bytearray | memoryview,
    start: int,
    end: int,
    languages: dict[str, LanguageCode],
    cls: type[RemotingCommand],
    json: SerializeType,
    other: LanguageCode,
    /,
) -> RemotingCommand | None: ...
def encode_head(cmd: RemotingCommand, names: dict[int, str], max_frame: int, /) -> bytes | None: ...
