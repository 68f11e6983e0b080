"""Field aggregators: Java Paimon's FieldAggregatorTest expectations, type refusals, and a
row-at-a-time model of every function compared with the vectorized `reduce`."""

from __future__ import annotations

import math
import struct
from decimal import ROUND_HALF_UP, Decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakeformat.errors import InvalidOptionError, LakeformatError, UnsupportedError
from lakeformat.merge.aggregators import create_aggregator
from lakeformat.schema.types import (
    DataField,
    DataType,
    bigint,
    binary,
    boolean,
    bytes_,
    char,
    date,
    decimal,
    double,
    float_,
    int_,
    smallint,
    string,
    timestamp,
    tinyint,
    to_arrow,
    varchar,
)

# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------

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
        init_mask = np.array([i is not _NO_INIT for i in init])
        init_arr = pa.array([None if i is _NO_INIT else i for i in init], arrow)
    out = agg.reduce(pa.array(values, arrow), np.array(starts, dtype=np.int64),
                     np.array(ends, dtype=np.int64), np.array(ops, dtype=np.int8),
                     init_arr, init_mask)
    assert out.type == arrow
    assert len(out) == len(groups)
    return out.to_pylist()


_NO_INIT = object()


def fold1(name, dtype, rows, options=None):
    """One group of plain agg rows (like Java tests' Stream.reduce over agg())."""
    return fold(name, dtype, [[(AGG, v) for v in rows]], options)[0]


def java_reduce(name, dtype, rows, options=None):
    """Java tests' Stream.reduce((l, r) -> agg(l, r)): the first element is the accumulator."""
    return fold(name, dtype, [[(AGG, v) for v in rows[1:]]], options, init=[rows[0]])[0]


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


# ---------------------------------------------------------------------------------------------
# row-at-a-time model of Java's FieldAggregator subclasses
# ---------------------------------------------------------------------------------------------

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
        acc = None if init is None or init[gi] is _NO_INIT else init[gi]
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


# ---------------------------------------------------------------------------------------------
# Java FieldAggregatorTest / FieldAggregatorRetractNullTest, transcribed
# ---------------------------------------------------------------------------------------------

def test_bool_and():
    assert fold1("bool_and", boolean(), [False, True]) is False
    assert fold1("bool_and", boolean(), [True, True]) is True
    assert fold1("bool_and", boolean(), [None, True, None]) is True
    assert fold1("bool_and", boolean(), [None, None]) is None


def test_bool_or():
    assert fold1("bool_or", boolean(), [False, True]) is True
    assert fold1("bool_or", boolean(), [False, False]) is False
    assert fold1("bool_or", boolean(), [None]) is None


def test_last_non_null_value():
    assert fold1("last_non_null_value", int_(), [None, 1]) == 1
    assert fold1("last_non_null_value", int_(), [1, None]) == 1


def test_last_value():
    assert fold1("last_value", int_(), [None, 1]) == 1
    assert fold1("last_value", int_(), [1, None]) is None


def test_first_value_resets_between_keys():
    # agg(null, 1) = 1, agg(1, 2) = 1; reset(); agg(1, 3) = 3
    assert fold("first_value", int_(), [[(AGG, 1), (AGG, 2)], [(AGG, 3)]], init=[_NO_INIT, 1]) \
        == [1, 3]


def test_first_non_null_value():
    assert fold1("first_non_null_value", int_(), [None]) is None
    assert fold1("first_non_null_value", int_(), [None, 1, 2]) == 1
    assert fold("first_non_null_value", int_(), [[(AGG, 2)], [(AGG, 3)]], init=[1, 1]) == [2, 3]


def test_first_not_null_value_legacy_name():
    assert fold1("first_not_null_value", int_(), [None, 4, 5]) == 4


def test_max_min():
    assert fold1("max", int_(), [1, 10]) == 10
    assert fold1("min", int_(), [1, 10]) == 1


def test_max_min_boolean():
    for acc, v, mx, mn in [(None, True, True, True), (False, None, False, False),
                           (False, False, False, False), (False, True, True, False),
                           (True, False, True, False), (True, True, True, True)]:
        assert fold1("max", boolean(), [acc, v]) is mx
        assert fold1("min", boolean(), [acc, v]) is mn


@pytest.mark.parametrize("dtype,value", [
    (boolean(), True), (tinyint(), 1), (smallint(), 1), (int_(), 1), (bigint(), 1),
    (float_(), 1.0), (double(), 1.0), (decimal(4, 2), Decimal("0.01")), (char(1), "a"),
    (varchar(1), "a"), (binary(1), b"\x01"), (bytes_(), b"\x01"),
    (date(), __import__("datetime").date(1970, 1, 2)),
    (timestamp(3), __import__("datetime").datetime(1970, 1, 1, 0, 0, 0, 1000)),
])
def test_max_min_comparable_types(dtype, value):
    assert fold1("max", dtype, [value, value]) == value
    assert fold1("min", dtype, [value, value]) == value


@pytest.mark.parametrize("dtype", [
    DataType("ARRAY", element=int_()), DataType("MAP", key=int_(False), value=int_()),
    DataType("ROW", fields=(DataField(1, "f0", int_()),)),
])
def test_max_min_refuse_incomparable(dtype):
    for name in ("max", "min"):
        with pytest.raises(InvalidOptionError, match="comparable"):
            create_aggregator(name, DataField(0, "label", dtype), {})


INTS = [tinyint(), smallint(), int_(), bigint()]


@pytest.mark.parametrize("dtype", INTS + [float_(), double()])
def test_sum_and_product_basics(dtype):
    c = float if dtype.root in ("FLOAT", "DOUBLE") else int
    assert fold1("sum", dtype, [None, c(10)]) == c(10)
    assert fold1("sum", dtype, [c(1), c(10)]) == c(11)
    assert fold("sum", dtype, [[(RETRACT, c(5))]], init=[c(10)]) == [c(5)]
    assert fold("sum", dtype, [[(RETRACT, c(5))]]) == [c(-5)]
    assert fold1("product", dtype, [None, c(10)]) == c(10)
    assert fold1("product", dtype, [c(1), c(10)]) == c(10)
    assert fold("product", dtype, [[(RETRACT, c(5))]], init=[c(10)]) == [c(2)]
    assert fold("product", dtype, [[(RETRACT, c(5))]]) == [None]


def test_sum_and_product_decimal():
    d = decimal(10, 0)
    assert fold1("sum", d, [None, Decimal(10)]) == Decimal(10)
    assert fold1("sum", d, [Decimal(1), Decimal(10)]) == Decimal(11)
    assert fold("sum", d, [[(RETRACT, Decimal(5))]], init=[Decimal(10)]) == [Decimal(5)]
    assert fold("sum", d, [[(RETRACT, Decimal(5))]]) == [Decimal(-5)]
    assert fold1("product", d, [Decimal(1), Decimal(10)]) == Decimal(10)
    assert fold("product", d, [[(RETRACT, Decimal(5))]], init=[Decimal(10)]) == [Decimal(2)]
    assert fold("product", d, [[(RETRACT, Decimal(5))]]) == [None]


@pytest.mark.parametrize("dtype,bits", [(tinyint(), 8), (smallint(), 16), (int_(), 32),
                                        (bigint(), 64)])
def test_integer_overflow_is_an_error(dtype, bits):
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    for rows in ([hi, 1], [lo, -1]):
        with pytest.raises(LakeformatError, match="overflow"):
            fold1("sum", dtype, rows)
    for acc, v in ((lo, 1), (hi, -1)):
        with pytest.raises(LakeformatError, match="overflow"):
            fold("sum", dtype, [[(RETRACT, v)]], init=[acc])
    with pytest.raises(LakeformatError, match="overflow"):
        fold("sum", dtype, [[(RETRACT, lo)]])  # negating MIN
    with pytest.raises(LakeformatError, match="overflow"):
        fold1("product", dtype, [hi, 2])
    with pytest.raises(LakeformatError, match="overflow"):
        fold1("product", dtype, [lo, -1])
    with pytest.raises(LakeformatError, match="overflow"):
        fold("product", dtype, [[(RETRACT, -1)]], init=[lo])


def test_sum_overflow_of_an_intermediate_value_is_an_error():
    # Java checks every step: MAX + 1 fails even though a later -1 would bring it back
    with pytest.raises(LakeformatError, match="overflow"):
        fold1("sum", int_(), [2**31 - 1, 1, -1])


def test_product_examples_from_java():
    assert pytest.raises(LakeformatError, fold1, "product", tinyint(), [64, 2])
    assert pytest.raises(LakeformatError, fold1, "product", tinyint(), [-64, 4])
    assert pytest.raises(LakeformatError, fold1, "product", smallint(), [1000, 100])
    assert pytest.raises(LakeformatError, fold1, "product", int_(), [100_000, 100_000])


@pytest.mark.parametrize("name", ["first_value", "first_non_null_value", "max", "min",
                                  "bool_and", "bool_or"])
def test_functions_without_retraction(name):
    dtype = boolean() if name.startswith("bool") else int_()
    v = True if name.startswith("bool") else 1
    with pytest.raises(LakeformatError,
                       match=f"Aggregate function '{name}' does not support retraction"):
        fold(name, dtype, [[(AGG, v), (RETRACT, v)]])
    # ignore-retract turns the retraction into a no-op
    assert fold(name, dtype, [[(AGG, v), (RETRACT, v)]],
                options={"fields.f.ignore-retract": "true"}) == [v]


def test_retract_of_last_values():
    assert fold("last_value", int_(), [[(AGG, 1), (RETRACT, 1)]]) == [None]
    assert fold("last_non_null_value", int_(), [[(AGG, 1), (RETRACT, 1)]]) == [None]
    assert fold("last_non_null_value", int_(), [[(AGG, 1), (RETRACT, None)]]) == [1]
    assert fold("sum", int_(), [[(AGG, 1), (RETRACT, 1)]]) == [0]
    assert fold("product", int_(), [[(AGG, 1), (RETRACT, 1)]]) == [1]


@pytest.mark.parametrize("name,dtype", [
    ("sum", string()), ("product", boolean()), ("bool_and", int_()), ("bool_or", string()),
])
def test_type_refusals(name, dtype):
    with pytest.raises(InvalidOptionError, match="fields.col.aggregate-function"):
        create_aggregator(name, DataField(0, "col", dtype), {})


@pytest.mark.parametrize("name", ["hll_sketch", "theta_sketch", "rbm32", "rbm64", "nope"])
def test_unsupported_functions(name):
    with pytest.raises(UnsupportedError, match=name):
        create_aggregator(name, DataField(0, "col", bytes_()), {})


# ---------------------------------------------------------------------------------------------
# order-dependent semantics: aggReversed, reset, init
# ---------------------------------------------------------------------------------------------

def test_first_value_reversed_row_overwrites_after_initialisation():
    # Java's default aggReversed is agg(v, acc): once initialised it returns v
    assert fold("first_value", int_(), [[(AGG, 1), (REV, 2), (AGG, 3)]]) == [2]
    # before initialisation the reversed row keeps acc (null) but initialises
    assert fold("first_value", int_(), [[(REV, 2), (AGG, 3)]]) == [None]


def test_first_non_null_value_reversed_rows():
    # acc null: a reversed row sets acc = v without initialising
    assert fold("first_non_null_value", int_(), [[(REV, 2), (AGG, 3)]]) == [3]
    # acc not null: a reversed row initialises and keeps acc
    assert fold("first_non_null_value", int_(), [[(REV, 2), (REV, 5), (AGG, 3)]]) == [2]
    # once initialised a reversed row returns v
    assert fold("first_non_null_value", int_(), [[(AGG, 1), (REV, 5), (AGG, 3)]]) == [5]


def test_last_values_reversed_rows():
    assert fold("last_value", int_(), [[(AGG, 1), (REV, 2)]]) == [1]
    assert fold("last_non_null_value", int_(), [[(AGG, None), (REV, 2), (REV, 3)]]) == [2]


def test_reset_replaces_the_accumulator():
    assert fold("sum", int_(), [[(AGG, 5), (RESET, 3), (AGG, 2)]]) == [5]
    assert fold("sum", int_(), [[(AGG, 5), (RESET, None)]]) == [None]
    assert fold("max", int_(), [[(AGG, 9), (RESET, 1), (AGG, 2)]]) == [2]
    # first_value stays initialised across a reset: the reset value is kept
    assert fold("first_value", int_(), [[(AGG, 1), (RESET, 7), (AGG, 2)]]) == [7]
    assert fold("first_value", int_(), [[(RESET, 7), (AGG, 2)]]) == [2]


def test_skip_rows_and_init():
    assert fold("sum", int_(), [[(SKIP, 100), (AGG, 1)], [(SKIP, 3)], []],
                init=[10, 20, _NO_INIT]) == [11, 20, None]


def test_float_sum_is_sequential():
    rows = [1e8] + [1.0] * 50
    want = 0.0
    for r in rows:
        want = f32(want + r) if want else r
    assert fold1("sum", float_(), rows) == f32(1e8)
    assert fold1("sum", float_(), rows) == want


def test_float_max_min_follow_java_compare():
    assert math.copysign(1, fold1("max", double(), [-0.0, 0.0])) == 1
    assert math.copysign(1, fold1("min", double(), [0.0, -0.0])) == -1
    assert math.isnan(fold1("max", double(), [1.0, float("nan")]))
    assert fold1("min", double(), [float("nan"), 1.0]) == 1.0


def test_decimal_sum_overflow_nulls_the_accumulator():
    # DECIMAL(20, 0) is not compact: a sum beyond 20 digits becomes null, the next row restarts
    d = decimal(20, 0)
    big = Decimal(10**20 - 1)
    assert fold1("sum", d, [big, Decimal(1)]) is None
    assert fold1("sum", d, [big, Decimal(1), Decimal(7)]) == Decimal(7)


def test_decimal_sum_out_of_precision_is_refused():
    with pytest.raises(LakeformatError, match="digits"):
        fold1("sum", decimal(3, 0), [Decimal(999), Decimal(1)])
    # back within precision at the end: fine, as in Java
    assert fold1("sum", decimal(3, 0), [Decimal(999), Decimal(1), Decimal(-5)]) == Decimal(995)


def test_decimal_product_rounds_half_up_and_divides_exactly():
    d = decimal(5, 2)
    assert fold1("product", d, [Decimal("1.50"), Decimal("2.25")]) == Decimal("3.38")
    assert fold("product", d, [[(RETRACT, Decimal("8.00"))]], init=[Decimal("1.00")]) \
        == [Decimal("0.13")]
    with pytest.raises(LakeformatError, match="Non-terminating"):
        fold("product", d, [[(RETRACT, Decimal("3.00"))]], init=[Decimal("1.00")])


# ---------------------------------------------------------------------------------------------
# the model against `reduce`
# ---------------------------------------------------------------------------------------------

OPS = st.sampled_from([AGG, AGG, AGG, REV, RETRACT, RESET, SKIP])


def groups_of(values, ops=OPS):
    row = st.tuples(ops, values)
    return st.lists(st.lists(row, max_size=8), min_size=1, max_size=6)


def inits_of(values):
    return st.one_of(st.none(), st.just("per-group"))


def _with_init(data, groups, values):
    choice = data.draw(inits_of(values))
    if choice is None:
        return None
    return [data.draw(st.one_of(st.just(_NO_INIT), values)) for _ in groups]


def _retractable(name):
    return name in ("sum", "product", "last_value", "last_non_null_value")


SIMPLE_CASES = [
    ("sum", int_(), st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1))),
    ("sum", tinyint(), st.one_of(st.none(), st.integers(-128, 127))),
    ("sum", bigint(), st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1),
                                st.integers(-50, 50))),
    ("sum", double(), st.one_of(st.none(), st.floats(allow_nan=True, width=64))),
    ("sum", float_(), st.one_of(st.none(), st.floats(width=32))),
    ("sum", decimal(5, 2), st.one_of(st.none(), st.decimals(-999, 999, places=2))),
    ("sum", decimal(20, 1), st.one_of(st.none(), st.decimals(-(10**19) + 1, 10**19 - 1, places=1,
                                                             allow_nan=False))),
    ("product", int_(), st.one_of(st.none(), st.integers(-300, 300))),
    ("product", bigint(), st.one_of(st.none(), st.integers(-(2**40), 2**40))),
    ("product", double(), st.one_of(st.none(), st.floats(-1e3, 1e3))),
    ("product", decimal(8, 2), st.one_of(st.none(), st.sampled_from(
        [Decimal(x) for x in ("0.50", "2.00", "1.25", "-4.00", "0.00", "3.10")]))),
    ("max", int_(), st.one_of(st.none(), st.integers(-5, 5))),
    ("min", double(), st.one_of(st.none(), st.sampled_from([0.0, -0.0, 1.5, float("nan")]))),
    ("max", string(), st.one_of(st.none(), st.sampled_from(["", "a", "b", "ab", "é", "z"]))),
    ("min", decimal(30, 3), st.one_of(st.none(), st.decimals(-100, 100, places=3))),
    ("last_value", int_(), st.one_of(st.none(), st.integers(0, 9))),
    ("last_non_null_value", string(), st.one_of(st.none(), st.sampled_from(["x", "y"]))),
    ("first_value", int_(), st.one_of(st.none(), st.integers(0, 9))),
    ("first_non_null_value", int_(), st.one_of(st.none(), st.integers(0, 9))),
    ("bool_and", boolean(), st.one_of(st.none(), st.booleans())),
    ("bool_or", boolean(), st.one_of(st.none(), st.booleans())),
]


@pytest.mark.parametrize("name,dtype,values", SIMPLE_CASES,
                         ids=[f"{c[0]}-{c[1]}" for c in SIMPLE_CASES])
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_simple_functions_match_the_model(name, dtype, values, data):
    groups = data.draw(groups_of(values))
    if not _retractable(name):
        groups = [[(AGG if op == RETRACT else op, v) for op, v in g] for g in groups]
    init = _with_init(data, groups, values)
    check_against_model(name, dtype, groups, init=init)


# ---------------------------------------------------------------------------------------------
# listagg
# ---------------------------------------------------------------------------------------------

DISTINCT = {"fields.f.distinct": "true"}


def test_listagg_default_and_custom_delimiter():
    assert fold1("listagg", string(), ["user1", "user2"]) == "user1,user2"
    assert fold1("listagg", string(), ["user1", "user2"],
                 {"fields.f.list-agg-delimiter": "-"}) == "user1-user2"


@pytest.mark.parametrize("rows,options,want", [
    (["user1", "user2", "user1", "user3"], DISTINCT, "user1,user2,user3"),
    (["", ""], {**DISTINCT, "fields.f.list-agg-delimiter": ";"}, ""),
    (["user1", "user2", "user1,user3"], DISTINCT, "user1,user2,user3"),
    (["", "user2", "user1,user3"], DISTINCT, "user2,user1,user3"),
    (["k1=v1;k2=v2", "k1=v1;k3=v3", ""], {**DISTINCT, "fields.f.list-agg-delimiter": ";"},
     "k1=v1;k2=v2;k3=v3"),
    (["k1=v1 k2=v2", " k1=v1  k3=v3", " "], {**DISTINCT, "fields.f.list-agg-delimiter": " "},
     "k1=v1 k2=v2 k3=v3"),
    (["k1=v1,k2=v2", "k1=v1,k2=v3", ""], DISTINCT, "k1=v1,k2=v2,k2=v3"),
    (["abc,def,asd", "ab,xy"], DISTINCT, "abc,def,asd,ab,xy"),
    (["abc;def;asd", "ab;xy;def"], {**DISTINCT, "fields.f.list-agg-delimiter": ";"},
     "abc;def;asd;ab;xy"),
])
def test_listagg_examples_from_java(rows, options, want):
    assert java_reduce("listagg", string(), rows, options) == want


BLANKS = ["", " ", "   ", "\t", "\n", "\r", "\r\n", " \t\n ", " \t\n\r\n \u3000 ", "\u3000",
          "\u2000"]


def test_listagg_ignores_blank_values():
    rows = ["user1"] + BLANKS[:-2] + ["user2"] + BLANKS[-2:]
    assert java_reduce("listagg", string(), rows) == "user1,user2"
    rows = ["user1", "user2", "user1", "user3"] + BLANKS[:-2] + ["user2", "user3"] + BLANKS[-2:]
    assert java_reduce("listagg", string(), rows, DISTINCT) == "user1,user2,user3"
    # no-break spaces are not whitespace for Java
    assert fold1("listagg", string(), ["a", "\u00a0"]) == "a,\u00a0"


def test_listagg_first_non_blank_value_has_no_leading_delimiter():
    assert fold1("listagg", string(), [" ", "first line"]) == "first line"
    assert fold1("listagg", string(), [None, " "]) is None


def test_listagg_refuses_bounded_varchar_and_retract():
    with pytest.raises(InvalidOptionError, match="VARCHAR\\(100\\)"):
        create_aggregator("listagg", DataField(0, "f", varchar(100)), {})
    with pytest.raises(InvalidOptionError):
        create_aggregator("listagg", DataField(0, "f", char(3)), {})
    with pytest.raises(LakeformatError, match="'listagg' does not support retraction"):
        fold("listagg", string(), [[(AGG, "a"), (RETRACT, "a")]])


def test_listagg_reversed_rows_prepend():
    assert fold("listagg", string(), [[(AGG, "a"), (REV, "b"), (AGG, "c")]]) == ["b,a,c"]
    # a blank accumulator is replaced by a reversed row even when that row is blank
    assert fold("listagg", string(), [[(AGG, " "), (REV, None)]]) == [None]
    assert fold("listagg", string(), [[(REV, "x,y"), (REV, "y,z")]], DISTINCT) == ["y,z,x"]


def test_listagg_distinct_with_self_overlapping_delimiter():
    opts = {**DISTINCT, "fields.f.list-agg-delimiter": "||"}
    assert fold1("listagg", string(), ["a|", "b", "|b"], opts) == \
        RefListagg(string(), opts).agg(RefListagg(string(), opts).agg("a|", "b"), "|b")


LISTAGG_TEXT = st.one_of(st.none(), st.sampled_from(
    ["", " ", "a", "b", "a,b", "b,,a", "a,a", ",", "x y", "\u3000", "é,a", "a;b;a", "a|", "|a",
     "||", "a||b"]))


@pytest.mark.parametrize("options", [{}, DISTINCT, {"fields.f.list-agg-delimiter": ";"},
                                     {**DISTINCT, "fields.f.list-agg-delimiter": ";"},
                                     {**DISTINCT, "fields.f.list-agg-delimiter": ""},
                                     {**DISTINCT, "fields.f.list-agg-delimiter": "||"}],
                         ids=["plain", "distinct", "semicolon", "distinct-semicolon",
                              "distinct-empty", "distinct-border"])
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_listagg_matches_the_model(options, data):
    groups = data.draw(groups_of(LISTAGG_TEXT, st.sampled_from([AGG, AGG, AGG, REV, RESET,
                                                                SKIP])))
    init = _with_init(data, groups, LISTAGG_TEXT)
    check_against_model("listagg", string(), groups, options, init)


# ---------------------------------------------------------------------------------------------
# collect and merge_map
# ---------------------------------------------------------------------------------------------

ARRAY_INT = DataType("ARRAY", element=int_())
ROW_T = DataType("ROW", fields=(DataField(1, "a", int_()), DataField(2, "b", string())))
ARRAY_ROW = DataType("ARRAY", element=ROW_T)
ARRAY_ARRAY = DataType("ARRAY", element=ARRAY_INT)
MAP_IS = DataType("MAP", key=int_(False), value=string())
ARRAY_MAP = DataType("ARRAY", element=MAP_IS)
ARRAY_BYTES = DataType("ARRAY", element=bytes_())


def test_collect_distinct_examples_from_java():
    assert fold1("collect", ARRAY_INT, [None, None], DISTINCT) is None
    assert sorted(fold1("collect", ARRAY_INT, [None, [1, 1, 2]], DISTINCT)) == [1, 2]
    assert sorted(java_reduce("collect", ARRAY_INT, [[1, 1, 2], [2, 3]], DISTINCT)) == [1, 2, 3]
    assert java_reduce("collect", ARRAY_BYTES, [[b"\x01\x02"], [b"\x01\x02", b"\x03\x04"]],
                       DISTINCT) == [b"\x01\x02", b"\x03\x04"]
    rows1 = [{"a": 1, "b": "A"}, {"a": 1, "b": "B"}]
    rows2 = [{"a": 1, "b": "A"}, {"a": 2, "b": "A"}]
    assert java_reduce("collect", ARRAY_ROW, [rows1, rows2], DISTINCT) == rows1 + rows2[1:]
    assert java_reduce("collect", ARRAY_ARRAY, [[[1, 1], [1, 2]], [[1, 1], [1, 2], [2, 1]]],
                       DISTINCT) == [[1, 1], [1, 2], [2, 1]]
    assert java_reduce("collect", ARRAY_MAP, [[[(1, "A")], [(1, "A"), (2, "B")]],
                                              [[(1, "A")], [(2, "B"), (1, "A")], [(1, "C")]]],
                       DISTINCT) == [[(1, "A")], [(1, "A"), (2, "B")], [(1, "C")]]


def test_collect_without_distinct():
    assert fold1("collect", ARRAY_INT, [None, None]) is None
    assert fold1("collect", ARRAY_INT, [None, [1, 1, 2]]) == [1, 1, 2]
    assert java_reduce("collect", ARRAY_INT, [[1, 1, 2], [2, 3]]) == [1, 1, 2, 2, 3]


def retract_from(name, dtype, acc, v, options=None):
    return fold(name, dtype, [[(RETRACT, v)]], options, init=[acc])[0]


def test_collect_retract_examples_from_java():
    assert sorted(retract_from("collect", ARRAY_INT, [1, 2, 3], [1], DISTINCT)) == [2, 3]
    acc = [{"a": 1, "b": "A"}, {"a": 1, "b": "B"}, {"a": 2, "b": "B"}]
    assert retract_from("collect", ARRAY_ROW, acc, [acc[0], acc[2]], DISTINCT) == [acc[1]]
    assert retract_from("collect", ARRAY_ARRAY, [[1, 1], [1, 2], [2, 1]], [[1, 1], [1, 2]],
                        DISTINCT) == [[2, 1]]
    assert retract_from("collect", ARRAY_MAP, [[(1, "A")], [(2, "B"), (1, "A")], [(1, "C")]],
                        [[(1, "A")], [(1, "A"), (2, "B")]], DISTINCT) == [[(1, "C")]]
    assert retract_from("collect", ARRAY_BYTES, [b"\x01\x02", b"\x03\x04"], [b"\x01\x02"],
                        DISTINCT) == [b"\x03\x04"]
    # one element removed per retracted element
    assert retract_from("collect", ARRAY_INT, [1, 1, 2, 2, 3], [1, 2, 3], DISTINCT) == [1, 2]
    acc = [{"a": 1, "b": "A"}, {"a": 1, "b": "A"}, {"a": 1, "b": "B"}, {"a": 2, "b": "B"}]
    assert retract_from("collect", ARRAY_ROW, acc, [acc[0], acc[3]], DISTINCT) == acc[1:3]
    assert retract_from("collect", ARRAY_MAP, [[(1, "A")], [(1, "A")], [(2, "B"), (1, "A")],
                                               [(1, "C")]],
                        [[(1, "A")], [(1, "A"), (2, "B")]], DISTINCT) == [[(1, "A")], [(1, "C")]]
    # a null accumulator stays null, an empty or null retraction keeps it
    assert fold("collect", ARRAY_INT, [[(RETRACT, [1])]]) == [None]
    assert retract_from("collect", ARRAY_INT, [1], []) == [1]


def test_collect_reversed_rows():
    # collect overrides aggReversed with agg(acc, v) ...
    assert fold("collect", ARRAY_INT, [[(AGG, [1]), (REV, [2])]]) == [[1, 2]]
    # ... but the ignore-retract wrapper does not delegate it: agg(v, acc), the row goes first
    assert fold("collect", ARRAY_INT, [[(AGG, [1]), (REV, [2])]],
                {"fields.f.ignore-retract": "true"}) == [[2, 1]]


def test_merge_map_examples_from_java():
    assert fold1("merge_map", MAP_IS, [None, None]) is None
    acc = fold1("merge_map", MAP_IS, [None, [(1, "A")]])
    assert dict(acc) == {1: "A"}
    acc = java_reduce("merge_map", MAP_IS, [acc, [(1, "A"), (2, "B")]])
    assert dict(acc) == {1: "A", 2: "B"}
    acc = java_reduce("merge_map", MAP_IS, [acc, [(1, "a"), (3, "c")]])
    assert dict(acc) == {1: "a", 2: "B", 3: "c"}
    assert retract_from("merge_map", MAP_IS, [(1, "A"), (2, "B"), (3, "C")],
                        [(1, "A"), (2, "A")]) == [(3, "C")]
    bin_map = DataType("MAP", key=bytes_(False), value=int_())
    merged = java_reduce("merge_map", bin_map, [[(b"\x01\x02", 1)],
                                                [(b"\x01\x02", 2), (b"\x03\x04", 3)]])
    assert dict(merged) == {b"\x01\x02": 2, b"\x03\x04": 3}
    assert retract_from("merge_map", bin_map, [(b"\x01\x02", 1), (b"\x03\x04", 2)],
                        [(b"\x01\x02", 1)]) == [(b"\x03\x04", 2)]


def test_merge_map_reversed_rows_only_add_absent_keys():
    assert dict(fold("merge_map", MAP_IS, [[(AGG, [(1, "a")]), (REV, [(1, "x"), (2, "y")])]])[0]
                ) == {1: "a", 2: "y"}


def test_collect_and_merge_map_refuse_other_types():
    with pytest.raises(InvalidOptionError, match="ARRAY"):
        create_aggregator("collect", DataField(0, "f", int_()), {})
    with pytest.raises(InvalidOptionError, match="MAP"):
        create_aggregator("merge_map", DataField(0, "f", ARRAY_INT), {})


INT_LISTS = st.one_of(st.none(), st.lists(st.one_of(st.none(), st.integers(0, 3)), max_size=4))
ROW_LISTS = st.one_of(st.none(), st.lists(st.one_of(
    st.none(), st.fixed_dictionaries({"a": st.integers(0, 2), "b": st.sampled_from(["x", "y"])})),
    max_size=3))
MAP_VALUES = st.one_of(st.none(), st.lists(
    st.tuples(st.integers(0, 3), st.one_of(st.none(), st.sampled_from(["p", "q"]))),
    max_size=3))
MAP_LISTS = st.one_of(st.none(), st.lists(st.one_of(
    st.none(), st.dictionaries(st.integers(0, 2), st.sampled_from(["p", "q"]), max_size=2).map(
        lambda d: list(d.items()))), max_size=3))

NESTED_OPS = st.sampled_from([AGG, AGG, AGG, REV, RETRACT, RESET, SKIP])

COLLECT_CASES = [
    ("plain-int", ARRAY_INT, INT_LISTS, {}),
    ("distinct-int", ARRAY_INT, INT_LISTS, DISTINCT),
    ("distinct-row", ARRAY_ROW, ROW_LISTS, DISTINCT),
    ("plain-row", ARRAY_ROW, ROW_LISTS, {}),
    ("distinct-map", ARRAY_MAP, MAP_LISTS, DISTINCT),
    ("ignore-retract-int", ARRAY_INT, INT_LISTS, {"fields.f.ignore-retract": "true"}),
    ("ignore-retract-distinct-int", ARRAY_INT, INT_LISTS,
     {**DISTINCT, "fields.f.ignore-retract": "true"}),
    ("ignore-retract-distinct-row", ARRAY_ROW, ROW_LISTS,
     {**DISTINCT, "fields.f.ignore-retract": "true"}),
]


@pytest.mark.parametrize("dtype,values,options", [c[1:] for c in COLLECT_CASES],
                         ids=[c[0] for c in COLLECT_CASES])
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_collect_matches_the_model(dtype, values, options, data):
    groups = data.draw(groups_of(values, NESTED_OPS))
    init = _with_init(data, groups, values)
    check_against_model("collect", dtype, groups, options, init)


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_merge_map_matches_the_model(data):
    groups = data.draw(groups_of(MAP_VALUES, NESTED_OPS))
    init = _with_init(data, groups, MAP_VALUES)
    check_against_model("merge_map", MAP_IS, groups, {}, init)


# ---------------------------------------------------------------------------------------------
# nested_update / nested_partial_update / merge_map_with_keytime
# ---------------------------------------------------------------------------------------------

NROW = DataType("ROW", fields=(DataField(1, "k0", int_()), DataField(2, "k1", int_()),
                               DataField(3, "v", string()), DataField(4, "seq", int_())))
NESTED = DataType("ARRAY", element=NROW)
KEYED = {"fields.f.nested-key": "k0,k1"}


def r(k0, k1, v, seq=None):
    return {"k0": k0, "k1": k1, "v": v, "seq": seq}


def steps(name, dtype, rows, options):
    """Feed (op, array) rows one by one; returns the accumulator after each."""
    out = []
    for i in range(1, len(rows) + 1):
        out.append(fold(name, dtype, [rows[:i]], options)[0])
    return out


def as_set(rows):
    return sorted(map(repr, rows))


def test_nested_update_examples_from_java():
    got = steps("nested_update", NESTED, [(AGG, [r(0, 0, "A")]), (AGG, [r(0, 1, "B")]),
                                          (AGG, [r(0, 1, "b")]), (RETRACT, [r(0, 1, "b")])],
                KEYED)
    assert [as_set(g) for g in got] == [
        as_set([r(0, 0, "A")]), as_set([r(0, 0, "A"), r(0, 1, "B")]),
        as_set([r(0, 0, "A"), r(0, 1, "b")]), as_set([r(0, 0, "A")])]


def test_nested_append_examples_from_java():
    got = steps("nested_update", NESTED, [(AGG, [r(0, 1, "B")]), (AGG, [r(0, 1, "b")]),
                                          (RETRACT, [r(0, 1, "b")])], {})
    assert got == [[r(0, 1, "B")], [r(0, 1, "B"), r(0, 1, "b")], [r(0, 1, "B")]]
    limit = {"fields.f.count-limit": "2"}
    got = steps("nested_update", NESTED, [(AGG, [r(0, 1, "B")]), (AGG, [r(0, 1, "b")]),
                                          (AGG, [r(0, 1, "C")])], limit)
    assert got[-1] == [r(0, 1, "B"), r(0, 1, "b")]
    assert fold("nested_update", NESTED, [[(AGG, [r(0, 1, "B"), None, r(0, 1, "b"),
                                                  r(0, 1, "C")])]], limit) == \
        [[r(0, 1, "B"), r(0, 1, "b")]]


def test_nested_update_with_sequence_field():
    opts = {**KEYED, "fields.f.nested-sequence-field": "seq"}
    got = steps("nested_update", NESTED, [(AGG, [r(0, 1, "A", 1)]), (AGG, [r(0, 1, "B", 2)]),
                                          (AGG, [r(0, 1, "b_Late", 1)])], opts)
    assert got[1] == [r(0, 1, "B", 2)] and got[2] == [r(0, 1, "B", 2)]
    got = steps("nested_update", NESTED, [(AGG, [r(0, 0, "A", 1)]), (AGG, [r(0, 1, "B", 2)]),
                                          (AGG, [r(0, 1, "b", 3)]), (AGG, [r(0, 1, "B_late", 2)]),
                                          (RETRACT, [r(0, 1, "b", 3)])], opts)
    assert as_set(got[3]) == as_set([r(0, 0, "A", 1), r(0, 1, "b", 3)])
    assert got[4] == [r(0, 0, "A", 1)]


def test_nested_update_count_limit_with_keys():
    opts = {**KEYED, "fields.f.count-limit": "2"}
    got = steps("nested_update", NESTED, [(AGG, [r(0, 1, "B")]), (AGG, [r(1, 2, "C")]),
                                          (AGG, [r(0, 1, "B_updated")]), (AGG, [r(2, 3, "D")])],
                opts)
    assert as_set(got[2]) == as_set([r(0, 1, "B_updated"), r(1, 2, "C")])
    assert as_set(got[3]) == as_set([r(0, 1, "B_updated"), r(1, 2, "C")])
    first = fold("nested_update", NESTED, [[(AGG, [r(0, 1, "B"), r(1, 2, "C"), r(2, 3, "D"),
                                                   r(0, 1, "B_updated")])]], opts)[0]
    assert as_set(first) == as_set([r(0, 1, "B_updated"), r(1, 2, "C")])
    opts = {**opts, "fields.f.nested-sequence-field": "seq"}
    rows = [(AGG, [r(0, 1, "A", 1)]), (AGG, [r(0, 2, "B", 2)]), (AGG, [r(0, 3, "C", 3)]),
            (AGG, [r(0, 1, "A_Update", 4)]), (AGG, [r(0, 2, "B_Late", 1)])]
    assert as_set(fold("nested_update", NESTED, [rows], opts)[0]) == \
        as_set([r(0, 1, "A_Update", 4), r(0, 2, "B", 2)])


def test_nested_key_null_strategies():
    merge = {**KEYED, "fields.f.nested-key-null-strategy": "merge"}
    assert fold("nested_update", NESTED, [[(AGG, [r(0, None, "A", 1)])]], merge) == \
        [[r(0, None, "A", 1)]]
    ignore = {**KEYED, "fields.f.nested-key-null-strategy": "ignore"}
    assert fold("nested_update", NESTED, [[(AGG, [r(0, 1, "A", 1)]),
                                           (AGG, [r(0, None, "B", 2)])]], ignore) == \
        [[r(0, 1, "A", 1)]]
    error = {**KEYED, "fields.f.nested-key-null-strategy": "error"}
    with pytest.raises(LakeformatError, match="Nested key contains null values"):
        fold("nested_update", NESTED, [[(AGG, [r(0, None, "B", 2)])]], error)
    # the strategy also applies to the accumulator and the input of a retract
    acc = [r(0, None, "A"), r(1, 0, "B"), r(1, 1, "C")]
    assert retract_from("nested_update", NESTED, acc, [r(1, 0, "B")], ignore) == [r(1, 1, "C")]
    with pytest.raises(LakeformatError, match="Nested key contains null values"):
        retract_from("nested_update", NESTED, acc, [r(1, 0, "B")], error)
    acc = [r(0, 0, "A"), r(1, 1, "B")]
    assert retract_from("nested_update", NESTED, acc, [r(0, None, "X")], ignore) == acc


def test_nested_update_option_dependencies():
    field = DataField(0, "f", NESTED)
    with pytest.raises(InvalidOptionError, match="requires 'fields.f.nested-key'"):
        create_aggregator("nested_update", field, {"fields.f.nested-sequence-field": "seq"})
    with pytest.raises(InvalidOptionError, match="requires 'fields.f.nested-key'"):
        create_aggregator("nested_update", field,
                          {"fields.f.nested-key-null-strategy": "merge"})
    with pytest.raises(InvalidOptionError, match="nested-key"):
        create_aggregator("nested_partial_update", field, {})
    with pytest.raises(InvalidOptionError, match="ARRAY<ROW"):
        create_aggregator("nested_update", DataField(0, "f", ARRAY_INT), {})
    with pytest.raises(InvalidOptionError, match="not a field"):
        create_aggregator("nested_update", field, {"fields.f.nested-key": "nope"})


def test_nested_partial_update_examples_from_java():
    rows = [(AGG, [r(0, 0, "A", None)]), (AGG, [r(0, 0, None, 1), r(0, 1, "B", 2)]),
            (AGG, [r(0, 0, "a", None)])]
    got = fold("nested_partial_update", NESTED, [rows], KEYED)[0]
    assert as_set(got) == as_set([r(0, 0, "a", 1), r(0, 1, "B", 2)])
    with pytest.raises(LakeformatError, match="'nested_partial_update' does not support"):
        fold("nested_partial_update", NESTED, [[(RETRACT, [r(0, 0, "A")])]], KEYED)


KT_ROW = DataType("ROW", fields=(DataField(1, "v", string()), DataField(2, "ts", string())))
KEYTIME = DataType("MAP", key=int_(False), value=KT_ROW)


def kt(v, ts):
    return {"v": v, "ts": ts}


def test_merge_map_with_keytime():
    rows = [(AGG, [(1, kt("a", "2024-01-01")), (2, kt("b", "2024-01-02"))]),
            (AGG, [(1, kt("a2", "2023-12-31")), (2, kt("b2", "2024-02-01")),
                   (3, kt("c", None))]),
            (AGG, [(1, None)])]
    got = fold("merge_map_with_keytime", KEYTIME, [rows])[0]
    assert dict(got) == {2: kt("b2", "2024-02-01")}
    with pytest.raises(InvalidOptionError, match="ts-field"):
        create_aggregator("merge_map_with_keytime", DataField(0, "f", KEYTIME),
                          {"fields.f.ts-field": "nope"})
    with pytest.raises(InvalidOptionError, match="ROW"):
        create_aggregator("merge_map_with_keytime", DataField(0, "f", MAP_IS), {})


NESTED_ROWS = st.one_of(st.none(), st.lists(st.one_of(
    st.none(),
    st.builds(r, st.one_of(st.none(), st.integers(0, 1)), st.integers(0, 1),
              st.one_of(st.none(), st.sampled_from(["x", "y", "z"])),
              st.one_of(st.none(), st.integers(0, 2)))), max_size=3))

NESTED_CASES = [
    ("nested_update", {}),
    ("nested_update", {"fields.f.count-limit": "2"}),
    ("nested_update", KEYED),
    ("nested_update", {**KEYED, "fields.f.count-limit": "2"}),
    ("nested_update", {**KEYED, "fields.f.nested-sequence-field": "seq",
                       "fields.f.count-limit": "3"}),
    ("nested_update", {**KEYED, "fields.f.nested-key-null-strategy": "ignore"}),
    ("nested_update", {"fields.f.nested-key": "k1", "fields.f.nested-key-null-strategy": "error"}),
    ("nested_partial_update", KEYED),
    ("nested_partial_update", {**KEYED, "fields.f.nested-key-null-strategy": "ignore"}),
]


@pytest.mark.parametrize("name,options", NESTED_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(NESTED_CASES)])
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_nested_functions_match_the_model(name, options, data):
    ops = NESTED_OPS if name == "nested_update" else st.sampled_from([AGG, AGG, REV, RESET,
                                                                       SKIP])
    groups = data.draw(groups_of(NESTED_ROWS, ops))
    init = _with_init(data, groups, NESTED_ROWS)
    check_against_model(name, NESTED, groups, options, init)


KT_VALUES = st.one_of(st.none(), st.lists(st.tuples(
    st.integers(0, 2), st.one_of(st.none(), st.builds(
        kt, st.sampled_from(["p", "q"]), st.one_of(st.none(), st.sampled_from(
            ["1", "2", "10", "\uffff", "\U0001f600"]))))), max_size=3))


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_merge_map_with_keytime_matches_the_model(data):
    groups = data.draw(groups_of(KT_VALUES, st.sampled_from([AGG, AGG, REV, RESET, SKIP])))
    init = _with_init(data, groups, KT_VALUES)
    check_against_model("merge_map_with_keytime", KEYTIME, groups, {}, init)


# ---------------------------------------------------------------------------------------------
# the aggregation merge engine (Java AggregateMergeFunctionTest and engine rules)
# ---------------------------------------------------------------------------------------------

from lakeformat.merge import aggregate  # noqa: E402
from lakeformat.merge.context import MergeContext  # noqa: E402
from lakeformat.merge.sort import key_groups, sort_for_merge  # noqa: E402
from lakeformat.schema.table_schema import new_schema  # noqa: E402

INSERT_K, UB_K, UA_K, DELETE_K = 0, 1, 2, 3


def engine_schema(types, options, pk=("k",)):
    fields = [DataField(i, n, t) for i, (n, t) in enumerate(types.items())]
    return new_schema(0, fields, [], list(pk), {"merge-engine": "aggregation", **options}, None)


def run_engine(schema, records):
    """records: (kind, {column: value}); sequence numbers in order of the list."""
    cols = {"_SEQUENCE_NUMBER": pa.array(range(len(records)), pa.int64()),
            "_VALUE_KIND": pa.array([k for k, _ in records], pa.int8())}
    for f in schema.fields:
        cols[f.name] = pa.array([rec.get(f.name) for _, rec in records], to_arrow(f.type))
    ctx = MergeContext.of(schema)
    table = sort_for_merge(pa.table(cols), ctx.key_names, ctx.sequence_fields,
                           ctx.sequence_ascending)
    out = aggregate.merge(table, key_groups(table, ctx.key_names), ctx)
    return out.to_pylist()


def _row(**kw):
    return kw


def test_engine_default_aggregate_function():
    schema = engine_schema({"k": int_(), "a": int_(), "b": int_(), "c": int_(), "d": int_()},
                           {"fields.default-aggregate-function": "first_non_null_value",
                            "fields.b.aggregate-function": "sum"})
    rows = [(1, None, 1, 1, 1), (1, 2, None, 2, 2), (1, 3, 3, None, 3), (1, 4, 4, 4, None),
            (1, 5, 5, 5, 5)]
    out = run_engine(schema, [(INSERT_K, dict(zip("kabcd", r))) for r in rows])
    assert [(o["k"], o["a"], o["b"], o["c"], o["d"]) for o in out] == [(1, 2, 13, 1, 1)]
    assert out[0]["_VALUE_KIND"] == INSERT_K and out[0]["_SEQUENCE_NUMBER"] == 4


def test_engine_listagg_delimiters():
    schema = engine_schema({"k": int_(), "a": string(), "b": string(), "c": int_(),
                            "d": string()},
                           {"fields.a.aggregate-function": "listagg",
                            "fields.b.aggregate-function": "listagg",
                            "fields.b.list-agg-delimiter": "-",
                            "fields.d.aggregate-function": "listagg",
                            "fields.d.list-agg-delimiter": "/"})
    rows = [(INSERT_K, {"k": 1, "a": str(i), "b": str(i), "c": i, "d": str(i)})
            for i in range(1, 6)]
    out = run_engine(schema, rows)[0]
    assert (out["a"], out["b"], out["c"], out["d"]) == ("1,2,3,4,5", "1-2-3-4-5", 5, "1/2/3/4/5")


def test_engine_remove_record_on_delete_reinitialises_the_row():
    schema = engine_schema({"k": int_(False), "a": int_(False), "b": int_(), "c": int_()},
                           {"fields.default-aggregate-function": "sum",
                            "aggregation.remove-record-on-delete": "true"})
    out = run_engine(schema, [(INSERT_K, _row(k=1, a=0, b=0, c=5)),
                              (DELETE_K, _row(k=1, a=2, b=2, c=None))])
    assert [(o["a"], o["b"], o["c"], o["_VALUE_KIND"]) for o in out] == [(2, 2, None, DELETE_K)]
    # records after the -D keep aggregating onto the delete record's values
    out = run_engine(schema, [(INSERT_K, _row(k=1, a=5, b=5, c=5)),
                              (DELETE_K, _row(k=1, a=3, b=3, c=3)),
                              (INSERT_K, _row(k=1, a=2, b=2, c=None))])
    assert [(o["a"], o["b"], o["c"], o["_VALUE_KIND"]) for o in out] == [(5, 5, 3, INSERT_K)]
    # a -U still retracts
    out = run_engine(schema, [(INSERT_K, _row(k=1, a=5, b=5, c=5)),
                              (UB_K, _row(k=1, a=1, b=1, c=1))])
    assert [(o["a"], o["_VALUE_KIND"]) for o in out] == [(4, INSERT_K)]
    # Java's initRow: a -D may not carry null in a NOT NULL column
    with pytest.raises(LakeformatError, match="NOT NULL"):
        run_engine(schema, [(INSERT_K, _row(k=1, a=1, b=1, c=1)),
                            (DELETE_K, _row(k=1, a=None, b=1, c=1))])


def test_engine_retracts_and_ignore_retract():
    schema = engine_schema({"k": int_(), "s": bigint(), "m": int_(), "x": string()},
                           {"fields.s.aggregate-function": "sum",
                            "fields.m.aggregate-function": "max",
                            "fields.m.ignore-retract": "true"})
    out = run_engine(schema, [(INSERT_K, _row(k=1, s=10, m=3, x="a")),
                              (UB_K, _row(k=1, s=4, m=9, x="a")),
                              (UA_K, _row(k=1, s=6, m=5, x=None))])
    # last_non_null_value (the default) retracting a non-null value -> null
    assert [(o["s"], o["m"], o["x"]) for o in out] == [(12, 5, None)]
    schema = engine_schema({"k": int_(), "m": int_()}, {"fields.m.aggregate-function": "max"})
    with pytest.raises(LakeformatError, match="'max' does not support retraction"):
        run_engine(schema, [(INSERT_K, _row(k=1, m=1)), (DELETE_K, _row(k=1, m=1))])


def test_engine_returns_a_lone_record_unchanged():
    # Java's ReducerMergeFunctionWrapper: a single record is not merged at all
    schema = engine_schema({"k": int_(), "s": int_(), "m": int_()},
                           {"fields.s.aggregate-function": "sum",
                            "fields.m.aggregate-function": "max"})
    out = run_engine(schema, [(DELETE_K, _row(k=1, s=7, m=1)), (INSERT_K, _row(k=2, s=1, m=1)),
                              (INSERT_K, _row(k=3, s=1, m=1)), (INSERT_K, _row(k=3, s=2, m=5))])
    assert [(o["k"], o["s"], o["m"], o["_VALUE_KIND"]) for o in out] == [
        (1, 7, 1, DELETE_K), (2, 1, 1, INSERT_K), (3, 3, 5, INSERT_K)]


def test_engine_can_aggregate_lone_records(monkeypatch):
    monkeypatch.setattr(aggregate, "AGGREGATE_LONE_RECORDS", True)
    schema = engine_schema({"k": int_(), "s": int_()}, {"fields.s.aggregate-function": "sum"})
    out = run_engine(schema, [(DELETE_K, _row(k=1, s=7)), (INSERT_K, _row(k=2, s=1))])
    assert [(o["k"], o["s"], o["_VALUE_KIND"]) for o in out] == [(1, -7, INSERT_K),
                                                                 (2, 1, INSERT_K)]


def test_engine_sequence_field_uses_last_value():
    schema = engine_schema({"k": int_(), "ts": bigint(), "s": int_()},
                           {"sequence.field": "ts", "fields.s.aggregate-function": "sum"})
    out = run_engine(schema, [(INSERT_K, _row(k=1, ts=5, s=1)), (INSERT_K, _row(k=1, ts=3, s=2)),
                              (INSERT_K, _row(k=1, ts=None, s=4))])
    assert [(o["ts"], o["s"]) for o in out] == [(5, 7)]
    # last_value retracts to null
    out = run_engine(schema, [(INSERT_K, _row(k=1, ts=5, s=1)), (UB_K, _row(k=1, ts=6, s=1))])
    assert [(o["ts"], o["s"]) for o in out] == [(None, 0)]


def test_engine_keeps_a_retracted_null_in_a_not_null_column():
    # Java's merge returns it; writing it fails (Paimon's file writers refuse the null)
    schema = engine_schema({"k": int_(), "v": int_(False)},
                           {"fields.v.aggregate-function": "last_value"})
    out = run_engine(schema, [(INSERT_K, _row(k=1, v=1)), (UB_K, _row(k=1, v=1))])
    assert [(o["v"], o["_VALUE_KIND"]) for o in out] == [(None, INSERT_K)]


@pytest.mark.parametrize("options,error,match", [
    ({"fields.v.aggregate-function": "summ"}, UnsupportedError, "fields.v.aggregate-function"),
    ({"fields.default-aggregate-function": "rbm32"}, UnsupportedError, "rbm32"),
    ({"fields.k.aggregate-function": "nope"}, UnsupportedError, "fields.k.aggregate-function"),
    ({"fields.s.aggregate-function": "sum"}, InvalidOptionError, "fields.s.aggregate-function"),
    ({"fields.v.aggregate-function": "bool_or"}, InvalidOptionError, "bool_or"),
    ({"sequence.field": "v", "fields.v.aggregate-function": "max"}, InvalidOptionError,
     "sequence field"),
    ({"sequence.field": "zz"}, InvalidOptionError, "sequence.field"),
    ({"aggregation.remove-record-on-delete": "true", "fields.v.ignore-retract": "true"},
     InvalidOptionError, "conflicting"),
    ({"fields.zz.aggregate-function": "sum"}, InvalidOptionError, "zz"),
    ({"fields.v.ignore-retract": "yes"}, InvalidOptionError, "fields.v.ignore-retract"),
    ({"fields.s.aggregate-function": "listagg", "fields.s.distinct": "maybe"},
     InvalidOptionError, "fields.s.distinct"),
])
def test_engine_validation(options, error, match):
    schema = engine_schema({"k": int_(), "v": int_(), "s": string()}, options)
    with pytest.raises(error, match=match):
        aggregate.validate(schema)


def test_engine_validation_accepts_primary_key_function_names():
    # a primary-key column keeps its key whatever function is configured, as in Java
    schema = engine_schema({"k": int_(), "v": int_()}, {"fields.k.aggregate-function": "sum",
                                                        "fields.default-aggregate-function":
                                                            "max"})
    aggregate.validate(schema)


ENGINE_RECORD = st.tuples(st.sampled_from([INSERT_K, INSERT_K, UA_K, UB_K, DELETE_K]),
                          st.integers(0, 3), st.one_of(st.none(), st.integers(-9, 9)),
                          st.one_of(st.none(), st.sampled_from(["a", "b"])))


@pytest.mark.parametrize("remove_on_delete", [False, True])
@settings(max_examples=100, deadline=None)
@given(records=st.lists(ENGINE_RECORD, max_size=30))
def test_engine_matches_a_row_at_a_time_model(remove_on_delete, records):
    options = {"fields.s.aggregate-function": "sum", "fields.x.aggregate-function": "last_value"}
    if remove_on_delete:
        options["aggregation.remove-record-on-delete"] = "true"
    schema = engine_schema({"k": int_(), "s": bigint(), "x": string()}, options)
    want = {}
    seq = {}
    count = {}
    for _, k, _, _ in records:
        count[k] = count.get(k, 0) + 1
    for n, (kind, k, s, x) in enumerate(records):
        if count[k] == 1:  # a lone record is returned unchanged
            want[k] = {"s": s, "x": x, "kind": kind}
            seq[k] = n
            continue
        acc = want.get(k, {"s": None, "x": None, "kind": INSERT_K})
        if remove_on_delete and kind == DELETE_K:
            acc = {"s": s, "x": x, "kind": DELETE_K}
        elif kind in (UB_K, DELETE_K):
            acc = {"s": RefSum(bigint(), {}).retract(acc["s"], s), "x": None, "kind": INSERT_K}
        else:
            acc = {"s": RefSum(bigint(), {}).agg(acc["s"], s), "x": x, "kind": INSERT_K}
        want[k] = acc
        seq[k] = n
    got = run_engine(schema, [(kind, _row(k=k, s=s, x=x)) for kind, k, s, x in records])
    assert {o["k"]: {"s": o["s"], "x": o["x"], "kind": o["_VALUE_KIND"]} for o in got} == want
    assert {o["k"]: o["_SEQUENCE_NUMBER"] for o in got} == seq


@pytest.mark.parametrize("options", [c[1] for c in NESTED_CASES if c[0] == "nested_update"],
                         ids=[str(i) for i, c in enumerate(NESTED_CASES)
                              if c[0] == "nested_update"])
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_nested_update_adds_only_matches_the_model(options, data):
    # only adds (and an initial accumulator): the one-call closed form
    groups = data.draw(groups_of(NESTED_ROWS, st.sampled_from([AGG, AGG, SKIP])))
    init = _with_init(data, groups, NESTED_ROWS)
    check_against_model("nested_update", NESTED, groups, options, init)
