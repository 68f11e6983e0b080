"""pypaimon 2.1.0 reads our manifests and manifest lists, and we read pypaimon's.

Runs in the interop venv (pypaimon beside the lakeformat core). The last test points a new
snapshot at manifests we merged and lets pypaimon scan the table through them.
"""

from __future__ import annotations

import json
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")
pypaimon = pytest.importorskip("pypaimon")

from pypaimon import CatalogFactory, Schema  # noqa: E402
from pypaimon.manifest.manifest_file_manager import ManifestFileManager  # noqa: E402
from pypaimon.manifest.manifest_list_manager import ManifestListManager  # noqa: E402

from lakeformat.meta import binary_row  # noqa: E402
from lakeformat.meta.data_file_meta import (  # noqa: E402
    DataFileMeta,
    FileKind,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
    merge_entries,
)
from lakeformat.meta.manifest import ManifestFile, ManifestList  # noqa: E402
from lakeformat.meta.manifest_merge import merge_manifests  # noqa: E402
from lakeformat.schema import types as T  # noqa: E402
from lakeformat.storage.local import LocalFileIO  # noqa: E402

PA_SCHEMA = pa.schema([
    pa.field("dt", pa.string(), nullable=False),
    pa.field("id", pa.int64(), nullable=False),
    pa.field("name", pa.string()),
    pa.field("price", pa.decimal128(10, 2)),
])
PART_TYPES = [T.string(False)]
KEY_TYPES = [T.bigint(False)]
VALUE_TYPES = [T.string(False), T.bigint(False), T.string(), T.decimal(10, 2)]


def stats_types(types: list[T.DataType]) -> list[T.DataType]:
    return [t.copy(nullable=True) for t in types]


@pytest.fixture
def table(tmp_path: Path) -> Any:
    catalog = CatalogFactory.create({"warehouse": str(tmp_path / "wh")})
    catalog.create_database("db", False)
    schema = Schema.from_pyarrow_schema(PA_SCHEMA, partition_keys=["dt"],
                                        primary_keys=["dt", "id"], options={"bucket": "2"})
    catalog.create_table("db.t", schema, False)
    return catalog.get_table("db.t")


def commit(table: Any, rows: list[dict[str, Any]], overwrite: dict[str, str] | None = None) -> None:
    builder = table.new_batch_write_builder()
    if overwrite is not None:
        builder = builder.overwrite(overwrite)
    write, com = builder.new_write(), builder.new_commit()
    write.write_arrow(pa.Table.from_pylist(rows, schema=PA_SCHEMA))
    com.commit(write.prepare_commit())
    write.close()
    com.close()


def read_rows(table: Any) -> list[dict[str, Any]]:
    rb = table.new_read_builder()
    data = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return sorted(data.to_pylist(), key=lambda r: (r["dt"], r["id"]))


def row_values(row: Any, n: int) -> list[Any]:
    return [row.get_field(i) for i in range(n)]


def key(k: int) -> bytes:
    return binary_row.to_avro_bytes([k], KEY_TYPES)


def our_entries() -> list[ManifestEntry]:
    p1 = binary_row.to_avro_bytes(["2024-01-01"], PART_TYPES)
    p2 = binary_row.to_avro_bytes(["2024-01-02"], PART_TYPES)
    vt = stats_types(VALUE_TYPES)
    all_cols = SimpleStats(
        binary_row.to_avro_bytes(["2024-01-01", 1, "alpha", Decimal("1.50")], vt),
        binary_row.to_avro_bytes(["2024-01-01", 9, "omega-omega", Decimal("99.99")], vt),
        (0, 0, 2, None))
    some_cols = SimpleStats(
        binary_row.to_avro_bytes(["a", None], vt[2:]),
        binary_row.to_avro_bytes(["z", None], vt[2:]), (1, 4))
    key_stats = SimpleStats(key(1), key(9), (0,))
    a = DataFileMeta(
        "data-a-0.parquet", 4321, 9, key(1), key(9), key_stats, all_cols, 10, 18, 0, 3,
        extra_files=("data-a-0.parquet.index",), creation_time=1_732_000_000_123,
        delete_row_count=2, embedded_index=b"\x00idx\xff", file_source=1,
        value_stats_cols=None, external_path=None, first_row_id=None, write_cols=None)
    b = DataFileMeta(
        "data-b-0.parquet", 100, 4, key(2), key(5), SimpleStats(key(2), key(5), (0,)),
        some_cols, 0, 3, 0, 0, creation_time=None, delete_row_count=None, file_source=0,
        value_stats_cols=("name", "price"), external_path="file:/elsewhere/data-b-0.parquet",
        first_row_id=100, write_cols=("dt", "id", "name", "price"))
    c = DataFileMeta(
        "data-c-0.parquet", 7, 1, key(3), key(3), SimpleStats(key(3), key(3), (0,)),
        SimpleStats.EMPTY, 4, 4, 0, 0, creation_time=0, delete_row_count=0, file_source=0,
        value_stats_cols=())
    return [ManifestEntry.add(p1, 0, 2, a), ManifestEntry.add(p2, 1, 2, b),
            ManifestEntry.delete(p2, 1, 2, c)]


def test_pypaimon_reads_our_manifest_file(table: Any) -> None:
    mf = ManifestFile(LocalFileIO(fsync=False), table.table_path, PART_TYPES, {})
    entries = our_entries()
    [meta] = mf.write(entries)
    theirs = ManifestFileManager(table).read(meta.file_name, drop_stats=False)
    assert len(theirs) == len(entries)
    for ours, pe in zip(entries, theirs, strict=True):
        f, pf = ours.file, pe.file
        assert (pe.kind, pe.bucket, pe.total_buckets) == (
            ours.kind, ours.bucket, ours.total_buckets)
        assert list(pe.partition.values) == binary_row.from_avro_bytes(ours.partition, PART_TYPES)
        assert (pf.file_name, pf.file_size, pf.row_count) == (f.file_name, f.file_size, f.row_count)
        assert list(pf.min_key.values) == binary_row.from_avro_bytes(f.min_key, KEY_TYPES)
        assert list(pf.max_key.values) == binary_row.from_avro_bytes(f.max_key, KEY_TYPES)
        assert row_values(pf.key_stats.min_values, 1) == binary_row.from_avro_bytes(
            f.key_stats.min_values, KEY_TYPES)
        assert list(pf.key_stats.null_counts) == list(f.key_stats.null_counts)
        assert (pf.min_sequence_number, pf.max_sequence_number) == (
            f.min_sequence_number, f.max_sequence_number)
        assert (pf.schema_id, pf.level) == (f.schema_id, f.level)
        assert list(pf.extra_files) == list(f.extra_files)
        assert (None if pf.creation_time is None
                else pf.creation_time.get_millisecond()) == f.creation_time
        assert pf.delete_row_count == f.delete_row_count
        assert pf.embedded_index == f.embedded_index
        assert pf.file_source == f.file_source
        assert pf.value_stats_cols == (None if f.value_stats_cols is None
                                       else list(f.value_stats_cols))
        assert pf.external_path == f.external_path
        assert pf.first_row_id == f.first_row_id
        assert pf.write_cols == (None if f.write_cols is None else list(f.write_cols))
        assert pf.write_cols_sequences is None
    # value stats: all columns when _VALUE_STATS_COLS is null, else the listed ones
    a_stats = theirs[0].file.value_stats
    assert row_values(a_stats.max_values, 4) == ["2024-01-01", 9, "omega-omega", Decimal("99.99")]
    assert list(a_stats.null_counts) == [0, 0, 2, None]
    assert row_values(theirs[1].file.value_stats.min_values, 2) == ["a", None]


def test_pypaimon_reads_our_manifest_list(table: Any) -> None:
    fio = LocalFileIO(fsync=False)
    mf = ManifestFile(fio, table.table_path, PART_TYPES, {})
    metas = mf.write(our_entries()) + [ManifestFileMeta(
        "manifest-other-0", 55, 0, 0, SimpleStats.EMPTY, 7, min_row_id=1, max_row_id=2)]
    name, size = ManifestList(fio, table.table_path, {}).write(metas)
    theirs = ManifestListManager(table).read(name, size)
    assert [m.file_name for m in theirs] == [m.file_name for m in metas]
    first, pm = metas[0], theirs[0]
    assert (pm.file_size, pm.num_added_files, pm.num_deleted_files, pm.schema_id) == (
        first.file_size, 2, 1, 0)
    assert (pm.min_bucket, pm.max_bucket, pm.min_level, pm.max_level) == (0, 1, 0, 3)
    assert (pm.min_row_id, pm.max_row_id) == (None, None)
    assert row_values(pm.partition_stats.min_values, 1) == ["2024-01-01"]
    assert row_values(pm.partition_stats.max_values, 1) == ["2024-01-02"]
    assert list(pm.partition_stats.null_counts) == [0]
    assert (theirs[1].min_row_id, theirs[1].max_row_id, theirs[1].schema_id) == (1, 2, 7)
    assert theirs[1].total_buckets is None and theirs[1].extra_files is None


def test_we_read_manifests_pypaimon_wrote(table: Any) -> None:
    commit(table, [{"dt": "2024-01-01", "id": i, "name": f"n{i}", "price": Decimal(i)}
                   for i in range(5)])
    commit(table, [{"dt": "2024-01-02", "id": 1, "name": None, "price": None}])
    snapshot = table.snapshot_manager().get_latest_snapshot()
    fio = LocalFileIO(fsync=False)
    ours_list = ManifestList(fio, table.table_path, {})
    lists = ManifestListManager(table)
    metas = (ours_list.read(snapshot.base_manifest_list)
             + ours_list.read(snapshot.delta_manifest_list))
    theirs = lists.read_all(snapshot)
    assert [(m.file_name, m.file_size, m.num_added_files, m.num_deleted_files, m.schema_id,
             m.min_bucket, m.max_bucket, m.min_level, m.max_level) for m in metas] == [
        (m.file_name, m.file_size, m.num_added_files, m.num_deleted_files, m.schema_id,
         m.min_bucket, m.max_bucket, m.min_level, m.max_level) for m in theirs]
    for ours, pm in zip(metas, theirs, strict=True):
        assert binary_row.from_avro_bytes(ours.partition_stats.min_values, PART_TYPES) == \
            row_values(pm.partition_stats.min_values, 1)
    mf = ManifestFile(fio, table.table_path, PART_TYPES, {})
    entries = mf.read_all(metas)
    their_entries = [e for m in theirs
                     for e in ManifestFileManager(table).read(m.file_name, drop_stats=False)]
    assert [(e.file.file_name, e.bucket, e.file.row_count, e.file.creation_time)
            for e in entries] == [
        (e.file.file_name, e.bucket, e.file.row_count, e.file.creation_time.get_millisecond())
        for e in their_entries]
    for ours, pe in zip(entries, their_entries, strict=True):
        assert binary_row.from_avro_bytes(ours.partition, PART_TYPES) == list(pe.partition.values)
        assert binary_row.from_avro_bytes(ours.file.min_key, KEY_TYPES) == list(
            pe.file.min_key.values)
    # our own writer reproduces what we read, byte for byte in every field
    [rewritten] = mf.write(entries)
    assert mf.read(rewritten.file_name) == entries


@pytest.mark.parametrize("threshold", [1, 1 << 40], ids=["full", "minor"])
def test_pypaimon_scans_through_our_merged_manifests(table: Any, threshold: int) -> None:
    commit(table, [{"dt": "2024-01-01", "id": i, "name": f"n{i}", "price": Decimal(i)}
                   for i in range(6)])
    commit(table, [{"dt": "2024-01-02", "id": i, "name": "x", "price": None} for i in range(3)])
    commit(table, [{"dt": "2024-01-01", "id": 2, "name": "updated", "price": Decimal("2.50")}])
    commit(table, [{"dt": "2024-01-02", "id": 9, "name": "only", "price": None}],
           overwrite={"dt": "2024-01-02"})
    expected = read_rows(table)
    latest = table.snapshot_manager().get_latest_snapshot()

    fio = LocalFileIO(fsync=False)
    mf = ManifestFile(fio, table.table_path, PART_TYPES, {})
    ml = ManifestList(fio, table.table_path, {})
    inputs = ml.read(latest.base_manifest_list) + ml.read(latest.delta_manifest_list)
    assert any(m.num_deleted_files for m in inputs)  # the overwrite deleted files
    merged, new_files = merge_manifests(inputs, mf, 1 << 40, 2, threshold)
    assert new_files and set(merge_entries(mf.read_all(merged))) == set(
        merge_entries(mf.read_all(inputs)))
    if threshold == 1:
        assert all(e.kind == FileKind.ADD for e in mf.read_all(merged))

    base_name, base_size = ml.write(merged)
    delta_name, delta_size = ml.write([])
    snapshot_dir = os.path.join(table.table_path, "snapshot")
    with open(os.path.join(snapshot_dir, f"snapshot-{latest.id}")) as f:
        doc = json.load(f)
    doc.update(id=latest.id + 1, baseManifestList=base_name, baseManifestListSize=base_size,
               deltaManifestList=delta_name, deltaManifestListSize=delta_size,
               commitKind="COMPACT", deltaRecordCount=0, changelogManifestList=None,
               changelogManifestListSize=None)
    with open(os.path.join(snapshot_dir, f"snapshot-{latest.id + 1}"), "w") as f:
        json.dump(doc, f)
    with open(os.path.join(snapshot_dir, "LATEST"), "w") as f:
        f.write(str(latest.id + 1))

    assert table.snapshot_manager().get_latest_snapshot().base_manifest_list == base_name
    assert read_rows(table) == expected
    assert {r["dt"] for r in expected} == {"2024-01-01", "2024-01-02"}
