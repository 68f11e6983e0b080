"""Merging sorted runs in key-range slices, within a memory budget.

A section (key-disjoint group of sorted runs, see `levels.interval_partition`) is read
run by run in pieces. Each round reads a piece from every run whose rows are all used up, takes
the smallest "last key read" among runs that still have rows on storage as the bound, and merges
every buffered row whose key is <= that bound (complete key groups: no run can hold that key
further on). Rows past the bound wait for the next round. So at most about one piece per run is
held, whatever the size of the bucket, and each slice is merged with whole-column operations.

With `changelog=True` (changelog-producer=full-compaction) each slice also yields the changes
between the rows previously at the top level and the merged rows, as Java's
`FullChangelogMergeFunctionWrapper` computes them: +I for a new key, -U/+U for a changed key,
-D for a key that is gone.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.data.file_read import ROW_POSITION, iter_data_file
from lakeformat.errors import CorruptFileError
from lakeformat.merge import merge_engine
from lakeformat.merge.context import MergeContext
from lakeformat.merge.sort import (
    DELETE,
    INSERT,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    KeyGroups,
    is_retract,
    key_column,
    merge_order,
    merge_permutation,
)
from lakeformat.mergetree import lookup as lookup_merge
from lakeformat.mergetree.levels import may_tie, tie_ranks
from lakeformat.mergetree.lookup import LOOKUP_FILE
from lakeformat.mergetree.record_expire import RecordLevelExpire
from lakeformat.meta.data_file_meta import DataFileMeta
from lakeformat.schema.schema_manager import SchemaManager
from lakeformat.schema.table_schema import SEQUENCE_NUMBER, VALUE_KIND, TableSchema
from lakeformat.storage import FileIO

#: Arrow copies a slice goes through (pieces, concatenation, merge-ordered copy, merged rows,
#: writer buffer): the budget is split by this factor and by the number of runs.
BUDGET_COPIES = 6
MIN_PIECE_BYTES = 16 << 10
#: per row, the tie rank of its file (`levels.tie_ranks`); never written
FILE_RANK = "_FILE_RANK"
#: per row, the level of its file; never written. A sorted run of a section may chain files
#: of several levels (`interval_partition` packs by key range), so a record's level is its
#: file's, never its run's [JAVA KeyValue.level]
FILE_LEVEL = "_FILE_LEVEL"
#: per row of a lookup run, whether record-level expiry drops it; never written
EXPIRED = "_EXPIRED"


@dataclass(frozen=True)
class MergedSlice:
    rows: pa.Table  # merged rows in key order (retracts dropped when asked)
    changelog: pa.Table | None
    #: rows of lookup runs the merged rows replace: data file name -> positions in it
    replaced: dict[str, np.ndarray] | None = None


@dataclass(frozen=True)
class _SectionRuns:
    """What a slice needs to know of the runs of its section."""

    lookup: np.ndarray  # per run, whether it is a lookup run (above the output)
    lookup_files: list[str]  # file names of the lookup runs, by `LOOKUP_FILE` index
    lookup_changelog: bool
    dedup: Sequence[str] | None


class _RunReader:
    """Pieces of one sorted run (its files in key order). `done` once every file is read to
    its end; a file holding another number of rows than its metadata says is corrupt (never
    trust the metadata to tell where a run ends: rows past it would be dropped silently)."""

    def __init__(self, files: Sequence[DataFileMeta], open_file, piece_bytes: int,
                 ranks: dict[str, int] | None, file_ids: dict[str, int] | None = None,
                 levels: bool = False, expire: RecordLevelExpire | None = None,
                 mark: RecordLevelExpire | None = None, tagged: bool = False):
        self.files = list(files)
        self._expire = expire  # drops the expired rows (record-level expiry)
        self._mark = mark  # tags the expired rows instead (`EXPIRED`)
        self._tagged = tagged  # every run of the section carries `EXPIRED`
        self._ranks = ranks
        self._file_ids = file_ids
        self._levels = levels  # tag each row with its file's level (`FILE_LEVEL`)
        self.done = not self.files
        self._open = open_file
        self._piece_bytes = piece_bytes
        self._iter: Iterator[pa.Table] | None = None
        self._next_file = 0
        self._current: DataFileMeta | None = None
        self._rows = 0
        self.piece_rows = 0  # rows of the last piece read

    def short(self, pending: pa.Table) -> bool:
        """Whether `pending`, what is left of this run's last piece, is a short tail (under
        half of that piece) that more rows should join before the next slice."""
        return not self.done and 0 < pending.num_rows < self.piece_rows // 2

    def read(self) -> pa.Table | None:
        while True:
            if self._iter is None:
                if self._next_file >= len(self.files):
                    self.done = True
                    return None
                self._current = self.files[self._next_file]
                self._iter = self._open(self._current, self._piece_bytes)
                self._next_file += 1
                self._rows = 0
            piece = next(self._iter, None)
            if piece is None:
                meta = self._current
                if meta is not None and self._rows != meta.row_count and not getattr(
                        self._open, "counts_rows", False):
                    raise CorruptFileError(f"data file {meta.file_name} holds {self._rows} rows "
                                           f"but its manifest entry says {meta.row_count}")
                self._iter = None
                continue
            if piece.num_rows:
                self._rows += piece.num_rows
                self.piece_rows = piece.num_rows
                name = self._current.file_name  # type: ignore[union-attr]
                if self._levels:
                    piece = piece.append_column(FILE_LEVEL, pa.array(np.full(
                        piece.num_rows, self._current.level, dtype=np.int64)))  # type: ignore[union-attr]
                if self._file_ids is not None:
                    piece = piece.append_column(LOOKUP_FILE, pa.array(
                        np.full(piece.num_rows, self._file_ids.get(name, -1), dtype=np.int64)))
                if self._ranks is not None:
                    piece = piece.append_column(FILE_RANK, pa.array(
                        np.full(piece.num_rows, self._ranks[name], dtype=np.int64)))
                if self._expire is not None:
                    keep = self._expire.keep(piece)
                    if keep is not None:
                        piece = piece.filter(pa.array(keep))
                        if not piece.num_rows:
                            continue
                if self._tagged:
                    keep = self._mark.keep(piece) if self._mark is not None else None
                    piece = piece.append_column(EXPIRED, pa.array(
                        np.zeros(piece.num_rows, dtype=bool) if keep is None else ~keep))
                return piece


class MergeTreeReader:
    """Merges the sorted runs of sections of one bucket, slice by slice."""

    def __init__(self, file_io: FileIO, schema: TableSchema, schema_manager: SchemaManager,
                 path_of, default_format: str, memory_budget: int,
                 columns: Sequence[str] | None = None, deleted_of=None, lookup: bool = False,
                 expire: RecordLevelExpire | None = None, mark_expired: bool = False):
        """`columns`: the table columns to read and merge (every column by default; a read
        passes its merge engine's `required_columns` of what it returns). `deleted_of`: data
        file name -> its deletion vector's positions (None: no deletion vectors). `lookup`: the
        table merges as a lookup table does (`mergetree.lookup`; first-row by its own rule).
        `expire`: record-level expiry of a compaction: expired rows are not read (nor are they
        in lookup runs, as Java's lookup reads through the expiry; first-row's are read whole:
        it looks up keys only). `mark_expired` (a deletion-vector table): a lookup run's
        expired rows are tagged instead (`mergetree.lookup.select` marks them deleted)."""
        self.lookup = lookup
        self.expire = expire
        self.mark_expired = mark_expired and expire is not None
        self.deleted_of = deleted_of
        if deleted_of is not None:  # rows are counted by the file read, before deletions
            self._open = self._open_with_deletions  # type: ignore[method-assign]
        self.file_io = file_io
        self.schema = schema
        self.schema_manager = schema_manager
        self.path_of = path_of
        self.default_format = default_format
        self.memory_budget = memory_budget
        self.ctx = MergeContext.of(schema)
        self.engine = engine = merge_engine(schema)
        self.merge = engine.merge_sorted
        self.first_row = lookup and engine.name == "first-row"
        self.columns = list(columns) if columns is not None else schema.field_names
        self.names = [SEQUENCE_NUMBER, VALUE_KIND, *self.columns]

    def _open(self, meta: DataFileMeta, piece_bytes: int) -> Iterator[pa.Table]:
        return iter_data_file(self.file_io, self.path_of(meta), meta, self.schema,
                              self.schema_manager, self.columns, self.default_format,
                              batch_bytes=piece_bytes)

    def _open_with_deletions(self, meta: DataFileMeta, piece_bytes: int) -> Iterator[pa.Table]:
        return iter_data_file(self.file_io, self.path_of(meta), meta, self.schema,
                              self.schema_manager, self.columns, self.default_format,
                              batch_bytes=piece_bytes, deleted=self.deleted_of(meta.file_name))

    _open_with_deletions.counts_rows = True  # type: ignore[attr-defined]

    def _open_positioned(self, meta: DataFileMeta, piece_bytes: int) -> Iterator[pa.Table]:
        return iter_data_file(self.file_io, self.path_of(meta), meta, self.schema,
                              self.schema_manager, self.columns, self.default_format,
                              batch_bytes=piece_bytes, positions=True,
                              deleted=self.deleted_of(meta.file_name) if self.deleted_of
                              else None)

    _open_positioned.counts_rows = True  # type: ignore[attr-defined]

    def merge_section(self, runs: Sequence[Sequence[DataFileMeta]], drop_delete: bool,
                      changelog_level: int | None = None,
                      lookup_runs: Sequence[Sequence[DataFileMeta]] = (),
                      lookup_changelog: bool = False, dedup: Sequence[str] | None = None
                      ) -> Iterator[MergedSlice]:
        """Merged slices of one section. `changelog_level`: the top level whose rows are the
        previous full-compaction result (None = no changelog). `lookup_runs`: runs above the
        output a lookup compaction looks keys up in; `lookup_changelog`: produce the lookup
        changelog (`dedup`: the columns row-deduplicate compares, None when off)."""
        if len(runs) == 1 and changelog_level is None and not lookup_runs \
                and not lookup_changelog:
            yield from self._single_run(runs[0], drop_delete)
            return
        own = len(runs)
        runs = [*runs, *lookup_runs]
        piece_bytes = max(MIN_PIECE_BYTES,
                          self.memory_budget // (BUDGET_COPIES * max(1, len(runs))))
        files = [f for r in runs for f in r]
        ranks = (dict(zip((f.file_name for f in files), tie_ranks(files).tolist()))
                 if may_tie(files) else None)
        lookup_files = [f.file_name for r in lookup_runs for f in r]
        file_ids = {n: i for i, n in enumerate(lookup_files)} if lookup_runs else None
        opener = self._open_positioned if lookup_runs else self._open
        levels = self.lookup or changelog_level is not None
        tagged = self.mark_expired and bool(lookup_runs) and not self.first_row
        readers = []
        for i, r in enumerate(runs):
            if i < own:
                expire, mark = self.expire, None
            elif self.first_row:
                expire = mark = None
            else:
                expire, mark = (None, self.expire) if tagged else (self.expire, None)
            readers.append(_RunReader(r, opener, piece_bytes, ranks, file_ids, levels,
                                      expire, mark, tagged))
        meta = _SectionRuns(np.arange(len(runs)) >= own, lookup_files, lookup_changelog, dedup)
        pending: list[pa.Table | None] = [None] * len(runs)
        while True:
            for i, reader in enumerate(readers):
                held = pending[i]
                if (held is None or held.num_rows == 0) and not reader.done:
                    pending[i] = reader.read()
                elif held is not None and reader.short(held):
                    # a run's short tail would set the bound of the next slice and keep it
                    # small: the run reads on first (memory: the tail and one more piece)
                    more = reader.read()
                    if more is not None:
                        pending[i] = pa.concat_tables([held, more])
            active = [i for i, p in enumerate(pending) if p is not None and p.num_rows]
            if not active:
                return
            bounded = [i for i in active if not readers[i].done]
            result = self._slice(pending, active, bounded, changelog_level, drop_delete, meta)
            if result.rows.num_rows or result.replaced or (
                    result.changelog is not None and result.changelog.num_rows):
                yield result

    def _single_run(self, files: Sequence[DataFileMeta], drop_delete: bool
                    ) -> Iterator[MergedSlice]:
        """One sorted run holds each key once, and a lone record is never merged (Paimon's
        reducer rule, every engine): its rows are the merge result as they are read, in pieces
        of the budget share a merged slice gets."""
        reader = _RunReader(files, self._open,
                            max(MIN_PIECE_BYTES, self.memory_budget // BUDGET_COPIES),
                            None, expire=self.expire)
        while not reader.done:
            rows = reader.read()
            if rows is None:
                return
            if drop_delete:
                retract = is_retract(rows[VALUE_KIND])
                if retract.any():
                    rows = rows.filter(pa.array(~retract))
            if rows.num_rows:
                yield MergedSlice(rows, None)

    def _slice(self, pending: list[pa.Table | None], active: list[int], bounded: list[int],
               changelog_level: int | None, drop_delete: bool, meta: _SectionRuns
               ) -> MergedSlice:
        """Merge every pending row whose key is <= the bound. A run is key-sorted, so those
        rows are a prefix of its piece: the cut is found before sorting, only the rows merged
        now are sorted, and the rest wait in their runs as zero-copy slices."""
        tables = [pending[i] for i in active]
        if bounded:
            bound = self._bound(tables, [active.index(i) for i in bounded])
            used = [self._count_upto(t, bound) for t in tables]
        else:
            used = [t.num_rows for t in tables]
        heads = []
        runs = []
        for t, i, u in zip(tables, active, used):
            pending[i] = t.slice(u) if u < t.num_rows else None
            if u:
                heads.append(t.slice(0, u) if u < t.num_rows else t)
                runs.append(i)
        heads, runs = _in_sequence_order(heads, runs)
        sizes = np.array([h.num_rows for h in heads], dtype=np.int64)
        concat = pa.concat_tables(heads) if len(heads) > 1 else heads[0]
        run_of_row = np.repeat(np.array(runs, dtype=np.int64), sizes)
        ranked = FILE_RANK in concat.column_names
        emit, groups = merge_order(concat, self.ctx.key_names, self.ctx.sequence_fields,
                                   self.ctx.sequence_ascending,
                                   concat[FILE_RANK].to_numpy() if ranked else None, sizes)
        extra = [c for c in (FILE_RANK, ROW_POSITION, LOOKUP_FILE, FILE_LEVEL, EXPIRED)
                 if c in concat.column_names]
        level = concat[FILE_LEVEL].to_numpy() if FILE_LEVEL in concat.column_names else None
        records = concat.drop_columns(extra) if extra else concat  # engines: records only
        sel = replaced = None
        if self.lookup:
            from_lookup = meta.lookup[run_of_row]
            if self.first_row and (level == 0).any():
                self._refuse_retracts(records, ~from_lookup)
                sel = lookup_merge.select_first_row(emit, groups, level, from_lookup)
            else:
                expired = concat[EXPIRED].to_numpy() if EXPIRED in concat.column_names \
                    else None
                sel = lookup_merge.select(emit, groups, level, from_lookup, expired)
            emit, groups = sel.emit, sel.groups
            if len(sel.replaced):
                replaced = _positions(concat, sel.replaced, meta.lookup_files)
            if not len(groups):
                return MergedSlice(records.slice(0, 0).select(self.names), None, replaced)
        merged = self.merge(records, emit, groups).select(self.names)
        log = None
        if changelog_level is not None:
            log = self._changelog(records, emit, groups, merged,
                                  level[emit] == changelog_level, meta.dedup)
        elif sel is not None and meta.lookup_changelog:
            log = lookup_merge.changelog(records, sel, merged, self.names, meta.dedup)
        if drop_delete:
            retract = is_retract(merged[VALUE_KIND])
            if retract.any():
                merged = merged.filter(pa.array(~retract))
        return MergedSlice(merged, log, replaced)

    def _refuse_retracts(self, records: pa.Table, own: np.ndarray) -> None:
        """first-row's lookup compaction (of level-0 records) takes every record through its
        merge function, which refuses a retract (unless `ignore-delete`) even for a key it then
        drops or a lone record [JAVA FirstRowMergeFunction.add]."""
        if self.ctx.options.ignore_delete:
            return
        kinds = records[VALUE_KIND].to_numpy()
        retract = is_retract(kinds) & own
        if retract.any():
            self.engine.refuse_retracts(records, kinds[retract], "compaction")

    def _bound(self, tables: list[pa.Table], bounded: list[int]) -> list[pa.Scalar]:
        """The smallest last-read key among runs with more rows on storage, as comparable
        key values (`sort.key_column`: floats as Java-ordered codes)."""
        keys = self.ctx.key_names
        last = pa.concat_tables([tables[j].select(keys).slice(tables[j].num_rows - 1, 1)
                                 for j in bounded])
        row = 0
        if len(bounded) > 1:
            order = merge_permutation(
                last.append_column(SEQUENCE_NUMBER, pa.array(np.zeros(len(bounded), np.int64)))
                .append_column(VALUE_KIND, pa.array(np.zeros(len(bounded), np.int8))), keys)
            row = int(order[0].as_py())
        return [_chunk(key_column(last[k]))[row] for k in keys]

    def _count_upto(self, table: pa.Table, bound: list[pa.Scalar]) -> int:
        """Rows of a key-sorted piece whose key is <= `bound` (lexicographic over the key)."""
        cols = [_chunk(key_column(table[k])) for k in self.ctx.key_names]
        if len(cols) == 1 and pa.types.is_integer(cols[0].type):
            values = cols[0].to_numpy(zero_copy_only=False)
            return int(np.searchsorted(values, bound[0].as_py(), side="right"))
        upto = pc.less_equal(cols[-1], bound[-1])
        for col, b in zip(reversed(cols[:-1]), reversed(bound[:-1])):
            upto = pc.or_(pc.less(col, b), pc.and_(pc.equal(col, b), upto))
        return int(pc.sum(upto).as_py() or 0)

    def _changelog(self, concat: pa.Table, emit: np.ndarray, groups: KeyGroups,
                   merged: pa.Table, is_top: np.ndarray, dedup: Sequence[str] | None
                   ) -> pa.Table:
        """Java's full-compaction changelog of one slice, in key order. `dedup`: the columns
        `changelog-producer.row-deduplicate` compares (an unchanged row is left out)."""
        ng = len(groups)
        starts = groups.starts
        top_pos = np.full(ng, -1, dtype=np.int64)
        where = np.flatnonzero(is_top)
        top_pos[np.searchsorted(starts, where, side="right") - 1] = where
        has_top = top_pos >= 0
        merged_add = ~is_retract(merged[VALUE_KIND])
        lone = groups.sizes == 1
        insert = ~has_top & merged_add  # a lone record is its own merge result
        delete = has_top & ~lone & ~merged_add
        update = has_top & ~lone & merged_add
        if dedup is not None and update.any():
            g = np.flatnonzero(update)
            same = lookup_merge.equal_rows(concat.take(pa.array(emit[top_pos[g]])),
                                           merged.take(pa.array(g)), dedup)
            update[g[same]] = False
        g_ins, g_del, g_upd = (np.flatnonzero(m) for m in (insert, delete, update))
        old_rows = emit[top_pos[np.concatenate([g_del, g_upd])]]
        old = concat.take(pa.array(old_rows)).select(self.names)
        new = merged.take(pa.array(np.concatenate([g_ins, g_upd]))).select(self.names)
        old_kinds = np.concatenate([np.full(len(g_del), DELETE), np.full(len(g_upd),
                                                                        UPDATE_BEFORE)])
        new_kinds = np.concatenate([np.full(len(g_ins), INSERT), np.full(len(g_upd),
                                                                        UPDATE_AFTER)])
        old = _with_kinds(old, old_kinds)
        new = _with_kinds(new.cast(old.schema), new_kinds)
        group_of = np.concatenate([g_del, g_upd, g_ins, g_upd])
        sub = np.concatenate([np.zeros(len(old_rows), np.int64),
                              np.ones(len(g_ins) + len(g_upd), np.int64)])
        order = np.lexsort((sub, group_of))
        return pa.concat_tables([old, new]).take(pa.array(order))


def _in_sequence_order(heads: list[pa.Table], runs: list[int]
                       ) -> tuple[list[pa.Table], list[int]]:
    """The slice's runs oldest first when their sequence-number ranges are disjoint: then the
    concatenation is already in merge order for equal keys, and the key sort merges it as it is
    (no copy in between); and since no two records can tie, nothing else depends on the order.
    Overlapping ranges keep the runs' own order (ties are broken by it)."""
    if len(heads) < 2:
        return heads, runs
    ranges = [pc.min_max(h[SEQUENCE_NUMBER]) for h in heads]
    lo = np.array([r["min"].as_py() for r in ranges], dtype=np.int64)
    hi = np.array([r["max"].as_py() for r in ranges], dtype=np.int64)
    order = np.argsort(lo, kind="stable")
    if (order[1:] > order[:-1]).all() or (lo[order][1:] <= hi[order][:-1]).any():
        return heads, runs
    return [heads[i] for i in order], [runs[i] for i in order]


def _positions(concat: pa.Table, rows: np.ndarray, files: list[str]) -> dict[str, np.ndarray]:
    """Data file name -> positions, of some rows of lookup runs."""
    take = pa.array(rows)
    fid = concat[LOOKUP_FILE].take(take).to_numpy()
    pos = concat[ROW_POSITION].take(take).to_numpy()
    return {files[int(f)]: np.sort(pos[fid == f]) for f in np.unique(fid)}


def _chunk(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(column, pa.ChunkedArray):
        return column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    return column


def _with_kinds(table: pa.Table, kinds: np.ndarray) -> pa.Table:
    i = table.schema.get_field_index(VALUE_KIND)
    return table.set_column(i, table.schema.field(i), pa.array(kinds.astype(np.int8)))
