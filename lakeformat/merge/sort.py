"""Ordering records for merging: key ascending, then `sequence.field`, then `_SEQUENCE_NUMBER`,
then the rank of the file a record comes from, then retract before add.

The file rank is the one tie rule every reader shares (merge-on-read, full and minor
compaction, the changelog producer): two records of a key that tie on `sequence.field` and
sequence number are ordered as their sorted runs are in Paimon's `Levels` (see
`mergetree/levels.tie_ranks`), so a compaction never changes which of them wins.

Everything here works on whole columns: a sorted table plus the boundaries of its key groups
is what every merge engine consumes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.merge.codes import float_codes, ordering_codes, sort_indices_nulls_first
from lakeformat.schema.table_schema import SEQUENCE_NUMBER, VALUE_KIND

# RowKind bytes [paimon-format.md §5.2]
INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = 0, 1, 2, 3


@dataclass(frozen=True)
class KeyGroups:
    """Key groups of a sorted table: rows starts[i] .. ends[i] (inclusive) share one key."""

    starts: np.ndarray  # int64
    ends: np.ndarray  # int64

    @property
    def sizes(self) -> np.ndarray:
        return self.ends - self.starts + 1

    def __len__(self) -> int:
        return len(self.starts)

    def last(self, flags: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per group: the position of its last row where `flags` (a bool per row) is set, and
        whether there is one (where not, the position is meaningless)."""
        if flags.all():
            return self.ends, np.ones(len(self), dtype=bool)
        marked = np.where(flags, np.arange(len(flags), dtype=np.int64), -1)
        pos = np.maximum.accumulate(marked)[self.ends]  # a running maximum, read at each end
        return pos, pos >= self.starts

    @staticmethod
    def of_boundaries(new_key: np.ndarray) -> KeyGroups:
        """The groups of a sorted table whose row i starts a new key where `new_key[i]`
        (`new_key[0]` is True for a non-empty table)."""
        starts = np.flatnonzero(new_key).astype(np.int64)
        ends = np.empty_like(starts)
        ends[:-1] = starts[1:] - 1
        ends[-1:] = len(new_key) - 1
        return KeyGroups(starts, ends)


def is_retract(kinds: pa.Array | pa.ChunkedArray | np.ndarray) -> np.ndarray:
    k = np.asarray(kinds) if isinstance(kinds, np.ndarray) else _np(kinds)
    return (k == UPDATE_BEFORE) | (k == DELETE)


def _np(col: pa.Array | pa.ChunkedArray) -> np.ndarray:
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    return col.to_numpy(zero_copy_only=False)


def stable_int_order(values: np.ndarray) -> np.ndarray:
    """Positions of signed integer `values` in stable ascending order (equal values keep
    their order). When the values' span leaves room for a position in 63 bits, each value
    (less the minimum) and its position are packed into one int64 and sorted as values:
    numpy's vectorized sort is several times faster than an argsort, and the positions in
    the low bits break ties, so the order is stable by construction."""
    return _int_order(values, False)[0]


def stable_int_groups(values: np.ndarray) -> tuple[np.ndarray, KeyGroups]:
    """`stable_int_order` of `values` and the groups of equal values in that order (what
    `key_groups` finds in a table sorted by a single integer key), from the sort itself."""
    order, _, groups = stable_int_sort(values)
    return order, groups


def stable_int_sort(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, KeyGroups]:
    """`stable_int_groups` and the values in that order (`values[order]`, of their dtype),
    which the sort yields without a gather."""
    order, ordered, lo = _int_order(values, True)
    new_key = np.ones(len(order), dtype=bool)
    np.not_equal(ordered[1:], ordered[:-1], out=new_key[1:])
    if lo:
        ordered += lo
    return order, ordered.astype(values.dtype, copy=False), KeyGroups.of_boundaries(new_key)


def _int_order(values: np.ndarray, with_values: bool
               ) -> tuple[np.ndarray, np.ndarray | None, int]:
    """The stable order, if asked the values in that order less the third item (the minimum
    when packed, else 0)."""
    n = len(values)
    packable = n >= 2 and values.dtype.kind == "i"
    if packable:
        lo, hi = int(values.min()), int(values.max())
        bits = (n - 1).bit_length()
        packable = (hi - lo).bit_length() + bits <= 63
    if not packable:
        order = np.argsort(values, kind="stable").astype(np.int64, copy=False)
        return order, values[order] if with_values else None, 0
    packed = values.astype(np.int64)
    packed -= lo
    packed <<= bits
    packed |= np.arange(n, dtype=np.int64)
    packed.sort()
    ordered = packed >> bits if with_values else None
    packed &= (1 << bits) - 1
    return packed, ordered, lo


def sort_for_merge(table: pa.Table, key_names: list[str],
                   sequence_fields: Sequence[str] = (), sequence_ascending: bool = True,
                   file_ranks: np.ndarray | None = None) -> pa.Table:
    """Sort records of one bucket into merge order (see `merge_permutation`)."""
    if table.num_rows <= 1:
        return table
    return table.take(merge_permutation(table, key_names, sequence_fields, sequence_ascending,
                                        file_ranks))


def merge_permutation(table: pa.Table, key_names: list[str],
                      sequence_fields: Sequence[str] = (), sequence_ascending: bool = True,
                      file_ranks: np.ndarray | None = None) -> pa.Array:
    """Row order for merging: key ascending; then the `sequence.field` columns in their sort
    order with nulls lowest in both orders (processed first, so they lose); then
    `_SEQUENCE_NUMBER`; then `file_ranks` (per row: the rank of its file, larger = newer,
    processed later, so it wins a tie); then retract before add. Stable.
    """
    add_rank = pa.array(~is_retract(table[VALUE_KIND]))
    columns = [key_column(table[k]) for k in key_names] + [
        pa.array(_sequence_rank(table[f], sequence_ascending)) for f in sequence_fields]
    names = [f"k{i}" for i in range(len(key_names))] + [
        f"s{i}" for i in range(len(sequence_fields))]
    columns.append(table[SEQUENCE_NUMBER])
    names.append("seq")
    if file_ranks is not None and len(file_ranks) and file_ranks.min() != file_ranks.max():
        columns.append(pa.array(np.asarray(file_ranks, dtype=np.int64)))
        names.append("file")
    sort_table = pa.table(columns + [add_rank], names=names + ["add"])
    return sort_indices_nulls_first(sort_table, [(n, "ascending") for n in names]
                                     + [("add", "ascending")])


def merge_order(table: pa.Table, key_names: list[str], sequence_fields: Sequence[str] = (),
                sequence_ascending: bool = True, file_ranks: np.ndarray | None = None,
                runs: np.ndarray | None = None) -> tuple[np.ndarray, KeyGroups]:
    """`merge_permutation` (as numpy) and the key groups of that order.

    `runs` (optional): `table` is these numbers of rows of key-sorted runs, one after the
    other. Runs usually hold disjoint sequence ranges; taken oldest first (by their smallest
    sequence number), a stable sort of a single integer or floating key is then the merge
    order — a merge of the runs, for numpy's timsort. That shortcut is taken when there is no
    `sequence.field` and one file rank and every key's records prove to stand in sequence
    and retract-before-add order (checked); otherwise the full sort decides."""
    fast = _key_sort(table, key_names, sequence_fields, file_ranks, runs)
    if fast is not None:
        return fast
    perm = merge_permutation(table, key_names, sequence_fields, sequence_ascending,
                             file_ranks).to_numpy()
    return perm, key_groups(table.select(key_names).take(pa.array(perm)), key_names)


def _key_sort(table: pa.Table, key_names: list[str], sequence_fields: Sequence[str],
              file_ranks: np.ndarray | None, runs: np.ndarray | None
              ) -> tuple[np.ndarray, KeyGroups] | None:
    if len(key_names) != 1 or sequence_fields or table.num_rows == 0:
        return None
    if file_ranks is not None and len(file_ranks) and file_ranks.min() != file_ranks.max():
        return None
    col = table[key_names[0]]
    if col.null_count or not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
        return None
    keys = _np(key_column(col))
    seq = _np(table[SEQUENCE_NUMBER])
    base = _oldest_first(seq, runs)
    if base is not None:
        keys, seq = keys[base], seq[base]
    perm = np.argsort(keys, kind="stable")
    keys = keys[perm]
    same = keys[1:] == keys[:-1]
    if same.any():
        seq = seq[perm]
        back = seq[1:] < seq[:-1]
        tie = same & (seq[1:] == seq[:-1])
        if tie.any():
            if base is not None:  # a full tie keeps the original row order: sort it fully
                return None
            add = ~is_retract(table[VALUE_KIND])
            back |= tie & (add[perm][:-1] & ~add[perm][1:])
        if (same & back).any():
            return None
    if base is not None:
        perm = base[perm]
    return perm.astype(np.int64, copy=False), KeyGroups.of_boundaries(
        np.concatenate([[True], ~same]))


def _oldest_first(seq: np.ndarray, runs: np.ndarray | None) -> np.ndarray | None:
    """Row order visiting the runs by their smallest sequence number (None: as they are)."""
    if runs is None or len(runs) < 2 or (runs <= 0).any():
        return None
    bounds = np.concatenate([[0], np.cumsum(runs)]).astype(np.int64)
    order = np.argsort(np.minimum.reduceat(seq, bounds[:-1]), kind="stable")
    if (order == np.arange(len(order))).all():
        return None
    return np.concatenate([np.arange(bounds[i], bounds[i + 1], dtype=np.int64)
                           for i in order])


def key_column(column: pa.ChunkedArray | pa.Array) -> pa.Array | pa.ChunkedArray:
    """A primary-key column as Java's key comparator sees it: FLOAT/DOUBLE become int64 codes
    in `Double.compare` order, so every NaN is one key (and sorts last) and -0.0 is a key of
    its own just below 0.0 (Arrow compares NaN unequal to itself and -0.0 equal to 0.0).
    Other types sort and compare as they are."""
    if not pa.types.is_floating(column.type):
        return column
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    return pa.array(float_codes(column))


def _sequence_rank(column: pa.ChunkedArray, ascending: bool) -> np.ndarray:
    """Ascending int64 ranks of a `sequence.field` column in Paimon's comparator order.

    Nulls rank lowest in both sort orders (they are processed first and lose), floats order
    like Java's Double.compare (-0.0 < 0.0, NaN largest), strings by unsigned bytes.
    """
    codes = ordering_codes([column])  # 0 = null
    if ascending:
        return codes
    return np.where(codes == 0, 0, int(codes.max(initial=0)) + 1 - codes)


def key_groups(table: pa.Table, key_names: list[str]) -> KeyGroups:
    """Boundaries of runs of equal keys in a key-sorted table."""
    n = table.num_rows
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return KeyGroups(empty, empty)
    new_key = np.zeros(n, dtype=bool)
    new_key[0] = True
    if n > 1:
        for name in key_names:
            col = key_column(table[name])
            prev, cur = col.slice(0, n - 1), col.slice(1)
            neq = pc.not_equal(cur, prev)
            # keys are never null; fill defensively so a null never merges two keys
            neq = pc.fill_null(neq, True)
            new_key[1:] |= _np(neq)
    return KeyGroups.of_boundaries(new_key)


def pick_rows(table: pa.Table, rows: np.ndarray, override: np.ndarray, kind: int) -> pa.Table:
    """Take one row per group; where `override` is set, force `_VALUE_KIND` to `kind`."""
    out = table.take(pa.array(rows))
    if override.any():
        kinds = np.where(override, kind, _np(out[VALUE_KIND])).astype(np.int8)
        out = out.set_column(out.schema.get_field_index(VALUE_KIND), VALUE_KIND, pa.array(kinds))
    return out
