"""Versioned schema files of a table: `schema/schema-<id>`, published with write-if-absent."""

from __future__ import annotations

from collections.abc import Callable

from lakeformat.errors import (
    CommitFailedError,
    InvalidArgumentError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from lakeformat.layout import SCHEMA_PREFIX, TablePaths, numbered_id
from lakeformat.schema.table_schema import TableSchema
from lakeformat.storage import FileIO, FileStatus


class SchemaManager:
    def __init__(self, file_io: FileIO, table_path: str):
        self.file_io = file_io
        self.table_path = table_path
        self.paths = TablePaths(file_io, table_path)
        self.schema_dir = self.paths.schema_dir
        self._cache: dict[int, TableSchema] = {}

    def schema_path(self, schema_id: int) -> str:
        return self.paths.schema(schema_id)

    def schema_ids(self) -> list[int]:
        return sorted(self._statuses())

    def _statuses(self) -> dict[int, FileStatus]:
        """The schema files a listing shows, by id."""
        out = {}
        for st in self.file_io.list_status(self.schema_dir):
            sid = numbered_id(st.path.rsplit("/", 1)[-1], SCHEMA_PREFIX)
            if sid is not None:
                out[sid] = st
        return out

    def schema(self, schema_id: int) -> TableSchema:
        """Schema files are immutable, so a read one is cached for the manager's life."""
        cached = self._cache.get(schema_id)
        if cached is not None:
            return cached
        path = self.schema_path(schema_id)
        try:
            data = self.file_io.read_bytes(path)
        except FileNotFoundError:
            raise FileNotFoundError(f"schema {schema_id} does not exist ({path})") from None
        schema = TableSchema.from_json(data, path)
        self._cache[schema_id] = schema
        return schema

    def latest(self) -> TableSchema | None:
        """The latest schema: one listing, and the file read only when the catalog's metadata
        cache does not hold it under the version the listing shows (`schema-N` is written again
        when a table is dropped and created anew, so only the listing can vouch for it)."""
        statuses = self._statuses()
        if not statuses:
            return None
        sid = max(statuses)
        st = statuses[sid]
        if not st.version:  # the store tells no version: no cache across managers
            return self.schema(sid)
        validator = (st.size, st.mtime, st.version)
        cache = self.file_io.metadata_cache
        key = (self.schema_path(sid), "schema")
        schema = cache.get(key, validator)
        if schema is None:
            path = self.schema_path(sid)
            try:
                data = self.file_io.read_bytes(path)
            except FileNotFoundError:
                raise FileNotFoundError(f"schema {sid} does not exist ({path})") from None
            schema = TableSchema.from_json(data, path)
            if len(data) == st.size:  # what was read is what the listing saw (by size at least)
                cache.put(key, schema, len(data) * 8, validator)
        self._cache[sid] = schema
        return schema

    def list_all(self) -> list[TableSchema]:
        return [self.schema(i) for i in self.schema_ids()]

    def commit(self, schema: TableSchema) -> bool:
        """Publish `schema-<id>` if no one else took the id; False when it was taken."""
        ok = self.file_io.write_if_absent(self.schema_path(schema.id), schema.to_json().encode())
        if ok:
            self._cache[schema.id] = schema
        return ok

    def commit_next(self, make_next: Callable[[TableSchema], TableSchema],
                    max_attempts: int = 100) -> TableSchema:
        """Publish `make_next(latest)` as the next schema id, recomputing it from the new latest
        schema whenever another writer took the id first (Paimon's commitChanges loop).

        `make_next` returns the latest schema itself when there is nothing to change; it may
        raise to refuse the change, and then nothing is written.
        """
        for _ in range(max_attempts):
            latest = self.latest()
            if latest is None:
                raise TableNotFoundError(f"{self.table_path} holds no schema file: the table "
                                         "does not exist (dropped?)")
            nxt = make_next(latest)
            if nxt is latest:
                return latest
            if nxt.id != latest.id + 1:
                raise InvalidArgumentError(f"schema change must produce id {latest.id + 1}")
            if self.commit(nxt):
                return nxt
        raise CommitFailedError(f"{self.table_path}: gave up committing a schema change after "
                                f"{max_attempts} attempts; other writers kept changing the schema")

    def create(self, schema: TableSchema) -> TableSchema:
        """Publish a new table's schema 0; `TableAlreadyExistsError` when another job published
        one first (two creators racing: exactly one of them wins the write-if-absent)."""
        if schema.id != 0:
            raise InvalidArgumentError("a new table starts at schema 0")
        if not self.commit(schema):
            raise TableAlreadyExistsError(
                f"{self.table_path} already holds a table: its schema 0 "
                f"({self.schema_path(0)}) was written by another job")
        return schema

