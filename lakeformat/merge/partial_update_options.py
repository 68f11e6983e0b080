"""The options of `merge-engine=partial-update`, read once into a `PartialUpdateConfig`.

Every check Paimon's partial-update factory makes on the table's options (sequence groups,
their ordering fields, aggregate functions, the delete options) happens here, naming the
option key; the merge (`partial_update`) only reads the result.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from lakeformat.errors import InvalidOptionError, UnsupportedError
from lakeformat.merge.aggregation.registry import (
    AGGREGATE_FUNCTIONS,
    UNSUPPORTED_FUNCTIONS,
    FieldAggregator,
    create_aggregator,
)
from lakeformat.merge.sequence_group import (
    ORDERABLE_ROOTS,
    SEQUENCE_GROUP_SUFFIX,
    SequenceGroup,
    is_sequence_group_candidate,
    java_hash_map_order,
    java_split,
)
from lakeformat.options import parse_bool
from lakeformat.schema.table_schema import TableSchema

REMOVE_ON_DELETE = "partial-update.remove-record-on-delete"
REMOVE_ON_SEQUENCE_GROUP = "partial-update.remove-record-on-sequence-group"
DEFAULT_AGG = "fields.default-aggregate-function"
LAST_NON_NULL = "last_non_null_value"


@dataclass(frozen=True)
class FieldAgg:
    index: int
    function: str
    aggregator: FieldAggregator
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
            if dt.root not in ORDERABLE_ROOTS:
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
        aggregator = create_aggregator(function, fields[idx], options)
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
