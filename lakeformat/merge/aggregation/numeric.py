"""`sum` and `product`: Paimon's FieldSumAgg / FieldProductAgg on whole columns.

Java facts kept here:
* integers use exact arithmetic (addExact & co.): any overflow, also of an intermediate
  accumulator, is an error; retract of a null accumulator negates (sum) or is ignored (product);
* FLOAT/DOUBLE add and multiply in their own width, one row after the other (rounding is order
  dependent, so float sums are folded sequentially, never pairwise);
* DECIMAL(p, s) keeps p and s. The sum's intermediate value becomes null when it no longer fits
  (for p <= 18: when it leaves the 64-bit range, as Java's compact path only checks that; for
  p > 18: when it needs more than p digits) and the next row starts afresh from that null.
  A final p <= 18 sum that fits 64 bits but not p digits is an out-of-precision value Java
  would carry on; lakeformat refuses it. Products round HALF_UP to s and become null beyond p
  digits; a retract divides exactly (a non-terminating quotient is an error, like BigDecimal).
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.errors import SchemaMismatchError
from lakeformat.merge.aggregation.base import FieldAggregator, Rows, numpy_dtype, rounds

_INT_DTYPES = {"TINYINT": np.int8, "SMALLINT": np.int16, "INT": np.int32, "BIGINT": np.int64}
_JAVA_INT_NAMES = {"TINYINT": "byte", "SMALLINT": "short", "INT": "int", "BIGINT": "long"}
_MASK64 = (1 << 64) - 1
_I64 = np.iinfo(np.int64)


# -- decimal128 <-> unscaled integers ---------------------------------------------------------

def decimal_unscaled(values: pa.Array) -> np.ndarray:
    """Unscaled values of a decimal128 array (int64 when precision <= 18, else Python ints)."""
    n = len(values)
    buf = values.buffers()[1]
    words = np.frombuffer(buf, dtype="<i8").reshape(-1, 2)[values.offset:values.offset + n]
    if values.type.precision <= 18:
        return words[:, 0].copy()
    lo = words[:, 0].view(np.uint64).astype(object)
    hi = words[:, 1].astype(object)
    return hi * (1 << 64) + lo


def decimal_from_unscaled(unscaled: np.ndarray, valid: np.ndarray,
                          arrow_type: pa.DataType) -> pa.Array:
    n = len(unscaled)
    words = np.zeros((n, 2), dtype=np.int64)
    if unscaled.dtype == object:
        u = np.where(valid, unscaled, 0).astype(object)
        words[:, 0] = (u & _MASK64).astype(np.uint64).view(np.int64)
        words[:, 1] = (u >> 64).astype(np.int64)
    else:
        u = np.where(valid, unscaled, 0).astype(np.int64)
        words[:, 0] = u
        words[:, 1] = u >> 63
    null_count = int(n - np.count_nonzero(valid))
    validity = None
    if null_count:
        validity = pa.py_buffer(np.packbits(valid.astype(np.uint8), bitorder="little"))
    return pa.Array.from_buffers(arrow_type, n, [validity, pa.py_buffer(words.tobytes())],
                                 null_count=null_count)


def _numbers(values: pa.Array, root: str) -> np.ndarray:
    """Values as numpy (nulls zero): ints/floats in their width, decimals unscaled."""
    if root == "DECIMAL":
        return decimal_unscaled(values)
    return pc.fill_null(values, 0).to_numpy(zero_copy_only=False)


def _build_output(acc: np.ndarray, valid: np.ndarray, field_type, arrow_type) -> pa.Array:
    if field_type.root == "DECIMAL":
        return decimal_from_unscaled(acc, valid, arrow_type)
    dtype = numpy_dtype(arrow_type)
    return pa.array(np.where(valid, acc, 0).astype(dtype), type=arrow_type, mask=~valid)


def _int_range(root: str) -> tuple[int, int]:
    info = np.iinfo(_INT_DTYPES[root])
    return int(info.min), int(info.max)


class SumAgg(FieldAggregator):
    supports_retract = True

    def _fold(self, rows: Rows) -> pa.Array:
        root = self.field.type.root
        if root in _INT_DTYPES:
            acc, ok = self._sum_int(rows, root)
        elif root in ("FLOAT", "DOUBLE"):
            acc, ok = self._sum_float(rows.tail())
        else:
            acc, ok = self._sum_decimal(rows.tail())
        return _build_output(acc, ok, self.field.type, self.arrow_type)

    def _overflow(self, a: int, b: int, op: str) -> SchemaMismatchError:
        java = _JAVA_INT_NAMES.get(self.field.type.root, self.field.type.root)
        return SchemaMismatchError(
            f"aggregate function 'sum' overflowed column {self.field.name!r} "
            f"({self.field.type}): {java} overflow: {a} {op} {b}")

    def _sum_int(self, rows: Rows, root: str) -> tuple[np.ndarray, np.ndarray]:
        n_groups = rows.n_groups
        if rows.n == 0:
            return np.zeros(n_groups, dtype=np.int64), np.zeros(n_groups, dtype=bool)
        vals = _numbers(rows.values, root).astype(np.int64)
        ops = rows.ops
        valid = rows.valid
        if rows.plain:
            fast = _plain_int_sum(rows, vals, valid, root)
            if fast is not None:
                return fast
        segs = rows.segments()
        minus = ops == 3
        with np.errstate(over="ignore"):
            contrib = np.where(minus, -vals, vals)
            total = np.cumsum(contrib)
            before_seg = np.where(segs.start > 0, total[segs.start - 1], 0)
            acc = total - before_seg[segs.id]
        prev = np.empty_like(acc)
        prev[0] = 0
        prev[1:] = acc[:-1]
        prev[segs.head] = 0
        step = ~(segs.head & (ops == 4))
        if root == "BIGINT":
            with np.errstate(over="ignore"):
                bad_add = ((prev ^ acc) & (vals ^ acc)) < 0
                bad_sub = ((prev ^ vals) & (prev ^ acc)) < 0
            bad = step & np.where(minus, bad_sub, bad_add)
        else:
            lo, hi = _int_range(root)
            bad = step & ((acc < lo) | (acc > hi))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise self._overflow(int(prev[i]), int(vals[i]), "-" if minus[i] else "+")
        has_value = np.bincount(segs.id[valid], minlength=len(segs)) > 0
        present = rows.gcount > 0
        out = np.zeros(n_groups, dtype=np.int64)
        ok = np.zeros(n_groups, dtype=bool)
        last_seg = segs.last_of_group[present]
        out[present] = acc[rows.gend[present]]
        ok[present] = has_value[last_seg]
        return out, ok

    def _sum_float(self, rows: Rows) -> tuple[np.ndarray, np.ndarray]:
        dtype = np.float32 if self.field.type.root == "FLOAT" else np.float64
        n_groups = rows.n_groups
        x = _numbers(rows.values, "FLOAT").astype(dtype)
        valid = rows.valid
        neg_zero = dtype(-0.0)
        # -0.0 is the identity of IEEE addition, so a null acc or a null input is -0.0
        contrib = np.where(valid, np.where(rows.ops == 3, -x, x), neg_zero).astype(dtype)
        acc = sequential_sum(contrib, rows.gstart, rows.gcount)
        ok = np.bincount(rows.gid[valid], minlength=n_groups) > 0
        return acc, ok

    def _sum_decimal(self, rows: Rows) -> tuple[np.ndarray, np.ndarray]:
        precision = self.field.type.precision or 10
        compact = precision <= 18
        n_groups = rows.n_groups
        u = _numbers(rows.values, "DECIMAL")
        valid = rows.valid
        ops = rows.ops
        minus = ops == 3
        if compact:
            with np.errstate(over="ignore"):
                contrib = np.where(valid, np.where(minus, -u, u), 0).astype(np.int64)
        else:
            contrib = np.where(valid, np.where(minus, -u, u), 0).astype(object)
        limit = 10 ** precision
        begin = rows.gstart.copy()  # the accumulator is null just before `begin`
        idx = np.arange(rows.n, dtype=np.int64)
        acc_last = np.zeros(n_groups, dtype=contrib.dtype)
        ok = np.zeros(n_groups, dtype=bool)
        pending = rows.gcount > 0
        while pending.any():
            live = pending[rows.gid] & (idx >= begin[rows.gid])
            c = np.where(live, contrib, 0).astype(contrib.dtype)
            with np.errstate(over="ignore"):
                total = np.cumsum(c)
                base_idx = begin - 1
                base = np.where(base_idx >= 0, total[np.clip(base_idx, 0, None)], 0)
                acc = total - base.astype(contrib.dtype)[rows.gid]
            if compact:
                prev = np.empty_like(acc)
                prev[0] = 0
                prev[1:] = acc[:-1]
                prev[idx == begin[rows.gid]] = 0
                with np.errstate(over="ignore"):
                    bad = ((prev ^ acc) & (contrib ^ acc)) < 0
            else:
                bad = np.abs(acc) >= limit
            bad &= live
            first_bad = np.full(n_groups, -1, dtype=np.int64)
            if bad.any():
                pos = np.where(bad, idx, rows.n)
                firsts = np.minimum.reduceat(pos, rows.gstart[rows.gcount > 0])
                present = np.flatnonzero(rows.gcount > 0)
                hit = firsts <= rows.gend[present]
                first_bad[present[hit]] = firsts[hit]
            done = pending & (first_bad < 0)
            has_value = np.bincount(rows.gid[live & valid], minlength=n_groups) > 0
            acc_last[done] = acc[rows.gend[done]]
            ok[done] = has_value[done]
            again = pending & (first_bad >= 0)
            begin[again] = first_bad[again] + 1
            # overflow on the group's last row leaves a null accumulator
            ended = again & (begin > rows.gend)
            ok[ended] = False
            pending = again & ~ended
        if compact and ok.any():
            big = ok & (np.abs(acc_last.astype(object)) >= limit)
            if big.any():
                g = int(np.flatnonzero(big)[0])
                raise SchemaMismatchError(
                    f"aggregate function 'sum' on column {self.field.name!r} "
                    f"({self.field.type}) produced a value with more than {precision} digits "
                    f"(unscaled {acc_last[g]}); Java Paimon would carry this out-of-precision "
                    "decimal, lakeformat refuses it")
        return acc_last, ok


def _plain_int_sum(rows: Rows, vals: np.ndarray, valid: np.ndarray, root: str
                   ) -> tuple[np.ndarray, np.ndarray] | None:
    """Sums of add-only groups whose absolute values cannot overflow at any step (else None)."""
    present = rows.gcount > 0
    starts = rows.gstart[present]
    bound = np.add.reduceat(np.abs(vals.astype(np.float64)), starts)
    _, hi = _int_range(root)
    if len(bound) and bound.max() >= hi * 0.999:
        return None
    out = np.zeros(rows.n_groups, dtype=np.int64)
    out[present] = np.add.reduceat(vals, starts)
    ok = np.bincount(rows.gid[valid], minlength=rows.n_groups) > 0
    return out, ok


_LONG_GROUP = 256


def sequential_sum(x: np.ndarray, start: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Per group, x added one element after the other (float rounding exactly as Java's loop).

    Starts from -0.0, the identity of IEEE addition. Short groups advance in lock-step rounds;
    a group longer than _LONG_GROUP rows is finished by one sequential `cumsum` over its own
    rows, so the Python-level steps stay below _LONG_GROUP + n / _LONG_GROUP.
    """
    out = np.full(len(start), -0.0, dtype=x.dtype)
    present = np.flatnonzero(count > 0)
    short = present[count[present] <= _LONG_GROUP]
    long_ = present[count[present] > _LONG_GROUP]
    with np.errstate(all="ignore"):
        if len(short):
            order, walk = rounds(start[short], count[short])
            state = np.full(len(short), -0.0, dtype=x.dtype)
            for _k, m, r in walk:
                state[:m] += x[r]
            out[short[order]] = state
        for g in long_:
            out[g] = np.cumsum(x[start[g]:start[g] + count[g]])[-1]
    return out


def running_product(x: np.ndarray, start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """Per row, the product of its segment's rows up to it, multiplied one after the other
    (integers wrap: callers check the steps). Lock-step rounds for short segments, one
    `multiply.accumulate` per segment longer than _LONG_GROUP rows."""
    out = np.empty_like(x)
    short = np.flatnonzero(length <= _LONG_GROUP)
    with np.errstate(all="ignore"):
        if len(short):
            _order, walk = rounds(start[short], length[short])
            state = np.ones(len(short), dtype=x.dtype)
            for _k, m, r in walk:
                state[:m] *= x[r]
                out[r] = state[:m]
        for s in np.flatnonzero(length > _LONG_GROUP):
            a, b = start[s], start[s] + length[s]
            out[a:b] = np.multiply.accumulate(x[a:b])
    return out


class ProductAgg(FieldAggregator):
    supports_retract = True

    def _error(self, what: str) -> SchemaMismatchError:
        return SchemaMismatchError(
            f"aggregate function 'product' failed on column {self.field.name!r} "
            f"({self.field.type}): {what}")

    def _fold(self, rows: Rows) -> pa.Array:
        root = self.field.type.root
        n_groups = rows.n_groups
        if rows.n == 0:
            return pa.nulls(n_groups, type=self.arrow_type)
        segs = rows.segments()
        vals = _numbers(rows.values, root)
        if root in _INT_DTYPES:
            vals = vals.astype(np.int64)
        elif root == "DECIMAL":
            vals = vals.astype(object)
        valid = rows.valid
        ops = rows.ops
        if root != "DECIMAL" and not (ops == 3).any():
            return self._multiply_only(rows, segs, vals, valid)
        order, walk = rounds(segs.start, segs.length)
        acc = np.zeros(len(segs), dtype=vals.dtype)
        if acc.dtype == object:
            acc[:] = 0
        acc_ok = np.zeros(len(segs), dtype=bool)
        for _k, m, r in walk:
            a, av = acc[:m], acc_ok[:m]
            v, vv, op = vals[r], valid[r], ops[r]
            reset = op == 4
            take_v = reset | (((op == 1) | (op == 2)) & ~av)
            mul = ((op == 1) | (op == 2)) & av & vv
            div = (op == 3) & av & vv
            new_a = np.where(take_v, v, a)
            new_ok = np.where(take_v, vv, av)
            if mul.any():
                res, res_ok = self._multiply(a[mul], v[mul], root)
                new_a[mul] = res
                new_ok[mul] = res_ok
            if div.any():
                res, res_ok = self._divide(a[div], v[div], root)
                new_a[div] = res
                new_ok[div] = res_ok
            acc[:m] = new_a
            acc_ok[:m] = new_ok
        seg_acc = np.empty_like(acc)
        seg_ok = np.empty_like(acc_ok)
        seg_acc[order] = acc
        seg_ok[order] = acc_ok
        present = rows.gcount > 0
        out = np.zeros(n_groups, dtype=acc.dtype)
        if out.dtype == object:
            out[:] = 0
        ok = np.zeros(n_groups, dtype=bool)
        last = segs.last_of_group[present]
        out[present] = seg_acc[last]
        ok[present] = seg_ok[last]
        return _build_output(out, ok, self.field.type, self.arrow_type)

    def _multiply_only(self, rows: Rows, segs, vals: np.ndarray, valid: np.ndarray
                       ) -> pa.Array:
        """No retract: each segment is a running product from 1 (a null acc or input is 1,
        since agg(null, v) = v and agg(acc, null) = acc); integer steps are then checked."""
        root = self.field.type.root
        one = vals.dtype.type(1)
        x = np.where(valid, vals, one).astype(vals.dtype)
        prefix = running_product(x, segs.start, segs.length)
        if root in _INT_DTYPES:
            prev = np.empty_like(prefix)
            prev[1:] = prefix[:-1]
            prev[segs.start] = 1
            self._multiply(prev, x, root)  # raises at the first overflowing step
        n_groups = rows.n_groups
        present = rows.gcount > 0
        out = np.zeros(n_groups, dtype=prefix.dtype)
        out[present] = prefix[rows.gend[present]]
        has_value = np.bincount(segs.id[valid], minlength=len(segs)) > 0
        ok = np.zeros(n_groups, dtype=bool)
        ok[present] = has_value[segs.last_of_group[present]]
        return _build_output(out, ok, self.field.type, self.arrow_type)

    def _multiply(self, a: np.ndarray, b: np.ndarray, root: str
                  ) -> tuple[np.ndarray, np.ndarray]:
        ok = np.ones(len(a), dtype=bool)
        if root in ("FLOAT", "DOUBLE"):
            with np.errstate(all="ignore"):
                return a * b, ok
        if root == "DECIMAL":
            scale = self.field.type.scale or 0
            res = _round_half_up(a * b, 10 ** scale)
            fits = np.asarray(np.abs(res) < 10 ** (self.field.type.precision or 10), dtype=bool)
            return np.where(fits, res, 0).astype(object), fits
        lo, hi = _int_range(root)
        with np.errstate(over="ignore"):
            res = a * b
        if root == "BIGINT":
            safe_b = np.where(b == 0, 1, b)
            with np.errstate(over="ignore"):
                bad = (b != 0) & (res // safe_b != a)
            bad |= ((a == -1) & (b == lo)) | ((b == -1) & (a == lo))
        else:
            bad = (res < lo) | (res > hi)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise self._error(f"{_JAVA_INT_NAMES[root]} overflow: {a[i]} * {b[i]}")
        return res, ok

    def _divide(self, a: np.ndarray, b: np.ndarray, root: str
                ) -> tuple[np.ndarray, np.ndarray]:
        ok = np.ones(len(a), dtype=bool)
        if root in ("FLOAT", "DOUBLE"):
            with np.errstate(all="ignore"):
                return a / b, ok
        if root == "DECIMAL":
            return self._divide_decimal(a, b)
        zero = b == 0
        if zero.any():
            i = int(np.flatnonzero(zero)[0])
            raise self._error(f"retract divides {a[i]} by zero (ArithmeticException: / by zero)")
        lo, hi = _int_range(root)
        if root == "BIGINT":
            bad = (a == lo) & (b == -1)
            if bad.any():
                raise self._error(f"long overflow: {lo} / -1")
        q = a // b
        fix = (a % b != 0) & ((a < 0) != (b < 0))
        q = q + fix
        bad = (q < lo) | (q > hi)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise self._error(f"{_JAVA_INT_NAMES[root]} overflow: {a[i]} / {b[i]}")
        return q, ok

    def _divide_decimal(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        zero = b == 0
        if zero.any():
            i = int(np.flatnonzero(zero)[0])
            what = "Division undefined" if a[i] == 0 else "Division by zero"
            raise self._error(f"retract divides by zero (ArithmeticException: {what})")
        a = a.astype(object)
        b = b.astype(object)
        gcd = np.frompyfunc(math.gcd, 2, 1)(a, b)
        den = np.abs(b // gcd)
        for p in (2, 5):
            while True:
                even = (den % p) == 0
                if not even.any():
                    break
                den = np.where(even, den // p, den)
        bad = den != 1
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise self._error(
                f"retract of {b[i]} from {a[i]} (unscaled) has no exact decimal quotient "
                "(ArithmeticException: Non-terminating decimal expansion)")
        scale = self.field.type.scale or 0
        num = a * (10 ** scale)
        res = _round_half_up_div(num, b)
        fits = np.asarray(np.abs(res) < 10 ** (self.field.type.precision or 10), dtype=bool)
        return np.where(fits, res, 0).astype(object), fits


def _round_half_up(x: np.ndarray, divisor: int) -> np.ndarray:
    """x / divisor rounded half away from zero, on Python ints."""
    x = x.astype(object)
    if divisor == 1:
        return x
    mag = (np.abs(x) * 2 + divisor) // (2 * divisor)
    return np.where(np.asarray(x < 0, dtype=bool), -mag, mag).astype(object)


def _round_half_up_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    sign = np.where(np.asarray((num < 0) != (den < 0), dtype=bool), -1, 1).astype(object)
    n, d = np.abs(num), np.abs(den)
    mag = (n * 2 + d) // (2 * d)
    return (sign * mag).astype(object)
