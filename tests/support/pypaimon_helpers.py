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
    """Same columns in the same order, and exact row equality after sorting both sides by the
    primary key."""
    if isinstance(expected, list):
        columns = list(expected[0]) if expected else actual.column_names
    else:
        columns = expected.column_names
    assert actual.column_names == columns, (
        f"{what}: columns differ: got {actual.column_names}, want {columns}")
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


# -- shared test data --------------------------------------------------------------------------
DAYS = ["2024-01-01", "2024-01-02", "2024-01-03"]

ORDERS = pa.schema([
    ("dt", pa.string()), ("id", pa.int64()), ("name", pa.string()),
    ("amount", pa.float64()), ("rk", pa.string()),
])
ORDER_KEYS = ["dt", "id"]


def order(day: str, i: int, rk: str = "+I", version: int = 0) -> Row:
    """A row of ORDERS whose values say which version of the key wrote it."""
    return {"dt": day, "id": i, "name": f"n{i}-v{version}", "amount": i * 10.0 + version,
            "rk": rk}


def decimal_value(i: int, scale: int, digits: int) -> decimal.Decimal:
    """A deterministic decimal with exactly `scale` fraction digits and <= `digits` digits."""
    unscaled = (i * 7919 + 13) % (10 ** min(digits, 30))
    if i % 3 == 1:
        unscaled = -unscaled
    return decimal.Decimal(unscaled).scaleb(-scale)


# -- the type matrix ---------------------------------------------------------------------------
VALUE_COLUMNS = pa.schema([
    ("c_int", pa.int32()), ("c_bigint", pa.int64()), ("c_string", pa.string()),
    ("c_double", pa.float64()), ("c_dec10", pa.decimal128(10, 2)),
    ("c_dec38", pa.decimal128(38, 10)), ("c_bool", pa.bool_()), ("c_date", pa.date32()),
    ("c_ts3", pa.timestamp("ms")), ("c_ts6", pa.timestamp("us")), ("c_bytes", pa.binary()),
])
VALUE_PAIMON_TYPES = ["INT", "BIGINT", "STRING", "DOUBLE", "DECIMAL(10, 2)", "DECIMAL(38, 10)",
                      "BOOLEAN", "DATE", "TIMESTAMP(3)", "TIMESTAMP(6)", "BYTES"]


def _string_key(i: int) -> str:
    return "" if i == 0 else ["a", "é", "日本", "zz", "A"][i % 5] + str(i)


# Paimon key type -> (Arrow type, i -> distinct key value); negative and pre-epoch values too
KEY_TYPES: dict[str, tuple[pa.DataType, Callable[[int], Any]]] = {
    "INT": (pa.int32(), lambda i: (i - 20) * 104729),
    "BIGINT": (pa.int64(), lambda i: (i - 20) * 3_000_000_019),
    "STRING": (pa.string(), _string_key),
    "DATE": (pa.date32(), lambda i: dt.date(1970, 1, 1) + dt.timedelta(days=(i - 20) * 397)),
}


def typed_values(i: int, version: int) -> Row:
    """Edge-ish values of every VALUE_COLUMNS type; every 7th row is all null. No NaN (it
    never compares equal)."""
    if (i + version) % 7 == 0:
        return {name: None for name in VALUE_COLUMNS.names}
    base = dt.datetime(1969, 12, 31, 23, 59, 59) + dt.timedelta(
        days=i * 37 + version, microseconds=i * 123_457)
    return {
        "c_int": [-(2**31), 2**31 - 1, 0, i * version][i % 4],
        "c_bigint": [-(2**63), 2**63 - 1, 0, -i * 10**12][i % 4],
        "c_string": ["", "ascii", "ünïcödé ✓", "x" * 300][i % 4] + str(version),
        "c_double": [0.0, -1.5, 1e308, -2.2250738585072014e-308, float("inf"),
                     float("-inf")][i % 6] + version,
        "c_dec10": decimal_value(i + version, 2, 10),
        "c_dec38": decimal_value(i * 31 + version, 10, 38),
        "c_bool": [True, False][(i + version) % 2],
        "c_date": dt.date(1970, 1, 1) + dt.timedelta(days=(i - 10) * 1000 + version),
        "c_ts3": base.replace(microsecond=(base.microsecond // 1000) * 1000),
        "c_ts6": base,
        "c_bytes": [b"", b"\x00", bytes(range(256)), f"v{version}".encode()][i % 4],
    }
