/*
 * parsa serve's web page: plain JavaScript and SVG, no library, nothing
 * loaded from elsewhere.  Talks to the JSON API (docs/openapi.yaml) with
 * fetch; live progress comes from the Server-Sent Events endpoint
 * /v1/jobs/{id}/events, read with fetch (so the bearer token can be sent,
 * which EventSource cannot do).  Views (hash routes):
 *   #/               datasets, jobs, the start form
 *   #/jobs/ID        one job: metrics beside random, per-machine bars,
 *                    timings, downloads, lookups, assign
 *   #/compare/A,B..  jobs of one dataset side by side on one scale
 */
"use strict";

const PHASES = ["queued", "loading", "partition_u", "refine", "partition_v",
                "metrics", "saving", "done"];
const PHASE_LABEL = {
  queued: "queued", loading: "reading data", partition_u: "partition U",
  refine: "refine", partition_v: "partition V", metrics: "metrics",
  saving: "saving", done: "done",
};
const METRICS = [
  ["M_max", "M_max (worker memory)", 0], ["T_max", "T_max (machine traffic)", 0],
  ["T_sum", "T_sum (total traffic)", 0], ["RF", "RF (replication)", 3],
  ["imbalance", "imbalance", 3], ["local_fraction", "local fraction", 3],
];
const ACTIVE = new Set(["queued", "running"]);
const MAX_BARS = 256;       /* bars per chart at most (else groups) */
const MAX_TABLE_ROWS = 4096; /* rows of the per-machine table at most */

const app = {
  token: sessionStorage.getItem("parsa-token") || "",
  needToken: false,
  datasets: [],
  jobs: new Map(),       /* id -> job JSON */
  streams: new Map(),    /* id -> AbortController of its events stream */
  reports: new Map(),    /* id -> report */
  sorted: true,          /* per-machine bars sorted by value */
  compare: new Set(),    /* job ids picked for comparison */
  view: null,
  upload: null,          /* the last upload: {pct, text, error} */
  poll: null,            /* home view: timer that finds new jobs */
};

/* ---- DOM helpers ---- */

function h(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k === "style") e.style.cssText = v; /* CSSOM: allowed by the CSP */
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of kids.flat()) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

const SVGNS = "http://www.w3.org/2000/svg";
function s(tag, attrs, ...kids) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {}))
    if (v !== null && v !== undefined) e.setAttribute(k, v);
  for (const c of kids.flat())
    if (c !== null && c !== undefined)
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

function fmtInt(x) {
  return x === null || x === undefined ? "–" : Math.round(x).toLocaleString("en-US");
}
function fmtNum(x, d) {
  if (x === null || x === undefined) return "–";
  return d ? Number(x).toFixed(d) : fmtInt(x);
}
function fmtPct(x) {
  if (x === null || x === undefined) return "–";
  return (x >= 0 ? "+" : "") + x.toFixed(1) + "%";
}
function fmtBytes(n) {
  if (n === undefined || n === null) return "–";
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + " " + u[i];
}
function fmtSecs(x) {
  if (x === null || x === undefined || x < 0) return "–";
  if (x < 10) return x.toFixed(2) + " s";
  if (x < 120) return x.toFixed(1) + " s";
  return Math.floor(x / 60) + " min " + Math.round(x % 60) + " s";
}

function say(msg, error) {
  const st = document.getElementById("status");
  st.textContent = msg || "";
  st.className = "status" + (error ? " error" : "");
}

/* ---- the API ---- */

class ApiError extends Error {
  constructor(status, problem) {
    super(problem && problem.detail ? problem.detail : "HTTP " + status);
    this.status = status;
    this.problem = problem;
  }
}

function authHeaders(extra) {
  const hd = Object.assign({}, extra || {});
  if (app.token) hd.Authorization = "Bearer " + app.token;
  return hd;
}

async function api(method, path, body, opts) {
  const init = { method, headers: authHeaders() };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers["Content-Type"] = "application/json";
  }
  if (opts && opts.signal) init.signal = opts.signal;
  const r = await fetch(path, init);
  const text = await r.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
  if (r.status === 401) askToken();
  if (!r.ok) throw new ApiError(r.status, data);
  return data;
}

function askToken() {
  app.needToken = true;
  document.getElementById("token-button").hidden = false;
  const d = document.getElementById("token-dialog");
  if (!d.open) {
    document.getElementById("token-input").value = "";
    d.showModal();
  }
}

function setupToken() {
  const d = document.getElementById("token-dialog");
  const btn = document.getElementById("token-button");
  if (app.token) btn.hidden = false;
  btn.addEventListener("click", askToken);
  document.getElementById("token-cancel").addEventListener("click", () => d.close());
  document.getElementById("token-form").addEventListener("submit", () => {
    app.token = document.getElementById("token-input").value.trim();
    sessionStorage.setItem("parsa-token", app.token);
    app.needToken = false;
    say("");
    render();
  });
}

/* A download through fetch (so the token goes along), saved as name. */
async function download(path, name) {
  try {
    const r = await fetch(path, { headers: authHeaders() });
    if (r.status === 401) { askToken(); return; }
    if (!r.ok) throw new Error("HTTP " + r.status);
    const url = URL.createObjectURL(await r.blob());
    const a = h("a", { href: url, download: name });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (e) {
    say("download failed: " + e.message, true);
  }
}

/* ---- events streams ---- */

/*
 * Follow job id's events until it ends: onEvent(name, data) for each.
 * Reconnects (with Last-Event-ID) after a shutdown or a dropped
 * connection, and after a 503 (too many streams) a little later.
 */
function follow(id, onEvent) {
  if (app.streams.has(id)) return;
  const ctl = new AbortController();
  app.streams.set(id, ctl);
  let lastId = null, ended = false;
  const stop = () => { ended = true; app.streams.delete(id); };
  async function connect() {
    if (ended || ctl.signal.aborted) return;
    let wait = 1000;
    try {
      const hd = authHeaders({ Accept: "text/event-stream" });
      if (lastId !== null) hd["Last-Event-ID"] = String(lastId);
      const r = await fetch("/v1/jobs/" + id + "/events", { headers: hd, signal: ctl.signal });
      if (r.status === 401) { askToken(); stop(); return; }
      if (r.status === 404) { stop(); return; }
      if (!r.ok) { await r.text(); wait = 3000; throw new Error("busy"); }
      const reader = r.body.getReader();
      const dec = new TextDecoder();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let i;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const ev = {};
          for (const line of block.split("\n")) {
            if (!line || line[0] === ":") continue;
            const c = line.indexOf(":");
            const k = c < 0 ? line : line.slice(0, c);
            let v = c < 0 ? "" : line.slice(c + 1);
            if (v[0] === " ") v = v.slice(1);
            ev[k] = v;
          }
          if (ev.id !== undefined) lastId = Number(ev.id);
          if (!ev.event || ev.data === undefined) continue;
          let data = null;
          try { data = JSON.parse(ev.data); } catch (e) { continue; }
          onEvent(ev.event, data);
          if (ev.event === "end") stop();
        }
      }
    } catch (e) {
      if (ctl.signal.aborted) return;
    }
    if (!ended && !ctl.signal.aborted) setTimeout(connect, wait);
  }
  connect();
}

function stopStreams() {
  for (const ctl of app.streams.values()) ctl.abort();
  app.streams.clear();
}

/* Follow every active job; their rows and views update in place. */
function followActive() {
  for (const j of app.jobs.values())
    if (ACTIVE.has(j.state)) follow(j.id, (name, d) => onJobEvent(j.id, name, d));
}

function onJobEvent(id, name, d) {
  const j = app.jobs.get(id);
  if (!j) return;
  j.via = "events";
  if (name === "end") {
    Object.assign(j, d);
    j.eta = null;
    updateJob(id);
    if (app.view && app.view.job === id) render();
    if (d.state === "failed") say("job " + id + " failed: " + (d.error || ""), true);
    return;
  }
  if (name === "state" || name === "progress") {
    j.state = d.state;
    j.phase = d.phase;
    j.progress = d.progress;
    j.elapsed = d.elapsed;
    j.eta = d.eta;
    updateJob(id);
  }
}

/* ---- loading ---- */

async function loadAll() {
  const [ds, js] = await Promise.all([api("GET", "/v1/datasets"), api("GET", "/v1/jobs")]);
  app.datasets = ds.datasets;
  for (const j of js.jobs) {
    const old = app.jobs.get(j.id);
    const nj = old && app.streams.has(j.id) ? Object.assign(old, { params: j.params }) : j;
    /* a state its stream gave before this list came (a short job that
     * ended while the list loaded) still came from the stream */
    if (old && old.via && old.state === nj.state) nj.via = old.via;
    app.jobs.set(j.id, nj);
  }
  followActive();
}

async function report(id) {
  if (app.reports.has(id)) return app.reports.get(id);
  const r = await api("GET", "/v1/jobs/" + id + "/report");
  app.reports.set(id, r);
  return r;
}

function datasetName(id) {
  const d = app.datasets.find((x) => x.id === id);
  return d ? d.name : id;
}

/* ---- the home view: datasets, jobs, start form ---- */

function progressCell(j) {
  const pct = Math.round((j.progress || 0) * 100);
  const bar = h("span", { class: "bar", role: "progressbar", "aria-valuemin": "0",
    "aria-valuemax": "100", "aria-valuenow": String(pct),
    "aria-label": "progress of " + j.id }, h("span", { style: "width:" + pct + "%" }));
  let text = PHASE_LABEL[j.phase] || j.phase || "";
  if (j.state === "running") {
    text += " " + pct + "%";
    if (j.eta !== null && j.eta !== undefined) text += ", ~" + fmtSecs(j.eta) + " left";
  }
  return h("span", { class: "progress" }, bar, h("span", { class: "small" }, text));
}

function jobRow(j) {
  const p = j.params || {};
  const pick = j.state === "succeeded"
    ? h("input", { type: "checkbox", "aria-label": "compare " + j.id,
      checked: app.compare.has(j.id), onchange: (e) => {
        if (e.target.checked) app.compare.add(j.id); else app.compare.delete(j.id);
        updateCompareButton();
      } })
    : "";
  const cancel = ACTIVE.has(j.state)
    ? h("button", { type: "button", class: "danger", "data-cancel": j.id,
      onclick: () => cancelJob(j.id) }, "Cancel")
    : "";
  return h("tr", { id: "job-" + j.id, "data-state": j.state, "data-via": j.via || "list" },
    h("td", {}, pick),
    h("td", {}, h("a", { href: "#/jobs/" + j.id }, j.id)),
    h("td", { class: "name", title: datasetName(j.dataset) }, datasetName(j.dataset)),
    h("td", {}, p.method || ""),
    h("td", { class: "num" }, p.k),
    h("td", {}, p.method === "parsa" ? p.quality || "default" : "–"),
    h("td", {}, h("span", { class: "badge " + j.state }, j.state)),
    h("td", { "data-col": "progress" }, ACTIVE.has(j.state) ? progressCell(j)
      : (j.error ? h("span", { class: "small error-text" }, j.error) : "")),
    h("td", { class: "num", "data-col": "elapsed" }, j.state !== "queued" && j.elapsed !== undefined
      ? fmtSecs(j.elapsed) : "–"),
    h("td", {}, cancel));
}

/* A job's row after an event: in place while its state holds (so a
 * focused Cancel button keeps the focus), else built anew. */
function updateJob(id) {
  const row = document.getElementById("job-" + id);
  const j = app.jobs.get(id);
  if (row && j && row.getAttribute("data-state") === j.state && ACTIVE.has(j.state)) {
    row.querySelector("[data-col=progress]").replaceChildren(progressCell(j));
    row.querySelector("[data-col=elapsed]").textContent = j.state === "queued" ? "–" : fmtSecs(j.elapsed);
    row.setAttribute("data-via", j.via || "list");
  } else if (row && j) {
    row.replaceWith(jobRow(j));
  }
  const pv = document.getElementById("job-progress");
  if (pv && app.view && app.view.job === id) pv.replaceWith(jobProgress(j));
}

function updateCompareButton() {
  const b = document.getElementById("compare-button");
  if (b) b.disabled = app.compare.size < 2;
}

async function cancelJob(id) {
  try {
    const j = await api("DELETE", "/v1/jobs/" + id);
    Object.assign(app.jobs.get(id), j);
    updateJob(id);
    say("cancel requested for " + id);
  } catch (e) {
    say("cancel " + id + ": " + e.message, true);
  }
}

function jobsCard() {
  const rows = [...app.jobs.values()].sort((a, b) =>
    Number(b.id.slice(1)) - Number(a.id.slice(1)));
  return h("section", { class: "card", id: "jobs-card", "aria-labelledby": "jobs-title" },
    h("div", { class: "row", style: "justify-content:space-between;margin-top:0" },
      h("h2", { id: "jobs-title" }, "Jobs"),
      h("button", { type: "button", id: "compare-button", class: "secondary",
        disabled: app.compare.size < 2,
        onclick: () => { location.hash = "#/compare/" + [...app.compare].join(","); } },
        "Compare selected")),
    rows.length ? h("div", { class: "scroll" }, h("table", { id: "jobs" },
      h("thead", {}, h("tr", {}, h("th", {}, h("span", { class: "small" }, "pick")),
        h("th", {}, "job"), h("th", {}, "dataset"), h("th", {}, "method"),
        h("th", { class: "num" }, "k"), h("th", {}, "quality"), h("th", {}, "state"),
        h("th", {}, "progress"), h("th", { class: "num" }, "elapsed"), h("th", {}, ""))),
      h("tbody", {}, rows.map(jobRow))))
      : h("p", { class: "small" }, "No jobs yet: start one with the form."));
}

function datasetsCard() {
  const rows = app.datasets.map((d) => h("tr", { id: "ds-" + d.id },
    h("td", {}, d.id), h("td", {}, d.name),
    h("td", {}, d.format + (d.format === "snap" ? " (" + d.graph + ")" : "") + ", " + d.source),
    h("td", { class: "num" }, fmtInt(d.examples)), h("td", { class: "num" }, fmtInt(d.features)),
    h("td", { class: "num" }, fmtInt(d.nonzeros)), h("td", { class: "num" }, fmtBytes(d.bytes))));
  return h("section", { class: "card", "aria-labelledby": "ds-title" },
    h("h2", { id: "ds-title" }, "Datasets"),
    rows.length ? h("div", { class: "scroll" }, h("table", { id: "datasets" },
      h("thead", {}, h("tr", {}, h("th", {}, "id"), h("th", {}, "name"), h("th", {}, "kind"),
        h("th", { class: "num" }, "examples"), h("th", { class: "num" }, "features"),
        h("th", { class: "num" }, "nonzeros"), h("th", { class: "num" }, "size"))),
      h("tbody", {}, rows))) : h("p", { class: "small" }, "No datasets yet."),
    registerForms());
}

function formatSelect(id) {
  return h("select", { id, name: "format" },
    ["auto", "libsvm", "snap", "pairs"].map((f) => h("option", { value: f }, f)));
}
function graphSelect(id) {
  return h("select", { id, name: "graph" },
    ["adjacency", "edges"].map((f) => h("option", { value: f }, f)));
}

function registerForms() {
  const up = app.upload;
  const prog = h("progress", { id: "upload-progress", max: "100", value: up ? String(up.pct) : "0",
    hidden: !up, "aria-label": "upload progress" });
  const file = h("input", { type: "file", id: "upload-file", class: "visually-hidden",
    "aria-label": "dataset file to upload", style: "display:none",
    onchange: (e) => { if (e.target.files[0]) upload(e.target.files[0]); } });
  const drop = h("div", { class: "drop", id: "drop", tabindex: "0", role: "button",
    "aria-label": "Upload a dataset: drop a file here, or press Enter to choose one",
    onclick: () => file.click(),
    onkeydown: (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); file.click(); } },
    ondragover: (e) => { e.preventDefault(); drop.classList.add("over"); },
    ondragleave: () => drop.classList.remove("over"),
    ondrop: (e) => {
      e.preventDefault();
      drop.classList.remove("over");
      if (e.dataTransfer.files[0]) upload(e.dataTransfer.files[0]);
    } }, "Drop a dataset file here (LIBSVM, SNAP edges, user-item pairs; plain or gzip), or choose one");
  return h("div", {},
    h("h3", {}, "Register a dataset"),
    h("div", { class: "fields" },
      h("div", { class: "field" }, h("label", { for: "up-format" }, "format"), formatSelect("up-format")),
      h("div", { class: "field" }, h("label", { for: "up-graph" }, "graph (SNAP)"), graphSelect("up-graph"))),
    h("div", { style: "margin-top:8px" }, drop, file, prog,
      h("div", { id: "upload-text", class: "small" + (up && up.error ? " error-text" : ""),
        "aria-live": "polite" }, up ? up.text : "")),
    h("form", { class: "row", id: "path-form", onsubmit: registerPath },
      h("div", { style: "flex:1;min-width:180px" },
        h("label", { for: "ds-path", class: "small" }, "or a path under the server's --data-dir"),
        h("input", { id: "ds-path", name: "path", placeholder: "bipartite/gowalla_lightgcn.tsv.gz" })),
      h("button", { type: "submit" }, "Register")));
}

function upload(f) {
  const fmt = document.getElementById("up-format").value;
  const graph = document.getElementById("up-graph").value;
  const q = "?name=" + encodeURIComponent(f.name) +
    (fmt !== "auto" ? "&format=" + fmt : "") + "&graph=" + graph;
  const prog = document.getElementById("upload-progress");
  const txt = document.getElementById("upload-text");
  const xhr = new XMLHttpRequest();
  /* the state lives in app.upload, so a re-render keeps it */
  const show = (pct, text, error) => {
    app.upload = { pct, text, error };
    prog.hidden = false;
    prog.value = pct;
    txt.textContent = text;
    txt.className = "small" + (error ? " error-text" : "");
  };
  show(0, "uploading " + f.name + " (" + fmtBytes(f.size) + ")");
  xhr.upload.onprogress = (e) => {
    if (e.lengthComputable) show(Math.round(100 * e.loaded / e.total),
      "uploading " + f.name + ": " + fmtBytes(e.loaded) + " of " + fmtBytes(e.total));
  };
  xhr.upload.onload = () => show(100, "reading " + f.name + " on the server");
  xhr.onload = async () => {
    let d = null;
    try { d = JSON.parse(xhr.responseText); } catch (e) { d = null; }
    if (xhr.status === 401) { askToken(); show(0, "needs the token", true); return; }
    if (xhr.status !== 201) {
      show(100, "upload failed: " + (d && d.detail ? d.detail : "HTTP " + xhr.status), true);
      return;
    }
    show(100, "registered " + d.id + ": " + fmtInt(d.examples) + " examples (" + d.format + ")");
    await refresh();
  };
  xhr.onerror = () => show(0, "upload failed (connection)", true);
  xhr.open("POST", "/v1/datasets" + q);
  if (app.token) xhr.setRequestHeader("Authorization", "Bearer " + app.token);
  xhr.setRequestHeader("Content-Type", "application/octet-stream");
  xhr.send(f);
}

async function registerPath(e) {
  e.preventDefault();
  const path = document.getElementById("ds-path").value.trim();
  const fmt = document.getElementById("up-format").value;
  const body = { path };
  if (fmt !== "auto") body.format = fmt;
  if (fmt === "snap") body.graph = document.getElementById("up-graph").value;
  try {
    say("reading " + path + " on the server");
    const d = await api("POST", "/v1/datasets", body);
    say("registered " + d.id + " (" + fmtInt(d.examples) + " examples)");
    await refresh();
  } catch (err) {
    say("register " + path + ": " + err.message, true);
  }
}

function field(id, label, input) {
  input.id = id;
  return h("div", { class: "field" }, h("label", { for: id }, label), input);
}

function startCard() {
  const sel = (name, opts, def) => h("select", { name },
    opts.map((o) => h("option", { value: o, selected: o === def }, o)));
  const num = (name, attrs) => h("input", Object.assign({ name, type: "number" }, attrs));
  const dsSel = h("select", { name: "dataset", required: true },
    app.datasets.map((d) => h("option", { value: d.id }, d.id + " " + d.name)));
  return h("section", { class: "card", "aria-labelledby": "start-title" },
    h("h2", { id: "start-title" }, "Start a job"),
    h("form", { id: "start-form", class: "stack", onsubmit: startJob },
      field("f-dataset", "dataset", dsSel),
      h("div", { class: "fields" },
        field("f-k", "machines k", num("k", { min: 1, max: 65536, value: 16, required: true })),
        field("f-method", "method", sel("method", ["parsa", "random", "metis", "greedy"], "parsa")),
        field("f-quality", "quality", sel("quality", ["fast", "default", "best"], "default")),
        field("f-seed", "seed", num("seed", { min: 0, value: 1 })),
        field("f-imbalance", "imbalance", num("imbalance", { min: 1, step: "any", value: 1.03 })),
        field("f-time", "time limit (s)", num("time_limit", { min: 0, step: "any", placeholder: "none" }))),
      h("details", {}, h("summary", {}, "More options"),
        h("div", { class: "fields" },
          field("f-slack", "guard slack", h("input", { name: "guard_slack", placeholder: "1 (or inf)" })),
          field("f-threads", "threads", num("threads", { min: 1, max: 256, placeholder: "server's" })),
          field("f-blocks", "blocks", num("blocks", { min: 1, placeholder: "auto" })),
          field("f-rule", "rule", sel("rule", ["min-s", "round-robin"], "min-s")),
          field("f-workers", "parallel workers", num("workers", { min: 1, max: 64, placeholder: "sequential" })),
          field("f-tau", "tau", h("input", { name: "tau", placeholder: "1 (or inf)" })))),
      h("div", { class: "row" }, h("button", { type: "submit", disabled: !app.datasets.length }, "Start"))));
}

async function startJob(e) {
  e.preventDefault();
  const f = e.target.elements;
  const body = { dataset: f.dataset.value, k: Number(f.k.value), method: f.method.value,
    seed: Number(f.seed.value || 1), imbalance: Number(f.imbalance.value || 1.03) };
  if (f.method.value === "parsa") body.quality = f.quality.value;
  if (f.time_limit.value) body.time_limit = Number(f.time_limit.value);
  const slack = f.guard_slack.value.trim();
  if (slack) body.guard_slack = slack === "inf" ? "inf" : Number(slack);
  if (f.threads.value) body.threads = Number(f.threads.value);
  if (f.blocks.value) body.blocks = Number(f.blocks.value);
  if (f.rule.value !== "min-s") body.rule = f.rule.value;
  if (f.workers.value) body.workers = Number(f.workers.value);
  const tau = f.tau.value.trim();
  if (tau) body.tau = tau === "inf" ? "inf" : Number(tau);
  try {
    const j = await api("POST", "/v1/jobs", body);
    app.jobs.set(j.id, j);
    /* follow it from now on: a short job may end before the lists are
     * loaded again, and its end should still come from its stream */
    follow(j.id, (name, d) => onJobEvent(j.id, name, d));
    say("started " + j.id);
    render();
  } catch (err) {
    say("start: " + err.message + (err.problem && err.problem.field ? " (" + err.problem.field + ")" : ""), true);
  }
}

function homeView() {
  return [h("h1", {}, "Jobs and datasets"),
    h("div", { class: "grid" }, h("div", {}, jobsCard(), datasetsCard()), h("div", {}, startCard()))];
}

/* ---- per-machine bars (SVG) ---- */

/*
 * One chart: parts (k bars), each a stack of series (values per part);
 * order: sorted by total (descending) or part order; max: the scale (for
 * comparisons); the busiest part (largest total) is outlined and named.
 */
function barChart(title, series, opts) {
  const k = series[0].v.length;
  const tot = Array.from({ length: k }, (_, i) => series.reduce((a, sr) => a + sr.v[i], 0));
  const order = [...tot.keys()];
  if (opts.sorted) order.sort((a, b) => tot[b] - tot[a] || a - b);
  let busy = 0;
  for (let i = 1; i < k; i++) if (tot[i] > tot[busy]) busy = i;
  const max = Math.max(opts.max || 0, ...tot, 1);
  /* beyond MAX_BARS machines a bar stands for a group of neighbours in
   * the order shown: the group's largest */
  const grp = Math.ceil(k / MAX_BARS), slots = Math.ceil(k / grp);
  const W = 420, H = 170, L = 46, R = 6, T = 18, B = 22;
  const bw = (W - L - R) / slots, gap = bw > 4 ? Math.min(2, bw * 0.15) : 0;
  const y = (v) => T + (H - T - B) * (1 - v / max);
  const g = [];
  for (const f of [0, 0.5, 1]) {
    g.push(s("line", { class: "grid-line", x1: L, x2: W - R, y1: y(max * f), y2: y(max * f) }));
    g.push(s("text", { class: "axis", x: L - 4, y: y(max * f) + 3, "text-anchor": "end" }, fmtInt(max * f)));
  }
  const shown = [];
  for (let slot = 0; slot < slots; slot++) {
    let p = order[slot * grp];
    for (let q = slot * grp; q < Math.min(k, (slot + 1) * grp); q++)
      if (tot[order[q]] > tot[p]) p = order[q];
    shown.push(p);
  }
  if (grp > 1 && !shown.includes(busy)) shown[Math.floor(order.indexOf(busy) / grp)] = busy;
  shown.forEach((p, slot) => {
    let acc = 0;
    const x = L + slot * bw;
    series.forEach((sr, si) => {
      const v = sr.v[p];
      if (v > 0) g.push(s("rect", { class: "s" + si, x: x + gap / 2, width: Math.max(bw - gap, 0.5),
        y: y(acc + v), height: Math.max(y(acc) - y(acc + v), 0) }));
      acc += v;
    });
    const tip = (grp > 1 ? "largest of " + grp + " machines: " : "") + "machine " + p + ": " + series.map((sr) => sr.name + " " + fmtInt(sr.v[p])).join(", ") +
      (series.length > 1 ? " (total " + fmtInt(tot[p]) + ")" : "");
    g.push(s("rect", { x, y: T, width: bw, height: H - T - B, fill: "transparent",
      class: p === busy ? "busiest" : null, "fill-opacity": 0, "stroke-opacity": p === busy ? 1 : 0,
      "data-part": p }, s("title", {}, tip)));
    if (slots <= 32 || slot % Math.ceil(slots / 16) === 0)
      g.push(s("text", { class: "axis", x: x + bw / 2, y: H - 8, "text-anchor": "middle" }, p));
  });
  const bx = L + shown.indexOf(busy) * bw + bw / 2;
  g.push(s("text", { class: "mark", x: Math.min(Math.max(bx, L + 30), W - 60), y: 12,
    "text-anchor": "middle" }, "▼ busiest: " + busy + " (" + fmtInt(tot[busy]) + ")"));
  const svg = s("svg", { viewBox: "0 0 " + W + " " + H, role: "img",
    "aria-label": title + ", " + (opts.sorted ? "sorted by value" : "in part order") +
      "; busiest machine " + busy + " with " + fmtInt(tot[busy]) }, s("title", {}, title), g);
  return h("figure", { class: "chart", style: "margin:0", "data-chart": opts.key || title,
    "data-busiest": String(busy), "data-sorted": String(!!opts.sorted) },
    h("figcaption", {}, h("strong", {}, title)),
    h("div", { class: "legend" }, series.map((sr, si) => h("span", {}, h("i", { class: "s" + si }), sr.name)),
      h("span", {}, h("i", { class: "busy" }), "busiest")),
    svg);
}

/* The three charts of one placement's per-part figures. */
function partCharts(pf, opts) {
  const k = pf.M.length;
  const local = Array.from({ length: k }, (_, i) => pf.M[i] - pf.in[i]);
  const m = opts.max || {};
  return h("div", { class: "charts" },
    barChart("M_i: parameters per worker", [{ name: "local", v: local }, { name: "remote (in)", v: pf.in }],
      { sorted: app.sorted, max: m.M, key: "M" }),
    barChart("T_i: traffic per machine", [{ name: "pulled (in)", v: pf.in }, { name: "served (out)", v: pf.out }],
      { sorted: app.sorted, max: m.T, key: "T" }),
    barChart("U_i: examples per worker", [{ name: "examples", v: pf.U }],
      { sorted: app.sorted, max: m.U, key: "U" }));
}

function sortToggle() {
  return h("div", { class: "row", style: "margin-top:0" },
    h("label", { class: "small" }, h("input", { type: "checkbox", id: "sorted", checked: app.sorted,
      style: "width:auto;margin-right:6px",
      onchange: (e) => { app.sorted = e.target.checked; render(true); } }), "sort machines by value (else part order)"));
}

function partsTable(pf, id) {
  const keys = ["U", "nnz", "M", "V", "T", "in", "out"];
  return h("details", {}, h("summary", {}, "Per-machine figures as a table"),
    h("div", { class: "scroll" }, h("table", { id },
      h("thead", {}, h("tr", {}, h("th", {}, "machine"), keys.map((k) => h("th", { class: "num" }, k)))),
      h("tbody", {}, pf.M.slice(0, MAX_TABLE_ROWS).map((_, i) => h("tr", {}, h("td", {}, i),
        keys.map((k) => h("td", { class: "num", "data-key": k }, String(pf[k][i]))))))),
      pf.M.length > MAX_TABLE_ROWS ? h("p", { class: "small" }, "the first " + MAX_TABLE_ROWS +
        " of " + pf.M.length + " machines; the report (download) has all") : ""));
}

/* ---- the job view ---- */

function jobProgress(j) {
  const idx = PHASES.indexOf(j.state === "succeeded" || !ACTIVE.has(j.state) ? "done" : j.phase);
  return h("div", { id: "job-progress" },
    h("ol", { class: "phases", "aria-label": "phases" }, PHASES.map((p, i) =>
      h("li", { class: i < idx ? "done" : i === idx ? "now" : "", "aria-current": i === idx ? "step" : null },
        PHASE_LABEL[p]))),
    ACTIVE.has(j.state) ? h("p", {}, progressCell(j), " elapsed ", fmtSecs(j.elapsed)) : "");
}

function metricsTable(rep, id) {
  return h("table", { id: id || "metrics" },
    h("thead", {}, h("tr", {}, h("th", {}, "metric"), h("th", { class: "num" }, rep.method),
      h("th", { class: "num" }, "random"), h("th", { class: "num" }, "improvement"))),
    h("tbody", {}, METRICS.map(([key, label, d]) => {
      const imp = rep.improvement[key];
      return h("tr", { "data-metric": key }, h("td", {}, label),
        h("td", { class: "num", "data-value": "ours" }, fmtNum(rep.metrics[key], d)),
        h("td", { class: "num", "data-value": "random" }, fmtNum(rep.random[key], d)),
        h("td", { class: "num " + (imp > 0 ? "better" : imp < 0 ? "worse" : "") },
          imp === undefined ? "" : fmtPct(imp)));
    })));
}

const TIMING = [["load", "reading data", "#94a3b8"], ["partition_u", "partition U", "#2563eb"],
  ["refine", "refine", "#7c3aed"], ["partition_v", "partition V", "#f59e0b"],
  ["metrics", "metrics + random", "#10b981"]];

function timings(sec) {
  const total = TIMING.reduce((a, [k]) => a + (sec[k] || 0), 0) || 1;
  return h("div", {},
    h("div", { class: "timing", role: "img", "aria-label": "time per phase" },
      TIMING.map(([k, label, c]) => h("span", { title: label + " " + fmtSecs(sec[k] || 0),
        style: "background:" + c + ";width:" + (100 * (sec[k] || 0) / total) + "%" }))),
    h("table", { id: "timings" }, h("tbody", {},
      TIMING.map(([k, label, c]) => h("tr", { "data-phase": k },
        h("td", {}, h("span", { style: "display:inline-block;width:10px;height:10px;margin-right:6px;background:" + c }), label),
        h("td", { class: "num" }, fmtSecs(sec[k] || 0)))),
      h("tr", {}, h("td", {}, h("strong", {}, "total (with saving)")), h("td", { class: "num" }, fmtSecs(sec.total))))));
}

function lookupCard(id) {
  const out = h("div", { id: "lookup-result", class: "small", "aria-live": "polite" });
  const look = async (e, which) => {
    e.preventDefault();
    const v = e.target.elements.q.value.trim();
    try {
      const r = await api("GET", "/v1/jobs/" + id + "/" + which + "/" + encodeURIComponent(v));
      out.textContent = (which === "examples" ? "example " + r.example + " is on worker " :
        "feature " + r.feature + " is owned by server ") + r.part;
    } catch (err) { out.textContent = err.message; }
  };
  const assignOut = h("div", { id: "assign-result", class: "small", "aria-live": "polite" });
  const assign = async (e) => {
    e.preventDefault();
    const rows = e.target.elements.rows.value.split("\n").map((l) => l.trim()).filter((l) => l)
      .map((l) => l.split(/[\s,]+/).map(Number));
    try {
      const r = await api("POST", "/v1/jobs/" + id + "/assign", { examples: rows });
      assignOut.textContent = "parts: " + r.parts.join(", ");
    } catch (err) { assignOut.textContent = err.message; }
  };
  return h("section", { class: "card", "aria-labelledby": "lookup-title" },
    h("h2", { id: "lookup-title" }, "Look up and assign"),
    h("form", { class: "row", id: "lookup-example", onsubmit: (e) => look(e, "examples") },
      h("div", { style: "flex:1" }, h("label", { for: "q-ex", class: "small" }, "example (0-based index)"),
        h("input", { id: "q-ex", name: "q", inputmode: "numeric", required: true })),
      h("button", { type: "submit" }, "Find worker")),
    h("form", { class: "row", id: "lookup-feature", onsubmit: (e) => look(e, "features") },
      h("div", { style: "flex:1" }, h("label", { for: "q-f", class: "small" }, "feature id"),
        h("input", { id: "q-f", name: "q", inputmode: "numeric", required: true })),
      h("button", { type: "submit" }, "Find server")),
    out,
    h("form", { id: "assign-form", onsubmit: assign },
      h("label", { for: "assign-rows", class: "small" }, "assign new examples: one per line, its feature ids"),
      h("textarea", { id: "assign-rows", name: "rows", required: true, placeholder: "1 5 9\n4242" }),
      h("div", { class: "row" }, h("button", { type: "submit" }, "Assign"))),
    assignOut);
}

async function jobView(id) {
  let j = app.jobs.get(id);
  if (!j) {
    j = await api("GET", "/v1/jobs/" + id);
    app.jobs.set(id, j);
  }
  if (ACTIVE.has(j.state)) follow(id, (name, d) => onJobEvent(id, name, d));
  const p = j.params || {};
  const head = [h("h1", {}, "Job " + id),
    h("dl", { class: "kv card" },
      h("dt", {}, "dataset"), h("dd", {}, datasetName(j.dataset)),
      h("dt", {}, "method"), h("dd", {}, p.method + (p.method === "parsa" ? ", quality " + p.quality : "")),
      h("dt", {}, "machines k"), h("dd", { id: "job-k" }, p.k),
      h("dt", {}, "state"), h("dd", {}, h("span", { class: "badge " + j.state, id: "job-state" }, j.state),
        j.error ? h("span", { class: "error-text" }, " " + j.error) : ""),
      h("dt", {}, "elapsed"), h("dd", {}, fmtSecs(j.elapsed)),
      h("dt", {}, "created"), h("dd", {}, j.created || "")),
    jobProgress(j),
    ACTIVE.has(j.state) ? h("button", { type: "button", class: "danger", onclick: () => cancelJob(id) }, "Cancel") : ""];
  if (j.state !== "succeeded") return head;
  const rep = await report(id);
  const dl = (what, name) => h("button", { type: "button", class: "secondary",
    onclick: () => download("/v1/jobs/" + id + "/" + what, name) }, name);
  const base = "job-" + id;
  return head.concat(
    h("div", { class: "grid" },
      h("section", { class: "card", "aria-labelledby": "m-title" },
        h("h2", { id: "m-title" }, "Metrics beside random"),
        h("div", { class: "scroll" }, metricsTable(rep)),
        h("p", { class: "small" }, "improvement = (random − this) / this; random = examples dealt at random, " +
          "features on random servers, mean of " + (rep.params.random_trials || 5) + " seeds")),
      h("section", { class: "card", "aria-labelledby": "t-title" },
        h("h2", { id: "t-title" }, "Time per phase"), timings(rep.seconds),
        h("h3", {}, "Downloads"),
        h("div", { class: "row", style: "margin-top:0" },
          dl("placement/examples", base + ".examples"), dl("placement/features", base + ".features"),
          dl("report", base + ".json")))),
    h("section", { class: "card", "aria-labelledby": "pm-title" },
      h("h2", { id: "pm-title" }, "Per machine"), sortToggle(),
      rep.parts ? [partCharts(rep.parts, {}), partsTable(rep.parts, "parts")]
        : h("p", {}, "This report has no per-machine figures."),
      rep.random_parts ? h("details", {}, h("summary", {}, "Random placement (first seed), same scale"),
        partCharts(rep.random_parts, { max: scaleOf([rep.parts, rep.random_parts]) })) : ""),
    lookupCard(id));
}

/* ---- compare ---- */

function scaleOf(pfs) {
  const m = { M: 0, T: 0, U: 0 };
  for (const pf of pfs) {
    if (!pf) continue;
    for (let i = 0; i < pf.M.length; i++) {
      m.M = Math.max(m.M, pf.M[i]);
      m.T = Math.max(m.T, pf.T[i]);
      m.U = Math.max(m.U, pf.U[i]);
    }
  }
  return m;
}

function jobLabel(j) {
  const p = j.params || {};
  return j.id + " " + p.method + (p.method === "parsa" ? " " + p.quality : "") + " k=" + p.k;
}

async function compareView(ids) {
  const done = [...app.jobs.values()].filter((j) => j.state === "succeeded");
  const picker = h("form", { id: "compare-form", onsubmit: (e) => {
    e.preventDefault();
    const picked = [...e.target.querySelectorAll("input:checked")].map((x) => x.value);
    location.hash = "#/compare/" + picked.join(",");
  } },
  h("fieldset", {}, h("legend", {}, "Finished jobs (pick two or more of one dataset)"),
    done.map((j) => h("label", { style: "display:block" },
      h("input", { type: "checkbox", value: j.id, checked: ids.includes(j.id), style: "width:auto;margin-right:6px" }),
      jobLabel(j) + " — " + datasetName(j.dataset)))),
  h("div", { class: "row" }, h("button", { type: "submit" }, "Compare")));
  const out = [h("h1", {}, "Compare placements"), h("section", { class: "card" }, picker)];
  if (ids.length < 2) return out;
  const jobs = ids.map((id) => app.jobs.get(id)).filter((j) => j);
  const reps = await Promise.all(jobs.map((j) => report(j.id)));
  const dsets = new Set(jobs.map((j) => j.dataset));
  if (dsets.size > 1)
    out.push(h("p", { class: "error-text" }, "These jobs are of different datasets: their figures do not compare."));
  out.push(h("section", { class: "card", "aria-labelledby": "cm-title" },
    h("h2", { id: "cm-title" }, "Metrics"),
    h("div", { class: "scroll" }, h("table", { id: "compare-metrics" },
      h("thead", {}, h("tr", {}, h("th", {}, "metric"),
        jobs.map((j) => h("th", { class: "num", "data-job": j.id }, jobLabel(j))),
        h("th", { class: "num" }, "random"))),
      h("tbody", {}, METRICS.map(([key, label, d]) => h("tr", { "data-metric": key }, h("td", {}, label),
        reps.map((r, i) => h("td", { class: "num", "data-job": jobs[i].id }, fmtNum(r.metrics[key], d),
          key.endsWith("_max") || key === "T_sum"
            ? h("span", { class: "small " + (r.improvement[key] > 0 ? "better" : "worse") }, " " + fmtPct(r.improvement[key]))
            : "")),
        h("td", { class: "num" }, fmtNum(reps[0].random[key], d)))),
      h("tr", {}, h("td", {}, "time (partition)"), reps.map((r) => h("td", { class: "num" }, fmtSecs(r.seconds.partition))),
        h("td", {}, "")))))));
  const scale = scaleOf(reps.map((r) => r.parts));
  out.push(h("section", { class: "card", "aria-labelledby": "cp-title" },
    h("h2", { id: "cp-title" }, "Per machine, one scale"), sortToggle(),
    jobs.map((j, i) => h("div", { class: "cmp-job", "data-job": j.id },
      h("h3", {}, jobLabel(j)),
      reps[i].parts ? partCharts(reps[i].parts, { max: scale }) : h("p", {}, "no per-machine figures")))));
  return out;
}

/* ---- routing ---- */

function route() {
  const hash = location.hash || "#/";
  let m;
  if ((m = hash.match(/^#\/jobs\/([A-Za-z0-9_-]+)$/))) return { name: "job", job: m[1] };
  if ((m = hash.match(/^#\/compare\/?([A-Za-z0-9_,-]*)$/)))
    return { name: "compare", ids: m[1] ? m[1].split(",").filter((x) => x) : [] };
  return { name: "home" };
}

/* Home view: every 4 s, find jobs started elsewhere (their progress then
 * comes from their event streams) and ended jobs nobody streamed. */
async function pollJobs() {
  if (!app.view || app.view.name !== "home" || document.hidden) return;
  let js;
  try { js = await api("GET", "/v1/jobs"); } catch (e) { return; }
  const tbody = document.querySelector("#jobs tbody");
  let fresh = false;
  for (const j of js.jobs) {
    if (app.streams.has(j.id)) continue;
    const old = app.jobs.get(j.id);
    if (old && old.state === j.state) continue;
    app.jobs.set(j.id, j);
    if (old) updateJob(j.id);           /* its row only */
    else if (tbody) tbody.prepend(jobRow(j));
    else fresh = true;                  /* the first job: the table */
  }
  followActive();
  const card = document.getElementById("jobs-card");
  if (fresh && card) card.replaceWith(jobsCard());
}

/* Build the current view; cached: from what is loaded (a toggle), else
 * after loading the lists again. */
let renderSeq = 0;
async function render(cached) {
  const seq = ++renderSeq;
  const main = document.getElementById("main");
  app.view = route();
  try {
    if (cached !== true) await loadAll();
    let kids;
    if (app.view.name === "job") kids = await jobView(app.view.job);
    else if (app.view.name === "compare") kids = await compareView(app.view.ids);
    else kids = homeView();
    if (seq !== renderSeq) return;
    main.replaceChildren(...[kids].flat());
    if (!app.poll) app.poll = setInterval(pollJobs, 4000);
    main.setAttribute("data-view", app.view.name);
    /* for the load-time benchmark (bench/ui.py): when a view is on screen */
    performance.mark("parsa-rendered");
    document.title = "parsa — " + (app.view.name === "job" ? "job " + app.view.job
      : app.view.name === "compare" ? "compare" : "jobs");
  } catch (e) {
    if (seq !== renderSeq) return;
    if (e instanceof ApiError && e.status === 401) {
      main.replaceChildren(h("p", {}, "This server needs a token: ",
        h("button", { type: "button", onclick: askToken }, "enter it")));
      return;
    }
    main.replaceChildren(h("p", { class: "error-text" }, "Could not load: " + e.message));
  }
}

async function refresh() {
  await render();
}

window.addEventListener("hashchange", () => {
  stopStreams();
  render().then(() => {
    window.scrollTo(0, 0);
    document.getElementById("main").focus({ preventScroll: true });
  });
});
/* Ask for the token before the first API call when the server needs one
 * (the server marks the page: <body data-auth="1">; /healthz says so too). */
function start() {
  setupToken();
  if (document.body.dataset.auth === "1" && !app.token) askToken();
  if (!app.needToken) render();
  else document.getElementById("main").replaceChildren(h("p", {}, "This server needs a token: ",
    h("button", { type: "button", onclick: askToken }, "enter it")));
}
start();
