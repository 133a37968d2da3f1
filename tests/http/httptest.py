"""Shared harness of the HTTP tests (tests/http/test_*.py): a real
`parsa serve` on 127.0.0.1 with an ephemeral port and its own state dir
(Server), the @serving decorator that stops every server a test started
(exit 0, no sanitizer report), and the data helpers.
"""
import gzip  # noqa: F401
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from clitest import BIN, SLOWDOWN, libsvm_rows, read_lines, run, test, tmp  # noqa: E402,F401

DATA = os.path.abspath("data")
A9A = "a9a-sample.svm.gz"
ML = os.path.join(DATA, "movielens-sample.csv.gz")
SLOW = 120 * max(1, SLOWDOWN // 2)  # seconds: generous for the sanitizer builds
servers = []


class Server:
    """A `parsa serve` process on a free loopback port."""

    def __init__(self, state, *extra, data_dir=DATA):
        self.state, self.data_dir = state, data_dir
        args = [BIN, "serve", "--listen", "127.0.0.1:0", "--state-dir", state]
        if data_dir:
            args += ["--data-dir", data_dir]
        self.p = subprocess.Popen(args + list(extra), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        servers.append(self)
        line = self.p.stdout.readline()
        if "listening on http://" not in line:
            self.kill()
            raise AssertionError("server did not start: %r %s" %
                                 (line, self.p.stderr.read()))
        self.port = int(line.strip().rsplit(":", 1)[1])
        self.token = None

    def conn(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=SLOW)

    def req(self, method, path, body=None, headers=None, conn=None):
        """(status, headers dict (lower-case), body bytes)."""
        h = dict(headers or {})
        if self.token and "Authorization" not in h:
            h["Authorization"] = "Bearer " + self.token
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            h.setdefault("Content-Type", "application/json")
        c = conn or self.conn()
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        hd = {k.lower(): v for k, v in r.getheaders()}
        if not conn:
            c.close()
        return r.status, hd, data

    def json(self, method, path, body=None, status=200, headers=None):
        st, hd, data = self.req(method, path, body, headers)
        assert st == status, "%s %s: %d (want %d): %s" % (method, path, st, status, data[:500])
        return json.loads(data)

    def problem(self, method, path, body=None, status=400, headers=None):
        st, hd, data = self.req(method, path, body, headers)
        assert st == status, "%s %s: %d (want %d): %s" % (method, path, st, status, data[:500])
        assert hd.get("content-type", "").startswith("application/problem+json"), hd
        j = json.loads(data)
        for key in ("type", "title", "status", "detail"):
            assert key in j, (key, j)
        assert j["status"] == status and j["detail"], j
        return j, hd

    def wait_job(self, jid, states=("succeeded", "failed", "cancelled"), timeout=SLOW):
        t0 = time.time()
        # long poll (?wait) when waiting for the end, short polls otherwise
        wait = "?wait=%d" % timeout if "running" not in states else ""
        while time.time() - t0 < timeout:
            j = self.json("GET", "/v1/jobs/" + jid + wait)
            if j["state"] in states:
                return j
            time.sleep(0.02)
        raise AssertionError("job %s still %s" % (jid, j["state"]))

    def kill(self, sig=signal.SIGKILL):
        if self.p.poll() is None:
            self.p.send_signal(sig)
        try:
            self.p.wait(timeout=SLOW)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        for f in (self.p.stdout, self.p.stderr):
            if f:
                f.close()

    def stop(self):
        """SIGTERM and wait; returns the exit status."""
        self.kill(signal.SIGTERM)
        return self.p.returncode


def serving(fn):
    """Run fn, then stop every server it started that still runs with
    SIGTERM: it must exit 0 with no sanitizer report (leaks included under
    make check); a server that does not stop in time is killed."""
    def wrapped():
        n = len(servers)
        bad = []
        try:
            fn()
        finally:
            for s in servers[n:]:
                if s.p.poll() is not None:
                    s.kill()
                    continue
                s.p.send_signal(signal.SIGTERM)
                try:
                    s.p.wait(timeout=SLOW)
                    err = s.p.stderr.read()
                except subprocess.TimeoutExpired:
                    bad.append("server did not stop on SIGTERM")
                    err = ""
                s.kill()
                if s.p.returncode != 0 or "Sanitizer" in err or "runtime error" in err:
                    bad.append("server exit %s: %s" % (s.p.returncode, err[-2000:]))
            del servers[n:]
        if bad:
            raise AssertionError("; ".join(bad))
    wrapped.__name__ = fn.__name__
    return test(wrapped)


def register_path(s, path, **kw):
    body = {"path": path}
    body.update(kw)
    return s.json("POST", "/v1/datasets", body, status=201)


def submit(s, body, status=202):
    st, hd, data = s.req("POST", "/v1/jobs", body)
    assert st == status, (st, data)
    j = json.loads(data)
    assert hd["location"] == "/v1/jobs/" + j["id"], hd
    return j


_slow = {}


def slow_data():
    """A LIBSVM set whose k=128, 400-block job runs for seconds."""
    if "p" not in _slow:
        p = tmp("slow.svm")
        run("gen", "--examples", "150000", "--features", "60000", "--avg-nnz",
            "25", "--topics", "40", "--out", p, "-q")
        _slow["p"] = p
    return _slow["p"]


SLOW_JOB = {"k": 128, "blocks": 400}


def slow_server_data(state, *extra):
    """A server whose data dir holds the slow set, and its dataset id."""
    d = os.path.dirname(slow_data())
    s = Server(state, *extra, data_dir=d)
    ds = register_path(s, os.path.basename(slow_data()), format="libsvm")
    return s, ds["id"]


def wait_progress(s, jid):
    """Until the job has partitioned a block (so job.json says running)."""
    t0 = time.time()
    while time.time() - t0 < SLOW:
        j = s.json("GET", "/v1/jobs/" + jid)
        assert j["state"] in ("queued", "running"), j
        if j["progress"] > 0.05:
            return
        time.sleep(0.02)
    raise AssertionError("job %s made no progress" % jid)


def register_path_in(s, name):
    """Upload a sample to a server whose data dir is elsewhere."""
    return s.json("POST", "/v1/datasets?name=" + name,
                  open(os.path.join(DATA, name), "rb").read(), status=201)["id"]


def raw_exchange(port, data, close_early=False):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    out = b""
    try:
        s.sendall(data)
        if close_early:
            return b""
        s.shutdown(socket.SHUT_WR)
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    except OSError:
        pass
    finally:
        s.close()
    return out


