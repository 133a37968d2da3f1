#!/usr/bin/env python3
"""Browser test of the web page of `parsa serve` (http/ui/): headless
Chromium (Debian's chromium + chromedriver, driven over WebDriver by
tests/browser/wd.py) against a real `parsa serve --token-file` on
127.0.0.1.  It enters the token, uploads a bundled sample, starts a job
and sees it reach done through the events stream, checks that the job
page shows the API's report (metrics, random, per-machine figures,
busiest machines, lookups, assign), cancels a second job, compares two
jobs, uses the start form from the keyboard, checks the narrow layout and
that the console stayed free of errors, and that without the token every
API call answers 401.  Skips with a message where Chromium cannot start.
Ends with the line "N passed, N failed[, N skipped]".
"""
import json
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
sys.path.insert(0, os.path.join(HERE, "..", "http"))
from clitest import Skip, finish, results, run, tmp, write_token  # noqa: E402
from httptest import DATA, Server, serving  # noqa: E402
import wd  # noqa: E402

TOKEN = "browser-test-token"


def fmt_int(x):
    return "{:,}".format(int(round(x)))


def fmt_metric(x, key):
    return ("%.3f" % x) if key in ("RF", "imbalance", "local_fraction") else fmt_int(x)


def argmax(v):
    b = 0
    for i in range(1, len(v)):
        if v[i] > v[b]:
            b = i
    return b


class Page:
    """The browser on the server's page, with the API beside it."""

    def __init__(self, d, s):
        self.d, self.s = d, s
        self.url = "http://127.0.0.1:%d/" % s.port

    def go(self, hash_=""):
        self.d.get(self.url + hash_)

    def errors(self):
        return [e for e in self.d.console() if e.get("level") == "SEVERE"]

    def row_state(self, jid):
        return self.d.js("var r = document.getElementById('job-' + arguments[0]);"
                         "return r ? r.getAttribute('data-state') : null;", jid)


def gen_slow(dirname):
    p = os.path.join(dirname, "slow.svm")
    if not os.path.exists(p):
        run("gen", "--examples", 150000, "--features", 50000, "--avg-nnz", 25,
            "--topics", 40, "--out", p, "-q")
    return p


def start_browser():
    try:
        return wd.Driver(1280, 800)
    except wd.Unavailable as e:
        raise Skip("the browser tests need Chromium: %s" % e)


def check(name, fn):
    """One check of the scenario (counted like a test)."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - report any failure
        results["failed"] += 1
        print("FAIL %s: %s" % (name, e))
        return False
    results["passed"] += 1
    print("ok   %s" % name)
    return True


def api_without_token_is_401(s):
    jid, ds = "j1", "d1"
    calls = [("GET", "/v1/datasets", None), ("POST", "/v1/datasets", {"path": "x"}),
             ("GET", "/v1/datasets/" + ds, None), ("GET", "/v1/jobs", None),
             ("POST", "/v1/jobs", {"dataset": ds, "k": 2}), ("GET", "/v1/jobs/" + jid, None),
             ("DELETE", "/v1/jobs/" + jid, None), ("GET", "/v1/jobs/%s/report" % jid, None),
             ("GET", "/v1/jobs/%s/events" % jid, None),
             ("GET", "/v1/jobs/%s/placement/examples" % jid, None),
             ("GET", "/v1/jobs/%s/placement/features" % jid, None),
             ("GET", "/v1/jobs/%s/examples/0" % jid, None),
             ("GET", "/v1/jobs/%s/features/1" % jid, None),
             ("POST", "/v1/jobs/%s/assign" % jid, {"examples": [[1]]}),
             ("GET", "/metrics", None)]
    tok, s.token = s.token, None
    try:
        for m, path, body in calls:
            st, hd, _ = s.req(m, path, body)
            assert st == 401, (m, path, st)
            st, hd, _ = s.req(m, path, body, headers={"Authorization": "Bearer wrong"})
            assert st == 401, (m, path, st)
        # the page, its files and /healthz need none
        for path in ("/", "/ui/", "/ui/app.js", "/ui/app.css", "/healthz"):
            st, hd, body = s.req("GET", path)
            assert st == 200, (path, st)
        assert s.json("GET", "/healthz")["auth"] is True
        assert b'<body data-auth="1">' in s.req("GET", "/")[2]
        st, _, _ = s.req("GET", "/ui/nope.js")
        assert st == 404
    finally:
        s.token = tok


def run_scenario(p, s, d, slow):
    def token_dialog():
        p.go()
        d.wait_js("document.getElementById('token-dialog').open", what="the token dialog")
        d.one("#token-input").send_keys(TOKEN)
        d.one("#token-form button[type=submit]").click()
        d.wait_js("document.querySelector('main[data-view=home]') !== null", what="home view")
        d.one("#drop")
    check("ui_asks_for_the_token", token_dialog)
    s.token = TOKEN

    def upload():
        d.js("document.getElementById('up-format').value = 'libsvm'")
        d.one("#upload-file").send_keys(os.path.join(DATA, "a9a-sample.svm.gz"))
        d.wait(lambda: "registered d1" in d.js(
            "return document.getElementById('upload-text').textContent"), 60, "upload registered")
        assert d.js("return document.getElementById('upload-progress').value") == 100
        d.wait_js("document.getElementById('ds-d1') !== null", what="dataset row")
        ds = s.json("GET", "/v1/datasets/d1")
        row = d.text("#ds-d1")
        assert fmt_int(ds["examples"]) in row and "libsvm" in row and "upload" in row, row
        assert ds["examples"] == 8000, ds
    check("ui_uploads_a_sample_with_progress", upload)

    def register_path():
        d.js("document.getElementById('up-format').value = 'auto'")
        d.one("#ds-path").send_keys(os.path.basename(slow))
        d.one("#path-form button").click()
        d.wait_js("document.getElementById('ds-d2') !== null", 120, "dataset d2 row")
        assert s.json("GET", "/v1/datasets/d2")["examples"] == 150000
    check("ui_registers_a_path", register_path)

    def start_job_see_done():
        # record the page's requests from here on
        d.js("window.__req = []; var f = window.fetch; window.fetch = function(u, o) {"
             " window.__req.push(String(u)); return f.apply(this, arguments); };")
        d.js("var f = document.getElementById('start-form');"
             "f.elements.dataset.value = 'd1'; f.elements.k.value = '4';"
             "f.elements.quality.value = 'default';")
        d.one("#start-form button[type=submit]").click()
        d.wait_js("document.getElementById('job-j1') !== null", what="job row")
        n_list = d.js("return window.__req.filter(function(u){return u === '/v1/jobs'}).length")
        d.wait(lambda: p.row_state("j1") == "succeeded", 120, "j1 succeeded on the page")
        reqs = d.js("return window.__req")
        assert "/v1/jobs/j1/events" in reqs, reqs
        # the row turned succeeded from the stream's end event, not a poll
        assert d.js("return document.getElementById('job-j1').dataset.via") == "events"
        assert "/v1/jobs/j1" not in reqs, reqs
        del n_list
        assert s.json("GET", "/v1/jobs/j1")["state"] == "succeeded"
    check("ui_starts_a_job_and_sees_it_done_through_events", start_job_see_done)

    def job_page():
        p.go("#/jobs/j1")
        d.one("#metrics")
        rep = s.json("GET", "/v1/jobs/j1/report")
        for key in ("M_max", "T_max", "T_sum", "RF", "imbalance", "local_fraction"):
            ours = d.text("#metrics tr[data-metric=%s] td[data-value=ours]" % key)
            rnd = d.text("#metrics tr[data-metric=%s] td[data-value=random]" % key)
            assert ours == fmt_metric(rep["metrics"][key], key), (key, ours, rep["metrics"][key])
            assert rnd == fmt_metric(rep["random"][key], key), (key, rnd, rep["random"][key])
        imp = d.text("#metrics tr[data-metric=T_sum] td:last-child")
        assert imp == "%+.1f%%" % rep["improvement"]["T_sum"], (imp, rep["improvement"])
        # the per-machine table equals the report's parts
        cells = d.js("var o = {}; document.querySelectorAll('#parts td[data-key]').forEach("
                     "function(c){ (o[c.dataset.key] = o[c.dataset.key] || []).push(Number(c.textContent)); });"
                     "return o;")
        for key, v in rep["parts"].items():
            assert cells[key] == v, (key, cells[key], v)
        # the busiest machine marked on each chart is the report's
        busy = d.js("var o = {}; document.querySelectorAll('.charts')[0].querySelectorAll("
                    "'figure[data-chart]').forEach(function(f){ o[f.dataset.chart] = "
                    "Number(f.dataset.busiest); }); return o;")
        pp = rep["parts"]
        assert busy == {"M": argmax(pp["M"]), "T": argmax(pp["T"]), "U": argmax(pp["U"])}, busy
        # timings per phase are the report's
        t = d.text("#timings tr[data-phase=partition_u] td.num")
        assert t.endswith(" s"), t
        # unsorted: bars in part order, same busiest machine
        d.one("#sorted").click()
        d.wait_js("document.querySelector('figure[data-chart=T]').dataset.sorted === 'false'")
        assert d.js("return Number(document.querySelector('figure[data-chart=T]').dataset.busiest)") == argmax(pp["T"])
        # look up example 5 and feature 3; assign two new examples
        part = s.json("GET", "/v1/jobs/j1/examples/5")["part"]
        d.one("#q-ex").send_keys("5")
        d.one("#lookup-example button").click()
        d.wait(lambda: "example 5 is on worker %d" % part in d.text("#lookup-result"), 20, "lookup")
        owner = s.json("GET", "/v1/jobs/j1/features/3")["part"]
        d.one("#q-f").send_keys("3")
        d.one("#lookup-feature button").click()
        d.wait(lambda: "feature 3 is owned by server %d" % owner in d.text("#lookup-result"), 20, "lookup f")
        parts = s.json("POST", "/v1/jobs/j1/assign", {"examples": [[1, 5, 9], [40, 41]]})["parts"]
        d.one("#assign-rows").send_keys("1 5 9\n40, 41")
        d.one("#assign-form button").click()
        d.wait(lambda: d.text("#assign-result") == "parts: " + ", ".join(map(str, parts)), 20, "assign")
    check("ui_job_page_shows_the_report", job_page)

    def downloads():
        # the download buttons fetch with the token; the files are the API's
        got = d.js_async(
            "var done = arguments[arguments.length - 1];"
            "fetch('/v1/jobs/j1/placement/examples', {headers: {Authorization: 'Bearer " + TOKEN + "'}})"
            ".then(function(r){ return r.text(); }).then(done);")
        _, _, body = s.req("GET", "/v1/jobs/j1/placement/examples")
        assert got == body.decode() and len(d.find("main button.secondary")) >= 3
    check("ui_downloads", downloads)

    def cancel_second():
        p.go()
        # a job of seconds, started from the form (blocks under "More options")
        d.one("#start-form summary").click()
        d.js("var f = document.getElementById('start-form'); f.elements.dataset.value = 'd2';"
             "f.elements.k.value = '128'; f.elements.blocks.value = '400';")
        d.one("#start-form button[type=submit]").click()
        jid = d.wait(lambda: [j["id"] for j in s.json("GET", "/v1/jobs")["jobs"]
                              if j["dataset"] == "d2"], 30, "the job")[0]
        assert s.json("GET", "/v1/jobs/" + jid)["params"]["blocks"] == 400
        d.wait_js("document.getElementById('job-%s') !== null" % jid, what="job row")
        d.wait(lambda: p.row_state(jid) == "running" and d.js(
            "var b = document.querySelector('#job-%s [role=progressbar]');"
            "return b ? Number(b.getAttribute('aria-valuenow')) : 0" % jid) > 5, 120,
            "progress of the running job on the page")
        shot = os.environ.get("PARSA_UI_SHOTS")
        if shot:
            d.screenshot(os.path.join(shot, "ui-jobs-running.png"))
        d.one("#job-%s button[data-cancel]" % jid).click()
        d.wait(lambda: p.row_state(jid) == "cancelled", 120, "cancelled on the page")
        assert s.json("GET", "/v1/jobs/" + jid)["state"] == "cancelled"
    check("ui_cancels_a_running_job", cancel_second)

    def keyboard_start():
        p.go()
        d.one("#f-k")
        d.js("var f = document.getElementById('start-form'); f.elements.dataset.value = 'd1';"
             "f.elements.quality.value = 'fast';")
        k = d.one("#f-k")
        k.clear()
        k.send_keys("4\n")  # Enter submits the form
        d.wait(lambda: s.json("GET", "/v1/jobs")["jobs"][-1]["params"]["quality"] == "fast", 30,
               "a job started from the keyboard")
        jid = s.json("GET", "/v1/jobs")["jobs"][-1]["id"]
        d.wait(lambda: p.row_state(jid) == "succeeded", 120, "fast job done")
        # every control of the page is a real, focusable control
        bad = d.js("return [].slice.call(document.querySelectorAll('[onclick], div[role=button]'))"
                   ".filter(function(e){ return e.tabIndex < 0; }).length")
        assert bad == 0 and d.js("return document.getElementById('drop').tabIndex") == 0
    check("ui_start_form_from_the_keyboard", keyboard_start)

    def compare():
        jobs = [j for j in s.json("GET", "/v1/jobs")["jobs"]
                if j["state"] == "succeeded" and j["dataset"] == "d1"]
        a, b = jobs[0]["id"], jobs[1]["id"]
        p.go()
        for jid in (a, b):
            d.one("#job-%s input[type=checkbox]" % jid).click()
        d.wait_js("!document.getElementById('compare-button').disabled")
        d.one("#compare-button").click()
        d.one("#compare-metrics")
        for jid in (a, b):
            rep = s.json("GET", "/v1/jobs/%s/report" % jid)
            for key in ("M_max", "T_max", "T_sum", "RF"):
                cell = d.text("#compare-metrics tr[data-metric=%s] td[data-job=%s]" % (key, jid))
                assert cell.startswith(fmt_metric(rep["metrics"][key], key)), (jid, key, cell)
        # the per-machine charts of both jobs share one scale
        tops = d.js("return [].slice.call(document.querySelectorAll('.cmp-job figure[data-chart=T] "
                    "svg text.axis')).filter(function(t){ return t.getAttribute('text-anchor') === 'end'; })"
                    ".map(function(t){ return t.textContent; })")
        assert len(tops) == 6 and tops[2] == tops[5], tops
        ra, rb = (s.json("GET", "/v1/jobs/%s/report" % j) for j in (a, b))
        assert tops[2] == fmt_int(max(ra["parts"]["T"] + rb["parts"]["T"])), tops
    check("ui_compares_two_jobs", compare)

    def many_machines():
        # k = 1000: at most 256 bars a chart (groups of neighbours), the
        # busiest machine still the one marked; the table lists all
        j = s.json("POST", "/v1/jobs", {"dataset": "d1", "k": 1000, "quality": "fast"}, status=202)
        s.wait_job(j["id"])
        rep = s.json("GET", "/v1/jobs/%s/report" % j["id"])
        p.go("#/jobs/" + j["id"])
        d.one("#metrics")
        n = d.js("return document.querySelector('.charts figure[data-chart=U]')"
                 ".querySelectorAll('rect[data-part]').length")
        assert n == 250, n
        busy = d.js("return Number(document.querySelector('figure[data-chart=T]').dataset.busiest)")
        assert busy == argmax(rep["parts"]["T"]), busy
        assert d.js("return document.querySelectorAll('#parts tbody tr').length") == 1000
    check("ui_job_page_with_1000_machines", many_machines)

    def narrow():
        d.size(420, 800)
        try:
            for h in ("", "#/jobs/j1", "#/compare/j1,j3"):
                p.go(h)
                d.wait_js("document.querySelector('main[data-view]') !== null && "
                          "document.querySelector('main').children.length > 0")
                time.sleep(0.2)
                over = d.js("return document.documentElement.scrollWidth - window.innerWidth")
                assert over <= 1, (h, over)
        finally:
            d.size(1280, 800)
    check("ui_fits_a_narrow_window", narrow)

    check("ui_no_console_errors", lambda: (lambda e: None if not e else (_ for _ in ()).throw(
        AssertionError(e)))(p.errors()))
    check("api_without_token_is_401", lambda: api_without_token_is_401(s))



@serving
def browser_scenario_and_clean_server_stop():
    d = start_browser()
    state, datadir = tmp("st-ui"), tmp("ui-data")
    os.makedirs(datadir, exist_ok=True)
    shutil.copy(os.path.join(DATA, "movielens-sample.csv.gz"), datadir)
    slow = gen_slow(datadir)
    s = Server(state, "--token-file", write_token("ui-token", TOKEN), data_dir=datadir)
    p = Page(d, s)
    try:
        run_scenario(p, s, d, slow)
    finally:
        d.quit()


# each check above counted; the scenario itself passes when its server
# stopped cleanly on SIGTERM (exit 0, no sanitizer report: @serving)
finish()
