"""Helpers of the aggregate-function tests: `fold` runs `reduce` over groups given
as (op, value) lists, and a row-at-a-time model of Java's FieldAggregator subclasses."""

from __future__ import annotations

import math
import struct
from decimal import ROUND_HALF_UP, Decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import strategies as st

from lakeformat.errors import LakeformatError
from lakeformat.merge.aggregation.registry import create_aggregator
from lakeformat.schema.types import (
    DataField,
    DataType,
    int_,
    string,
    to_arrow,
)

AGG, REV, RETRACT, RESET, SKIP = 1, 2, 3, 4, 0


def fold(name, dtype, groups, options=None, init=None, column="f"):
    """Run `reduce` over groups given as lists of (op, value); returns Python values."""
    field = DataField(0, column, dtype)
    agg = create_aggregator(name, field, options or {})
    values, ops, starts, ends = [], [], [], []
    for g in groups:
        starts.append(len(values))
        for op, v in g:
            ops.append(op)
            values.append(v)
        ends.append(len(values) - 1)
    arrow = to_arrow(dtype)
    init_arr = init_mask = None
    if init is not None:
        init_mask = np.array([i is not NO_INIT for i in init])
        init_arr = pa.array([None if i is NO_INIT else i for i in init], arrow)
    out = agg.reduce(pa.array(values, arrow), np.array(starts, dtype=np.int64),
                     np.array(ends, dtype=np.int64), np.array(ops, dtype=np.int8),
                     init_arr, init_mask)
    assert out.type == arrow
    assert len(out) == len(groups)
    return out.to_pylist()

NO_INIT = object()


def fold1(name, dtype, rows, options=None):
    """One group of plain agg rows (like Java tests' Stream.reduce over agg())."""
    return fold(name, dtype, [[(AGG, v) for v in rows]], options)[0]


def java_reduce(name, dtype, rows, options=None):
    """Java tests' Stream.reduce((l, r) -> agg(l, r)): the first element is the accumulator."""
    return fold(name, dtype, [[(AGG, v) for v in rows[1:]]], options, init=[rows[0]])[0]


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


class JavaError(Exception):
    pass


class Ref:
    """agg / aggReversed / retract / reset exactly as the Java classes define them."""

    def __init__(self, dtype: DataType, options: dict, column: str = "f"):
        self.dtype = dtype
        self.options = options
        self.column = column

    def reset(self):
        pass

    def agg(self, acc, v):
        raise NotImplementedError

    def agg_reversed(self, acc, v):
        return self.agg(v, acc)

    def retract(self, acc, v):
        raise JavaError("does not support retraction")

_INT_RANGE = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}


def _int_check(root, x):
    bits = _INT_RANGE[root]
    if not -(2 ** (bits - 1)) <= x < 2 ** (bits - 1):
        raise JavaError("overflow")
    return x


def _dec_fit(x: Decimal, p: int, s: int):
    q = x.quantize(Decimal(1).scaleb(-s), rounding=ROUND_HALF_UP)
    digits = len(q.as_tuple().digits) if q != 0 else 1
    return None if digits > p else q


class RefSum(Ref):
    def _op(self, a, b, sign):
        root = self.dtype.root
        if root in _INT_RANGE:
            return _int_check(root, a + sign * b)
        if root == "FLOAT":
            with np.errstate(all="ignore"):
                return float(np.float32(a) + np.float32(sign * b))
        if root == "DOUBLE":
            return a + sign * b
        p, s = self.dtype.precision, self.dtype.scale
        unscaled = int((a + sign * b).scaleb(s))
        if p <= 18:  # Java's compact path: only a 64-bit overflow falls back to BigDecimal
            if not -(2**63) <= unscaled < 2**63:
                return None
            return a + sign * b
        return _dec_fit(a + sign * b, p, s)

    def agg(self, acc, v):
        if acc is None or v is None:
            return v if acc is None else acc
        return self._op(acc, v, 1)

    def retract(self, acc, v):
        if acc is None or v is None:
            if acc is None and v is not None:
                if self.dtype.root in _INT_RANGE:
                    return _int_check(self.dtype.root, -v)
                return -v
            return acc
        return self._op(acc, v, -1)


class RefProduct(Ref):
    def agg(self, acc, v):
        if acc is None or v is None:
            return v if acc is None else acc
        root = self.dtype.root
        if root in _INT_RANGE:
            return _int_check(root, acc * v)
        if root == "FLOAT":
            return float(np.float32(acc) * np.float32(v))
        if root == "DOUBLE":
            return acc * v
        return _dec_fit(acc * v, self.dtype.precision, self.dtype.scale)

    def retract(self, acc, v):
        if acc is None or v is None:
            return acc
        root = self.dtype.root
        if root in _INT_RANGE:
            if v == 0:
                raise JavaError("/ by zero")
            q = abs(acc) // abs(v) * (1 if (acc < 0) == (v < 0) else -1)
            return _int_check(root, q)
        if root in ("FLOAT", "DOUBLE"):
            with np.errstate(all="ignore"):
                dt = np.float32 if root == "FLOAT" else np.float64
                return float(dt(acc) / dt(v))
        if v == 0:
            raise JavaError("division by zero")
        num, den = (acc / v).as_integer_ratio() if False else _ratio(acc, v)
        while den % 2 == 0:
            den //= 2
        while den % 5 == 0:
            den //= 5
        if den != 1:
            raise JavaError("non-terminating")
        from fractions import Fraction
        exact = Fraction(int(acc.scaleb(self.dtype.scale)), int(v.scaleb(self.dtype.scale)))
        s = self.dtype.scale
        scaled = exact * 10**s
        mag = (abs(scaled.numerator) * 2 + scaled.denominator) // (2 * scaled.denominator)
        unscaled = mag if scaled >= 0 else -mag
        out = Decimal(unscaled).scaleb(-s)
        return _dec_fit(out, self.dtype.precision, s)


def _ratio(a: Decimal, b: Decimal):
    from fractions import Fraction
    f = Fraction(a) / Fraction(b)
    return f.numerator, f.denominator


def _java_compare_key(dtype, x):
    if dtype.root in ("FLOAT", "DOUBLE"):
        if math.isnan(x):
            return (2, 0)
        return (1, x, math.copysign(1, x))
    if dtype.root in ("VARCHAR", "CHAR"):
        return x.encode()
    return x


class RefMax(Ref):
    def agg(self, acc, v):
        if acc is None or v is None:
            return v if acc is None else acc
        k = _java_compare_key
        return v if k(self.dtype, acc) < k(self.dtype, v) else acc


class RefMin(Ref):
    def agg(self, acc, v):
        if acc is None or v is None:
            return v if acc is None else acc
        k = _java_compare_key
        return acc if k(self.dtype, acc) < k(self.dtype, v) else v


class RefLastValue(Ref):
    def agg(self, acc, v):
        return v

    def retract(self, acc, v):
        return None


class RefLastNonNull(Ref):
    def agg(self, acc, v):
        return acc if v is None else v

    def retract(self, acc, v):
        return None if v is not None else acc


class RefFirstValue(Ref):
    def reset(self):
        self.initialized = False

    def agg(self, acc, v):
        if not self.initialized:
            self.initialized = True
            return v
        return acc


class RefFirstNonNull(Ref):
    def reset(self):
        self.initialized = False

    def agg(self, acc, v):
        if not self.initialized and v is not None:
            self.initialized = True
            return v
        return acc


class RefBoolAnd(Ref):
    def agg(self, acc, v):
        if acc is None or v is None:
            return v if acc is None else acc
        return acc and v


class RefBoolOr(Ref):
    def agg(self, acc, v):
        if acc is None or v is None:
            return v if acc is None else acc
        return acc or v

_JAVA_WS = set("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \u1680\u2028\u2029\u205f\u3000") | {
    chr(c) for c in range(0x2000, 0x200B) if c != 0x2007}


def java_blank(s):
    return s is None or all(ch in _JAVA_WS for ch in s)


def java_split(s, delimiter):
    """BinaryStringUtils.splitByWholeSeparatorPreserveAllTokens."""
    if s == "":
        return []
    return s.split(delimiter or " ")


class RefListagg(Ref):
    def __init__(self, dtype, options, column="f"):
        super().__init__(dtype, options, column)
        self.delimiter = options.get(f"fields.{column}.list-agg-delimiter", ",")
        self.distinct = str(options.get(f"fields.{column}.distinct", "false")).lower() == "true"

    def agg(self, acc, v):
        if java_blank(v):
            return acc
        if java_blank(acc):
            return v
        if not self.distinct:
            return acc + self.delimiter + v
        existing = set(java_split(acc, self.delimiter))
        out = [acc]
        for t in java_split(v, self.delimiter):
            if java_blank(t) or t in existing:
                continue
            existing.add(t)
            out.append(self.delimiter)
            out.append(t)
        return "".join(out)


def _canon(x):
    """Python value compared as Java's equaliser compares elements (maps as maps)."""
    if isinstance(x, list):
        if x and all(isinstance(e, tuple) and len(e) == 2 for e in x):
            return ("map", frozenset((_canon(k), _canon(v)) for k, v in x))
        return tuple(_canon(e) for e in x)
    if isinstance(x, dict):
        return tuple(sorted((k, _canon(v)) for k, v in x.items()))
    return x


class RefCollect(Ref):
    """Java FieldCollectAgg; HashSet results are marked so tests compare them as sets."""

    def __init__(self, dtype, options, column="f"):
        super().__init__(dtype, options, column)
        self.distinct = str(options.get(f"fields.{column}.distinct", "false")).lower() == "true"
        self.equaliser = dtype.element.root in ("ARRAY", "MAP", "ROW", "BINARY", "VARBINARY")
        self.ignore_retract = str(options.get(f"fields.{column}.ignore-retract", "false")
                                  ).lower() == "true"

    def agg_reversed(self, acc, v):
        if self.ignore_retract:  # FieldIgnoreRetractAgg does not delegate aggReversed
            return self.agg(v, acc)
        return self.agg(acc, v)

    def agg(self, acc, v):
        if acc is None and v is None:
            return None
        if (acc is None or v is None) and not self.distinct:
            return v if acc is None else acc
        if not self.distinct:
            return list(acc) + list(v)
        if self.equaliser:
            out = list(acc or [])
            for e in v or []:
                if not any(_canon(e) == _canon(o) for o in out):
                    out.append(e)
            return out
        seen, out = set(), []
        for e in list(acc or []) + list(v or []):
            if _canon(e) not in seen:
                seen.add(_canon(e))
                out.append(e)
        return HashSetList(out)

    def retract(self, acc, v):
        if acc is None:
            return None
        if v is None or len(v) == 0:
            return acc
        pending = [_canon(e) for e in v]
        out = HashSetList() if isinstance(acc, HashSetList) else []
        for e in acc:
            if _canon(e) in pending:
                pending.remove(_canon(e))
            else:
                out.append(e)
        return out


class HashSetList(list):
    """A collect result in Java HashSet order: compared as a set."""


class RebuiltMap(dict):
    """A merge_map result rebuilt as a Java HashMap: compared as a dict."""


class RefMergeMap(Ref):
    """Java FieldMergeMapAgg; a rebuilt HashMap is a dict, a map passed through is a list."""

    def agg(self, acc, v):
        if acc is None or v is None:
            return v if acc is None else acc
        out = RebuiltMap(acc.items() if isinstance(acc, dict) else acc)
        for k, x in (v.items() if isinstance(v, dict) else v):
            out[k] = x
        return out

    def retract(self, acc, v):
        if acc is None:
            return None
        if v is None or len(v) == 0:
            return acc
        gone = {k for k, _ in (v.items() if isinstance(v, dict) else v)}
        items = acc.items() if isinstance(acc, dict) else acc
        out = RebuiltMap()
        for k, x in items:
            if k not in gone:
                out[k] = x
        return out


def _row_key(row, names):
    return tuple(row[n] for n in names)


class _RefNested(Ref):
    def __init__(self, dtype, options, column="f"):
        super().__init__(dtype, options, column)
        def names(key):
            raw = options.get(f"fields.{column}.{key}")
            return [] if raw is None else [p.strip() for p in raw.split(",")]
        self.keys = names("nested-key")
        self.seqs = names("nested-sequence-field")
        self.strategy = options.get(f"fields.{column}.nested-key-null-strategy", "merge")
        self.limit = int(options.get(f"fields.{column}.count-limit", 2**31 - 1))

    def key_ok(self, row):
        key = _row_key(row, self.keys)
        if any(k is None for k in key):
            if self.strategy == "error":
                raise JavaError("Nested key contains null values")
            return self.strategy == "merge"
        return True


class RefNestedUpdate(_RefNested):
    def seq(self, row):
        return tuple((0, 0) if row[n] is None else (1, row[n]) for n in self.seqs)

    def _add(self, rows, m, limit_new):
        for row in rows:
            if row is None or not self.key_ok(row):
                continue
            key = _row_key(row, self.keys)
            if key in m:
                if not self.seqs or self.seq(row) >= self.seq(m[key]):
                    m[key] = row
            elif not limit_new or len(m) < self.limit:
                m[key] = row

    def agg(self, acc, v):
        if v is None:
            return acc
        if not self.keys:
            if acc is None:
                return [r for r in v if r is not None][:self.limit]
            if len(acc) >= self.limit:
                return acc
            return [r for r in acc if r is not None] + \
                [r for r in v if r is not None][:self.limit - len(acc)]
        m = {}
        if acc is not None:
            self._add(acc, m, False)
        self._add(v, m, True)
        return list(m.values())

    def retract(self, acc, v):
        if acc is None or v is None:
            return acc
        if not self.keys:
            rows = [r for r in acc if r is not None]
            for r in v:
                if r is not None:
                    rows = [x for x in rows if x != r]
            return rows
        m = {}
        for row in acc:
            if row is not None and self.key_ok(row):
                m[_row_key(row, self.keys)] = row
        for row in v:
            if row is not None and self.key_ok(row):
                m.pop(_row_key(row, self.keys), None)
        return list(m.values())


class RefNestedPartialUpdate(_RefNested):
    def agg(self, acc, v):
        if v is None:
            return acc
        rows = [r for r in (acc or []) if r is not None] + [r for r in v if r is not None]
        m = {}
        for row in rows:
            if not self.key_ok(row):
                continue
            target = m.setdefault(_row_key(row, self.keys), dict.fromkeys(row))
            for f, x in row.items():
                if x is not None:
                    target[f] = x
        return list(m.values())


class RefKeyTime(Ref):
    def agg(self, acc, v):
        if acc is None:
            return v
        if v is None:
            return acc
        ts = self.options.get("fields.f.ts-field")
        m = RebuiltMap(acc.items() if isinstance(acc, dict) else acc)
        for k, val in (v.items() if isinstance(v, dict) else v):
            if val is None:
                m.pop(k, None)
                continue
            t = val[ts] if ts else list(val.values())[-1]
            if t is None:
                continue
            old = m.get(k)
            if old is None:
                m[k] = val
                continue
            ot = old[ts] if ts else list(old.values())[-1]
            if ot is None or t.encode("utf-16-be") > ot.encode("utf-16-be"):
                m[k] = val
        return m

REFS = {
    "nested_update": RefNestedUpdate,
    "nested_partial_update": RefNestedPartialUpdate,
    "merge_map_with_keytime": RefKeyTime,
    "collect": RefCollect,
    "merge_map": RefMergeMap,
    "listagg": RefListagg,
    "sum": RefSum, "product": RefProduct, "max": RefMax, "min": RefMin,
    "last_value": RefLastValue, "last_non_null_value": RefLastNonNull,
    "first_value": RefFirstValue, "first_non_null_value": RefFirstNonNull,
    "bool_and": RefBoolAnd, "bool_or": RefBoolOr,
}


def ref_fold(name, dtype, groups, options=None, init=None):
    options = options or {}
    ref = REFS[name](dtype, options)
    ignore_retract = str(options.get("fields.f.ignore-retract", "false")).lower() == "true"
    out = []
    for gi, g in enumerate(groups):
        ref.reset()
        acc = None if init is None or init[gi] is NO_INIT else init[gi]
        for op, v in g:
            if op == AGG:
                acc = ref.agg(acc, v)
            elif op == REV:
                acc = ref.agg_reversed(acc, v)
            elif op == RETRACT:
                acc = acc if ignore_retract else ref.retract(acc, v)
            elif op == RESET:
                acc = v
        out.append(acc)
    return out


def same(a, b):
    if isinstance(b, HashSetList):
        return isinstance(a, list) and sorted(map(repr, map(_canon, a))) == \
            sorted(map(repr, map(_canon, b)))
    if isinstance(b, RebuiltMap):
        return isinstance(a, list) and len({k for k, _ in a}) == len(a) and dict(a) == b
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) and math.isnan(b):
            return True
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b and type(a) is type(b)


def check_against_model(name, dtype, groups, options=None, init=None):
    try:
        want = ref_fold(name, dtype, groups, options, init)
        if dtype.root == "DECIMAL" and any(
                w is not None and abs(int(w.scaleb(dtype.scale))) >= 10**dtype.precision
                for w in want):
            raise JavaError("Java would keep an out-of-precision decimal; lakeformat refuses")
    except JavaError:
        with pytest.raises(LakeformatError):
            fold(name, dtype, groups, options, init)
        return
    got = fold(name, dtype, groups, options, init)
    assert same(got, want), (got, want)

OPS = st.sampled_from([AGG, AGG, AGG, REV, RETRACT, RESET, SKIP])


def groups_of(values, ops=OPS):
    row = st.tuples(ops, values)
    return st.lists(st.lists(row, max_size=8), min_size=1, max_size=6)


def inits_of(values):
    return st.one_of(st.none(), st.just("per-group"))


def with_init(data, groups, values):
    choice = data.draw(inits_of(values))
    if choice is None:
        return None
    return [data.draw(st.one_of(st.just(NO_INIT), values)) for _ in groups]

DISTINCT = {"fields.f.distinct": "true"}

ARRAY_INT = DataType("ARRAY", element=int_())

MAP_IS = DataType("MAP", key=int_(False), value=string())


def retract_from(name, dtype, acc, v, options=None):
    return fold(name, dtype, [[(RETRACT, v)]], options, init=[acc])[0]

NESTED_OPS = st.sampled_from([AGG, AGG, AGG, REV, RETRACT, RESET, SKIP])


def r(k0, k1, v, seq=None):
    return {"k0": k0, "k1": k1, "v": v, "seq": seq}
