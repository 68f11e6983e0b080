// The Lake view's script (lakeformat): sortable tables, links into Airflow's UI from inside
// its frame, and the button that asks Airflow's REST API, as the logged-in user, to run the
// maintenance DAG for a table. No library, no network access beyond this Airflow.
(function () {
  "use strict";
  var body = document.body;
  var airflowRoot = body.getAttribute("data-airflow-root") || "/";

  function framed() {
    try { return window.top !== window && window.top.location.origin === location.origin; }
    catch (err) { return false; }
  }

  // A link into Airflow's UI: inside the UI's frame, move the UI itself there (the frame's
  // sandbox forbids opening windows or navigating the top; same-origin history is allowed).
  function openInAirflow(href) {
    var top = window.top;
    top.history.pushState({}, "", href);
    top.dispatchEvent(new PopStateEvent("popstate", { state: {} }));
  }

  document.addEventListener("click", function (ev) {
    var a = ev.target.closest && ev.target.closest("a[data-spa]");
    if (!a || !framed() || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey) return;
    try { openInAirflow(a.getAttribute("href")); ev.preventDefault(); } catch (err) { /* follow */ }
  });

  // Sorting: a header with data-sort="<cell class>" sorts its table's rows by that cell's
  // data-value (numbers when data-type="number"; rows without a value go last).
  function sortBy(th) {
    var table = th.closest("table"), key = th.getAttribute("data-sort");
    var numeric = th.getAttribute("data-type") === "number";
    var asc = th.getAttribute("aria-sort") !== "ascending";
    table.querySelectorAll("th[data-sort]").forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", asc ? "ascending" : "descending");
    var tbody = table.tBodies[0];
    var rows = Array.prototype.slice.call(tbody.rows);
    function value(row) {
      var cell = row.querySelector("td." + key);
      if (!cell) return null;
      var v = cell.hasAttribute("data-value") ? cell.getAttribute("data-value") : cell.textContent;
      if (v === "" || v === null) return null;
      return numeric ? Number(v) : v.toLowerCase();
    }
    rows.sort(function (a, b) {
      var x = value(a), y = value(b);
      if (x === null || y === null) return x === y ? 0 : (x === null ? 1 : -1);
      var c = x < y ? -1 : (x > y ? 1 : 0);
      return asc ? c : -c;
    });
    rows.forEach(function (r) { tbody.appendChild(r); });
  }
  document.querySelectorAll("th[data-sort]").forEach(function (th) {
    th.tabIndex = 0;
    th.addEventListener("click", function () { sortBy(th); });
    th.addEventListener("keydown", function (ev) { if (ev.key === "Enter") sortBy(th); });
  });

  // The trigger button: POST {airflow}/api/v2/dags/<dag>/dagRuns with the UI's own session
  // cookie (same origin), so Airflow checks the user's permission on the DAG itself.
  var button = document.getElementById("trigger");
  if (button) {
    button.addEventListener("click", function () {
      var out = document.getElementById("trigger-result");
      var dag = button.getAttribute("data-dag");
      var conf = {};
      conf[button.getAttribute("data-conf-key") || "tables"] = button.getAttribute("data-tables");
      button.disabled = true;
      out.className = "pending";
      out.textContent = "asking Airflow\u2026";
      fetch(airflowRoot + "api/v2/dags/" + encodeURIComponent(dag) + "/dagRuns", {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json", "Accept": "application/json" },
        body: JSON.stringify({ logical_date: null, conf: conf, note: "Lake page" })
      }).then(function (resp) {
        return resp.text().then(function (text) {
          var data = null;
          try { data = JSON.parse(text); } catch (err) { data = null; }
          if (!resp.ok) {
            var detail = data && data.detail ? (typeof data.detail === "string" ? data.detail : JSON.stringify(data.detail)) : text;
            throw new Error("HTTP " + resp.status + ": " + detail);
          }
          return data;
        });
      }).then(function (run) {
        var id = run.dag_run_id || run.run_id;
        out.className = "ok";
        out.textContent = "";
        var a = document.createElement("a");
        a.href = airflowRoot + "dags/" + encodeURIComponent(dag) + "/runs/" + encodeURIComponent(id);
        a.setAttribute("data-spa", "");
        a.className = "airflow-link";
        a.textContent = id;
        out.setAttribute("data-run-id", id);
        out.appendChild(document.createTextNode("run "));
        out.appendChild(a);
        out.appendChild(document.createTextNode(" " + (run.state || "queued")));
      }).catch(function (err) {
        out.className = "failed";
        out.textContent = String(err.message || err);
      }).then(function () { button.disabled = false; });
    });
  }
})();
