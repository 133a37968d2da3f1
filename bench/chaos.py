#!/usr/bin/env python3
"""Chaos run of the HTTP service (issue 19, "What it must show": Chaos).

Part 1, kills: --kills times, `parsa serve` on one state dir is killed with
SIGKILL at a random moment (seeded) while client threads upload datasets,
register datasets by path, submit jobs, poll them, download placements,
cancel and purge jobs and delete datasets; then it is restarted on the
same state dir and checked against what the client was told:

  * every dataset whose registration was acknowledged (201) or that a
    listing showed is still there with the same description, and an
    upload's file on disk has the checksum of the uploaded bytes; an
    acknowledged deletion stays deleted;
  * every job acknowledged (202) or listed is still there; a state the
    client saw as final (succeeded, failed, cancelled) is unchanged, and a
    succeeded job serves the same placement (sha256 of both files through
    the API, and the files on disk are those bytes);
  * no leftovers after recovery: no temporary file (*.tmp*) of the killed
    process, no upload without description, no job directory without
    job.json, no file that is not one of the service's, nothing on disk
    that the API does not list; every job's state on disk is the state
    the API reports.

Part 2, disk full (root: mounts a tmpfs of --disk-size as the state dir,
unmounted and removed on every exit path): --disk-rounds rounds, each
filling the disk to a random few KB of free space (0 included) while the
same clients run; every answer must be a success or a problem+json with a
clear status (507 for a full disk, 503/409/404/422 where they apply),
never a 500 or a dropped connection, and the server must stay up
(/healthz); some rounds kill it and restart it on the full disk.  Then
the space is freed, the server restarted, and every check of part 1 runs.

Usage: python3 bench/chaos.py [BUILD_DIR] [--kills 200] [--disk-rounds 8]
       [--seed 1] [--disk-size 64M] [--workers 2] [--keep]
Prints a summary (kills, phases hit, checks passed); exit 1 on any
violation (each printed with the cycle and the server's last stderr).
"""
import os
import sys

# bench/http.py would shadow the standard library's http package
sys.path = [p for p in sys.path
            if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]

import argparse  # noqa: E402
import hashlib  # noqa: E402
import http.client  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLES = ["a9a-sample.svm.gz", "reuters-sample.svm.gz",
           "movielens-sample.csv.gz", "facebook-sample.txt.gz"]
# bigger sets (path registrations only): jobs that run long enough to be
# killed midway, when ../shared/data is there
SHARED = ["libsvm/a9a.train.svm.gz", "libsvm/ap_blei.svm.gz"]
JOB_FILES = {"job.json", "report.json", "placement.examples", "placement.example_ids",
             "placement.features", "placement.nbr"}
FINAL = ("succeeded", "failed", "cancelled")
DS_KEYS = ("name", "source", "format", "examples", "features", "nonzeros", "bytes")
TIMEOUT = 20


def sha(b):
    return hashlib.sha256(b).hexdigest()


def file_sha(path):
    with open(path, "rb") as f:
        return sha(f.read())


class Violation(Exception):
    pass


class Server:
    def __init__(self, binary, state, data_dir, log, workers):
        self.log = log
        with open(log, "a") as err:
            err.write("==== start\n")
            err.flush()
            self.p = subprocess.Popen(
                [binary, "serve", "--listen", "127.0.0.1:0", "--state-dir", state,
                 "--data-dir", data_dir, "--workers", str(workers), "--grace", "1"],
                stdout=subprocess.PIPE, stderr=err, text=True)
        line = self.p.stdout.readline()
        if "listening on http://" not in line:
            self.kill()
            raise Violation("server did not start: %r; stderr: %s" % (line, self.tail()))
        self.port = int(line.strip().rsplit(":", 1)[1])

    def tail(self, n=1500):
        try:
            with open(self.log, "rb") as f:
                f.seek(0, 2)
                f.seek(max(0, f.tell() - n))
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def alive(self):
        return self.p.poll() is None

    def kill(self, sig=signal.SIGKILL):
        if self.p.poll() is None:
            self.p.send_signal(sig)
        try:
            self.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        self.p.stdout.close()

    def req(self, method, path, body=None, timeout=TIMEOUT):
        """(status, content-type, body bytes); raises OSError and
        http.client errors when the connection fails."""
        h = {}
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            c.request(method, path, body=body, headers=h)
            r = c.getresponse()
            data = r.read()
            return r.status, r.getheader("Content-Type", ""), data
        finally:
            c.close()

    def json(self, method, path, body=None, want=200):
        st, ct, data = self.req(method, path, body)
        if st != want:
            raise Violation("%s %s: %d (want %d): %s" % (method, path, st, want, data[:300]))
        return json.loads(data)

    def list_all(self, what):
        out, after = [], None
        while True:
            q = "/v1/%s?limit=1000" % what + ("&after=" + after if after else "")
            page = self.json("GET", q)
            out += page[what]
            after = page.get("next")
            if not after:
                return out


class Model:
    """What the client was told (acknowledged or shown), under a lock."""

    def __init__(self):
        self.mu = threading.Lock()
        self.ds = {}          # id -> description (DS_KEYS) + "sha" for uploads
        self.ds_deleted = set()
        self.ds_deleting = set()
        self.jobs = {}        # id -> {"ds", "final", "ex", "fe"}
        self.jobs_purged = {}     # id -> when the purge was acknowledged
        self.jobs_purging = set()
        self.file_sha = {}    # upload bytes by sample name

    def add_ds(self, d, upload_sha=None):
        with self.mu:
            if d["id"] in self.ds_deleted:
                return
            e = self.ds.setdefault(d["id"], {k: d.get(k) for k in DS_KEYS})
            if upload_sha:
                e["sha"] = upload_sha

    def add_job(self, jid, ds):
        with self.mu:
            self.jobs.setdefault(jid, {"ds": ds, "final": None, "t": 0, "ex": None,
                                       "fe": None})

    def saw_state(self, j, where, sent):
        """A job state the client saw in the answer to a request sent at
        `sent` (monotonic); raises when a final state seen before the
        request was sent has changed."""
        with self.mu:
            if j["id"] in self.jobs_purged:
                if sent < self.jobs_purged[j["id"]]:
                    return {"final": None, "ex": None}  # an older answer
                raise Violation("%s: purged job %s is back (%s)" % (where, j["id"], j["state"]))
            e = self.jobs.setdefault(j["id"], {"ds": j.get("dataset"), "final": None,
                                                "t": 0, "ex": None, "fe": None})
            if e["final"] and e["final"] != j["state"]:
                if sent < e["t"]:
                    return e  # an answer older than the final state's
                was = e["final"]
                e["final"] = j["state"] if j["state"] in FINAL else None
                raise Violation("%s: job %s was %s, now %s (%s)" % (
                    where, j["id"], was, j["state"], j.get("error")))
            if j["state"] in FINAL and not e["final"]:
                e["final"], e["t"] = j["state"], time.monotonic()
                e["end"] = (j.get("finished"), j.get("elapsed"))
            elif j["state"] in ("succeeded", "cancelled") and e.get("end") and sent >= e["t"]:
                # (a job whose end the disk refused is failed at once, and
                # failed again, "interrupted", at the restart: the state
                # is the same, its end time and message are new)
                f, el = e["end"]
                if j.get("finished") != f or (el is None) != (j.get("elapsed") is None) or (
                        el is not None and abs(j["elapsed"] - el) > 1e-6 * max(1, el)):
                    raise Violation("%s: job %s ended at %s after %s s, now at %s after %s s" % (
                        where, j["id"], f, el, j.get("finished"), j.get("elapsed")))
            return e


class Stats:
    def __init__(self):
        self.mu = threading.Lock()
        self.count = {}

    def add(self, key, n=1):
        with self.mu:
            self.count[key] = self.count.get(key, 0) + n


class Clients:
    """Client threads running random operations until stop is set (or the
    server goes away).  disk=True: the disk may be full, so 507/503 are
    expected answers and every answer is checked to be a clear one."""

    def __init__(self, srv, model, stats, rng, names, paths, disk=False, nthreads=3):
        self.srv, self.model, self.stats = srv, model, stats
        self.names, self.paths, self.disk = names, paths, disk
        self.stop = threading.Event()
        self.errors = []
        self.inflight = {}
        self.mu = threading.Lock()
        self.threads = [threading.Thread(target=self.loop, args=(random.Random(rng.random()), i),
                                         daemon=True) for i in range(nthreads)]
        for t in self.threads:
            t.start()

    def join(self):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=TIMEOUT * 2)

    def answer(self, op, st, ct, data, ok):
        """Check one answer: a status in ok, or (disk mode) a problem+json
        with a clear status; a 500 or a non-problem error is a violation."""
        if st in ok:
            return True
        allowed = {503} | ({507, 409, 404} if self.disk else set())
        if st in allowed and ct.startswith("application/problem+json"):
            try:
                j = json.loads(data)
                if j.get("status") == st and j.get("detail"):
                    self.stats.add("answer %d %s" % (st, op))
                    return False
            except ValueError:
                pass
        raise Violation("%s: unexpected answer %d %s: %s" % (op, st, ct, data[:300]))

    def loop(self, rng, me):
        ops = [("upload", 3), ("register", 2), ("submit", 4), ("poll", 4),
               ("list", 1), ("lookup", 1), ("cancel", 0.5), ("purge", 0.7),
               ("delete_ds", 0.3)]
        total = sum(w for _, w in ops)
        while not self.stop.is_set():
            x = rng.random() * total
            for op, w in ops:
                x -= w
                if x < 0:
                    break
            with self.mu:
                self.inflight[me] = op
            try:
                getattr(self, "op_" + op)(rng)
            except Violation as e:
                self.errors.append(str(e))
                return
            except (OSError, http.client.HTTPException) as e:
                if self.srv.alive() and not self.stop.is_set():
                    self.errors.append("%s: connection failed while the server runs: %r" % (op, e))
                return  # killed: this thread is done
            finally:
                with self.mu:
                    self.inflight.pop(me, None)

    # ---- operations ----

    def op_upload(self, rng):
        name = rng.choice(self.names)
        body = self.model.file_sha[name][1]
        st, ct, data = self.srv.req("POST", "/v1/datasets?name=" + name, body)
        if self.answer("upload", st, ct, data, (201,)):
            self.model.add_ds(json.loads(data), self.model.file_sha[name][0])
            self.stats.add("ack upload")

    def op_register(self, rng):
        st, ct, data = self.srv.req("POST", "/v1/datasets", {"path": rng.choice(self.paths)})
        if self.answer("register", st, ct, data, (201,)):
            self.model.add_ds(json.loads(data))
            self.stats.add("ack register")

    def op_submit(self, rng):
        m = self.model
        with m.mu:
            ids = sorted(set(m.ds) - m.ds_deleting - m.ds_deleted)
        if not ids:
            return
        ds = rng.choice(ids)
        body = {"dataset": ds, "k": rng.choice([2, 4, 8, 16]), "seed": rng.randint(1, 99),
                "quality": rng.choice(["fast", "default", "default"])}
        st, ct, data = self.srv.req("POST", "/v1/jobs", body)
        if st == 404 and ds in m.ds_deleting | m.ds_deleted:
            return
        if self.answer("submit", st, ct, data, (202,)):
            m.add_job(json.loads(data)["id"], ds)
            self.stats.add("ack submit")

    def pick_job(self, rng, final):
        m = self.model
        with m.mu:
            ids = [i for i, e in m.jobs.items()
                   if (e["final"] is not None) == final and i not in m.jobs_purging]
        return rng.choice(ids) if ids else None

    def op_poll(self, rng):
        jid = self.pick_job(rng, False) or self.pick_job(rng, True)
        if not jid:
            return
        sent = time.monotonic()
        st, ct, data = self.srv.req("GET", "/v1/jobs/" + jid)
        if st == 404 and jid in self.model.jobs_purging:
            return
        if not self.answer("poll", st, ct, data, (200,)):
            return
        e = self.model.saw_state(json.loads(data), "poll", sent)
        if e["final"] == "succeeded" and e["ex"] is None:
            self.fetch_placement(jid, e)

    def fetch_placement(self, jid, e):
        got = []
        for what in ("examples", "features"):
            st, ct, data = self.srv.req("GET", "/v1/jobs/%s/placement/%s" % (jid, what))
            if st == 404 and jid in self.model.jobs_purging:
                return
            if not self.answer("placement", st, ct, data, (200,)):
                return
            got.append(sha(data))
        with self.model.mu:
            e["ex"], e["fe"] = got
        self.stats.add("placements downloaded")

    def op_list(self, rng):
        for what in ("jobs", "datasets"):
            sent = time.monotonic()
            st, ct, data = self.srv.req("GET", "/v1/%s?limit=1000" % what)
            if not self.answer("list", st, ct, data, (200,)):
                return
            for x in json.loads(data)[what]:
                if what == "jobs":
                    if x["id"] not in self.model.jobs_purging:
                        self.model.saw_state(x, "list", sent)
                elif x["id"] not in self.model.ds_deleting:
                    self.model.add_ds(x)

    def op_lookup(self, rng):
        jid = self.pick_job(rng, True)
        if not jid or self.model.jobs[jid]["final"] != "succeeded":
            return
        st, ct, data = self.srv.req("GET", "/v1/jobs/%s/examples/%d" % (jid, rng.randint(0, 50)))
        if st == 404 and jid in self.model.jobs_purging:
            return
        self.answer("lookup", st, ct, data, (200, 404))

    def op_cancel(self, rng):
        jid = self.pick_job(rng, False)
        if not jid:
            return
        sent = time.monotonic()
        st, ct, data = self.srv.req("DELETE", "/v1/jobs/" + jid)
        if self.answer("cancel", st, ct, data, (200, 202, 409)) and st == 200:
            self.stats.add("ack cancel")
            self.model.saw_state(json.loads(data), "cancel", sent)

    def op_purge(self, rng):
        jid = self.pick_job(rng, True)
        if not jid:
            return
        m = self.model
        with m.mu:
            m.jobs_purging.add(jid)
        st, ct, data = self.srv.req("DELETE", "/v1/jobs/%s?purge=true" % jid)
        if self.answer("purge", st, ct, data, (200, 404, 409)) and st == 200:
            with m.mu:
                m.jobs_purged[jid] = time.monotonic()
                m.jobs.pop(jid, None)
            self.stats.add("ack purge")

    def op_delete_ds(self, rng):
        m = self.model
        with m.mu:
            ids = sorted(set(m.ds) - m.ds_deleting)
            if len(ids) < 4:
                return
            ds = rng.choice(ids)
            m.ds_deleting.add(ds)
        st, ct, data = self.srv.req("DELETE", "/v1/datasets/" + ds)
        if self.answer("delete dataset", st, ct, data, (200, 204, 409)):
            if st == 409:
                with m.mu:
                    m.ds_deleting.discard(ds)
            else:
                with m.mu:
                    m.ds_deleted.add(ds)
                    m.ds.pop(ds, None)
                self.stats.add("ack delete dataset")


TMP_RE = re.compile(r"\.tmp\.(\d+)")


def scan_kill_phase(state, pid):
    """What the killed process left half done (the phases the kill hit)."""
    hit = set()
    for root, dirs, files in os.walk(state):
        for f in files:
            m = TMP_RE.search(f)
            if m and int(m.group(1)) == pid:
                base = f.lstrip(".").split(".tmp.")[0]
                if root.endswith("datasets"):
                    hit.add("dataset file write" if base.endswith(".data")
                            else "dataset description write")
                elif base.startswith("placement"):
                    hit.add("placement write")
                elif base == "report.json":
                    hit.add("report write")
                elif base == "job.json":
                    hit.add("job state write")
                else:
                    hit.add("other write (%s)" % base)
        if os.path.basename(root) == "datasets":
            for f in files:
                if f.endswith(".data") and f[:-5] + ".json" not in files:
                    hit.add("upload stored, not yet described")
        if os.path.basename(os.path.dirname(root)) == "jobs" and "job.json" not in files:
            hit.add("job directory without job.json")
    return hit


def leftovers(state, live):
    """Temporary files (*.tmp.PID*) of any process but the live server."""
    out = []
    for root, dirs, files in os.walk(state):
        for f in files + dirs:
            m = TMP_RE.search(f)
            if m and int(m.group(1)) != live:
                out.append(os.path.join(root, f))
    return out


def check_state(srv, model, state, dead_pid, stats, full=True):
    """Every check after a restart but the leftovers; raises Violation."""
    dss = {d["id"]: d for d in srv.list_all("datasets")}
    jobs = {j["id"]: j for j in srv.list_all("jobs")}
    dsdir = os.path.join(state, "datasets")
    for f in sorted(os.listdir(dsdir)):
        if TMP_RE.search(f) or f == "last-id":
            continue
        m = re.fullmatch(r"(d\d+)\.(json|data)", f)
        if not m:
            raise Violation("unknown file in datasets/: %s" % f)
        if m.group(1) not in dss:
            raise Violation("datasets/%s: on disk, not listed by the API" % f)
        if m.group(2) == "data" and dss[m.group(1)].get("source") != "upload":
            raise Violation("datasets/%s: data of a dataset that is not an upload" % f)
    for i, d in dss.items():
        if not os.path.exists(os.path.join(dsdir, i + ".json")):
            raise Violation("dataset %s listed, no %s.json on disk" % (i, i))
        if d.get("source") == "upload" and not os.path.exists(os.path.join(dsdir, i + ".data")):
            raise Violation("upload %s listed, no %s.data on disk" % (i, i))
    jdir = os.path.join(state, "jobs")
    for f in sorted(os.listdir(jdir)):
        if f == "last-id":
            continue
        if not re.fullmatch(r"j\d+", f):
            raise Violation("unknown file in jobs/: %s" % f)
        files = set(x for x in os.listdir(os.path.join(jdir, f)) if not TMP_RE.search(x))
        if "job.json" not in files:
            raise Violation("jobs/%s: no job.json after recovery" % f)
        if files - JOB_FILES:
            raise Violation("jobs/%s: unknown files %s" % (f, sorted(files - JOB_FILES)))
        if f not in jobs:
            raise Violation("jobs/%s: on disk, not listed by the API" % f)
    # what the client was told
    with model.mu:
        want_ds = dict(model.ds)
        gone_ds = set(model.ds_deleted)
        want_jobs = {k: dict(v) for k, v in model.jobs.items()}
        gone_jobs = set(model.jobs_purged)
    for i, e in want_ds.items():
        if i not in dss:
            if i in model.ds_deleting:
                continue  # a deletion the kill interrupted, maybe done
            raise Violation("dataset %s (acknowledged) lost" % i)
        for k in DS_KEYS:
            if e.get(k) != dss[i].get(k):
                raise Violation("dataset %s changed: %s %r -> %r" % (i, k, e.get(k), dss[i].get(k)))
        if e.get("sha") and file_sha(os.path.join(dsdir, i + ".data")) != e["sha"]:
            raise Violation("dataset %s: the file on disk is not the upload" % i)
        stats.add("checks: dataset kept")
    for i in gone_ds:
        if i in dss:
            raise Violation("dataset %s deleted (acknowledged) but back" % i)
    for i in gone_jobs:
        if i in jobs:
            raise Violation("job %s purged (acknowledged) but back" % i)
    for i, j in jobs.items():
        disk = json.load(open(os.path.join(jdir, i, "job.json")))
        # a job whose end could not be stored is failed at once, as a
        # restart reads its "running" (README, Durability)
        if j["state"] in FINAL and disk.get("state") != j["state"] and not (
                j["state"] == "failed" and disk.get("state") == "running"):
            raise Violation("job %s: the API says %s, the disk %s" % (i, j["state"], disk.get("state")))
        if j["state"] == "succeeded":
            for f in ("report.json", "placement.examples", "placement.features"):
                if not os.path.exists(os.path.join(jdir, i, f)):
                    raise Violation("job %s succeeded without %s on disk" % (i, f))
    for i, e in want_jobs.items():
        if i not in jobs:
            if i in model.jobs_purging:
                continue
            raise Violation("job %s (acknowledged) lost" % i)
        model.saw_state(jobs[i], "after restart", time.monotonic())
        stats.add("checks: job kept")
        if e["final"] == "succeeded" and e["ex"]:
            for what, key in (("examples", "ex"), ("features", "fe")):
                if file_sha(os.path.join(jdir, i, "placement." + what)) != e[key]:
                    raise Violation("job %s: placement.%s on disk changed" % (i, what))
            stats.add("checks: placement on disk unchanged")
    # succeeded jobs whose placement the client has not downloaded yet:
    # downloaded now (the API and the disk must agree), checked from then on
    for i, e in want_jobs.items():
        if e["final"] == "succeeded" and not e["ex"] and i in jobs:
            got = []
            for what in ("examples", "features"):
                st, ct, data = srv.req("GET", "/v1/jobs/%s/placement/%s" % (i, what))
                if st != 200:
                    raise Violation("job %s succeeded, placement %s: %d" % (i, what, st))
                if sha(data) != file_sha(os.path.join(jdir, i, "placement." + what)):
                    raise Violation("job %s: placement.%s on disk is not what the API "
                                    "serves" % (i, what))
                got.append(sha(data))
            with model.mu:
                if i in model.jobs:
                    model.jobs[i]["ex"], model.jobs[i]["fe"] = got
            stats.add("placements downloaded")
    # through the API: a sample of the placements each time, all when full
    done = [i for i, e in want_jobs.items() if e["final"] == "succeeded" and e["ex"]
            and i not in model.jobs_purging]
    if not full:
        done = random.Random(len(done)).sample(done, min(3, len(done)))
    for i in done:
        e = want_jobs[i]
        for what, key in (("examples", "ex"), ("features", "fe")):
            st, ct, data = srv.req("GET", "/v1/jobs/%s/placement/%s" % (i, what))
            if st != 200 or sha(data) != e[key]:
                raise Violation("job %s: placement %s through the API changed (%d)" % (i, what, st))
        stats.add("checks: placement through the API unchanged")
    if srv.json("GET", "/healthz").get("status") != "ok":
        raise Violation("/healthz not ok")
    # deletions the kill interrupted: done or not, as the disk says now
    with model.mu:
        for i in list(model.ds_deleting):
            model.ds_deleting.discard(i)
            if i not in dss:
                model.ds_deleted.add(i)
                model.ds.pop(i, None)
        for i in list(model.jobs_purging):
            model.jobs_purging.discard(i)
            if i not in jobs:
                model.jobs_purged[i] = time.monotonic()
                model.jobs.pop(i, None)


def settle(srv, model, timeout=120, room=None):
    """Wait until no job is queued or running; room() makes room on the
    disk meanwhile (queued jobs wait for it)."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        busy = [j for j in srv.list_all("jobs") if j["state"] not in FINAL]
        if not busy:
            return
        if room:
            room()
        time.sleep(0.1)
    raise Violation("jobs still running after %d s" % timeout)


def parse_size(s):
    m = re.fullmatch(r"(\d+)([KMG]?)", s.upper())
    if not m:
        raise SystemExit("bad size: " + s)
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)]


class Run:
    def __init__(self, a):
        self.a = a
        self.binary = os.path.abspath(os.path.join(a.build, "parsa"))
        if not os.access(self.binary, os.X_OK):
            raise SystemExit("chaos: no %s (make first)" % self.binary)
        self.rng = random.Random(a.seed)
        self.stats = Stats()
        self.violations = []
        self.kills = 0
        self.phases = {}
        self.tmp = tempfile.mkdtemp(prefix="parsa-chaos-")
        self.data = os.path.join(self.tmp, "data")
        os.mkdir(self.data)
        self.names = []
        for n in SAMPLES:
            p = os.path.join(ROOT, "data", n)
            if os.path.exists(p):
                shutil.copy(p, self.data)
                self.names.append(n)
        if not self.names:
            raise SystemExit("chaos: no samples in data/")
        self.paths = list(self.names)
        shared = os.path.join(ROOT, "..", "shared", "data")
        for n in SHARED:
            p = os.path.join(shared, n)
            if os.path.exists(p):
                shutil.copy(p, self.data)
                self.paths.append(os.path.basename(n))
        self.log = os.path.join(self.tmp, "serve.log")
        self.seen_leftovers = set()
        self.kinds = {}
        self.mnt = None
        self.srv = None

    def new_model(self):
        m = Model()
        for n in self.names:
            b = open(os.path.join(self.data, n), "rb").read()
            m.file_sha[n] = (sha(b), b)
        return m

    def hit(self, what):
        self.phases[what] = self.phases.get(what, 0) + 1

    def start(self, state):
        self.srv = Server(self.binary, state, self.data, self.log, self.a.workers)
        return self.srv

    def running_phases(self):
        try:
            st, ct, data = self.srv.req("GET", "/v1/jobs?state=running&limit=1000", timeout=2)
            if st == 200:
                for j in json.loads(data)["jobs"]:
                    ph = j.get("phase", "?")
                    self.hit("job running: " + (ph if ph != "done" else "done, its end being stored"))
        except (OSError, http.client.HTTPException, ValueError):
            pass

    def kill_cycle(self, state, model, cycle, disk=False, delay=None):
        """Clients run, then kill -9 at a random moment, then restart and
        check.  Returns the new server."""
        srv = self.srv
        cl = Clients(srv, model, self.stats, self.rng, self.names, self.paths, disk=disk)
        time.sleep(delay if delay is not None else self.rng.uniform(0.02, 0.7))
        self.running_phases()
        with cl.mu:
            for op in cl.inflight.values():
                self.hit("client op in flight: " + op)
        pid = srv.p.pid
        cl.stop.set()  # requests in flight meet the kill; no new ones
        srv.kill()
        self.kills += 1
        cl.join()
        for e in cl.errors:
            self.violation(cycle, e)
        for h in scan_kill_phase(state, pid):
            self.hit(h)
        srv = self.start(state)
        for f in leftovers(state, srv.p.pid):
            if f not in self.seen_leftovers:
                self.seen_leftovers.add(f)
                self.violation(cycle, "leftover after recovery: " + f)
        try:
            check_state(srv, model, state, pid, self.stats, full=(not isinstance(cycle, int) or cycle % 50 == 0))
            self.stats.add("checks: restart consistent")
        except Violation as e:
            self.violation(cycle, str(e))
        return srv

    def stop_server(self, cycle):
        """SIGTERM: the server must exit 0 with no sanitizer report in
        its log (under make check the binary is the ASan build)."""
        self.srv.kill(signal.SIGTERM)
        rc, log = self.srv.p.returncode, self.srv.tail(1 << 20)
        if rc != 0 or "Sanitizer" in log or "runtime error" in log:
            self.violation(cycle, "server exit %s on SIGTERM: %s" % (rc, log[-1500:]))
        self.srv = None

    def violation(self, cycle, msg):
        """Record a violation; one seen before (the same message but for
        ids, pids and paths) is only counted."""
        kind = re.sub(r"\d+", "N", re.sub(r"/tmp/\S*/state/", "STATE/", msg))[:160]
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        if self.kinds[kind] > 1:
            self.violations.append(None)
            return
        self.violations.append("cycle %s: %s" % (cycle, msg))
        print("VIOLATION cycle %s: %s" % (cycle, msg), file=sys.stderr)
        if len(self.violations) <= 3 and self.srv:
            print("  server stderr (tail):\n    %s" % self.srv.tail(600).replace(
                "\n", "\n    "), file=sys.stderr)

    # ---- part 1 ----

    def kills_part(self):
        state = os.path.join(self.tmp, "state")
        model = self.new_model()
        self.start(state)
        t0 = time.time()
        for cycle in range(1, self.a.kills + 1):
            self.kill_cycle(state, model, cycle)
            if self.a.verbose:
                print("kill %d: %.1f s" % (cycle, time.time() - t0), file=sys.stderr)
        try:
            settle(self.srv, model)
            check_state(self.srv, model, state, 0, self.stats, full=True)
        except Violation as e:
            self.violation("end", str(e))
        self.stop_server("end" if not self.mnt else "disk end")
        with model.mu:
            self.part1 = (len(model.ds), len(model.jobs),
                          sum(1 for e in model.jobs.values() if e["final"] == "succeeded"),
                          time.time() - t0)

    # ---- part 2 ----

    def fill(self, mnt, leave):
        """Fill the tmpfs until `leave` bytes are free (0: until ENOSPC)."""
        path = os.path.join(mnt, "filler.%d" % len(os.listdir(mnt)))
        st = os.statvfs(mnt)
        want = max(0, st.f_bavail * st.f_frsize - leave)
        chunk = b"\0" * (1 << 20)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            while want > 0:
                want -= os.write(fd, chunk[:min(len(chunk), want)])
            while leave == 0:
                os.write(fd, chunk[:4096])
        except OSError:
            pass
        finally:
            os.close(fd)
        return path

    def make_room(self, model):
        """The work itself fills the disk too: delete the oldest finished
        jobs and unused datasets through the API (acknowledged deletions,
        checked from then on) until half of it is free."""
        def free():
            st = os.statvfs(self.mnt)
            return st.f_bavail / max(1, st.f_blocks)
        srv = self.srv
        for what in ("jobs", "datasets"):
            for x in srv.list_all(what):
                if free() >= 0.5:
                    return
                if what == "jobs" and x["state"] not in FINAL:
                    continue
                path = "/v1/%s/%s%s" % (what, x["id"], "?purge=true" if what == "jobs" else "")
                st, ct, data = srv.req("DELETE", path)
                if st != 200:
                    continue  # a dataset in use, a download: kept
                with model.mu:
                    if what == "jobs":
                        model.jobs_purged[x["id"]] = time.monotonic()
                        model.jobs.pop(x["id"], None)
                    else:
                        model.ds_deleted.add(x["id"])
                        model.ds.pop(x["id"], None)
                self.stats.add("made room: %s deleted" % what)

    def disk_part(self):
        if os.geteuid() != 0:
            print("chaos: disk-full part skipped (needs root to mount a tmpfs)", file=sys.stderr)
            self.disk = None
            return
        self.mnt = os.path.join(self.tmp, "tmpfs")
        os.mkdir(self.mnt)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%d" % parse_size(self.a.disk_size),
                        "tmpfs", self.mnt], check=True)
        state = os.path.join(self.mnt, "state")
        model = self.new_model()
        self.start(state)
        t0 = time.time()
        # some finished work first, on a disk with room
        cl = Clients(self.srv, model, self.stats, self.rng, self.names, self.paths)
        time.sleep(1.0)
        cl.join()
        for e in cl.errors:
            self.violation("disk setup", e)
        settle(self.srv, model, room=lambda: self.make_room(model))
        rounds_full = 0
        for r in range(1, self.a.disk_rounds + 1):
            leave = self.rng.choice([0, 0, 4 << 10, 64 << 10, 256 << 10, 1 << 20])
            filler = self.fill(self.mnt, leave)
            self.hit("disk full: %d KB left" % (leave >> 10))
            cycle = "disk %d" % r
            if self.rng.random() < 0.5:
                # killed while the disk is full, restarted on the full disk
                self.kill_cycle(state, model, cycle, disk=True,
                                delay=self.rng.uniform(0.2, 1.0))
            cl = Clients(self.srv, model, self.stats, self.rng, self.names, self.paths,
                         disk=True)
            time.sleep(self.rng.uniform(0.5, 1.5))
            cl.join()
            for e in cl.errors:
                self.violation(cycle, e)
            if not self.srv.alive():
                self.violation(cycle, "the server died on a full disk (exit %s)" % self.srv.p.returncode)
                self.start(state)
            else:
                try:
                    if self.srv.json("GET", "/healthz").get("status") != "ok":
                        self.violation(cycle, "/healthz not ok on a full disk")
                    rounds_full += 1
                except (Violation, OSError, http.client.HTTPException) as e:
                    self.violation(cycle, "/healthz on a full disk: %s" % e)
            # free the space, kill, restart: everything consistent
            os.unlink(filler)
            try:
                self.make_room(model)
            except (Violation, OSError, http.client.HTTPException) as e:
                self.violation(cycle, "making room: %s" % e)
            self.kill_cycle(state, model, cycle + " freed", delay=self.rng.uniform(0.05, 0.5))
        try:
            settle(self.srv, model, room=lambda: self.make_room(model))
            check_state(self.srv, model, state, 0, self.stats, full=True)
        except Violation as e:
            self.violation("disk end", str(e))
        self.stop_server("end" if not self.mnt else "disk end")
        self.disk = (self.a.disk_rounds, rounds_full, time.time() - t0)

    def cleanup(self):
        if self.srv:
            self.srv.kill()
            self.srv = None
        if self.mnt:
            subprocess.run(["umount", "-l", self.mnt], stderr=subprocess.DEVNULL)
            self.mnt = None
        if not self.a.keep:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def summary(self):
        print("## Chaos: kill -9 of parsa serve, restart, checks")
        print()
        print("seed %d, %d client threads, %d job workers; state dir %s" % (
            self.a.seed, 3, self.a.workers, "kept: " + self.tmp if self.a.keep else "removed"))
        if hasattr(self, "part1"):
            nds, nj, ns, t = self.part1
            print("kills: %d in %.0f s; at the end %d datasets and %d jobs known to the "
                  "client (%d succeeded)" % (self.a.kills, t, nds, nj, ns))
        if getattr(self, "disk", None):
            r, ok, t = self.disk
            print("disk full: %d rounds on a %s tmpfs in %.0f s (%d answered /healthz on a "
                  "full disk)" % (r, self.a.disk_size, t, ok))
        print("kills in all: %d" % self.kills)
        print()
        print("phases hit (kills that found it):")
        for k in sorted(self.phases):
            print("  %-48s %d" % (k, self.phases[k]))
        print()
        print("counts:")
        for k in sorted(self.stats.count):
            print("  %-48s %d" % (k, self.stats.count[k]))
        print()
        first = [v for v in self.violations if v]
        print("violations: %d (%d kinds)" % (len(self.violations), len(first)))
        for v, n in zip(first, self.kinds.values()):
            print("  %s%s" % (v[:600], " (%d times)" % n if n > 1 else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("--kills", type=int, default=200)
    ap.add_argument("--disk-rounds", type=int, default=8)
    ap.add_argument("--disk-size", default="64M")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--keep", action="store_true", help="keep the temporary dir")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    run = Run(a)

    def on_signal(sig, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    try:
        if a.kills:
            run.kills_part()
        if a.disk_rounds:
            run.disk_part()
    except KeyboardInterrupt:
        run.violation("-", "interrupted")
    except Violation as e:
        run.violation("fatal", str(e))
    finally:
        run.cleanup()
    run.summary()
    sys.exit(1 if run.violations else 0)


if __name__ == "__main__":
    main()
