"""lakeformat's BinaryRow bytes, bucket ids and partition paths against pypaimon 2.1.0's own code.

Runs in the pypaimon venv.  Only cases where pypaimon follows Java are compared; the known
pypaimon deviations are listed in ``KNOWN_PYPAIMON_DEVIATIONS`` and pinned by the unit tests
(which follow Java):

* a null non-compact DECIMAL (p > 18) / TIMESTAMP (p > 3) gets no variable-part reservation;
* a non-compact DECIMAL whose unscaled value is ``-2**(8k-1)`` (e.g. -1.28 in DECIMAL(38, 2))
  gets one extra 0xff byte (Python ``bit_length`` vs Java ``BigInteger.bitLength``);
* BINARY partition values are written as Python ``repr`` (``b'a'``).
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from pypaimon.schema.data_types import DataTypeParser
from pypaimon.schema.table_schema import TableSchema
from pypaimon.table.row.generic_row import GenericRow, GenericRowDeserializer, GenericRowSerializer
from pypaimon.utils.file_store_path_factory import FileStorePathFactory
from pypaimon.write.row_key_extractor import FixedBucketRowKeyExtractor

from lakeformat.meta.binary_row import to_avro_bytes
from lakeformat.meta.bucket import bucket_ids
from lakeformat.meta.partition import partition_path
from lakeformat.schema import types as T
from lakeformat.schema.types import DataField, DataType, to_arrow

UTC = dt.UTC
KNOWN_PYPAIMON_DEVIATIONS = ("null non-compact decimal/timestamp", "decimal -2**(8k-1)",
                             "binary partition text")


def _pp(fields: list[DataField]) -> list[Any]:
    """The same fields as pypaimon DataFields, parsed from the schema JSON Java writes."""
    return [DataTypeParser.parse_data_field(f.to_json()) for f in fields]


def _fields(types: list[DataType]) -> list[DataField]:
    return [DataField(i, f"k{i}", t) for i, t in enumerate(types)]


# -- value generators (pyarrow ``as_py`` conventions) -------------------------------------

def _datetime(rng: random.Random, lo: int = 1, hi: int = 9999) -> dt.datetime:
    start = dt.datetime(lo, 1, 1).toordinal()
    day = rng.randint(start, dt.datetime(hi, 12, 28).toordinal())
    micros = rng.choice([0, rng.randrange(86_400_000_000)])
    return dt.datetime.fromordinal(day) + dt.timedelta(microseconds=micros)


def _decimal(p: int, s: int) -> Callable[[random.Random], Decimal]:
    def make(rng: random.Random) -> Decimal:
        bound = 10 ** p - 1
        u = rng.choice([rng.randint(-bound, bound), rng.randint(-1000, 1000), 0, bound, -bound])
        if p > 18 and u < 0 and ((-u) & (-u - 1)) == 0 and (-u).bit_length() % 8 == 0:
            u += 1  # pypaimon writes an extra sign byte for -2**(8k-1); Java does not
        return Decimal(f"{u}E-{s}")
    return make


def _text(rng: random.Random) -> str:
    n = rng.choice([0, 1, 6, 7, 8, 9, 16, 17, 40])
    return "".join(rng.choice("az09 /:=é✓😀") for _ in range(n))


GENERATORS: list[tuple[DataType, Callable[[random.Random], Any]]] = [
    (T.boolean(), lambda r: r.random() < 0.5),
    (T.tinyint(), lambda r: r.randint(-128, 127)),
    (T.smallint(), lambda r: r.randint(-(2 ** 15), 2 ** 15 - 1)),
    (T.int_(), lambda r: r.randint(-(2 ** 31), 2 ** 31 - 1)),
    (T.bigint(), lambda r: r.randint(-(2 ** 63), 2 ** 63 - 1)),
    (T.float_(), lambda r: float(pa.scalar(r.uniform(-1e6, 1e6), pa.float32()).as_py())),
    (T.double(), lambda r: r.choice([r.uniform(-1e9, 1e9), 0.1, -0.0, 1e300])),
    (T.decimal(10, 2), _decimal(10, 2)),
    (T.decimal(18, 4), _decimal(18, 4)),
    (T.decimal(19, 0), _decimal(19, 0)),
    (T.decimal(38, 10), _decimal(38, 10)),
    (T.string(), _text),
    (T.varchar(12), _text),
    (T.char(5), lambda r: "".join(r.choice("abcé") for _ in range(5))),
    (T.bytes_(), lambda r: bytes(r.randrange(256) for _ in range(r.choice([0, 3, 7, 8, 30])))),
    (T.binary(9), lambda r: bytes(r.randrange(256) for _ in range(9))),
    (T.date(), lambda r: _datetime(r).date()),
    (T.time(0), lambda r: _datetime(r).time().replace(microsecond=0)),
    (T.time(3), lambda r: _datetime(r).time().replace(microsecond=r.randrange(1000) * 1000)),
    (T.timestamp(0), lambda r: _datetime(r).replace(microsecond=0)),
    (T.timestamp(3), lambda r: _datetime(r).replace(microsecond=r.randrange(1000) * 1000)),
    (T.timestamp(6), lambda r: _datetime(r)),
    (T.timestamp(9), lambda r: _datetime(r, 1678, 2261)),
    (T.timestamp_ltz(3), lambda r: _datetime(r).replace(
        microsecond=r.randrange(1000) * 1000, tzinfo=UTC)),
    (T.timestamp_ltz(6), lambda r: _datetime(r).replace(tzinfo=UTC)),
]
IDS = [t.full_sql() for t, _ in GENERATORS]


def _may_be_null(t: DataType) -> bool:
    """pypaimon follows Java for nulls except non-compact DECIMAL / TIMESTAMP."""
    if t.root == "DECIMAL":
        return (t.precision or 10) <= 18
    if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return (t.precision or 6) <= 3
    return True


def _value(t: DataType, gen: Callable[[random.Random], Any], rng: random.Random) -> Any:
    if _may_be_null(t) and rng.random() < 0.15:
        return None
    return gen(rng)


# -- BinaryRow bytes ------------------------------------------------------------------------

@pytest.mark.parametrize("t,gen", GENERATORS, ids=IDS)
def test_single_column_bytes_equal_pypaimon(t: DataType,
                                            gen: Callable[[random.Random], Any]) -> None:
    rng = random.Random(t.full_sql())
    fields = _fields([t])
    for _ in range(150):
        values = [_value(t, gen, rng)]
        theirs = GenericRowSerializer.to_bytes(GenericRow(values, _pp(fields)))
        assert to_avro_bytes(values, [t]) == theirs, values


def test_multi_column_bytes_equal_pypaimon() -> None:
    rng = random.Random(42)
    for _ in range(400):
        chosen = [rng.choice(GENERATORS) for _ in range(rng.choice([2, 3, 5, 8, 60]))]
        types = [t for t, _ in chosen]
        values = [_value(t, gen, rng) for t, gen in chosen]
        theirs = GenericRowSerializer.to_bytes(GenericRow(values, _pp(_fields(types))))
        assert to_avro_bytes(values, types) == theirs, (types, values)


@pytest.mark.parametrize("t,gen", GENERATORS, ids=IDS)
def test_pypaimon_reads_lakeformat_rows(t: DataType, gen: Callable[[random.Random], Any]) -> None:
    rng = random.Random("read" + t.full_sql())
    fields = _fields([t, T.int_()])
    for _ in range(50):
        values = [_value(t, gen, rng), rng.randint(0, 9)]
        row = GenericRowDeserializer.from_bytes(to_avro_bytes(values, [t, T.int_()]), _pp(fields))
        assert row.values == values


# -- bucket ids -----------------------------------------------------------------------------

def _pypaimon_buckets(types: list[DataType], columns: list[pa.Array],
                      num_buckets: int) -> list[int]:
    fields = _fields(types) + [DataField(len(types), "v", T.int_())]
    names = [f.name for f in fields]
    schema = TableSchema(fields=_pp(fields), highest_field_id=len(types),
                         primary_keys=names[:-1],
                         options={"bucket": str(num_buckets), "bucket-key": ",".join(names[:-1])})
    extractor = FixedBucketRowKeyExtractor(schema)
    batch = pa.RecordBatch.from_arrays(
        columns + [pa.array(range(len(columns[0])), pa.int32())], names=names)
    return list(extractor._extract_buckets_batch(batch))


@pytest.mark.parametrize("t,gen", GENERATORS, ids=IDS)
def test_single_key_buckets_equal_pypaimon(t: DataType,
                                           gen: Callable[[random.Random], Any]) -> None:
    rng = random.Random("bucket" + t.full_sql())
    values = [_value(t, gen, rng) for _ in range(300)]
    column = pa.array(values, type=to_arrow(t))
    for n in (1, 2, 3, 7, 16):
        assert bucket_ids([column], [t], n).tolist() == _pypaimon_buckets([t], [column], n)


def test_multi_key_buckets_equal_pypaimon() -> None:
    rng = random.Random(7)
    for _ in range(25):
        chosen = [rng.choice(GENERATORS) for _ in range(rng.choice([2, 3, 4]))]
        types = [t for t, _ in chosen]
        columns = [pa.array([_value(t, gen, rng) for _ in range(120)], type=to_arrow(t))
                   for t, gen in chosen]
        n = rng.choice([2, 5, 8, 32])
        assert bucket_ids(columns, types, n).tolist() == _pypaimon_buckets(types, columns, n)


def test_sliced_chunked_string_keys_bucket_like_pypaimon() -> None:
    rng = random.Random(3)
    values = [_text(rng) for _ in range(500)]
    full = pa.array(values)
    expected = _pypaimon_buckets([T.string()], [full], 6)
    chunked = pa.chunked_array([full.slice(0, 123), full.slice(123)])
    assert bucket_ids([chunked], [T.string()], 6).tolist() == expected
    assert bucket_ids([full.slice(77, 200)], [T.string()], 6).tolist() == expected[77:277]


# -- partition paths ------------------------------------------------------------------------

PARTITION_CASES: list[tuple[DataType, Any]] = [
    (T.string(), "2024-01-01"), (T.string(), "a/b c:d=é%#?"), (T.string(), " "),
    (T.string(), None), (T.int_(), -3), (T.bigint(), 2 ** 40), (T.boolean(), True),
    (T.date(), dt.date(2024, 1, 1)), (T.decimal(10, 2), Decimal("1.50")),
    (T.decimal(38, 10), Decimal("-0.0000000128")),
    (T.timestamp(0), dt.datetime(2024, 1, 2, 3, 4, 5)),
    (T.timestamp(3), dt.datetime(2024, 1, 2, 3, 4, 5, 678000)),
    (T.timestamp(6), dt.datetime(2024, 1, 2, 3, 4)),
    (T.timestamp(6), dt.datetime(2024, 1, 2, 3, 4, 5, 100)),
    (T.timestamp(9), dt.datetime(2024, 1, 2, 3, 4, 5, 1)),
    (T.time(0), dt.time(1, 2, 3)), (T.time(3), dt.time(1, 2, 3, 450000)),
    (T.double(), 0.1), (T.double(), 1e7), (T.double(), 1e-4), (T.double(), -0.0),
    (T.double(), 100.0), (T.float_(), 0.1), (T.float_(), 1e10),
]


@pytest.mark.parametrize("legacy", [True, False])
@pytest.mark.parametrize("t,value", PARTITION_CASES,
                         ids=[f"{t.sql()}={v!r}" for t, v in PARTITION_CASES])
def test_partition_paths_equal_pypaimon_canonical_paths(t: DataType, value: Any,
                                                         legacy: bool) -> None:
    fields = [DataField(0, "p", t), DataField(1, "q", T.string())]
    factory = FileStorePathFactory(
        "/warehouse/db.db/t", ["p", "q"], "__DEFAULT_PARTITION__", "parquet", "data-",
        "changelog-", legacy, False, "zstd", partition_types=[f.type for f in _pp(fields)])
    theirs = factory.relative_bucket_path((value, "x=y"), 3, canonical_partition=True)
    assert partition_path([value, "x=y"], fields, legacy_name=legacy) + "/bucket-3" == theirs
