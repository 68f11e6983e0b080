"""Operators that write rows or change a table's definition: ingest files (with merge-schema),
create a table, alter a table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lakeformat_airflow.operators.base import (
    DEFAULT_SPARK_CONN_ID,
    ENGINES,
    CommitIdentityMixin,
    EngineMixin,
    LakeformatBaseOperator,
    bad_argument,
    choice,
    to_budget,
    to_flag,
    to_names,
    to_options,
    to_structure,
    to_text,
)

if TYPE_CHECKING:
    from lakeformat import Table

FORMATS = (None, "parquet", "csv", "json")
MODES = ("append", "overwrite")


def to_source(name: str, value: Any) -> str | list[str]:
    """A path or glob pattern, or a list of them (also as the text of a list, which a list
    rendered by a template gives); text that is no list literal stays a pattern."""
    expected = "a path, a glob pattern or a list of them"
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            value = to_structure(name, value, list, expected, optional=False)
        except ValueError:  # "[ab]*.csv" is a pattern
            pass
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, list) and value and all(isinstance(v, str) and v.strip()
                                                 for v in value):
        return [v.strip() for v in value]
    raise bad_argument(name, value, expected)


def to_columns(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise bad_argument(name, value, "Paimon SQL text, e.g. 'id BIGINT NOT NULL, name STRING'")
    return value


class LakeformatIngestOperator(CommitIdentityMixin, EngineMixin, LakeformatBaseOperator):
    """Write landed files (Parquet, CSV, newline-delimited JSON) into a table as one snapshot.

    `source`: a path or glob pattern (or a list), local or `s3://`, templated — e.g.
    `"s3://landing/orders/{{ ds }}/*.parquet"`. `format`: parquet, csv or json (default: each
    file's extension). `mode="overwrite"` replaces the partitions the files cover.
    `merge_schema=True` first adds the files' new columns to the table (Paimon's
    `write.merge-schema`). Idempotent per logical date (see `CommitIdentityMixin`): a retry or a
    backfill of the same date finds its earlier commit and writes nothing.

    `engine="spark"` reads the files in Spark tasks and writes the buckets on executors
    (`lakeformat.spark.ingest`); `memory_budget` then bounds each task's write buffer. Every
    argument but `spark_conn_id` may be a template.
    """

    arguments = {"source": to_source, "format": choice(*FORMATS), "mode": choice(*MODES),
                 "merge_schema": to_flag, "engine": choice(*ENGINES),
                 "memory_budget": to_budget, "commit_user": to_text}
    template_fields: Sequence[str] = ("table", *arguments, "commit_identifier")
    writes_table = True

    def __init__(self, *, table: str, source: str | list[str], format: str | None = None,
                 mode: str = "append", merge_schema: bool = False, engine: str = "local",
                 spark_conn_id: str = DEFAULT_SPARK_CONN_ID,
                 memory_budget: int | str | None = None, commit_user: str | None = None,
                 commit_identifier: int | str | None = None, **kwargs: Any):
        super().__init__(table=table, **kwargs)
        self.source = source
        self.format = format
        self.mode = mode
        self.merge_schema = merge_schema
        self.engine = engine
        self.spark_conn_id = spark_conn_id
        self.memory_budget = memory_budget
        self.commit_user = commit_user
        self.commit_identifier = commit_identifier
        self.convert_arguments(rendered=False)

    def changed(self, result: Any) -> bool:
        return result.snapshot_id is not None and not result.already_committed

    def run(self, table: Table, context: Any) -> Any:
        user, identifier = self.commit_identity(context)
        fmt = self.format
        overwrite = self.mode == "overwrite"
        self.log.info("ingesting %s into %s (%s, %s, commit %s / %s)", self.source, self.table,
                      self.mode, self.engine, user, identifier)
        if self.use_spark():
            from lakeformat.spark.file_ingest import ingest

            return ingest(self.spark(context), table, self.source, fmt, overwrite,
                          self.merge_schema, commit_user=user, commit_identifier=identifier,
                          memory_budget=self.memory_budget)
        return ingest_files(table, self.source, fmt, overwrite, self.merge_schema,
                            commit_user=user, commit_identifier=identifier)


def ingest_files(table: Table, source: str | Sequence[str], format: str | None = None,
                 overwrite: bool = False, merge_schema: bool = False, *,
                 commit_user: str | None = None, commit_identifier: int | None = None) -> Any:
    """Write the rows of the files `source` names (paths, glob patterns) into `table` as one
    snapshot, in process: the library reads them in whole (`lakeformat.ingest.read_source`),
    then `table.write` commits them. `overwrite=True` replaces the partitions the files cover;
    `merge_schema=True` adds the files' new columns to the table first. Returns the
    `CommitResult`."""
    from lakeformat.ingest import read_source

    rows = read_source(table, source, format, schema=table, allow_extra=merge_schema)
    return table.write(rows, overwrite=overwrite, merge_schema=True if merge_schema else None,
                       commit_user=commit_user, commit_identifier=commit_identifier)


class LakeformatCreateTableOperator(LakeformatBaseOperator):
    """Create a table (and its database) unless it exists.

    `columns`: Paimon SQL text (`"id BIGINT NOT NULL, name STRING, dt STRING"`);
    `primary_keys`, `partition_keys`, `options` (Paimon's names: `bucket`, `merge-engine`,
    `fields.<f>.sequence-group`, ...). With `if_not_exists=True` (default) an existing table
    is left as it is and reported with `created: False`. Every argument may be a template
    (keys also as names separated by commas, options also as the text of a dict).
    """

    arguments = {"columns": to_columns, "primary_keys": to_names, "partition_keys": to_names,
                 "options": to_options, "comment": to_text, "if_not_exists": to_flag}
    template_fields: Sequence[str] = ("table", *arguments)
    lineage_role = "write"

    def __init__(self, *, table: str, columns: str, primary_keys: Sequence[str] = (),
                 partition_keys: Sequence[str] = (), options: dict[str, Any] | None = None,
                 comment: str | None = None, if_not_exists: bool = True, **kwargs: Any):
        super().__init__(table=table, **kwargs)
        self.columns = columns
        self.primary_keys = primary_keys
        self.partition_keys = partition_keys
        self.options = options
        self.comment = comment
        self.if_not_exists = if_not_exists
        self.convert_arguments(rendered=False)

    def execute(self, context: Any) -> dict[str, Any]:
        import time

        from lakeformat_airflow.operators import metrics
        from lakeformat_airflow.operators.base import check_table_name, library_errors

        started = time.monotonic()
        try:
            with library_errors():
                check_table_name(self.table)
                self.convert_arguments(rendered=True)
                result = self._create()
        except Exception:
            metrics.emit("create_table", self.table, failed=True, logger=self.log)
            raise
        created = [metrics.Measure("incr", metrics.metric_name("create_table", "tables_created"),
                                   1, result["table"])] if result["created"] else []
        metrics.emit("create_table", result["table"], seconds=time.monotonic() - started,
                     extra=created, logger=self.log)
        self.log.info("%s %s at %s (schema %s)",
                      "created" if result["created"] else "kept existing", result["table"],
                      result["path"], result["schema_id"])
        return result

    def _create(self) -> dict[str, Any]:
        import lakeformat as lf
        from lakeformat.cli import UsageError, parse_columns

        catalog = self.hook().get_catalog()
        try:
            fields = parse_columns(self.columns)
        except UsageError as e:
            raise lf.InvalidArgumentError(f"columns: {e}") from None
        existed = catalog.table_exists(self.table)
        if existed and not self.if_not_exists:
            raise lf.TableAlreadyExistsError(f"table {self.table} already exists in "
                                             f"{catalog.warehouse}")
        catalog.create_database(self.table.split(".")[0], exist_ok=True)
        t = catalog.create_table(self.table, fields, primary_keys=self.primary_keys,
                                 partition_keys=self.partition_keys, options=self.options,
                                 comment=self.comment, exist_ok=True)
        self.record_lineage(catalog.warehouse, [(t.name, t.table_schema)])
        return {"table": t.name, "path": t.path, "schema_id": t.table_schema.id,
                "created": not existed}


#: dict specs of schema changes: {"action": "add_column", ...} -> SchemaChange factory
_ACTIONS = ("set_option", "remove_option", "update_comment", "add_column", "rename_column",
            "drop_column", "update_column_type", "update_column_nullability",
            "update_column_comment")


def schema_change(spec: Any) -> Any:
    """A `lakeformat.SchemaChange` from itself or from a dict spec (JSON-friendly, for Params):
    `{"action": "add_column", "field_name": "email", "data_type": "STRING"}`; a type is Paimon
    SQL text. Keyword names are those of the `SchemaChange` factory of the action."""
    import lakeformat as lf
    from lakeformat.schema.type_text import parse_type

    if not isinstance(spec, dict):
        return spec
    spec = dict(spec)
    action = spec.pop("action", None)
    if action not in _ACTIONS:
        raise lf.InvalidArgumentError(f"schema change {spec!r}: action must be one of "
                                      f"{', '.join(_ACTIONS)}, got {action!r}")
    for key in ("data_type", "new_data_type"):
        if isinstance(spec.get(key), str):
            spec[key] = parse_type(spec[key])
    try:
        return getattr(lf.SchemaChange, action)(**spec)
    except TypeError as e:
        raise lf.InvalidArgumentError(f"schema change {action}: {e}") from None


def to_changes(name: str, value: Any) -> list[Any]:
    """Schema changes: `SchemaChange` objects or dict specs, or the text of a list of specs
    (a list param rendered by a template)."""
    changes = to_structure(name, value, list, "a list of schema changes", optional=False)
    for spec in changes:
        if isinstance(spec, dict) and spec.get("action") not in _ACTIONS:
            raise bad_argument(name, spec, f"a list of schema changes whose action is one of "
                                           f"{', '.join(_ACTIONS)}")
    return changes


class LakeformatAlterTableOperator(LakeformatBaseOperator):
    """Apply schema changes as one new schema version (Paimon's rules; nothing changes when one
    is refused). `changes`: `lakeformat.SchemaChange` objects or dict specs (`schema_change`)."""

    arguments = {"changes": to_changes}
    template_fields: Sequence[str] = ("table", *arguments)

    def __init__(self, *, table: str, changes: Sequence[Any], **kwargs: Any):
        super().__init__(table=table, **kwargs)
        self.changes = changes
        self.convert_arguments(rendered=False)

    def run(self, table: Table, context: Any) -> Any:
        before = table.table_schema.id
        schema = table.alter([schema_change(c) for c in self.changes])
        return _AlterResult(table.name, before, schema.id,
                            [f.name for f in schema.fields], dict(schema.options))


class _AlterResult:
    def __init__(self, table: str, before: int, after: int, columns: list[str],
                 options: dict[str, str]):
        self.table, self.before, self.after = table, before, after
        self.columns, self.options = columns, options

    def to_dict(self) -> dict[str, Any]:
        return {"table": self.table, "schema_id_before": self.before,
                "schema_id": self.after, "columns": self.columns, "options": self.options}

    def __str__(self) -> str:
        if self.after == self.before:
            return f"{self.table}: schema {self.after} unchanged"
        return (f"{self.table}: schema {self.before} -> {self.after}, columns "
                f"{', '.join(self.columns)}")
