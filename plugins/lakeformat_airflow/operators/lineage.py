"""OpenLineage datasets of the operators: the tables a task read and wrote.

`TableLineageMixin` gives an operator the two methods the OpenLineage provider
(`apache-airflow-providers-openlineage`) looks for on an operator. A dataset is a table:
namespace the warehouse URI (credentials, query and fragment left out; a plain path as
`file://` + the path), name `db.table`, and a `schema` facet of the table's columns (Paimon
type text, nested ROW fields included) as the task read them.

During `execute` an operator only keeps a reference to the schema it read anyway
(`record_lineage`): no OpenLineage import, no conversion, no extra read. The provider calls the
methods after the task — the completion one does no I/O — and only when it is installed and
configured, so without it nothing is imported or paid. `lineage_role` says which side the
tables are on: `read-write` (writes, compaction, maintenance: the table is input and output),
`read` (what is due, table listings: inputs only), `write` (table creation: output only).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar
from urllib.parse import urlsplit, urlunsplit

__all__ = ["TableLineageMixin", "columns", "namespace"]

ROLES = ("read", "write", "read-write")


def namespace(warehouse: str) -> str:
    """The OpenLineage namespace of a warehouse URI: scheme, host and path only — no user,
    password, query or fragment; a plain path becomes `file://<absolute path>`."""
    text = str(warehouse).strip()
    parts = urlsplit(text)
    if len(parts.scheme) <= 1:  # a plain path (or a Windows drive letter)
        return "file://" + os.path.abspath(text).rstrip("/")
    host = parts.netloc.rpartition("@")[2]
    path = parts.path.rstrip("/") if parts.path not in ("", "/") else ""
    return urlunsplit((parts.scheme.lower(), host, path, "", ""))


def columns(fields: Iterable[Any]) -> list[tuple[str, str, str | None, list[Any]]]:
    """(name, type text, description, nested columns) of Paimon `DataField`s; a ROW type's
    fields are its nested columns."""
    out = []
    for f in fields:
        nested = getattr(f.type, "fields", None) or ()
        out.append((f.name, str(f.type), getattr(f, "description", None), columns(nested)))
    return out


class TableLineageMixin:
    """The OpenLineage provider's operator methods, for the tables an operator touched."""

    #: which side of the task the tables are on (see the module docstring)
    lineage_role: ClassVar[str] = "read-write"
    #: (warehouse URI, [(db.table, TableSchema or None)]) once `execute` read the tables
    _lineage_tables: tuple[str, list[tuple[str, Any]]] | None = None

    def record_lineage(self, warehouse: str, tables: Iterable[tuple[str, Any]]) -> None:
        """Keep the tables this run touched: `(name, schema)` pairs, the schema a
        `TableSchema` (`Table.table_schema`, as read) or None when it was not read. Costs an
        attribute: the datasets are built only when the provider asks."""
        self._lineage_tables = (warehouse, list(tables))

    def lineage_start_tables(self) -> tuple[str, list[tuple[str, Any]]] | None:
        """The tables known before `execute` (no schema): none by default."""
        return None

    # -- the provider's methods ----------------------------------------------------------------
    def get_openlineage_facets_on_start(self) -> Any:
        """The datasets known before the run: the table the operator names, without schema."""
        return self._operator_lineage(self._start_tables())

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """The datasets the run touched, with the schemas read during `execute` (no I/O); a
        run that failed before reading its table reports what the start did."""
        recorded = self._lineage_tables
        return self._operator_lineage(recorded if recorded is not None
                                      else self._start_tables())

    def _start_tables(self) -> tuple[str, list[tuple[str, Any]]] | None:
        try:
            return self.lineage_start_tables()
        except Exception:  # noqa: BLE001 - no connection yet: no datasets, never a failure
            return None

    def _operator_lineage(self, tables: tuple[str, Sequence[tuple[str, Any]]] | None) -> Any:
        try:
            from airflow.providers.openlineage.extractors import OperatorLineage
        except ImportError:  # the provider is not installed: nobody asks
            return None
        if not tables:
            return OperatorLineage()
        warehouse, named = tables
        datasets = [_dataset(namespace(warehouse), name, schema) for name, schema in named]
        role = self.lineage_role
        return OperatorLineage(inputs=datasets if role in ("read", "read-write") else [],
                               outputs=list(datasets) if role in ("write", "read-write")
                               else [])


def _dataset(space: str, name: str, schema: Any) -> Any:
    from airflow.providers.common.compat.openlineage.facet import Dataset

    facets = {} if schema is None else {"schema": _schema_facet(schema)}
    return Dataset(namespace=space, name=name, facets=facets)


def _schema_facet(schema: Any) -> Any:
    from airflow.providers.common.compat.openlineage.facet import (
        SchemaDatasetFacet,
        SchemaDatasetFacetFields,
    )

    def field(column: tuple[str, str, str | None, list[Any]]) -> Any:
        name, type_text, description, nested = column
        return SchemaDatasetFacetFields(name=name, type=type_text, description=description,
                                        fields=[field(c) for c in nested])

    return SchemaDatasetFacet(fields=[field(c) for c in columns(schema.fields)])
