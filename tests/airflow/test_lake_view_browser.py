"""The Lake page in a real browser: headless chromium (Selenium, Debian's chromedriver;
`make chromium`) against a real `airflow api-server` with the provider's plugin on 127.0.0.1
(`tests/support/airflow_server.py`), over a moto S3 warehouse of three tables in known states:

* `db.debt` — 7 writes into one partition of a 2-bucket table: 7 sorted runs in a bucket, a
  compaction due; a second partition with one write;
* `db.clean` — three writes, then a full compaction: one sorted run;
* `db.broken` — two writes, then its first manifest overwritten with junk: unreadable.

A visitor without a session is sent to Airflow's own login page and logs in there; the Lake
page is opened as Airflow's UI shows it (the nav entry "Lake", the page in the SPA's iframe at
`/plugin/lake`) and directly at `/lakeformat/`; every figure shown must equal the table's own
`health()` (score, worst bucket's sorted runs, small files, snapshots, schema files), the broken
table's row shows its error while the others list. A table page's heat map cells equal
`health().buckets`; its trigger button creates a `lakeformat_on_debt` run for that table as the
logged-in user (read back through Airflow's REST API), and a viewer's click is refused.
Screenshots of each step go to the test's temporary folder (`*.png`).

One server and one browser for the module (the server starts while the tables are written);
the DOM ids and classes read here are the page's contract (`lake_view/page.py`).
"""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lakeformat as lf
from tests.support.airflow_server import AirflowApiServer, airflow_api_server  # noqa: F401
from tests.support.browser import start_chromium

KV = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])
CONN = "lakeformat_default"
WAIT_S = 30


def _batch(ids: range | list[int], tag: str, day: str) -> pa.Table:
    return pa.table({"dt": [day] * len(ids), "id": list(ids), "v": [f"{tag}{i}" for i in ids]},
                    schema=KV)


@pytest.fixture(scope="module")
def lake(airflow_api_server: AirflowApiServer) -> dict[str, Any]:  # noqa: F811
    """The three tables (written while the server starts) and the ready server."""
    server = airflow_api_server
    catalog = lf.Catalog(server.warehouse, options=server.options)  # type: ignore[attr-defined]
    catalog.create_database("db")

    def create(name: str, buckets: int) -> lf.Table:
        return catalog.create_table(name, KV, primary_keys=["dt", "id"], partition_keys=["dt"],
                                    options={"bucket": str(buckets)})

    debt = create("db.debt", 2)
    for i in range(7):  # each write: one level-0 file (a sorted run) per bucket it touches
        debt.write(_batch(range(i * 10, i * 10 + 6), f"w{i}", "2024-01-01"))
    debt.write(_batch(range(3), "x", "2024-01-02"))
    clean = create("db.clean", 1)
    for i in range(3):
        clean.write(_batch(range(i, i + 4), f"c{i}", "2024-01-01"))
    clean.compact(full=True)
    broken = create("db.broken", 1)
    broken.write(_batch([1, 2], "b", "2024-01-01"))
    broken.write(_batch([3], "b", "2024-01-01"))
    manifest = broken.inspect.manifests().column("file_name")[0].as_py()
    broken.file_io.write_bytes(broken.file_io.join(broken.path, "manifest", manifest),
                               b"not avro")

    health = {t.name: t.health() for t in (debt, clean)}
    due = {t.name: [a.kind for a in t.maintenance_due().actions] for t in (debt, clean)}
    assert "compact" in due["db.debt"] or "full-compact" in due["db.debt"], due
    assert health["db.debt"].max_sorted_runs == 7, health["db.debt"]  # the states they must be in
    assert health["db.clean"].max_sorted_runs == 1, health["db.clean"]
    with pytest.raises(lf.LakeformatError):
        broken.health()
    try:
        server.wait_ready()
    except Exception as e:  # noqa: BLE001 - the log's tail is in the message
        pytest.fail(str(e), pytrace=False)
    return {"server": server, "health": health, "due": due,
            "snapshot_ids": [s.id for s in debt.snapshots()],
            "tables": ["db.broken", "db.clean", "db.debt"]}


@pytest.fixture(scope="module")
def browser(lake: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    driver = start_chromium(tmp_path_factory.mktemp("chromium-profile"))
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


# -- helpers -------------------------------------------------------------------------------------
def _wait(driver: Any, condition: Callable[[Any], Any], what: str, timeout: float = WAIT_S
          ) -> Any:
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(driver, timeout).until(condition)
    except TimeoutException:
        raise AssertionError(f"timed out waiting for {what} at {driver.current_url}") from None


def _css(driver: Any, selector: str) -> Callable[[Any], Any]:
    from selenium.webdriver.common.by import By

    def found(d: Any) -> Any:
        items = d.find_elements(By.CSS_SELECTOR, selector)
        return items[0] if items else False
    return found


def _log_in(driver: Any, server: AirflowApiServer, user: str, shot: Path | None = None) -> None:
    """On Airflow's login page (the browser is there): type the user's name and password,
    sign in, and wait until the page has sent the browser on."""
    from selenium.webdriver.common.by import By

    field = _wait(driver, _css(driver, "input[name=username]"), "the login form")
    if shot is not None:
        driver.save_screenshot(str(shot))
    field.send_keys(user)
    driver.find_element(By.CSS_SELECTOR, "input[name=password]").send_keys(server.users[user][1])
    driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    _wait(driver, lambda d: "/auth/login" not in d.current_url, "the login to complete")


def _session(driver: Any, server: AirflowApiServer, user: str) -> None:
    """The browser is logged in as `user` (a fresh login when it holds no session or
    another user's)."""
    if getattr(driver, "_lake_user", None) == user and driver.get_cookie("_token"):
        return
    driver.delete_all_cookies()
    base = server.base_url
    driver.get(f"{base}/api/v2/auth/login?next=" + urllib.parse.quote(f"{base}/lakeformat/"))
    _log_in(driver, server, user)
    driver._lake_user = user


def _table_rows(driver: Any) -> dict[str, dict[str, str]]:
    """{table: {cell class: text}} of the Lake page's table list (in the current frame)."""
    from selenium.webdriver.common.by import By

    _wait(driver, _css(driver, "#lake-tables tr[data-table]"), "the table list")
    rows = {}
    for tr in driver.find_elements(By.CSS_SELECTOR, "#lake-tables tr[data-table]"):
        cells = {}
        for td in tr.find_elements(By.CSS_SELECTOR, "td[class]"):
            for cls in td.get_attribute("class").split():
                cells[cls] = td.text.strip()
        cells["@class"] = tr.get_attribute("class") or ""
        cells["@connection"] = tr.get_attribute("data-connection") or ""
        rows[tr.get_attribute("data-table")] = cells
    return rows


def _assert_rows_equal_health(rows: dict[str, dict[str, str]], lake: dict[str, Any]) -> None:
    assert sorted(rows) == lake["tables"]
    for name, h in lake["health"].items():
        row = rows[name]
        assert "error" not in row["@class"].split(), row
        assert row["@connection"] == CONN
        assert row["table"] == name
        shown = {k: row.get(k) for k in ("score", "sorted-runs", "small-files", "snapshots",
                                         "schema-files")}
        assert shown == {"score": str(h.score), "sorted-runs": str(h.max_sorted_runs),
                         "small-files": str(h.totals["small_files"]),
                         "snapshots": str(h.snapshots["count"]),
                         "schema-files": str(h.schemas["files"])}, name
    for name, kinds in lake["due"].items():
        shown_kinds = [k for k in rows[name]["due"].replace(" ", "").split(",") if k != "—"]
        assert sorted(shown_kinds) == sorted(kinds), (name, rows[name]["due"])
    broken = rows["db.broken"]
    assert "error" in broken["@class"].split(), broken
    assert broken.get("error-text"), broken
    assert "manifest" in broken["error-text"].lower(), broken


def _trigger_result(driver: Any) -> Any:
    """The trigger button's outcome once Airflow answered (class "ok" or "failed")."""
    from selenium.webdriver.common.by import By

    def done(d: Any) -> Any:
        out = d.find_element(By.ID, "trigger-result")
        return out if out.get_attribute("class") in ("ok", "failed") else False
    return _wait(driver, done, "Airflow's answer to the trigger button")


def _runs(server: AirflowApiServer, token: str) -> list[dict[str, Any]]:
    status, body = server.request("GET", "/api/v2/dags/lakeformat_on_debt/dagRuns?limit=100",
                                  token=token)
    assert status == 200, body
    return list(body["dag_runs"])


# -- tests ---------------------------------------------------------------------------------------
def test_anonymous_visitor_logs_in_through_airflows_login_page(
        lake: dict[str, Any], browser: Any, tmp_path: Path) -> None:
    server: AirflowApiServer = lake["server"]
    browser.delete_all_cookies()
    browser.get(f"{server.base_url}/lakeformat/")
    _wait(browser, lambda d: "/auth/login" in d.current_url, "the redirect to the login page")
    assert "next=" in browser.current_url
    _log_in(browser, server, "admin", shot=tmp_path / "01-login.png")
    browser._lake_user = "admin"
    # back where the visitor was going: the Lake page, now with the tables
    _wait(browser, lambda d: urllib.parse.urlsplit(d.current_url).path == "/lakeformat/",
          "the return to the Lake page")
    _assert_rows_equal_health(_table_rows(browser), lake)
    browser.save_screenshot(str(tmp_path / "02-lake-page-direct.png"))


def test_lake_page_in_the_airflow_ui(lake: dict[str, Any], browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    server: AirflowApiServer = lake["server"]
    _session(browser, server, "admin")
    browser.get(f"{server.base_url}/")
    # the nav entry the plugin registers (external_views, url_route "lake")
    entry = _wait(browser, lambda d: next(iter(
        d.find_elements(By.CSS_SELECTOR, "a[href$='/plugin/lake']")), False),
        "the Lake entry in Airflow's nav")
    assert "Lake" in (entry.text or entry.get_attribute("aria-label")
                      or entry.get_attribute("title") or ""), entry.get_attribute("outerHTML")
    entry.click()
    _wait(browser, lambda d: urllib.parse.urlsplit(d.current_url).path.startswith(
        "/plugin/lake"), "the SPA's Lake route")
    frame = _wait(browser, _css(browser, "iframe[title='Lake']"), "the Lake page's iframe")
    browser.switch_to.frame(frame)
    try:
        _assert_rows_equal_health(_table_rows(browser), lake)
    finally:
        browser.switch_to.default_content()
    browser.save_screenshot(str(tmp_path / "03-lake-page-in-airflow.png"))


def test_table_list_sorts_by_a_column(lake: dict[str, Any], browser: Any, tmp_path: Path
                                      ) -> None:
    from selenium.webdriver.common.by import By

    server: AirflowApiServer = lake["server"]
    _session(browser, server, "admin")
    browser.get(f"{server.base_url}/lakeformat/")
    _table_rows(browser)

    def order() -> list[str]:
        return [tr.get_attribute("data-table") for tr in browser.find_elements(
            By.CSS_SELECTOR, "#lake-tables tr[data-table]:not(.error)")]

    header = _wait(browser, _css(browser, "#lake-tables th[data-sort='score']"),
                   "the score column's header")
    header.click()
    first = order()
    scores = [lake["health"][t].score for t in first]
    assert scores in (sorted(scores), sorted(scores, reverse=True)), first
    header.click()
    assert order() == first[::-1]
    browser.save_screenshot(str(tmp_path / "04-sorted-by-score.png"))


def test_table_page_heat_map_and_trigger_in_the_airflow_ui(
        lake: dict[str, Any], browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    server: AirflowApiServer = lake["server"]
    health = lake["health"]["db.debt"]
    _session(browser, server, "admin")
    token = server.token("admin")
    before = {r["dag_run_id"] for r in _runs(server, token)}
    browser.get(f"{server.base_url}/plugin/lake")
    browser.switch_to.frame(_wait(browser, _css(browser, "iframe[title='Lake']"),
                                  "the Lake page's iframe"))
    try:
        _table_rows(browser)
        browser.find_element(
            By.CSS_SELECTOR, "#lake-tables tr[data-table='db.debt'] td.table a").click()
        name = _wait(browser, _css(browser, "#table-name"), "the table page")
        assert name.text.strip() == "db.debt"
        assert browser.find_element(By.ID, "score").text.strip() == str(health.score)
        cells = {(c.get_attribute("data-partition"), int(c.get_attribute("data-bucket")),
                  int(c.get_attribute("data-runs")))
                 for c in browser.find_elements(By.CSS_SELECTOR, "#heatmap rect.cell")}
        assert cells == {(b.partition, b.bucket, b.sorted_runs) for b in health.buckets}
        assert max(runs for _, _, runs in cells) == 7
        shown = [int(tr.get_attribute("data-snapshot"))
                 for tr in browser.find_elements(By.CSS_SELECTOR, "#snapshots tr[data-snapshot]")]
        assert sorted(shown) == lake["snapshot_ids"], shown
        due = [tr.get_attribute("data-kind")
               for tr in browser.find_elements(By.CSS_SELECTOR, "#due tr[data-kind]")]
        assert sorted(due) == sorted(lake["due"]["db.debt"]), due
        browser.switch_to.default_content()
        browser.save_screenshot(str(tmp_path / "05-table-page-in-airflow.png"))
        browser.switch_to.frame(browser.find_element(By.CSS_SELECTOR, "iframe[title='Lake']"))

        button = browser.find_element(By.ID, "trigger")
        assert button.get_attribute("data-dag") == "lakeformat_on_debt"
        assert button.get_attribute("data-tables") == "db.debt"
        button.click()
        result = _trigger_result(browser)
        assert result.get_attribute("class") == "ok", result.text
        run_id = result.get_attribute("data-run-id")
    finally:
        browser.switch_to.default_content()
    browser.save_screenshot(str(tmp_path / "06-triggered.png"))

    deadline = time.monotonic() + WAIT_S
    new: list[dict[str, Any]] = []
    while time.monotonic() < deadline and not new:
        new = [r for r in _runs(server, token) if r["dag_run_id"] not in before]
        if not new:
            time.sleep(0.2)
    assert len(new) == 1, new
    run = new[0]
    assert run["conf"] == {"tables": "db.debt"}, run
    assert run["triggering_user_name"] == "admin", run
    assert run["run_type"] == "manual" and run["state"] == "queued", run
    assert run["dag_run_id"] == run_id

    # the run's link in the page moves Airflow's UI (the frame's parent) to the run
    browser.switch_to.frame(browser.find_element(By.CSS_SELECTOR, "iframe[title='Lake']"))
    try:
        browser.find_element(By.CSS_SELECTOR, "#trigger-result a").click()
    finally:
        browser.switch_to.default_content()
    run_path = f"/dags/lakeformat_on_debt/runs/{urllib.parse.quote(run_id)}"
    _wait(browser, lambda d: urllib.parse.unquote(urllib.parse.urlsplit(d.current_url).path)
          == urllib.parse.unquote(run_path), "Airflow's page of the new run")
    _wait(browser, lambda d: run_id in d.find_element(By.TAG_NAME, "body").text,
          "the run's id on Airflow's run page")
    browser.save_screenshot(str(tmp_path / "07-run-in-airflow.png"))


def test_a_viewer_sees_the_page_and_cannot_trigger(
        lake: dict[str, Any], browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    server: AirflowApiServer = lake["server"]
    token = server.token("admin")
    before = {r["dag_run_id"] for r in _runs(server, token)}
    _session(browser, server, "viewer")
    browser.get(f"{server.base_url}/lakeformat/tables/db/debt?conn={CONN}")
    _wait(browser, _css(browser, "#table-name"), "the table page")
    assert browser.find_element(By.ID, "score").text.strip() == str(
        lake["health"]["db.debt"].score)
    browser.find_element(By.ID, "trigger").click()
    result = _trigger_result(browser)
    browser.save_screenshot(str(tmp_path / "08-viewer-refused.png"))
    assert result.get_attribute("class") == "failed" and "403" in result.text, result.text
    assert {r["dag_run_id"] for r in _runs(server, token)} == before
