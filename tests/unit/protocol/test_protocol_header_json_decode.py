"""decode_json_header, compiled (``_header.decode``) and with orjson, and the frame payload
decoder, compiled (``_header.decode_payload``) and in Python: the same command, or the same
error, for any header or payload bytes."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiled_loops import both_loops, outcome, python_outcome
from rocketpipe.errors import ProtocolError
from rocketpipe.protocol import frame, header_json
from rocketpipe.protocol.codes import LanguageCode, SerializeType
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.protocol.frame import decode_frame_payload, encode_frame
from rocketpipe.protocol.header_json import decode_json_header, encode_json_header

FAST = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

loop = both_loops(header_json, ("_compiled", "_compiled_built"))


def _reference(data: bytes) -> object:
    """orjson and the Python checks: the command, or the error (type and text)."""
    return python_outcome(header_json, "_compiled", decode_json_header, data)


def _decoded(data: bytes) -> object:
    return outcome(decode_json_header, data)


int64 = st.integers(-(2**63), 2**63 - 1)
commands = st.builds(
    RemotingCommand,
    code=int64,
    opaque=int64,
    flag=int64,
    remark=st.none() | st.text(max_size=20),
    ext_fields=st.dictionaries(st.text(max_size=8), st.text(max_size=30), max_size=8),
    language=st.sampled_from(list(LanguageCode)) | st.integers(0, 200),
    version=int64,
)
json_values: Any = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
member_names = st.sampled_from(
    ["code", "opaque", "flag", "version", "language", "remark", "extFields", "serializeTypeCurrentRPC", "other"]
)
documents = st.dictionaries(member_names, json_values, max_size=9) | json_values


@FAST
@given(commands)
def test_encoded_commands_decode_as_orjson_does(cmd: RemotingCommand) -> None:
    data = encode_json_header(cmd)
    assert _decoded(data) == _reference(data)


@FAST
@given(documents)
def test_any_json_document_decodes_or_fails_as_orjson_does(doc: object) -> None:
    data = orjson.dumps(doc)
    assert _decoded(data) == _reference(data)


@FAST
@given(st.binary(max_size=80) | commands.map(encode_json_header).flatmap(lambda b: st.just(b[: len(b) // 2])))
def test_any_bytes_decode_or_fail_as_orjson_does(data: bytes) -> None:
    assert _decoded(data) == _reference(data)


FASTJSON = (
    b'{"code":310,"extFields":{"a":"g","b":"T","i":"UNIQ_KEY\\u0001AB\\u0002WAIT\\u0001true\\u0002"},'
    b'"flag":0,"language":"JAVA","opaque":7,"serializeTypeCurrentRPC":"JSON","version":475}'
)


@pytest.mark.parametrize(
    "data",
    [
        FASTJSON,
        b' \r\n\t{ "code" : 1 , "opaque" : -0 , "remark" : "" , "extFields" : null } \n',
        b'{"extFields":{"k":"\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\\u0000"},"remark":"caf\xc3\xa9"}',
        b'{"code":1,"code":2,"extFields":{"k":"a","k":"b","j":"c"},"extFields":{"z":"y"}}',  # last wins
        b'{"language":"PYTHON"}',
        b'{"language":12}',
        b"{}",
        b'{"extFields":{}}',
        # left to orjson: each is decoded or refused there
        b'{"language":"NOT_A_LANGUAGE"}',
        b'{"language":null,"remark":5,"extFields":{"k":1,"n":null,"b":true}}',
        b'{"extFields":""}',
        b'{"extFields":[]}',
        b'{"code":1.0}',
        b'{"code":1e3}',
        b'{"code":01}',
        b'{"code":12345678901234567890}',
        b'{"code":-9223372036854775808}',
        b'{"code":true}',
        b'{"other":{"nested":[1,2]}}',
        b'{"remark":"\\ud800"}',
        b'{"remark":"\\udc00x"}',
        b'{"remark":"\\u12"}',
        b'{"remark":"\\x"}',
        b'{"remark":"a\x01b"}',
        b'{"remark":"\xff"}',
        b'{"remark":"\xed\xa0\x80"}',
        b'{"code":1}x',
        b'{"code":1,}',
        b'{"code":1',
        b'\xef\xbb\xbf{"code":1}',
        b"[1]",
        b"",
        b'{"serializeTypeCurrentRPC":1}',
    ],
)
def test_edge_headers_decode_as_orjson_does(data: bytes) -> None:
    assert _decoded(data) == _reference(data)
    assert _decoded(bytearray(data)) == _reference(data)
    assert _decoded(memoryview(data)) == _reference(data)


def test_fastjson_and_own_headers_are_parsed_by_the_compiled_path(loop: str) -> None:
    fields = header_json._compiled_built(FASTJSON, header_json._LANG_BY_NAME)
    assert fields == (
        310,
        7,
        0,
        None,
        {"a": "g", "b": "T", "i": "UNIQ_KEY\x01AB\x02WAIT\x01true\x02"},
        LanguageCode.JAVA,
        475,
    )
    cmd = RemotingCommand(code=0, opaque=9, flag=1, remark="ok", ext_fields={"msgId": "AB", "queueId": "3"})
    own = encode_json_header(cmd)
    assert header_json._compiled_built(own, header_json._LANG_BY_NAME) is not None
    assert decode_json_header(own) == cmd


def test_a_malformed_header_raises_protocol_error(loop: str) -> None:
    with pytest.raises(ProtocolError, match="bad JSON header"):
        decode_json_header(b'{"code":')
    with pytest.raises(ProtocolError, match="not an integer"):
        decode_json_header(b'{"code":1.5}')


# ------------------------------------------------------------------ whole frame payloads

payload_loop = both_loops(frame, ("_compiled_payload", "_compiled_payload_built"))


def _payload_reference(data: bytes) -> object:
    return python_outcome(frame, "_compiled_payload", decode_frame_payload, data)


def _payload(data: bytes) -> object:
    return outcome(decode_frame_payload, data)


bodies = st.binary(max_size=40)


@FAST
@given(commands, bodies, st.sampled_from(list(SerializeType)))
def test_frame_payloads_decode_as_the_python_code_does(cmd: RemotingCommand, body: bytes, stype: SerializeType) -> None:
    cmd.body, cmd.serialize_type = body, stype
    if stype == SerializeType.ROCKETMQ:
        cmd.code, cmd.flag, cmd.version = cmd.code % 2**15, cmd.flag % 2**31, cmd.version % 2**15
        cmd.opaque %= 2**31
    try:
        data = encode_frame(cmd)[4:]
    except Exception:  # not encodable as a binary header
        return
    assert _payload(data) == _payload_reference(data)


@FAST
@given(st.binary(max_size=60) | documents.map(lambda d: len(orjson.dumps(d)).to_bytes(4, "big") + orjson.dumps(d)))
def test_any_payload_bytes_decode_or_fail_as_the_python_code_does(data: bytes) -> None:
    assert _payload(data) == _payload_reference(data)


def test_a_json_frame_is_decoded_by_the_compiled_path(payload_loop: str) -> None:
    cmd = RemotingCommand(code=310, opaque=5, remark="r", ext_fields={"a": "b"}, body=b"\x00body")
    data = encode_frame(cmd)[4:]
    built = frame._compiled_payload_built(
        data, 0, len(data), header_json._LANG_BY_NAME, RemotingCommand, SerializeType.JSON, LanguageCode.OTHER
    )
    assert built == cmd == decode_frame_payload(data)  # every field set, the body copied
    assert type(built.body) is bytes
    absent = b'{"code":1}'
    data = len(absent).to_bytes(4, "big") + absent
    assert decode_frame_payload(data).language is LanguageCode.OTHER
    assert decode_frame_payload(bytearray(data)) == decode_frame_payload(memoryview(data)) == _payload_reference(data)
