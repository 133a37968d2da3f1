#!/usr/bin/env python3
"""The service's upkeep (issue 19's service items): start-up recovery of
the placement writer's leftovers in job directories, retention of finished
jobs (--max-jobs, --max-age), lookups of an example by the user's id
(SNAP and pairs inputs), uploads streamed to disk under a global cap
(--max-upload-total).

Each server is the real binary (PARSA_BIN) on 127.0.0.1 with an ephemeral
port and its own state dir.  Ends with "N passed, N failed[, N skipped]".
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from clitest import finish, tmp  # noqa: E402

from httptest import Server, serving, submit  # noqa: E402

TINY = b"1 1:1 2:1\n0 2:1 3:1\n1 3:1 4:1\n0 4:1 1:1\n"


def tiny_job(s, **kw):
    """A finished k=2 job on a new upload: its id."""
    d = s.json("POST", "/v1/datasets?format=libsvm", TINY, status=201)
    body = {"dataset": d["id"], "k": 2}
    body.update(kw)
    j = submit(s, body)["id"]
    assert s.wait_job(j)["state"] == "succeeded"
    return j


class LoggedServer(Server):
    """A server whose stderr goes to a file (read while it runs)."""

    def __init__(self, state, *extra):
        import subprocess
        from httptest import BIN, DATA, servers
        self.state, self.data_dir = state, DATA
        self.log = state + ".log"
        args = [BIN, "serve", "--listen", "127.0.0.1:0", "--state-dir", state] + list(extra)
        with open(self.log, "w") as err:
            self.p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=err, text=True)
        self.p.stderr = open(self.log)
        servers.append(self)
        line = self.p.stdout.readline()
        if "listening on http://" not in line:
            self.kill()
            raise AssertionError("server did not start: %r %s" % (line, open(self.log).read()))
        self.port = int(line.strip().rsplit(":", 1)[1])
        self.token = None

    def text(self):
        return open(self.log).read()


# ---- start-up recovery of part_out's leftovers ----

@serving
def test_recovery_removes_placement_writer_leftovers():
    state = tmp("u-rec")
    s = Server(state)
    j = tiny_job(s)
    assert s.stop() == 0
    jd = os.path.join(state, "jobs", j)
    # part_out's temporary names (.NAME.tmp.PID[.I]), as a kill -9 during
    # the placement's write leaves them; and look-alikes that must stay
    planted = [os.path.join(jd, ".placement.examples.tmp.4242"),
               os.path.join(jd, ".placement.features.tmp.4242.3")]
    kept = [os.path.join(jd, "placement.tmp.4242"),      # not a dotfile
            os.path.join(jd, ".placement.tmp.x42"),      # not a pid
            os.path.join(jd, ".tmp.4242")]               # no name
    for p in planted + kept:
        with open(p, "wb") as f:
            f.write(b"x" * 100)
    s = LoggedServer(state)
    for p in planted:
        assert not os.path.exists(p), p
    for p in kept:
        assert os.path.exists(p), p
    log = s.text()
    assert "recovery: removed 2 unfinished temporary files (200 bytes) in %s" % jd in log, log
    assert s.json("GET", "/v1/jobs/" + j)["state"] == "succeeded"
    st, hd, body = s.req("GET", "/v1/jobs/%s/placement/examples" % j)
    assert st == 200 and len(body.split()) == 4, (st, body)


# ---- retention: --max-jobs, --max-age ----

def gone(s, state, j):
    st, hd, body = s.req("GET", "/v1/jobs/" + j)
    return st == 404 and not os.path.exists(os.path.join(state, "jobs", j))


@serving
def test_retention_max_jobs_keeps_the_newest_finished():
    from httptest import SLOW_JOB, slow_data, wait_progress
    import time
    state = tmp("u-maxjobs")
    s = LoggedServer(state, "--max-jobs", "2")
    j1, j2, j3 = tiny_job(s), tiny_job(s), tiny_job(s)
    # checked after each job ends: j1 went when j3 ended
    assert gone(s, state, j1), j1
    for j in (j2, j3):
        assert s.json("GET", "/v1/jobs/" + j)["state"] == "succeeded"
    assert "retention: removed job %s (succeeded) and its files" % j1 in s.text(), s.text()
    assert s.stop() == 0
    # checked at start-up: now only one is kept
    s = LoggedServer(state, "--max-jobs", "1", "--workers", "1",
                     "--data-dir", os.path.dirname(slow_data()))
    assert gone(s, state, j2), j2
    assert "retention: removed job %s" % j2 in s.text(), s.text()
    # queued and running jobs are neither deleted nor counted: j3 stays
    # the one finished job kept
    ds = s.json("POST", "/v1/datasets", {"path": os.path.basename(slow_data()),
                                         "format": "libsvm"}, status=201)["id"]
    j4 = submit(s, dict(SLOW_JOB, dataset=ds))["id"]
    wait_progress(s, j4)
    j5 = submit(s, {"dataset": ds, "k": 2})["id"]
    s.json("POST", "/v1/datasets?format=libsvm", TINY, status=201)  # a check runs
    states = {j: s.json("GET", "/v1/jobs/" + j)["state"] for j in (j3, j4, j5)}
    assert states == {j3: "succeeded", j4: "running", j5: "queued"}, states
    s.json("DELETE", "/v1/jobs/" + j4, status=202)
    assert s.wait_job(j5)["state"] == "succeeded"
    # j4 (cancelled) and j3 went; j5, the newest finished, stays
    t0 = time.time()
    while not (gone(s, state, j3) and gone(s, state, j4)) and time.time() - t0 < 10:
        time.sleep(0.05)
    assert gone(s, state, j3) and gone(s, state, j4), s.text()
    assert "retention: removed job %s (cancelled)" % j4 in s.text(), s.text()
    assert s.json("GET", "/v1/jobs/" + j5)["state"] == "succeeded"


@serving
def test_retention_max_age_at_start_up_and_periodically():
    import json
    import time
    state = tmp("u-maxage")
    s = Server(state)
    j1, j2 = tiny_job(s), tiny_job(s)
    assert s.stop() == 0
    # j1 ended long ago (as its job.json says)
    path = os.path.join(state, "jobs", j1, "job.json")
    j = json.load(open(path))
    j["finished"] = "2020-01-01T00:00:00Z"
    json.dump(j, open(path, "w"))
    s = LoggedServer(state, "--max-age", "7d")
    assert gone(s, state, j1), j1
    assert "retention: removed job %s (succeeded)" % j1 in s.text(), s.text()
    assert s.json("GET", "/v1/jobs/" + j2)["state"] == "succeeded"
    assert s.stop() == 0
    # a short age: a job just ended is there, and goes after a while
    # without any other event (the periodic check)
    s = LoggedServer(state, "--max-age", "2s")
    j3 = tiny_job(s)
    t_end = time.time()
    while not gone(s, state, j3) and time.time() - t_end < 15:
        time.sleep(0.1)
    assert gone(s, state, j3) and gone(s, state, j2), s.text()
    assert time.time() - t_end >= 1, "removed too early"
    assert "retention: removed job %s (succeeded)" % j3 in s.text(), s.text()
    # bad values are usage errors
    import subprocess
    from httptest import BIN
    for opt, v in (("--max-age", "7x"), ("--max-age", "0"), ("--max-age", "-1h"),
                   ("--max-jobs", "0"), ("--max-jobs", "1.5")):
        p = subprocess.run([BIN, "serve", opt, v], capture_output=True, text=True)
        assert p.returncode == 2 and opt in p.stderr, (opt, v, p.returncode, p.stderr)


# ---- lookups by the example's own id (?key=) ----

BIGK = [2**64 - 1, 2**63, 2**53, 2**53 - 1, 12345, 7, 0]


def key_json(v):
    return v if v < 2**53 else str(v)


def check_keys(s, state, name, body, fmt):
    """Upload body, partition it, check ?key= against the CLI's
    --examples-ids file of the same data; again after a restart."""
    from clitest import run
    import json
    path = tmp(name)
    open(path, "wb").write(body)
    run("partition", path, "-k", "2", "--format", fmt, "--examples-ids",
        "--out", path + ".p", "-q")
    ids = [int(ln.split()[0]) for ln in open(path + ".p.example_ids")]
    d = s.json("POST", "/v1/datasets?format=%s&name=%s" % (fmt, name), body, status=201)
    j = submit(s, {"dataset": d["id"], "k": 2, "seed": 1})["id"]
    assert s.wait_job(j)["state"] == "succeeded"
    st, hd, text = s.req("GET", "/v1/jobs/%s/placement/examples" % j)
    parts = [int(x) for x in text.split()]
    assert len(parts) == len(ids), (parts, ids)

    def lookups():
        for i, key in enumerate(ids):
            got = s.json("GET", "/v1/jobs/%s/examples?key=%d" % (j, key))
            assert got == {"job": j, "key": key_json(key), "example": i,
                           "part": parts[i]}, (key, got)
            # by position: the example's own id is said too
            got = json.loads(s.req("GET", "/v1/jobs/%s/examples/%d" % (j, i))[2])
            assert got["key"] == key_json(key) and got["part"] == parts[i], got
        unknown = next(v for v in range(1, 100) if v not in ids)
        pj, _ = s.problem("GET", "/v1/jobs/%s/examples?key=%d" % (j, unknown), status=404)
        assert pj["type"].endswith("unknown-key") and str(unknown) in pj["detail"], pj
        for q in ("", "?key=", "?key=-1", "?key=18446744073709551616", "?key=1x",
                  "?key=1&key=2"):
            pj, _ = s.problem("GET", "/v1/jobs/%s/examples%s" % (j, q), status=422)
            assert pj["field"] == "key", (q, pj)
        pj, _ = s.problem("GET", "/v1/jobs/%s/examples?key=1&id=2" % j, status=422)
        assert pj["field"] == "id", pj
    lookups()
    return j, ids, lookups


@serving
def test_examples_by_key_pairs_and_snap():
    state = tmp("u-keys")
    s = Server(state)
    # pairs: a user per example (ids up to 2^64-1, in no sorted order)
    rows = []
    for n, u in enumerate(BIGK):
        for f in range(3):
            rows.append("%d,%d" % (u, 100 + (n * 7 + f * 3) % 11))
    jp, ids, lp = check_keys(s, state, "keys.csv", ("\n".join(rows) + "\n").encode(), "pairs")
    assert sorted(ids) == sorted(BIGK), ids
    # SNAP adjacency: a vertex per example
    edges = [(BIGK[i], BIGK[(i * 3 + 1) % len(BIGK)]) for i in range(len(BIGK))]
    edges += [(BIGK[i], 4242 + i) for i in range(3)]
    text = "# a SNAP graph\n" + "".join("%d\t%d\n" % e for e in edges)
    js, ids2, ls = check_keys(s, state, "keys.txt", text.encode(), "snap")
    assert set(BIGK) <= set(ids2), ids2
    # LIBSVM: no ids of their own
    jl = tiny_job(s)
    pj, _ = s.problem("GET", "/v1/jobs/%s/examples?key=1" % jl, status=404)
    assert pj["type"].endswith("no-example-ids"), pj
    assert "key" not in s.json("GET", "/v1/jobs/%s/examples/0" % jl)
    s.problem("GET", "/v1/jobs/j999/examples?key=1", status=404)
    # after a restart: the ids come back from the job's files
    assert s.stop() == 0
    for j in (jp, js):
        assert os.path.exists(os.path.join(state, "jobs", j, "placement.example_ids")), j
    s2 = Server(state)
    s.port = s2.port
    lp()
    ls()


# ---- uploads streamed to disk, under a global cap ----

def rss_kb(pid):
    """Resident set size (KiB)."""
    with open("/proc/%d/statm" % pid) as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def upload_head(n, extra=b"", query=b"format=libsvm"):
    return (b"POST /v1/datasets?" + query + b" HTTP/1.1\r\nHost: x\r\n"
            b"Content-Length: " + str(n).encode() + b"\r\n" + extra + b"\r\n")


def read_reply(sock, timeout=None):
    import socket
    from httptest import SLOW
    sock.settimeout(timeout or SLOW)
    out = b""
    try:
        while True:
            b = sock.recv(65536)
            if not b:
                break
            out += b
            head, sep, body = out.partition(b"\r\n\r\n")
            if sep:
                for ln in head.split(b"\r\n"):
                    if ln.lower().startswith(b"content-length:") and \
                            len(body) >= int(ln.split(b":")[1]):
                        return out
    except (socket.timeout, ConnectionResetError):
        pass
    return out


def tmp_files(state):
    d = os.path.join(state, "datasets")
    return {f: os.path.getsize(os.path.join(d, f)) for f in os.listdir(d) if ".tmp." in f}


@serving
def test_upload_streams_to_disk_as_it_arrives():
    import socket
    import time
    state = tmp("u-stream")
    s = Server(state, "--max-upload", "512M")
    row = b"1 1:1 2:1 3:1\n"
    body = row * (48 * 2**20 // len(row))
    part = len(body) - 1000
    sock = socket.create_connection(("127.0.0.1", s.port))
    rss0 = rss_kb(s.p.pid)
    sock.sendall(upload_head(len(body)) + body[:part])
    # the bytes sent so far are in the upload's temporary file, not in
    # the server's memory
    t0 = time.time()
    while sum(tmp_files(state).values()) < part and time.time() - t0 < 30:
        time.sleep(0.05)
    got = tmp_files(state)
    assert sum(got.values()) == part, (got, part)
    grew = rss_kb(s.p.pid) - rss0
    from clitest import SLOWDOWN
    # (a sanitizer build keeps freed memory in quarantine: not there)
    assert grew < 16 * 1024 or SLOWDOWN > 1, \
        "RSS grew by %d KiB while %d bytes arrived" % (grew, part)
    sock.sendall(body[part:])
    out = read_reply(sock)
    sock.close()
    assert out.startswith(b"HTTP/1.1 201 "), out[:300]
    assert b'"examples":%d' % (len(body) // len(row)) in out, out[-400:]
    assert tmp_files(state) == {}, tmp_files(state)
    did = out.split(b'"id":"')[1].split(b'"')[0].decode()
    assert os.path.getsize(os.path.join(state, "datasets", did + ".data")) == len(body)
    # the same as a registration by the stored file: a job runs on it
    d = s.json("GET", "/v1/datasets/" + did)
    assert d["bytes"] == len(body) and d["examples"] == len(body) // len(row), d


@serving
def test_uploads_capped_in_total():
    import socket
    import time
    state = tmp("u-cap")
    s = Server(state, "--max-upload", "3M", "--max-upload-total", "2M")
    row = b"1 1:1 2:1\n"
    body = row * (900000 // len(row))
    # two uploads arriving: 1.8 MB of the 2 MB
    socks = []
    for _ in range(2):
        k = socket.create_connection(("127.0.0.1", s.port))
        k.sendall(upload_head(len(body)) + body[:1000])
        socks.append(k)
    t0 = time.time()
    while len(tmp_files(state)) < 2 and time.time() - t0 < 30:
        time.sleep(0.02)
    # a third is refused: at once when it waits for 100 Continue...
    k = socket.create_connection(("127.0.0.1", s.port))
    k.sendall(upload_head(len(body), b"Expect: 100-continue\r\n"))
    out = read_reply(k, 10)
    k.close()
    assert out.startswith(b"HTTP/1.1 503 "), out[:300]
    assert b"\r\nRetry-After: 5\r\n" in out and b"application/problem+json" in out, out
    assert b"--max-upload-total" in out, out
    # ... else once its body has been read (so the client reads the reply)
    k = socket.create_connection(("127.0.0.1", s.port))
    k.sendall(upload_head(len(body)) + body)
    out = read_reply(k)
    k.close()
    assert out.startswith(b"HTTP/1.1 503 ") and b"Retry-After" in out, out[:300]
    # a chunked one counts as it arrives: refused once over
    head = (b"POST /v1/datasets?format=libsvm HTTP/1.1\r\nHost: x\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")
    chunk = row * 30000
    k = socket.create_connection(("127.0.0.1", s.port))
    k.sendall(head + b"%x\r\n" % len(chunk) + chunk + b"\r\n0\r\n\r\n")
    out = read_reply(k)
    k.close()
    assert out.startswith(b"HTTP/1.1 503 "), out[:300]
    assert len(tmp_files(state)) == 2, tmp_files(state)
    # the first two end well
    for k in socks:
        k.sendall(body[1000:])
    for k in socks:
        out = read_reply(k)
        k.close()
        assert out.startswith(b"HTTP/1.1 201 "), out[:300]
    # their bytes no longer count: the same uploads go in now
    for _ in range(2):
        k = socket.create_connection(("127.0.0.1", s.port))
        k.sendall(upload_head(len(body), b"Expect: 100-continue\r\n"))
        cont = k.recv(100)
        assert cont.startswith(b"HTTP/1.1 100 Continue\r\n\r\n"), cont
        k.sendall(body)
        out = read_reply(k)
        k.close()
        assert out.startswith(b"HTTP/1.1 201 "), out
    # a body over --max-upload: 413 after it was read
    k = socket.create_connection(("127.0.0.1", s.port))
    big = row * (3200000 // len(row))
    k.sendall(upload_head(len(big)) + big)
    out = read_reply(k)
    k.close()
    assert out.startswith(b"HTTP/1.1 413 ") and b"--max-upload" in out, out[:300]
    assert tmp_files(state) == {}, tmp_files(state)
    assert len(s.json("GET", "/v1/datasets")["datasets"]) == 4


@serving
def test_interrupted_uploads_leave_nothing():
    import socket
    import time
    state = tmp("u-gone")
    s = LoggedServer(state, "--max-upload", "3M", "--max-upload-total", "1M",
                     "--read-timeout", "1")
    row = b"1 1:1 2:1\n"
    body = row * (800000 // len(row))
    # a client that goes away midway, one that falls silent
    k = socket.create_connection(("127.0.0.1", s.port))
    k.sendall(upload_head(len(body)) + body[:5000])
    k2 = socket.create_connection(("127.0.0.1", s.port))
    k2.sendall(upload_head(len(body) // 10) + body[:3000])
    t0 = time.time()
    while len(tmp_files(state)) < 2 and time.time() - t0 < 30:
        time.sleep(0.02)
    assert len(tmp_files(state)) == 2, tmp_files(state)
    k.close()
    t0 = time.time()
    while tmp_files(state) and time.time() - t0 < 30:
        time.sleep(0.05)
    assert tmp_files(state) == {}, tmp_files(state)
    assert read_reply(k2, 5) == b""  # dropped, no reply
    k2.close()
    # nothing counts any more: a whole upload fits
    k = socket.create_connection(("127.0.0.1", s.port))
    k.sendall(upload_head(len(body)) + body)
    out = read_reply(k)
    k.close()
    assert out.startswith(b"HTTP/1.1 201 "), out[:300]
    did = out.split(b'"id":"')[1].split(b'"')[0]
    # an upload after other requests on the same connection (pipelined)
    k = socket.create_connection(("127.0.0.1", s.port))
    small = b"1 1:1\n0 2:1\n"
    job = b'{"dataset": "%s", "k": 1}' % did
    k.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" +
              b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(job) + job +
              upload_head(len(small)) + small)
    out = b""
    k.settimeout(30)
    while out.count(b"HTTP/1.1 ") < 3 or not out.endswith(b"}\n"):
        b = k.recv(65536)
        if not b:
            break
        out += b
    k.close()
    import re
    codes = re.findall(rb"HTTP/1\.1 (\d+) ", out)
    assert codes == [b"200", b"202", b"201"], out
    # larger than --max-upload-total (here below --max-upload): it could
    # never fit, so 413 rather than 503
    big = row * (1500000 // len(row))
    k = socket.create_connection(("127.0.0.1", s.port))
    k.sendall(upload_head(len(big)) + big)
    out = read_reply(k)
    k.close()
    assert out.startswith(b"HTTP/1.1 413 ") and b"--max-upload-total" in out, out[:400]
    # a registration by path (a JSON body, held back too) still works
    d = s.json("POST", "/v1/datasets", {"path": "a9a-sample.svm.gz"}, status=422)
    assert d["field"] == "path", d  # no --data-dir here: refused as before


@serving
def test_streamed_uploads_with_a_token():
    import socket
    from clitest import write_token
    s = Server(tmp("u-tok"), "--token-file", write_token("u-tok-token", "tk"))
    body = b"1 1:1 2:1\n" * 300000
    # without the token: the body is read (and dropped), then 401, so a
    # client still sending reads it
    k = socket.create_connection(("127.0.0.1", s.port))
    k.sendall(upload_head(len(body)) + body)
    out = read_reply(k)
    k.close()
    assert out.startswith(b"HTTP/1.1 401 ") and b"WWW-Authenticate: Bearer" in out, out[:300]
    assert out.endswith(b"}\n"), out[-200:]
    assert tmp_files(s.state) == {}
    # with it: stored
    k = socket.create_connection(("127.0.0.1", s.port))
    k.sendall(upload_head(len(body), b"Authorization: Bearer tk\r\n") + body)
    out = read_reply(k)
    k.close()
    assert out.startswith(b"HTTP/1.1 201 "), out[:300]
    s.token = "tk"
    assert len(s.json("GET", "/v1/datasets")["datasets"]) == 1


@serving
def test_pipelined_requests_around_held_back_bodies():
    """Random sequences of requests on one connection, sent in random
    pieces: GETs, JSON bodies (a job, a registration by path, held back
    and read whole), uploads by Content-Length or chunked (under and over
    --max-upload), last an upload or another request; every reply comes,
    in order, with its status."""
    import random
    import re
    import socket
    s = Server(tmp("u-pipe"), "--max-upload", "64K", data_dir=None)
    rnd = random.Random(19)
    row = b"1 1:1 2:1\n"

    def upload_cl():
        body = row * rnd.randint(1, 8000)
        return (b"POST /v1/datasets?format=libsvm HTTP/1.1\r\nHost: x\r\nContent-Length: %d"
                b"\r\n\r\n" % len(body) + body, "201" if len(body) <= 65536 else "413")

    def upload_chunked():
        body, parts, i = row * rnd.randint(1, 8000), [], 0
        while i < len(body):
            k = rnd.randint(1, 3000)
            parts.append(b"%x\r\n" % len(body[i:i + k]) + body[i:i + k] + b"\r\n")
            i += k
        return (b"POST /v1/datasets/?format=libsvm HTTP/1.1\r\nHost: x\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n" + b"".join(parts) + b"0\r\n\r\n",
                "201" if len(body) <= 65536 else "413")

    def json_post(path, j, status):
        return lambda: (b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        b"Content-Length: %d\r\n\r\n" % (path, len(j)) + j, status)

    get = lambda: (b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", "200")  # noqa: E731
    job = json_post(b"/v1/jobs", b'{"dataset": "d999", "k": 2}', "422")
    reg = json_post(b"/v1/datasets", b'{"path": "x.svm"}', "422")
    for it in range(120):
        reqs = [rnd.choice([get, job, reg])() for _ in range(rnd.randint(0, 3))]
        reqs.append(rnd.choice([upload_cl, upload_chunked, get, reg])())
        data = b"".join(r[0] for r in reqs)
        want = [r[1] for r in reqs]
        k = socket.create_connection(("127.0.0.1", s.port))
        i = 0
        while i < len(data):
            n = rnd.choice([1, 7, 100, 1000, 70000])
            k.sendall(data[i:i + n])
            i += n
        k.settimeout(30)
        out = b""
        while len(re.findall(rb"HTTP/1\.1 (\d\d\d) ", out)) < len(want) or \
                not out.endswith(b"}\n"):
            b = k.recv(65536)
            if not b:
                break
            out += b
        k.close()
        got = [c.decode() for c in re.findall(rb"HTTP/1\.1 (\d\d\d) ", out)]
        assert got == want, (it, want, got, out[-300:])


if __name__ == "__main__":
    finish()
