/* The Zipper view's pages: they read the plugin's JSON API and draw with Chart.js (bundled). */
"use strict";

const zipper = (() => {
  const root = () => document.body.dataset.root;
  const airflowRoot = () => document.body.dataset.airflowRoot;
  const charts = {};
  window.zipperCharts = charts; // for the browser tests, and for anyone poking at a page

  async function api(path, options) {
    const response = await fetch(root() + "/api" + path, { credentials: "same-origin", ...options });
    const body = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(body.detail || `${response.status} ${response.statusText}`);
    return body;
  }

  function el(tag, attrs = {}, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs)) {
      if (value === null || value === undefined || value === false) continue;
      if (name === "text") node.textContent = value;
      else node.setAttribute(name, value === true ? "" : value);
    }
    for (const child of children) node.append(child);
    return node;
  }

  function banner(text, kind = "error") {
    const box = document.getElementById("banner");
    box.hidden = false;
    box.className = "banner " + kind;
    box.append(el("p", { text }));
  }

  const number = (n) => (n === null || n === undefined ? "" : Number(n).toLocaleString("en-US"));
  const dayMs = (ds) => Date.parse(ds + "T00:00:00Z");
  const isoDay = (ms) => new Date(ms).toISOString().slice(0, 10);
  const airflowLink = (path, text) => el("a", { href: airflowRoot() + path, target: "_top", text });
  const runPath = (run) => `/dags/${encodeURIComponent(run.dag_id)}/runs/${encodeURIComponent(run.run_id)}`;

  function countsText(commit) {
    if (!commit) return "";
    const c = commit.counts || {};
    return `${commit.ds}: ${number(c.new)} new, ${number(c.changed)} changed, ${number(c.unchanged)} re-sent unchanged, ${number(c.closed)} closed`;
  }

  /* ---------- the tables page ---------- */

  async function tablesPage() {
    const view = { rows: [], key: null, ascending: true };
    sortable(document.getElementById("tables"), view, renderTables);
    await loadTables(view, 0);
  }

  /* The API answers from its last read of the tables; when that read is older than a few seconds
     it says `refreshing` and reads again behind the answer: ask again until the read is fresh. */
  async function loadTables(view, attempt) {
    let data;
    try {
      data = await api("/tables");
    } catch (error) {
      document.getElementById("summary").textContent = "";
      banner(error.message);
      return;
    }
    const box = document.getElementById("banner");
    box.replaceChildren();
    box.hidden = true;
    if (data.pool.missing) {
      banner(
        `Airflow has no pool ${data.pool.name}: the merge and rerun tasks are never scheduled. ` +
          `Create it: airflow pools set ${data.pool.name} 4 "zipper merges"`,
      );
    }
    view.rows = data.tables.map((t) => ({
      ...t,
      last_run: t.last_commit ? countsText(t.last_commit) : "",
      run_state: t.latest_run ? t.latest_run.state : "",
    }));
    sortRows(view);
    renderTables(view.rows);
    const behind = view.rows.filter((t) => t.problem).length;
    const read = data.refreshing ? `state read ${Math.round(data.read_age_s)} s ago, refreshing…` : `state read at ${data.read_at}`;
    const summary = document.getElementById("summary");
    summary.textContent =
      `${view.rows.length} table${view.rows.length === 1 ? "" : "s"}, ${behind} needing attention; metastore ${data.metastore}; today ${data.today}; ${read}`;
    summary.dataset.refreshing = data.refreshing ? "yes" : "no";
    const errors = document.getElementById("spec-errors");
    errors.replaceChildren();
    for (const problem of data.spec_errors) {
      errors.append(el("p", { class: "error", text: `spec ${problem.file}: ${problem.error}` }));
    }
    if (data.refreshing && attempt < 40) setTimeout(() => loadTables(view, attempt + 1), 1000);
  }

  function renderTables(rows) {
    const body = document.querySelector("#tables tbody");
    body.replaceChildren();
    for (const t of rows) {
      const run = t.latest_run;
      const tr = el(
        "tr",
        { class: t.problem ? "problem" : null, "data-table": t.name },
        el("td", {}, el("a", { href: `${root()}/tables/${encodeURIComponent(t.name)}`, text: t.name }), el("div", { class: "muted", text: t.table })),
        el("td", { text: t.last_committed || "—" }),
        el("td", { class: "num", text: t.lag_days === null || t.lag_days === undefined ? "—" : String(t.lag_days) }),
        el("td", { class: "num", text: number(t.open_rows) }),
        el("td", { class: "num", text: number(t.closed_rows) }),
        el("td", { text: t.last_run }),
        el("td", {}, run ? airflowLink(runPath(run), run.state) : el("span", { class: "muted", text: "no run" })),
        el("td", { class: "attention", text: t.problem || "" }),
      );
      body.append(tr);
    }
  }

  function sortable(table, view, render) {
    for (const th of table.querySelectorAll("th[data-key]")) {
      th.tabIndex = 0;
      th.addEventListener("click", () => {
        view.ascending = view.key === th.dataset.key ? !view.ascending : true;
        view.key = th.dataset.key;
        sortRows(view);
        for (const other of table.querySelectorAll("th")) other.removeAttribute("aria-sort");
        th.setAttribute("aria-sort", view.ascending ? "ascending" : "descending");
        render(view.rows);
      });
    }
  }

  function sortRows(view) {
    if (view.key === null) return;
    const numeric = document.querySelector(`th[data-key="${view.key}"]`).dataset.type === "number";
    view.rows.sort((a, b) => {
      const x = a[view.key] ?? (numeric ? -Infinity : "");
      const y = b[view.key] ?? (numeric ? -Infinity : "");
      const order = numeric ? x - y : String(x).localeCompare(String(y));
      return view.ascending ? order : -order;
    });
  }

  /* ---------- a table's page ---------- */

  async function tablePage(name) {
    let detail, log;
    try {
      [detail, log] = await Promise.all([
        api(`/tables/${encodeURIComponent(name)}`),
        api(`/tables/${encodeURIComponent(name)}/commits?limit=500`),
      ]);
    } catch (error) {
      banner(error.message);
      return;
    }
    document.getElementById("title").textContent = `${detail.name} (${detail.table})`;
    if (detail.problem) banner(detail.problem, "warning");
    facts(detail);
    links(detail);
    drawCounts(detail.series);
    drawOpenRows(detail.series);
    lookupForm(detail);
    rerunForm(detail);
    dryRun(detail.latest_dry_run);
    commitLog(log.commits);
  }

  function facts(d) {
    const list = document.getElementById("facts");
    const add = (term, value) => list.append(el("dt", { text: term }), el("dd", { text: value ?? "—" }));
    add("Last committed", d.last_committed);
    add("Days behind", d.lag_days === null ? "—" : String(d.lag_days));
    add("Open rows", number(d.open_rows));
    add("Closed rows", number(d.closed_rows));
    add("Base date", d.base_date);
    add("Keys", d.keys.join(", "));
    add("Source", d.source_mode);
    add("Schedule", `${d.schedule} from ${d.start_date}${d.end_date ? " to " + d.end_date : ""}`);
    if (d.replay_interrupted) {
      add("Interrupted replay", `${d.replay_interrupted.from} … ${d.replay_interrupted.to}`);
    }
  }

  function links(d) {
    const box = document.getElementById("links");
    box.append(airflowLink(`/dags/${encodeURIComponent(d.dag_id)}`, `DAG ${d.dag_id}`), " · ");
    box.append(airflowLink(`/dags/${encodeURIComponent(d.rerun_dag_id)}`, `rerun DAG ${d.rerun_dag_id}`));
    const run = d.latest_run;
    if (run) {
      box.append(" · ", airflowLink(runPath(run), `latest run: ${run.state}`));
      if (run.failed_task) {
        const path = `${runPath(run)}/tasks/${encodeURIComponent(run.failed_task)}`;
        box.append(" · ", airflowLink(path, `log of the failed task ${run.failed_task}`));
      }
    }
  }

  const SERIES = [
    ["new", "new", "#2f855a"],
    ["changed", "changed", "#dd6b20"],
    ["unchanged", "re-sent unchanged", "#a0aec0"],
    ["closed", "closed", "#c53030"],
  ];

  function drawCounts(series) {
    charts.counts = new Chart(document.getElementById("counts-chart"), {
      type: "bar",
      data: {
        labels: series.map((p) => p.ds),
        datasets: SERIES.map(([key, label, color]) => ({ label, data: series.map((p) => p[key]), backgroundColor: color })),
      },
      options: {
        animation: false,
        maintainAspectRatio: false,
        scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, title: { display: true, text: "rows" } } },
      },
    });
  }

  function drawOpenRows(series) {
    charts.open = new Chart(document.getElementById("open-chart"), {
      type: "line",
      data: {
        labels: series.map((p) => p.ds),
        datasets: [{ label: "open rows after the date", data: series.map((p) => p.open_after), borderColor: "#2b6cb0", pointRadius: 3 }],
      },
      options: { animation: false, maintainAspectRatio: false, scales: { y: { beginAtZero: true } } },
    });
  }

  function lookupForm(d) {
    const form = document.getElementById("lookup");
    for (const key of d.keys) {
      form.append(el("label", { text: key + " " }, el("input", { name: key, required: true, "data-key": key })));
    }
    form.append(el("button", { type: "submit", text: "Show every version" }));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const params = new URLSearchParams();
      for (const input of form.querySelectorAll("input[data-key]")) params.append("key", `${input.name}=${input.value}`);
      const message = document.getElementById("lookup-message");
      message.textContent = "Reading the table's files…";
      try {
        const found = await api(`/tables/${encodeURIComponent(d.name)}/history?${params}`);
        message.textContent = found.versions.length
          ? `${found.versions.length} version${found.versions.length === 1 ? "" : "s"} of ${Object.entries(found.key).map(([k, v]) => `${k}=${v}`).join(", ")}`
          : "No version of this key: it was never in the table.";
        drawTimeline(found);
      } catch (error) {
        message.textContent = error.message;
        document.getElementById("timeline-box").hidden = true;
        document.getElementById("versions").hidden = true;
      }
    });
  }

  function drawTimeline(found) {
    const box = document.getElementById("timeline-box");
    const versions = found.versions;
    box.hidden = versions.length === 0;
    if (charts.timeline) charts.timeline.destroy();
    charts.timeline = null;
    if (!versions.length) {
      document.getElementById("versions").hidden = true;
      return;
    }
    const openEnd = found.open_end;
    const now = dayMs(found.last_committed) + 86400000;
    const bars = versions.map((v) => {
      const open = v[found.end_column] === openEnd;
      return { x: [dayMs(v[found.begin_column]), open ? now : dayMs(v[found.end_column])], y: v[found.begin_column], open, row: v };
    });
    // whole days on the axis, about ten ticks whatever the span
    const first = Math.min(...bars.map((b) => b.x[0])) - 86400000;
    const last = Math.max(...bars.map((b) => b.x[1])) + 86400000;
    const step = Math.max(1, Math.ceil((last - first) / 86400000 / 10)) * 86400000;
    const hidden = new Set([found.begin_column, found.end_column, ...Object.keys(found.key)]);
    charts.timeline = new Chart(document.getElementById("timeline-chart"), {
      type: "bar",
      data: {
        labels: bars.map((b) => b.y),
        datasets: [
          {
            label: "versions",
            data: bars.map((b) => b.x),
            backgroundColor: bars.map((b) => (b.open ? "#2f855a" : "#4a5568")),
            borderSkipped: false,
          },
        ],
      },
      options: {
        animation: false,
        maintainAspectRatio: false,
        indexAxis: "y",
        plugins: {
          legend: { display: false },
          tooltip: {
            callbacks: {
              label: (item) => {
                const bar = bars[item.dataIndex];
                const values = Object.entries(bar.row).filter(([k]) => !hidden.has(k)).map(([k, v]) => `${k}=${v}`);
                const end = bar.open ? "open" : bar.row[found.end_column];
                return `${bar.row[found.begin_column]} → ${end}: ${values.join(", ")}`;
              },
            },
          },
        },
        scales: {
          x: {
            type: "linear",
            // the key's own span, a day either side (a floating bar chart would otherwise start at 1970)
            min: first,
            max: last,
            ticks: { callback: (value) => isoDay(value), stepSize: step, maxTicksLimit: 12 },
            title: { display: true, text: "date" },
          },
          y: { title: { display: true, text: found.begin_column } },
        },
      },
    });
    versionTable(found, hidden);
  }

  function versionTable(found, hidden) {
    const table = document.getElementById("versions");
    table.hidden = found.versions.length === 0;
    if (!found.versions.length) return;
    const columns = [found.begin_column, found.end_column, ...Object.keys(found.versions[0]).filter((k) => !hidden.has(k))];
    table.tHead.replaceChildren(el("tr", {}, ...columns.map((c) => el("th", { text: c }))));
    table.tBodies[0].replaceChildren(
      ...found.versions.map((v) => el("tr", {}, ...columns.map((c) => el("td", { text: v[c] === null ? "NULL" : String(v[c]) })))),
    );
  }

  function rerunForm(d) {
    const form = document.getElementById("rerun");
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const data = new FormData(form);
      const conf = {
        from_date: data.get("from_date"),
        to_date: data.get("to_date") || null,
        uncommit_later: data.get("uncommit_later") === "on",
        dry_run: data.get("dry_run") === "on",
      };
      const message = document.getElementById("rerun-message");
      const what = `${conf.dry_run ? "dry run of a " : ""}replay ${conf.from_date} … ${conf.to_date || "the last committed date"}`;
      if (!confirm(`Trigger ${d.rerun_dag_id}: ${what}?`)) return;
      try {
        const response = await fetch(`${airflowRoot()}/api/v2/dags/${encodeURIComponent(d.rerun_dag_id)}/dagRuns`, {
          method: "POST",
          credentials: "same-origin",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ logical_date: null, conf }),
        });
        const body = await response.json().catch(() => ({}));
        if (!response.ok) throw new Error(typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail || response.status));
        const run = { dag_id: d.rerun_dag_id, run_id: body.dag_run_id };
        message.replaceChildren("Triggered: ", airflowLink(runPath(run), run.run_id));
      } catch (error) {
        message.textContent = `Not triggered: ${error.message}`;
      }
    });
    // Disabled in the page until now: a click before the table is known would submit the form as a plain GET
    form.querySelector("button[type='submit']").disabled = false;
  }

  // The newest dry run of the rerun DAG: what it would commit per date, and the keys it would change
  // (each key's versions before and after, as the CLI prints them).
  function dryRun(result) {
    if (!result) return;
    document.getElementById("dry-run").hidden = false;
    document.getElementById("dry-run-summary").replaceChildren(
      `${result.summary} `,
      el("span", { class: "muted", text: `(run ${result.run_id}${result.at ? ", " + result.at : ""}; nothing was published)` }),
    );
    document.querySelector("#dry-run-dates tbody").replaceChildren(
      ...result.dates.map((d) => el("tr", { "data-ds": d.ds }, el("td", { text: d.ds }), el("td", { text: d.summary }), el("td", { text: d.guard || "—" }))),
    );
    const table = document.getElementById("dry-run-sample");
    const rows = result.sample.flatMap((entry) =>
      ["before", "after"].flatMap((side) =>
        (entry[side].length ? entry[side] : [null]).map((version) => ({ key: entry.key, side, version })),
      ),
    );
    const first = rows.find((r) => r.version);
    const columns = first ? Object.keys(first.version) : [];
    table.tHead.replaceChildren(el("tr", {}, el("th", { text: "" }), ...columns.map((c) => el("th", { text: c }))));
    table.tBodies[0].replaceChildren(
      ...rows.map((r) =>
        el(
          "tr",
          { "data-side": r.side, "data-key": Object.values(r.key).join(",") },
          el("td", { text: r.side }),
          ...(r.version ? columns.map((c) => el("td", { text: r.version[c] ?? "" })) : [el("td", { colspan: columns.length, text: "(none)" })]),
        ),
      ),
    );
    if (!rows.length) table.tBodies[0].replaceChildren(el("tr", {}, el("td", { text: "no key's history would differ" })));
  }

  function prefillRerun(ds) {
    const form = document.getElementById("rerun");
    form.elements.from_date.value = ds;
    form.elements.to_date.value = "";
    form.scrollIntoView({ behavior: "smooth" });
    form.elements.from_date.focus();
  }

  function commitLog(commits) {
    const body = document.querySelector("#commits tbody");
    body.replaceChildren(
      ...commits.map((c) => {
        const counts = c.counts || {};
        if (c.action === "correct") {  // a row-level correction: what it did, in place of the date's counts
          const undone = c.undone_by ? ` (undone by ${c.undone_by})` : "";
          return el(
            "tr",
            { "data-ds": c.ds, class: "correction" },
            el("td", { text: c.ds }),
            el("td", { text: c.action }),
            el("td", { colspan: 5, text: `${c.what}, by ${c.by}${undone}` }),
            el("td", { text: c.committed_at }),
            el("td", { class: "mono", text: c.run_id }),
            el("td", {}),
            el("td", {}),
          );
        }
        const button = el("button", { type: "button", class: "link", text: "rerun from here" });
        button.addEventListener("click", () => prefillRerun(c.ds));
        // a date committed without changes for want of input (on_missing_input: skip) says so
        const skipped = c.skipped ? { class: "skipped" } : {};
        return el(
          "tr",
          { "data-ds": c.ds, ...skipped },
          el("td", { text: c.ds }),
          el("td", { text: c.skipped ? `${c.action} (skipped: ${c.skipped})` : c.action }),
          el("td", { class: "num", text: number(counts.new) }),
          el("td", { class: "num", text: number(counts.changed) }),
          el("td", { class: "num", text: number(counts.unchanged) }),
          el("td", { class: "num", text: number(counts.closed) }),
          el("td", { class: "num", text: number(counts.open_after) }),
          el("td", { text: c.committed_at }),
          el("td", { class: "mono", text: c.run_id }),
          el("td", { class: "mono", title: c.fingerprint, text: (c.fingerprint || "").slice(0, 12) }),
          el("td", {}, button),
        );
      }),
    );
  }

  return { tablesPage, tablePage };
})();
