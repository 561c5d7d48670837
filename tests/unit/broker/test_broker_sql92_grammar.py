"""SQL92 selector grammar and evaluation (port of apache/rocketmq filter module semantics)."""

from __future__ import annotations

import pytest

from rocketpipe.broker.filter.sql92 import JLong, SQL92ParseError, clear_cache, compile_sql92
from rocketpipe.errors import InvalidArgumentError


def ev(expr: str, **props: str) -> bool | None:
    return compile_sql92(expr).evaluate(props)


def m(expr: str, **props: str) -> bool:
    return compile_sql92(expr).matches(props)


# ------------------------------------------------------------------ operators


@pytest.mark.parametrize(
    ("expr", "props", "want"),
    [
        ("a > 5", {"a": "6"}, True),
        ("a > 5", {"a": "5"}, False),
        ("a >= 5", {"a": "5"}, True),
        ("a < 5", {"a": "4"}, True),
        ("a < 5", {"a": "5"}, False),
        ("a <= 5", {"a": "5"}, True),
        ("a = 5", {"a": "5"}, True),
        ("a = 5", {"a": "+5"}, True),
        ("a <> 5", {"a": "6"}, True),
        ("a <> 5", {"a": "5"}, False),
        ("a = 'x'", {"a": "x"}, True),
        ("a = 'x'", {"a": "y"}, False),
        ("a <> 'x'", {"a": "y"}, True),
        ("a = 'it''s'", {"a": "it's"}, True),
        ("a BETWEEN 1 AND 3", {"a": "1"}, True),
        ("a BETWEEN 1 AND 3", {"a": "3"}, True),
        ("a BETWEEN 1 AND 3", {"a": "4"}, False),
        ("a NOT BETWEEN 1 AND 3", {"a": "4"}, True),
        ("a NOT BETWEEN 1 AND 3", {"a": "2"}, False),
        ("a IN ('x', 'y')", {"a": "y"}, True),
        ("a IN ('x', 'y')", {"a": "z"}, False),
        ("a NOT IN ('x', 'y')", {"a": "z"}, True),
        ("a NOT IN ('x', 'y')", {"a": "x"}, False),
        ("a IS NULL", {}, True),
        ("a IS NULL", {"a": "1"}, False),
        ("a IS NOT NULL", {"a": "1"}, True),
        ("a IS NOT NULL", {}, False),
        ("a CONTAINS 'bc'", {"a": "abcd"}, True),
        ("a NOT CONTAINS 'bc'", {"a": "abcd"}, False),
        ("a STARTSWITH 'ab'", {"a": "abcd"}, True),
        ("a NOT STARTSWITH 'ab'", {"a": "xabcd"}, True),
        ("a ENDSWITH 'cd'", {"a": "abcd"}, True),
        ("a NOT ENDSWITH 'cd'", {"a": "abcd"}, False),
        ("a = TRUE", {"a": "true"}, True),
        ("a = TRUE", {"a": "TRUE"}, True),
        ("a = FALSE", {"a": "yes"}, True),  # Boolean.valueOf("yes") is false
        ("TRUE", {}, True),
        ("FALSE", {}, False),
        ("NOT FALSE", {}, True),
        ("a > 5 AND b = 'x'", {"a": "6", "b": "x"}, True),
        ("a > 5 AND b = 'x'", {"a": "6", "b": "y"}, False),
        ("a > 5 OR b = 'x'", {"a": "1", "b": "x"}, True),
        ("NOT (a > 5)", {"a": "1"}, True),
        ("a > -5", {"a": "-4"}, True),
        ("a > - -5", {"a": "4"}, False),
        ("a > +5", {"a": "6"}, True),
        ("a > 5.5", {"a": "5.6"}, True),
        ("a > 1.5E1", {"a": "16"}, True),
        ("a > .5", {"a": "0.6"}, True),
        ("a < 5L", {"a": "4"}, True),
        ("a > 3000000000", {"a": "3000000001"}, True),
        ("a > b", {"a": "2.5", "b": "2"}, True),  # two strings compare as doubles
        ("a = b", {"a": "x", "b": "x"}, True),
        ("TAGS IN ('x','y') AND KEYS = 'k1'", {"TAGS": "x", "KEYS": "k1"}, True),
    ],
)
def test_operators(expr: str, props: dict[str, str], want: bool) -> None:
    assert compile_sql92(expr).matches(props) is want


def test_keywords_case_insensitive_and_identifiers_case_sensitive() -> None:
    assert m("a > 1 and b is not null or c in ('x')", a="2", b="1")
    assert not m("A > 1", a="2")
    assert m("_x$1 = 'v'", **{"_x$1": "v"})


def test_comments_and_whitespace() -> None:
    assert m("/* c */ a\t>\n1 -- trailing\n", a="2")
    # a line comment needs its line end (JavaCC LINE_COMMENT); "--5" is then two minus signs
    assert m("a > --5", a="6")
    assert not m("a > --5", a="5")


# ------------------------------------------------------------------ precedence


def test_and_binds_tighter_than_or() -> None:
    assert m("a = 1 OR b = 1 AND c = 1", a="1")
    assert not m("(a = 1 OR b = 1) AND c = 1", a="1")


def test_comparison_binds_tighter_than_equality() -> None:
    # equality takes comparisons as operands: (a > 5) = TRUE
    assert ev("a > 5 = TRUE", a="6") is True


def test_not_binds_tighter_than_comparison() -> None:
    with pytest.raises(SQL92ParseError):
        compile_sql92("NOT a > 5")  # (NOT a) > 5: a boolean cannot be compared (as in Java)
    assert m("NOT a = 'x'", b="1") is False  # (NOT a) = 'x' -> NOT null = 'x' -> null


def test_between_and_is_not_a_logical_and() -> None:
    assert m("a BETWEEN 1 AND 3 AND b = 'x'", a="2", b="x")
    assert not m("a BETWEEN 1 AND 3 AND b = 'x'", a="2", b="y")


# ------------------------------------------------------------------ NULL / three-valued logic


def test_missing_property_is_unknown() -> None:
    assert ev("a > 5") is None
    assert ev("a = 'x'") is None
    assert ev("a IN ('x')") is None
    assert ev("NOT (a > 5)") is None
    assert not m("NOT (a > 5)")
    assert ev("a <> 'x'") is None


def test_unknown_in_and_or() -> None:
    assert ev("a > 5 AND b = 1", b="2") is False
    assert ev("a > 5 AND b = 1", b="1") is None
    assert ev("a > 5 OR b = 1", b="1") is True
    assert ev("a > 5 OR b = 1", b="2") is None


def test_string_ops_on_null_are_false_not_unknown() -> None:
    assert ev("a CONTAINS 'x'") is False
    assert ev("a NOT CONTAINS 'x'") is False
    assert ev("a STARTSWITH ''", a="x") is False  # empty search is FALSE


def test_bare_property_is_boolean_cast() -> None:
    assert ev("a", a="true") is False  # a property is a String, never a Boolean
    assert ev("a") is None


# ------------------------------------------------------------------ numbers vs strings


def test_number_conversion_follows_constant_type() -> None:
    # Integer constant -> Integer.valueOf(property): a decimal string cannot convert -> error -> no match
    assert not m("a > 5", a="5.5")
    with pytest.raises(ValueError):
        compile_sql92("a > 5").evaluate({"a": "5.5"})
    assert m("a > 5.0", a="5.5")  # Double constant -> Double.valueOf
    assert not m("a > 5", a="abc")
    assert not m("a > 5", a=" 6")  # Integer.valueOf does not trim
    assert m("a > 5.0", a=" 6 ")  # Double.valueOf does
    assert not m("a > 5", a="3000000000")  # out of Integer range
    assert m("a > 5000000000", a="6000000000")  # Long constant
    assert m("a = 10", a="10")
    assert not m("a = 'x'", a="10") and m("a = '10'", a="10")


def test_numeric_literal_types() -> None:
    assert type(compile_sql92("a > 2147483647")._root.right.value) is int  # type: ignore[attr-defined]
    assert type(compile_sql92("a > 2147483648")._root.right.value) is JLong  # type: ignore[attr-defined]
    assert m("a > -2147483649", a="-2147483648")


def test_mixed_constant_types() -> None:
    assert m("5 < 6.5")
    assert m("5 = 5.0")
    assert not m("a > b", a="x", b="1")  # "x" is not a double -> error -> no match


# ------------------------------------------------------------------ parse errors


@pytest.mark.parametrize(
    "expr",
    [
        "",
        "   ",
        "a >",
        "a > 'x'",  # strings cannot be ordered
        "'x' < a",
        "a > TRUE",
        "a > NULL",
        "a = NULL",  # use IS NULL
        "NULL = a",
        "TRUE = 5",
        "5",
        "'x'",
        "a BETWEEN 3 AND 1",
        "a BETWEEN NULL AND 1",
        "a IN ()",
        "a IN (1, 2)",
        "'x' IN ('x')",
        "a NOT LIKE 'x'",
        "a != 1",
        "a == 1",
        "a > 0.0",  # Java rejects float literals below Double.MIN_VALUE
        "a > 1e400",
        "a > 9223372036854775808",
        "(a > 1",
        "a IS 5",
        "a.b = 1",
        "#",
    ],
)
def test_parse_errors(expr: str) -> None:
    with pytest.raises(SQL92ParseError) as info:
        compile_sql92(expr)
    assert isinstance(info.value, InvalidArgumentError)
    assert "Invalid MessageSelector" in str(info.value) or "Expression" in str(info.value)


def test_trailing_tokens_are_ignored_like_java() -> None:
    # SelectorParser.JmsSelector has no <EOF>: Java accepts and ignores trailing tokens
    assert m("a = 1 b = 2", a="1")
    assert m("a > 5abc", a="6")
    assert m("a > 1 -- comment without a line end lexes as two minus signs", a="2")
    # LIKE is not a keyword: "a LIKE 'x'" is the boolean cast of a (never TRUE for a string)
    assert not m("a LIKE 'x'", a="x")
    with pytest.raises(SQL92ParseError):
        compile_sql92("a = 1 !")  # the look-ahead token must still lex


def test_cache_returns_same_object_and_caches_errors() -> None:
    clear_cache()
    assert compile_sql92("a > 1") is compile_sql92("a > 1")
    for _ in range(2):
        with pytest.raises(SQL92ParseError):
            compile_sql92("a >")
    with pytest.raises(SQL92ParseError):
        compile_sql92(None)


def test_deep_nesting_is_a_parse_error_not_a_crash() -> None:
    with pytest.raises(SQL92ParseError):
        compile_sql92("(" * 5000 + "a = 1" + ")" * 5000)


def test_long_or_chain_evaluates_without_recursion_limits() -> None:
    expr = " OR ".join(f"a = '{i}'" for i in range(3000))
    assert m(expr, a="2999")
    assert not m(expr, a="x")
    assert ev(expr) is None


def test_and_or_chains_keep_three_valued_semantics() -> None:
    assert ev("a = 1 AND b = 1 AND c = 1", a="1", c="1") is None
    assert ev("a = 1 AND b = 1 AND c = 1", a="1", c="2") is False
    assert ev("a = 1 OR b = 1 OR c = 1", c="2") is None
    assert ev("a = 1 OR b = 1 OR c = 1", c="1") is True
    # evaluation stops at the first FALSE / TRUE, so a later error does not matter
    assert ev("a = 1 AND b > 1", a="2", b="x") is False
    assert not m("a = 1 AND b > 1", a="1", b="x")
