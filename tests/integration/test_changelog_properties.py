"""Property test of decoupled changelog expiry: random histories, every retained changelog replays.

Hypothesis draws a changelog producer (`lookup`, `full-compaction`, `none`), a changelog
retention longer than the snapshot one, and a sequence of steps on a primary-key table on local
disk: upserts, overwrites, full compactions, consumers set or dropped (with or without
`consumer.changelog-only`), tags on random snapshots, changes of the changelog retention —
interleaved with `expire_snapshots` (random retain_min / retain_max / max_deletes, everything
older than now; changelog expiry runs after it as Java's commit does), `expire_changelogs`
(random retain_min / retain_max, or `delete_all`), `delete_tag` of a random tag, `expire_tags`
(every tag) and `rollback_to` a random tag (then orphan removal takes what the abandoned
history used, as Paimon leaves it to it). The changelog rows of each snapshot (its
changelog files, or with `none` its APPEND delta's files) and each tag's rows are read right
after they are made. After every maintenance call:

* every retained changelog — a `changelog/changelog-<id>` or a snapshot — reads back exactly
  its recorded rows from files that exist; every tag reads its rows; the table reads the model;
* the changelog ids are contiguous and below the earliest snapshot, and the hints agree;
* no consumer lost what it reads next: every id at or after a consumer's `nextSnapshot` that was
  readable before (snapshot or changelog) still is (`delete_all` and rollback aside: Java runs
  the first without consumers, and the second drops a history on purpose), and snapshots from it
  exist unless `consumer.changelog-only`; after a rollback no changelog is newer than its target;
* the dry run changed nothing and listed exactly what the real run deleted, and nothing is left
  that no snapshot, tag or changelog references (orphan removal would find nothing).
"""

from __future__ import annotations

import datetime as dt
import os
import tempfile

import pyarrow as pa
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import lakeformat as lf
from lakeformat.meta.changelog import ChangelogManager
from lakeformat.meta.consumer import ConsumerManager
from tests.integration.test_changelog_decoupled import (
    SCHEMA,
    changelog_files,
    changelog_rows,
    retained,
)
from tests.support.depth import examples

EXAMPLES = examples(12, 40, "CHANGELOG_PROPERTY_EXAMPLES")

keys_st = st.lists(st.integers(0, 5), min_size=1, max_size=3, unique=True)
pick = st.integers(0, 1000)
history_steps = st.one_of(
    st.tuples(st.just("write"), keys_st),
    st.tuples(st.just("write"), keys_st),
    st.tuples(st.just("write"), keys_st),
    st.tuples(st.just("overwrite"), keys_st),
    st.tuples(st.just("compact")),
    st.tuples(st.just("consumer"), st.sampled_from(["c1", "c2"]), st.one_of(st.none(), pick)),
    st.tuples(st.just("tag"), pick),
    st.tuples(st.just("tag"), pick),
    st.tuples(st.just("retention"), st.integers(3, 9)),
)
maintenance_steps = st.one_of(
    st.tuples(st.just("expire"), st.one_of(st.none(), st.integers(1, 3)),
              st.one_of(st.none(), st.integers(1, 4)), st.one_of(st.none(), st.integers(1, 3))),
    st.tuples(st.just("expire_changelogs"), st.integers(1, 4), st.integers(0, 3)),
    st.tuples(st.just("delete_all")),
    st.tuples(st.just("delete_tag"), pick),
    st.tuples(st.just("expire_tags")),
    st.tuples(st.just("rollback"), pick),
)
MAINTENANCE = ("expire", "expire_changelogs", "delete_all", "delete_tag", "expire_tags",
               "rollback")
histories = st.lists(st.one_of(history_steps, history_steps, maintenance_steps),
                     min_size=6, max_size=20)


def files_under(root: str) -> set[str]:
    return {os.path.join(d, n) for d, _, names in os.walk(root) for n in names}


class Harness:
    def __init__(self, root: str, producer: str, retain: int, changelog_only: bool):
        catalog = lf.Catalog(root)
        catalog.create_database("db")
        self.t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={
            "bucket": "1", "changelog-producer": producer,
            "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2",
            "snapshot.time-retained": "1 ms", "snapshot.expire.limit": "100",
            "changelog.num-retained.min": str(retain),
            "changelog.num-retained.max": str(retain),
            "consumer.changelog-only": str(changelog_only).lower()})
        self.producer = producer
        self.changelog_only = changelog_only
        self.model: dict[int, str] = {}
        self.rows: dict[int, list[tuple]] = {}
        self.tags: dict[str, list[tuple]] = {}
        self.consumers = ConsumerManager(self.t.file_io, self.t.path)
        self.changelogs = ChangelogManager(self.t.file_io, self.t.path)
        self.step_no = 0

    def record(self) -> None:
        for snap in self.t.snapshot_manager.snapshots():
            if snap.id not in self.rows:
                self.rows[snap.id] = changelog_rows(self.t, snap)

    def readable(self) -> set[int]:
        return set(retained(self.t))

    def history(self, step: tuple) -> None:
        t = self.t.refresh()
        kind = step[0]
        if kind in ("write", "overwrite"):
            values = [f"s{self.step_no}-{k}" for k in step[1]]
            t.write(pa.table({"id": step[1], "v": values}, schema=SCHEMA),
                    overwrite=kind == "overwrite")
            if kind == "overwrite":
                self.model.clear()
            self.model.update(zip(step[1], values))
            if self.producer == "full-compaction" and self.step_no % 2:
                t.compact(full=True)
        elif kind == "compact":
            t.compact(full=True)
        elif kind == "consumer":
            path = self.consumers.consumer_path(step[1])
            ids = sorted(self.readable())
            if step[2] is None or not ids:
                t.file_io.delete_many([path])
            else:
                self.consumers.set(step[1], ids[step[2] % len(ids)])
        elif kind == "tag":
            ids = t.snapshot_manager.snapshot_ids()
            name = f"tag{self.step_no}"
            t.create_tag(name, ids[step[1] % len(ids)])
            self.tags[name] = sorted((r["id"], r["v"]) for r in t.read(tag=name).to_pylist())
        elif kind == "retention":
            t.alter([lf.SchemaChange.set_option("changelog.num-retained.min", str(step[1])),
                     lf.SchemaChange.set_option("changelog.num-retained.max", str(step[1]))])
        self.record()

    def maintain(self, step: tuple) -> None:
        t = self.t.refresh()
        before_files = files_under(t.path)
        before_ids = self.readable()
        before_snaps = set(t.snapshot_manager.snapshot_ids())
        if step[0] == "expire":
            _, retain_min, extra, max_deletes = step
            retain_max = None if retain_min is None else retain_min + (extra or 0)
            call = lambda dry: t.expire_snapshots(  # noqa: E731
                retain_min=retain_min, retain_max=retain_max, max_deletes=max_deletes,
                older_than=dt.timedelta(0), dry_run=dry)
        elif step[0] == "delete_tag" or step[0] == "rollback":
            names = sorted(self.tags)
            if not names:
                return
            name = names[step[1] % len(names)]
            if step[0] == "delete_tag":
                call = lambda dry: t.delete_tag(name, dry_run=dry)  # noqa: E731
            else:
                call = lambda dry: t.rollback_to(name, dry_run=dry)  # noqa: E731
        elif step[0] == "expire_tags":
            call = lambda dry: t.expire_tags(older_than=dt.timedelta(0), dry_run=dry)  # noqa: E731
        elif step[0] == "expire_changelogs":
            retain_min = step[1]
            call = lambda dry: t.expire_changelogs(  # noqa: E731
                retain_min=retain_min, retain_max=retain_min + step[2],
                older_than=dt.timedelta(0), dry_run=dry)
        else:
            ids = self.changelogs.changelog_ids()
            first = t.snapshot_manager.earliest_snapshot_id()
            if ids and first is not None and ids[-1] >= first:
                return  # (after a rollback to a tag whose snapshot expired: Java refuses too)
            call = lambda dry: t.expire_changelogs(delete_all=True, dry_run=dry)  # noqa: E731
        dry = call(True)
        assert files_under(t.path) == before_files, "the dry run changed the table"
        real = call(False)
        assert real.deleted == dry.deleted, step
        assert real.changelogs_deleted == dry.changelogs_deleted, step
        hints = {os.path.join(t.path, "changelog", h) for h in ("EARLIEST", "LATEST")}
        gone = before_files - files_under(t.path) - hints  # hints are rewritten, or deleted
        expected_gone = {os.path.join(t.path, p) if not os.path.isabs(p) else p
                         for p in real.deleted}
        assert gone == {p for p in expected_gone if p in before_files}, step
        if step[0] == "rollback":
            self.rolled_back(name)
        elif step[0] in ("delete_tag", "expire_tags"):
            for gone_tag in set(self.tags) - {x.name for x in t.list_tags()}:
                del self.tags[gone_tag]
        if step[0] not in ("delete_all", "rollback"):
            after = self.readable()
            snaps = set(t.snapshot_manager.snapshot_ids())
            for n in self.consumers.consumers().values():
                assert {i for i in before_ids if i >= n} <= after, (step, n)
                if not self.changelog_only:
                    assert {i for i in before_snaps if i >= n} <= snaps, (step, n)

    def rolled_back(self, name: str) -> None:
        """After `rollback_to(name)`: the table reads the tag; snapshots, changelogs and tags
        after it are gone (their ids are reused by later commits); orphan removal takes the
        files only the abandoned history used."""
        t = self.t.refresh()
        target = t.latest_snapshot().id
        assert t.snapshot_manager.snapshot_ids()[-1] == target
        assert all(i <= target for i in self.changelogs.changelog_ids())
        self.model = dict(self.tags[name])
        kept = {x.name for x in t.list_tags()}
        self.tags = {n: rows for n, rows in self.tags.items() if n in kept}
        self.rows = {i: rows for i, rows in self.rows.items() if i <= target}
        t.remove_orphan_files(older_than=dt.timedelta(0), enforce_retention_duration=False)

    def check(self) -> None:
        t = self.t.refresh()
        kept = retained(t)
        for cid, snap in kept.items():
            for path in changelog_files(t, snap):
                assert t.file_io.exists(path), (cid, path)
            assert changelog_rows(t, snap) == self.rows[cid], cid
        for name, rows in self.tags.items():
            assert sorted((r["id"], r["v"]) for r in t.read(tag=name).to_pylist()) == rows
        assert sorted((r["id"], r["v"]) for r in t.read().to_pylist()) == sorted(
            self.model.items())
        ids = self.changelogs.changelog_ids()
        first = t.snapshot_manager.earliest_snapshot_id()
        if ids:
            assert ids == list(range(ids[0], ids[0] + len(ids)))
            assert ids[-1] <= first  # equal after a rollback to a tag whose snapshot expired
            assert (self.changelogs.earliest_id(), self.changelogs.latest_id()) == (
                ids[0], ids[-1])
        left = t.remove_orphan_files(older_than=dt.timedelta(0), dry_run=True,
                                     enforce_retention_duration=False).deleted
        assert left == [], left


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
          phases=[Phase.explicit, Phase.generate, Phase.shrink],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(steps=histories, producer=st.sampled_from(["lookup", "full-compaction", "none"]),
       retain=st.integers(3, 9), changelog_only=st.booleans())
def test_random_histories_keep_every_retained_changelog(steps, producer, retain,
                                                        changelog_only) -> None:
    with tempfile.TemporaryDirectory() as root:
        h = Harness(root, producer, retain, changelog_only)
        h.history(("write", [0, 1, 2]))
        for step in [*steps, ("expire", None, None, None)]:
            h.step_no += 1
            if step[0] in MAINTENANCE:
                h.maintain(step)
                h.check()
            else:
                h.history(step)
