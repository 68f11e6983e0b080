"""Schema evolution across libraries: tables one library evolved, read by the other.

pypaimon 2.1.0 evolves a primary-key table with `catalog.alter_table` and lakeformat reads it;
lakeformat evolves one with `Table.alter` and merge-schema writes and pypaimon reads it. After
every schema change a commit writes new keys and updates old ones, and both libraries must
return the rows of a Python model of the evolving table at the latest snapshot and at every
older snapshot (time travel reads that snapshot's own schema). Old files are mapped by field
id: renamed columns keep their values, dropped-and-re-added columns read null for old rows.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

pytest.importorskip("pypaimon")  # collected only in the interop venv

import pyarrow as pa  # noqa: E402
from pypaimon.schema.data_types import AtomicType  # noqa: E402
from pypaimon.schema.schema_change import Move as PMove  # noqa: E402
from pypaimon.schema.schema_change import SchemaChange as PChange  # noqa: E402

import lakeformat as lf  # noqa: E402
from tests.support.pypaimon_helpers import (  # noqa: E402
    DAYS,
    Row,
    assert_same_rows,
    assert_same_value_types,
    create_paimon_table,
    paimon_read,
    paimon_write,
)

KEYS = ["dt", "id"]
IDENT = "db.evolving"


# -- a model of a deduplicate PK table whose schema evolves -----------------------------------
class EvolvingModel:
    """Rows by key; columns (name -> Paimon type) in table order. Schema changes act on the
    rows the way reading old files by field id must: added columns are null, renamed ones keep
    their values, dropped ones vanish."""

    def __init__(self, columns: dict[str, str]):
        self.columns = dict(columns)
        self.rows: dict[tuple[Any, ...], Row] = {}
        self.by_snapshot: dict[int, tuple[list[str], list[Row]]] = {}

    def add(self, name: str, type_: str, first: bool = False, after: str | None = None) -> None:
        items = list(self.columns.items())
        at = 0 if first else (list(self.columns).index(after) + 1 if after else len(items))
        items.insert(at, (name, type_))
        self.columns = dict(items)
        for r in self.rows.values():
            r[name] = None

    def rename(self, old: str, new: str) -> None:
        self.columns = {(new if k == old else k): v for k, v in self.columns.items()}
        for r in self.rows.values():
            r[new] = r.pop(old)

    def drop(self, name: str) -> None:
        del self.columns[name]
        for r in self.rows.values():
            del r[name]

    def retype(self, name: str, type_: str) -> None:
        self.columns[name] = type_  # widening keeps every Python value

    def upsert(self, rows: list[Row], snapshot_id: int) -> None:
        for row in rows:
            self.rows[(row["dt"], row["id"])] = {c: row.get(c) for c in self.columns}
        self.by_snapshot[snapshot_id] = (list(self.columns), self.expected())

    def expected(self) -> list[Row]:
        return [{c: r[c] for c in self.columns}
                for _, r in sorted(self.rows.items(), key=lambda kv: kv[0])]


def value(type_: str, name: str, i: int, step: int) -> Any:
    """A value of `type_` that says which commit wrote it; floats are exact in FLOAT."""
    if type_.endswith("NOT NULL"):
        type_ = type_[:-len(" NOT NULL")]
    if type_ in ("INT", "BIGINT"):
        return i * 100 + step + (2**40 if type_ == "BIGINT" else 0)
    if type_ == "FLOAT":
        return i + step + 0.5
    if type_ == "DOUBLE":
        return i + step + 0.1
    if type_.startswith("DECIMAL"):
        scale = int(type_.rstrip(")").split(",")[1])
        digits = 10 ** (int(type_.split("(")[1].split(",")[0]) - scale - 1)
        return Decimal((i * 1009 + step) % digits).scaleb(-scale) + Decimal(step).scaleb(-scale)
    return f"{name}-{i}-s{step}"


def commit_rows(model: EvolvingModel, step: int, key_ids: list[int],
                columns: dict[str, str] | None = None) -> list[Row]:
    """New keys plus updates of two old ones, with values for `columns` (default: all)."""
    cols = columns if columns is not None else model.columns
    ids = key_ids + ([0, 1] if step else [])
    return [{"dt": DAYS[i % 2], "id": i,
             **{c: value(t, c, i, step) for c, t in cols.items() if c not in KEYS}}
            for i in ids]


def assert_all_snapshots(model: EvolvingModel, read: Callable[[int | None], pa.Table],
                         who: str) -> None:
    latest = max(model.by_snapshot)
    for snapshot_id in [None, *sorted(model.by_snapshot)]:
        columns, rows = model.by_snapshot[snapshot_id or latest]
        got = read(snapshot_id)
        assert got.column_names == columns, f"{who} snapshot {snapshot_id}: {got.column_names}"
        assert_same_rows(got, rows, KEYS, f"{who} snapshot {snapshot_id}")


def assert_filtered_reads(model: EvolvingModel, lt: lf.Table, table: Any) -> None:
    """Filters and projections by current names reach old files through field ids: a filter on
    a widened column, on a renamed column (stats of files written under the old name), and on
    the partition column, in both libraries."""
    columns = ["id", "s_renamed", "a", "c_after"]
    cases = [
        ([("a", ">=", 1000)], lambda b: b.greater_or_equal("a", 1000),
         lambda r: r["a"] is not None and r["a"] >= 1000),
        ([("s_renamed", "=", "s-2-s0")], lambda b: b.equal("s_renamed", "s-2-s0"),
         lambda r: r["s_renamed"] == "s-2-s0"),
        ([("dt", "=", DAYS[1])], lambda b: b.equal("dt", DAYS[1]), lambda r: r["dt"] == DAYS[1]),
        # c_after was dropped (INT) and added again (STRING): only the new column's values
        ([("c_after", ">=", "c")], lambda b: b.greater_or_equal("c_after", "c"),
         lambda r: r["c_after"] is not None),
    ]
    for lake_filter, paimon_filter, keep in cases:
        want = sorted(({c: r[c] for c in columns} for r in model.expected() if keep(r)),
                      key=lambda r: r["id"])
        assert want, lake_filter
        assert_same_rows(lt.read(columns=columns, filter=lake_filter), want, ["id"],
                         f"lakeformat {lake_filter}")
        # (pypaimon's predicate builder only knows projected fields: project afterwards)
        assert_same_rows(paimon_read(table, predicate=paimon_filter).select(columns), want,
                         ["id"], f"pypaimon {lake_filter}")


def _plain(node: Any) -> Any:
    """pypaimon's to_dict of a nested type carries "nullable": bool where Paimon's JSON writes
    "ROW NOT NULL"; fold it back so the two spellings compare."""
    if isinstance(node, list):
        return [_plain(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: _plain(v) for k, v in node.items() if k != "nullable"}
    if node.get("nullable") is False:
        out["type"] += " NOT NULL"
    return out


def schema_files_agree(lt: lf.Table, paimon: Any) -> None:
    """pypaimon's SchemaManager parses every schema file lakeformat holds, field for field."""
    pschemas = paimon.get_table(IDENT).schema_manager.list_all()
    lschemas = lt.schemas()
    assert [s.id for s in pschemas] == [s.id for s in lschemas] == list(range(len(lschemas)))
    for p, ls in zip(pschemas, lschemas):
        raw = json.loads(lt.file_io.read_bytes(lt.schema_manager.schema_path(ls.id)))
        assert _plain([f.to_dict() for f in p.fields]) == raw["fields"], f"schema {ls.id}"
        assert p.highest_field_id == raw["highestFieldId"]
        assert (p.primary_keys, p.partition_keys, p.options) == (
            raw["primaryKeys"], raw["partitionKeys"], raw["options"])


# -- pypaimon evolves, lakeformat reads ---------------------------------------------------------
BASE = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("a", pa.int32()),
                  ("f", pa.float32()), ("s", pa.string()), ("extra", pa.string()),
                  pa.field("n", pa.int32(), nullable=False)])
BASE_TYPES = {"dt": "STRING", "id": "BIGINT", "a": "INT", "f": "FLOAT", "s": "STRING",
              "extra": "STRING", "n": "INT"}


def paimon_steps() -> list[tuple[list[Any], Callable[[EvolvingModel], None]]]:
    """(pypaimon changes, the same change on the model), one alter_table each."""
    t = AtomicType
    return [
        ([PChange.add_column("c_end", t("DOUBLE"))], lambda m: m.add("c_end", "DOUBLE")),
        ([PChange.add_column("c_first", t("STRING"), move=PMove.first("c_first"))],
         lambda m: m.add("c_first", "STRING", first=True)),
        ([PChange.add_column("c_after", t("INT"), move=PMove.after("c_after", "a"))],
         lambda m: m.add("c_after", "INT", after="a")),
        ([PChange.rename_column("s", "s_renamed")], lambda m: m.rename("s", "s_renamed")),
        ([PChange.drop_column("extra")], lambda m: m.drop("extra")),
        ([PChange.update_column_type("a", t("BIGINT")),
          PChange.update_column_type("f", t("DOUBLE"))],
         lambda m: (m.retype("a", "BIGINT"), m.retype("f", "DOUBLE"))),
        ([PChange.set_option("snapshot.num-retained.max", "50"),
          PChange.update_column_comment("a", "amount, widened"),
          PChange.update_column_nullability("n", True)], lambda m: None),
        ([PChange.remove_option("snapshot.num-retained.max")], lambda m: None),
        ([PChange.drop_column("c_after")], lambda m: m.drop("c_after")),
        ([PChange.add_column("c_after", t("STRING"))], lambda m: m.add("c_after", "STRING")),
    ]


@pytest.mark.parametrize("partitioned", [True, False], ids=["partitioned", "unpartitioned"])
def test_lakeformat_reads_table_pypaimon_evolved_at_every_snapshot(
        paimon: Any, lake: Any, partitioned: bool) -> None:
    table = create_paimon_table(paimon, IDENT, BASE, primary_keys=KEYS,
                                partition_keys=["dt"] if partitioned else [],
                                options={"bucket": "2"})
    model = EvolvingModel(BASE_TYPES)
    model.upsert(rows := commit_rows(model, 0, list(range(6))), paimon_write(table, rows))
    for step, (changes, on_model) in enumerate(paimon_steps(), start=1):
        paimon.alter_table(IDENT, changes)
        on_model(model)
        table = paimon.get_table(IDENT)
        rows = commit_rows(model, step, [10 * step + j for j in range(3)])
        if step >= 7:
            rows[-1]["n"] = None  # n became nullable
        model.upsert(rows, paimon_write(table, rows))

    lt = lake.get_table(IDENT)
    assert [s.id for s in lt.schemas()] == list(range(len(paimon_steps()) + 1))
    assert "snapshot.num-retained.max" not in lt.options
    assert lt.table_schema.field("a").description == "amount, widened"
    assert_all_snapshots(model, lambda s: lt.read(snapshot_id=s), "lakeformat")
    assert_all_snapshots(model, lambda s: paimon_read(table, snapshot_id=s), "pypaimon")
    assert_same_value_types(lt.read().schema, paimon_read(table).schema)
    assert_filtered_reads(model, lt, table)


def test_lakeformat_reads_pypaimon_drop_then_readd_by_field_id(paimon: Any, lake: Any) -> None:
    """The mission's field-id case, altered by pypaimon: (id, name, age, dt); drop name; add
    new_col after id; add name again -> old rows read null for name, age and dt unshifted."""
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("age", pa.int32()),
                        ("dt", pa.string())])
    table = create_paimon_table(paimon, IDENT, schema, primary_keys=["dt", "id"],
                                partition_keys=["dt"], options={"bucket": "2"})
    s1 = paimon_write(table, [{"id": i, "name": f"old{i}", "age": 20 + i, "dt": DAYS[0]}
                              for i in range(4)])
    paimon.alter_table(IDENT, [PChange.drop_column("name")])
    paimon.alter_table(IDENT, [PChange.add_column("new_col", AtomicType("STRING"),
                                                  move=PMove.after("new_col", "id"))])
    s2 = paimon_write(paimon.get_table(IDENT), [{"id": 9, "new_col": "x", "age": 9,
                                                 "dt": DAYS[0]}])
    paimon.alter_table(IDENT, [PChange.add_column("name", AtomicType("STRING"))])
    table = paimon.get_table(IDENT)
    s3 = paimon_write(table, [{"id": 3, "new_col": "y", "age": 33, "dt": DAYS[0],
                               "name": "new3"}])
    lt = lake.get_table(IDENT)
    want = ([{"id": i, "new_col": None, "age": 20 + i, "dt": DAYS[0], "name": None}
             for i in range(3)]
            + [{"id": 3, "new_col": "y", "age": 33, "dt": DAYS[0], "name": "new3"},
               {"id": 9, "new_col": "x", "age": 9, "dt": DAYS[0], "name": None}])
    assert_same_rows(lt.read(), want, ["id"], "lakeformat latest")
    assert_same_rows(paimon_read(table), want, ["id"], "pypaimon latest")
    assert_same_rows(lt.read(snapshot_id=s1), [
        {"id": i, "name": f"old{i}", "age": 20 + i, "dt": DAYS[0]} for i in range(4)],
        ["id"], "lakeformat snapshot 1")
    at_s2 = [{"id": i, "new_col": None, "age": 20 + i, "dt": DAYS[0]} for i in range(4)] + [
        {"id": 9, "new_col": "x", "age": 9, "dt": DAYS[0]}]
    assert_same_rows(lt.read(snapshot_id=s2), at_s2, ["id"], "lakeformat snapshot 2")
    assert_same_rows(paimon_read(table, snapshot_id=s2), at_s2, ["id"], "pypaimon snapshot 2")
    assert s3 == s2 + 1


# -- lakeformat evolves, pypaimon reads ---------------------------------------------------------
LAKE_BASE = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("a", pa.int32()),
                       ("f", pa.float32()), ("d", pa.decimal128(10, 2)), ("s", pa.string()),
                       ("extra", pa.string()), ("w", pa.int32())])
LAKE_TYPES = {"dt": "STRING", "id": "BIGINT", "a": "INT", "f": "FLOAT", "d": "DECIMAL(10, 2)",
              "s": "STRING", "extra": "STRING", "w": "INT"}
ARROW = {"STRING": pa.string(), "BIGINT": pa.int64(), "INT": pa.int32(), "FLOAT": pa.float32(),
         "DOUBLE": pa.float64(), "DECIMAL(10, 2)": pa.decimal128(10, 2),
         "DECIMAL(14, 2)": pa.decimal128(14, 2)}


def arrow_rows(rows: list[Row], columns: dict[str, str]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=pa.schema([(c, ARROW[t])
                                                        for c, t in columns.items()]))


def lake_steps() -> list[tuple[Any, Callable[[EvolvingModel], None]]]:
    """(lakeformat changes, or ("merge", new columns) for a merge-schema write; model change)."""
    c = lf.SchemaChange
    return [
        ([c.add_column("c_end", "DOUBLE")], lambda m: m.add("c_end", "DOUBLE")),
        ([c.add_column("c_first", "STRING", first=True)],
         lambda m: m.add("c_first", "STRING", first=True)),
        ([c.add_column("c_after", "INT", after="a")], lambda m: m.add("c_after", "INT", after="a")),
        ([c.rename_column("s", "s_renamed")], lambda m: m.rename("s", "s_renamed")),
        ([c.drop_column("extra")], lambda m: m.drop("extra")),
        ([c.update_column_type("a", "BIGINT"), c.update_column_type("f", "DOUBLE"),
          c.update_column_type("d", "DECIMAL(14, 2)")],
         lambda m: (m.retype("a", "BIGINT"), m.retype("f", "DOUBLE"),
                    m.retype("d", "DECIMAL(14, 2)"))),
        # merge-schema: a new column m1 and w widened INT -> BIGINT by the data's type
        (("merge", {"m1": "STRING", "w": "BIGINT"}),
         lambda m: (m.add("m1", "STRING"), m.retype("w", "BIGINT"))),
        # merge-schema with only keys and a new column: every other column written null
        (("merge-only", {"m2": "DOUBLE"}), lambda m: m.add("m2", "DOUBLE")),
        ([c.drop_column("c_after")], lambda m: m.drop("c_after")),
        ([c.add_column("c_after", "STRING", after="a")],
         lambda m: m.add("c_after", "STRING", after="a")),
    ]


@pytest.mark.parametrize("partitioned", [True, False], ids=["partitioned", "unpartitioned"])
def test_pypaimon_reads_table_lakeformat_evolved_at_every_snapshot(
        paimon: Any, lake: Any, partitioned: bool) -> None:
    lt = lake.create_table(IDENT, LAKE_BASE, primary_keys=KEYS,
                           partition_keys=["dt"] if partitioned else [], options={"bucket": "2"})
    model = EvolvingModel(LAKE_TYPES)
    rows = commit_rows(model, 0, list(range(6)))
    model.upsert(rows, lt.write(arrow_rows(rows, model.columns)).snapshot_id)
    for step, (changes, on_model) in enumerate(lake_steps(), start=1):
        new_keys = [10 * step + j for j in range(3)]
        if isinstance(changes, tuple):
            kind, new_cols = changes
            on_model(model)
            cols = ({k: model.columns[k] for k in KEYS} | new_cols if kind == "merge-only"
                    else model.columns)
            rows = commit_rows(model, step, new_keys, cols)
            res = lt.write(arrow_rows(rows, cols), merge_schema=True)
        else:
            lt.alter(changes)
            on_model(model)
            rows = commit_rows(model, step, new_keys)
            res = lt.write(arrow_rows(rows, model.columns))
        model.upsert(rows, res.snapshot_id)

    assert [s.id for s in lt.schemas()] == list(range(len(lake_steps()) + 1))
    assert [(f.name, str(f.type)) for f in lt.table_schema.fields] == [
        (c, t if c not in KEYS else f"{t} NOT NULL") for c, t in model.columns.items()]
    schema_files_agree(lt, paimon)
    table = paimon.get_table(IDENT)
    assert_all_snapshots(model, lambda s: lt.read(snapshot_id=s), "lakeformat")
    assert_all_snapshots(model, lambda s: paimon_read(table, snapshot_id=s), "pypaimon")
    assert_same_value_types(paimon_read(table).schema, lt.read().schema)
    assert_filtered_reads(model, lt, table)


def test_pypaimon_reads_lakeformat_drop_then_readd_by_field_id(paimon: Any, lake: Any) -> None:
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("age", pa.int32()),
                        ("dt", pa.string())])
    lt = lake.create_table(IDENT, schema, primary_keys=["dt", "id"], partition_keys=["dt"],
                           options={"bucket": "2"})
    lt.write(pa.Table.from_pylist([{"id": i, "name": f"old{i}", "age": 20 + i, "dt": DAYS[0]}
                                   for i in range(4)], schema=schema))
    lt.alter([lf.SchemaChange.drop_column("name")])
    lt.alter([lf.SchemaChange.add_column("new_col", "STRING", after="id")])
    lt.write(pa.table({"id": [9], "new_col": ["x"], "age": pa.array([9], pa.int32()),
                       "dt": [DAYS[0]]}))
    lt.alter([lf.SchemaChange.add_column("name", "STRING")])
    lt.write(pa.table({"id": [3], "new_col": ["y"], "age": pa.array([33], pa.int32()),
                       "dt": [DAYS[0]], "name": ["new3"]}))
    want = ([{"id": i, "new_col": None, "age": 20 + i, "dt": DAYS[0], "name": None}
             for i in range(3)]
            + [{"id": 3, "new_col": "y", "age": 33, "dt": DAYS[0], "name": "new3"},
               {"id": 9, "new_col": "x", "age": 9, "dt": DAYS[0], "name": None}])
    schema_files_agree(lt, paimon)
    assert_same_rows(lt.read(), want, ["id"], "lakeformat latest")
    assert_same_rows(paimon_read(paimon.get_table(IDENT)), want, ["id"], "pypaimon latest")
    old = paimon_read(paimon.get_table(IDENT), snapshot_id=1)
    assert_same_rows(old, [{"id": i, "name": f"old{i}", "age": 20 + i, "dt": DAYS[0]}
                           for i in range(4)], ["id"], "pypaimon snapshot 1")


ROW_T = pa.struct([("x", pa.int32()), ("z", pa.string())])
NESTED = pa.schema([pa.field("id", pa.int64(), nullable=False), ("r", ROW_T)])


@pytest.mark.parametrize("evolver", ["pypaimon", "lakeformat"])
def test_nested_row_fields_added_renamed_widened_read_by_both(
        paimon: Any, lake: Any, evolver: str) -> None:
    """ROW fields: add r.y after r.x, rename r.z -> r.zz, widen r.x INT -> BIGINT; old rows
    keep x and z's value under the new name and read null for y. The lakeformat side also adds
    r.w by a merge-schema write."""
    first = [{"id": 1, "r": {"x": 1, "z": "a"}}, {"id": 2, "r": None}]
    if evolver == "pypaimon":
        t = create_paimon_table(paimon, IDENT, NESTED, primary_keys=["id"],
                                options={"bucket": "2"})
        paimon_write(t, first)
        for change in [PChange.add_column(["r", "y"], AtomicType("INT"),
                                          move=PMove.after("y", "x")),
                       PChange.rename_column(["r", "z"], "zz"),
                       PChange.update_column_type(["r", "x"], AtomicType("BIGINT"))]:
            paimon.alter_table(IDENT, [change])
        paimon_write(paimon.get_table(IDENT), [{"id": 3, "r": {"x": 2**40, "y": 30, "zz": "c"}}])
    else:
        lt = lake.create_table(IDENT, NESTED, primary_keys=["id"], options={"bucket": "2"})
        lt.write(pa.Table.from_pylist(first, schema=NESTED))
        c = lf.SchemaChange
        for change in [c.add_column(["r", "y"], "INT", after="x"),
                       c.rename_column(["r", "z"], "zz"),
                       c.update_column_type(["r", "x"], "BIGINT")]:
            lt.alter([change])
        lt.write(pa.Table.from_pylist([{"id": 3, "r": {"x": 2**40, "y": 30, "zz": "c"}}],
                                      schema=lt.schema))
        wider = pa.struct([("x", pa.int64()), ("y", pa.int32()), ("zz", pa.string()),
                           ("w", pa.float64())])
        lt.write(pa.table({"id": pa.array([4], pa.int64()),
                           "r": pa.array([{"x": 4, "y": 40, "zz": "d", "w": 0.5}], wider)}),
                 merge_schema=True)
    want = [{"id": 1, "r": {"x": 1, "y": None, "zz": "a"}}, {"id": 2, "r": None},
            {"id": 3, "r": {"x": 2**40, "y": 30, "zz": "c"}}]
    if evolver == "lakeformat":
        want = [{"id": r["id"], "r": r["r"] and {**r["r"], "w": None}} for r in want]
        want.append({"id": 4, "r": {"x": 4, "y": 40, "zz": "d", "w": 0.5}})
        schema_files_agree(lake.get_table(IDENT), paimon)
    table = paimon.get_table(IDENT)
    lake_rows, paimon_rows = lake.get_table(IDENT).read(), paimon_read(table)
    assert_same_rows(lake_rows, want, ["id"], "lakeformat")
    assert_same_rows(paimon_rows, want, ["id"], "pypaimon")
    assert_same_value_types(lake_rows.schema, paimon_rows.schema)
    assert_same_rows(lake.get_table(IDENT).read(snapshot_id=1), first, ["id"], "snapshot 1")
