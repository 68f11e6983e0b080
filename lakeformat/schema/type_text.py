"""SQL type text, atomic or nested (`ARRAY<INT>`, `MAP<STRING, BIGINT>`, ``ROW<`a` INT>``),
as users write it in `alter` and the CLI (schema JSON itself uses Paimon's object form)."""

from __future__ import annotations

import re

from lakeformat.errors import UnsupportedError
from lakeformat.schema.types import DataField, DataType, parse_atomic


def parse_type(text: str) -> DataType:
    """Parse SQL type text, atomic or nested: ``ARRAY<INT>``, ``MAP<STRING, BIGINT>``,
    ``ROW<`a` INT, b STRING NOT NULL>`` (nested ROW fields get placeholder ids -1)."""
    parser = _TypeText(text)
    dt = parser.type()
    if parser.rest().strip():
        raise UnsupportedError(f"unsupported data type {text!r}")
    return dt


class _TypeText:
    """A small recursive-descent reader of SQL type text."""

    def __init__(self, text: str):
        self.text = text
        self.pos = 0

    def rest(self) -> str:
        return self.text[self.pos:]

    def _skip(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def _eat(self, token: str) -> bool:
        self._skip()
        if self.text[self.pos:self.pos + len(token)].upper() == token:
            end = self.pos + len(token)
            if token[-1].isalpha() and end < len(self.text) and (self.text[end].isalnum()
                                                                 or self.text[end] == "_"):
                return False
            self.pos = end
            return True
        return False

    def _expect(self, token: str) -> None:
        if not self._eat(token):
            raise UnsupportedError(f"unsupported data type {self.text!r}: expected {token!r} at "
                                   f"{self.rest()[:20]!r}")

    def _nullability(self, dt: DataType) -> DataType:
        if self._eat("NOT NULL"):
            return dt.copy(False)
        self._eat("NULL")
        return dt

    def type(self) -> DataType:
        self._skip()
        for root in ("ARRAY", "MULTISET"):
            if self._eat(root + "<") or (self._eat(root) and self._eat("<")):
                element = self.type()
                self._expect(">")
                return self._nullability(DataType(root, element=element))
        if self._eat("MAP<") or (self._eat("MAP") and self._eat("<")):
            key = self.type()
            self._expect(",")
            value = self.type()
            self._expect(">")
            return self._nullability(DataType("MAP", key=key, value=value))
        if self._eat("ROW<") or (self._eat("ROW") and self._eat("<")):
            fields: list[DataField] = []
            if not self._eat(">"):
                while True:
                    fields.append(self._row_field())
                    if self._eat(">"):
                        break
                    self._expect(",")
            return self._nullability(DataType("ROW", fields=tuple(fields)))
        return parse_atomic(self._atomic_text())

    def _row_field(self) -> DataField:
        self._skip()
        if self.rest().startswith("`"):
            end = self.text.index("`", self.pos + 1)
            name = self.text[self.pos + 1:end]
            self.pos = end + 1
        else:
            m = re.match(r"[A-Za-z_][A-Za-z0-9_$]*", self.rest())
            if not m:
                raise UnsupportedError(f"unsupported data type {self.text!r}: expected a field "
                                       f"name at {self.rest()[:20]!r}")
            name = m.group(0)
            self.pos += len(name)
        dt = self.type()
        self._skip()
        comment = None
        if self.rest().startswith("'"):
            end = self.text.index("'", self.pos + 1)
            comment = self.text[self.pos + 1:end]
            self.pos = end + 1
        return DataField(-1, name, dt, comment)

    def _atomic_text(self) -> str:
        """Text up to the next ',', '>' or quote outside parentheses."""
        self._skip()
        depth, start = 0, self.pos
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
            elif depth == 0 and ch in ",>'":
                break
            self.pos += 1
        return self.text[start:self.pos].strip()
