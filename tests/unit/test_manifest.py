"""Avro manifest files and manifest lists: field round trips, foreign schemas, codecs, rolling."""

from __future__ import annotations

import io
import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

import fastavro
import pytest

from lakeformat.errors import CorruptFileError, UnsupportedError
from lakeformat.meta import binary_row
from lakeformat.meta.data_file_meta import (
    EMPTY_ROW_BYTES,
    DataFileMeta,
    FileKind,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
    merge_entries,
)
from lakeformat.meta.manifest import (
    MANIFEST_ENTRY_SCHEMA,
    MANIFEST_FILE_META_SCHEMA,
    ManifestFile,
    ManifestList,
    _codec_problem,
    avro_codec,
)
from lakeformat.schema import types as T
from lakeformat.storage.local import LocalFileIO

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "paimon-format-samples"
PART_TYPES = [T.string(), T.int_()]
KEY_TYPES = [T.bigint(False)]

JAVA_FILE_FIELDS = [
    "_FILE_NAME", "_FILE_SIZE", "_ROW_COUNT", "_MIN_KEY", "_MAX_KEY", "_KEY_STATS",
    "_VALUE_STATS", "_MIN_SEQUENCE_NUMBER", "_MAX_SEQUENCE_NUMBER", "_SCHEMA_ID", "_LEVEL",
    "_EXTRA_FILES", "_CREATION_TIME", "_DELETE_ROW_COUNT", "_EMBEDDED_FILE_INDEX",
    "_FILE_SOURCE", "_VALUE_STATS_COLS", "_EXTERNAL_PATH", "_FIRST_ROW_ID", "_WRITE_COLS",
]
JAVA_LIST_FIELDS = [
    "_VERSION", "_FILE_NAME", "_FILE_SIZE", "_NUM_ADDED_FILES", "_NUM_DELETED_FILES",
    "_PARTITION_STATS", "_SCHEMA_ID", "_MIN_BUCKET", "_MAX_BUCKET", "_MIN_LEVEL", "_MAX_LEVEL",
    "_MIN_ROW_ID", "_MAX_ROW_ID",
]


# -- helpers ------------------------------------------------------------------------------------
def part(dt: str | None, n: int | None = 1) -> bytes:
    return binary_row.to_avro_bytes([dt, n], PART_TYPES)


def key(k: int) -> bytes:
    return binary_row.to_avro_bytes([k], KEY_TYPES)


def data_file(name: str, level: int = 0, **kw: Any) -> DataFileMeta:
    base: dict[str, Any] = dict(
        file_name=name, file_size=1234, row_count=10, min_key=key(1), max_key=key(9),
        key_stats=SimpleStats(key(1), key(9), (0,)), value_stats=SimpleStats.EMPTY,
        min_sequence_number=0, max_sequence_number=9, schema_id=0, level=level,
        creation_time=1_700_000_000_123, delete_row_count=0, file_source=0, value_stats_cols=(),
    )
    base.update(kw)
    return DataFileMeta(**base)


def full_file(name: str) -> DataFileMeta:
    """Every optional field set to a non-default value."""
    vtypes = [T.string(), T.decimal(10, 2)]
    return DataFileMeta(
        file_name=name, file_size=98765, row_count=42, min_key=key(-5), max_key=key(77),
        key_stats=SimpleStats(key(-5), key(77), (0,)),
        value_stats=SimpleStats(binary_row.to_avro_bytes(["a", None], vtypes),
                                binary_row.to_avro_bytes(["zzzzzzzzzz", None], vtypes), (3, None)),
        min_sequence_number=100, max_sequence_number=141, schema_id=3, level=4,
        extra_files=(name + ".index", "other.idx"), creation_time=-1_234,
        delete_row_count=7, embedded_index=b"\x01\x02idx", file_source=1,
        value_stats_cols=("name", "price"), external_path="s3://ext/bucket-0/" + name,
        first_row_id=1000, write_cols=("id", "name", "price"),
    )


@pytest.fixture
def fio() -> LocalFileIO:
    return LocalFileIO(fsync=False)


@pytest.fixture
def table(tmp_path: Path) -> str:
    return str(tmp_path / "db.db" / "t")


def manifest_file(fio: LocalFileIO, table: str, **options: str) -> ManifestFile:
    return ManifestFile(fio, table, PART_TYPES, options)


def entries_of(n: int, prefix: str = "data") -> list[ManifestEntry]:
    return [ManifestEntry.add(part(f"2024-01-{i % 28 + 1:02d}", i % 3), i % 4, 4,
                              data_file(f"{prefix}-{i}.parquet")) for i in range(n)]


def avro_file(path: str) -> fastavro.reader:
    with open(path, "rb") as f:
        return fastavro.reader(io.BytesIO(f.read()))


# -- round trips --------------------------------------------------------------------------------
def test_every_data_file_field_round_trips(fio: LocalFileIO, table: str) -> None:
    mf = manifest_file(fio, table)
    entries = [
        ManifestEntry(FileKind.ADD, part("2024-01-01", 3), 1, 4, full_file("data-a.parquet")),
        ManifestEntry(FileKind.DELETE, part(None, None), -2, -2, data_file(
            "data-b.parquet", creation_time=None, delete_row_count=None, file_source=None,
            value_stats_cols=None)),
        ManifestEntry(FileKind.ADD, part("x", 1), 0, 4, data_file(
            "data-c.parquet", key_stats=SimpleStats(key(1), key(2), None))),
    ]
    metas = mf.write(entries)
    assert len(metas) == 1
    back = mf.read(metas[0].file_name)
    assert back == entries
    assert [type(e.kind) for e in back] == [FileKind] * 3
    assert back[0].file.extra_files == ("data-a.parquet.index", "other.idx")
    assert back[0].file.creation_time == -1_234


def test_written_schema_is_javas(fio: LocalFileIO, table: str) -> None:
    mf = manifest_file(fio, table)
    [meta] = mf.write(entries_of(2))
    reader = avro_file(mf.path(meta.file_name))
    schema = reader.writer_schema
    assert reader.metadata["avro.codec"] == "zstandard"
    assert schema["name"] == "org.apache.paimon.avro.generated.record"
    assert [f["name"] for f in schema["fields"]] == [
        "_VERSION", "_KIND", "_PARTITION", "_BUCKET", "_TOTAL_BUCKETS", "_FILE"]
    file_schema = schema["fields"][5]["type"]
    assert file_schema["name"] == "org.apache.paimon.avro.generated.record__FILE"
    assert [f["name"] for f in file_schema["fields"]] == JAVA_FILE_FIELDS
    by_name = {f["name"]: f for f in file_schema["fields"]}
    assert by_name["_CREATION_TIME"]["type"] == [
        "null", {"type": "long", "logicalType": "timestamp-millis"}]
    for name in JAVA_FILE_FIELDS[12:]:
        assert by_name[name]["type"][0] == "null" and by_name[name]["default"] is None
    assert by_name["_EXTRA_FILES"]["type"] == {"type": "array", "items": "string"}
    stats = by_name["_KEY_STATS"]["type"]
    assert stats["name"] == "org.apache.paimon.avro.generated.record__FILE__KEY_STATS"
    assert stats["fields"][2]["type"] == ["null", {"type": "array", "items": ["null", "long"]}]
    assert [r["_VERSION"] for r in reader] == [2, 2]


def test_manifest_list_round_trip_and_schema(fio: LocalFileIO, table: str) -> None:
    ml = ManifestList(fio, table, {})
    metas = [
        ManifestFileMeta("manifest-x-0", 2444, 3, 1, SimpleStats(part("a"), part("b"), (0, 1)), 2,
                         0, 3, 0, 5, 10, 99),
        ManifestFileMeta("manifest-x-1", 10, 0, 0, SimpleStats.EMPTY, 0),
    ]
    name, size = ml.write(metas)
    assert name.startswith("manifest-list-") and size == os.path.getsize(ml.path(name))
    assert ml.read(name) == metas
    reader = avro_file(ml.path(name))
    assert [f["name"] for f in reader.writer_schema["fields"]] == JAVA_LIST_FIELDS
    empty_name, _ = ml.write([])
    assert empty_name != name and ml.read(empty_name) == []


def test_names_share_one_uuid_and_count_up(fio: LocalFileIO, table: str) -> None:
    mf = manifest_file(fio, table)
    a = mf.write(entries_of(1))[0].file_name
    b = mf.write(entries_of(1))[0].file_name
    assert a.startswith("manifest-") and a.endswith("-0") and b.endswith("-1")
    assert a[:-2] == b[:-2]
    assert manifest_file(fio, table).write(entries_of(1))[0].file_name[:-2] != a[:-2]


def test_write_nothing_writes_no_file(fio: LocalFileIO, table: str) -> None:
    mf = manifest_file(fio, table)
    assert mf.write([]) == []
    assert not os.path.exists(mf.manifest_dir) or os.listdir(mf.manifest_dir) == []


# -- ManifestFileMeta statistics ----------------------------------------------------------------
def test_file_meta_statistics(fio: LocalFileIO, table: str) -> None:
    mf = manifest_file(fio, table)
    entries = [
        ManifestEntry.add(part("b", 2), 3, 4, data_file("f1", level=2, schema_id=1,
                                                      first_row_id=100, row_count=5)),
        ManifestEntry.add(part("a", 5), 1, 4, data_file("f2", level=0, schema_id=4,
                                                      first_row_id=0, row_count=10)),
        ManifestEntry.delete(part(None, 1), 2, 4, data_file("f3", level=5, schema_id=2,
                                                          first_row_id=50, row_count=1)),
        ManifestEntry.add(part("c", None), 0, 4, data_file("f4", level=1, first_row_id=7,
                                                         row_count=3)),
    ]
    [meta] = mf.write(entries)
    assert (meta.num_added_files, meta.num_deleted_files) == (3, 1)
    assert meta.schema_id == 4
    assert (meta.min_bucket, meta.max_bucket, meta.min_level, meta.max_level) == (0, 3, 0, 5)
    assert (meta.min_row_id, meta.max_row_id) == (0, 104)
    assert meta.file_size == os.path.getsize(mf.path(meta.file_name))
    stats = meta.partition_stats
    assert binary_row.from_avro_bytes(stats.min_values, PART_TYPES) == ["a", 1]
    assert binary_row.from_avro_bytes(stats.max_values, PART_TYPES) == ["c", 5]
    assert stats.null_counts == (1, 1)


def test_row_id_range_needs_every_entry(fio: LocalFileIO, table: str) -> None:
    mf = manifest_file(fio, table)
    entries = [ManifestEntry.add(part("a"), 0, 1, data_file("f1", first_row_id=0)),
               ManifestEntry.add(part("a"), 0, 1, data_file("f2"))]
    [meta] = mf.write(entries)
    assert meta.min_row_id is None and meta.max_row_id is None


def test_unpartitioned_stats_are_empty(fio: LocalFileIO, table: str) -> None:
    mf = ManifestFile(fio, table, [], {})
    [meta] = mf.write([ManifestEntry.add(EMPTY_ROW_BYTES, 0, 1, data_file("f1"))])
    assert meta.partition_stats == SimpleStats.EMPTY
    assert meta.partition_stats.min_values.hex() == "00000000" + "00" * 8


def test_partition_stats_all_null_column(fio: LocalFileIO, table: str) -> None:
    mf = manifest_file(fio, table)
    [meta] = mf.write([ManifestEntry.add(part(None, 1), 0, 1, data_file("f1")),
                       ManifestEntry.add(part(None, 3), 0, 1, data_file("f2"))])
    assert binary_row.from_avro_bytes(meta.partition_stats.min_values, PART_TYPES) == [None, 1]
    assert binary_row.from_avro_bytes(meta.partition_stats.max_values, PART_TYPES) == [None, 3]
    assert meta.partition_stats.null_counts == (2, 0)


# -- rolling ------------------------------------------------------------------------------------
@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_rolls_at_target_size_every_1000_records(fio: LocalFileIO, table: str,
                                                 compression: str) -> None:
    mf = manifest_file(fio, table, **{"manifest.target-file-size": "1kb",
                                      "manifest.compression": compression})
    entries = entries_of(2500)
    metas = mf.write(entries)
    assert [m.num_added_files for m in metas] == [1000, 1000, 500]
    assert len({m.file_name for m in metas}) == 3
    assert [e for m in metas for e in mf.read(m.file_name)] == entries
    for m in metas:
        assert m.file_size == os.path.getsize(mf.path(m.file_name))


def test_no_roll_between_checks(fio: LocalFileIO, table: str) -> None:
    mf = manifest_file(fio, table, **{"manifest.target-file-size": "1 b"})
    assert len(mf.write(entries_of(999))) == 1


def test_big_target_keeps_one_file(fio: LocalFileIO, table: str) -> None:
    assert len(manifest_file(fio, table).write(entries_of(3000))) == 1


@pytest.mark.parametrize("text, size", [
    ("8 mb", 8 << 20), ("8MB", 8 << 20), ("1kb", 1024), ("1024 b", 1024), ("2 gb", 2 << 30)])
def test_target_size_parses_memory_sizes(fio: LocalFileIO, table: str, text: str,
                                         size: int) -> None:
    assert manifest_file(fio, table, **{"manifest.target-file-size": text}).target_file_size == size


def test_default_target_size_is_8_mib(fio: LocalFileIO, table: str) -> None:
    assert manifest_file(fio, table).target_file_size == 8 << 20


# -- codecs -------------------------------------------------------------------------------------
@pytest.mark.parametrize("compression, codec", [
    ("none", "null"), ("null", "null"), ("deflate", "deflate"), ("zlib", "deflate"),
    ("snappy", "snappy"), ("zstd", "zstandard"), ("ZSTD", "zstandard"), ("bzip2", "bzip2"),
    ("xz", "xz")])
def test_codecs_write_and_read(fio: LocalFileIO, table: str, compression: str,
                               codec: str) -> None:
    mf = manifest_file(fio, table, **{"manifest.compression": compression})
    entries = entries_of(50)
    [meta] = mf.write(entries)
    assert avro_file(mf.path(meta.file_name)).metadata["avro.codec"] == codec
    assert mf.read(meta.file_name) == entries
    ml = ManifestList(fio, table, {"manifest.compression": compression})
    name, _ = ml.write([meta])
    assert avro_file(ml.path(name)).metadata["avro.codec"] == codec
    assert ml.read(name) == [meta]


@pytest.mark.parametrize("codec", ["null", "deflate", "snappy", "zstandard"])
def test_reads_files_written_with_any_java_codec(fio: LocalFileIO, table: str, codec: str) -> None:
    mf = manifest_file(fio, table, **{"manifest.compression": "none"})
    [meta] = mf.write(entries_of(20))
    records = list(avro_file(mf.path(meta.file_name)))
    buf = io.BytesIO()
    fastavro.writer(buf, MANIFEST_ENTRY_SCHEMA, records, codec=codec)
    with open(mf.path("manifest-foreign-0"), "wb") as f:
        f.write(buf.getvalue())
    assert mf.read("manifest-foreign-0") == mf.read(meta.file_name)


def test_missing_codec_library_is_not_called_corruption(
        fio: LocalFileIO, table: str, monkeypatch: pytest.MonkeyPatch) -> None:
    mf = manifest_file(fio, table, **{"manifest.compression": "deflate"})
    [meta] = mf.write(entries_of(3))

    def missing(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("deflate codec is supported but you need to install libfoo")

    monkeypatch.setitem(fastavro.read.BLOCK_READERS, "deflate", missing)
    _codec_problem.cache_clear()
    try:
        with pytest.raises(UnsupportedError, match="libfoo"):
            mf.read(meta.file_name)
    finally:
        _codec_problem.cache_clear()


def test_unknown_compression_fails_naming_option(fio: LocalFileIO, table: str) -> None:
    with pytest.raises(UnsupportedError, match="manifest.compression"):
        manifest_file(fio, table, **{"manifest.compression": "lz4"})
    assert avro_codec(None) == "zstandard"


# -- foreign schemas ----------------------------------------------------------------------------
def _decode_sample(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"hex"}:
            return bytes.fromhex(value["hex"])
        return {k: _decode_sample(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode_sample(v) for v in value]
    return value


def _write_sample(path: str, sample_name: str) -> list[dict[str, Any]]:
    sample = json.loads((SAMPLES / sample_name).read_text())
    records = _decode_sample(sample["records"])
    for r in records:
        ct = r.get("_FILE", {}).get("_CREATION_TIME")
        if isinstance(ct, str):
            r["_FILE"]["_CREATION_TIME"] = datetime.fromisoformat(ct)
    buf = io.BytesIO()
    fastavro.writer(buf, sample["writer_schema"], records, codec=sample["avro_codec"])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(buf.getvalue())
    return records


@pytest.mark.parametrize("sample", ["manifest-file-of-snapshot-1.json",
                                    "manifest-file-of-snapshot-3.json"])
def test_reads_pypaimon_manifest_schema(fio: LocalFileIO, table: str, sample: str) -> None:
    mf = ManifestFile(fio, table, [T.string(False)], {})
    records = _write_sample(mf.path("manifest-pypaimon-0"), sample)
    entries = mf.read("manifest-pypaimon-0")
    assert len(entries) == len(records)
    for e, r in zip(entries, records, strict=True):
        f = r["_FILE"]
        assert (e.kind, e.partition, e.bucket, e.total_buckets) == (
            r["_KIND"], r["_PARTITION"], r["_BUCKET"], r["_TOTAL_BUCKETS"])
        assert e.file.file_name == f["_FILE_NAME"] and e.file.row_count == f["_ROW_COUNT"]
        assert e.file.min_key == f["_MIN_KEY"] and e.file.key_stats.null_counts == (0,)
        assert e.file.value_stats == SimpleStats.EMPTY
        assert e.file.value_stats_cols == () and e.file.write_cols is None
        assert e.file.creation_time == round(f["_CREATION_TIME"].timestamp() * 1000)
        assert (e.file.delete_row_count, e.file.file_source, e.file.extra_files) == (0, 0, ())
    assert binary_row.from_avro_bytes(entries[0].partition, [T.string(False)])[0].startswith("2024")
    assert merge_entries(entries) == entries


def test_reads_pypaimon_manifest_list_schema(fio: LocalFileIO, table: str) -> None:
    ml = ManifestList(fio, table, {})
    records = _write_sample(ml.path("manifest-list-pypaimon-0"),
                            "manifest-list-of-snapshot-3-base.json")
    metas = ml.read("manifest-list-pypaimon-0")
    assert [m.file_name for m in metas] == [r["_FILE_NAME"] for r in records]
    assert metas[0] == ManifestFileMeta(
        records[0]["_FILE_NAME"], 2444, 3, 0,
        SimpleStats(records[0]["_PARTITION_STATS"]["_MIN_VALUES"],
                    records[0]["_PARTITION_STATS"]["_MAX_VALUES"], (0,)),
        0, 0, 1, 0, 0, None, None)


def test_reads_old_java_schema_without_new_fields(fio: LocalFileIO, table: str) -> None:
    """Java 0.9 wrote 16 file fields and 7 list fields: the rest must read as None."""
    old = json.loads(json.dumps(MANIFEST_ENTRY_SCHEMA))
    old["fields"][5]["type"]["fields"] = old["fields"][5]["type"]["fields"][:16]
    mf = manifest_file(fio, table)
    records = [{"_VERSION": 2, "_KIND": 0, "_PARTITION": part("a"), "_BUCKET": 0,
                "_TOTAL_BUCKETS": 1, "_FILE": {
                    "_FILE_NAME": "f", "_FILE_SIZE": 1, "_ROW_COUNT": 2, "_MIN_KEY": key(1),
                    "_MAX_KEY": key(2),
                    "_KEY_STATS": {"_MIN_VALUES": key(1), "_MAX_VALUES": key(2),
                                   "_NULL_COUNTS": [0]},
                    "_VALUE_STATS": {"_MIN_VALUES": EMPTY_ROW_BYTES,
                                     "_MAX_VALUES": EMPTY_ROW_BYTES},
                    "_MIN_SEQUENCE_NUMBER": 0, "_MAX_SEQUENCE_NUMBER": 1, "_SCHEMA_ID": 0,
                    "_LEVEL": 0, "_EXTRA_FILES": [], "_CREATION_TIME": 5}}]
    buf = io.BytesIO()
    fastavro.writer(buf, old, records, codec="snappy")
    os.makedirs(mf.manifest_dir, exist_ok=True)
    with open(mf.path("manifest-old-0"), "wb") as f:
        f.write(buf.getvalue())
    [e] = mf.read("manifest-old-0")
    assert e.file.value_stats_cols is None and e.file.external_path is None
    assert e.file.first_row_id is None and e.file.write_cols is None
    assert e.file.value_stats.null_counts is None and e.file.creation_time == 5

    old_list = json.loads(json.dumps(MANIFEST_FILE_META_SCHEMA))
    old_list["fields"] = old_list["fields"][:7]
    buf = io.BytesIO()
    fastavro.writer(buf, old_list, [{
        "_VERSION": 2, "_FILE_NAME": "manifest-old-0", "_FILE_SIZE": 9, "_NUM_ADDED_FILES": 1,
        "_NUM_DELETED_FILES": 0, "_SCHEMA_ID": 0,
        "_PARTITION_STATS": {"_MIN_VALUES": part("a"), "_MAX_VALUES": part("a"),
                             "_NULL_COUNTS": [0, 0]}}])
    with open(mf.path("manifest-list-old-0"), "wb") as f:
        f.write(buf.getvalue())
    [m] = ManifestList(fio, table, {}).read("manifest-list-old-0")
    assert (m.min_bucket, m.max_bucket, m.min_level, m.max_level, m.min_row_id) == (None,) * 5


def test_version_1_is_refused_clearly(fio: LocalFileIO, table: str) -> None:
    mf = manifest_file(fio, table, **{"manifest.compression": "none"})
    [meta] = mf.write(entries_of(1))
    records = list(avro_file(mf.path(meta.file_name)))
    records[0]["_VERSION"] = 1
    buf = io.BytesIO()
    fastavro.writer(buf, MANIFEST_ENTRY_SCHEMA, records)
    with open(mf.path("manifest-v1-0"), "wb") as f:
        f.write(buf.getvalue())
    with pytest.raises(UnsupportedError, match="manifest-v1-0.*_VERSION 1"):
        mf.read("manifest-v1-0")


# -- corruption ---------------------------------------------------------------------------------
@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty", "flip"])
def test_damaged_manifest_raises_corrupt_file_error_naming_path(
        fio: LocalFileIO, table: str, damage: str) -> None:
    mf = manifest_file(fio, table)
    [meta] = mf.write(entries_of(200))
    path = mf.path(meta.file_name)
    data = open(path, "rb").read()
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "garbage":
        data = b"this is not avro at all" * 10
    elif damage == "empty":
        data = b""
    else:  # corrupt the compressed block body
        mid = len(data) - 200
        data = data[:mid] + bytes(b ^ 0xFF for b in data[mid:mid + 50]) + data[mid + 50:]
    with open(path, "wb") as f:
        f.write(data)
    with pytest.raises(CorruptFileError) as info:
        mf.read(meta.file_name)
    assert path in str(info.value)


def test_damaged_manifest_list_raises_corrupt_file_error(fio: LocalFileIO, table: str) -> None:
    ml = ManifestList(fio, table, {})
    name, size = ml.write([ManifestFileMeta("m", 1, 1, 0, SimpleStats.EMPTY, 0)] * 50)
    with open(ml.path(name), "r+b") as f:
        f.truncate(size - 30)
    with pytest.raises(CorruptFileError, match=name):
        ml.read(name)


def test_wrong_record_shape_is_corrupt(fio: LocalFileIO, table: str) -> None:
    mf = manifest_file(fio, table)
    buf = io.BytesIO()
    fastavro.writer(buf, {"type": "record", "name": "x", "fields": [
        {"name": "_VERSION", "type": "int"}]}, [{"_VERSION": 2}])
    os.makedirs(mf.manifest_dir, exist_ok=True)
    with open(mf.path("manifest-odd-0"), "wb") as f:
        f.write(buf.getvalue())
    with pytest.raises(CorruptFileError, match="manifest-odd-0"):
        mf.read("manifest-odd-0")


def test_missing_manifest_is_file_not_found(fio: LocalFileIO, table: str) -> None:
    with pytest.raises(FileNotFoundError):
        manifest_file(fio, table).read("manifest-nope-0")


# -- entries ------------------------------------------------------------------------------------
def test_merge_entries_keeps_adds_without_delete() -> None:
    a, b, c = (ManifestEntry.add(part("a"), 0, 1, data_file(n)) for n in ("a", "b", "c"))
    upgraded = ManifestEntry.add(part("a"), 0, 1, data_file("b").upgrade(1))
    live = merge_entries([a, b, c, b.with_kind(FileKind.DELETE), upgraded])
    assert live == [a, c, upgraded]
    # a DELETE applies wherever it comes, as in Java's scan
    assert merge_entries([a.with_kind(FileKind.DELETE), a]) == []


def test_merge_entries_refuses_double_add() -> None:
    a = ManifestEntry.add(part("a"), 0, 1, data_file("a"))
    with pytest.raises(CorruptFileError, match="twice"):
        merge_entries([a, a])


def test_identifier_fields() -> None:
    f = full_file("x")
    e = ManifestEntry.add(part("a"), 3, 4, f)
    assert e.identifier == (part("a"), 3, 4, "x", f.extra_files, f.embedded_index, f.external_path)
    assert e.identifier != ManifestEntry.add(part("a"), 3, 4, f.upgrade(5)).identifier
    assert hash(e.identifier) == hash(ManifestEntry.delete(part("a"), 3, 9, f).identifier)
    with pytest.raises(ValueError):
        f.upgrade(4)
