"""Property tests: frame/header round trips, stream splitting, and fuzzing of every decoder."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketpipe.errors import ProtocolError
from rocketpipe.protocol.codes import LanguageCode, SerializeType
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.protocol.frame import (
    MAX_FRAME_SIZE,
    FrameDecoder,
    decode_frame_payload,
    encode_frame,
    encode_frame_parts,
)
from rocketpipe.protocol.header_binary import decode_binary_header, encode_binary_header
from rocketpipe.protocol.header_json import decode_json_header

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

i32 = st.integers(-(2**31), 2**31 - 1)
text = st.text(max_size=40)
nonempty_text = st.text(min_size=1, max_size=40)


@st.composite
def commands(draw: st.DrawFn, stype: SerializeType | None = None) -> RemotingCommand:
    if stype is None:
        stype = draw(st.sampled_from(list(SerializeType)))
    code = draw(st.integers(-(2**15), 2**15 - 1) if stype == SerializeType.ROCKETMQ else i32)
    # Binary headers cannot carry an empty remark or empty ext values (they decode as absent).
    remark = draw(st.none() | nonempty_text)
    ext = draw(st.dictionaries(st.text(min_size=0, max_size=20), nonempty_text, max_size=6))
    return RemotingCommand(
        code=code,
        opaque=draw(i32),
        flag=draw(st.integers(0, 3)),
        remark=remark,
        ext_fields=ext,
        body=draw(st.binary(max_size=300)),
        language=draw(st.sampled_from(list(LanguageCode))),
        version=draw(st.integers(0, 2**15 - 1)),
        serialize_type=stype,
    )


def _same(a: RemotingCommand, b: RemotingCommand) -> None:
    assert (a.code, a.opaque, a.flag, a.remark, a.ext_fields, bytes(a.body), a.version) == (
        b.code,
        b.opaque,
        b.flag,
        b.remark,
        b.ext_fields,
        bytes(b.body),
        b.version,
    )
    assert int(a.language) == int(b.language)
    assert a.serialize_type == b.serialize_type


@FAST
@given(commands())
def test_frame_round_trip(cmd: RemotingCommand) -> None:
    frame = encode_frame(cmd)
    assert b"".join(encode_frame_parts(cmd)) == frame
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    assert frame[4] == int(cmd.serialize_type)
    _same(decode_frame_payload(frame[4:]), cmd)


@FAST
@given(commands(SerializeType.ROCKETMQ))
def test_binary_header_round_trip(cmd: RemotingCommand) -> None:
    got = decode_binary_header(encode_binary_header(cmd))
    cmd.body = b""
    _same(got, cmd)


def test_binary_header_empty_values_decode_as_absent() -> None:
    cmd = RemotingCommand(code=1, remark="", ext_fields={"a": "", "b": "x"}, serialize_type=SerializeType.ROCKETMQ)
    got = decode_binary_header(encode_binary_header(cmd))
    assert got.remark is None
    assert got.ext_fields == {"b": "x"}


def test_binary_header_rejects_codes_beyond_int16() -> None:
    with pytest.raises(ProtocolError):
        encode_binary_header(RemotingCommand(code=200050, serialize_type=SerializeType.ROCKETMQ))


@FAST
@given(st.lists(commands(), min_size=1, max_size=5), st.data())
def test_arbitrary_splits_yield_same_commands(cmds: list[RemotingCommand], data: st.DataObject) -> None:
    stream = b"".join(encode_frame(c) for c in cmds)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=12)))
    dec = FrameDecoder()
    out: list[RemotingCommand] = []
    prev = 0
    for cut in [*cuts, len(stream)]:
        dec.feed(stream[prev:cut])
        prev = cut
        while (c := dec.next()) is not None:
            out.append(c)
    assert len(out) == len(cmds)
    assert dec.buffered == 0
    for a, b in zip(out, cmds, strict=True):
        _same(a, b)


def test_decoder_compacts_large_buffers() -> None:
    big = RemotingCommand(code=10, opaque=1, body=b"x" * 70000)
    small = RemotingCommand(code=11, opaque=2)
    dec = FrameDecoder()
    dec.feed(encode_frame(big) + encode_frame(small)[:5])
    first = dec.next()
    assert first is not None and len(first.body) == 70000
    assert dec.next() is None
    dec.feed(encode_frame(small)[5:])
    second = dec.next()
    assert second is not None and second.opaque == 2


def test_decoder_rejects_bad_lengths() -> None:
    for prefix in (b"\x00\x00\x00\x02", (MAX_FRAME_SIZE).to_bytes(4, "big"), b"\xff\xff\xff\xff"):
        dec = FrameDecoder()
        dec.feed(prefix + b"\x00" * 8)
        with pytest.raises(ProtocolError):
            dec.next()
    with pytest.raises(ProtocolError, match="header length"):
        decode_frame_payload(b"\x00\x00\x00\x10{}")
    with pytest.raises(ProtocolError, match="serialize type"):
        decode_frame_payload(b"\x05\x00\x00\x00")


def test_encode_rejects_oversized_frame() -> None:
    with pytest.raises(ProtocolError):
        encode_frame(RemotingCommand(code=10, body=b"\x00" * MAX_FRAME_SIZE))


def test_json_header_tolerance() -> None:
    go_style = b'{"code":0,"language":"GO","version":317,"opaque":7,"flag":1,"remark":"","extFields":{}}'
    cmd = decode_json_header(go_style)
    assert (cmd.remark, cmd.ext_fields, cmd.language, cmd.is_response) == (None, {}, LanguageCode.GO, True)
    odd = decode_json_header(b'{"code":1,"language":"NOPE","extFields":{"n":5,"b":true,"z":null}}')
    assert odd.language == LanguageCode.OTHER
    assert odd.ext_fields == {"n": "5", "b": "true"}
    numeric_lang = decode_json_header(b'{"code":1,"language":9}')
    assert numeric_lang.language == 9
    for bad in (b"[]", b'{"code":"x"}', b'{"code":1,"extFields":[1]}', b"\xff", b'{"code":true}'):
        with pytest.raises(ProtocolError):
            decode_json_header(bad)


def test_json_header_encodes_unknown_language_as_other() -> None:
    frame = encode_frame(RemotingCommand(code=1, language=99))
    assert orjson.loads(frame[8:])["language"] == "OTHER"


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_frame_decoder_fuzz_raises_only_protocol_error(data: bytes) -> None:
    dec = FrameDecoder()
    dec.feed(data)
    try:
        while dec.next() is not None:
            pass
    except ProtocolError:
        pass


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([0, 1, 2, 7]), st.binary(max_size=120))
def test_frame_payload_fuzz_with_valid_length(stype: int, header: bytes) -> None:
    # a well-formed length and header word, random header bytes: exercises both header decoders
    payload = ((stype << 24) | len(header)).to_bytes(4, "big") + header + b"body"
    try:
        cmd = decode_frame_payload(payload)
    except ProtocolError:
        return
    assert cmd.body == b"body"


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=120))
def test_binary_header_fuzz(data: bytes) -> None:
    try:
        decode_binary_header(data)
    except ProtocolError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=120))
def test_json_header_fuzz(data: bytes) -> None:
    try:
        decode_json_header(data)
    except ProtocolError:
        pass


@FAST
@given(commands(SerializeType.ROCKETMQ), st.data())
def test_binary_header_mutation_fuzz(cmd: RemotingCommand, data: st.DataObject) -> None:
    raw = bytearray(encode_binary_header(cmd))
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(raw)))
    try:
        decode_binary_header(bytes(raw[:cut]))
    except ProtocolError:
        pass


def test_decoder_holds_no_buffer_export_after_an_error() -> None:
    bad = b"not json"
    frame = (4 + len(bad)).to_bytes(4, "big") + len(bad).to_bytes(4, "big") + bad
    dec = FrameDecoder()
    dec.feed(frame + b"\x00" * 70000)
    with pytest.raises(ProtocolError):
        dec.next()
    dec.feed(b"more")  # would raise BufferError if a view of the buffer were still exported
    assert dec.buffered == 70004
