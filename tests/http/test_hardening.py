#!/usr/bin/env python3
"""Hardening of the HTTP service against hostile and careless clients, and
its answers to bad datasets (issue 19's HTTP defects): slow and idle
clients, descriptor exhaustion, absurd lengths, the upload's format
guess, client errors as 422, ids up to 2^64-1, start-up recovery.

Each server is the real binary (PARSA_BIN) on 127.0.0.1 with an ephemeral
port and its own state dir.  Ends with "N passed, N failed[, N skipped]".
"""
import os
import resource
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from clitest import BIN, SLOWDOWN, Skip, finish, tmp  # noqa: E402,F401

from httptest import (DATA, ML, SLOW, Server, raw_exchange,  # noqa: E402,F401
                      register_path, servers, serving, submit)


class LimitedServer(Server):
    """A server with a low descriptor limit (RLIMIT_NOFILE soft = hard =
    nofile) and its stderr in a file (its size is the log's size)."""

    def __init__(self, state, *extra, nofile=None):
        self.state, self.data_dir = state, DATA
        self.log = state + ".log"
        args = [BIN, "serve", "--listen", "127.0.0.1:0", "--state-dir", state,
                "--data-dir", DATA] + list(extra)

        def limit():
            if nofile:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
        with open(self.log, "w") as err:
            self.p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=err,
                                      text=True, preexec_fn=limit)
        self.p.stderr = open(self.log)  # read by serving() at the end
        servers.append(self)
        line = self.p.stdout.readline()
        if "listening on http://" not in line:
            self.kill()
            raise AssertionError("server did not start: %r %s" %
                                 (line, open(self.log).read()))
        self.port = int(line.strip().rsplit(":", 1)[1])
        self.token = None

    def cpu(self):
        """Seconds of CPU the server has used (utime + stime)."""
        with open("/proc/%d/stat" % self.p.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def connect(port):
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def closed_within(sock, seconds):
    """Seconds until the server closed sock (reading and discarding what
    it sends), or None if it is still open after `seconds`."""
    t0 = time.time()
    sock.settimeout(0.1)
    while time.time() - t0 < seconds:
        try:
            if not sock.recv(65536):
                return time.time() - t0
        except socket.timeout:
            continue
        except OSError:
            return time.time() - t0
    return None


def healthz(port, timeout):
    """True once GET /healthz answers 200 within `timeout` seconds."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=1)
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = b""
            while True:
                b = s.recv(4096)
                if not b:
                    break
                data += b
            s.close()
            if data.startswith(b"HTTP/1.1 200"):
                return True
        except OSError:
            pass
        time.sleep(0.05)
    return False


# ---- defect 2: idle, slow and hostile clients ----

@serving
def test_slowloris_is_closed_after_the_read_timeout():
    s = LimitedServer(tmp("h-slow"), "--read-timeout", "1")
    # partial headers, then silence (a "slowloris" connection)
    a = connect(s.port)
    a.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: 1\r\n")
    # a connection that never sends anything
    b = connect(s.port)
    # a partial body: the headers are complete, the body never is
    c = connect(s.port)
    c.sendall(b"POST /v1/datasets?format=libsvm HTTP/1.1\r\nHost: x\r\n"
              b"Content-Length: 1000\r\n\r\n1 1:1\n")
    for name, sock in (("partial headers", a), ("silent", b), ("partial body", c)):
        t = closed_within(sock, 5 * SLOWDOWN)
        assert t is not None, "%s connection still open after 5 s" % name
        sock.close()
    # headers trickled a byte every 0.3 s: under the inactivity timeout,
    # but the headers as a whole must come within it too
    d = connect(s.port)
    d.sendall(b"GET /healthz HTTP/1.1\r\n")
    t0 = time.time()
    d.settimeout(0.3)
    gone = None
    while time.time() - t0 < 6 * SLOWDOWN:
        try:
            d.sendall(b"X")
            if d.recv(65536) == b"":
                gone = time.time() - t0
                break
        except socket.timeout:
            continue
        except OSError:
            gone = time.time() - t0
            break
    d.close()
    assert gone is not None and gone < 4 * SLOWDOWN, "trickling client kept: %s" % gone
    assert healthz(s.port, 5)
    # a well-behaved keep-alive client is not hurt by the timeout
    st, hd, body = s.req("GET", "/healthz")
    assert st == 200, (st, body)


@serving
def test_quiet_event_stream_outlives_the_read_timeout():
    # a stream of a queued job sends nothing for seconds: the read timeout
    # (the client of a stream never sends) must not cut it
    from httptest import SLOW_JOB, slow_server_data, wait_progress
    s, ds = slow_server_data(tmp("h-sse"), "--read-timeout", "1", "--workers", "1")
    j1 = submit(s, dict(SLOW_JOB, dataset=ds, quality="best"))["id"]
    wait_progress(s, j1)
    j2 = submit(s, {"dataset": ds, "k": 2})["id"]
    sock = connect(s.port)
    sock.sendall(b"GET /v1/jobs/%s/events HTTP/1.1\r\nHost: x\r\n\r\n" % j2.encode())
    sock.settimeout(0.2)
    got, t0 = b"", time.time()
    while time.time() - t0 < 3.5 and b"event: end" not in got:
        try:
            b = sock.recv(65536)
        except socket.timeout:
            continue
        assert b, "the stream was cut after %.1f s: %r" % (time.time() - t0, got[-300:])
        got += b
    assert b"event: state" in got and b'"queued"' in got, got[-300:]
    s.req("DELETE", "/v1/jobs/" + j2)
    sock.settimeout(10)
    while b"event: end" not in got:
        b = sock.recv(65536)
        assert b, got[-300:]
        got += b
    sock.close()
    s.req("DELETE", "/v1/jobs/" + j1)


@serving
def test_absurd_content_length_is_answered_at_once():
    s = LimitedServer(tmp("h-len"), "--max-upload", "1M")
    for length in (b"99999999999999999999", b"9999999999999", b"1048577000"):
        a = connect(s.port)
        t0 = time.time()
        a.sendall(b"POST /v1/datasets?format=libsvm HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Length: " + length + b"\r\n\r\n1 1:1\n")
        a.settimeout(3)
        try:
            data = a.recv(65536)
        except socket.timeout:
            raise AssertionError("Content-Length %s: no answer in 3 s" % length.decode())
        finally:
            a.close()
        took = time.time() - t0
        head = data.split(b"\r\n", 1)[0]
        assert head.startswith(b"HTTP/1.1 413"), data[:300]
        assert b"application/problem+json" in data, data[:300]
        assert took < 2 * SLOWDOWN, took
    # a body within the limit still works
    st, hd, body = s.req("POST", "/v1/datasets?format=libsvm", b"1 1:1 2:1\n0 2:1\n")
    assert st == 201, (st, body)


@serving
def test_connection_cap_closes_the_excess_at_once():
    s = LimitedServer(tmp("h-cap"), "--max-connections", "6", "--read-timeout", "30")
    idle = [connect(s.port) for _ in range(6)]
    time.sleep(0.2)
    extra = connect(s.port)
    t = closed_within(extra, 3)
    assert t is not None and t < 2, "the connection over the cap was not closed: %s" % t
    extra.close()
    # the ones within the cap are still open
    assert closed_within(idle[0], 0.3) is None
    for c in idle:
        c.close()
    assert healthz(s.port, 5), "no /healthz after the idle connections closed"
    log = open(s.log).read()
    assert "--max-connections" in log, log


def exhaust(extra):
    """A server limited to 64 descriptors flooded with 150 idle
    connections: its CPU over 1.5 s, whether /healthz answers once they are
    closed, and its log."""
    s = LimitedServer(tmp("h-fd%d" % len(extra)), *extra, nofile=64)
    socks = []
    for _ in range(150):
        try:
            socks.append(connect(s.port))
        except OSError:
            break
    time.sleep(0.3)
    c0 = s.cpu()
    time.sleep(1.5)
    cpu = s.cpu() - c0
    for c in socks:
        c.close()
    ok = healthz(s.port, 10 * SLOWDOWN)
    return s, cpu, ok, os.path.getsize(s.log)


@serving
def test_descriptor_exhaustion_default_cap():
    s, cpu, ok, logsize = exhaust([])
    assert ok, "/healthz does not answer after the connections closed"
    assert cpu < 0.3 * SLOWDOWN, "the server used %.2f s of CPU in 1.5 s" % cpu
    assert logsize < 8192, "log of %d bytes: %s" % (logsize, open(s.log).read()[-2000:])


@serving
def test_descriptor_exhaustion_pauses_accept():
    # a cap above the descriptor limit: accept() itself fails with EMFILE
    s, cpu, ok, logsize = exhaust(["--read-timeout", "30", "--max-connections", "1000"])
    assert ok, "/healthz does not answer after the connections closed"
    assert cpu < 0.3 * SLOWDOWN, "the server used %.2f s of CPU in 1.5 s" % cpu
    assert logsize < 8192, "log of %d bytes: %s" % (logsize, open(s.log).read()[-2000:])
    log = open(s.log).read()
    assert "Too many open files" in log, log


# ---- defect 5: an upload's format is guessed as the CLI guesses it ----

def cli_dataset(path):
    import json
    from clitest import run
    p = run("partition", path, "-k", "2", "--json", "-q", "--out", tmp("cli-out"))
    return json.loads(p.stdout)["dataset"]


GOWALLA_LIKE = ("# Check-ins as a user x location graph\n"
                "# UserId\tItemId\tIsTest\n"
                "0\t0\t0\n0\t1\t0\n0\t7\t1\n1\t0\t1\n2\t5\t0\n2\t1\t0\n3\t0\t0\n")


@serving
def test_upload_format_guessed_by_content_as_the_cli():
    s = Server(tmp("h-guess"))
    # MovieLens CSV (header line, commas): pairs
    d = s.json("POST", "/v1/datasets", open(ML, "rb").read(), status=201)
    cli = cli_dataset(ML)
    assert d["format"] == "pairs" and d["format_from"] == "content", d
    assert (d["examples"], d["features"], d["nonzeros"]) == \
        (cli["examples"], cli["features"], cli["nonzeros"]), (d, cli)
    # a gowalla-like user-item TSV without a name: pairs, users and items
    # apart (4 users, 4 items), as the CLI reads the same bytes
    g = tmp("gowalla-like.dat")
    with open(g, "w") as f:
        f.write(GOWALLA_LIKE)
    d = s.json("POST", "/v1/datasets", GOWALLA_LIKE.encode(), status=201)
    assert d["format"] == "pairs" and d["format_from"] == "content", d
    assert (d["examples"], d["features"], d["nonzeros"]) == (4, 4, 7), d
    cli = cli_dataset(g)
    assert (cli["examples"], cli["features"], cli["nonzeros"]) == (4, 4, 7), cli
    # gzip: the same
    import gzip
    d = s.json("POST", "/v1/datasets", gzip.compress(GOWALLA_LIKE.encode()), status=201)
    assert d["format"] == "pairs" and d["examples"] == 4, d
    # a SNAP edge list stays a graph; a name decides before the content
    d = s.json("POST", "/v1/datasets", b"# FromNodeId\tToNodeId\n0\t1\n1\t2\n", status=201)
    assert d["format"] == "snap" and d["format_from"] == "content", d
    d = s.json("POST", "/v1/datasets?name=x.tsv", b"0\t1\n1\t2\n", status=201)
    assert d["format"] == "pairs" and d["format_from"] == "name", d
    d = s.json("POST", "/v1/datasets?format=snap", GOWALLA_LIKE.encode(), status=201)
    assert d["format"] == "snap" and d["format_from"] == "request", d
    # LIBSVM by content
    d = s.json("POST", "/v1/datasets", b"1 1:1 3:1\n0 2:1\n", status=201)
    assert d["format"] == "libsvm" and d["format_from"] == "content", d


# ---- defect 7: the client's errors are 422, in the client's words ----

@serving
def test_bad_datasets_are_422_naming_the_users_dataset():
    import gzip
    d = tmp("h-dd")
    os.makedirs(os.path.join(d, "sub"), exist_ok=True)
    raw = gzip.compress(b"".join(b"%d 1:1 %d:1\n" % (i % 2, i + 2) for i in range(5000)))
    with open(os.path.join(d, "trunc.svm.gz"), "wb") as f:
        f.write(raw[:len(raw) // 2])
    with open(os.path.join(d, "bad.svm"), "w") as f:
        f.write("1 1:1\n0 2:x\n")
    with open(os.path.join(d, "good.svm"), "w") as f:
        f.write("1 1:1\n0 2:1\n")
    os.mkfifo(os.path.join(d, "fifo.svm"))
    state = tmp("h-422")
    s = Server(state, data_dir=d)

    def no_server_paths(j):
        text = str(j)
        assert state not in text and "datasets/d" not in text and d not in text, j

    j, _ = s.problem("POST", "/v1/datasets", {"path": "sub"}, status=422)
    assert "directory" in j["detail"] and j.get("field") == "path", j
    no_server_paths(j)
    j, _ = s.problem("POST", "/v1/datasets", {"path": "trunc.svm.gz"}, status=422)
    assert j["detail"].startswith("trunc.svm.gz: ") and "truncated" in j["detail"], j
    assert j["dataset"] == "trunc.svm.gz", j
    no_server_paths(j)
    j, _ = s.problem("POST", "/v1/datasets", {"path": "bad.svm"}, status=422)
    assert j["detail"].startswith("bad.svm:2:5: ") and (j["line"], j["column"]) == (2, 5), j
    no_server_paths(j)
    # uploads: named by ?name, else "upload"
    j, _ = s.problem("POST", "/v1/datasets?format=libsvm&name=mine.svm", b"1 1:1\n0 2:x\n",
                     status=422)
    assert j["detail"].startswith("mine.svm:2:5: ") and j["dataset"] == "mine.svm", j
    assert (j["line"], j["column"]) == (2, 5), j
    no_server_paths(j)
    j, _ = s.problem("POST", "/v1/datasets", raw[:len(raw) // 2], status=422)
    assert j["detail"].startswith("upload: ") and "truncated" in j["detail"], j
    no_server_paths(j)
    # a FIFO is refused at once, and the service goes on
    t0 = time.time()
    j, _ = s.problem("POST", "/v1/datasets", {"path": "fifo.svm"}, status=422)
    assert time.time() - t0 < 2 * SLOWDOWN and "regular file" in j["detail"], j
    no_server_paths(j)
    for _ in range(6):  # more than the 4 reading threads
        register_path(s, "good.svm")
    # nothing of the failed uploads is left in the state dir
    left = sorted(f for f in os.listdir(os.path.join(state, "datasets")))
    assert all(f.endswith(".json") for f in left), left


# ---- defect 6: every feature id round-trips through the JSON ----

BIG = [2**64 - 1, 2**63, 2**63 - 1, 2**53, 2**53 - 1, 5, 0]


def id_json(v):
    """The documented form: a number up to 2^53-1, else a decimal string."""
    return v if v < 2**53 else str(v)


@serving
def test_feature_ids_up_to_2_64_round_trip():
    import json
    rows = []
    for i in range(40):
        feats = sorted({BIG[i % len(BIG)], BIG[(i * 3 + 1) % len(BIG)], 100 + i % 5})
        rows.append("%d %s" % (i % 2, " ".join("%d:1" % f for f in feats)))
    s = Server(tmp("h-ids"))
    d = s.json("POST", "/v1/datasets?format=libsvm", ("\n".join(rows) + "\n").encode(), status=201)
    job = submit(s, {"dataset": d["id"], "k": 2, "seed": 1})
    assert s.wait_job(job["id"])["state"] == "succeeded"
    base = "/v1/jobs/%s" % job["id"]
    # the text placement: every id as the reader read it
    st, hd, text = s.req("GET", base + "/placement/features")
    owner = {int(a): int(b) for a, b in (ln.split() for ln in text.decode().split("\n") if ln)}
    assert set(BIG) <= set(owner), sorted(owner)
    # JSON placement: numbers below 2^53, strings from there on
    st, hd, body = s.req("GET", base + "/placement/features?format=json")
    feats = json.loads(body)["features"]
    for f, part in feats:
        v = int(f)
        assert f == id_json(v), (f, v)
        assert owner[v] == part
    assert {int(f) for f, _ in feats} == set(owner)
    # lookups by id, answered in the same form
    for v in BIG:
        j = s.json("GET", base + "/features/%d" % v)
        assert j["feature"] == id_json(v) and j["part"] == owner[v], (v, j)
    # assign takes ids as numbers (up to 2^63-1) or strings (any)
    ex = [[str(2**64 - 1), 5], [str(2**63), 2**63 - 1], [2**53 - 1, "100"], ["0"]]
    j = s.json("POST", base + "/assign", {"examples": ex})
    assert len(j["parts"]) == 4 and all(0 <= p < 2 for p in j["parts"]), j
    # the same examples with every id as a string place the same
    j2 = s.json("POST", base + "/assign", {"examples": [[str(x) for x in e] for e in ex]})
    assert j2["parts"] == j["parts"], (j, j2)
    for bad in ([["18446744073709551616"]], [[-1]], [["12a"]], [[1.5]], [[""]]):
        pj, _ = s.problem("POST", base + "/assign", {"examples": bad}, status=422)
        assert pj["field"] == "examples[0][0]", pj


# ---- defect 8: start-up recovery; the disk is the truth ----

@serving
def test_recovery_removes_leftovers_and_orphan_uploads():
    state = tmp("h-rec")
    s = Server(state)
    d = s.json("POST", "/v1/datasets?format=libsvm&name=a.svm", b"1 1:1 2:1\n0 2:1 3:1\n", status=201)
    job = submit(s, {"dataset": d["id"], "k": 2})
    assert s.wait_job(job["id"])["state"] == "succeeded"
    assert s.stop() == 0
    ds, jd = os.path.join(state, "datasets"), os.path.join(state, "jobs", job["id"])
    # what kill -9 leaves: unfinished temporary files, an upload whose
    # registration never finished (no .json)
    planted = [os.path.join(ds, d["id"] + ".data.tmp.4242.0"),
               os.path.join(ds, "d9.data.tmp.4242.1"),
               os.path.join(ds, "d9.data"),
               os.path.join(jd, "placement.examples.tmp.4242.7"),
               os.path.join(jd, "job.json.tmp.4242.8")]
    for p in planted:
        with open(p, "wb") as f:
            f.write(b"x" * 1000)
    s = LimitedServer(state)
    for p in planted:
        assert not os.path.exists(p), p
    log = open(s.log).read()
    assert "recovery: removed 2 unfinished temporary files (2000 bytes)" in log, log
    assert "d9.data (1000 bytes): an upload whose registration never finished" in log, log
    # what was finished is intact
    assert s.json("GET", "/v1/datasets/" + d["id"])["examples"] == 2
    assert s.json("GET", "/v1/jobs/" + job["id"])["state"] == "succeeded"
    assert os.path.exists(os.path.join(ds, d["id"] + ".data"))
    st, hd, body = s.req("GET", "/v1/jobs/%s/placement/examples" % job["id"])
    assert st == 200 and len(body.split()) == 2, (st, body)
    # the next upload does not take the removed one's id... nor need to
    d2 = s.json("POST", "/v1/datasets?format=libsvm", b"1 1:1\n", status=201)
    assert d2["id"] != d["id"], d2


def mount_tmpfs(path, size):
    os.makedirs(path, exist_ok=True)
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s" % size, "tmpfs", path],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise Skip("cannot mount a tmpfs here (%s): the disk-full test needs "
                   "root in a container that may mount" % p.stderr.strip())


def fill(path):
    """Fill the filesystem of path; returns the filler's name."""
    f = os.path.join(path, "filler")
    with open(f, "wb") as out:
        try:
            while True:
                out.write(b"\0" * 65536)
                out.flush()
        except OSError:
            pass
    return f


@serving
def test_disk_full_never_contradicted_after_restart():
    from httptest import SLOW_JOB, slow_data, wait_progress
    mnt = tmp("h-full")
    mount_tmpfs(mnt, "8m")
    try:
        state = os.path.join(mnt, "state")
        data = os.path.dirname(slow_data())
        s = Server(state, "--workers", "1", data_dir=data)
        ds = register_path(s, os.path.basename(slow_data()), format="libsvm")["id"]
        j1 = submit(s, dict(SLOW_JOB, dataset=ds))["id"]
        wait_progress(s, j1)
        j2 = submit(s, {"dataset": ds, "k": 4, "seed": 1})["id"]
        filler = fill(mnt)
        # j1 is cancelled (its end cannot be written), then j2 would start
        st, hd, body = s.req("DELETE", "/v1/jobs/" + j1)
        assert st in (200, 202), (st, body)
        seen = {}
        t0 = time.time()
        while time.time() - t0 < 3 * SLOWDOWN:
            for j in (j1, j2):
                seen.setdefault(j, set()).add(s.json("GET", "/v1/jobs/" + j)["state"])
            time.sleep(0.1)
        before = {j: s.json("GET", "/v1/jobs/" + j)["state"] for j in (j1, j2)}
        assert s.stop() == 0
        os.unlink(filler)
        s = Server(state, "--workers", "1", data_dir=data)
        after = {j: s.wait_job(j)["state"] for j in (j1, j2)}
        terminal = ("succeeded", "failed", "cancelled")
        for j in (j1, j2):
            for st in seen[j] | {before[j]}:
                assert st not in terminal or st == after[j], \
                    "job %s was %s before the restart, %s after (seen %s)" % (
                        j, st, after[j], sorted(seen[j]))
        assert after[j2] == "succeeded", after
        assert s.stop() == 0
    finally:
        subprocess.run(["umount", "-l", mnt], capture_output=True)


# ---- defect 10's HTTP items ----

@serving
def test_chunked_uploads_over_the_limit_and_bad_chunks():
    import json
    s = Server(tmp("h-chunk"), "--max-upload", "1K")
    head = (b"POST /v1/datasets?format=libsvm HTTP/1.1\r\nHost: x\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")
    cases = [
        (head + b"800\r\n" + b"1 1:1\n" * 341 + b"12\r\n\r\n0\r\n\r\n", 413),
        (head + b"200\r\n" + b"1 1:1\n" * 85 + b"12\r\n\r\n" +
         b"300\r\n" + b"1 1:1\n" * 128 + b"\r\n0\r\n\r\n", 413),
        (head + b"zz\r\nabc\r\n0\r\n\r\n", 400),
        (head + b"6\r\n1 1:1\n\r\n-5\r\n\r\n0\r\n\r\n", 400),
        (head + b"6\r\n1 1:1\n\r\n6\r\n0 2:1\n\r\n0\r\n\r\n", 201),
    ]
    for data, status in cases:
        out = raw_exchange(s.port, data)
        assert out.startswith(b"HTTP/1.1 %d " % status), (status, out[:300])
        hdr, _, body = out.partition(b"\r\n\r\n")
        if status != 201:
            assert b"application/problem+json" in hdr, out[:300]
            j = json.loads(body)
            assert j["status"] == status and j["detail"], j
        assert b"<HTML>" not in out.upper(), out[:300]


@serving
def test_workers_range_is_the_clis():
    s = Server(tmp("h-wrange"))
    d = s.json("POST", "/v1/datasets?format=libsvm", b"1 1:1 2:1\n0 2:1 3:1\n1 3:1\n", status=201)
    # the CLI's range is 1..4096: the job's too (4096 itself: accepted)
    j, _ = s.problem("POST", "/v1/jobs", {"dataset": d["id"], "k": 2, "workers": 4097},
                     status=422)
    assert j["field"] == "workers" and "4096" in j["detail"], j
    st, hd, body = s.req("POST", "/v1/jobs", {"dataset": d["id"], "k": 2, "workers": 100})
    assert st == 202, (st, body)


@serving
def test_unknown_fields_refused_everywhere():
    s = Server(tmp("h-fields"))
    d = s.json("POST", "/v1/datasets?format=libsvm", b"1 1:1 2:1\n0 2:1 3:1\n", status=201)
    j, _ = s.problem("POST", "/v1/datasets?format=libsvm&fromat=snap", b"1 1:1\n", status=422)
    assert j["field"] == "fromat", j
    job = submit(s, {"dataset": d["id"], "k": 2})
    assert s.wait_job(job["id"])["state"] == "succeeded"
    j, _ = s.problem("POST", "/v1/jobs/%s/assign" % job["id"],
                     {"examples": [[1]], "imbalance": 2}, status=422)
    assert j["field"] == "imbalance", j
    assert s.json("POST", "/v1/jobs/%s/assign" % job["id"], {"examples": [[1]]})["parts"]


@serving
def test_with_a_token_unknown_routes_answer_401_first():
    from clitest import write_token
    s = Server(tmp("h-401"), "--token-file", write_token("tok", "t0ken"))
    for method, path in (("GET", "/nope"), ("GET", "/v1/nothing/here"),
                         ("PUT", "/v1/jobs"), ("GET", "/v1/jobs/j1")):
        j, hd = s.problem(method, path, status=401)
        assert hd["www-authenticate"].startswith("Bearer"), hd
    assert s.json("GET", "/healthz")["status"] == "ok"
    s.token = "t0ken"
    s.problem("GET", "/nope", status=404)
    s.problem("PUT", "/v1/jobs", status=405)
    # without a token: 404 as before
    s2 = Server(tmp("h-401b"))
    s2.problem("GET", "/nope", status=404)


# ---- the service cleans up after itself ----

@serving
def test_delete_datasets_and_finished_jobs_with_their_files():
    from httptest import SLOW_JOB, slow_data, wait_progress
    state = tmp("h-del")
    data = os.path.dirname(slow_data())
    s = Server(state, "--workers", "1", data_dir=data)
    big = register_path(s, os.path.basename(slow_data()), format="libsvm")["id"]
    up = s.json("POST", "/v1/datasets?format=libsvm", b"1 1:1 2:1\n0 2:1 3:1\n", status=201)["id"]
    j1 = submit(s, dict(SLOW_JOB, dataset=big))["id"]
    wait_progress(s, j1)
    j2 = submit(s, {"dataset": up, "k": 2})["id"]  # queued behind j1
    # a dataset a queued or running job will read cannot go
    for ds in (big, up):
        j, _ = s.problem("DELETE", "/v1/datasets/" + ds, status=409)
        assert "job" in j["detail"], j
    # a running job cannot be purged; cancel, then purge
    j, _ = s.problem("DELETE", "/v1/jobs/%s?purge=true" % j1, status=409)
    s.req("DELETE", "/v1/jobs/" + j1)
    assert s.wait_job(j1)["state"] == "cancelled"
    assert s.wait_job(j2)["state"] == "succeeded"
    jdir = os.path.join(state, "jobs", j2)
    assert os.path.exists(os.path.join(jdir, "placement.examples"))
    assert s.json("DELETE", "/v1/jobs/%s?purge=true" % j2) == {"id": j2, "deleted": True}
    assert not os.path.exists(jdir), os.listdir(jdir)
    s.problem("GET", "/v1/jobs/" + j2, status=404)
    s.problem("GET", "/v1/jobs/%s/placement/examples" % j2, status=404)
    s.problem("DELETE", "/v1/jobs/%s?purge=true" % j2, status=404)
    s.problem("DELETE", "/v1/jobs/%s?purge=maybe" % j1, status=422)
    # the datasets go now: an upload with its file, a path's file stays
    assert s.json("DELETE", "/v1/datasets/" + up) == {"id": up, "deleted": True}
    assert s.json("DELETE", "/v1/datasets/" + big)["deleted"] is True
    assert os.path.exists(slow_data())
    left = os.listdir(os.path.join(state, "datasets"))
    assert left == ["last-id"], left  # the highest id given, never reused
    s.problem("GET", "/v1/datasets/" + up, status=404)
    assert s.json("GET", "/v1/datasets")["datasets"] == []
    # a restart brings nothing back, and ids are not given again
    assert s.stop() == 0
    s = Server(state, data_dir=data)
    s.problem("GET", "/v1/jobs/" + j2, status=404)
    assert [j["id"] for j in s.json("GET", "/v1/jobs")["jobs"]] == [j1]
    d = s.json("POST", "/v1/datasets?format=libsvm", b"1 1:1\n", status=201)
    assert d["id"] not in (big, up), d
    assert submit(s, {"dataset": d["id"], "k": 1})["id"] not in (j1, j2)


@serving
def test_lists_paginate_and_filter():
    s = Server(tmp("h-list"))
    ds = [s.json("POST", "/v1/datasets?format=libsvm", b"1 1:1 2:1\n0 2:1 3:1\n",
                 status=201)["id"] for _ in range(3)]
    jobs = [submit(s, {"dataset": ds[i % 2], "k": 2})["id"] for i in range(5)]
    for j in jobs:
        assert s.wait_job(j)["state"] == "succeeded"
    cancelled = submit(s, {"dataset": ds[2], "k": 2, "time_limit": 0.001})["id"]
    s.wait_job(cancelled)
    page = s.json("GET", "/v1/jobs?limit=2")
    assert [j["id"] for j in page["jobs"]] == jobs[:2] and page["next"] == jobs[1], page
    page = s.json("GET", "/v1/jobs?limit=2&after=" + page["next"])
    assert [j["id"] for j in page["jobs"]] == jobs[2:4], page
    page = s.json("GET", "/v1/jobs?limit=10&after=" + jobs[3])
    assert [j["id"] for j in page["jobs"]] == [jobs[4], cancelled] and "next" not in page, page
    got = s.json("GET", "/v1/jobs?dataset=%s&state=succeeded" % ds[0])["jobs"]
    assert [j["id"] for j in got] == [jobs[0], jobs[2], jobs[4]], got
    assert s.json("GET", "/v1/jobs?state=running")["jobs"] == []
    page = s.json("GET", "/v1/datasets?limit=1&after=" + ds[0])
    assert [d["id"] for d in page["datasets"]] == [ds[1]] and page["next"] == ds[1], page
    for q, field in (("limit=0", "limit"), ("limit=x", "limit"), ("after=d1", "after"),
                     ("state=done", "state"), ("sort=id", "(query)")):
        j, _ = s.problem("GET", "/v1/jobs?" + q, status=422)
        assert j["field"] == field, (q, j)
    s.problem("GET", "/v1/datasets?state=queued", status=422)


if __name__ == "__main__":
    finish()
