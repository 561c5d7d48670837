"""encode_frame_parts, compiled (``_header.encode_head``) and in Python: the same bytes, or the
same error, for any command."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiled_loops import both_loops, outcome, python_outcome
from rocketpipe.protocol import frame
from rocketpipe.protocol.codes import LanguageCode, RequestCode, SerializeType
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.protocol.frame import MAX_FRAME_SIZE, encode_frame_parts

FAST = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

loop = both_loops(frame, ("_compiled_head", "_compiled_head_built"))


def _parts(cmd: RemotingCommand) -> list[bytes]:
    return [bytes(p) for p in encode_frame_parts(cmd)]


def _reference(cmd: RemotingCommand) -> object:
    return python_outcome(frame, "_compiled_head", _parts, cmd)


def _encoded(cmd: RemotingCommand) -> object:
    return outcome(_parts, cmd)


int64 = st.integers(-(2**63), 2**63 - 1)
texts = st.text(max_size=12) | st.sampled_from(["\x00\x01\x1f\x7f", '"\\/\b\f\n\r\t', "中😀\u2028"])
odd: Any = (
    st.integers()
    | st.booleans()
    | st.none()
    | st.sampled_from([RequestCode.SEND_MESSAGE_V2, LanguageCode.GO])
    | st.just("\ud800")
    | st.floats(allow_nan=False)
)
commands = st.builds(
    RemotingCommand,
    code=int64 | odd,
    opaque=int64,
    flag=int64 | odd,
    remark=st.none() | texts | odd,
    ext_fields=st.dictionaries(texts | st.just("\udfff"), texts | odd, max_size=8),
    body=st.binary(max_size=20),
    language=st.sampled_from(list(LanguageCode)) | st.integers(-5, 300),
    version=int64 | odd,
    serialize_type=st.sampled_from(list(SerializeType)),
)


common_commands = st.builds(
    RemotingCommand,
    code=int64,
    opaque=int64,
    flag=int64,
    remark=st.none() | texts,
    ext_fields=st.dictionaries(texts, texts, max_size=8),
    body=st.binary(max_size=20),
    language=st.sampled_from(list(LanguageCode)),
    version=int64,
)


@FAST
@given(commands)
def test_any_command_encodes_as_the_python_code_does(cmd: RemotingCommand) -> None:
    assert _encoded(cmd) == _reference(cmd)


@FAST
@given(common_commands)
def test_common_commands_encode_as_the_python_code_does(cmd: RemotingCommand) -> None:
    assert _encoded(cmd) == _reference(cmd)


def test_common_commands_are_encoded_by_the_compiled_path(loop: str) -> None:
    cmd = RemotingCommand(
        code=0,
        opaque=12,
        flag=1,
        remark="é",
        ext_fields={"queueOffset": "7", "msgId": "AB", "a": "\x01\x02"},
        body=b"xyz",
        language=LanguageCode.JAVA,
        version=475,
    )
    first = frame._compiled_head_built(cmd, frame._NAME_BY_VALUE, MAX_FRAME_SIZE)
    assert first is not None
    assert [first, cmd.body] == encode_frame_parts(cmd) == _reference(cmd)
    assert b'"extFields":{"a":"\\u0001\\u0002","msgId":"AB","queueOffset":"7"}' in first  # sorted keys


def test_a_frame_over_the_limit_raises(loop: str) -> None:
    big = RemotingCommand(code=1, body=memoryview(bytes(MAX_FRAME_SIZE)))
    with pytest.raises(Exception, match="exceeds"):
        encode_frame_parts(big)
