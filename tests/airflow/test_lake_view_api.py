"""The Lake view's app inside Airflow's own API app (`create_app()`, the provider's plugin
mounted by Airflow as the API server mounts it), in process through FastAPI's TestClient,
against warehouses on the moto S3 server: the JSON API equals `Table.health()` /
`Table.maintenance_due()`; anonymous requests are refused (401, or 307 to Airflow's login for a
page) and so is a user the auth manager refuses (403), while the static files are public;
names that look like paths are refused (400); a table with a broken manifest shows its error
while the others list; no secret of a connection appears in a page or an answer; the health
cache serves warm and sees a new snapshot; a maintenance run's task shows on the pages with a
link to it, for its own connection's table only; a setting the view cannot use is answered
500 naming it.

Every warehouse is on S3: what the view reads (snapshot hints, listings, manifests over HTTP)
and how it fails there is the point. The browser test (`test_lake_view_browser.py`) drives the
same pages in chromium against a real API server.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat_airflow import lake_view
from tests.support.s3server import boto3_client

LOGIN = "lv-login-AKIA7QX2"
PASSWORD = "lv-secret-9fk2mq7zr"  # lower case: it names a bucket below
SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False),
                    pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])
VOLATILE = {"computed_at", "duration_s"}


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """The provider's FastAPI app as Airflow's plugin manager hands it to the API server,
    mounted at its `url_prefix` as the server mounts it, with Airflow's auth manager (the
    API server's whole app costs 5 s more to build and adds nothing the view uses; the
    browser test runs the real server)."""
    from airflow import plugins_manager
    from airflow.api_fastapi.app import create_auth_manager
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AIRFLOW__API_AUTH__JWT_SECRET", "lake-view-test-" + "k" * 64)
        apps, _ = plugins_manager.get_fastapi_plugins()
        [lake] = [a for a in apps if a["name"] == "lakeformat lake view"]
        assert lake["url_prefix"] == "/lakeformat"
        root = FastAPI()
        root.mount(lake["url_prefix"], lake["app"])
        create_auth_manager()
        with TestClient(root) as c:
            yield c


def _token(role: str | None = "viewer", name: str = "lv-user") -> dict[str, str]:
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    token = get_auth_manager().generate_jwt(SimpleAuthManagerUser(username=name, role=role))
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture()
def auth(client) -> dict[str, str]:
    return _token()


@pytest.fixture()
def lake(s3_warehouse, monkeypatch) -> lf.Catalog:
    """`lakeformat_default` on a fresh S3 warehouse (login/password are the S3 keys; moto
    takes any) as the view's only connection, and an empty view cache."""
    from lakeformat_airflow.lake_view import service

    uri, options = s3_warehouse
    extra = {k: v for k, v in options.items() if k not in ("s3.access-key", "s3.secret-key")}
    monkeypatch.setenv("AIRFLOW_CONN_LAKEFORMAT_DEFAULT", json.dumps(
        {"conn_type": "lakeformat", "host": uri, "login": LOGIN, "password": PASSWORD,
         "extra": extra}))
    monkeypatch.setenv("AIRFLOW__LAKEFORMAT__LAKE_VIEW_CONNECTIONS", "lakeformat_default")
    service.clear()
    cat = lf.Catalog(uri, options={**options, "s3.access-key": LOGIN,
                                   "s3.secret-key": PASSWORD})
    cat.create_database("db")
    yield cat
    service.clear()


def _write(cat: lf.Catalog, name: str, commits: int, buckets: int = 2) -> lf.Table:
    t = cat.create_table(name, SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                         options={"bucket": str(buckets)})
    ids = np.arange(16, dtype=np.int64)
    for i in range(commits):
        t.write(pa.table({"dt": ["2024-01-01"] * 8 + ["2024-01-02"] * 8, "id": ids,
                          "v": np.full(16, i, dtype=np.int64)}, schema=SCHEMA))
    return t


def _stable(value: Any) -> Any:
    """`value` without the fields that differ between two reads of the same state."""
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def _rows(html: str, table_id: str) -> str:
    match = re.search(rf'<table id="{table_id}".*?</table>', html, re.S)
    assert match, f"no table #{table_id}"
    return match.group(0)


def _cell(row_html: str, cls: str) -> str:
    match = re.search(rf'<td class="{cls}[^"]*"[^>]*>(.*?)</td>', row_html, re.S)
    assert match, f"no cell .{cls} in {row_html}"
    return re.sub(r"<[^>]+>", "", match.group(1))


def _list_row(html: str, name: str) -> str:
    match = re.search(rf'<tr[^>]*data-table="{re.escape(name)}".*?</tr>', html, re.S)
    assert match, f"no row of {name}"
    return match.group(0)


def test_json_and_pages_equal_health_and_due(client, auth, lake):
    hot, clean = _write(lake, "db.hot", 6), _write(lake, "db.clean", 1)
    clean.compact(full=True)

    listed = client.get("/lakeformat/api/tables", headers=auth)
    assert listed.status_code == 200, listed.text
    rows = {r["table"]: r for r in listed.json()}
    assert sorted(rows) == ["db.clean", "db.hot"]
    for name, t in (("db.hot", hot), ("db.clean", clean)):
        assert rows[name]["connection"] == "lakeformat_default"
        assert rows[name]["error"] is None
        assert _stable(rows[name]["report"]) == _stable(t.maintenance_due().to_dict())

    one = client.get("/lakeformat/api/tables/db/hot", params={"conn": "lakeformat_default"},
                     headers=auth)
    assert one.status_code == 200, one.text
    assert _stable(one.json()) == {"health": _stable(hot.health().to_dict()),
                                   "due": _stable(hot.maintenance_due().to_dict())}
    assert [a["kind"] for a in one.json()["due"]["actions"]] == ["compact"]

    snaps = client.get("/lakeformat/api/tables/db/clean/snapshots", headers=auth).json()
    assert [s["snapshot_id"] for s in snaps] == [s.id for s in clean.snapshots()]
    assert [s["commit_kind"] for s in snaps] == ["APPEND", "COMPACT"]

    # the list page: a row per table with the figures of health()
    page = client.get("/lakeformat/", headers=auth)
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    health = hot.health()
    row = _list_row(_rows(page.text, "lake-tables"), "db.hot")
    assert 'data-connection="lakeformat_default"' in row
    assert _cell(row, "score") == str(health.score)
    assert _cell(row, "sorted-runs") == str(health.totals["max_sorted_runs"]) == "6"
    assert _cell(row, "small-files") == str(health.totals["small_files"])
    assert _cell(row, "snapshots") == str(health.snapshots["count"])
    assert _cell(row, "schema-files") == str(health.schemas["files"])
    assert _cell(row, "due") == "compact"
    assert _cell(_list_row(page.text, "db.clean"), "due") == "\u2014"
    # the table page: score, a heat-map cell per bucket with its runs, the due action
    table_page = client.get("/lakeformat/tables/db/hot", headers=auth)
    assert table_page.status_code == 200, table_page.text
    text = table_page.text
    assert '<h1 id="table-name">db.hot</h1>' in text
    assert re.search(r'<span id="score"[^>]*>(\d+)</span>', text).group(1) == str(health.score)
    cells = re.findall(r'<rect class="cell"[^>]*data-partition="([^"]*)" data-bucket="(\d+)" '
                       r'data-runs="(\d+)"', text)
    assert sorted(cells) == sorted((b.partition, str(b.bucket), str(b.sorted_runs))
                                   for b in health.buckets)
    assert re.search(r'<tr data-kind="compact"[^>]*>.*?<td class="reason">[^<]*sorted runs',
                     _rows(text, "due"), re.S)
    assert ('<button id="trigger" type="button" data-dag="lakeformat_on_debt" '
            'data-tables="db.hot"') in text
    assert sorted(re.findall(r'<tr data-snapshot="(\d+)"', _rows(text, "snapshots"))) == \
        sorted(str(s.id) for s in hot.snapshots())
    assert 'data-schema="0"' in _rows(text, "schemas")
    # no CDN: the page loads only the package's own files, which the app serves
    assert not re.search(r'(src|href)="(https?:)?//', page.text + text)
    assert client.get("/lakeformat/static/lake.js").status_code == 200


def test_anonymous_and_refused_users(client, lake):
    _write(lake, "db.t", 1)
    for path in ("/lakeformat/api/tables", "/lakeformat/api/tables/db/t",
                 "/lakeformat/api/tables/db/t/snapshots"):
        r = client.get(path)
        assert r.status_code == 401, (path, r.text)
        assert "db.t" not in r.text
    for path in ("/lakeformat/", "/lakeformat/tables/db/t?conn=lakeformat_default"):
        r = client.get(path, follow_redirects=False)
        assert r.status_code == 307, (path, r.text)
        assert r.headers["location"].startswith("/api/v2/auth/login?next=")
        assert "%2Flakeformat%2F" in r.headers["location"]
    # a token that is no token, and a user the auth manager gives no role
    assert client.get("/lakeformat/api/tables",
                      headers={"Authorization": "Bearer junk"}).status_code == 403
    nobody = _token(role=None, name="nobody")
    assert client.get("/lakeformat/api/tables", headers=nobody).status_code == 403
    assert client.get("/lakeformat/", headers=nobody,
                      follow_redirects=False).status_code == 403
    # the static files are served to anyone: the page's own script, style and icon, no data
    static = Path(lake_view.__file__).with_name("static")
    assert {p.suffix for p in static.iterdir()} <= {".css", ".js", ".svg"}
    for p in static.iterdir():
        assert client.get(f"/lakeformat/static/{p.name}").status_code == 200, p.name
    # the UI's cookie works as the Bearer header does
    cookie = _token()["Authorization"].split(" ", 1)[1]
    client.cookies.set("_token", cookie)
    try:
        assert client.get("/lakeformat/api/tables").status_code == 200
    finally:
        client.cookies.clear()


def test_names_that_look_like_paths_are_refused(client, auth, lake):
    _write(lake, "db.t", 1)
    for path in ("/lakeformat/api/tables/db/%2E%2E", "/lakeformat/api/tables/%2E%2E/t",
                 "/lakeformat/api/tables/db/..x", "/lakeformat/api/tables/db/%2E%2E/snapshots",
                 "/lakeformat/api/tables/db/t%24snapshots", "/lakeformat/api/tables/db/%20t"):
        r = client.get(path, headers=auth)
        assert r.status_code == 400, (path, r.text)
        assert "invalid" in r.json()["detail"]
    page = client.get("/lakeformat/tables/%2E%2E/t", headers=auth)
    assert page.status_code == 400 and "invalid database name" in page.text
    # a connection the view does not list is never opened
    assert client.get("/lakeformat/api/tables/db/t", params={"conn": "aws_default"},
                      headers=auth).status_code == 404
    assert client.get("/lakeformat/api/tables/db/missing", headers=auth).status_code == 404


def test_broken_manifest_shows_its_error_and_the_rest_list(client, auth, lake, s3_server):
    for name in ("db.a", "db.broken", "db.c"):
        _write(lake, name, 2)
    bucket, prefix = lake.warehouse.removeprefix("s3://").split("/", 1)
    s3 = boto3_client(s3_server)
    keys = [o["Key"] for o in s3.list_objects_v2(
        Bucket=bucket, Prefix=f"{prefix}/db.db/broken/manifest/manifest-")["Contents"]
        if not o["Key"].rsplit("/", 1)[-1].startswith("manifest-list-")]
    assert keys
    for key in keys:
        s3.put_object(Bucket=bucket, Key=key, Body=b"not an avro file")

    rows = {r["table"]: r for r in client.get("/lakeformat/api/tables", headers=auth).json()}
    assert rows["db.broken"]["report"] is None and rows["db.broken"]["error"]
    for name in ("db.a", "db.c"):
        assert rows[name]["error"] is None
        assert rows[name]["report"]["score"] == lake.get_table(name).health().score
    page = client.get("/lakeformat/", headers=auth).text
    broken = _list_row(page, "db.broken")
    assert broken.startswith('<tr class="error"')
    assert html.unescape(_cell(broken, "error-text")) == rows["db.broken"]["error"]
    for name in ("db.a", "db.c"):
        assert _cell(_list_row(page, name), "score").isdigit()
    r = client.get("/lakeformat/api/tables/db/broken", headers=auth)
    assert r.status_code == 502 and r.json()["detail"] == rows["db.broken"]["error"]
    assert client.get("/lakeformat/tables/db/broken", headers=auth).status_code == 502


def test_no_secret_in_pages_or_answers(client, auth, lake, monkeypatch, s3_server):
    _write(lake, "db.t", 1)
    # a second connection whose bucket does not exist, named after its secret: the error
    # the store gives names it, and the view shows that error redacted
    monkeypatch.setenv("AIRFLOW_CONN_LF_DOWN", json.dumps(
        {"conn_type": "lakeformat", "host": f"s3://{PASSWORD}-missing/wh", "login": LOGIN,
         "password": PASSWORD, "extra": {"s3.endpoint": s3_server, "s3.region": "us-east-1"}}))
    monkeypatch.setenv("AIRFLOW__LAKEFORMAT__LAKE_VIEW_CONNECTIONS", "lakeformat_default,lf_down")
    answers = [client.get(p, headers=auth) for p in (
        "/lakeformat/", "/lakeformat/api/tables", "/lakeformat/tables/db/t",
        "/lakeformat/api/tables/db/t", "/lakeformat/api/tables/db/t/snapshots",
        "/lakeformat/api/tables/db/t?conn=lf_down")]
    rows = answers[1].json()
    down = [r for r in rows if r["connection"] == "lf_down"]
    assert down and all(r["error"] and r["report"] is None for r in down), rows
    assert [r["table"] for r in rows if r["connection"] == "lakeformat_default"] == ["db.t"]
    for r in answers:
        assert PASSWORD not in r.text and LOGIN not in r.text, r.url


def test_cache_serves_warm_and_sees_a_new_snapshot(client, auth, lake, monkeypatch):
    monkeypatch.setenv("AIRFLOW__LAKEFORMAT__LAKE_VIEW_TTL", "600")
    hot = _write(lake, "db.hot", 2)
    _write(lake, "db.other", 1)

    def listed(cache: str) -> dict[str, dict[str, Any]]:
        r = client.get("/lakeformat/api/tables", headers=auth)
        assert r.headers["X-Lake-Cache"] == cache
        return {row["table"]: row["report"] for row in r.json()}

    def one(name: str, cache: str) -> dict[str, Any]:
        r = client.get(f"/lakeformat/api/tables/db/{name}", headers=auth)
        assert r.headers["X-Lake-Cache"] == cache
        return r.json()

    first = listed("hit=0 revalidated=0 computed=2")
    assert listed("hit=2 revalidated=0 computed=0") == first  # warm: no store read
    # a table's own answer checks its snapshot ids every time: unchanged, nothing computed
    assert one("hot", "revalidated")["due"]["snapshot_id"] == 2
    hot.write(pa.table({"dt": ["2024-01-03"], "id": [1], "v": [9]}, schema=SCHEMA))
    # within the TTL the list serves what it had; the table's answer sees the new snapshot
    assert listed("hit=2 revalidated=0 computed=0")["db.hot"]["snapshot_id"] == 2
    fresh = one("hot", "computed")
    assert fresh["due"]["snapshot_id"] == 3
    assert _stable(fresh) == {"health": _stable(hot.health().to_dict()),
                              "due": _stable(hot.maintenance_due().to_dict())}
    assert listed("hit=2 revalidated=0 computed=0")["db.hot"]["snapshot_id"] == 3
    # past the TTL the list revalidates every table and computes only the changed one
    monkeypatch.setenv("AIRFLOW__LAKEFORMAT__LAKE_VIEW_TTL", "0")
    hot.write(pa.table({"dt": ["2024-01-03"], "id": [2], "v": [9]}, schema=SCHEMA))
    assert listed("hit=0 revalidated=1 computed=1")["db.hot"]["snapshot_id"] == 4
    # expiry changes health without a new snapshot: the earliest id is part of the key
    hot.expire_snapshots(retain_min=1, retain_max=1)
    assert listed("hit=0 revalidated=1 computed=1")["db.hot"]["health"]["snapshots"] == 1
    # past the hard maximum age a table is computed again whatever its ids say
    monkeypatch.setenv("AIRFLOW__LAKEFORMAT__LAKE_VIEW_MAX_AGE", "0")
    listed("hit=0 revalidated=0 computed=2")


def test_maintenance_run_shows_with_links(client, auth, lake, dags, monkeypatch, tmp_path):
    hot = _write(lake, "db.hot", 6)
    # a table of the same name on another connection: the runs are not its own
    other = lf.Catalog(str(tmp_path / "wh"))
    other.create_database("db")
    _write(other, "db.hot", 1)
    monkeypatch.setenv("AIRFLOW_CONN_LF_OTHER", json.dumps(
        {"conn_type": "lakeformat", "host": str(tmp_path / "wh")}))
    monkeypatch.setenv("AIRFLOW__LAKEFORMAT__LAKE_VIEW_CONNECTIONS",
                       "lakeformat_default,lf_other")
    dag = dags.load("lakeformat_maintenance.py", "lakeformat_maintenance")
    run = dag.test(logical_date=dt.datetime(2025, 3, 1, tzinfo=dt.UTC),
                   run_conf={"tables": "db.hot", "partition_idle_time": "0 s",
                             "orphans": False})
    assert run.state == "success", dags.states(run)

    page = client.get("/lakeformat/tables/db/hot", headers=auth).text
    maintenance = _rows(page, "maintenance")
    link = (f"/dags/lakeformat_maintenance/runs/{quote(run.run_id, safe='')}/tasks/maintain/"
            "mapped/0")
    assert f'<a class="airflow-link" data-spa href="{link}">' in maintenance, maintenance
    assert _cell(maintenance, "state") == "success"
    assert _cell(maintenance, "summary").startswith("compact")
    # the compaction's snapshot names the DAG and task that committed it
    snaps = client.get("/lakeformat/api/tables/db/hot/snapshots", headers=auth).json()
    compacted = [s for s in snaps if s["commit_kind"] == "COMPACT"]
    assert compacted and compacted[-1]["dag"] == "lakeformat_maintenance"
    assert compacted[-1]["task"] == "maintain" and compacted[-1]["map_index"] == 0
    assert _stable(client.get("/lakeformat/api/tables/db/hot", headers=auth).json()["due"]) \
        == _stable(hot.maintenance_due().to_dict())
    page = client.get("/lakeformat/", headers=auth).text
    listing = _list_row(page, "db.hot")  # the first: lakeformat_default's
    assert 'data-connection="lakeformat_default"' in listing
    assert f'href="{link}"' in listing and _cell(listing, "last-maintenance").startswith(
        "success")
    # the same name on lf_other: no run of lakeformat_default's table shows there
    other_row = re.search(r'<tr[^>]*data-table="db.hot" data-connection="lf_other".*?</tr>',
                          page, re.S)
    assert other_row and _cell(other_row.group(0), "last-maintenance") == "\u2014"
    other_page = client.get("/lakeformat/tables/db/hot", params={"conn": "lf_other"},
                            headers=auth)
    assert other_page.status_code == 200, other_page.text
    other_runs = _rows(other_page.text, "maintenance")
    assert "airflow-link" not in other_runs and run.run_id not in other_runs
    assert "Runs are shown for the tables of <code>lakeformat_default</code> only" in other_runs


def test_connections_are_discovered(client, auth, lake, monkeypatch, tmp_path):
    from airflow.models.connection import Connection
    from airflow.utils.session import create_session

    monkeypatch.delenv("AIRFLOW__LAKEFORMAT__LAKE_VIEW_CONNECTIONS")
    monkeypatch.setenv("AIRFLOW__LAKEFORMAT__LAKE_VIEW_TABLES", "db.*,lf_local:other.kept")
    _write(lake, "db.t", 1)
    local = lf.Catalog(str(tmp_path / "wh"))
    for name in ("other.kept", "other.skipped"):
        local.create_database("other", exist_ok=True)
        _write(local, name, 1)
    monkeypatch.setenv("AIRFLOW_CONN_LF_LOCAL", json.dumps(
        {"conn_type": "lakeformat", "host": str(tmp_path / "wh")}))
    monkeypatch.setenv("AIRFLOW_CONN_LF_NOT_OURS", json.dumps(
        {"conn_type": "aws", "host": str(tmp_path / "wh")}))
    with create_session() as session:  # no warehouse: its row says so
        session.add(Connection(conn_id="lf_in_db", conn_type="lakeformat"))
    try:
        rows = client.get("/lakeformat/api/tables", headers=auth).json()
    finally:
        with create_session() as session:
            session.query(Connection).filter(Connection.conn_id == "lf_in_db").delete()
    assert [(r["connection"], r["table"]) for r in rows] == [
        ("lakeformat_default", "db.t"), ("lf_local", "other.kept"), ("lf_in_db", None)], rows
    assert "names no warehouse" in rows[-1]["error"]


def test_settings_the_view_cannot_use_are_refused_naming_them(client, auth, lake, monkeypatch):
    _write(lake, "db.t", 1)
    secret = "hush-s3cr3t-value"
    cases = [("LAKE_VIEW_TTL", "soon", "[lakeformat] lake_view_ttl must be a number"),
             ("LAKE_VIEW_MAX_AGE", "-5", "[lakeformat] lake_view_max_age must be a number"),
             ("LAKE_VIEW_WORKERS", "2.5", "[lakeformat] lake_view_workers must be a whole"),
             ("LAKE_VIEW_WORKERS", "0", "[lakeformat] lake_view_workers must be a whole"),
             ("LAKE_VIEW_CATALOG_OPTIONS", '{"s3.secret-key": "' + secret,
              "[lakeformat] lake_view_catalog_options is not valid JSON"),
             ("LAKE_VIEW_CATALOG_OPTIONS", '["s3.retry.timeout", "3 s"]',
              "[lakeformat] lake_view_catalog_options must be a JSON object"),
             ("LAKE_VIEW_CATALOG_OPTIONS", '{"s3.retry.timeout": {"s": 3}}',
              "the value of s3.retry.timeout must be a string or a number")]
    for option, value, says in cases:
        with monkeypatch.context() as mp:
            mp.setenv(f"AIRFLOW__LAKEFORMAT__{option}", value)
            for path in ("/lakeformat/api/tables", "/lakeformat/api/tables/db/t",
                         "/lakeformat/api/tables/db/t/snapshots"):
                r = client.get(path, headers=auth)
                assert r.status_code == 500, (option, path, r.text)
                assert says in r.json()["detail"], (option, r.text)
            for path in ("/lakeformat/", "/lakeformat/tables/db/t"):
                r = client.get(path, headers=auth)
                assert r.status_code == 500, (option, path, r.text)
                assert html.escape(says) in r.text, (option, r.text)
            assert secret not in r.text
            assert client.get("/lakeformat/api/tables").status_code == 401  # login first
    assert client.get("/lakeformat/api/tables", headers=auth).status_code == 200
