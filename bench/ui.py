#!/usr/bin/env python3
"""Benchmarks of the web page and the events stream (issue 20), against a
real `parsa serve` on 127.0.0.1 and headless Chromium (tests/browser/wd.py):

1. first load: a state dir with 100 finished jobs (a9a sample, k=4, run
   through the API), the server restarted on it (so it loads them from
   disk), then the page opened in a fresh browser (new profile: nothing
   cached) and again reloaded; the time from the navigation's start to the
   page's "parsa-rendered" mark (its job list of 100 rows on screen), median
   of several runs; and the bytes of the page's requests.
2. events cost: the same partition job (a synthetic LIBSVM set, k=64)
   run alternately with no listener and with 10 clients following its
   events stream; the job's own partition time (report seconds.partition)
   and wall time, median of the rounds.

Usage: python3 bench/ui.py [BUILD_DIR] [--rounds N]
"""
import os
import sys

# bench/http.py would shadow the standard library's http package
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]

import http.client  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "browser"))
import wd  # noqa: E402


class Server:
    def __init__(self, binary, state, data):
        self.p = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0", "--state-dir",
                                   state, "--data-dir", data], stdout=subprocess.PIPE, text=True)
        self.port = int(self.p.stdout.readline().strip().rsplit(":", 1)[1])

    def __call__(self, method, path, body=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        c.request(method, path, body=json.dumps(body) if body is not None else None,
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        c.close()
        if r.status >= 300:
            raise RuntimeError("%s %s: %d %s" % (method, path, r.status, data[:300]))
        return json.loads(data) if data[:1] in (b"{", b"[") else data

    def stop(self):
        self.p.terminate()
        self.p.wait(timeout=120)


def first_load(binary, tmp, runs):
    data = os.path.join(tmp, "data")
    os.makedirs(data)
    shutil.copy(os.path.join(ROOT, "data", "a9a-sample.svm.gz"), data)
    state = os.path.join(tmp, "state-load")
    s = Server(binary, state, data)
    ds = s("POST", "/v1/datasets", {"path": "a9a-sample.svm.gz"})["id"]
    for i in range(100):
        j = s("POST", "/v1/jobs", {"dataset": ds, "k": 4, "seed": i + 1})["id"]
    s("GET", "/v1/jobs/%s?wait=600" % j)
    s.stop()
    s = Server(binary, state, data)  # the 100 jobs come from disk
    assert len(s("GET", "/v1/jobs")["jobs"]) == 100
    url = "http://127.0.0.1:%d/" % s.port
    sizes = {p: len(s("GET", p) if p.startswith("/v1") else raw(s.port, p))
             for p in ("/", "/ui/app.js", "/ui/app.css")}
    sizes["/v1/jobs"] = len(json.dumps(s("GET", "/v1/jobs")))
    probe = ("var m = performance.getEntriesByName('parsa-rendered');"
             "return m.length && document.querySelectorAll('#jobs tbody tr').length === 100"
             " ? m[0].startTime : 0")
    parts = ("var t = {}; performance.getEntriesByType('resource').forEach(function(r){"
             " t[r.name.replace(/^https?:\\/\\/[^\\/]+/, '')] = r.responseEnd; });"
             "var n = performance.getEntriesByType('navigation')[0];"
             "return [n.responseEnd, t['/ui/app.js'], t['/v1/jobs']];")
    cold, empty, warm, split = [], [], [], []
    try:
        for _ in range(runs):
            d = wd.Driver(1280, 800)  # a new profile: an empty cache
            try:
                d.get(url)
                cold.append(d.wait(lambda: d.js(probe), 30, "first render", poll=0.2))
                for _ in range(3):  # the same browser, its cache emptied
                    d.cmd("POST", "/goog/cdp/execute",
                          {"cmd": "Network.clearBrowserCache", "params": {}})
                    d.get("about:blank")
                    d.get(url)
                    empty.append(d.wait(lambda: d.js(probe), 30, "render", poll=0.2))
                    split.append(d.js(parts) + [empty[-1]])
                for _ in range(3):  # cached files revalidated (304)
                    d.get(url + "?r=%f" % time.time())
                    warm.append(d.wait(lambda: d.js(probe), 30, "render", poll=0.2))
                errs = [e for e in d.console() if e.get("level") == "SEVERE"]
                assert not errs, errs
            finally:
                d.quit()
    finally:
        s.stop()
    return cold, empty, warm, split, sizes


def raw(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("GET", path)
    b = c.getresponse().read()
    c.close()
    return b


def loop_cpu(pid):
    """CPU seconds of the server's event-loop thread (the main thread)."""
    with open("/proc/%d/task/%d/stat" % (pid, pid)) as f:
        v = f.read().rsplit(")", 1)[1].split()
    return (int(v[11]) + int(v[12])) / os.sysconf("SC_CLK_TCK")


def listener(port, jid, stop, counts, i):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request("GET", "/v1/jobs/%s/events" % jid)
    r = c.getresponse()
    n = 0
    while not stop.is_set():
        line = r.readline()
        if not line:
            break
        n += line.startswith(b"event:")
    counts[i] = n
    c.close()


def events_cost(binary, tmp, rounds):
    data = os.path.join(tmp, "data")
    synth = os.path.join(data, "synth.svm")
    subprocess.run([binary, "gen", "--examples", "200000", "--features", "80000",
                    "--avg-nnz", "25", "--topics", "40", "--out", synth, "-q"], check=True)
    s = Server(binary, os.path.join(tmp, "state-ev"), data)
    ds = s("POST", "/v1/datasets", {"path": "synth.svm"})["id"]
    res = {0: [], 10: []}
    wall = {0: [], 10: []}
    cpu = {0: [], 10: []}
    events = []
    try:
        # one warm-up run (dataset cached in memory afterwards)
        j = s("POST", "/v1/jobs", {"dataset": ds, "k": 64})["id"]
        s("GET", "/v1/jobs/%s?wait=600" % j)
        for r in range(rounds):
            for n in ((0, 10) if r % 2 == 0 else (10, 0)):
                # queued behind nothing; listeners attach while it is queued
                # would race the worker, so they attach right after submit
                t0, c0 = time.time(), loop_cpu(s.p.pid)
                j = s("POST", "/v1/jobs", {"dataset": ds, "k": 64})["id"]
                stop, counts, th = threading.Event(), [0] * n, []
                for i in range(n):
                    t = threading.Thread(target=listener, args=(s.port, j, stop, counts, i))
                    t.start()
                    th.append(t)
                job = s("GET", "/v1/jobs/%s?wait=600" % j)
                wall[n].append(time.time() - t0)
                for t in th:
                    t.join(60)
                cpu[n].append(loop_cpu(s.p.pid) - c0)
                if n:
                    events.append(min(counts))
                rep = s("GET", "/v1/jobs/%s/report" % j)
                assert job["state"] == "succeeded"
                res[n].append(rep["seconds"]["partition"])
    finally:
        s.stop()
    return res, wall, cpu, events


def main():
    build = "build"
    rounds = 8
    args = sys.argv[1:]
    if args and not args[0].startswith("--"):
        build = args.pop(0)
    if args[:1] == ["--rounds"]:
        rounds = int(args[1])
    binary = os.path.join(ROOT, build, "parsa")
    tmp = tempfile.mkdtemp(prefix="parsa-uibench-")
    try:
        load0 = os.getloadavg()[0]
        cold, empty, warm, split, sizes = first_load(binary, tmp, 5)
        print("### Web page: first load with 100 finished jobs (%s)\n" % time.strftime("%Y-%m-%d %H:%M"))
        print("| from navigation start to the job list on screen (ms) | median | min | max | runs |")
        print("|---|---|---|---|---|")
        for name, v in (("first load, empty cache (the browser running)", empty),
                        ("reload, files revalidated (304)", warm),
                        ("first load of a new browser profile (its start-up included)", cold)):
            print("| %s | %.0f | %.0f | %.0f | %d |" %
                  (name, statistics.median(v), min(v), max(v), len(v)))
        med = [statistics.median(x[i] for x in split) for i in range(4)]
        print("\nempty cache, medians (ms): page received %.0f, app.js received %.0f, "
              "/v1/jobs received %.0f, list on screen %.0f" % tuple(med))
        print("\nbytes: " + ", ".join("%s %d" % kv for kv in sizes.items()) +
              "; load average before / after: %.2f / %.2f\n" % (load0, os.getloadavg()[0]))
        load0 = os.getloadavg()[0]
        res, wall, cpu, events = events_cost(binary, tmp, rounds)
        print("### Events stream: the same job with 0 and 10 listeners\n")
        print("| listeners | partition s (median) | min | max | wall s (median) | "
              "event-loop thread CPU s per run (median) | runs |")
        print("|---|---|---|---|---|---|---|")
        for n in (0, 10):
            print("| %d | %.3f | %.3f | %.3f | %.3f | %.3f | %d |" % (
                n, statistics.median(res[n]), min(res[n]), max(res[n]),
                statistics.median(wall[n]), statistics.median(cpu[n]), len(res[n])))
        ratio = statistics.median(res[10]) / statistics.median(res[0])
        print("\nratio of medians (10 listeners / none): %.3f; events per listener per run: %s;"
              " load average before / after: %.2f / %.2f" % (ratio, events, load0, os.getloadavg()[0]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
