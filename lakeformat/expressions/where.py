"""`--where` text (a SQL-like boolean expression) to the DNF tuples `predicate.py` takes.

Grammar (keywords in any case)::

    expr      := term (OR term)*
    term      := factor (AND factor)*
    factor    := '(' expr ')' | column predicate
    predicate := op literal                      op: = == != <> < <= > >=
               | [NOT] IN '(' literal (',' literal)* ')'
               | IS [NOT] NULL
               | [NOT] BETWEEN literal AND literal
    literal   := 'text' ('' is a quote) | number | TRUE | FALSE | bare-word

A bare word (`2024-01-01`, `abc`) is text; a column may be written `name`, `` `name` `` or
`"name"`. The result is a list of conjunctions (OR of ANDs). `parse_where` gives the values
as written (numbers as numbers); `where_filter` converts each to its column's type, so
`code = 01234` on a STRING column keeps the leading zero.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from lakeformat.errors import InvalidFilterError
from lakeformat.schema.types import DataField, to_arrow

__all__ = ["parse_where", "where_filter", "resolve_filter", "and_filters", "MAX_DISJUNCTS"]

#: a filter whose OR-of-ANDs form grows past this many conjunctions is refused
MAX_DISJUNCTS = 1024

_COMPARISONS = {"=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">",
                ">=": ">="}
_KEYWORDS = {"AND", "OR", "NOT", "IN", "IS", "NULL", "BETWEEN", "TRUE", "FALSE"}

_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<string>'(?:[^']|'')*')
  | (?P<quoted>`[^`]*`|"[^"]*")
  | (?P<op><>|!=|==|<=|>=|=|<|>)
  | (?P<punct>[(),])
  | (?P<word>[^\s'"`(),=<>!]+)
  | (?P<bad>.)
""", re.VERBOSE)

_INT = re.compile(r"^[+-]?\d+$")
_FLOAT = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$")


@dataclass(frozen=True)
class Literal:
    """A value as written: `text` is its source (unescaped when quoted), `value` its Python
    reading (str, int, float or bool)."""

    value: Any
    text: str
    quoted: bool = False


@dataclass(frozen=True)
class _Token:
    kind: str  # string, quoted, op, punct, word, end
    text: str
    pos: int

    @property
    def keyword(self) -> str | None:
        up = self.text.upper()
        return up if self.kind == "word" and up in _KEYWORDS else None


Term = tuple[str, str, Any]
Dnf = list[list[Term]]


def _tokens(text: str) -> list[_Token]:
    out = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup or "bad"
        if kind == "space":
            continue
        if kind == "bad" and m.group() in "'`\"":
            raise InvalidFilterError(f"where {text!r}: unterminated {m.group()} at position "
                                     f"{m.start() + 1} (inside 'text', write '' for a quote)")
        if kind == "bad":
            raise InvalidFilterError(f"where {text!r}: unexpected {m.group()!r} at position "
                                     f"{m.start() + 1}; quote text values, e.g. name = 'a b'")
        out.append(_Token(kind, m.group(), m.start()))
    out.append(_Token("end", "", len(text)))
    return out


def _literal(tok: _Token) -> Literal:
    if tok.kind == "string":
        body = tok.text[1:-1].replace("''", "'")
        return Literal(body, body, quoted=True)
    word = tok.text
    up = word.upper()
    if up in ("TRUE", "FALSE"):
        return Literal(up == "TRUE", word)
    if _INT.match(word):
        return Literal(int(word), word)
    if _FLOAT.match(word):
        return Literal(float(word), word)
    return Literal(word, word)


class _Parser:
    """Recursive descent over the tokens; each rule returns its DNF (OR of ANDs)."""

    def __init__(self, text: str):
        self.text = text
        self.toks = _tokens(text)
        self.i = 0

    def fail(self, what: str, tok: _Token | None = None, hint: str = ""
             ) -> InvalidFilterError:
        tok = tok or self.peek()
        at = "the end" if tok.kind == "end" else f"{tok.text!r} at position {tok.pos + 1}"
        return InvalidFilterError(f"where {self.text!r}: expected {what}, found {at}"
                                  + (f"; {hint}" if hint else ""))

    def peek(self) -> _Token:
        return self.toks[self.i]

    def take(self) -> _Token:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def accept(self, keyword: str) -> bool:
        if self.peek().keyword == keyword:
            self.i += 1
            return True
        return False

    def expect_punct(self, ch: str) -> None:
        tok = self.take()
        if tok.kind != "punct" or tok.text != ch:
            raise self.fail(f"{ch!r}", tok)

    def parse(self) -> list[list[tuple[str, str, Any]]]:
        if self.peek().kind == "end":
            raise self.fail("a condition such as dt = '2024-01-01'")
        dnf = self.expr()
        if self.peek().kind != "end":
            raise self.fail("AND, OR or the end")
        return dnf

    def expr(self) -> list[list[tuple[str, str, Any]]]:
        out = self.term()
        while self.accept("OR"):
            out = out + self.term()
            self._check_size(out)
        return out

    def term(self) -> list[list[tuple[str, str, Any]]]:
        out = self.factor()
        while self.accept("AND"):
            right = self.factor()
            out = [a + b for a in out for b in right]
            self._check_size(out)
        return out

    def _check_size(self, dnf: list[list[Any]]) -> None:
        if len(dnf) > MAX_DISJUNCTS:
            raise InvalidFilterError(f"where {self.text!r}: more than {MAX_DISJUNCTS} "
                                     "OR-ed conditions once expanded; simplify it (IN (...))")

    def factor(self) -> list[list[tuple[str, str, Any]]]:
        tok = self.peek()
        if tok.kind == "punct" and tok.text == "(":
            self.take()
            inner = self.expr()
            self.expect_punct(")")
            return inner
        if tok.keyword == "NOT":
            raise InvalidFilterError(
                f"where {self.text!r}: NOT goes after the column (NOT IN, IS NOT NULL, "
                "NOT BETWEEN) or use the opposite comparison (!=, <, >=)")
        return self.predicate(self.column())

    def column(self) -> str:
        tok = self.take()
        if tok.kind == "quoted":
            return tok.text[1:-1]
        if tok.kind == "word" and tok.keyword is None:
            return tok.text
        raise self.fail("a column name", tok)

    def literal(self) -> Literal:
        tok = self.take()
        if tok.kind == "string" or (tok.kind == "word" and tok.keyword in (None, "TRUE",
                                                                           "FALSE")):
            return _literal(tok)
        if tok.keyword == "NULL":
            raise InvalidFilterError(f"where {self.text!r}: compare with NULL using IS NULL "
                                     "or IS NOT NULL")
        raise self.fail("a value ('text', a number, TRUE or FALSE)", tok)

    def predicate(self, col: str) -> list[list[tuple[str, str, Any]]]:
        tok = self.take()
        if tok.kind == "op":
            return [[(col, _COMPARISONS[tok.text], self.literal())]]
        kw = tok.keyword
        negated = False
        if kw == "NOT":
            negated, tok = True, self.take()
            kw = tok.keyword
            if kw not in ("IN", "BETWEEN"):
                raise self.fail(f"IN or BETWEEN after {col} NOT", tok)
        if kw == "IS":
            op = "is not null" if self.accept("NOT") else "is null"
            if not self.accept("NULL"):
                raise self.fail("NULL")
            return [[(col, op, None)]]
        if kw == "IN":
            self.expect_punct("(")
            values = [self.literal()]
            while self.peek().kind == "punct" and self.peek().text == ",":
                self.take()
                values.append(self.literal())
            self.expect_punct(")")
            return [[(col, "not in" if negated else "in", values)]]
        if kw == "BETWEEN":
            low = self.literal()
            if not self.accept("AND"):
                raise self.fail(f"AND in {col} BETWEEN x AND y")
            high = self.literal()
            if negated:
                return [[(col, "<", low)], [(col, ">", high)]]
            return [[(col, ">=", low), (col, "<=", high)]]
        raise self.fail(f"an operator after column {col!r}", tok,
                        f"e.g. {col} = 1 (operators: = != <> < <= > >= IN, NOT IN, "
                        "IS [NOT] NULL, BETWEEN)")


def _unwrap(value: Any) -> Any:
    if isinstance(value, Literal):
        return value.value
    if isinstance(value, list):
        return [_unwrap(v) for v in value]
    return value


def _parse_literals(text: str) -> list[list[tuple[str, str, Any]]]:
    if not isinstance(text, str):
        raise InvalidFilterError(f"where must be text, got {type(text).__name__}")
    return _Parser(text).parse()


def parse_where(text: str) -> Dnf:
    """`"dt = '2024-01-01' AND (id < 10 OR name IS NULL)"` -> `[[("dt", "=", "2024-01-01"),
    ("id", "<", 10)], [("dt", "=", "2024-01-01"), ("name", "is null", None)]]`.

    Values are as written (a number is an int or float, a bare word or quoted text a str);
    `where_filter` converts them to the columns' types."""
    return [[(c, op, _unwrap(v)) for c, op, v in conj] for conj in _parse_literals(text)]


def and_filters(filters: Sequence[Dnf]) -> Dnf:
    """The AND of several DNF filters (repeated `--where` flags)."""
    out: Dnf = [[]]
    for dnf in filters:
        out = [a + b for a in out for b in dnf]
        if len(out) > MAX_DISJUNCTS:
            raise InvalidFilterError(f"where: more than {MAX_DISJUNCTS} OR-ed conditions once "
                                     "the filters are combined; simplify them")
    return out


def _convert(lit: Literal, field: DataField, table: str) -> Any:
    """One literal in the type of `field`, with an error naming the column, value and type."""
    dtype = field.type
    target = to_arrow(dtype)
    shown = repr(lit.text)
    where = f" of {table}" if table else ""
    try:
        if pa.types.is_string(target) or pa.types.is_large_string(target):
            return lit.text
        if isinstance(lit.value, bool):
            if not pa.types.is_boolean(target):
                raise TypeError("a boolean")
            return lit.value
        if pa.types.is_boolean(target) and lit.text.lower() not in ("true", "false"):
            raise TypeError("not TRUE or FALSE")
        if pa.types.is_time(target):  # Arrow casts no text to a time of day
            return pa.scalar(datetime.time.fromisoformat(lit.text), target).as_py()
        return pa.scalar(lit.text).cast(target).as_py()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError,
            ValueError, OverflowError):
        raise InvalidFilterError(f"where: value {shown} does not fit column {field.name!r} "
                                 f"({dtype.sql()}){where}") from None


def where_filter(texts: str | Sequence[str], fields: Sequence[DataField], table: str = ""
                 ) -> Dnf | None:
    """Parse one or more where texts (ANDed), check the columns against `fields` and convert
    every value to its column's type: DNF tuples for `Table.read(filter=...)` and compaction.
    """
    items = [texts] if isinstance(texts, str) else list(texts)
    if not items:
        return None
    by_name = {f.name: f for f in fields}
    where = f" of {table}" if table else ""
    parts = []
    for text in items:
        typed = []
        for conj in _parse_literals(text):
            out = []
            for col, op, value in conj:
                field = by_name.get(col)
                if field is None:
                    raise InvalidFilterError(
                        f"where: unknown column {col!r}{where}; the columns are "
                        f"{', '.join(by_name)}")
                if isinstance(value, list):
                    value = [_convert(v, field, table) for v in value]
                elif isinstance(value, Literal):
                    value = _convert(value, field, table)
                out.append((col, op, value))
            typed.append(out)
        parts.append(typed)
    return and_filters(parts)


def resolve_filter(filter: Any, fields: Sequence[DataField], table: str = "") -> Any:
    """`filter` unchanged, unless it is where text: then its typed DNF tuples."""
    if isinstance(filter, str):
        return where_filter(filter, fields, table)
    return filter
