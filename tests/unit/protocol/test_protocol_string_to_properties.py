"""string_to_properties, compiled (``_records.string_to_properties``) and in Python: the same map
for any string (``MessageDecoder.string2messageProperties``' rules)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from compiled_loops import both_loops, python_outcome
from rocketpipe.protocol import message
from rocketpipe.protocol.message import string_to_properties

loop = both_loops(message, ("_compiled_split", "_compiled_split_built"))

# text dense in separators, with wide characters (the str's 1-, 2- and 4-byte kinds)
parts = st.sampled_from(["\x01", "\x02", "a", "KEY", "é", "中", "😀", ""]) | st.text(max_size=4)
strings = st.lists(parts, max_size=12).map("".join)


def _reference(s: str) -> dict[str, str]:
    return python_outcome(message, "_compiled_split", string_to_properties, s)  # type: ignore[no-any-return]


@given(strings)
def test_any_string_splits_as_the_python_loop_does(s: str) -> None:
    got = string_to_properties(s)
    assert got == _reference(s)
    assert list(got) == list(_reference(s))  # the same order: where each name was first seen


@pytest.mark.parametrize(
    ("s", "expected"),
    [
        ("", {}),
        ("a\x01b\x02", {"a": "b"}),
        ("a\x01b\x02a\x01c\x02x\x01y", {"a": "c", "x": "y"}),  # last wins, at the first place
        ("\x01b\x02a\x01\x02\x02\x02c\x01d\x01e", {"c": "d\x01e"}),  # empty name/value dropped
        ("中\x01😀\x02", {"中": "😀"}),
    ],
)
def test_java_rules(s: str, expected: dict[str, str], loop: str) -> None:
    assert string_to_properties(s) == expected


def test_not_a_str_is_a_type_error(loop: str) -> None:
    with pytest.raises((TypeError, AttributeError)):
        string_to_properties(b"a\x01b")  # type: ignore[arg-type]
