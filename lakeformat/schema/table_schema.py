"""`schema/schema-N`: one immutable version of a table's columns, keys and options."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from lakeformat import clock
from lakeformat.errors import CorruptFileError, InvalidOptionError, UnsupportedError
from lakeformat.schema.types import DataField, max_field_id

CURRENT_VERSION = 3

# Field ids Paimon reserves for system columns of key-value files [paimon-format.md §2.5].
KEY_FIELD_ID_START = 1073741823
SEQUENCE_NUMBER_ID = 2147483646
VALUE_KIND_ID = 2147483645
KEY_PREFIX = "_KEY_"
SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
VALUE_KIND = "_VALUE_KIND"
SYSTEM_FIELD_NAMES = frozenset({SEQUENCE_NUMBER, VALUE_KIND, "_LEVEL", "rowkind", "_ROW_ID"})


@dataclass(frozen=True)
class TableSchema:
    id: int
    fields: tuple[DataField, ...]
    highest_field_id: int
    partition_keys: tuple[str, ...] = ()
    primary_keys: tuple[str, ...] = ()
    options: dict[str, str] = field(default_factory=dict)
    comment: str | None = None
    time_millis: int = 0
    version: int = CURRENT_VERSION

    # -- derived views -----------------------------------------------------------------------
    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]

    def field(self, name: str) -> DataField:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    def fields_of(self, names: list[str] | tuple[str, ...]) -> list[DataField]:
        return [self.field(n) for n in names]

    @property
    def trimmed_primary_keys(self) -> tuple[str, ...]:
        """Primary key minus partition columns: the key stored in data files and manifests."""
        trimmed = tuple(k for k in self.primary_keys if k not in self.partition_keys)
        if self.primary_keys and not trimmed:
            raise UnsupportedError(
                f"primary key {list(self.primary_keys)} equals the partition keys; Paimon "
                "requires at least one primary-key column beyond the partition columns")
        return trimmed

    @property
    def bucket_keys(self) -> tuple[str, ...]:
        raw = self.options.get("bucket-key")
        if raw:
            keys = tuple(k.strip() for k in raw.split(",") if k.strip())
            for k in keys:
                if k not in self.field_names:
                    raise InvalidOptionError(f"bucket-key column {k!r} is not a table column")
            return keys
        return self.trimmed_primary_keys

    def key_fields(self) -> list[DataField]:
        """`_KEY_<k>` fields of key-value files: same type NOT NULL, id = 1073741823 + id."""
        out = []
        for name in self.trimmed_primary_keys:
            f = self.field(name)
            out.append(DataField(KEY_FIELD_ID_START + f.id, KEY_PREFIX + name, f.type.copy(False)))
        return out

    def partition_fields(self) -> list[DataField]:
        return self.fields_of(self.partition_keys)

    def copy(self, **changes: Any) -> TableSchema:
        return replace(self, **changes)

    # -- JSON ------------------------------------------------------------------------------------
    def to_json(self) -> str:
        """JSON in Java's key order; `comment` omitted when null (Java reads null as 'null')."""
        obj: dict[str, Any] = {
            "version": self.version,
            "id": self.id,
            "fields": [f.to_json() for f in self.fields],
            "highestFieldId": self.highest_field_id,
            "partitionKeys": list(self.partition_keys),
            "primaryKeys": list(self.primary_keys),
            "options": dict(self.options),
        }
        if self.comment is not None:
            obj["comment"] = self.comment
        obj["timeMillis"] = self.time_millis
        return json.dumps(obj, indent=2, ensure_ascii=False)

    @staticmethod
    def from_json(text: str | bytes, path: str = "<schema>") -> TableSchema:
        try:
            obj = json.loads(text)
            version = int(obj.get("version", 1))
            options = {str(k): str(v) for k, v in (obj.get("options") or {}).items()}
            # Old versions imply options that were defaults then [paimon-format.md §2.1].
            if version <= 1:
                options.setdefault("bucket", "1")
            if version <= 2:
                options.setdefault("file.format", "orc")
            fields = tuple(DataField.from_json(f) for f in obj["fields"])
            comment = obj.get("comment")
            return TableSchema(
                id=int(obj["id"]),
                fields=fields,
                highest_field_id=int(obj.get("highestFieldId", max_field_id(fields))),
                partition_keys=tuple(obj.get("partitionKeys") or ()),
                primary_keys=tuple(obj.get("primaryKeys") or ()),
                options=options,
                comment=comment,
                time_millis=int(obj.get("timeMillis") or 0),
                version=version,
            )
        except UnsupportedError as e:
            raise UnsupportedError(f"{path}: {e}") from e
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise CorruptFileError(f"cannot parse schema file {path}: {e}") from e


def new_schema(
    schema_id: int,
    fields: list[DataField],
    partition_keys: list[str],
    primary_keys: list[str],
    options: dict[str, str],
    comment: str | None,
) -> TableSchema:
    """A fresh schema with primary-key columns made NOT NULL, as Java and pypaimon normalise."""
    names = [f.name for f in fields]
    if len(set(names)) != len(names):
        dupes = sorted({n for n in names if names.count(n) > 1})
        raise InvalidOptionError(f"duplicate column names {dupes}")
    for n in names:
        if n in SYSTEM_FIELD_NAMES or n.startswith(KEY_PREFIX):
            raise InvalidOptionError(f"column name {n!r} is reserved by Paimon")
    for kind, keys in (("partition", partition_keys), ("primary", primary_keys)):
        for k in keys:
            if k not in names:
                raise InvalidOptionError(f"{kind} key {k!r} is not a column of {names}")
        if len(set(keys)) != len(keys):
            raise InvalidOptionError(f"duplicate {kind} keys {keys}")
    if options.get("primary-key.nullable", "false").lower() != "true":
        fields = [DataField(f.id, f.name, f.type.copy(False), f.description, f.default_value)
                  if f.name in primary_keys else f for f in fields]
    return TableSchema(
        id=schema_id,
        fields=tuple(fields),
        highest_field_id=max_field_id(fields),
        partition_keys=tuple(partition_keys),
        primary_keys=tuple(primary_keys),
        options={str(k): str(v) for k, v in options.items()},
        comment=comment,
        time_millis=clock.now_millis(),
    )

