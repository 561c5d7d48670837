"""Golden frames: the worked example of remoting-protocol.md §1.2 (GET_ROUTEINFO_BY_TOPIC)."""

from rocketpipe.protocol.codes import LanguageCode, SerializeType
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.protocol.frame import FrameDecoder, encode_frame

BINARY = bytes.fromhex(
    "00000025 01000021 0069 03 0191 00000001 00000000 00000000 0000000c 0005 746f706963 00000001 54".replace(" ", "")
)
JSON_TEXT = b'{"code":105,"extFields":{"topic":"T"},"flag":0,"language":"PYTHON","opaque":1,"serializeTypeCurrentRPC":"JSON","version":401}'


def _cmd(stype: SerializeType) -> RemotingCommand:
    return RemotingCommand(code=105, opaque=1, ext_fields={"topic": "T"}, version=401, serialize_type=stype)


def test_binary_header_matches_reference_bytes() -> None:
    assert encode_frame(_cmd(SerializeType.ROCKETMQ)) == BINARY


def test_json_header_matches_reference_bytes() -> None:
    frame = encode_frame(_cmd(SerializeType.JSON))
    assert frame[:8] == bytes.fromhex("000000810000007d")
    assert frame[8:] == JSON_TEXT


def test_decoder_reads_both_back() -> None:
    dec = FrameDecoder()
    dec.feed(BINARY + encode_frame(_cmd(SerializeType.JSON)))
    a, b = dec.next(), dec.next()
    assert dec.next() is None
    for cmd in (a, b):
        assert cmd is not None
        assert (cmd.code, cmd.opaque, cmd.version, cmd.ext_fields) == (105, 1, 401, {"topic": "T"})
        assert cmd.language == LanguageCode.PYTHON
