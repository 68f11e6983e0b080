"""`merge-engine=partial-update`, every option, as whole-column operations.

Paimon folds a key's records one at a time into a row that starts all null. This module gets
the same row from cumulative maxima instead:

* A column outside every sequence group ends with the value of the last *event* for it: an add
  record carrying a non-null value, or a record that replaces the whole row (the first record
  of a key when it is a retract, a -D under `partial-update.remove-record-on-delete`, a -D that
  wins a group listed in `partial-update.remove-record-on-sequence-group`).
* A sequence group stores the ordering value of the last record that won it, and a record wins
  when its ordering value is >= the stored one. The stored value is therefore a running maximum
  (ties go to the later record) that restarts at every whole-row replacement, so "wins" is one
  comparison against a segmented prefix maximum. The group's plain columns then come from its
  last winner (null if that winner is a retract); its aggregated columns fold every record with
  the op the record plays for the group (agg, aggReversed, retract, reset).
* Whether a -D replaces the row depends on the state before it, which depends on the earlier
  replacements. Those are found in rounds: each round confirms at least the next replacement of
  every key, so the number of rounds is bounded by the replacements per key, not by rows.

Paimon's reducer rule holds: a key with a single record is returned unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.errors import SchemaMismatchError
from lakeformat.merge import last_non_null
from lakeformat.merge.codes import ordering_codes
from lakeformat.merge.context import MergeContext
from lakeformat.merge.engine import MergeEngine, describe_retracts
from lakeformat.merge.partial_update_options import PartialUpdateConfig
from lakeformat.merge.sequence_group import SequenceGroup, at_least_stored
from lakeformat.merge.sort import DELETE, INSERT, UPDATE_BEFORE, KeyGroups
from lakeformat.schema.table_schema import SEQUENCE_NUMBER, VALUE_KIND

REFUSE_RETRACT = "\n".join([
    "By default, Partial update can not accept delete records, you can choose one of the "
    "following solutions:",
    "1. Configure 'ignore-delete' to ignore delete records.",
    "2. Configure 'partial-update.remove-record-on-delete' to remove the whole row when "
    "receiving delete records.",
    "3. Configure 'sequence-group's to retract partial columns. Also configure "
    "'partial-update.remove-record-on-sequence-group' to remove the whole row when receiving "
    "deleted records of `specified sequence group`.",
])

# ops of FieldAggregator.reduce
_SKIP, _AGG, _AGG_REVERSED, _RETRACT, _RESET = 0, 1, 2, 3, 4


class PartialUpdateEngine(MergeEngine):
    """Java's PartialUpdateMergeFunction (see the module docs); its options are read once, by
    `PartialUpdateConfig.of`, which also creates the field aggregators of sequence groups."""

    name = "partial-update"

    def validate(self) -> None:
        """Every check Paimon's partial-update factory makes; raises naming the option key."""
        self.cfg = PartialUpdateConfig.of(self.schema)

    def merge_groups(self, table: pa.Table, groups: KeyGroups) -> pa.Table:
        if len(groups) == table.num_rows:
            return table
        if self._adds_only(table):
            return last_non_null.merge_adds(table, groups)
        return _Merge(table, groups, self.ctx, self.cfg).run()

    def merge_permuted(self, table: pa.Table, perm: np.ndarray, groups: KeyGroups
                       ) -> pa.Table:
        if len(groups) == len(perm):
            return table.take(pa.array(perm))
        if self._adds_only(table):
            return last_non_null.merge_adds(table, groups, perm)
        return _Merge(table, groups, self.ctx, self.cfg, perm).run()

    def _adds_only(self, table: pa.Table) -> bool:
        cfg = self.cfg
        return last_non_null.applies(
            table, bool(cfg.groups),
            [n for n, nullable in zip(cfg.names, cfg.nullable) if not nullable])

    def required_columns(self, requested: Sequence[str]) -> list[str]:
        """A sequence group's ordering fields decide every field it protects and the merge
        walks each group whole: every column of every group is read, with NOT NULL ones."""
        cfg = self.cfg
        grouped = [cfg.names[i] for g in cfg.groups for i in (*g.ordering, *g.protected)]
        return self._with_order_columns(requested, *grouped, *self._not_null_columns())

    def refuse_retracts(self, rows: pa.Table, kinds: np.ndarray, table: str) -> None:
        """Write-time form of the engine's retract refusals:
        without sequence groups a retract needs ignore-delete or remove-record-on-delete; in a
        group, a retract with an ordering value reaches the group's aggregate functions, which
        must be able to retract (or ignore it). Conservative: a -D that would remove the whole row
        through remove-record-on-sequence-group is checked as a plain retract."""
        cfg = self.cfg
        if cfg.ignore_delete:
            return
        what = f"{table}: refused {describe_retracts(kinds)}"
        if not cfg.groups:
            if not cfg.remove_on_delete:
                raise SchemaMismatchError(f"{what}: {REFUSE_RETRACT}")
            return
        group_of = cfg.group_of
        for i, agg in sorted(cfg.aggs.items()):
            if agg.ignore_retract or getattr(agg.aggregator, "supports_retract", True):
                continue
            g = group_of[i]
            ordering = [cfg.names[j] for j in g.ordering]
            if any(rows[n].null_count < rows.num_rows for n in ordering):
                raise SchemaMismatchError(
                    f"{what}: aggregate function '{agg.function}' of column '{cfg.names[i]}' "
                    f"(sequence group {g.option}) does not support retraction; set "
                    f"'fields.{cfg.names[i]}.ignore-retract'='true' or 'ignore-delete'='true' "
                    "to accept them")


# -- the merge -------------------------------------------------------------------------------------

def _np(col: pa.ChunkedArray | pa.Array) -> np.ndarray:
    return np.asarray(_arr(col).to_numpy(zero_copy_only=False))


def _arr(col: pa.ChunkedArray | pa.Array) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    return col


def _valid(col: pa.ChunkedArray | pa.Array) -> np.ndarray:
    if col.null_count == 0:
        return np.ones(len(col), dtype=bool)
    return np.asarray(_arr(pc.is_valid(col)).to_numpy(zero_copy_only=False), dtype=bool)


class _Merge:
    """One call of the engine: per-row flags shared by every column, then column by column.

    `perm` (optional): the rows of `table` to merge, in merge order (all of them, or those a
    lookup merge selected). Per-row flags are then gathered through it and each result column
    is taken from `table` at `perm[position]`, so no column is reordered whole; sequence
    groups walk reordered columns (taken first)."""

    def __init__(self, table: pa.Table, groups: KeyGroups, ctx: MergeContext,
                 cfg: PartialUpdateConfig, perm: np.ndarray | None = None):
        if perm is not None and cfg.groups:
            table, perm = table.take(pa.array(perm)), None
        self.table, self.ctx, self.cfg, self.perm = table, ctx, cfg, perm
        n = self.n = table.num_rows if perm is None else len(perm)
        self.groups = groups
        self.starts, self.ends = groups.starts, groups.ends
        sizes = groups.sizes
        self.n_keys = len(groups)
        self.lone = sizes == 1
        self.key_of_row = np.repeat(np.arange(self.n_keys, dtype=np.int64), sizes)
        self.merged = np.repeat(~self.lone, sizes)  # rows of keys with 2+ records
        kinds = self._values(VALUE_KIND)
        retract = (kinds == UPDATE_BEFORE) | (kinds == DELETE)
        self.kinds = kinds
        self.add = ~retract & self.merged
        self.retract = retract & self.merged
        self.delete = (kinds == DELETE) & self.merged
        self.is_start = np.zeros(n, dtype=bool)
        self.is_start[self.starts] = True
        # the first record of a key, when a retract, becomes the row before anything else
        self.init = self.is_start & self.retract
        self.processed = self.add | (self.retract & (not cfg.ignore_delete))
        self.reset = np.zeros(n, dtype=bool)  # records that replace the whole row

    # -- helpers -------------------------------------------------------------------------------
    def _values(self, name: str) -> np.ndarray:
        """A column's values in merge order, as numpy."""
        values = _np(self.table[name])
        return values if self.perm is None else values[self.perm]

    def _valid(self, col: pa.ChunkedArray | pa.Array) -> np.ndarray:
        """Whether each record (in merge order) has a value in `col`."""
        if col.null_count == 0:
            return np.ones(self.n, dtype=bool)
        valid = _valid(col)
        return valid if self.perm is None else valid[self.perm]

    def _source(self, positions: np.ndarray) -> np.ndarray:
        """Rows of `table` at positions in merge order."""
        return positions if self.perm is None else self.perm[positions]

    def last(self, event: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per key: the position of its last row with `event` set, and whether there is one."""
        return self.groups.last(event)

    def at_least_stored(self, values: np.ndarray) -> np.ndarray:
        """`at_least_stored` over the whole batch with the replacements found so far."""
        if self.reset.any():
            return at_least_stored(values, self.is_start, self.reset)
        return at_least_stored(values, self.is_start, self.reset, self.key_of_row)

    # -- the merge -----------------------------------------------------------------------------
    def run(self) -> pa.Table:
        cfg = self.cfg
        if not cfg.groups and not cfg.ignore_delete and not cfg.remove_on_delete \
                and self.retract.any():
            raise SchemaMismatchError(REFUSE_RETRACT)
        names = self.table.column_names
        index_of = {name: i for i, name in enumerate(cfg.names)}
        if cfg.groups:
            group_values = self._sequence_groups()
        else:
            if cfg.remove_on_delete:
                self.reset = self.delete.copy()
            group_values = {}
            self._check_not_null_adds()
        self._check_not_null_replacements()

        out_cols: dict[str, pa.Array] = {}
        shared: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for name in names:
            if name in (SEQUENCE_NUMBER, VALUE_KIND):
                continue
            i = index_of.get(name)
            if i is not None and i in group_values:
                out_cols[name] = group_values[i]
            elif name in self.ctx.key_names:
                out_cols[name] = self.table[name].take(pa.array(self._source(self.ends)))
            else:
                out_cols[name] = self._outside_groups(self.table[name], shared)
        out_cols[SEQUENCE_NUMBER], out_cols[VALUE_KIND] = self._sequence_and_kind()
        return pa.table([out_cols[n] for n in names], schema=self.table.schema)

    def _sequence_and_kind(self) -> tuple[pa.Array, pa.Array]:
        seq = self._values(SEQUENCE_NUMBER).astype(np.int64)
        pos, found = self.last(self.processed)
        merged_seq = np.where(found, seq[np.where(found, pos, 0)], 0)
        _, has_add = self.last(self.add)
        deleted = self.reset[self.ends] | ~has_add
        kind = np.where(deleted, DELETE, INSERT)
        seq_out = np.where(self.lone, seq[self.starts], merged_seq)
        kind_out = np.where(self.lone, self.kinds[self.starts], kind).astype(np.int8)
        return pa.array(seq_out, pa.int64()), pa.array(kind_out, pa.int8())

    def _take(self, col: pa.ChunkedArray, pos: np.ndarray, null: np.ndarray) -> pa.Array:
        """Per key: the value at `pos` (null where `null`); lone keys keep their record."""
        idx = self._source(np.where(self.lone, self.starts, pos))
        mask = null & ~self.lone
        if mask.any():
            return _arr(col.take(pa.array(np.where(mask, 0, idx), mask=mask)))
        return _arr(col.take(pa.array(idx)))

    def _outside_groups(self, col: pa.ChunkedArray,
                        shared: dict[str, tuple[np.ndarray, np.ndarray]]) -> pa.Array:
        """Non-null values of add records overwrite; whole-row replacements set the value."""
        base = self.reset | self.init
        if col.null_count == 0:
            if "all" not in shared:
                shared["all"] = self.last(self.add | base)
            pos, found = shared["all"]
        else:
            pos, found = self.last((self.add & self._valid(col)) | base)
        return self._take(col, pos, ~found)

    # -- sequence groups ------------------------------------------------------------------------
    def _sequence_groups(self) -> dict[int, pa.Array]:
        cfg, table = self.cfg, self.table
        codes: dict[str, np.ndarray] = {}
        counted: dict[str, np.ndarray] = {}
        # the stored ordering value moves with processed records and with the initial row
        counts = self.processed | self.init
        every_row_counts = bool(counts.all())
        for g in cfg.groups:
            c = ordering_codes([table[cfg.names[i]] for i in g.ordering])
            if not every_row_counts:
                c[~self.merged] = 0
            codes[g.option] = c
            counted[g.option] = c if every_row_counts else np.where(counts, c, 0)

        removing = [g for g in cfg.groups if g.removes_row]
        if removing:
            self._find_replacements(removing, codes, counted)
        wins: dict[str, np.ndarray] = {}
        winning_at: dict[str, np.ndarray] = {}  # incoming >= stored (replacing rows included)
        for g in cfg.groups:
            # counted == codes on every processed row, the only rows where this is used
            at_least = self.at_least_stored(counted[g.option])
            winning_at[g.option] = at_least
            wins[g.option] = at_least & self.processed & ~self.reset
        self._check_retracts(codes, winning_at)

        out: dict[int, pa.Array] = {}
        replaced = self.reset | self.init
        for g in cfg.groups:
            win = wins[g.option]
            pos, found = self.last(win | replaced)
            retract_won = (win & self.retract)[np.where(found, pos, 0)]
            for i in g.ordering:
                out[i] = self._take(table[cfg.names[i]], pos, ~found)
            for i in g.protected:
                col = table[cfg.names[i]]
                if i in cfg.aggs:
                    out[i] = self._aggregate(col, i, g, codes[g.option] > 0, win)
                else:
                    out[i] = self._take(col, pos, ~found | retract_won)
        return out

    def _find_replacements(self, removing: list[SequenceGroup], codes: dict[str, np.ndarray],
                           counted: dict[str, np.ndarray]) -> None:
        """-D records that win a group listed in remove-record-on-sequence-group replace the
        row. Each round judges every candidate against the replacements confirmed so far: a
        confirmed one stays confirmed (a later segment start only lowers the maximum it is
        judged against) and the first unconfirmed replacement of each key gets confirmed, so
        the rounds are bounded by the replacements of a key. Keys are independent: a key
        whose replacements did not change in a round is settled and leaves the rounds."""
        candidate = self.delete & self.processed
        candidate &= np.logical_or.reduce([codes[g.option] > 0 for g in removing])
        if not candidate.any():
            return
        has_candidate = np.zeros(self.n_keys, dtype=bool)
        has_candidate[self.key_of_row[candidate]] = True
        keys = np.flatnonzero(has_candidate)
        rows = _rows_of(keys, self.starts, self.ends)
        reset = np.zeros(self.n, dtype=bool)
        while len(rows):
            key_start = self.is_start[rows]
            cand = candidate[rows]
            now = reset[rows]
            fires = np.zeros(len(rows), dtype=bool)
            for g in removing:
                fires |= cand & at_least_stored(counted[g.option][rows], key_start, now)
            reset[rows] = fires
            changed = fires != now
            if not changed.any():
                break
            seg_key = np.cumsum(key_start) - 1
            moving = np.zeros(int(seg_key[-1]) + 1, dtype=bool)
            moving[seg_key[changed]] = True
            rows = rows[moving[seg_key]]
        self.reset = reset

    def _aggregate(self, col: pa.ChunkedArray, i: int, g: SequenceGroup, present: np.ndarray,
                   win: np.ndarray) -> pa.Array:
        agg = self.cfg.aggs[i]
        ops = np.zeros(self.n, dtype=np.int8)
        live = self.processed & present & ~self.reset
        ops[live & self.add & win] = _AGG
        ops[live & self.add & ~win] = _AGG_REVERSED
        if not agg.ignore_retract:
            ops[live & self.retract] = _RETRACT
        ops[self.reset] = _RESET
        init_mask = self.init[self.starts]
        values = _arr(col)
        init = values.take(pa.array(self.starts)) if init_mask.any() else None
        result = agg.aggregator.reduce(values, self.starts, self.ends, ops, init,
                                       init_mask if init is not None else None)
        result = _arr(result)
        if not self.lone.any():
            return result
        both = pa.concat_arrays([result, values.take(pa.array(self.starts))])
        pick = np.where(self.lone, self.n_keys + np.arange(self.n_keys), np.arange(self.n_keys))
        return both.take(pa.array(pick))

    # -- errors ---------------------------------------------------------------------------------
    def _check_retracts(self, codes: dict[str, np.ndarray],
                        winning_at: dict[str, np.ndarray]) -> None:
        """A retract reaching an aggregate function that cannot retract fails, as in Paimon —
        also on a -D that then replaces the row, for the fields Paimon walks before the group
        that removes it."""
        cfg = self.cfg
        stop = np.full(self.n, len(cfg.names), dtype=np.int64)
        if self.reset.any():
            for g in cfg.groups:
                if g.removes_row:
                    fired = self.reset & winning_at[g.option]
                    stop = np.where(fired, np.minimum(stop, g.first_ordering), stop)
        group_of = cfg.group_of
        for i, agg in cfg.aggs.items():
            if agg.ignore_retract or getattr(agg.aggregator, "supports_retract", True):
                continue
            g = group_of[i]
            hit = self.processed & self.retract & (codes[g.option] > 0)
            hit &= ~self.reset | (stop > i)
            if hit.any():
                raise SchemaMismatchError(
                    f"Aggregate function '{agg.function}' of column '{cfg.names[i]}' does not "
                    "support retraction; set 'fields."
                    f"{cfg.names[i]}.ignore-retract'='true' to ignore retract messages")

    def _check_not_null_adds(self) -> None:
        for name, nullable in zip(self.cfg.names, self.cfg.nullable):
            if nullable or name not in self.table.column_names:
                continue
            col = self.table[name]
            if col.null_count and (self.add & ~self._valid(col)).any():
                raise SchemaMismatchError(
                    f"partial-update: column '{name}' is NOT NULL but a record of a merged key "
                    "has null in it")

    def _check_not_null_replacements(self) -> None:
        rows = self.reset | self.init
        if not rows.any():
            return
        for name, nullable in zip(self.cfg.names, self.cfg.nullable):
            if nullable or name not in self.table.column_names:
                continue
            col = self.table[name]
            if col.null_count and (rows & ~self._valid(col)).any():
                raise SchemaMismatchError(
                    f"partial-update: column '{name}' is NOT NULL but a retract record that "
                    "becomes the merged row has null in it")


def _rows_of(keys: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Row positions of the given key groups, in order."""
    lengths = ends[keys] - starts[keys] + 1
    offsets = np.repeat(starts[keys] - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
    return np.arange(int(lengths.sum()), dtype=np.int64) + offsets
