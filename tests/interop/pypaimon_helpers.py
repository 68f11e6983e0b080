"""Thin, typed wrappers over pypaimon 2.1.0 for the interop suite, plus row comparison helpers.

pypaimon's own API is builder-shaped (write builder -> write -> prepare_commit -> commit;
read builder -> scan -> plan -> splits -> read). These helpers keep each test to the rows
it cares about. pypaimon facts worth knowing (2.1.0, pure-Python path; the optional
`pypaimon_rust` accelerator is not installed in the interop venv):

* a `FileStoreTable` keeps the schema it was loaded with; reload it with
  `catalog.get_table` after another writer changed the table's schema. Data and snapshots
  are re-read on every scan and every write, so one object is enough for alternating writers.
* time travel: `table.copy({"scan.snapshot-id": "N"})` (also `scan.tag-name`,
  `scan.version`); a missing snapshot raises `ValueError`.
* `rowkind.field` names a STRING column holding "+I", "-U", "+U" or "-D"; the column is also
  stored as an ordinary value column and returned by reads.
* `batch_write_builder.overwrite(static_partition)` overwrites; with the default
  `dynamic-partition-overwrite=true` only the partitions present in the data are replaced.
* merge-engine=partial-update is accepted only in its plain form: pypaimon raises
  NotImplementedError for `fields.*.sequence-group`, `ignore-delete`, per-field aggregators
  and `partial-update.remove-record-on-*`.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pypaimon import CatalogFactory, Schema

Row = dict[str, Any]
PredicateFactory = Callable[[Any], Any]  # PredicateBuilder -> Predicate

DATABASE = "db"


# -- pypaimon catalog and tables -------------------------------------------------------------
def paimon_catalog(warehouse: str) -> Any:
    """pypaimon filesystem catalog over `warehouse`, with the test database created."""
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database(DATABASE, True)
    return catalog


def create_paimon_table(catalog: Any, identifier: str, schema: pa.Schema,
                        primary_keys: Sequence[str], partition_keys: Sequence[str] = (),
                        options: Mapping[str, str] | None = None) -> Any:
    """Create a table through pypaimon and return its `FileStoreTable`."""
    paimon_schema = Schema.from_pyarrow_schema(
        schema, partition_keys=list(partition_keys), primary_keys=list(primary_keys),
        options=dict(options or {}))
    catalog.create_table(identifier, paimon_schema, False)
    return catalog.get_table(identifier)


def as_arrow(rows: pa.Table | Sequence[Row], schema: pa.Schema) -> pa.Table:
    if isinstance(rows, pa.Table):
        return rows
    return pa.Table.from_pylist(list(rows), schema=schema)


def paimon_write(table: Any, rows: pa.Table | Sequence[Row],
                 overwrite: Mapping[str, Any] | None = None) -> int:
    """One pypaimon batch commit; returns the id of the snapshot it produced.

    `overwrite` is the static partition spec of an INSERT OVERWRITE (`{}` = dynamic overwrite
    of the partitions present in `rows`); None appends.
    """
    data = as_arrow(rows, paimon_arrow_schema(table))
    builder = table.new_batch_write_builder()
    if overwrite is not None:
        builder = builder.overwrite(dict(overwrite))
    write = builder.new_write()
    commit = builder.new_commit()
    try:
        write.write_arrow(data)
        commit.commit(write.prepare_commit())
    finally:
        write.close()
        commit.close()
    latest = table.snapshot_manager().get_latest_snapshot()
    assert latest is not None, "pypaimon commit produced no snapshot"
    return latest.id


def paimon_arrow_schema(table: Any) -> pa.Schema:
    """The Arrow schema pypaimon expects from writers (and returns from reads)."""
    from pypaimon.schema.data_types import PyarrowFieldParser

    return PyarrowFieldParser.from_paimon_schema(table.table_schema.fields)


def paimon_read(table: Any, snapshot_id: int | None = None,
                predicate: PredicateFactory | None = None,
                columns: Sequence[str] | None = None) -> pa.Table:
    """Rows as pypaimon merges them: latest snapshot, or `snapshot_id` (time travel)."""
    if snapshot_id is not None:
        table = table.copy({"scan.snapshot-id": str(snapshot_id)})
    builder = table.new_read_builder()
    if columns is not None:
        builder = builder.with_projection(list(columns))
    if predicate is not None:
        builder = builder.with_filter(predicate(builder.new_predicate_builder()))
    splits = builder.new_scan().plan().splits()
    return builder.new_read().to_arrow(splits)


def paimon_snapshots(table: Any) -> list[Any]:
    """Every snapshot pypaimon's SnapshotManager can decode, ascending by id."""
    return table.snapshot_manager().list_snapshots()


def paimon_latest_snapshot(table: Any) -> Any:
    return table.snapshot_manager().get_latest_snapshot()


def paimon_base_manifests(table: Any, snapshot: Any) -> list[tuple[int, int, int]]:
    """(added files, deleted files, size) of each manifest in the snapshot's base list."""
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    return [(m.num_added_files, m.num_deleted_files, m.file_size)
            for m in ManifestListManager(table).read_base(snapshot)]


def paimon_live_files(table: Any, snapshot_id: int | None = None) -> list[Row]:
    """Live data files as pypaimon plans them: partition tuple, bucket, file meta fields."""
    if snapshot_id is not None:
        table = table.copy({"scan.snapshot-id": str(snapshot_id)})
    splits = table.new_read_builder().new_scan().plan().splits()
    out: list[Row] = []
    for split in splits:
        for f in split.files:
            out.append({
                "partition": tuple(split.partition.values), "bucket": split.bucket,
                "file_name": f.file_name, "row_count": f.row_count, "level": f.level,
                "min_sequence_number": f.min_sequence_number,
                "max_sequence_number": f.max_sequence_number,
            })
    return out


# -- row comparison --------------------------------------------------------------------------
def _sort_value(value: Any) -> tuple[int, Any]:
    # None first, then the value itself (keys never mix types within a column)
    return (0, 0) if value is None else (1, value)


def sorted_rows(table: pa.Table, keys: Sequence[str],
                columns: Sequence[str] | None = None) -> list[Row]:
    """Rows as dicts, columns in `columns` order (default: the table's), sorted by `keys`."""
    names = list(columns) if columns is not None else table.column_names
    rows = table.select(names).to_pylist()
    return sorted(rows, key=lambda r: tuple(_sort_value(r[k]) for k in keys))


def sorted_model_rows(model: Mapping[Any, Row], keys: Sequence[str],
                      columns: Sequence[str]) -> list[Row]:
    rows = [{c: r[c] for c in columns} for r in model.values()]
    return sorted(rows, key=lambda r: tuple(_sort_value(r[k]) for k in keys))


def assert_same_rows(actual: pa.Table, expected: pa.Table | list[Row], keys: Sequence[str],
                     what: str = "") -> None:
    """Exact row equality after sorting both sides by the primary key."""
    columns = actual.column_names if isinstance(expected, list) else expected.column_names
    exp = expected if isinstance(expected, list) else sorted_rows(expected, keys, columns)
    act = sorted_rows(actual, keys, columns)
    if act == exp:
        return
    diff = _first_difference(act, exp, keys)
    raise AssertionError(
        f"{what}: rows differ ({len(act)} actual vs {len(exp)} expected); {diff}")


def _first_difference(act: list[Row], exp: list[Row], keys: Sequence[str]) -> str:
    a_by = {tuple(r[k] for k in keys): r for r in act}
    e_by = {tuple(r[k] for k in keys): r for r in exp}
    missing = [k for k in e_by if k not in a_by]
    extra = [k for k in a_by if k not in e_by]
    changed = [(k, a_by[k], e_by[k]) for k in e_by if k in a_by and a_by[k] != e_by[k]]
    parts = []
    if missing:
        parts.append(f"missing keys {missing[:5]}")
    if extra:
        parts.append(f"unexpected keys {extra[:5]}")
    if changed:
        k, a, e = changed[0]
        cols = [c for c in e if a.get(c) != e[c]]
        parts.append(f"{len(changed)} changed rows, first {k}: "
                     + ", ".join(f"{c}: got {a.get(c)!r} want {e[c]!r}" for c in cols))
    if not parts:
        parts.append("same rows, different order or duplicates")
    return "; ".join(parts)


def assert_same_value_types(actual: pa.Schema, expected: pa.Schema) -> None:
    """Same column names and Arrow types (nullability and field metadata ignored)."""
    got = [(f.name, f.type) for f in actual]
    want = [(f.name, f.type) for f in expected]
    assert got == want, f"arrow types differ:\n got  {got}\n want {want}"


# -- a last-writer-wins model of a primary-key table -----------------------------------------
class LastWriterWins:
    """Python model of a deduplicate primary-key table: upserts replace, deletes remove."""

    def __init__(self, keys: Sequence[str], columns: Sequence[str]):
        self.keys = list(keys)
        self.columns = list(columns)
        self.rows: dict[tuple[Any, ...], Row] = {}

    def key_of(self, row: Mapping[str, Any]) -> tuple[Any, ...]:
        return tuple(row[k] for k in self.keys)

    def apply(self, rows: Iterable[Mapping[str, Any]], kind_field: str | None = None) -> None:
        for row in rows:
            kind = row.get(kind_field, "+I") if kind_field else "+I"
            if kind in ("-D", "-U"):
                # -U is a retract of the old value; a following +U of the same key adds it back
                self.rows.pop(self.key_of(row), None)
            else:
                self.rows[self.key_of(row)] = {c: row.get(c) for c in self.columns}

    def delete(self, keys: Iterable[Mapping[str, Any]]) -> None:
        for row in keys:
            self.rows.pop(self.key_of(row), None)

    def overwrite_partition(self, partition: Mapping[str, Any],
                            rows: Iterable[Mapping[str, Any]]) -> None:
        for k in [k for k, r in self.rows.items()
                  if all(r[p] == v for p, v in partition.items())]:
            del self.rows[k]
        self.apply(rows)

    def expected(self) -> list[Row]:
        return sorted_model_rows(self.rows, self.keys, self.columns)


# -- value generators for the type matrix ------------------------------------------------------
EPOCH = dt.date(1970, 1, 1)


def decimal_value(i: int, scale: int, digits: int) -> decimal.Decimal:
    """A deterministic decimal with exactly `scale` fraction digits and <= `digits` digits."""
    unscaled = (i * 7919 + 13) % (10 ** min(digits, 30))
    if i % 3 == 1:
        unscaled = -unscaled
    return decimal.Decimal(unscaled).scaleb(-scale)
