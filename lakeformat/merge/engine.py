"""`MergeEngine`: Paimon's MergeFunction and its factory as one vectorized object.

Java folds a key's records one at a time (`reset`, `add`, `getResult`); here an engine takes a
whole batch of records in merge order with the boundaries of its key groups and returns one row
per key. Readers, writers and compaction hold one engine per table schema (`merge_engine` in
this package) and call `merge` (records in any order), `merge_sorted` (records already in merge
order, or with their merge permutation) and `check_retracts` (write-time refusals). Building an
engine runs the option checks Paimon runs when a table is created or altered.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from lakeformat.errors import InvalidArgumentError, InvalidOptionError, UnsupportedError
from lakeformat.merge.context import MergeContext
from lakeformat.merge.sort import (
    DELETE,
    UPDATE_BEFORE,
    VALUE_KIND,
    KeyGroups,
    key_groups,
    merge_order,
    pick_rows,
    sort_for_merge,
)
from lakeformat.schema.table_schema import TableSchema

# Options that change which rows a reader sees, and that lakeformat does not implement.
_UNSUPPORTED_TRUE = ("data-evolution.enabled", "sequence.snapshot-ordering")


class MergeEngine:
    """One table's merge function. Subclasses set `name` and implement `merge_groups`; engines
    that only pick one record per key (deduplicate, first-row) also implement `select`, which
    lets the merge gather just the winning rows instead of reordering every column."""

    name = ""
    picks_rows = False

    def __init__(self, schema: TableSchema):
        self.schema = schema
        self.ctx = MergeContext.of(schema)
        check_common_options(self.ctx)
        self.validate()

    # -- what each engine defines --------------------------------------------------------------
    def validate(self) -> None:
        """The engine's own option checks (InvalidOptionError / UnsupportedError)."""

    def merge_groups(self, table: pa.Table, groups: KeyGroups) -> pa.Table:
        """One merged row per key group of `table`, which is in merge order."""
        raise NotImplementedError

    def merge_permuted(self, table: pa.Table, perm: np.ndarray, groups: KeyGroups
                       ) -> pa.Table:
        """`merge_groups` of the rows `perm` (numpy) takes from `table`. Engines that can
        gather each column's result straight from `table` override this and skip reordering
        every column first."""
        return self.merge_groups(table.take(pa.array(perm)), groups)

    def select(self, kinds: np.ndarray, groups: KeyGroups) -> tuple[np.ndarray, np.ndarray]:
        """For `picks_rows` engines: the winning row per group (positions in merge order) and
        which results become DELETE."""
        raise NotImplementedError

    def refuse_retracts(self, rows: pa.Table, kinds: np.ndarray, table: str) -> None:
        """Raise SchemaMismatchError if this engine would fail on the -U/-D `rows` (all
        retracts, `kinds` theirs) once they meet another record of their key."""

    def required_columns(self, requested: Sequence[str]) -> list[str]:
        """The table columns (in schema order) a merge-on-read must read to produce
        `requested`. Every column unless the engine knows better (fail closed)."""
        return list(self.schema.field_names)

    def _with_order_columns(self, requested: Sequence[str], *more: str) -> list[str]:
        """`requested` plus what orders the merge (the key and `sequence.field` columns) and
        `more`, in schema order."""
        needed = {*requested, *self.ctx.key_names, *self.ctx.sequence_fields, *more}
        return [n for n in self.schema.field_names if n in needed]

    def _not_null_columns(self) -> list[str]:
        """Read so that the engine's null checks fail as they would on a full read."""
        return [f.name for f in self.schema.fields if not f.type.nullable]

    # -- what callers use ----------------------------------------------------------------------
    def sort(self, table: pa.Table, file_ranks: np.ndarray | None = None) -> pa.Table:
        """Put records of one bucket into this table's merge order (see `sort`)."""
        ctx = self.ctx
        return sort_for_merge(table, ctx.key_names, ctx.sequence_fields,
                              ctx.sequence_ascending, file_ranks)

    def merge(self, table: pa.Table, file_ranks: np.ndarray | None = None) -> pa.Table:
        """Merge records of one bucket in any order; result kinds included (callers drop
        retracts). `file_ranks`: per row, the rank of its file (the tie rule of `sort`)."""
        if table.num_rows <= 1:
            return table
        ctx = self.ctx
        perm, groups = merge_order(table, ctx.key_names, ctx.sequence_fields,
                                   ctx.sequence_ascending, file_ranks)
        return self.merge_sorted(table, perm, groups)

    def merge_sorted(self, table: pa.Table, perm: np.ndarray | None = None,
                     groups: KeyGroups | None = None) -> pa.Table:
        """Merge records already in merge order, or put into it by `perm` (numpy); `groups`
        are the key groups of that order (computed when not given). One row per group."""
        if perm is None:
            if groups is None:
                groups = key_groups(table, self.ctx.key_names)
            return self.merge_groups(table, groups)
        if groups is None:
            raise InvalidArgumentError("merge_sorted: `groups` must come with `perm`")
        if not self.picks_rows:
            return self.merge_permuted(table, perm, groups)
        kinds = table[VALUE_KIND].to_numpy()[perm] if table.num_rows else perm[:0]
        rows, override = self.select(kinds, groups)
        return pick_rows(table, perm[rows], override, DELETE)

    def check_retracts(self, rows: pa.Table, kinds: np.ndarray, table: str) -> None:
        """Refuse -U/-D records the engine would fail on once they meet another record of
        their key: committed, they would make every read and compaction of that key fail
        until a rollback. Raises SchemaMismatchError naming the option(s) that allow them.
        `rows` and `kinds` are what the write keeps after ignore-delete/ignore-update-before;
        `table` names the table in the message."""
        retract = (kinds == UPDATE_BEFORE) | (kinds == DELETE)
        if retract.any():
            self.refuse_retracts(rows.filter(pa.array(retract)), kinds[retract], table)


def describe_retracts(kinds: np.ndarray) -> str:
    """"3 -D and 1 -U records", for the engines' retract refusals."""
    parts = [f"{int(np.count_nonzero(kinds == k))} {name}"
             for k, name in ((DELETE, "-D"), (UPDATE_BEFORE, "-U")) if (kinds == k).any()]
    return " and ".join(parts) + " records"


def check_common_options(ctx: MergeContext) -> None:
    """The merge-option checks that cut across engines: `sequence.field`, `fields.*` keys, and
    the options that change what rows a reader sees but lakeformat does not implement."""
    schema, opts = ctx.schema, ctx.options
    for key in _UNSUPPORTED_TRUE:
        if opts.raw.get(key, "false").strip().lower() != "false":
            raise UnsupportedError(f"table option {key}={opts.raw[key]!r} is not supported")
    order = (opts.get("sequence.field.sort-order") or "ascending").strip().lower()
    if order not in ("ascending", "descending"):
        raise InvalidOptionError(f"option 'sequence.field.sort-order' must be ascending or "
                                 f"descending, got {opts.get('sequence.field.sort-order')!r}")
    names = schema.field_names
    _check_fields_options(schema)
    seen: set[str] = set()
    for f in ctx.sequence_fields:
        if f not in names:
            raise InvalidOptionError(f"sequence.field: column {f!r} is not in the table {names}")
        if f in seen:
            raise InvalidOptionError(f"sequence.field: column {f!r} is listed twice")
        seen.add(f)
        if opts.get(f"fields.{f}.aggregate-function"):
            raise InvalidOptionError(
                f"fields.{f}.aggregate-function: no aggregation on sequence field {f!r}")
        if schema.field(f).type.is_nested:
            raise InvalidOptionError(f"sequence.field: column {f!r} has type "
                                     f"{schema.field(f).type}, which cannot be ordered")
    if ctx.sequence_fields and not set(schema.partition_keys) <= set(schema.primary_keys):
        raise InvalidOptionError(
            "sequence.field cannot be used when the primary key does not contain every "
            "partition key (cross-partition update)")
    _ = (opts.ignore_delete, opts.ignore_update_before)  # parse the flags: bad values fail here


def _check_fields_options(schema: TableSchema) -> None:
    """Every `fields.<a>[,<b>].<option>` key must name columns of the table (as Java checks);
    a dot path into a ROW column's members is refused rather than silently ignored."""
    names = set(schema.field_names)
    for key in schema.options:
        if not key.startswith("fields."):
            continue
        segments = key.split(".")
        listed = segments[1].split(",") if len(segments) > 1 else [""]
        for name in listed:
            if name != "default-aggregate-function" and name not in names:
                raise InvalidOptionError(f"Field {name} can not be found in table schema "
                                         f"{schema.field_names} (table option {key})")
        if (len(segments) > 3 and len(listed) == 1 and listed[0] in names
                and schema.field(listed[0]).type.root == "ROW"):
            raise InvalidOptionError(f"table option {key}: paths into ROW column "
                                     f"{listed[0]!r} are not supported")
