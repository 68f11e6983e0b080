"""Merge engines across lakeformat and pypaimon 2.1.0, checked against a small Paimon model.

Three directions:

1. lakeformat writes tables of every engine pypaimon can read; pypaimon reads the same rows
   (and both equal the model below). A pypaimon-written twin fed the same operations is read
   by lakeformat too, which covers "pypaimon writes, lakeformat reads" for those engines.
2. pypaimon writes tables with the engine options it accepts; lakeformat reads what Paimon's
   semantics say.
3. Options pypaimon refuses: pypaimon writes under options it accepts (deduplicate with
   rowkind.field, so -U/+U/-D records land in the files), then the table's options are altered
   by publishing `schema/schema-1` (schema-0 + the engine options), as an ALTER TABLE ... SET
   would; lakeformat must then merge the old files with the new engine.

What pypaimon 2.1.0 accepts (probed; see pypaimon/common/merge_engine_dispatch.py and
pypaimon/read/merge_engine_support.py):

* deduplicate: any options; `sequence.field` (+ `sequence.field.sort-order` ascending and
  descending) IS honoured on read; `ignore-delete` (and aliases) drops retracts at write time
  only: pypaimon's DeduplicateMergeFunction takes no ignore-delete flag, so retracts already in
  the files (options altered later) are still applied by pypaimon's reads (Java skips them).
* first-row (+ ignore-delete): accepted, but batch reads skip level-0 files
  (`batch_scan_skip_level0`, as Java does) and neither writer compacts here (lakeformat's
  with `lookup-wait` off), so pypaimon reads nothing at all from a first-row table written by
  either library.
* partial-update, plain only (also with table-level `sequence.field`). Retracts: its write
  buffer runs the merge function over every key of a batch of 2+ rows and raises
  NotImplementedError on a -U/-D; a -D alone in a one-row batch is written, but reading a key
  whose records include it raises NotImplementedError. NotImplementedError at write for:
  `ignore-delete` (+ aliases), `partial-update.remove-record-on-delete`,
  `partial-update.remove-record-on-sequence-group`, `fields.*.sequence-group`,
  `fields.*.aggregate-function`, `fields.default-aggregate-function`.
* aggregation with sum, product, max, min, last_value, last_non_null_value, first_value,
  first_non_null_value, bool_and, bool_or, listagg, collect, merge_map (also nested_update,
  nested_partial_update, merge_map_with_keytime and the theta_sketch/hll_sketch/rbm32 sketches)
  and table-level `sequence.field`. Retracts as for partial-update: refused by the write buffer
  in batches of 2+ rows, written from one-row batches, refused on read. NotImplementedError at
  write for `fields.*.ignore-retract=true`, `aggregation.remove-record-on-delete`,
  `fields.*.sequence-group` and unknown functions (e.g. rbm64). merge_map has two bugs (see
  `test_merge_map_both_ways`).

Paimon semantics are paimon-format.md §8. The model applies records of a key in merge order
(sequence.field, nulls lowest in both orders, then arrival = _SEQUENCE_NUMBER order) and keeps
the reducer rule: a key with one record is emitted unchanged, except under aggregation, whose
functions also run on a lone record (§8.1). Tests keep at most one record per key per commit
wherever in-writer merging (both writers merge a batch per key before writing, as Java's write
buffer does) could change the outcome (partial-update with sequence groups / sequence.field,
aggregation with order-dependent functions, altered options).
"""

from __future__ import annotations

import decimal
import random
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lakeformat as lf
from lakeformat.errors import LakeformatError, UnsupportedError
from lakeformat.schema.schema_manager import SchemaManager
from lakeformat.schema.table_schema import TableSchema
from tests.support.pypaimon_helpers import (
    DAYS,
    Row,
    assert_same_rows,
    create_paimon_table,
    paimon_catalog,
    paimon_read,
    paimon_write,
    sorted_rows,
)

RETRACTS = ("-U", "-D")
D = decimal.Decimal


# =============================================================================================
# A small model of Paimon's merge engines (paimon-format.md §8), one key at a time
# =============================================================================================

class Refused(Exception):
    """Paimon refuses to merge the key (e.g. partial-update / first-row meeting a retract)."""


def _true(value: Any) -> bool:
    return str(value).strip().lower() == "true"


def _split(text: str | None) -> list[str]:
    return [s.strip() for s in (text or "").split(",") if s.strip()]


class _Agg:
    """One field aggregator (§8.5 table), for the functions these tests use."""

    def __init__(self, name: str, column: str, options: Mapping[str, str]):
        self.name = name
        self.delimiter = options.get(f"fields.{column}.list-agg-delimiter", ",")
        self.ignore_retract = _true(options.get(f"fields.{column}.ignore-retract", "false"))
        self.first_seen = False  # first_value: reset per merge

    def agg(self, acc: Any, v: Any) -> Any:
        n = self.name
        if n in ("primary-key", "last_value"):
            return v
        if n == "last_non_null_value":
            return acc if v is None else v
        if n == "first_value":
            if not self.first_seen:
                self.first_seen = True
                return v
            return acc
        if n in ("first_non_null_value", "first_not_null_value"):
            return v if acc is None else acc
        if acc is None or v is None:
            if n == "listagg" and v is not None and not v.strip():
                return acc
            return v if acc is None else acc
        if n == "sum":
            return acc + v
        if n == "product":
            return acc * v
        if n == "max":
            return max(acc, v)
        if n == "min":
            return min(acc, v)
        if n == "bool_and":
            return acc and v
        if n == "bool_or":
            return acc or v
        if n == "listagg":
            return acc if not v.strip() else acc + self.delimiter + v
        if n == "collect":
            return list(acc) + list(v)
        if n == "merge_map":
            merged = dict(acc)
            merged.update(dict(v))
            return list(merged.items())
        raise AssertionError(f"model has no aggregator {n}")

    def retract(self, acc: Any, v: Any) -> Any:
        n = self.name
        if self.ignore_retract:
            return acc
        if n == "primary-key":
            return v
        if n == "last_value":
            return None
        if n == "last_non_null_value":
            return acc if v is None else None
        if n == "sum":
            if v is None:
                return acc
            return -v if acc is None else acc - v
        if n == "collect":
            if acc is None or v is None:
                return acc
            out = list(acc)
            for x in v:
                if x in out:
                    out.remove(x)
            return out
        if n == "merge_map":
            if acc is None or v is None:
                return acc
            gone = {k for k, _ in v}
            return [(k, x) for k, x in acc if k not in gone]
        raise Refused(f"aggregate function {n} cannot retract")


@dataclass
class _Group:
    ordering: list[str]
    protected: list[str]


class PaimonModel:
    """Every record ever written, per primary key; `expected()` merges them as Paimon does.

    `write` plays a writer: rows carry their RowKind in the `rowkind.field` column, and
    retracts are dropped when the options at write time say `ignore-delete` (both writers
    filter them, as Java's RowKindFilter does). `alter` swaps the options the merge uses.
    Sequence fields must be numeric (descending order negates them).
    """

    IGNORE_DELETE_KEYS = ("ignore-delete", "first-row.ignore-delete",
                          "deduplicate.ignore-delete", "partial-update.ignore-delete")

    def __init__(self, keys: Sequence[str], columns: Sequence[str],
                 options: Mapping[str, str], kind_field: str = "rk"):
        self.keys = list(keys)
        self.columns = list(columns)
        self.options = dict(options)
        self.kind_field = kind_field
        self.records: dict[tuple[Any, ...], list[tuple[str, Row]]] = {}

    # -- writing -------------------------------------------------------------------------------
    def alter(self, options: Mapping[str, str]) -> None:
        self.options = dict(options)

    def ignore_delete(self) -> bool:
        for key in self.IGNORE_DELETE_KEYS:
            if key in self.options:
                return _true(self.options[key])
        return False

    def write(self, rows: Iterable[Mapping[str, Any]]) -> None:
        for row in rows:
            kind = row.get(self.kind_field) or "+I"
            if kind in RETRACTS and self.ignore_delete():
                continue
            key = tuple(row[k] for k in self.keys)
            self.records.setdefault(key, []).append(
                (kind, {c: row.get(c) for c in self.columns}))

    # -- merging -------------------------------------------------------------------------------
    @property
    def engine(self) -> str:
        return self.options.get("merge-engine", "deduplicate")

    def _ordered(self, recs: list[tuple[str, Row]]) -> list[tuple[str, Row]]:
        fields = _split(self.options.get("sequence.field"))
        sign = -1 if self.options.get("sequence.field.sort-order",
                                      "ascending").lower() == "descending" else 1

        def sort_key(item: tuple[int, tuple[str, Row]]) -> tuple[Any, ...]:
            arrival, (_, row) = item
            seq = tuple((0, 0) if row[f] is None else (1, sign * row[f]) for f in fields)
            return (seq, arrival)

        return [r for _, r in sorted(enumerate(recs), key=sort_key)]

    def merge_key(self, recs: list[tuple[str, Row]]) -> tuple[str, Row] | None:
        recs = self._ordered(recs)
        if len(recs) == 1 and self.engine != "aggregation":
            return recs[0]  # reducer rule
        return getattr(self, "_" + self.engine.replace("-", "_"))(recs)

    def merged(self) -> dict[tuple[Any, ...], Row]:
        out = {}
        for key, recs in self.records.items():
            result = self.merge_key(recs)
            if result is not None and result[0] not in RETRACTS:
                out[key] = dict(result[1])
        return out

    def expected(self) -> list[Row]:
        rows = list(self.merged().values())
        return sorted(rows, key=lambda r: tuple(r[k] for k in self.keys))

    # -- engines -------------------------------------------------------------------------------
    def _deduplicate(self, recs: list[tuple[str, Row]]) -> tuple[str, Row] | None:
        if self.ignore_delete():
            adds = [r for r in recs if r[0] not in RETRACTS]
            return adds[-1] if adds else None
        return recs[-1]

    def _first_row(self, recs: list[tuple[str, Row]]) -> tuple[str, Row] | None:
        for kind, row in recs:
            if kind not in RETRACTS:
                return kind, row
            if not self.ignore_delete():
                raise Refused("first-row cannot take a retract without ignore-delete")
        return None

    def _groups(self) -> list[_Group]:
        out = []
        for key, value in self.options.items():
            if key.startswith("fields.") and key.endswith(".sequence-group"):
                ordering = _split(key[len("fields."):-len(".sequence-group")])
                out.append(_Group(ordering, _split(value)))
        return out

    def _partial_update(self, recs: list[tuple[str, Row]]) -> tuple[str, Row]:
        opts = self.options
        groups = self._groups()
        grouped = {c for g in groups for c in g.ordering + g.protected}
        aggs = {c: _Agg(opts[f"fields.{c}.aggregate-function"], c, opts)
                for c in self.columns if f"fields.{c}.aggregate-function" in opts}
        ignore = self.ignore_delete()
        remove_on_delete = _true(opts.get("partial-update.remove-record-on-delete", "false"))
        remove_on_group = set(_split(opts.get("partial-update.remove-record-on-sequence-group")))

        def newer(rec: Row, row: Row, g: _Group) -> bool:  # incoming >= stored, null lowest
            def key(r: Row) -> tuple[Any, ...]:
                return tuple((0, 0) if r[o] is None else (1, r[o]) for o in g.ordering)
            return key(rec) >= key(row)

        row: Row = {c: None for c in self.columns}
        meet_insert = filled = deleted = False
        for kind, rec in recs:
            deleted = False
            if kind in RETRACTS:
                if not filled:  # the first record of a key initialises the row, even if ignored
                    row, filled = dict(rec), True
                if ignore:
                    continue
                if groups:
                    for g in groups:
                        if all(rec[o] is None for o in g.ordering):
                            continue
                        if newer(rec, row, g):
                            if kind == "-D" and remove_on_group & set(g.ordering):
                                row, deleted = dict(rec), True
                                break
                            for o in g.ordering:
                                row[o] = rec[o]
                            for p in g.protected:
                                row[p] = aggs[p].retract(row[p], rec[p]) if p in aggs else None
                        else:
                            for p in g.protected:
                                if p in aggs:
                                    row[p] = aggs[p].retract(row[p], rec[p])
                    continue
                if remove_on_delete:
                    if kind == "-D":
                        row, deleted = dict(rec), True
                    continue
                raise Refused("partial-update cannot take a retract by default")
            for g in groups:
                if all(rec[o] is None for o in g.ordering):
                    continue  # the whole group is skipped
                if newer(rec, row, g):
                    for o in g.ordering:
                        row[o] = rec[o]
                    for p in g.protected:
                        row[p] = aggs[p].agg(row[p], rec[p]) if p in aggs else rec[p]
                else:
                    for p in g.protected:
                        if p in aggs:
                            row[p] = aggs[p].agg(rec[p], row[p])  # aggReversed
            for c in self.columns:
                if c in grouped:
                    continue
                if c in aggs:
                    row[c] = aggs[c].agg(row[c], rec[c])
                elif rec[c] is not None:
                    row[c] = rec[c]
            meet_insert = filled = True
        return ("-D" if deleted or not meet_insert else "+I"), row

    def _aggregation(self, recs: list[tuple[str, Row]]) -> tuple[str, Row]:
        opts = self.options
        seq = set(_split(opts.get("sequence.field")))

        def func(c: str) -> str:
            if c in seq:
                return "last_value"
            if c in self.keys:
                return "primary-key"
            return (opts.get(f"fields.{c}.aggregate-function")
                    or opts.get("fields.default-aggregate-function") or "last_non_null_value")

        aggs = {c: _Agg(func(c), c, opts) for c in self.columns}
        remove = _true(opts.get("aggregation.remove-record-on-delete", "false"))
        row: Row = {c: None for c in self.columns}
        deleted = False
        for kind, rec in recs:
            deleted = remove and kind == "-D"
            if deleted:
                row = dict(rec)
                continue
            for c in self.columns:
                a = aggs[c]
                row[c] = a.retract(row[c], rec[c]) if kind in RETRACTS else a.agg(row[c], rec[c])
        return ("-D" if deleted else "+I"), row


# =============================================================================================
# Helpers
# =============================================================================================

def normalized(rows: Iterable[Row], map_columns: Sequence[str] = ()) -> list[Row]:
    """Rows with map values as sorted entry lists (Paimon builds merged maps in hash maps)."""
    out = []
    for r in rows:
        r = dict(r)
        for c in map_columns:
            if r[c] is not None:
                r[c] = sorted(r[c])
        out.append(r)
    return out


def assert_rows(actual: pa.Table, expected: list[Row], keys: Sequence[str], what: str,
                map_columns: Sequence[str] = ()) -> None:
    if not map_columns:
        assert_same_rows(actual, expected, keys, what)
        return
    columns = list(expected[0]) if expected else actual.column_names
    assert actual.column_names == columns, what
    got = normalized(sorted_rows(actual, keys, columns), map_columns)
    want = normalized(sorted(expected, key=lambda r: tuple(r[k] for k in keys)), map_columns)
    assert got == want, what


def alter_options(lt: Any, extra: Mapping[str, str]) -> None:
    """ALTER TABLE SET (extra): publish schema-1 = schema-0 plus `extra` options."""
    manager = SchemaManager(lt.file_io, lt.path)
    assert manager.schema_ids() == [0]
    schema0 = TableSchema.from_json(lt.file_io.read_bytes(manager.schema_path(0)))
    assert manager.commit(schema0.copy(id=1, options={**schema0.options, **dict(extra)}))
    lt.refresh()


def write_then_alter(paimon: Any, lake: Any, schema: pa.Schema, commits: list[list[Row]],
                     extra: Mapping[str, str], extra_row: Row,
                     base: Mapping[str, str] | None = None) -> tuple[Any, PaimonModel, int]:
    """pypaimon writes `commits` under deduplicate (+ `base`), the options are altered to add
    `extra`, and lakeformat commits `extra_row` (a new key).

    Snapshots 1..n reference schema 0 while the latest schema is 1; lakeformat reads a snapshot
    under the schema its schemaId names, so the new options are only seen through a snapshot
    written after the alteration: hence the lakeformat write of one more key.
    Returns the lakeformat table, the model (options altered, extra row included) and the id of
    the last pypaimon snapshot.
    """
    options = {"bucket": "2", "rowkind.field": "rk", **dict(base or {})}
    table = create_paimon_table(paimon, "db.t", schema, ["k"], [], options)
    model = PaimonModel(["k"], schema.names, options)
    for rows in commits:
        assert len({r["k"] for r in rows}) == len(rows), "one record per key per commit"
        last = paimon_write(table, rows)
        model.write(rows)
    lt = lake.get_table("db.t")
    # before the alteration: plain deduplicate (+ base) semantics
    before = PaimonModel(["k"], schema.names, options)
    for rows in commits:
        before.write(rows)
    assert_same_rows(lt.read(), before.expected(), ["k"], "lakeformat before the alteration")

    alter_options(lt, extra)
    model.alter({**options, **dict(extra)})
    res = lt.write(pa.Table.from_pylist([extra_row], schema=schema))
    assert res.snapshot_id == last + 1
    assert lt.latest_snapshot().schema_id == 1
    model.write([extra_row])
    # the old snapshot still reads under schema 0
    assert_same_rows(lt.read(snapshot_id=last), before.expected(), ["k"],
                     f"lakeformat at snapshot {last} (schema 0)")
    return lt, model, last


# =============================================================================================
# 1 + 2 for the engines pypaimon reads: lakeformat and a pypaimon twin fed the same commits
# =============================================================================================

EV = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("name", pa.string()),
                ("amount", pa.float64()), ("seq", pa.int64()), ("rk", pa.string())])
EV_KEYS = ["dt", "id"]


@dataclass(frozen=True)
class Config:
    options: dict[str, str]
    retracts: bool  # may the commits hold -U/-D (and lakeformat deletes)?
    nulls: bool  # null values in name/amount (partial-update)


CONFIGS = {
    "deduplicate": Config({}, True, False),
    "deduplicate-ignore-delete": Config({"ignore-delete": "true"}, True, False),
    "deduplicate-alias-ignore-delete": Config({"deduplicate.ignore-delete": "true"}, True, False),
    "deduplicate-seq-asc": Config({"sequence.field": "seq"}, True, False),
    "deduplicate-seq-desc": Config(
        {"sequence.field": "seq", "sequence.field.sort-order": "descending"}, True, False),
    # lookup-wait off: lakeformat's first-row writer would compact after each commit (as
    # Java's does), pypaimon's never does; the twins' snapshots stay in step
    "first-row": Config({"merge-engine": "first-row", "lookup-wait": "false"}, False, False),
    "first-row-ignore-delete": Config(
        {"merge-engine": "first-row", "first-row.ignore-delete": "true",
         "lookup-wait": "false"}, True, False),
    "partial-update": Config({"merge-engine": "partial-update"}, False, True),
    "aggregation": Config({"merge-engine": "aggregation", "fields.amount.aggregate-function": "sum",
                           "fields.name.aggregate-function": "listagg",
                           "fields.seq.aggregate-function": "max"}, False, True),
}


@dataclass
class Op:
    kind: str  # "write" or "delete"
    rows: list[Row]


def ev_row(rng: random.Random, day: str, i: int, version: int, kind: str, nulls: bool,
           seq_values: Sequence[int | None]) -> Row:
    def maybe(v: Any) -> Any:
        return None if nulls and rng.random() < 0.35 else v
    # amounts are multiples of 1/4: sums are exact in any order
    return {"dt": day, "id": i, "name": maybe(f"n{i}v{version}"),
            "amount": maybe(rng.randrange(-40, 40) / 4), "seq": rng.choice(seq_values),
            "rk": kind}


def scripted_commits(cfg: Config, seed: int = 11) -> list[Op]:
    """Five commits over 3 partitions x 12 ids: inserts, repeats of a key inside one commit,
    updates, -U/+U pairs, deletes by -D rows and by lakeformat's `delete`."""
    rng = random.Random(seed)
    seqs = [None, 0, 1, 2, 3, 3, 4, 5]
    ops = [Op("write", [ev_row(rng, d, i, 0, "+I", cfg.nulls, seqs)
                        for d in DAYS for i in range(12)])]
    for version in range(1, 5):
        rows = []
        for _ in range(18):
            d, i = rng.choice(DAYS), rng.randrange(15)
            if cfg.retracts and rng.random() < 0.35:
                kind = rng.choice(["-U", "-D"])
                rows.append(ev_row(rng, d, i, version, kind, cfg.nulls, seqs))
                if kind == "-U":
                    rows.append(ev_row(rng, d, i, version, "+U", cfg.nulls, seqs))
            else:
                rows.append(ev_row(rng, d, i, version, rng.choice(["+I", "+U"]), cfg.nulls,
                                   seqs))
        ops.append(Op("write", rows))
        if cfg.retracts and version in (2, 4):
            keys = [(rng.choice(DAYS), rng.randrange(15)) for _ in range(4)]
            ops.append(Op("delete", [{"dt": d, "id": i, "name": None, "amount": None,
                                      "seq": None, "rk": "-D"} for d, i in keys]))
    return ops


def lake_apply(lt: Any, op: Op) -> int | None:
    """The snapshot the op committed; None when nothing was left to write (ignore-delete)."""
    if op.kind == "write":
        res = lt.write(pa.Table.from_pylist(op.rows, schema=EV))
    else:
        res = lt.delete(pa.table({"dt": pa.array([r["dt"] for r in op.rows], pa.string()),
                                  "id": pa.array([r["id"] for r in op.rows], pa.int64())}))
    return res.snapshot_id


@pytest.mark.parametrize("name", list(CONFIGS))
def test_both_writers_same_rows_for_engines_pypaimon_reads(
        paimon: Any, lake: Any, name: str) -> None:
    cfg = CONFIGS[name]
    options = {"bucket": "2", "rowkind.field": "rk", **cfg.options}
    lt = lake.create_table("db.lake", schema=EV, primary_keys=EV_KEYS, partition_keys=["dt"],
                           options=options)
    twin = create_paimon_table(paimon, "db.twin", EV, EV_KEYS, ["dt"], options)
    theirs_of_lake = paimon.get_table("db.lake")
    twin_by_lake = lake.get_table("db.twin")
    model = PaimonModel(EV_KEYS, EV.names, options)
    first_row = cfg.options.get("merge-engine") == "first-row"

    for step, op in enumerate(scripted_commits(cfg), start=1):
        ours = lake_apply(lt, op)
        # both writers skip the commit when ignore-delete filtered every row away
        assert paimon_write(twin, op.rows) == lt.latest_snapshot().id
        assert ours in (None, lt.latest_snapshot().id)
        model.write(op.rows)
        expected = model.expected()
        what = f"{name} after commit {step}"
        assert_same_rows(lt.read(), expected, EV_KEYS, f"lakeformat, {what}")
        assert_same_rows(twin_by_lake.read(), expected, EV_KEYS,
                         f"lakeformat reading the pypaimon twin, {what}")
        if first_row:
            # pypaimon (like Java) skips level-0 files in batch scans of first-row tables
            # (`batch_scan_skip_level0`) and nothing here compacts, so it reads no rows at all,
            # whichever library wrote the table. lakeformat reads every level (checked above).
            assert paimon_read(theirs_of_lake).num_rows == 0, what
            assert paimon_read(twin).num_rows == 0, what
        else:
            assert_same_rows(paimon_read(theirs_of_lake), lt.read(), EV_KEYS,
                             f"pypaimon reading lakeformat, {what}")
            assert_same_rows(paimon_read(twin), expected, EV_KEYS, f"pypaimon twin, {what}")


@pytest.mark.parametrize("descending", [False, True], ids=["asc", "desc"])
def test_sequence_field_edge_orders_read_alike(paimon: Any, lake: Any, descending: bool) -> None:
    """Null sequence values sort lowest in both orders; ties fall back to the write order; a
    lakeformat `delete` carries a null sequence value, so it loses to any non-null one."""
    options = {"bucket": "1", "rowkind.field": "rk", "sequence.field": "seq"}
    if descending:
        options["sequence.field.sort-order"] = "descending"
    lt = lake.create_table("db.t", schema=EV, primary_keys=EV_KEYS, options=options)
    d = DAYS[0]

    def r(i: int, seq: int | None, v: int, kind: str = "+I") -> Row:
        return {"dt": d, "id": i, "name": f"v{v}", "amount": float(v), "seq": seq, "rk": kind}

    commits = [
        [r(1, 5, 1), r(2, None, 1), r(3, 2, 1), r(4, 2, 1), r(5, 3, 1), r(6, 1, 1), r(7, 4, 1)],
        [r(1, 4, 2), r(2, 0, 2), r(3, 2, 2), r(4, None, 2), r(5, 3, 2, "-D"), r(6, 9, 2, "-D"),
         r(8, None, 2)],
        [r(1, 6, 3), r(2, None, 3), r(3, 1, 3), r(4, 7, 3), r(6, 0, 3), r(8, None, 3)],
    ]
    model = PaimonModel(EV_KEYS, EV.names, options)
    for rows in commits:
        lt.write(pa.Table.from_pylist(rows, schema=EV))
        model.write(rows)
    deletes = [{"dt": d, "id": i, "name": None, "amount": None, "seq": None, "rk": "-D"}
               for i in (1, 7, 8)]
    lt.delete(pa.table({"dt": [d] * 3, "id": pa.array([1, 7, 8], pa.int64())}))
    model.write(deletes)
    expected = model.expected()
    # sanity of the model itself: key 8 has only null sequence values, so order = write order
    # and the delete (written last) wins; key 7 keeps its row against the null-seq delete
    assert (d, 8) not in model.merged() and (d, 7) in model.merged()
    assert model.merged()[(d, 2)]["name"] == "v2"  # the only non-null seq, in both orders
    assert model.merged()[(d, 1)]["name"] == ("v2" if descending else "v3")
    assert_same_rows(lt.read(), expected, EV_KEYS, "lakeformat")
    assert_same_rows(paimon_read(paimon.get_table("db.t")), expected, EV_KEYS,
                     "pypaimon reading lakeformat")


# hypothesis: random commits of a small key space, lakeformat writes, pypaimon reads
KINDS = st.sampled_from(["+I", "+U", "-U", "-D"])
RECORD = st.tuples(st.integers(0, 5), KINDS, st.one_of(st.none(), st.integers(0, 3)))


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(options=st.sampled_from([
    {}, {"ignore-delete": "true"}, {"sequence.field": "seq"},
    {"sequence.field": "seq", "sequence.field.sort-order": "descending"},
    {"sequence.field": "seq", "ignore-delete": "true"}]),
    commits=st.lists(st.lists(RECORD, min_size=1, max_size=8), min_size=1, max_size=4))
def test_random_deduplicate_commits_read_alike(options: dict[str, str],
                                              commits: list[list[tuple[int, str, Any]]]) -> None:
    with tempfile.TemporaryDirectory() as warehouse:
        catalog = lf.Catalog(warehouse)
        catalog.create_database("db", exist_ok=True)
        opts = {"bucket": "2", "rowkind.field": "rk", **options}
        lt = catalog.create_table("db.t", schema=EV, primary_keys=EV_KEYS, options=opts)
        table = paimon_catalog(warehouse).get_table("db.t")
        model = PaimonModel(EV_KEYS, EV.names, opts)
        for c, records in enumerate(commits):
            rows = [{"dt": DAYS[0], "id": i, "name": f"c{c}r{j}", "amount": float(j),
                     "seq": seq, "rk": kind} for j, (i, kind, seq) in enumerate(records)]
            lt.write(pa.Table.from_pylist(rows, schema=EV))
            model.write(rows)
        expected = model.expected()
        assert_same_rows(lt.read(), expected, EV_KEYS, f"lakeformat {options}")
        assert_same_rows(paimon_read(table), expected, EV_KEYS, f"pypaimon {options}")


# =============================================================================================
# 2. pypaimon-only engine options: aggregation (every function lakeformat has), partial-update
#    with sequence.field, retracts pypaimon cannot read back
# =============================================================================================

AGG = pa.schema([
    ("k", pa.int64()), ("s", pa.int64()), ("su", pa.int64()), ("sd", pa.float64()),
    ("dec", pa.decimal128(10, 2)), ("pr", pa.int32()), ("mx", pa.int64()), ("mn", pa.float64()),
    ("lv", pa.string()), ("lnn", pa.string()), ("fv", pa.string()), ("fnn", pa.string()),
    ("ba", pa.bool_()), ("bo", pa.bool_()), ("la", pa.string()), ("co", pa.list_(pa.int32())),
    ("rk", pa.string()),
])
AGG_FUNCS = {"su": "sum", "sd": "sum", "dec": "sum", "pr": "product", "mx": "max", "mn": "min",
             "lv": "last_value", "lnn": "last_non_null_value", "fv": "first_value",
             "fnn": "first_non_null_value", "ba": "bool_and", "bo": "bool_or", "la": "listagg",
             "co": "collect"}  # s: default (last_non_null_value), rk too; merge_map: see below
AGG_OPTIONS = {"merge-engine": "aggregation", "fields.la.list-agg-delimiter": "|",
               **{f"fields.{c}.aggregate-function": f for c, f in AGG_FUNCS.items()}}


def agg_row(rng: random.Random, k: int, version: int, kind: str = "+I",
            seq: int | None = None) -> Row:
    def maybe(v: Any) -> Any:
        return None if rng.random() < 0.25 else v
    return {
        "k": k, "s": seq, "su": maybe(rng.randrange(-1000, 1000)),
        "sd": maybe(rng.randrange(-100, 100) / 8),
        "dec": maybe(D(rng.randrange(-9999, 9999)) / 100),
        "pr": maybe(rng.choice([-2, -1, 1, 2, 3])), "mx": maybe(rng.randrange(-50, 50)),
        "mn": maybe(rng.randrange(-50, 50) / 2), "lv": maybe(f"lv{k}.{version}"),
        "lnn": maybe(f"lnn{k}.{version}"), "fv": maybe(f"fv{k}.{version}"),
        "fnn": maybe(f"fnn{k}.{version}"), "ba": maybe(rng.random() < 0.7),
        "bo": maybe(rng.random() < 0.3), "la": maybe(f"t{k}.{version}"),
        "co": maybe([rng.randrange(5) for _ in range(rng.randrange(3))]), "rk": kind,
    }


@pytest.mark.parametrize("with_sequence_field", [False, True], ids=["arrival", "seq-field"])
def test_lakeformat_reads_pypaimon_aggregation_with_every_accepted_function(
        paimon: Any, lake: Any, with_sequence_field: bool) -> None:
    options = {"bucket": "2", "rowkind.field": "rk", **AGG_OPTIONS}
    if with_sequence_field:
        options["sequence.field"] = "s"
    table = create_paimon_table(paimon, "db.agg", AGG, ["k"], [], options)
    model = PaimonModel(["k"], AGG.names, options)
    rng = random.Random(5)
    for version in range(5):
        keys = rng.sample(range(20), 12)
        if not with_sequence_field:
            keys += keys[:3]  # repeats inside a commit: the writer pre-merges them
        # with sequence.field, one record per key per commit: a pre-merged record carries the
        # largest sequence value of the batch, so pre-merging would reorder the merge
        rows = [agg_row(rng, k, version, rng.choice(["+I", "+U"]),
                        rng.choice([None, 1, 2, 3, 4]) if with_sequence_field else None)
                for k in keys]
        paimon_write(table, rows)
        model.write(rows)
    expected = model.expected()
    lt = lake.get_table("db.agg")
    assert_same_rows(lt.read(), expected, ["k"], "lakeformat vs model")
    assert_same_rows(paimon_read(table), expected, ["k"], "pypaimon vs model")


def test_lakeformat_writes_aggregation_pypaimon_reads(paimon: Any, lake: Any) -> None:
    options = {"bucket": "2", "rowkind.field": "rk", **AGG_OPTIONS}
    lt = lake.create_table("db.agg", schema=AGG, primary_keys=["k"], options=options)
    model = PaimonModel(["k"], AGG.names, options)
    rng = random.Random(8)
    for version in range(4):
        keys = rng.sample(range(16), 10)
        rows = [agg_row(rng, k, version, rng.choice(["+I", "+U"])) for k in keys + keys[:4]]
        lt.write(pa.Table.from_pylist(rows, schema=AGG))
        model.write(rows)
        expected = model.expected()
        assert_same_rows(lt.read(), expected, ["k"], f"lakeformat after {version}")
        assert_same_rows(paimon_read(paimon.get_table("db.agg")), expected, ["k"],
                         f"pypaimon after {version}")


MAPS = pa.schema([("k", pa.int64()), ("mm", pa.map_(pa.string(), pa.int32())),
                  ("rk", pa.string())])


@pytest.mark.parametrize("writer", ["pypaimon", "lakeformat"])
def test_merge_map_both_ways(paimon: Any, lake: Any, writer: str) -> None:
    """merge_map: union, later keys overwrite. pypaimon 2.1.0 has two merge_map bugs this test
    steers around: its write buffer raises TypeError ("list element must be dict, got tuple")
    when a batch holds a key twice, and its read raises ArrowTypeError when one split mixes
    merged keys (entries come back as tuples) with lone keys (dicts). So every batch holds a
    key once and every key is written in every commit."""
    options = {"bucket": "1", "rowkind.field": "rk", "merge-engine": "aggregation",
               "fields.mm.aggregate-function": "merge_map"}
    rng = random.Random(4)
    model = PaimonModel(["k"], MAPS.names, options)
    if writer == "pypaimon":
        table = create_paimon_table(paimon, "db.m", MAPS, ["k"], [], options)
    else:
        lt = lake.create_table("db.m", schema=MAPS, primary_keys=["k"], options=options)
    for version in range(4):
        rows = [{"k": k, "rk": "+I",
                 "mm": None if rng.random() < 0.2 else
                 [(f"m{x}", version * 10 + x) for x in rng.sample(range(5), rng.randrange(4))]}
                for k in range(8)]
        if writer == "pypaimon":
            paimon_write(table, rows)
        else:
            lt.write(pa.Table.from_pylist(rows, schema=MAPS))
        model.write(rows)
    expected = model.expected()
    assert_rows(lake.get_table("db.m").read(), expected, ["k"], "lakeformat", ["mm"])
    assert_rows(paimon_read(paimon.get_table("db.m")), expected, ["k"], "pypaimon", ["mm"])


RETRACTABLE = pa.schema([("k", pa.int64()), ("su", pa.int64()), ("dec", pa.decimal128(10, 2)),
                         ("lv", pa.string()), ("lnn", pa.string()),
                         ("co", pa.list_(pa.int32())), ("mm", pa.map_(pa.string(), pa.int32())),
                         ("rk", pa.string())])


def test_lakeformat_reads_pypaimon_aggregation_retracts(paimon: Any, lake: Any) -> None:
    """pypaimon writes -U/+U/-D into an aggregation table but cannot read them back
    (NotImplementedError); lakeformat retracts them: sum subtracts, last_value nulls,
    last_non_null_value nulls on a non-null retract, collect removes elements, merge_map keys."""
    options = {"bucket": "1", "rowkind.field": "rk", "merge-engine": "aggregation",
               "fields.su.aggregate-function": "sum", "fields.dec.aggregate-function": "sum",
               "fields.lv.aggregate-function": "last_value",
               "fields.co.aggregate-function": "collect",
               "fields.mm.aggregate-function": "merge_map"}  # lnn, rk: default
    table = create_paimon_table(paimon, "db.agg", RETRACTABLE, ["k"], [], options)

    def r(k: int, kind: str, su: int | None, dec: str | None, lv: str | None, lnn: str | None,
          co: list[int] | None, mm: dict[str, int] | None) -> Row:
        return {"k": k, "su": su, "dec": None if dec is None else D(dec), "lv": lv, "lnn": lnn,
                "co": co, "mm": None if mm is None else list(mm.items()), "rk": kind}

    commits = [
        [r(1, "+I", 10, "1.50", "a", "a", [1, 2], {"x": 1}),
         r(2, "+I", 5, "0.25", "b", "b", [3], {"y": 2}),
         r(3, "+I", 7, None, "c", None, [4, 4], {"z": 3, "w": 4}),
         r(4, "+I", 1, "9.99", "d", "d", None, None)],
        [r(1, "-U", 10, "1.50", "a", "a", [1], {"x": 1}),
         r(2, "-D", 5, "0.25", None, None, [3], {"y": 2}),
         r(3, "-U", None, "1.00", "c", None, [4], {"w": 0}),
         r(4, "+U", 2, None, None, None, [7], {"q": 1})],
        [r(1, "+U", 12, "2.00", "A", None, [5], {"x": 9}),
         r(3, "+U", 3, None, None, "C", None, None)],
    ]
    model = PaimonModel(["k"], RETRACTABLE.names, options)
    for rows in commits:
        # one row per commit: pypaimon's write buffer runs the aggregate function over every
        # key of a batch of 2+ rows, and it raises NotImplementedError on a retract
        for row in rows:
            paimon_write(table, [row])
        model.write(rows)
    merged = model.merged()
    assert merged[(1,)]["su"] == 12 and merged[(1,)]["lnn"] is None  # sanity of the model
    assert merged[(2,)]["su"] == 0 and merged[(2,)]["co"] == [] and merged[(2,)]["rk"] is None
    assert_rows(lake.get_table("db.agg").read(), model.expected(), ["k"], "lakeformat", ["mm"])
    with pytest.raises(NotImplementedError):
        paimon_read(table)


def test_lakeformat_refuses_pypaimon_sketch_aggregation(paimon: Any, lake: Any) -> None:
    """pypaimon accepts the sketch/bitmap aggregators; lakeformat does not implement them and
    must fail closed instead of returning unmerged rows."""
    schema = pa.schema([("k", pa.int64()), ("b", pa.binary())])
    table = create_paimon_table(paimon, "db.sk", schema, ["k"], [],
                                {"bucket": "1", "merge-engine": "aggregation",
                                 "fields.b.aggregate-function": "rbm32"})
    paimon_write(table, [{"k": 1, "b": None}])
    paimon_write(table, [{"k": 1, "b": None}])
    with pytest.raises(UnsupportedError):
        lake.get_table("db.sk").read()


def test_lakeformat_reads_pypaimon_partial_update_with_sequence_field(
        paimon: Any, lake: Any) -> None:
    options = {"bucket": "2", "rowkind.field": "rk", "merge-engine": "partial-update",
               "sequence.field": "seq"}
    table = create_paimon_table(paimon, "db.pu", EV, EV_KEYS, ["dt"], options)
    model = PaimonModel(EV_KEYS, EV.names, options)
    rng = random.Random(3)
    for version in range(5):
        rows = [ev_row(rng, d, i, version, rng.choice(["+I", "+U"]), True, [None, 0, 1, 2, 3])
                for d in DAYS for i in rng.sample(range(10), 6)]  # one record per key
        paimon_write(table, rows)
        model.write(rows)
    expected = model.expected()
    assert_same_rows(lake.get_table("db.pu").read(), expected, EV_KEYS, "lakeformat")
    assert_same_rows(paimon_read(table), expected, EV_KEYS, "pypaimon")


def test_partial_update_refuses_a_merged_retract_but_drops_a_lone_one(
        paimon: Any, lake: Any) -> None:
    """Plain partial-update refuses retracts (§8.4), but a key with a single record is emitted
    unchanged (reducer rule), so a lone -D just hides its key."""
    options = {"bucket": "1", "rowkind.field": "rk", "merge-engine": "partial-update"}
    table = create_paimon_table(paimon, "db.pu", EV, EV_KEYS, [], options)
    d = DAYS[0]
    row = {"dt": d, "name": "x", "amount": 1.0, "seq": None}
    paimon_write(table, [{**row, "id": 1, "rk": "+I"}, {**row, "id": 2, "rk": "+I"}])
    paimon_write(table, [{**row, "id": 3, "rk": "-D"}])
    expected = [{**row, "id": i, "rk": "+I"} for i in (1, 2)]
    expected = [{c: e[c] for c in EV.names} for e in expected]
    assert_same_rows(lake.get_table("db.pu").read(), expected, EV_KEYS, "lakeformat, lone -D")
    paimon_write(table, [{**row, "id": 2, "rk": "-D"}])
    with pytest.raises(LakeformatError):
        lake.get_table("db.pu").read()


# =============================================================================================
# 3. options pypaimon refuses: written under deduplicate, then altered (schema-1)
# =============================================================================================

AGG3 = pa.schema([("k", pa.int64()), ("su", pa.int64()), ("dec", pa.decimal128(10, 2)),
                  ("mx", pa.int64()), ("mn", pa.float64()), ("lnn", pa.string()),
                  ("lv", pa.string()), ("la", pa.string()), ("rk", pa.string())])


def agg3(k: int, kind: str, su: int | None, dec: str | None, mx: int | None, mn: float | None,
         lnn: str | None, lv: str | None, la: str | None) -> Row:
    return {"k": k, "su": su, "dec": None if dec is None else D(dec), "mx": mx, "mn": mn,
            "lnn": lnn, "lv": lv, "la": la, "rk": kind}


AGG3_COMMITS = [
    [agg3(1, "+I", 10, "1.00", 5, 2.5, "a", "a", "x1"),
     agg3(2, "+I", 20, "2.00", 7, -1.0, "b", "b", "x2"),
     agg3(3, "-U", 4, "0.50", 9, 0.5, "c", "c", "x3"),       # first record a retract
     agg3(4, "+I", 1, None, None, None, None, None, None),
     agg3(5, "+I", 8, "8.00", 3, 3.0, "e", "e", "x5"),
     agg3(6, "+I", 6, "6.66", 6, 6.0, "f", "f", "x6")],      # lone record
    [agg3(1, "+U", None, "0.25", 3, 1.5, None, None, "y1"),
     agg3(2, "-U", 20, "2.00", 7, -1.0, "b", "b", "x2"),
     agg3(3, "+U", 6, None, 2, None, None, "C", "y3"),
     agg3(4, "-D", 1, None, 100, None, None, None, None),
     agg3(5, "-D", 8, "8.00", 3, 3.0, "e", "e", "x5")],
    [agg3(1, "+U", 5, None, None, 9.0, "A", None, "z1"),
     agg3(2, "+U", 22, "2.50", 1, -2.0, None, "B", "z2"),
     agg3(4, "+I", 3, "3.30", 4, 4.0, "D", "D", "z4")],
]


@pytest.mark.parametrize("remove_on_delete", [False, True], ids=["retract", "remove-on-delete"])
def test_altered_to_aggregation_merges_retracts(paimon: Any, lake: Any,
                                                remove_on_delete: bool) -> None:
    extra = {"merge-engine": "aggregation", "fields.su.aggregate-function": "sum",
             "fields.dec.aggregate-function": "sum", "fields.lv.aggregate-function": "last_value",
             "fields.lnn.aggregate-function": "last_non_null_value"}
    if remove_on_delete:
        # conflicts with ignore-retract: max/min/listagg (no retract) become last_non_null_value
        extra["aggregation.remove-record-on-delete"] = "true"
    else:
        extra.update({"fields.mx.aggregate-function": "max", "fields.mx.ignore-retract": "true",
                      "fields.mn.aggregate-function": "min", "fields.mn.ignore-retract": "true",
                      "fields.la.aggregate-function": "listagg",
                      "fields.la.ignore-retract": "true"})
    lt, model, _ = write_then_alter(paimon, lake, AGG3, AGG3_COMMITS, extra,
                                    agg3(99, "+I", 1, "0.01", 1, 1.0, "n", "n", "n"))
    merged = model.merged()
    if remove_on_delete:
        assert (5,) not in merged  # -D last: the key is deleted
        assert merged[(4,)]["su"] == 1 + 3  # -D reset the row to its own values, then +I adds
    else:
        assert merged[(3,)]["su"] == -4 + 6  # retract on an empty accumulator gives -v
        assert merged[(5,)]["su"] == 0 and merged[(5,)]["mx"] == 3  # -D is just a retract
        assert merged[(1,)]["la"] == "x1,y1,z1"
    assert_same_rows(lt.read(), model.expected(), ["k"], f"lakeformat, altered to {extra}")
    with pytest.raises(NotImplementedError):  # retracts, or refused options
        paimon_read(paimon.get_table("db.t"))


PU3 = pa.schema([("k", pa.int64()), ("g1", pa.int64()), ("a", pa.string()), ("b", pa.int64()),
                 ("g2", pa.int64()), ("c", pa.int64()), ("d", pa.string()), ("rk", pa.string())])


def pu3(k: int, kind: str, g1: int | None, a: str | None, b: int | None, g2: int | None,
        c: int | None, d: str | None) -> Row:
    return {"k": k, "g1": g1, "a": a, "b": b, "g2": g2, "c": c, "d": d, "rk": kind}


PU3_COMMITS = [
    [pu3(1, "+I", 1, "a1", 1, 1, 10, "d1"),
     pu3(2, "+I", 5, "a2", 2, 1, 10, "d2"),
     pu3(3, "+I", None, "a3", 3, None, 7, "d3"),   # lone record, null orderings: kept as is
     pu3(4, "+I", None, "a4", 4, 2, 1, None),      # two records with null g1: g1 group null
     pu3(5, "+I", 1, "a5", 5, 1, 10, "d5"),
     pu3(6, "+I", 3, "a6", 6, 3, 10, "d6"),
     pu3(7, "-D", 1, "x7", 7, 1, 1, "d7"),         # first record a retract: initialises the row
     pu3(8, "+I", 2, "a8", 8, 2, 2, "d8"),
     pu3(10, "-U", 1, "a10", 10, 1, 1, "d10")],
    [pu3(1, "+U", 2, None, 11, None, 5, None),     # g1 newer: a := null; g2 null: skipped
     pu3(2, "+U", 3, "zz", 22, 2, 3, "D2"),        # g1 older: a, b kept; g2 newer: c summed
     pu3(4, "+U", None, "b4", 44, 1, 2, "D4"),     # g2 older: c aggReversed
     pu3(5, "-U", 2, "a5", 5, 1, 10, "dd"),        # retract wins g1 (a, b := null), g2 (c - 10)
     pu3(6, "-D", 1, "a6", 6, 1, 4, "d6"),         # older groups: only c retracted
     pu3(7, "+I", 0, "a7", 70, 0, 5, None),
     pu3(8, "-D", 2, "a8", 8, None, 2, "d8"),      # wins g1 (tie); g2 empty
     pu3(9, "-D", 1, "a9", 9, 1, 1, "d9"),         # lone -D
     pu3(10, "-D", 2, "a10", 10, 1, 1, "d10")],    # retracts only: no row
    [pu3(5, "+U", 3, "A5", 55, None, 100, None),
     pu3(8, "+U", 1, "late", 80, 3, 3, None)],     # g1 older than the -D: a stays
]


@pytest.mark.parametrize("remove_on_group", [False, True], ids=["groups", "remove-on-group"])
def test_altered_to_partial_update_with_sequence_groups(paimon: Any, lake: Any,
                                                        remove_on_group: bool) -> None:
    extra = {"merge-engine": "partial-update", "fields.g1.sequence-group": "a,b",
             "fields.g2.sequence-group": "c", "fields.c.aggregate-function": "sum"}
    if remove_on_group:
        extra["partial-update.remove-record-on-sequence-group"] = "g1"
    lt, model, _ = write_then_alter(paimon, lake, PU3, PU3_COMMITS, extra,
                                    pu3(99, "+I", None, "n", 1, None, 1, "n"))
    merged = model.merged()
    # sanity of the model on the reducer rule and the null-ordering rule
    assert merged[(3,)] == pu3(3, "+I", None, "a3", 3, None, 7, "d3")
    assert merged[(4,)] == pu3(4, "+U", None, None, None, 2, 3, "D4")
    assert (9,) not in merged and (10,) not in merged
    if remove_on_group:
        assert (5,) in merged and (8,) in merged  # -U never removes; 8's -D row + later +U
        assert merged[(8,)]["a"] == "a8" and merged[(8,)]["c"] == 2 + 3
    else:
        assert merged[(1,)] == pu3(1, "+U", 2, None, 11, 1, 10, "d1")
        assert merged[(6,)]["c"] == 6 and merged[(8,)]["a"] is None
    assert_same_rows(lt.read(), model.expected(), ["k"], f"lakeformat, altered to {extra}")
    with pytest.raises(NotImplementedError):
        paimon_read(paimon.get_table("db.t"))


KV = pa.schema([("k", pa.int64()), ("a", pa.string()), ("b", pa.int64()), ("rk", pa.string())])


def kv(k: int, kind: str, a: str | None, b: int | None) -> Row:
    return {"k": k, "a": a, "b": b, "rk": kind}


KV_COMMITS = [
    [kv(1, "-D", "x1", 1), kv(2, "+I", "a2", None), kv(3, "-D", "x3", 3), kv(4, "-D", "x4", 4),
     kv(5, "+I", "a5", 5), kv(6, "+I", "a6", 6), kv(7, "+I", "a7", 7)],
    [kv(1, "+U", None, 10), kv(2, "-U", "a2", None), kv(4, "-U", "y4", None),
     kv(5, "-D", None, None), kv(6, "-D", "d6", None), kv(7, "-U", "a7", 7)],
    [kv(2, "+U", None, 20), kv(6, "+U", None, 60), kv(7, "+U", None, 70)],
]


@pytest.mark.parametrize("extra", [
    {"merge-engine": "partial-update", "ignore-delete": "true"},
    {"merge-engine": "partial-update", "partial-update.ignore-delete": "true"},
    {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
    {"merge-engine": "partial-update", "fields.a.aggregate-function": "last_non_null_value",
     "ignore-delete": "true"},
    {"ignore-delete": "true"},
    {"merge-engine": "first-row", "ignore-delete": "true"},
], ids=["pu-ignore-delete", "pu-alias-ignore-delete", "pu-remove-on-delete", "pu-lnn-agg",
        "dedup-ignore-delete", "first-row-ignore-delete"])
def test_altered_delete_handling(paimon: Any, lake: Any, extra: dict[str, str]) -> None:
    """Retracts already in the files meet the delete options set afterwards.

    pypaimon is not compared: it refuses the partial-update variants, reads nothing from
    first-row (level 0), and for deduplicate + ignore-delete it still applies the retracts
    already in the files (its DeduplicateMergeFunction has no ignore-delete; pypaimon only
    filters at write), so it drops key 5 (+I then -D) where Java keeps the +I row."""
    lt, model, _ = write_then_alter(paimon, lake, KV, KV_COMMITS, extra, kv(99, "+I", "n", 1))
    merged = model.merged()
    if extra.get("merge-engine") == "partial-update" and "ignore-delete" in str(extra):
        # key 1 starts with a -D: its values seed the row even though the -D is ignored
        assert merged[(1,)] == kv(1, "+U", "x1", 10)
        assert (3,) not in merged and (4,) not in merged  # lone -D; retracts only
    assert_same_rows(lt.read(), model.expected(), ["k"], f"lakeformat, altered to {extra}")
