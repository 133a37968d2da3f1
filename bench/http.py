#!/usr/bin/env python3
"""Benchmark of the HTTP service (`parsa serve`), the "HTTP service" section
of BENCHMARKS.md.

1. End to end, on the largest shared dataset (gowalla, pairs): upload it
   (POST /v1/datasets, the gzip file as the body), partition at k=16
   (POST /v1/jobs, then GET /v1/jobs/{id}?wait=60, which answers when the
   job ends), download the
   placement (both files), each step timed; compared with `parsa partition`
   on the same file (wall time of the process, which also reads the data
   and writes the placement).  Median of --runs runs, each on a fresh
   server and state dir, service and CLI runs interleaved.
2. Lookups: wrk (--latency, a Lua script cycling through feature ids) on
   GET /v1/jobs/{id}/features/{f} for --duration seconds on loopback while
   partition jobs run back to back on the server's worker thread (jobs are
   queued before wrk starts; the run checks one is running at its start and
   at its end).  Median of --runs runs.

Usage: python3 bench/http.py [BUILD_DIR] [--runs 3] [--duration 10]
       [--connections 32] [--threads 1] [--data FILE]
Prints a Markdown section on stdout.  Needs wrk for part 2 (skipped with a
note when missing).
"""
import os
import sys

# this file is named http.py: keep its directory from shadowing the
# standard library's http package
sys.path = [p for p in sys.path
            if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]

import argparse  # noqa: E402
import http.client  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

DEFAULT_DATA = "../shared/data/bipartite/gowalla_lightgcn.tsv.gz"


class Server:
    def __init__(self, binary, state, workers=1):
        self.p = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0",
                                   "--state-dir", state, "--workers", str(workers)],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  text=True)
        line = self.p.stdout.readline()
        if "listening" not in line:
            self.stop()
            raise SystemExit("server did not start: %r" % line)
        self.port = int(line.strip().rsplit(":", 1)[1])
        self.c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)

    def req(self, method, path, body=None, headers=None):
        self.c.request(method, path, body=body, headers=headers or {})
        r = self.c.getresponse()
        return r.status, r.read()

    def json(self, method, path, body=None, want=200):
        if isinstance(body, dict):
            body = json.dumps(body).encode()
        st, data = self.req(method, path, body, {"Content-Type": "application/json"})
        if st != want:
            raise SystemExit("%s %s: %d %s" % (method, path, st, data[:300]))
        return json.loads(data)

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.p.stdout.close()


def end_to_end(binary, data, k, tmpdir):
    """Seconds of (upload, job, download) through the service."""
    state = tempfile.mkdtemp(dir=tmpdir)
    s = Server(binary, state)
    try:
        body = open(data, "rb").read()
        name = os.path.basename(data)
        t0 = time.perf_counter()
        st, out = s.req("POST", "/v1/datasets?format=pairs&name=" + name, body,
                        {"Content-Type": "application/octet-stream"})
        t1 = time.perf_counter()
        assert st == 201, out
        did = json.loads(out)["id"]
        job = s.json("POST", "/v1/jobs", {"dataset": did, "k": k, "seed": 1}, want=202)
        while True:  # long poll: the reply comes when the job ends
            j = s.json("GET", "/v1/jobs/%s?wait=60" % job["id"])
            if j["state"] in ("succeeded", "failed", "cancelled"):
                break
        t2 = time.perf_counter()
        assert j["state"] == "succeeded", j
        sizes = 0
        for which in ("examples", "features"):
            st, out = s.req("GET", "/v1/jobs/%s/placement/%s" % (job["id"], which))
            assert st == 200
            sizes += len(out)
        t3 = time.perf_counter()
        return t1 - t0, t2 - t1, t3 - t2, j["report"], sizes
    finally:
        s.stop()
        shutil.rmtree(state, ignore_errors=True)


def cli_run(binary, data, k, tmpdir):
    out = os.path.join(tmpdir, "cli")
    t0 = time.perf_counter()
    subprocess.run([binary, "partition", data, "-k", str(k), "--format", "pairs",
                    "--seed", "1", "--out", out, "-q"], check=True)
    t = time.perf_counter() - t0
    return t, json.load(open(out + ".json"))


def parse_wrk(text):
    def dur(s):
        m = re.match(r"([\d.]+)(us|ms|s)", s)
        v = float(m.group(1))
        return v / 1000 if m.group(2) == "us" else v * 1000 if m.group(2) == "s" else v
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    lat = {}
    for pct in ("50", "75", "90", "99"):
        m = re.search(r"^\s+%s(?:\.000)?%%\s+(\S+)" % pct, text, re.M)
        lat[pct] = dur(m.group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    sock = re.search(r"Socket errors: (.*)", text)
    return rps, lat, (int(errors.group(1)) if errors else 0), (sock.group(1) if sock else "")


def lookups(binary, data, args, tmpdir):
    state = tempfile.mkdtemp(dir=tmpdir)
    s = Server(binary, state)
    try:
        body = open(data, "rb").read()
        st, out = s.req("POST", "/v1/datasets?format=pairs", body)
        did = json.loads(out)["id"]
        j0 = s.json("POST", "/v1/jobs", {"dataset": did, "k": 16}, want=202)["id"]
        s.json("GET", "/v1/jobs/%s?wait=600" % j0)
        st, feats = s.req("GET", "/v1/jobs/%s/placement/features" % j0)
        ids = [l.split()[0] for l in feats.decode().splitlines()]
        lua = os.path.join(tmpdir, "cycle.lua")
        with open(lua, "w") as f:
            f.write("local ids = {%s}\nlocal i = 0\nrequest = function()\n"
                    "  i = i %% #ids + 1\n"
                    "  return wrk.format(\"GET\", \"/v1/jobs/%s/features/\" .. ids[i])\n"
                    "end\n" % (",".join(ids), j0))
        # background partition work: enough queued jobs to outlast wrk
        queued = [s.json("POST", "/v1/jobs", {"dataset": did, "k": 64, "seed": i},
                         want=202)["id"] for i in range(400)]
        time.sleep(0.2)
        running_before = s.json("GET", "/healthz")["jobs_running"]
        p = subprocess.run(["wrk", "-t%d" % args.threads, "-c%d" % args.connections,
                            "-d%ds" % args.duration, "--latency", "-s", lua,
                            "http://127.0.0.1:%d/" % s.port],
                           capture_output=True, text=True, check=True)
        running_after = s.json("GET", "/healthz")["jobs_running"]
        done = sum(1 for j in s.json("GET", "/v1/jobs")["jobs"]
                   if j["state"] == "succeeded") - 1
        for jid in queued:
            s.req("DELETE", "/v1/jobs/" + jid)
        rps, lat, non2xx, sockerr = parse_wrk(p.stdout)
        return rps, lat, non2xx, sockerr, running_before, running_after, done, len(ids)
    finally:
        s.stop()
        shutil.rmtree(state, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("-k", type=int, default=16)
    args = ap.parse_args()
    binary = os.path.join(args.build, "parsa")
    tmpdir = tempfile.mkdtemp(prefix="parsa-bench-http-")
    med = statistics.median
    try:
        print("## HTTP service\n")
        print("`python3 bench/http.py` (run by `make bench`): `parsa serve` on "
              "loopback, %s, k=%d; medians of %d runs; %d cores.\n" %
              (os.path.basename(args.data), args.k, args.runs, os.cpu_count()))
        e2e, cli = [], []
        for _ in range(args.runs):  # interleaved: both see the same load
            e2e.append(end_to_end(binary, args.data, args.k, tmpdir))
            cli.append(cli_run(binary, args.data, args.k, tmpdir))
        up, job, down = (med(x[i] for x in e2e) for i in range(3))
        total = med(x[0] + x[1] + x[2] for x in e2e)
        ct = med(c[0] for c in cli)
        rep, crep = e2e[0][3], cli[0][1]
        same = rep["metrics"] == crep["metrics"]
        print("**End to end** (upload, partition, download) against `parsa "
              "partition` on the same file:\n")
        print("| step | service (s) | CLI (s) |")
        print("|---|---|---|")
        print("| upload + read (`POST /v1/datasets`, %.1f MB gzip) | %.3f | %.3f (load) |" %
              (os.path.getsize(args.data) / 1e6, up, crep["seconds"]["load"]))
        print("| partition (`POST /v1/jobs`, then `GET /v1/jobs/{id}?wait=60` until succeeded) | %.3f | %.3f (partition) |" %
              (job, crep["seconds"]["partition"]))
        print("| download placement (both files, %.1f MB) | %.3f | (written by the run) |" %
              (e2e[0][4] / 1e6, down))
        print("| **total** | **%.3f** | **%.3f** (process wall time) |" % (total, ct))
        print("\nService overhead over the CLI: **%+.1f%%** (%.3f s vs %.3f s); "
              "same metrics as the CLI: %s (M_max %s, T_max %s).\n" %
              ((total - ct) / ct * 100, total, ct, "yes" if same else "NO",
               rep["metrics"]["M_max"], rep["metrics"]["T_max"]))
        if not shutil.which("wrk"):
            print("**Lookups**: skipped (wrk not installed).\n")
            return
        res = [lookups(binary, args.data, args, tmpdir) for _ in range(args.runs)]
        rps = med(r[0] for r in res)
        lat = {p: med(r[1][p] for r in res) for p in ("50", "75", "90", "99")}
        print("**Lookups** `GET /v1/jobs/{id}/features/{f}` with wrk "
              "(`-t%d -c%d -d%ds --latency`, a Lua script cycling through the "
              "%d feature ids), while k=64 partition jobs on the same data run "
              "back to back on the worker thread:\n" %
              (args.threads, args.connections, args.duration, res[0][7]))
        print("| run | requests/s | p50 (ms) | p75 | p90 | p99 (ms) | non-2xx | jobs running at start / end | jobs finished during the run |")
        print("|---|---|---|---|---|---|---|---|---|")
        for i, r in enumerate(res):
            print("| %d | %.0f | %.3f | %.3f | %.3f | %.3f | %d%s | %d / %d | %d |" %
                  (i + 1, r[0], r[1]["50"], r[1]["75"], r[1]["90"], r[1]["99"], r[2],
                   (" (" + r[3] + ")") if r[3] else "", r[4], r[5], r[6]))
        print("| **median** | **%.0f** | **%.3f** | %.3f | %.3f | **%.3f** | | | |" %
              (rps, lat["50"], lat["75"], lat["90"], lat["99"]))
        print()
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
