#!/usr/bin/env python3
"""Load on the HTTP service (issue 19, "What it must show": Load).

1. Lookups during a `best` job: `parsa serve` on loopback registers gowalla
   (../shared/data/bipartite/gowalla_lightgcn.tsv.gz, pairs), runs a
   `quality: best` job at k=16 once to warm the dataset cache and give the
   placement, then the same job again with nothing else running (its own
   `elapsed`: the job without load), then once more while wrk
   (`--latency`, a Lua script asking GET /v1/jobs/{id}/features/{f} for a
   random f of the placement) runs for long enough to cover it.  Reports
   requests/s, p50/p99 latency, non-2xx answers and the job's slowdown
   (its `elapsed` under load against without).  Targets: >= 20,000
   requests/s and p99 <= 10 ms on a quiet machine.
2. Idle and slow clients: --idle connections that send nothing and
   --slowloris connections that send a request's headers one byte every
   --drip seconds are opened, then --probes GET /healthz (each on a new
   connection, --probe-gap apart) are timed: p50/p99/max.  Target: <= 50
   ms.  The descriptor limit is raised to its hard limit first (the server
   inherits it); the server's --max-connections default is the limit less
   64 (at most 10000), so every connection is accepted.

Usage: python3 bench/load.py [BUILD_DIR] [--data FILE] [-k 16]
       [--threads 2] [--connections 64] [--idle 2000] [--slowloris 200]
       [--probes 200] [--skip-lookups] [--skip-idle] [--note TEXT]
Prints a Markdown section on stdout; exit 1 when something failed (a
non-2xx lookup, a failed job, a probe without answer), not for a missed
target (those are printed as "met"/"MISSED").
"""
import os
import sys

# bench/http.py would shadow the standard library's http package
sys.path = [p for p in sys.path
            if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]

import argparse  # noqa: E402
import http.client  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import resource  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DATA = os.path.join(ROOT, "..", "shared", "data", "bipartite", "gowalla_lightgcn.tsv.gz")


def load_chaos():
    """bench/chaos.py as a module: its Server (a `parsa serve` on a free
    loopback port, its stderr in a log file)."""
    spec = importlib.util.spec_from_file_location(
        "parsa_chaos", os.path.join(os.path.dirname(os.path.abspath(__file__)), "chaos.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


chaos = load_chaos()


def start(binary, state, data_dir):
    return chaos.Server(binary, state, data_dir, state + ".log", 1)


def wait(s, jid):
    """The job once it has ended (long polls); it must have succeeded."""
    while True:
        st, ct, data = s.req("GET", "/v1/jobs/%s?wait=600" % jid, timeout=660)
        j = json.loads(data)
        if st == 200 and j["state"] in ("succeeded", "failed", "cancelled"):
            if j["state"] != "succeeded":
                raise chaos.Violation("job %s %s: %s" % (jid, j["state"], j.get("error")))
            return j


def parse_wrk(text):
    def ms(s):
        m = re.match(r"([\d.]+)(us|ms|s)$", s)
        v = float(m.group(1))
        return {"us": v / 1000, "ms": v, "s": v * 1000}[m.group(2)]
    out = {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1)),
           "requests": int(re.search(r"(\d+) requests in", text).group(1))}
    for pct in ("50", "75", "90", "99"):
        out["p" + pct] = ms(re.search(r"^\s+%s(?:\.000)?%%\s+(\S+)" % pct, text, re.M).group(1))
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    out["non2xx"] = int(m.group(1)) if m else 0
    m = re.search(r"Socket errors: (.*)", text)
    out["sockerr"] = m.group(1).strip() if m else ""
    return out


def load_figure():
    return "%.2f %.2f %.2f" % os.getloadavg()


def lookups(binary, args, tmp):
    data_dir = os.path.dirname(os.path.abspath(args.data))
    state = os.path.join(tmp, "state-lookups")
    s = start(binary, state, data_dir)
    try:
        did = s.json("POST", "/v1/datasets", {"path": os.path.basename(args.data),
                                              "format": "pairs"}, want=201)["id"]
        body = {"dataset": did, "k": args.k, "quality": "best", "seed": 1}
        warm = wait(s, s.json("POST", "/v1/jobs", body, want=202)["id"])
        quiet = wait(s, s.json("POST", "/v1/jobs", body, want=202)["id"])
        st, ct, feats = s.req("GET", "/v1/jobs/%s/placement/features" % warm["id"])
        ids = [ln.split()[0] for ln in feats.decode().splitlines() if ln and ln[0] != "#"]
        lua = os.path.join(tmp, "lookup.lua")
        with open(lua, "w") as f:
            f.write("local ids = {%s}\n"
                    "local n = 0\n"
                    "setup = function(thread) n = n + 1; thread:set(\"seed\", n) end\n"
                    "init = function(a) math.randomseed(seed) end\n"
                    "request = function()\n"
                    "  return wrk.format(\"GET\", \"/v1/jobs/%s/features/\" .. "
                    "ids[math.random(#ids)])\n"
                    "end\n" % (",".join(ids), warm["id"]))
        # wrk runs from before the loaded job starts until it ends (SIGINT:
        # wrk stops and prints its figures); its -d is only a bound
        dur = max(args.min_duration, int(quiet["elapsed"] * args.cover) + 1)
        wrk = subprocess.Popen(["wrk", "-t%d" % args.threads, "-c%d" % args.connections,
                                "-d%ds" % dur, "--timeout", "5s", "--latency", "-s", lua,
                                "http://127.0.0.1:%d/" % s.port],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)  # wrk connected and running
        t0 = time.time()
        jid = s.json("POST", "/v1/jobs", body, want=202)["id"]
        loaded = wait(s, jid)
        t_job = time.time() - t0
        covered = wrk.poll() is None
        if covered:
            wrk.send_signal(signal.SIGINT)
        out, err = wrk.communicate()
        if wrk.returncode != 0:
            raise SystemExit("wrk failed: %s" % err)
        w = parse_wrk(out)
        w.update(duration=dur, quiet=quiet["elapsed"], loaded=loaded["elapsed"],
                 covered=covered, features=len(ids), job=warm["id"], t_job=t_job)
        same = (loaded["report"]["metrics"] == quiet["report"]["metrics"])
        w["same"] = same
        return w
    finally:
        s.kill(signal.SIGTERM)


class Slowloris(threading.Thread):
    """n connections sending a request's headers one byte every `drip` s."""

    def __init__(self, port, n, drip):
        super().__init__(daemon=True)
        self.socks, self.drip, self.stop = [], drip, threading.Event()
        self.head = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 4096
        self.sent, self.closed = 0, 0
        for _ in range(n):
            self.socks.append([socket.create_connection(("127.0.0.1", port)), 0])

    def run(self):
        while not self.stop.wait(self.drip):
            for e in self.socks:
                if e[0] is None:
                    continue
                try:
                    e[0].send(self.head[e[1]:e[1] + 1])
                    e[1] += 1
                    self.sent += 1
                except OSError:
                    e[0].close()
                    e[0] = None
                    self.closed += 1

    def close(self):
        self.stop.set()
        self.join()
        for e in self.socks:
            if e[0] is not None:
                e[0].close()


def still_open(socks):
    """How many of socks the server has not closed (non-blocking peek)."""
    n = 0
    for s in socks:
        if s is None:
            continue
        try:
            s.setblocking(False)
            if s.recv(1, socket.MSG_PEEK) == b"":
                continue  # closed by the server
            n += 1
        except BlockingIOError:
            n += 1
        except OSError:
            pass
    return n


def idle_clients(binary, args, tmp):
    state = os.path.join(tmp, "state-idle")
    s = start(binary, state, tmp)
    idle, slow = [], None
    try:
        t0 = time.time()
        for _ in range(args.idle):
            idle.append(socket.create_connection(("127.0.0.1", s.port)))
        slow = Slowloris(s.port, args.slowloris, args.drip)
        slow.start()
        t_open = time.time() - t0
        time.sleep(0.2)
        lat, failed = [], 0
        for _ in range(args.probes):
            t = time.perf_counter()
            try:
                st, ct, data = s.req("GET", "/healthz", timeout=5)
                if st != 200:
                    failed += 1
            except (OSError, http.client.HTTPException):
                failed += 1
            lat.append((time.perf_counter() - t) * 1000)
            time.sleep(args.probe_gap)
        lat.sort()
        open_idle = still_open(idle)
        open_slow = still_open([e[0] for e in slow.socks])
        return {"p50": statistics.median(lat), "p99": lat[int(len(lat) * 0.99) - 1],
                "max": lat[-1], "failed": failed, "open_idle": open_idle,
                "open_slow": open_slow, "t_open": t_open, "bytes": slow.sent}
    finally:
        if slow:
            slow.close()
        for c in idle:
            c.close()
        s.kill(signal.SIGTERM)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("-k", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--cover", type=float, default=3.0,
                    help="wrk runs this many times the quiet job's time")
    ap.add_argument("--min-duration", type=int, default=10)
    ap.add_argument("--idle", type=int, default=2000)
    ap.add_argument("--slowloris", type=int, default=200)
    ap.add_argument("--drip", type=float, default=2.0)
    ap.add_argument("--probes", type=int, default=200)
    ap.add_argument("--probe-gap", type=float, default=0.01)
    ap.add_argument("--skip-lookups", action="store_true")
    ap.add_argument("--skip-idle", action="store_true")
    ap.add_argument("--note", default="", help="a word on the machine's state, printed")
    a = ap.parse_args()
    binary = os.path.abspath(os.path.join(a.build, "parsa"))
    if not os.access(binary, os.X_OK):
        raise SystemExit("load: no %s (make first)" % binary)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = a.idle + a.slowloris + a.connections + 256
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(need, 2 * need)), hard))
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    tmp = tempfile.mkdtemp(prefix="parsa-load-")
    bad = []
    try:
        print("## HTTP service under load (bench/load.py)\n")
        print("`python3 bench/load.py` (run by `make chaos`), %d cores, load average "
              "at the start %s%s; descriptor limit %d.\n" % (
                  os.cpu_count(), load_figure(), " (" + a.note + ")" if a.note else "", soft))
        if not a.skip_lookups:
            if not shutil.which("wrk"):
                raise SystemExit("load: wrk is missing (scripts/deps.sh installs it)")
            if not os.path.exists(a.data):
                print("**Lookups**: skipped (%s is missing).\n" % a.data)
            else:
                w = lookups(binary, a, tmp)
                met = w["rps"] >= 20000 and w["p99"] <= 10
                print("**Lookups during a `best` job**: wrk `-t%d -c%d --latency` on "
                      "`GET /v1/jobs/%s/features/{f}` (f random among the placement's %d "
                      "features) from 0.5 s before a `quality: best`, k=%d job on %s "
                      "starts until it ends (%.1f s; one worker):\n" % (
                          a.threads, a.connections, w["job"], w["features"], a.k,
                          os.path.basename(a.data), w["t_job"] + 0.5))
                print("| requests/s | p50 (ms) | p75 | p90 | p99 (ms) | non-2xx | job alone (s) "
                      "| job under load (s) | slowdown |")
                print("|---|---|---|---|---|---|---|---|---|")
                print("| %.0f | %.3f | %.3f | %.3f | %.3f | %d%s | %.2f | %.2f | %+.0f%% |\n" % (
                    w["rps"], w["p50"], w["p75"], w["p90"], w["p99"], w["non2xx"],
                    " (" + w["sockerr"] + ")" if w["sockerr"] else "", w["quiet"],
                    w["loaded"], (w["loaded"] / w["quiet"] - 1) * 100))
                print("Target >= 20,000 requests/s and p99 <= 10 ms: %s. wrk ran "
                      "through the whole loaded job: %s; the loaded job's metrics equal the "
                      "quiet one's: %s.\n" % ("met" if met else "MISSED",
                                              "yes" if w["covered"] else "NO",
                                              "yes" if w["same"] else "NO"))
                if w["non2xx"] or w["sockerr"]:
                    bad.append("lookups: %d non-2xx, socket errors %s" % (w["non2xx"], w["sockerr"]))
                if not w["same"]:
                    bad.append("the loaded job's placement differs")
        if not a.skip_idle:
            r = idle_clients(binary, a, tmp)
            met = r["max"] <= 50
            print("**Idle and slow clients**: %d idle connections (nothing sent) and %d "
                  "slowloris connections (a header byte every %.0f s) opened in %.2f s, "
                  "then %d `GET /healthz`, each on a new connection, %.0f ms apart:\n" % (
                      a.idle, a.slowloris, a.drip, r["t_open"], a.probes, a.probe_gap * 1000))
            print("| p50 (ms) | p99 (ms) | max (ms) | failed | idle still open | slowloris "
                  "still open |")
            print("|---|---|---|---|---|---|")
            print("| %.2f | %.2f | %.2f | %d | %d / %d | %d / %d |\n" % (
                r["p50"], r["p99"], r["max"], r["failed"], r["open_idle"], a.idle,
                r["open_slow"], a.slowloris))
            print("Target every probe <= 50 ms: %s.\n" % ("met" if met else "MISSED"))
            if r["failed"]:
                bad.append("%d /healthz probes failed" % r["failed"])
    except chaos.Violation as e:
        bad.append(str(e))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for b in bad:
        print("FAILED: " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
