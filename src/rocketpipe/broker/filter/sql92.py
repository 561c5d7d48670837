"""SQL92 message selectors (``ExpressionType.SQL92``), evaluated on message properties.

A faithful port of apache/rocketmq's ``filter`` module: the JavaCC grammar
``filter/parser/SelectorParser.jj`` (tokens, precedence, parse-time operand checks) and the
evaluation rules of ``ComparisonExpression``, ``LogicExpression``, ``UnaryExpression`` and
``ConstantExpression``, run against the message property map as ``MessageEvaluationContext``
does (property values are strings; a missing property is ``null``).

Grammar (lowest to highest precedence; keywords case-insensitive)::

    selector   := or                                   -- trailing tokens are IGNORED (as in Java)
    or         := and ( OR and )*
    and        := equality ( AND equality )*
    equality   := comparison ( '=' comparison | '<>' comparison | IS NULL | IS NOT NULL )*
    comparison := unary ( ('>'|'>='|'<'|'<=') unary
                        | [NOT] BETWEEN unary AND unary
                        | [NOT] IN '(' string (',' string)* ')'
                        | [NOT] (CONTAINS|STARTSWITH|ENDSWITH) string )*
    unary      := '+' unary | '-' unary | NOT unary | primary
    primary    := literal | identifier | '(' or ')'
    literal    := 'str''ing' | decimal[L] | float | TRUE | FALSE | NULL

Note that ``NOT`` binds tighter than comparisons (``NOT a > 5`` is a parse error in Java too;
write ``NOT (a > 5)``). Comments ``-- ...<newline>`` and ``/* ... */`` are skipped.

Value model (Java boxed types): ``None`` = null, ``bool`` = Boolean, ``str`` = String,
``int`` = Integer, :class:`JLong` = Long, ``float`` = Double. Decimal literals that fit 32
bits are Integers, others Longs; comparing a property string with a number converts the
string with ``Integer.valueOf`` / ``Long.valueOf`` / ``Double.valueOf`` of the number's type
(so ``'5.5' > 5`` fails to convert, which Java reports as an evaluation error = no match).
Three-valued logic: comparisons with null give null (UNKNOWN); ``AND``/``OR``/``NOT`` propagate
it; a message matches only when the result is exactly TRUE. Any evaluation error counts as
"no match" (``ExpressionMessageFilter.isMatchedByCommitLog`` catches it).

Usage::

    expr = compile_sql92("a > 5 AND TAGS IN ('x', 'y')")   # raises SQL92ParseError
    expr.matches({"a": "7", "TAGS": "x"})                   # True
"""

from __future__ import annotations

import math
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Final

from ...errors import InvalidArgumentError

__all__ = [
    "JLong",
    "SQL92ParseError",
    "Sql92Expression",
    "clear_cache",
    "compile_sql92",
]

_INT_MIN: Final = -(2**31)
_INT_MAX: Final = 2**31 - 1
_LONG_MIN: Final = -(2**63)
_LONG_MAX: Final = 2**63 - 1
_DOUBLE_MAX: Final = 1.7976931348623157e308
_DOUBLE_MIN: Final = 5e-324  # Double.MIN_VALUE (smallest positive)


class SQL92ParseError(InvalidArgumentError):
    """The selector does not compile (Java ``MQFilterException`` "Invalid MessageSelector.")."""


class JLong(int):
    """A Java ``Long`` value (plain ``int`` stands for ``Integer``)."""

    __slots__ = ()


class _EvalError(Exception):
    """Java runtime exception during evaluation (NumberFormatException, ClassCastException)."""


# ---------------------------------------------------------------------------- Java conversions

_INT_RE = re.compile(r"[+-]?\d+")
_DOUBLE_RE = re.compile(r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?)")
_HEX_DOUBLE_RE = re.compile(r"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+[fFdD]?")


def _java_integral(s: str, lo: int, hi: int) -> int:
    if not _INT_RE.fullmatch(s):
        raise _EvalError(f"NumberFormatException: For input string: {s!r}")
    v = int(s)
    if v < lo or v > hi:
        raise _EvalError(f"NumberFormatException: For input string: {s!r}")
    return v


def _java_int(s: str) -> int:
    """``Integer.valueOf(String)``."""
    return _java_integral(s, _INT_MIN, _INT_MAX)


def _java_long(s: str) -> JLong:
    """``Long.valueOf(String)``."""
    return JLong(_java_integral(s, _LONG_MIN, _LONG_MAX))


def _java_double(s: str) -> float:
    """``Double.valueOf(String)``: trims chars <= U+0020, accepts NaN/Infinity, f/d suffixes, hex."""
    t = s.strip("".join(chr(c) for c in range(0x21)))
    if _DOUBLE_RE.fullmatch(t):
        body = t[:-1] if t[-1] in "fFdD" else t
        if body.lstrip("+-") == "NaN":
            return math.nan
        if body.lstrip("+-") == "Infinity":
            return -math.inf if body.startswith("-") else math.inf
        return float(body)
    if _HEX_DOUBLE_RE.fullmatch(t):
        body = t[:-1] if t[-1] in "fFdD" else t
        return float.fromhex(body)
    raise _EvalError(f"NumberFormatException: For input string: {s!r}")


def _java_bool(s: str) -> bool:
    """``Boolean.valueOf(String)``."""
    return s.lower() == "true"


def _cmp_same(lv: Any, rv: Any) -> int:
    """``lv.compareTo(rv)`` for two values of the same Java type."""
    t = type(lv)
    if t is float:
        # Double.compare: NaN is largest and equal to itself; -0.0 < 0.0
        if lv < rv:
            return -1
        if lv > rv:
            return 1
        if lv == rv:
            if lv == 0.0:
                ls, rs = math.copysign(1.0, lv), math.copysign(1.0, rv)
                return 0 if ls == rs else (-1 if ls < rs else 1)
            return 0
        ln, rn = math.isnan(lv), math.isnan(rv)
        return 0 if ln and rn else (1 if ln else -1)
    if t is str:
        if lv == rv:
            return 0
        # String.compareTo orders by UTF-16 code units
        return -1 if lv.encode("utf-16-be", "surrogatepass") < rv.encode("utf-16-be", "surrogatepass") else 1
    if lv == rv:
        return 0
    return -1 if lv < rv else 1


def _boolean_to_string(lv: Any) -> Any:
    raise _EvalError("ClassCastException: Boolean cannot be cast to String")


#: ``ComparisonExpression.__compare``'s conversions of two values of different types, by
#: (left type, right type): (convert the left value, convert the right value), None = keep it.
#: Numbers widen (Integer -> Long -> Double); a string next to a number or boolean is parsed
#: as that type (``convertStringExpressions``), failing with NumberFormatException.
_PROMOTIONS: Final[dict[tuple[type, type], tuple[Callable[[Any], Any] | None, Callable[[Any], Any] | None]]] = {
    (bool, str): (_boolean_to_string, None),
    (int, JLong): (JLong, None),
    (int, float): (float, None),
    (int, str): (None, _java_int),
    (JLong, int): (None, JLong),
    (JLong, float): (float, None),
    (JLong, str): (None, _java_long),
    (float, int): (None, float),
    (float, JLong): (None, float),
    (float, str): (None, _java_double),
    (str, bool): (_java_bool, None),
    (str, int): (_java_int, None),
    (str, JLong): (_java_long, None),
    (str, float): (_java_double, None),
}


def _compare(lv: Any, rv: Any) -> int:
    """``ComparisonExpression.__compare(lv, rv, convertStringExpressions=true)``.

    Values of different types are first converted by :data:`_PROMOTIONS`; a pair it does not
    list (e.g. a boolean and a number) compares as "less" (-1), so only ``<``/``<=``/``<>``
    hold. Raises :class:`_EvalError` when a conversion fails.
    """
    lc, rc = type(lv), type(rv)
    if lc is not rc:
        promote = _PROMOTIONS.get((lc, rc))
        if promote is None:
            return -1
        to_left, to_right = promote
        if to_left is not None:
            lv = to_left(lv)
        if to_right is not None:
            rv = to_right(rv)
    return _cmp_same(lv, rv)


# ---------------------------------------------------------------------------- expression tree

Props = Mapping[str, str]


class _Expr:
    """An expression node; ``boolean`` marks Java ``BooleanExpression`` implementations."""

    __slots__ = ()
    boolean: bool = False

    def evaluate(self, ctx: Props) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError


class _Const(_Expr):
    __slots__ = ("boolean", "value")

    def __init__(self, value: Any, boolean: bool = False) -> None:
        self.value = value
        self.boolean = boolean  # BooleanConstantExpression (TRUE / FALSE / NULL)

    def evaluate(self, ctx: Props) -> Any:
        return self.value

    def __repr__(self) -> str:
        v = self.value
        if v is None:
            return "NULL"
        if type(v) is bool:
            return "TRUE" if v else "FALSE"
        if type(v) is str:
            return "'" + v.replace("'", "''") + "'"
        return repr(v)


class _Prop(_Expr):
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def evaluate(self, ctx: Props) -> Any:
        return ctx.get(self.name)

    def __repr__(self) -> str:
        return self.name


class _Negate(_Expr):
    __slots__ = ("right",)

    def __init__(self, right: _Expr) -> None:
        self.right = right

    def evaluate(self, ctx: Props) -> Any:
        v = self.right.evaluate(ctx)
        t = type(v)
        if t is int or t is float:
            return -v
        if t is JLong:
            return JLong(-v)
        return None

    def __repr__(self) -> str:
        return f"(- {self.right!r})"


class _Not(_Expr):
    __slots__ = ("right",)
    boolean = True

    def __init__(self, right: _Expr) -> None:
        self.right = right

    def evaluate(self, ctx: Props) -> Any:
        v = self.right.evaluate(ctx)
        if v is None:
            return None
        if type(v) is not bool:
            raise _EvalError("ClassCastException: not a Boolean")
        return not v

    def __repr__(self) -> str:
        return f"(NOT {self.right!r})"


class _BoolCast(_Expr):
    __slots__ = ("right",)
    boolean = True

    def __init__(self, right: _Expr) -> None:
        self.right = right

    def evaluate(self, ctx: Props) -> Any:
        v = self.right.evaluate(ctx)
        if v is None:
            return None
        return v if type(v) is bool else False

    def __repr__(self) -> str:
        return repr(self.right)


class _Logic(_Expr):
    """Java's left-nested binary AND / OR, flattened (same order and three-valued result).

    ``decisive`` is the value that ends the evaluation: False for AND, True for OR.
    """

    __slots__ = ("terms",)
    boolean = True
    decisive: bool
    word: str

    def __init__(self, left: _Expr, right: _Expr) -> None:
        self.terms: list[_Expr] = [*left.terms, right] if type(left) is type(self) else [left, right]

    def evaluate(self, ctx: Props) -> Any:
        unknown = False
        decisive = self.decisive
        for t in self.terms:
            v = t.evaluate(ctx)
            if v is decisive:
                return decisive
            if v is None:
                unknown = True
        return None if unknown else not decisive

    def __repr__(self) -> str:
        return "(" + f" {self.word} ".join(map(repr, self.terms)) + ")"


class _And(_Logic):
    """``LogicExpression.createAND``."""

    __slots__ = ()
    decisive = False
    word = "AND"


class _Or(_Logic):
    """``LogicExpression.createOR``."""

    __slots__ = ()
    decisive = True
    word = "OR"


class _Equal(_Expr):
    """``doCreateEqual`` (also IS NULL with a NULL right side)."""

    __slots__ = ("left", "right")
    boolean = True

    def __init__(self, left: _Expr, right: _Expr) -> None:
        self.left, self.right = left, right

    def evaluate(self, ctx: Props) -> Any:
        lv = self.left.evaluate(ctx)
        rv = self.right.evaluate(ctx)
        if lv is None or rv is None:
            if lv is None and rv is None:
                return True
            return None if lv is None else False
        return _compare(lv, rv) == 0

    def __repr__(self) -> str:
        return f"({self.left!r} = {self.right!r})"


_ORDER_TESTS: Final[dict[str, Callable[[int], bool]]] = {
    ">": lambda c: c > 0,
    ">=": lambda c: c >= 0,
    "<": lambda c: c < 0,
    "<=": lambda c: c <= 0,
}


class _Order(_Expr):
    """``>``, ``>=``, ``<``, ``<=`` (``ComparisonExpression.evaluate``)."""

    __slots__ = ("left", "op", "right", "test")
    boolean = True

    def __init__(self, op: str, left: _Expr, right: _Expr) -> None:
        self.op, self.left, self.right = op, left, right
        self.test = _ORDER_TESTS[op]

    def evaluate(self, ctx: Props) -> Any:
        lv = self.left.evaluate(ctx)
        if lv is None:
            return None
        rv = self.right.evaluate(ctx)
        if rv is None:
            return None
        if type(lv) is str and type(rv) is str:
            # two strings are compared as doubles; failure is an error ("illegal to compare string")
            return self.test(_cmp_same(_java_double(lv), _java_double(rv)))
        return self.test(_compare(lv, rv))

    def __repr__(self) -> str:
        return f"({self.left!r} {self.op} {self.right!r})"


class _In(_Expr):
    __slots__ = ("negated", "right", "values")
    boolean = True

    def __init__(self, right: _Prop, values: list[str], negated: bool) -> None:
        self.right, self.values, self.negated = right, frozenset(values), negated

    def evaluate(self, ctx: Props) -> Any:
        v = self.right.evaluate(ctx)
        if v is None or type(v) is not str:
            return None
        return (v in self.values) ^ self.negated

    def __repr__(self) -> str:
        return f"({self.right!r} {'NOT IN' if self.negated else 'IN'} {sorted(self.values)!r})"


class _StrOp(_Expr):
    """CONTAINS / STARTSWITH / ENDSWITH and their NOT forms (null or non-string -> FALSE)."""

    __slots__ = ("kind", "negated", "right", "search")
    boolean = True

    def __init__(self, kind: str, right: _Expr, search: str, negated: bool) -> None:
        self.kind, self.right, self.search, self.negated = kind, right, search, negated

    def evaluate(self, ctx: Props) -> Any:
        if not self.search:
            return False
        v = self.right.evaluate(ctx)
        if v is None or type(v) is not str:
            return False
        if self.kind == "CONTAINS":
            hit = self.search in v
        elif self.kind == "STARTSWITH":
            hit = v.startswith(self.search)
        else:
            hit = v.endswith(self.search)
        return hit ^ self.negated

    def __repr__(self) -> str:
        return f"({self.right!r} {'NOT ' if self.negated else ''}{self.kind} {self.search!r})"


class Sql92Expression:
    """A compiled selector.

    Attributes:
        expression: the source text.
    """

    __slots__ = ("_root", "expression")

    def __init__(self, expression: str, root: _Expr) -> None:
        self.expression = expression
        self._root = root

    def evaluate(self, properties: Props | None) -> bool | None:
        """The three-valued result (None = UNKNOWN).

        Raises:
            ValueError: a Java runtime error during evaluation (bad number conversion, ...).
        """
        try:
            result: bool | None = self._root.evaluate(properties if properties is not None else {})
        except _EvalError as exc:
            raise ValueError(str(exc)) from None
        return result

    def matches(self, properties: Props | None) -> bool:
        """True only when the selector evaluates to TRUE; errors and UNKNOWN do not match."""
        try:
            return self._root.evaluate(properties if properties is not None else {}) is True
        except (_EvalError, RecursionError):
            return False

    def __repr__(self) -> str:
        return f"Sql92Expression({self._root!r})"


# ---------------------------------------------------------------------------- tokenizer

_KEYWORDS: Final = frozenset(
    {"NOT", "AND", "OR", "BETWEEN", "IN", "TRUE", "FALSE", "NULL", "IS", "CONTAINS", "STARTSWITH", "ENDSWITH"}
)
# (kind, pattern) tried at each position; the longest match wins, ties go to the earlier entry.
_TOKEN_PATTERNS: Final = [
    ("WS", re.compile(r"[ \t\n\r\f]")),
    ("COMMENT", re.compile(r"--[^\n\r]*(?:\r\n|\n|\r)")),
    ("COMMENT", re.compile(r"/\*[^*]*\*+(?:[^/*][^*]*\*+)*/")),
    ("DECIMAL", re.compile(r"0|[1-9][0-9]*[lL]?")),
    ("FLOAT", re.compile(r"[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+")),
    ("STRING", re.compile(r"'(?:''|[^'])*'")),
    ("ID", re.compile(r"[a-zA-Z_$][a-zA-Z0-9_$]*")),
    ("OP", re.compile(r"<>|>=|<=|[=><(),+\-]")),
]


class _Lexer:
    """Lazy JavaCC-style longest-match tokenizer (a lexical error surfaces only when reached)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.tokens: list[tuple[str, str]] = []

    def _next(self) -> tuple[str, str]:
        text, n = self.text, len(self.text)
        while True:
            if self.pos >= n:
                return ("EOF", "")
            best_kind, best_len = "", 0
            for kind, pat in _TOKEN_PATTERNS:
                m = pat.match(text, self.pos)
                if m is not None and m.end() - self.pos > best_len:
                    best_kind, best_len = kind, m.end() - self.pos
            if not best_len:
                raise SQL92ParseError(
                    f"Invalid MessageSelector. Lexical error at column {self.pos + 1}: {text[self.pos]!r}"
                )
            image = text[self.pos : self.pos + best_len]
            self.pos += best_len
            if best_kind in ("WS", "COMMENT"):
                continue
            if best_kind == "ID" and image.upper() in _KEYWORDS:
                return (image.upper(), image)
            if best_kind == "OP":
                return (image, image)
            return (best_kind, image)

    def peek(self, k: int = 1) -> str:
        while len(self.tokens) < k:
            self.tokens.append(self._next())
        return self.tokens[k - 1][0]

    def take(self, kind: str | None = None) -> str:
        got = self.peek()
        if kind is not None and got != kind:
            raise SQL92ParseError(
                f"Invalid MessageSelector. Encountered {self.tokens[0][1] or '<EOF>'!r}, expected {kind}"
            )
        return self.tokens.pop(0)[1]


# ---------------------------------------------------------------------------- parser


class _Parser:
    def __init__(self, text: str) -> None:
        self.lx = _Lexer(text)

    def fail(self, msg: str) -> SQL92ParseError:
        return SQL92ParseError(f"Invalid MessageSelector. {msg}")

    def as_boolean(self, e: _Expr) -> _Expr:
        if e.boolean:
            return e
        if isinstance(e, _Prop):
            return _BoolCast(e)
        raise self.fail(f"Expression will not result in a boolean value: {e!r}")

    # parse-time operand checks of ComparisonExpression
    def check_less_than_operand(self, e: _Expr) -> None:
        if isinstance(e, _Const):
            t = type(e.value)
            if t is int or t is JLong or t is float:
                return
            raise self.fail(f"Value '{e!r}' cannot be compared.")
        if e.boolean:
            raise self.fail(f"Value '{e!r}' cannot be compared.")

    def order(self, op: str, left: _Expr, right: _Expr) -> _Expr:
        self.check_less_than_operand(left)
        self.check_less_than_operand(right)
        return _Order(op, left, right)

    def equal(self, left: _Expr, right: _Expr) -> _Expr:
        for e in (left, right):
            if isinstance(e, _Const) and e.value is None:
                raise self.fail(f"'{e!r}' cannot be compared.")
        if isinstance(left, _Const) and isinstance(right, _Const) and left.boolean and not right.boolean:
            raise self.fail(f"'{left!r}' cannot be compared with '{right!r}'")
        return _Equal(left, right)

    def between(self, value: _Expr, low: _Expr, high: _Expr) -> _Expr:
        if isinstance(low, _Const) and isinstance(high, _Const):
            if low.value is None or high.value is None:
                raise self.fail("Illegal values of between, values can not be null!")
            try:
                bad = _compare(high.value, low.value) < 0
            except _EvalError as exc:
                raise self.fail(str(exc)) from None
            if bad:
                raise self.fail(
                    f"Illegal values of between, left value({low!r}) must less than or equal to right value({high!r})"
                )
        return _And(self.order(">=", value, low), self.order("<=", value, high))

    # grammar
    def selector(self) -> _Expr:
        return self.as_boolean(self.or_expr())

    def or_expr(self) -> _Expr:
        left = self.and_expr()
        while self.lx.peek() == "OR":
            self.lx.take()
            right = self.and_expr()
            left = _Or(self.as_boolean(left), self.as_boolean(right))
        return left

    def and_expr(self) -> _Expr:
        left = self.equality()
        while self.lx.peek() == "AND":
            self.lx.take()
            right = self.equality()
            left = _And(self.as_boolean(left), self.as_boolean(right))
        return left

    def equality(self) -> _Expr:
        lx = self.lx
        left = self.comparison()
        while True:
            k = lx.peek()
            if k == "=":
                lx.take()
                left = self.equal(left, self.comparison())
            elif k == "<>":
                lx.take()
                left = _Not(self.equal(left, self.comparison()))
            elif k == "IS":
                if lx.peek(2) == "NULL":
                    lx.take()
                    lx.take()
                    left = _Equal(left, _Const(None, True))
                else:
                    lx.take("IS")
                    lx.take("NOT")
                    lx.take("NULL")
                    left = _Not(_Equal(left, _Const(None, True)))
            else:
                return left

    _COMPARISON_START: Final = frozenset(
        {"NOT", "BETWEEN", "IN", "CONTAINS", "STARTSWITH", "ENDSWITH", ">", ">=", "<", "<="}
    )

    def comparison(self) -> _Expr:
        lx = self.lx
        left = self.unary()
        while True:
            k = lx.peek()
            if k not in self._COMPARISON_START:
                return left
            negated = False
            if k == "NOT":
                k2 = lx.peek(2)
                if k2 not in ("CONTAINS", "STARTSWITH", "ENDSWITH", "BETWEEN", "IN"):
                    raise self.fail(f"Encountered {k2!r} after NOT")
                lx.take()
                negated = True
                k = k2
            lx.take()
            if k in (">", ">=", "<", "<="):
                left = self.order(k, left, self.unary())
            elif k in ("CONTAINS", "STARTSWITH", "ENDSWITH"):
                left = _StrOp(k, left, self.string(), negated)
            elif k == "BETWEEN":
                low = self.unary()
                lx.take("AND")
                high = self.unary()
                if negated:
                    left = _Or(self.order("<", left, low), self.order(">", left, high))
                else:
                    left = self.between(left, low, high)
            else:  # IN
                lx.take("(")
                values = [self.string()]
                while lx.peek() == ",":
                    lx.take()
                    values.append(self.string())
                lx.take(")")
                if not isinstance(left, _Prop):
                    raise self.fail(f"Expected a property for In expression, got: {left!r}")
                left = _In(left, values, negated)

    def unary(self) -> _Expr:
        lx = self.lx
        k = lx.peek()
        if k == "+":
            lx.take()
            return self.unary()
        if k == "-":
            lx.take()
            return _Negate(self.unary())
        if k == "NOT":
            lx.take()
            return _Not(self.as_boolean(self.unary()))
        return self.primary()

    def primary(self) -> _Expr:
        lx = self.lx
        k = lx.peek()
        if k == "(":
            lx.take()
            e = self.or_expr()
            lx.take(")")
            return e
        if k == "ID":
            return _Prop(lx.take())
        if k == "STRING":
            return _Const(self.string())
        if k == "DECIMAL":
            text = lx.take()
            if text[-1] in "lL":
                text = text[:-1]
            v = int(text)
            if v > _LONG_MAX:
                raise self.fail(f"NumberFormatException: For input string: {text!r}")
            return _Const(v if v <= _INT_MAX else JLong(v))
        if k == "FLOAT":
            text = lx.take()
            f = float(text)
            if f > _DOUBLE_MAX:
                raise self.fail(f"{text} is greater than {_DOUBLE_MAX}")
            if f < _DOUBLE_MIN:
                raise self.fail(f"{text} is less than 4.9E-324")
            return _Const(f)
        if k == "TRUE":
            lx.take()
            return _Const(True, True)
        if k == "FALSE":
            lx.take()
            return _Const(False, True)
        if k == "NULL":
            lx.take()
            return _Const(None, True)
        got = lx.tokens[0][1] if lx.tokens and lx.tokens[0][0] != "EOF" else "<EOF>"
        raise self.fail(f"Encountered {got!r}")

    def string(self) -> str:
        image = self.lx.take("STRING")
        return image[1:-1].replace("''", "'")


# ---------------------------------------------------------------------------- compile + cache

_CACHE_SIZE: Final = 1024
_cache: OrderedDict[str, Sql92Expression | SQL92ParseError] = OrderedDict()
_cache_lock = threading.Lock()


def _parse(expression: str) -> Sql92Expression:
    try:
        return Sql92Expression(expression, _Parser(expression).selector())
    except RecursionError:
        raise SQL92ParseError("Invalid MessageSelector. expression nested too deeply") from None


def compile_sql92(expression: str | None) -> Sql92Expression:
    """Compile a selector (cached by text, failures too, like ``SelectorParser.parse``).

    Raises:
        SQL92ParseError: lexical, syntax or operand-type error; also for a None/empty text.
    """
    if expression is None:
        raise SQL92ParseError("Invalid MessageSelector. expression is null")
    with _cache_lock:
        hit = _cache.get(expression)
        if hit is not None:
            _cache.move_to_end(expression)
    if hit is None:
        try:
            hit = _parse(expression)
        except SQL92ParseError as exc:
            hit = exc
        with _cache_lock:
            _cache[expression] = hit
            while len(_cache) > _CACHE_SIZE:
                _cache.popitem(last=False)
    if isinstance(hit, SQL92ParseError):
        raise SQL92ParseError(str(hit))
    return hit


def clear_cache() -> None:
    """Drop every cached compilation."""
    with _cache_lock:
        _cache.clear()
