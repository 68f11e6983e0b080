"""Property tests of table maintenance: random histories, random maintenance, nothing lost.

Hypothesis draws a sequence of steps on a partitioned primary-key table on local disk: upserts,
deletes by key, partition overwrites, full and minor compactions, schema changes (add column,
rename column, set an expiry option), tags on random snapshots, consumers pinning snapshots —
interleaved with maintenance: `expire_snapshots` (random retain_min, retain_max, older_than,
max_deletes, or the table's options), `delete_tag`, `rollback_to` (a snapshot or a tag),
`clean_schemas` and `remove_orphan_files`.

A model of the table keeps rows by field id, so every snapshot's expected rows are the model
projected through the schema that snapshot was written with; each snapshot and tag is read once
right after it is created and its rows recorded. After every maintenance call:

* every snapshot that still exists and every tag reads back exactly its recorded rows, and
  the latest read (latest schema) equals the model;
* every manifest list, manifest, data file and schema file a retained snapshot or tag
  references exists (walked with `TableReferences`), snapshot ids are contiguous and the
  earliest snapshot is the `EARLIEST` the library reports;
* the dry run changed nothing and listed exactly what the real run then deleted, in the same
  order; the real run removed exactly those files from the table directory and nothing else;
* `expire_snapshots` removed exactly the snapshots Paimon's selection rule (written out
  independently below) names, never one a consumer pins, and `bytes_deleted` is the size of
  the data and manifest files it removed.
"""

from __future__ import annotations

import copy
import datetime as dt
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st

import lakeformat as lf
from lakeformat.errors import InvalidOptionError
from lakeformat.meta.consumer import ConsumerManager
from lakeformat.meta.snapshot import Snapshot
from lakeformat.meta.tag import TagManager
from lakeformat.operation.maintain import TableReferences
from tests.support.depth import examples

DAYS = ["2024-01-01", "2024-01-02"]
BASE = pa.schema([("dt", pa.string()), ("id", pa.int32()), ("v", pa.string())])
INT_MAX = 2147483647
OLD = dt.timedelta(days=2)  # files aged this much before remove_orphan_files (default 1 day)

Key = tuple[str, int]


def local(path: str) -> str:
    return path[len("file://"):] if path.startswith("file://") else path


def listing(root: str) -> dict[str, int]:
    """Every file under the table directory -> size."""
    out = {}
    for folder, _, names in os.walk(root):
        for n in names:
            p = os.path.join(folder, n)
            out[p] = os.path.getsize(p)
    return out


def age_all(root: str, by: dt.timedelta) -> None:
    """Make every file look `by` old (what a day passing would do to the table)."""
    when = (dt.datetime.now() - by).timestamp()
    for p in listing(root):
        os.utime(p, (when, when))


def canon(rows: list[dict[str, Any]]) -> list[tuple]:
    return sorted(tuple(r.items()) for r in rows)


@dataclass
class Model:
    """The table as a user sees it: rows by key, values by field id."""

    rows: dict[Key, dict[int, Any]] = field(default_factory=dict)
    options: dict[str, str] = field(default_factory=dict)

    def project(self, schema) -> list[dict[str, Any]]:
        return [{f.name: r.get(f.id) for f in schema.fields} for _, r in sorted(self.rows.items())]


# -- steps --------------------------------------------------------------------------------------
keys_st = st.lists(st.tuples(st.integers(0, 1), st.integers(0, 7)), min_size=1, max_size=4,
                   unique=True)
snap_pick = st.integers(0, 1000)  # index into the snapshots that exist when the step runs

history_steps = st.one_of(
    st.tuples(st.just("write"), keys_st),
    st.tuples(st.just("write"), keys_st),
    st.tuples(st.just("delete"), keys_st),
    st.tuples(st.just("overwrite"), st.integers(0, 1),
              st.lists(st.integers(0, 7), min_size=1, max_size=3, unique=True)),
    st.tuples(st.just("add_column"), st.sampled_from(["INT", "STRING"])),
    st.tuples(st.just("rename_column"), st.integers(0, 10)),
    st.tuples(st.just("set_option"),
              st.sampled_from([("snapshot.num-retained.min", "1"),
                               ("snapshot.num-retained.min", "3"),
                               ("snapshot.expire.limit", "2"),
                               ("snapshot.expire.limit", "50")])),
    st.tuples(st.just("compact"), st.booleans()),
    st.tuples(st.just("tag"), snap_pick),
    st.tuples(st.just("consumer"), st.sampled_from(["c1", "c2"]),
              st.one_of(st.none(), snap_pick)),
)

older_than_st = st.one_of(st.just("all"), st.just("none"), st.tuples(st.just("at"), snap_pick))
maintenance_steps = st.one_of(
    st.tuples(st.just("expire"),
              st.one_of(st.none(), st.integers(1, 4)),      # retain_min
              st.one_of(st.none(), st.integers(1, 8)),      # retain_max
              older_than_st,
              st.one_of(st.none(), st.integers(1, 3), st.just(100))),  # max_deletes
    st.tuples(st.just("expire"), st.just(1), st.none(), st.just("all"), st.just(100)),
    st.tuples(st.just("delete_tag"), st.integers(0, 10)),
    st.tuples(st.just("rollback"), st.sampled_from(["snapshot", "tag"]), snap_pick),
    st.tuples(st.just("clean_schemas"), st.integers(1, 3)),
    st.tuples(st.just("orphans")),
)

histories = st.lists(st.one_of(history_steps, history_steps, maintenance_steps),
                     min_size=8, max_size=24)


class Harness:
    def __init__(self, root: str, merge_min_count: str):
        catalog = lf.Catalog(root)
        catalog.create_database("db")
        self.t = catalog.create_table(
            "db.t", BASE, primary_keys=["dt", "id"], partition_keys=["dt"],
            options={"bucket": "2", "manifest.merge-min-count": merge_min_count})
        self.root = local(self.t.path)
        self.io = self.t.file_io
        self.model = Model()
        self.states: dict[int, dict[Key, dict[int, Any]]] = {}  # snapshot id -> model rows
        self.expected: dict[int, list[tuple]] = {}  # snapshot id -> rows read when created
        self.tag_rows: dict[str, list[tuple]] = {}
        self.tags_made = 0
        self.columns_made = 0
        self.step_no = 0
        self.consumers = ConsumerManager(self.io, self.t.path)

    # -- helpers ---------------------------------------------------------------------------
    def existing(self) -> list[int]:
        return self.t.snapshot_manager.snapshot_ids()

    def pick(self, i: int) -> int | None:
        ids = self.existing()
        return ids[i % len(ids)] if ids else None

    def value(self, f, key: Key) -> Any:
        arrow_type = self.t.schema.field(f.name).type
        if pa.types.is_integer(arrow_type):
            return self.step_no * 100 + key[1]
        return f"s{self.step_no}-f{f.id}-{key[0][-1]}{key[1]}"

    def committed(self, result: lf.CommitResult) -> None:
        sid = result.snapshot_id
        assert sid is not None
        schema = self.t.schema_manager.schema(self.t.snapshot_manager.snapshot(sid).schema_id)
        want = canon(self.model.project(schema))
        got = canon(self.t.read(snapshot_id=sid).to_pylist())
        assert got == want, f"snapshot {sid} as written"
        self.states[sid] = copy.deepcopy(self.model.rows)
        self.expected[sid] = got

    # -- history ---------------------------------------------------------------------------
    def history(self, step: tuple) -> None:
        kind = step[0]
        t = self.t.refresh()
        schema = t.table_schema
        if kind in ("write", "delete"):
            keys = [(DAYS[d], i) for d, i in step[1]]
            if kind == "write":
                rows = [{f.name: (k[0] if f.name == "dt" else k[1] if f.name == "id"
                                  else self.value(f, k)) for f in schema.fields} for k in keys]
                res = t.write(pa.Table.from_pylist(rows, schema=t.schema))
                for r, k in zip(rows, keys):
                    self.model.rows[k] = {f.id: r[f.name] for f in schema.fields}
            else:
                res = t.delete(pa.table({"dt": [k[0] for k in keys],
                                         "id": pa.array([k[1] for k in keys], pa.int32())}))
                for k in keys:
                    self.model.rows.pop(k, None)
            self.committed(res)
        elif kind == "overwrite":
            day = DAYS[step[1]]
            keys = [(day, i) for i in step[2]]
            rows = [{f.name: (k[0] if f.name == "dt" else k[1] if f.name == "id"
                              else self.value(f, k)) for f in schema.fields} for k in keys]
            res = t.write(pa.Table.from_pylist(rows, schema=t.schema), overwrite=True)
            self.model.rows = {k: v for k, v in self.model.rows.items() if k[0] != day}
            for r, k in zip(rows, keys):
                self.model.rows[k] = {f.id: r[f.name] for f in schema.fields}
            self.committed(res)
        elif kind == "compact":
            res = t.compact(full=step[1], workers=1)
            assert not res.failed
            for sid in res.snapshot_ids:
                assert t.snapshot_manager.snapshot(sid).commit_kind == "COMPACT"
                self.committed(lf.CommitResult(t.name, sid, "COMPACT", 0, 0, 0, 0, 0.0))
        elif kind == "add_column":
            self.columns_made += 1
            t.alter([lf.SchemaChange.add_column(f"c{self.columns_made}", step[1])])
        elif kind == "rename_column":
            values = [f.name for f in schema.fields if f.name not in ("dt", "id")]
            self.columns_made += 1
            old = values[step[1] % len(values)]
            t.alter([lf.SchemaChange.rename_column(old, f"r{self.columns_made}")])
        elif kind == "set_option":
            key, value = step[1]
            t.alter([lf.SchemaChange.set_option(key, value)])
            self.model.options[key] = value
        elif kind == "tag":
            sid = self.pick(step[1])
            if sid is None:
                return
            self.tags_made += 1
            name = f"tag{self.tags_made}"
            t.create_tag(name, sid)
            got = canon(t.read(tag=name).to_pylist())
            assert got == self.expected[sid], f"tag {name} of snapshot {sid}"
            self.tag_rows[name] = got
        elif kind == "consumer":
            if step[2] is None:
                self.io.delete(self.consumers.consumer_path(step[1]))
            else:
                sid = self.pick(step[2])
                if sid is not None:
                    self.consumers.set(step[1], sid)

    # -- maintenance -----------------------------------------------------------------------
    def dry_then_real(self, run) -> lf.results.MaintenanceResult:
        before = listing(self.root)
        dry = run(True)
        assert dry.dry_run
        assert listing(self.root) == before, "a dry run changed the table"
        real = run(False)
        assert real.deleted == dry.deleted, "dry run listed something else than the real run"
        assert real.skipped == [] and dry.skipped == []
        after = listing(self.root)
        gone = set(before) - set(after)
        reported = {local(p) for p in real.deleted}
        assert gone == reported, (f"unreported deletions {sorted(gone - reported)[:5]}, reported "
                                  f"but present {sorted(reported - gone)[:5]}")
        assert len(real.deleted) == len(set(real.deleted))
        self.sizes_before = before
        return real

    def expected_expiry(self, retain_min, retain_max, cutoff_ms, max_deletes) -> list[int]:
        """Paimon's ExpireSnapshotsImpl selection (paimon-format.md §11.1), written out."""
        opts = self.model.options
        rmin = int(opts.get("snapshot.num-retained.min", 10)) if retain_min is None else retain_min
        rmax = INT_MAX if retain_max is None else retain_max
        limit = int(opts.get("snapshot.expire.limit", 10)) if max_deletes is None else max_deletes
        ids = self.existing()
        if not ids:
            return []
        earliest, latest = ids[0], ids[-1]
        low = max(latest - rmax + 1, earliest)
        end = latest - rmin + 1
        pins = self.consumers.consumers().values()
        if pins:
            end = min(end, min(pins))
        end = min(end, earliest + limit)
        stop = end
        for sid in range(low, end):
            if cutoff_ms <= self.t.snapshot_manager.snapshot(sid + 1).time_millis:
                stop = sid
                break
        return list(range(earliest, stop))

    def maintain(self, step: tuple) -> None:
        kind = step[0]
        t = self.t.refresh()
        if kind == "expire":
            _, rmin, rmax, older, limit = step
            snaps = {s.id: s for s in t.snapshots()}
            if older == "all":
                last = max((s.time_millis for s in snaps.values()), default=0)
                cutoff_ms = last + 1
            elif older == "none":
                cutoff_ms = min((s.time_millis for s in snaps.values()), default=0)
            else:
                sid = self.pick(older[1])
                cutoff_ms = snaps[sid].time_millis if sid is not None else 0
            # half a millisecond past: the library's int(ts * 1000) lands on cutoff_ms exactly
            cutoff = dt.datetime.fromtimestamp((cutoff_ms + 0.5) / 1000)
            eff_min = (int(self.model.options.get("snapshot.num-retained.min", 10))
                       if rmin is None else rmin)
            if rmax is not None and rmax < eff_min:
                before = listing(self.root)
                with pytest.raises(InvalidOptionError):
                    t.expire_snapshots(retain_min=rmin, retain_max=rmax, older_than=cutoff,
                                       max_deletes=limit)
                assert listing(self.root) == before
                return
            want = self.expected_expiry(rmin, rmax, cutoff_ms, limit)
            pinned = self.consumers.min_next_snapshot()
            res = self.dry_then_real(lambda dry: t.expire_snapshots(
                retain_min=rmin, retain_max=rmax, older_than=cutoff, max_deletes=limit,
                dry_run=dry))
            assert res.snapshots_deleted == want
            event(f"expire: snapshots deleted {'yes' if want else 'no'}, data files deleted "
                  f"{'yes' if res.data_files_deleted else 'no'}")
            if pinned is not None:
                assert all(s < pinned for s in res.snapshots_deleted)
            if want:
                assert res.earliest_snapshot == want[-1] + 1
            hinted = self.t.snapshot_manager._hint("EARLIEST")
            if want:
                assert hinted == want[-1] + 1
            counted = sum(size for p, size in self.sizes_before.items()
                          if p in {local(x) for x in res.deleted}
                          and ("/manifest/" in p or "/bucket-" in p))
            assert res.bytes_deleted == counted
        elif kind == "delete_tag":
            names = TagManager(self.io, t.path).names()
            if not names:
                return
            name = names[step[1] % len(names)]
            res = self.dry_then_real(lambda dry: t.delete_tag(name, dry_run=dry))
            assert res.deleted[0] == TagManager(self.io, t.path).tag_path(name)
            counted = sum(size for p, size in self.sizes_before.items()
                          if p in {local(x) for x in res.deleted}
                          and ("/manifest/" in p or "/bucket-" in p))
            assert res.bytes_deleted == counted
            del self.tag_rows[name]
            event(f"delete_tag: freed files {'yes' if len(res.deleted) > 1 else 'no'}")
        elif kind == "rollback":
            if step[1] == "tag":
                names = TagManager(self.io, t.path).names()
                if not names:
                    return
                target: int | str = names[step[2] % len(names)]
                sid = TagManager(self.io, t.path).get(target).snapshot_id
            else:
                pick = self.pick(step[2])
                if pick is None:
                    return
                target = sid = pick
            before = listing(self.root)
            later_tags = [tg for tg in TagManager(self.io, t.path).tags() if tg.snapshot_id > sid]
            later = [s for s in self.existing() if s > sid]
            before_ids = self.existing()
            res = t.rollback_to(target)
            event(f"rollback to {step[1]}, its snapshot had expired: {sid not in before_ids}")
            gone = set(before) - set(listing(self.root))
            assert gone == {local(p) for p in res.deleted}
            assert sorted(res.snapshots_deleted) == later
            assert self.existing()[-1] == sid
            assert set(TagManager(self.io, t.path).names()) == (
                set(self.tag_rows) - {tg.name for tg in later_tags})
            for s in later:
                del self.expected[s]
            for tg in later_tags:
                del self.tag_rows[tg.name]
            self.model.rows = copy.deepcopy(self.states[sid])
        elif kind == "clean_schemas":
            cutoff = dt.datetime.now()  # one fixed cut-off for the dry and the real run
            res = self.dry_then_real(lambda dry: t.clean_schemas(
                retain_min=step[1], older_than=cutoff, dry_run=dry))
            event(f"clean_schemas: deleted {'some' if res.deleted else 'none'}")
        elif kind == "orphans":
            age_all(self.root, OLD)
            res = self.dry_then_real(lambda dry: t.remove_orphan_files(dry_run=dry))
            event(f"orphans: deleted {'some' if res.deleted else 'none'}")

    # -- invariants ------------------------------------------------------------------------
    def check(self) -> None:
        t = self.t.refresh()
        ids = self.existing()
        sm = t.snapshot_manager
        if ids:
            assert ids == list(range(ids[0], ids[-1] + 1)), f"gap in snapshots {ids}"
            assert sm.earliest_snapshot_id() == ids[0]
            assert sm.latest_snapshot_id() == ids[-1]
        pinned = self.consumers.min_next_snapshot()
        for sid in ids:
            got = canon(t.read(snapshot_id=sid).to_pylist())
            assert got == self.expected[sid], f"snapshot {sid} reads differently"
        tags = TagManager(self.io, t.path).tags()
        assert {tg.name for tg in tags} == set(self.tag_rows)
        for tg in tags:
            assert canon(t.read(tag=tg.name).to_pylist()) == self.tag_rows[tg.name], tg.name
        if ids:
            assert canon(t.read().to_pylist()) == canon(self.model.project(t.table_schema))
        refs = TableReferences(self.io, t.path, t.table_schema)
        keepers: list[Snapshot] = [sm.snapshot(i) for i in ids] + [tg.snapshot for tg in tags]
        for snap in keepers:
            needed = {t.schema_manager.schema_path(snap.schema_id)}
            for name in refs.metadata_names(snap):
                assert self.io.exists(refs.manifest_path(name)), (snap.id, name)
            for e in refs.live_entries(snap):
                for r in refs.file_refs(e):
                    assert self.io.exists(r.path), (snap.id, r.path)
                    needed.add(t.schema_manager.schema_path(r.schema_id))
            for p in needed:
                assert self.io.exists(p), (snap.id, p)
        if pinned is not None:
            assert all(self.io.exists(sm.snapshot_path(i)) for i in ids if i >= pinned)


MAINTENANCE = {"expire", "delete_tag", "rollback", "clean_schemas", "orphans"}


@settings(max_examples=examples(20, 60, "MAINTENANCE_PROPERTY_EXAMPLES"), deadline=None,
          derandomize=True, database=None, phases=[Phase.explicit, Phase.generate, Phase.shrink],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(steps=histories, merge_min_count=st.sampled_from(["3", "30"]))
def test_random_histories_survive_maintenance(steps: list[tuple], merge_min_count: str) -> None:
    with tempfile.TemporaryDirectory() as root:
        h = Harness(root, merge_min_count)
        # every history starts with data in both partitions
        h.history(("write", [(0, 0), (1, 0), (0, 1)]))
        for step in steps:
            h.step_no += 1
            if step[0] in MAINTENANCE:
                h.maintain(step)
                h.check()
            else:
                h.history(step)
        # finally: expire everything that may go, drop every tag (their files are now only
        # theirs), then clean orphans and schemas, checking after each
        h.maintain(("expire", 1, None, "all", 100))
        h.check()
        for _ in list(h.tag_rows):
            h.maintain(("delete_tag", 0))
            h.check()
        tail = [("orphans",), ("clean_schemas", 1)]
        for step in tail:
            h.maintain(step)
            h.check()
