"""The options of the `lakeformat` data source, split in two: the data source's own (where the
table is, and the read and write options) and everything else, handed to `lakeformat.Catalog`
as catalog options (where an unknown key is refused by name). Shared by the reader and the
writer; Spark hands a Python data source its option keys lower-cased.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lakeformat.errors import InvalidArgumentError, InvalidOptionError

if TYPE_CHECKING:
    from lakeformat import Table

__all__ = ["open_table", "split_options", "catalog_options", "resolve_snapshot", "check_direction",
           "READ_OPTIONS", "WRITE_OPTIONS", "DATA_SOURCE_OPTIONS"]

#: options of a read (everything else but the table's place goes to the catalog)
READ_OPTIONS = frozenset({"snapshot-id", "tag", "memory-budget"})
#: options of a write (read by `lakeformat.spark.writer`)
WRITE_OPTIONS = frozenset({"merge-schema", "commit-user", "commit-identifier", "result-path",
                           "memory-budget"})
#: where the table is: the warehouse URI, and `load("db.t")` (arrives as `path`) or `table`
PLACE_OPTIONS = frozenset({"warehouse", "path", "table"})
DATA_SOURCE_OPTIONS = READ_OPTIONS | WRITE_OPTIONS | PLACE_OPTIONS


def split_options(options: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(data-source options, catalog options) of the options a data source was given; keys
    lower-cased (Spark matches option names case-insensitively)."""
    ds: dict[str, str] = {}
    catalog: dict[str, str] = {}
    for key, value in options.items():
        name = str(key).lower()
        (ds if name in DATA_SOURCE_OPTIONS else catalog)[name] = str(value)
    return ds, catalog


def _table_name(ds: Mapping[str, str]) -> str:
    path, table = ds.get("path", "").strip(), ds.get("table", "").strip()
    if path and table and path != table:
        raise InvalidOptionError(f"the table is given twice, as load({path!r}) and as option "
                                 f"'table' = {table!r}: give one")
    name = path or table
    if not name:
        raise InvalidOptionError("no table given: use load(\"database.table\") or "
                                 "option(\"table\", \"database.table\")")
    return name


def open_table(options: Mapping[str, str]) -> tuple[Any, Any, dict[str, str]]:
    """(catalog, table, data-source options by name) for a data source's options.

    Raises a clear error for a missing `warehouse` or table, and lets `lakeformat.Catalog`
    refuse an unknown catalog option by name. The caller closes the catalog."""
    import lakeformat as lf

    ds, catalog_options = split_options(options)
    warehouse = ds.get("warehouse", "").strip()
    if not warehouse:
        raise InvalidOptionError("option 'warehouse' is required: the warehouse URI of the "
                                 "lakeformat catalog (a local path, file:// or s3://)")
    name = _table_name(ds)
    ds["table"] = name
    ds.pop("path", None)
    catalog = lf.Catalog(warehouse, catalog_options)
    try:
        table = catalog.get_table(name)
    except BaseException:
        catalog.close()
        raise
    return catalog, table, ds


def catalog_options(options: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    """(warehouse, catalog options) of a data source's options, for a task that opens the
    table's storage again without going through the catalog."""
    ds, catalog = split_options(options)
    return ds.get("warehouse", "").strip(), catalog


def resolve_snapshot(table: Table, ds: Mapping[str, str]) -> tuple[Any, Any]:
    """(snapshot or None, its table schema) a read with options `ds` sees: the latest, or the
    one of `snapshot-id` / `tag` with that snapshot's own schema (time travel)."""
    raw_id, tag = ds.get("snapshot-id"), ds.get("tag")
    snapshot_id = None
    if raw_id is not None:
        try:
            snapshot_id = int(raw_id.strip())
        except ValueError:
            raise InvalidOptionError(f"option 'snapshot-id' must be an integer, got {raw_id!r}"
                                     ) from None
    if snapshot_id is not None and tag is not None:
        raise InvalidArgumentError("give option 'snapshot-id' or option 'tag', not both")
    table.refresh()
    snapshot = table._resolve_snapshot(snapshot_id, tag)
    schema = table._schema_of(snapshot, snapshot_id is not None or tag is not None)
    return snapshot, schema


def check_direction(ds: Mapping[str, str], kind: str) -> None:
    """Refuse a read option on a write and a write option on a read, by name (it would be
    silently ignored otherwise)."""
    allowed = READ_OPTIONS if kind == "read" else WRITE_OPTIONS
    wrong = sorted(k for k in ds if k in DATA_SOURCE_OPTIONS - PLACE_OPTIONS - allowed)
    if wrong:
        raise InvalidOptionError(f"option(s) {wrong} do not apply to a {kind}; a {kind} takes "
                                 f"{sorted(allowed)} besides the catalog options")
