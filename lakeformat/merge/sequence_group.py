"""How `merge-engine=partial-update` reads its options, and how ordering values are compared.

`PartialUpdateConfig.of(schema)` builds the engine's configuration with every check Paimon's
partial-update factory makes (same order, same meaning, the option key named in the message):
sequence groups (`fields.<s1>,<s2>.sequence-group = <c1>,<c2>`), field aggregators, and the
delete options. `ordering_codes` turns a group's ordering columns into int64 codes that compare
the way Paimon's generated comparator does (lexicographic over the ordering fields, a null lower
than any value, floats by `Float.compare`), so running maxima can be taken with numpy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.errors import InvalidOptionError, UnsupportedError
from lakeformat.options import parse_bool
from lakeformat.schema.table_schema import TableSchema
from lakeformat.schema.types import DataField

SEQUENCE_GROUP_SUFFIX = "sequence-group"
REMOVE_ON_DELETE = "partial-update.remove-record-on-delete"
REMOVE_ON_SEQUENCE_GROUP = "partial-update.remove-record-on-sequence-group"
DEFAULT_AGG = "fields.default-aggregate-function"
LAST_NON_NULL = "last_non_null_value"

# Types whose values Paimon's comparator can order and lakeformat can rank with Arrow.
_ORDERABLE_ROOTS = ("BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE",
                    "DECIMAL", "CHAR", "VARCHAR", "BINARY", "VARBINARY", "DATE", "TIME",
                    "TIMESTAMP", "TIMESTAMP_LTZ")


# -- Java string/collection behaviour the option parsing depends on ------------------------------

def java_split(text: str, sep: str = ",") -> list[str]:
    """Java `String.split(sep)` for a one-char literal: no trimming, trailing empties dropped."""
    if sep not in text:
        return [text]
    parts = text.split(sep)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _java_string_hash(s: str) -> int:
    """`String.hashCode()` (over UTF-16 code units) as an unsigned 32-bit number."""
    data = s.encode("utf-16-le")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] | data[i + 1] << 8)) & 0xFFFFFFFF
    return h


def java_hash_map_order(keys: Sequence[str]) -> list[str]:
    """The order a `java.util.HashMap` filled with `keys` (in this order) iterates them.

    Paimon walks table options in this order when it builds sequence groups; whether a column
    that is one group's ordering field and another group's protected field is an error depends
    on which of the two options comes first.
    """
    capacity = 16
    while len(keys) > capacity * 3 // 4:
        capacity *= 2

    def bucket(k: str) -> int:
        h = _java_string_hash(k)
        return (h ^ (h >> 16)) & (capacity - 1)

    return [k for _, _, k in sorted((bucket(k), i, k) for i, k in enumerate(keys))]




# -- configuration -------------------------------------------------------------------------------

@dataclass(frozen=True)
class SequenceGroup:
    """One `fields.<ordering>.sequence-group` option after Paimon's resolution."""

    option: str
    ordering: tuple[int, ...]  # field indices of the ordering fields, in listed order
    protected: tuple[int, ...]  # field indices the group protects (ordering fields excluded)
    removes_row: bool  # a -D winning this group removes the whole row

    @property
    def first_ordering(self) -> int:
        """Where the record walk (by field index) reaches the group's ordering fields."""
        return min(self.ordering)


@dataclass(frozen=True)
class FieldAgg:
    index: int
    function: str
    aggregator: object  # lakeformat.merge.aggregators.FieldAggregator
    ignore_retract: bool


@dataclass(frozen=True)
class PartialUpdateConfig:
    names: tuple[str, ...]
    nullable: tuple[bool, ...]
    groups: tuple[SequenceGroup, ...]
    aggs: dict[int, FieldAgg]  # aggregated protected fields (non-group fields never need one)
    ignore_delete: bool
    remove_on_delete: bool

    @property
    def group_of(self) -> dict[int, SequenceGroup]:
        out: dict[int, SequenceGroup] = {}
        for g in self.groups:
            for i in (*g.ordering, *g.protected):
                out[i] = g
        return out

    @staticmethod
    def of(schema: TableSchema) -> PartialUpdateConfig:
        return _build(schema)


def is_sequence_group_candidate(key: str) -> bool:
    return key.startswith("fields") and key.endswith(SEQUENCE_GROUP_SUFFIX)


def _build(schema: TableSchema) -> PartialUpdateConfig:
    options = {str(k): str(v) for k, v in schema.options.items()}
    names = schema.field_names
    primary_keys = set(schema.primary_keys)
    fields = list(schema.fields)

    ignore_delete = _ignore_delete(options)
    remove_on_delete = parse_bool(options, REMOVE_ON_DELETE)
    remove_on_group = options.get(REMOVE_ON_SEQUENCE_GROUP)

    def require(name: str, key: str) -> int:
        if name not in names:
            raise InvalidOptionError(f"{key}: Field {name} can not be found in table schema")
        return names.index(name)

    def no_primary_key(name: str, key: str) -> None:
        if name in primary_keys:
            raise InvalidOptionError(
                f"The sequence-group '{key}' contains primary key field '{name}', which is not "
                "allowed. Primary key columns cannot be put in sequence-group.")

    owner: dict[int, str] = {}  # field index -> the option key of the group that governs it
    ordering_of: dict[str, tuple[int, ...]] = {}
    ordering_index: dict[str, int] = {}  # ordering field name -> index (remove-on-group lookup)
    all_ordering: set[str] = set()
    protected_names: set[str] = set()
    for key in java_hash_map_order(list(options)):
        if not is_sequence_group_candidate(key):
            continue
        if not (key.startswith("fields.") and key.endswith("." + SEQUENCE_GROUP_SUFFIX)):
            raise InvalidOptionError(f"Invalid sequence-group option: {key}")
        middle = key[len("fields."):len(key) - len(SEQUENCE_GROUP_SUFFIX) - 1]
        ordering = tuple(require(n, key) for n in java_split(middle))
        for name in java_split(options[key]):
            idx = require(name, key)
            no_primary_key(name, key)
            if idx in owner:
                raise InvalidOptionError(
                    f"Field {name} is defined repeatedly by multiple groups: {key}")
            owner[idx] = key
            protected_names.add(name)
        for idx in ordering:
            no_primary_key(names[idx], key)
            all_ordering.add(names[idx])
            owner[idx] = key
            ordering_index[names[idx]] = idx
        ordering_of[key] = ordering

    aggs_by_name = _aggregate_functions(options, names, primary_keys, all_ordering,
                                        protected_names)

    if remove_on_delete and ignore_delete:
        raise InvalidOptionError(f"ignore-delete and {REMOVE_ON_DELETE} have conflicting "
                                 "behavior so should not be enabled at the same time.")
    if remove_on_group is not None and ignore_delete:
        raise InvalidOptionError(f"ignore-delete and {REMOVE_ON_SEQUENCE_GROUP} have conflicting "
                                 "behavior so should not be enabled at the same time.")
    if remove_on_delete and owner:
        raise InvalidOptionError(f"sequence-group and {REMOVE_ON_DELETE} have conflicting "
                                 "behavior so should not be enabled at the same time.")
    removing: set[int] = set()
    if remove_on_group is not None:
        listed = java_split(remove_on_group)
        if not all(n in ordering_index for n in listed):
            raise InvalidOptionError(
                f"field '{remove_on_group}' defined in '{REMOVE_ON_SEQUENCE_GROUP}' option must "
                "be part of sequence groups")
        removing = {ordering_index[n] for n in listed}

    groups = []
    for key, ordering in ordering_of.items():
        stolen = [names[i] for i in ordering if owner[i] != key]
        if stolen:
            # Paimon would compare this group on a field another group overwrites mid-record;
            # the outcome then depends on field positions in ways lakeformat does not model.
            raise UnsupportedError(
                f"{key}: ordering field(s) {stolen} also order another sequence group "
                f"({sorted({owner[names.index(s)] for s in stolen})}); lakeformat does not "
                "support an ordering field shared by two sequence groups")
        protected = tuple(i for i in sorted(owner) if owner[i] == key and i not in ordering)
        groups.append(SequenceGroup(key, tuple(dict.fromkeys(ordering)), protected,
                                    any(i in removing for i in ordering)))
        for i in ordering:
            dt = fields[i].type
            if dt.root == "BLOB":
                raise InvalidOptionError(
                    f"Field '{names[i]}' with type {dt} cannot be used as a sequence-group "
                    f"ordering field in option '{key}'.")
            if dt.root not in _ORDERABLE_ROOTS:
                raise UnsupportedError(
                    f"{key}: ordering field '{names[i]}' has type {dt}; lakeformat orders "
                    "sequence groups by atomic types only")
    groups.sort(key=lambda g: g.first_ordering)

    if parse_bool(options, "aggregation.remove-record-on-delete"):
        # Paimon checks this whenever it creates a field aggregator: for primary keys and for
        # every field with an aggregate function, even under partial-update
        for idx in sorted(set(aggs_by_name) | {names.index(k) for k in primary_keys}):
            key = f"fields.{names[idx]}.ignore-retract"
            if parse_bool(options, key):
                raise InvalidOptionError(
                    f"aggregation.remove-record-on-delete and {key} have conflicting behavior "
                    "so should not be enabled at the same time.")

    aggs: dict[int, FieldAgg] = {}
    for idx, function in aggs_by_name.items():
        if idx not in owner:
            # outside any group only last_non_null_value is allowed, and it is the engine's own
            # rule for such fields (non-null values overwrite): no aggregator is needed
            continue
        ignore_retract = parse_bool(options, f"fields.{names[idx]}.ignore-retract")
        aggregator = _create_aggregator(function, fields[idx], options)
        aggs[idx] = FieldAgg(idx, function, aggregator, ignore_retract)
    return PartialUpdateConfig(tuple(names), tuple(f.type.nullable for f in fields),
                               tuple(groups), aggs, ignore_delete, remove_on_delete)


def _ignore_delete(options: Mapping[str, str]) -> bool:
    for key in ("ignore-delete", "first-row.ignore-delete", "deduplicate.ignore-delete",
                "partial-update.ignore-delete"):
        if key in options:
            return parse_bool(options, key)
    return False


def _aggregate_functions(options: Mapping[str, str], names: list[str], primary_keys: set[str],
                         ordering: set[str], protected: set[str]) -> dict[int, str]:
    """Field index -> aggregate function name, for the fields Paimon gives an aggregator.

    Ordering fields never aggregate; primary keys keep their value; every other field takes
    `fields.<f>.aggregate-function`, else `fields.default-aggregate-function`, and only
    `last_non_null_value` may be used on a field no sequence group protects.
    """
    from lakeformat.merge.aggregators import AGGREGATE_FUNCTIONS, UNSUPPORTED_FUNCTIONS

    out: dict[int, str] = {}
    default = options.get(DEFAULT_AGG)
    for idx, name in enumerate(names):
        function = options.get(f"fields.{name}.aggregate-function", default)
        if function is None:
            continue
        if function not in AGGREGATE_FUNCTIONS and function not in UNSUPPORTED_FUNCTIONS:
            # Paimon looks every configured name up, even where it is never used
            key = (f"fields.{name}.aggregate-function"
                   if f"fields.{name}.aggregate-function" in options else DEFAULT_AGG)
            raise InvalidOptionError(f"{key}: unknown aggregate function {function!r}")
        if name in ordering or name in primary_keys:
            continue
        if function != LAST_NON_NULL and name not in protected:
            raise InvalidOptionError(
                f"fields.{name}.aggregate-function: Must use sequence group for aggregation "
                f"functions but not found for field {name}.")
        out[idx] = function
    return out


def _create_aggregator(function: str, field: DataField, options: Mapping[str, str]) -> object:
    from lakeformat.merge.aggregators import create_aggregator

    return create_aggregator(function, field, options)


# -- ordering values as int64 codes --------------------------------------------------------------

_INT_LIKE = (pa.types.is_integer, pa.types.is_boolean, pa.types.is_date, pa.types.is_time,
             pa.types.is_timestamp, pa.types.is_duration)


def _combined(col: pa.ChunkedArray | pa.Array) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    return col


def _valid(arr: pa.Array) -> np.ndarray:
    if arr.null_count == 0:
        return np.ones(len(arr), dtype=bool)
    return np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def float_codes(arr: pa.Array) -> np.ndarray:
    """int64 codes ordered like Java's Float.compare / Double.compare (-0.0 < 0.0, every NaN
    equal and last); nulls get the code of 0.0."""
    values = np.asarray(pc.fill_null(arr, 0).to_numpy(zero_copy_only=False))
    if values.dtype == np.float32:
        bits = values.view(np.int32).astype(np.int64)
        bits = np.where(np.isnan(values), 0x7FC00000, bits)
        return bits ^ ((bits >> 31) & 0x7FFFFFFF)
    bits = values.astype(np.float64).view(np.int64)
    bits = np.where(np.isnan(values), np.int64(0x7FF8000000000000), bits)
    return bits ^ ((bits >> 63) & np.int64(0x7FFFFFFFFFFFFFFF))


def _int_codes(arr: pa.Array) -> np.ndarray:
    t = arr.type
    if pa.types.is_floating(t):
        return float_codes(arr)
    if pa.types.is_boolean(t):
        arr = arr.cast(pa.int8())
    elif pa.types.is_date32(t) or pa.types.is_time32(t):
        arr = arr.cast(pa.int32())
    elif not pa.types.is_integer(t):
        arr = arr.cast(pa.int64())
    return np.asarray(pc.fill_null(arr, 0).to_numpy(zero_copy_only=False)).astype(np.int64)


def ordering_codes(columns: Sequence[pa.ChunkedArray | pa.Array]) -> np.ndarray:
    """Non-negative int64 codes of the ordering tuples: 0 where every field is null, otherwise
    >= 1 and ordered like Paimon's sequence-group comparator (equal tuples, equal codes)."""
    arrays = [_combined(c) for c in columns]
    n = len(arrays[0])
    if all(any(f(a.type) for f in _INT_LIKE) for a in arrays):
        codes = _integer_codes(arrays[0])
        for a in arrays[1:]:
            if codes is None:
                break
            more = _integer_codes(a)
            if more is None:
                codes = None
                break
            # lexicographic with a null (code 0) lowest in every field, as Paimon compares
            width = int(more.max()) + 1
            if (int(codes.max()) + 1) * width >= (1 << 62):
                codes = None
                break
            codes = codes * width + more
        if codes is not None:
            return codes
    valid = [_valid(a) for a in arrays]
    nonempty = np.logical_or.reduce(valid) if len(valid) > 1 else valid[0]
    codes = np.zeros(n, dtype=np.int64)
    if n == 0 or not nonempty.any():
        return codes
    if len(arrays) == 1 and pa.types.is_floating(arrays[0].type):
        raw = float_codes(arrays[0])
        lo, hi = int(raw[nonempty].min()), int(raw[nonempty].max())
        if hi - lo < (1 << 62):
            codes[nonempty] = raw[nonempty] - lo + 1
            return codes
    return _dense_rank(arrays, valid) * nonempty


def _integer_codes(arr: pa.Array) -> np.ndarray | None:
    """Codes of one integer-like column by shifting its values (None if the range is too wide)."""
    t = arr.type
    if pa.types.is_boolean(t):
        arr = arr.cast(pa.int8())
    elif pa.types.is_date32(t) or pa.types.is_time32(t):
        arr = arr.cast(pa.int32())
    if not pa.types.is_int64(arr.type):
        arr = arr.cast(pa.int64())
    if arr.null_count == len(arr):
        return np.zeros(len(arr), dtype=np.int64)
    bounds = pc.min_max(arr)
    lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
    if hi - lo >= (1 << 62) or lo == np.iinfo(np.int64).min:
        return None
    base = lo - 1  # nulls become `base`, hence code 0
    if arr.null_count:
        arr = pc.fill_null(arr, pa.scalar(base, pa.int64()))
    values = np.asarray(arr.to_numpy(zero_copy_only=False))
    return np.subtract(values, np.int64(base), dtype=np.int64)


def _dense_rank(arrays: list[pa.Array], valid: list[np.ndarray]) -> np.ndarray:
    """1-based dense rank of the tuples, nulls lowest in every field."""
    from lakeformat.merge.sort import _sort_indices_nulls_first

    cols = []
    for a, v in zip(arrays, valid):
        if pa.types.is_floating(a.type) or pa.types.is_boolean(a.type):
            a = pa.array(_int_codes(a), mask=~v)
        cols.append(a)
    names = [f"c{i}" for i in range(len(cols))]
    table = pa.table(cols, names=names)
    order = _sort_indices_nulls_first(table, [(c, "ascending") for c in names])
    order_np = np.asarray(order.to_numpy(zero_copy_only=False))
    n = len(order_np)
    new_value = np.zeros(n, dtype=bool)
    new_value[0] = True
    for col, v in zip(cols, valid):
        s = col.take(order)
        vs = v[order_np]
        prev, cur = s.slice(0, n - 1), s.slice(1)
        differs = np.asarray(pc.fill_null(pc.not_equal(cur, prev), False)
                             .to_numpy(zero_copy_only=False), dtype=bool)
        new_value[1:] |= differs | (vs[1:] != vs[:-1])
    ranks = np.empty(n, dtype=np.int64)
    ranks[order_np] = np.cumsum(new_value)
    return ranks
