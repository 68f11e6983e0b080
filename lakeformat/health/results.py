"""The results of table health and of the due-maintenance rules: `BucketHealth`, `TableHealth`,
`DueAction` and `DueReport`, each a dataclass with a plain-dict `to_dict()` (JSON-able: what
Airflow's XCom and the CLI's `--json` carry) and a text form for logs and terminals."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from lakeformat.results import first_of, human_size

#: the kinds of a due action, in the order one table's actions must run (a compaction first,
#: then tag expiry — before snapshot expiry, as Java's commits run them —, the manifest
#: compaction that drops the entries it deleted, then expiry, then the schema files and orphans
#: expiry frees)
ACTION_KINDS = ("full-compact", "compact", "expire-tags", "expire-partitions",
                "compact-manifests", "expire-snapshots", "clean-schemas", "remove-orphans")


@dataclass
class BucketHealth:
    """One (partition, bucket) of the latest snapshot, from its manifest entries alone."""

    partition: str  # path text, "dt=2024-01-02"; "" when unpartitioned
    partition_values: dict[str, Any]
    bucket: int
    sorted_runs: int
    level0_files: int
    max_level: int
    files: int
    rows: int
    bytes: int
    small_files: int
    small_bytes: int
    dv_rows: int
    dv_ratio: float
    #: files whose deletion vector does not record how many rows it marks (counted whole)
    dv_unknown_files: int = 0
    last_compaction_snapshot: int | None = None
    last_compaction_time: str | None = None  # the writer's local wall-clock time, ISO
    debt: float = 0.0

    @property
    def where(self) -> str:
        return f"bucket {self.bucket}" + (f" of {self.partition}" if self.partition else "")

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["partition_values"] = {k: _plain(v) for k, v in self.partition_values.items()}
        return out

    def __str__(self) -> str:
        return (f"{self.where}: {self.sorted_runs} sorted runs ({self.level0_files} at level 0),"
                f" {self.files} files, {self.rows} rows, {human_size(self.bytes)}, "
                f"{self.small_files} small, {self.dv_rows} rows deleted by vectors, "
                f"debt {self.debt:.2f}")


def _plain(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(v)


@dataclass
class TableHealth:
    """A table's state as its metadata tells it: no data file and no deletion-vector file is
    read. `score` 0-100 sums `components` (README: "Table health and due maintenance")."""

    table: str
    snapshot_id: int | None
    computed_at: str
    duration_s: float
    score: int
    components: dict[str, dict[str, Any]]
    buckets: list[BucketHealth]
    totals: dict[str, Any]
    snapshots: dict[str, Any]
    tags: dict[str, Any]
    consumers: dict[str, int]
    schemas: dict[str, Any]
    manifests: dict[str, Any]
    changelog_files: int
    orphans: dict[str, Any] | None = None
    errors: list[str] = field(default_factory=list)
    kind: str = "primary-key"  # or "append"
    #: the option values the figures and the score were computed with
    thresholds: dict[str, Any] = field(default_factory=dict)

    @property
    def max_sorted_runs(self) -> int:
        return max((b.sorted_runs for b in self.buckets), default=0)

    @property
    def worst_bucket(self) -> BucketHealth | None:
        return self.buckets[0] if self.buckets else None

    def bucket(self, bucket: int, partition: str = "") -> BucketHealth | None:
        """The figures of one bucket (None: it holds no live file)."""
        for b in self.buckets:
            if b.bucket == bucket and b.partition == partition:
                return b
        return None

    def summary(self) -> dict[str, Any]:
        """Score, components' health and the headline figures: what before/after reports show."""
        return {"table": self.table, "snapshot_id": self.snapshot_id, "score": self.score,
                "components": {k: round(v["health"], 4) for k, v in self.components.items()},
                "max_sorted_runs": self.max_sorted_runs,
                "files": self.totals.get("files", 0),
                "small_files": self.totals.get("small_files", 0),
                "snapshots": self.snapshots.get("count", 0),
                "expirable_snapshots": self.snapshots.get("expirable", 0)}

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["buckets"] = [b.to_dict() for b in self.buckets]
        out["consumers"] = dict(self.consumers)
        out["schemas"] = {**self.schemas, "kept": {str(k): v for k, v in
                                                   self.schemas.get("kept", {}).items()}}
        return out

    def __str__(self) -> str:
        t = self.totals
        lines = [f"{self.table}: health {self.score}/100 at snapshot {self.snapshot_id} "
                 f"({self.duration_s:.2f}s)"]
        for name, c in self.components.items():
            lines.append(f"  {name}: {c['health']:.2f} x weight {c['weight']:.2f}")
        lines.append(f"  {t.get('buckets', 0)} buckets, {t.get('files', 0)} files "
                     f"({t.get('small_files', 0)} small), {t.get('rows', 0)} rows, "
                     f"{human_size(t.get('bytes', 0))}, at most {self.max_sorted_runs} sorted "
                     "runs in a bucket")
        s = self.snapshots
        lines.append(f"  snapshots {s.get('earliest_id')}..{s.get('latest_id')} "
                     f"({s.get('count', 0)}), {s.get('expirable', 0)} expirable now")
        lines.append(f"  manifests: {self.manifests.get('files', 0)} "
                     f"({self.manifests.get('delete_entries', 0)} DELETE entries); schema files "
                     f"{self.schemas.get('files', 0)}, removable {self.schemas.get('removable')}")
        lines.append(f"  tags {self.tags.get('count', 0)}, consumers {len(self.consumers)}")
        for b in self.buckets[:5]:
            lines.append(f"  {b}")
        if len(self.buckets) > 5:
            lines.append(f"  ... and {len(self.buckets) - 5} more buckets")
        lines += [f"  error: {e}" for e in self.errors]
        return "\n".join(lines)


@dataclass
class DueAction:
    """One piece of maintenance due now on one table: what to run (`kind` and the keyword
    `arguments` of the Table verb that does it), why (`rule`, `reason` with its figures), where
    (`partitions`, `buckets`), how much work (`work_files`, `work_bytes`) and what it is worth
    (`expected_gain` in score points, `benefit` = gain per MiB of work)."""

    table: str
    kind: str
    rule: str
    reason: str
    figures: dict[str, Any] = field(default_factory=dict)
    partitions: list[dict[str, Any]] = field(default_factory=list)
    buckets: list[dict[str, Any]] = field(default_factory=list)
    work_files: int = 0
    work_bytes: int = 0
    urgent: bool = False
    expected_gain: float = 0.0
    benefit: float = 0.0
    arguments: dict[str, Any] = field(default_factory=dict)
    #: where a compaction should run: "local", or "spark" from
    #: `lakeformat.compaction.spark-threshold` bytes of work
    engine: str = "local"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_dict(data: dict[str, Any]) -> DueAction:
        """The action back from its `to_dict()` (e.g. out of an XCom)."""
        known = DueAction.__dataclass_fields__
        return DueAction(**{k: v for k, v in data.items() if k in known})

    def __str__(self) -> str:
        work = (f"{self.work_files} files, {human_size(self.work_bytes)}"
                if self.work_files or self.work_bytes else "metadata only")
        return (f"{self.table}: {self.kind}{' (urgent)' if self.urgent else ''} — "
                f"{self.reason} [{self.rule}; work {work}; +{self.expected_gain:.1f} points]")


@dataclass
class DueReport:
    """What maintenance one table needs now: `actions` ranked (urgent first, then benefit),
    `not_due` the reason each other rule found nothing, `errors` what could not be read."""

    table: str
    snapshot_id: int | None
    actions: list[DueAction]
    not_due: dict[str, str]
    score: int | None
    health: TableHealth | None = None
    errors: list[str] = field(default_factory=list)

    @property
    def due(self) -> bool:
        return bool(self.actions)

    def to_dict(self) -> dict[str, Any]:
        return {"table": self.table, "snapshot_id": self.snapshot_id,
                "actions": [a.to_dict() for a in self.actions], "not_due": dict(self.not_due),
                "score": self.score,
                "health": None if self.health is None else self.health.summary(),
                "errors": list(self.errors), "due": self.due}

    def __str__(self) -> str:
        head = f"{self.table}: " + (f"score {self.score}/100, " if self.score is not None
                                    else "") + (f"{len(self.actions)} actions due"
                                                if self.actions else "nothing due")
        lines = [head] + [f"  {a.kind}: {a.reason}" for a in self.actions]
        lines += [f"  not due, {rule}: {why}" for rule, why in self.not_due.items()]
        lines += [f"  error: {e}" for e in first_of(self.errors)]
        return "\n".join(lines)
