#!/usr/bin/env python3
"""Regenerate the README's screenshots of the web page (docs/ui-*.png):
headless Chromium (tests/browser/wd.py) against a real `parsa serve` on a
loopback port, with gowalla (../shared/data/bipartite/gowalla_lightgcn.tsv.gz)
partitioned at k=16 with quality fast, default and best, and a large
synthetic job running for the job list:

  docs/ui-jobs.png      the job list, a running job's live progress
  docs/ui-job.png       the job page of gowalla, best, k=16
  docs/ui-compare.png   fast, default and best side by side

Usage: python3 scripts/ui-screenshots.py [BUILD_DIR]   (make screenshots)
"""
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "browser"))
import wd  # noqa: E402

SHARED = os.environ.get("PARSA_SHARED_DATA", os.path.join(ROOT, "..", "shared", "data"))
GOWALLA = os.path.join(SHARED, "bipartite", "gowalla_lightgcn.tsv.gz")


class Api:
    def __init__(self, port):
        self.port = port

    def __call__(self, method, path, body=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        data = json.dumps(body) if body is not None else None
        c.request(method, path, body=data, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        out = json.loads(r.read() or b"null")
        c.close()
        if r.status >= 300:
            raise RuntimeError("%s %s: %d %s" % (method, path, r.status, out))
        return out


def viewport(d, width, height):
    """The page's viewport exactly width x height (CSS pixels)."""
    d.cmd("POST", "/goog/cdp/execute", {"cmd": "Emulation.setDeviceMetricsOverride", "params": {
        "width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}})


def shoot(d, path, url, full=False):
    viewport(d, 1280, 800)
    d.get(url)
    d.wait_js("document.querySelector('main[data-view]') !== null && "
              "document.querySelector('main').children.length > 0", 60)
    time.sleep(0.5)
    if full:
        h = d.js("return document.documentElement.scrollHeight")
        viewport(d, 1280, min(max(h, 800), 2600))
        time.sleep(0.3)
    d.screenshot(path)
    print("wrote", path)


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    binary = os.path.join(ROOT, build, "parsa")
    if not os.path.exists(GOWALLA):
        sys.exit("screenshots: %s is missing (../shared/data)" % GOWALLA)
    tmp = tempfile.mkdtemp(prefix="parsa-shots-")
    data = os.path.join(tmp, "data")
    os.makedirs(data)
    shutil.copy(GOWALLA, data)
    synth = os.path.join(data, "ctr-synthetic.svm")
    subprocess.run([binary, "gen", "--examples", "300000", "--features", "100000",
                    "--avg-nnz", "25", "--topics", "40", "--out", synth, "-q"], check=True)
    srv = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0", "--state-dir",
                            os.path.join(tmp, "state"), "--data-dir", data],
                           stdout=subprocess.PIPE, text=True)
    d = None
    try:
        port = int(srv.stdout.readline().strip().rsplit(":", 1)[1])
        api = Api(port)
        g = api("POST", "/v1/datasets", {"path": os.path.basename(GOWALLA)})["id"]
        s = api("POST", "/v1/datasets", {"path": os.path.basename(synth)})["id"]
        ids = [api("POST", "/v1/jobs", {"dataset": g, "k": 16, "quality": q})["id"]
               for q in ("fast", "default", "best")]
        for j in ids:
            api("GET", "/v1/jobs/%s?wait=600" % j)
        api("POST", "/v1/jobs", {"dataset": g, "k": 16, "method": "metis"})
        api("GET", "/v1/jobs/j4?wait=600")
        d = wd.Driver(1280, 800)
        base = "http://127.0.0.1:%d/" % port
        running = api("POST", "/v1/jobs", {"dataset": s, "k": 128, "quality": "default"})["id"]
        queued = api("POST", "/v1/jobs", {"dataset": s, "k": 64, "quality": "fast"})["id"]
        viewport(d, 1280, 800)
        d.get(base)
        d.wait(lambda: d.js("var b = document.querySelector('#job-%s [role=progressbar]');"
                            "return b ? Number(b.getAttribute('aria-valuenow')) : 0" % running) > 35,
               300, "the running job's progress")
        d.screenshot(os.path.join(ROOT, "docs", "ui-jobs.png"))
        print("wrote docs/ui-jobs.png")
        for j in (queued, running):
            api("DELETE", "/v1/jobs/" + j)
        shoot(d, os.path.join(ROOT, "docs", "ui-job.png"), base + "#/jobs/" + ids[2], full=True)
        shoot(d, os.path.join(ROOT, "docs", "ui-compare.png"),
              base + "#/compare/" + ",".join(ids), full=True)
        errors = [e for e in d.console() if e.get("level") == "SEVERE"]
        if errors:
            sys.exit("screenshots: console errors: %s" % errors)
    finally:
        if d:
            d.quit()
        srv.terminate()
        srv.wait(timeout=60)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
