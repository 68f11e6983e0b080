"""`Table.delete(where=...)`: delete the rows a read filter selects.

Two ways, chosen from the columns the predicate names:

* only **partition columns** — the partitions whose values match are dropped whole by one
  OVERWRITE commit that deletes every file live in them (what Paimon's `DELETE FROM t WHERE
  dt = ...` on partition columns and `ALTER TABLE ... DROP PARTITION` do; partition expiry
  drops partitions the same way). Nothing is read but the manifests, and any merge engine
  takes it.
* any other column — the matching rows are read with merge-on-read (`read_batches`, within the
  memory budget) and their primary keys written as -D records, as `delete(keys)` writes them:
  one APPEND commit. Refused before anything is read when the merge engine would keep the
  rows: first-row, `ignore-delete`, partial-update without `partial-update.remove-record-on-
  delete`, aggregation without `aggregation.remove-record-on-delete` (Paimon's rule for a
  DELETE by primary-key upsert).

Memory of the second way: the read streams bucket by bucket within `memory_budget`; what is
kept are only the matching rows' primary-key columns (and NOT NULL and `sequence.field`
columns, which a -D record carries), gathered into one table and written by one `WriteJob` —
so one commit, one snapshot, as `delete(keys)` with those keys would make. A delete of N keys
holds N keys.

The predicate is checked against the table's columns first (an unknown column is an
`InvalidFilterError` naming it, before anything is read or written). With a commit user and
identifier, a delete whose commit already landed is reported, not repeated — the rows it
deleted are gone, so the predicate would now match nothing.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.errors import InvalidFilterError, SchemaMismatchError
from lakeformat.expressions import Filter, check_filter, dnf_terms, to_expression
from lakeformat.merge.context import MergeContext
from lakeformat.merge.partial_update_options import REMOVE_ON_DELETE, REMOVE_ON_SEQUENCE_GROUP
from lakeformat.meta.binary_row import from_avro_bytes
from lakeformat.meta.data_file_meta import FileKind
from lakeformat.meta.partition import partition_path
from lakeformat.meta.snapshot import Snapshot, SnapshotManager
from lakeformat.operation.commit import NOT_WATCHED, AlreadyCommitted
from lakeformat.operation.compact import compact_after_write
from lakeformat.operation.read import TableRead
from lakeformat.operation.runner import Runner
from lakeformat.operation.scan import FileStoreScan
from lakeformat.operation.write.job import WriteJob, delete_rows
from lakeformat.options import CoreOptions, parse_bool
from lakeformat.results import CommitResult
from lakeformat.schema.schema_manager import SchemaManager
from lakeformat.schema.table_schema import TableSchema
from lakeformat.schema.types import arrow_schema
from lakeformat.storage import FileIO

OPERATION = "delete"
AGG_REMOVE_ON_DELETE = "aggregation.remove-record-on-delete"


def partition_only(where: Filter, schema: TableSchema) -> bool:
    """Whether the predicate reads partition columns only (so it selects whole partitions).
    An Expression is bound to an empty table of the partition columns: pyarrow refuses it
    when it names any other column."""
    if not schema.partition_keys:
        return False
    if isinstance(where, pc.Expression):
        empty = arrow_schema(schema.partition_fields(), with_id=False).empty_table()
        try:
            empty.filter(where)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return False
        return True
    return all(col in schema.partition_keys for conj in dnf_terms(where) for col, _, _ in conj)


class DeleteWhere:
    """One delete by predicate (see the module docstring)."""

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema,
                 schema_manager: SchemaManager, where: Filter, *, table_name: str,
                 commit_user: str | None = None, commit_identifier: int | None = None,
                 runner: Runner | None = None, memory_budget: int | None = None):
        self.file_io = file_io
        self.table_path = table_path
        self.schema = schema
        self.schema_manager = schema_manager
        self.where = where
        self.table_name = table_name
        self.commit_user = commit_user
        self.commit_identifier = commit_identifier
        self.runner = runner
        self.memory_budget = memory_budget
        self._start = time.monotonic()

    def _job(self, keys: pa.Table) -> WriteJob:
        rows, kinds = delete_rows(self.schema, keys)
        return WriteJob(self.file_io, self.table_path, self.schema, rows, kinds, False,
                        self.commit_user, self.commit_identifier, runner=self.runner,
                        table_name=self.table_name, operation=OPERATION, compact_lookup=False)

    def _key_columns(self) -> list[str]:
        """What a -D record carries from the row: the primary key, NOT NULL columns, and the
        `sequence.field` columns — so the retract orders with the row it deletes and wins by
        its later sequence number (a null there could order before the row). The row-kind
        field, if any, is set to -D by `delete_rows`."""
        rowkind = CoreOptions(self.schema.options).rowkind_field
        sequence = MergeContext.of(self.schema).sequence_fields
        return [f.name for f in self.schema.fields if f.name != rowkind and (
            f.name in self.schema.primary_keys or not f.type.nullable or f.name in sequence)]

    def run(self) -> CommitResult:
        """The delete, then (a lookup table) the compaction of every partition."""
        return compact_after_write(self.file_io, self.table_path, self.schema, self.table_name,
                                   self._delete(), None, stacklevel=3)

    def _delete(self) -> CommitResult:
        self._start = time.monotonic()
        check_filter(self.where, self.schema.fields, self.table_name)
        if self.where is None or (not isinstance(self.where, pc.Expression) and (
                not dnf_terms(self.where) or not all(dnf_terms(self.where)))):
            raise InvalidFilterError(f"delete from {self.table_name}: `where` is empty; it "
                                     "would delete every row (overwrite the table instead)")
        names = self._key_columns()
        probe = self._job(self._empty(names))
        if probe.find_landed() is not None:  # a re-run: report the earlier commit
            return probe.commit()
        if partition_only(self.where, self.schema):
            return self._drop_partitions(probe)
        return self._retract_rows(probe, names)

    def _empty(self, names: Sequence[str]) -> pa.Table:
        return arrow_schema(self.schema.fields_of(list(names)), with_id=False).empty_table()

    # -- rows ------------------------------------------------------------------------------------
    def _check_engine_removes_rows(self) -> None:
        """Refuse, before anything is read, a table whose merge engine would keep the rows a
        -D record targets (Paimon's `validatePKUpsertDeletable`, plus `ignore-delete`, which
        drops the records silently): the delete would report rows deleted that stay."""
        options = self.schema.options
        core = CoreOptions(options)
        engine = core.merge_engine
        why = None
        if not self.schema.primary_keys:
            why = "an append table has no primary key to retract rows by"
        elif core.ignore_delete:
            why = "'ignore-delete' is true, so -D records are dropped"
        elif engine == "partial-update" and not parse_bool(options, REMOVE_ON_DELETE):
            why = (f"merge engine partial-update removes a row only with '{REMOVE_ON_DELETE}' "
                   "= true (lakeformat's delete by predicate does not carry sequence-group "
                   f"values, so '{REMOVE_ON_SEQUENCE_GROUP}' is not enough)")
        elif engine == "aggregation" and not parse_bool(options, AGG_REMOVE_ON_DELETE):
            why = (f"merge engine aggregation removes a row only with '{AGG_REMOVE_ON_DELETE}'"
                   " = true")
        elif engine not in ("deduplicate", "partial-update", "aggregation"):
            why = f"merge engine {engine} cannot delete rows"
        if why is not None:
            raise SchemaMismatchError(
                f"delete from {self.table_name} by a predicate on non-partition columns is "
                f"refused: {why}. A predicate on partition columns only drops whole "
                "partitions with any merge engine.")

    def _retract_rows(self, probe: WriteJob, names: list[str]) -> CommitResult:
        self._check_engine_removes_rows()
        latest = SnapshotManager(self.file_io, self.table_path).latest_snapshot()
        reader = TableRead(self.file_io, self.table_path, self.schema, self.schema_manager,
                           self.memory_budget)
        stream = reader.read_batches(latest, names, self.where)
        keys = pa.Table.from_batches(list(stream), schema=stream.schema)
        if not keys.num_rows:
            return self._result(probe, None, [], 0, 0)
        result = self._job(keys).run()
        return dataclasses.replace(result, rows_deleted=keys.num_rows if result.snapshot_id
                                   is not None else 0)

    # -- partitions ------------------------------------------------------------------------------
    def _matching_partitions(self, latest: Snapshot | None) -> list[tuple[str, bytes]]:
        """(path text, partition row) of every partition live in `latest` the predicate
        selects, by evaluating it over a table of the partitions' values (one row each)."""
        fields = self.schema.partition_fields()
        types = [f.type for f in fields]
        live = sorted({e.partition for e in FileStoreScan(
            self.file_io, self.table_path, self.schema).live_entries(latest)})
        if not live:
            return []
        values = [from_avro_bytes(p, types) for p in live]
        typed = arrow_schema(fields, with_id=False)
        table = pa.table([pa.array([v[i] for v in values], f.type) for i, f in enumerate(typed)],
                         schema=typed).append_column("__row", pa.array(range(len(live))))
        expression = to_expression(self.where)
        hits = table.filter(expression)["__row"].to_pylist()
        default = CoreOptions(self.schema.options).partition_default_name
        return sorted((partition_path(values[i], fields, default, False), live[i])
                      for i in hits)

    def _drop_partitions(self, probe: WriteJob) -> CommitResult:
        committer = probe.committer  # the job's: same user, identifier and properties
        latest = committer.snapshots.latest_snapshot()
        matched = self._matching_partitions(latest)
        if not matched:
            return self._result(probe, None, [], 0, 0)
        watch = NOT_WATCHED if self.commit_identifier is None else (latest.id if latest
                                                                     else None)
        try:
            snap = committer.commit([], overwrite_partitions=[raw for _, raw in matched],
                                    other_runs_after=watch)
        except AlreadyCommitted as twin:  # another run of this delete landed first
            probe.landed = twin.snapshot
            return probe.commit()
        if snap is None:  # another job emptied them first
            return self._result(probe, None, [], 0, 0)
        dropped = [e for e in committer.committed_entries if e.kind == FileKind.DELETE]
        return self._result(probe, snap, [spec for spec, _ in matched], len(dropped),
                            len(committer.committed_entries) - len(dropped))

    def _result(self, probe: WriteJob, snap: Snapshot | None, partitions: list[str],
                deleted: int, added: int) -> CommitResult:
        return CommitResult(
            table=self.table_name, snapshot_id=snap.id if snap else None,
            commit_kind=snap.commit_kind if snap else None, rows_written=0,
            files_added=added, files_deleted=deleted, bytes_added=0,
            duration_s=round(time.monotonic() - self._start, 3), commit_user=probe.commit_user,
            commit_identifier=self.commit_identifier, partitions_dropped=tuple(partitions))

