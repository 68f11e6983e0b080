"""`Table.delete(where=...)`: delete the rows a read filter selects.

Two ways, chosen from the columns the predicate names:

* only **partition columns** — the partitions whose values match are dropped whole by one
  OVERWRITE commit that deletes every file live in them (a `DropPartitionsJob`: what Paimon's
  `DELETE FROM t WHERE dt = ...` on partition columns and `ALTER TABLE ... DROP PARTITION` do;
  partition expiry drops partitions with the same job). Nothing is read but the manifests, and
  any merge engine takes it.
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

`DeleteWhere` is a `DataJob` (operation "delete") whose plan picks the way and makes the job
that does the work; the snapshot it commits records "delete" as its operation (with a commit
identifier), as `delete(keys)` does.

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
from lakeformat.meta.data_file_meta import ManifestEntry
from lakeformat.meta.partition import partition_path
from lakeformat.meta.snapshot import Snapshot
from lakeformat.operation.commit import CommitMessage, DataJob, DropPartitionsJob
from lakeformat.operation.compact import compact_after_write
from lakeformat.operation.read import TableRead
from lakeformat.operation.runner import Runner
from lakeformat.operation.scan import FileStoreScan
from lakeformat.operation.write.job import WriteJob, commit_result, delete_rows
from lakeformat.operation.write.table_write import WriteUnit
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


class DeleteWhere(DataJob[WriteUnit | bytes, CommitMessage | bytes, CommitResult]):
    """One delete by predicate (see the module docstring), operation "delete".

    Its plan picks the way and makes the job that does the work: a `DropPartitionsJob` (the
    partitions the predicate selects) or, for rows, a `WriteJob` of the -D records of the
    matching keys; `execute` and `commit` are that job's, and `commit` then compacts a lookup
    table. The commit identity, "already landed" (over a write's commit kinds, with the
    operation property "delete") and `run()` are the base's.

    Of the `DataJob` base it overrides `plan`, `execute`, `commit` and `abort` (the files of
    the rows' write job, if any), and `operation`.
    """

    operation = OPERATION

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema,
                 schema_manager: SchemaManager, where: Filter, *, table_name: str,
                 commit_user: str | None = None, commit_identifier: int | None = None,
                 runner: Runner | None = None, memory_budget: int | None = None):
        check_filter(where, schema.fields, table_name)
        if where is None or (not isinstance(where, pc.Expression) and (
                not dnf_terms(where) or not all(dnf_terms(where)))):
            raise InvalidFilterError(f"delete from {table_name}: `where` is empty; it "
                                     "would delete every row (overwrite the table instead)")
        super().__init__(file_io, table_path, schema, table_name, commit_user=commit_user,
                         commit_identifier=commit_identifier, runner=runner)
        self.schema_manager = schema_manager
        self.where = where
        self.memory_budget = memory_budget
        self.open_committer(properties=self.operation_properties())
        #: the job doing the work, made by `plan`: whole partitions, or the rows' -D records
        self.drop: DropPartitionsJob | None = None
        self.write: WriteJob | None = None
        #: (path text, partition row) of the partitions the predicate selected
        self.matched: list[tuple[str, bytes]] = []
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
        field, if any, is set to -D by `delete_rows`. With `changelog-producer=input` the -D
        records are the changelog too: they carry the whole row, as Java's DELETE writes the
        rows it read."""
        options = CoreOptions(self.schema.options)
        rowkind = options.rowkind_field
        if options.changelog_producer == "input":
            return [f.name for f in self.schema.fields if f.name != rowkind]
        sequence = MergeContext.of(self.schema).sequence_fields
        return [f.name for f in self.schema.fields if f.name != rowkind and (
            f.name in self.schema.primary_keys or not f.type.nullable or f.name in sequence)]

    # -- the three steps -------------------------------------------------------------------------
    def plan(self) -> list[WriteUnit | bytes]:
        """The partitions to drop when the predicate reads partition columns only, else the
        units of the write of the matching rows' -D records (the rows are read here). Plans
        nothing when this delete already landed (then `commit` reports it): the rows it
        deleted are gone, so the predicate would now match nothing."""
        self._start = time.monotonic()
        self.drop = self.write = None
        if partition_only(self.where, self.schema):
            self.drop = DropPartitionsJob(
                self.file_io, self.table_path, self.schema, self._select_partitions,
                self.table_name, operation=OPERATION, commit_user=self.commit_user,
                commit_identifier=self.commit_identifier)
            units = self.drop.plan()  # finds this delete's earlier commit, if any
            self.landed = self.drop.landed
            return list(units)
        if self.find_landed() is not None:
            return []
        self._check_engine_removes_rows()
        keys = self._matching_keys()
        if not keys.num_rows:
            return []
        self.write = self._job(keys)
        return list(self.write.plan())

    def execute(self, units: Sequence[WriteUnit | bytes] | None = None,
                runner: Runner | None = None) -> list[CommitMessage | bytes]:
        """The rows' -D files (the partitions to drop have nothing to write)."""
        if self.write is not None:
            return list(self.write.execute(units, runner))  # type: ignore[arg-type]
        if self.drop is not None:
            return list(self.drop.execute(units, runner))  # type: ignore[arg-type]
        return []

    def commit(self, messages: Sequence[CommitMessage | bytes] | None = None) -> CommitResult:
        """The delete's one snapshot (OVERWRITE of the dropped partitions, or APPEND of the
        -D records), then (a lookup table) the compaction of every partition."""
        result = self._commit(messages)
        return compact_after_write(self.file_io, self.table_path, self.schema, self.table_name,
                                   result, None, stacklevel=4)

    def _commit(self, messages: Sequence[CommitMessage | bytes] | None) -> CommitResult:
        if self.landed is not None:  # a re-run: report the earlier commit
            return self._landed_result(self.landed)
        if self.drop is not None:
            snap = self.drop.commit(messages)  # type: ignore[arg-type]
            if self.drop.landed is not None:  # another run of this delete landed first
                return self._landed_result(self.drop.landed)
            if snap is None:  # nothing matched, or another job emptied them first
                return self._result(None, [])
            return self._result(snap, self.drop.committer.committed_entries,
                                partitions=[spec for spec, _ in self.matched])
        if self.write is None:  # no row matched
            return self._result(None, [])
        result = self.write.commit(messages)  # type: ignore[arg-type]
        rows = self.write.data.num_rows
        return dataclasses.replace(result, rows_deleted=rows if result.snapshot_id is not None
                                   else 0)

    def abort(self) -> None:
        """Remove the -D files written (a partition drop wrote none)."""
        if self.write is not None:
            self.write.abort()

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

    def _matching_keys(self) -> pa.Table:
        """The columns a -D record carries of every row the predicate matches in the latest
        snapshot, read with merge-on-read within the memory budget."""
        latest = self.committer.snapshots.latest_snapshot()
        reader = TableRead(self.file_io, self.table_path, self.schema, self.schema_manager,
                           self.memory_budget)
        stream = reader.read_batches(latest, self._key_columns(), self.where)
        return pa.Table.from_batches(list(stream), schema=stream.schema)

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

    def _select_partitions(self, latest: Snapshot | None) -> list[bytes]:
        """`DropPartitionsJob`'s selector: the partitions the predicate matches."""
        self.matched = self._matching_partitions(latest)
        return [raw for _, raw in self.matched]

    def _landed_result(self, snap: Snapshot) -> CommitResult:
        self.landed = snap
        return self._result(snap, self.committer.delta_entries(snap), already=True)

    def _result(self, snap: Snapshot | None, entries: Sequence[ManifestEntry],
                already: bool = False, partitions: Sequence[str] = ()) -> CommitResult:
        return commit_result(self.table_name, snap, entries, started=self._start,
                             rows_written=0, commit_user=self.commit_user,
                             commit_identifier=self.commit_identifier, already=already,
                             partitions_dropped=partitions)
