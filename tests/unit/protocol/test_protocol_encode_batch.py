"""encode_batch (the SEND_BATCH_MESSAGE body), compiled (``_records.encode_batch``) and in
Python: the same bytes, and the same errors, for any messages."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiled_loops import both_loops
from rocketpipe.errors import InvalidArgumentError
from rocketpipe.protocol import message
from rocketpipe.protocol.message import Message, decode_batch, encode_batch, string_to_properties

FAST = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# property names/values: no separators, non-empty (Java drops empty names/values)
prop_text = st.text(
    st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)), min_size=1, max_size=15
)
props = st.dictionaries(prop_text, prop_text, max_size=6)
# anything a user may put in a Message: None values, ints, lone surrogates, separators
odd_value = st.none() | st.integers() | st.text(max_size=8) | st.just("\ud800")
odd_props = st.dictionaries(st.text(max_size=6) | st.just("\udfff"), odd_value, max_size=4)
odd_body = st.binary(max_size=40) | st.binary(max_size=40).map(bytearray)
odd_flag = st.integers(-(2**31), 2**31 - 1) | st.integers() | st.booleans()


loop = both_loops(message, ("_compiled_batch", "_compiled_batch_built"))


def _python_loop(msgs: list[Message]) -> object:
    """The reference: the Python loop's bytes, or its error (type and text)."""
    compiled = message._compiled_batch
    message._compiled_batch = None
    try:
        return encode_batch(msgs)
    except Exception as exc:
        return type(exc), str(exc)
    finally:
        message._compiled_batch = compiled


@FAST
@given(st.lists(st.tuples(st.integers(-(2**31), 2**31 - 1), st.binary(max_size=100), props), max_size=6))
def test_batch_round_trip(items: list[tuple[int, bytes, dict[str, str]]]) -> None:
    msgs = [Message("T", body, flag, p) for flag, body, p in items]
    decoded = decode_batch(encode_batch(msgs))
    assert [(f, b, string_to_properties(s)) for f, b, s in decoded] == items


@FAST
@given(st.lists(st.tuples(odd_flag, odd_body, odd_props), max_size=5))
def test_any_messages_encode_as_the_python_loop_does(items: list[tuple[int, bytes, dict[str, object]]]) -> None:
    msgs = [Message("T", body, flag, p) for flag, body, p in items]  # type: ignore[arg-type]
    try:
        got: object = encode_batch(msgs)
    except Exception as exc:
        got = type(exc), str(exc)
    assert got == _python_loop(msgs)


def test_common_messages_are_encoded_by_the_compiled_loop(loop: str) -> None:
    msgs = [Message.build("T", b"x" * i, tags="a", keys=["k1", "k2"], properties={"\u4e2d": "v"}) for i in range(40)]
    compiled = message._compiled_batch_built(msgs)
    assert compiled is not None  # served, not left to the Python loop
    assert compiled == _python_loop(msgs)
    assert encode_batch(tuple(msgs)) == compiled  # any sequence


@pytest.mark.parametrize(
    "odd",
    [
        Message("T", b"a", 0, {"k": 1}),  # type: ignore[dict-item]
        Message("T", bytearray(b"a"), 0, {}),  # type: ignore[arg-type]
        Message("T", b"a", True, {}),
        Message("T", b"a", 2**31, {}),
        Message("T", b"a", 0, {"k": "v" * 32766}),
        Message("T", b"a", 0, {"k": "\ud800"}),
    ],
)
def test_an_odd_message_leaves_the_batch_to_the_python_loop(odd: Message) -> None:
    msgs = [Message("T", b"ok", 0, {"TAGS": "t"}), odd]
    assert message._compiled_batch_built(msgs) is None
    assert message._compiled_batch_built([msgs[0]]) is not None


def test_batch_rejects_oversized_properties() -> None:
    with pytest.raises(InvalidArgumentError):
        encode_batch([Message("T", b"", 0, {"k": "v" * 40000})])
    # 32767 bytes of properties is the largest Java takes: "k" 0x01 + 32764 "v" + 0x02
    body = encode_batch([Message("T", b"", 0, {"k": "v" * 32764})])
    assert decode_batch(body)[0][2] == "k\x01" + "v" * 32764 + "\x02"


def test_an_attribute_that_raises_propagates() -> None:
    class Broken:  # duck-typed message whose flag cannot be read
        topic, body, properties = "T", b"a", {"TAGS": "t"}

        @property
        def flag(self) -> int:
            raise RuntimeError("flag unreadable")

    with pytest.raises(RuntimeError, match="flag unreadable"):
        encode_batch([Message("T", b"ok", 0, {}), Broken()])  # type: ignore[list-item]
