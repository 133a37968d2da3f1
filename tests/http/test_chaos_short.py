#!/usr/bin/env python3
"""The short version of `make chaos` (bench/chaos.py), and the full disk's
answers one by one.

* 15 kill -9 of `parsa serve` across uploads, registrations, jobs and
  placement writes, each followed by a restart and every check of the
  chaos run (nothing acknowledged lost or changed, no leftovers, the disk
  and the API agree);
* two rounds on a full tmpfs (root: the test mounts and removes it);
* on a full disk, step by step: an upload, a registration and a job get
  507 problem+json naming no server file, the refused job is never
  listed (before, it was listed as failed and gone after a restart), a
  queued job whose cancellation cannot be stored stays queued (before,
  it was shown cancelled and ran after a restart), a dataset or job whose
  deletion cannot record the highest id given is kept (before, it was
  deleted and a restart could give its id again), and once space is
  freed the queued job runs.

Ends with "N passed, N failed[, N skipped]".
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from clitest import BIN, SLOWDOWN, Skip, finish  # noqa: E402

from httptest import DATA, SLOW, Server, serving  # noqa: E402

CHAOS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "chaos.py")
BUILD = os.path.dirname(os.path.abspath(BIN))


def chaos(*args):
    t0 = time.time()
    p = subprocess.run([sys.executable, CHAOS, BUILD, "--seed", "7"] + list(args),
                       capture_output=True, text=True, timeout=300 * SLOWDOWN)
    out = p.stdout + p.stderr
    assert p.returncode == 0 and "violations: 0" in p.stdout, out[-4000:]
    print("  chaos %s: %.1f s" % (" ".join(args), time.time() - t0))
    return p.stdout


def can_mount():
    if os.geteuid() != 0 or not shutil.which("mount"):
        return False
    d = tempfile.mkdtemp(prefix="parsa-mnt-")
    try:
        ok = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1M", "tmpfs", d],
                            stderr=subprocess.DEVNULL).returncode == 0
        if ok:
            subprocess.run(["umount", d])
        return ok
    finally:
        os.rmdir(d)


@serving
def test_chaos_kills():
    out = chaos("--kills", "15", "--disk-rounds", "0")
    assert "kills in all: 15" in out, out
    assert "checks: restart consistent" in out, out


@serving
def test_chaos_disk_full():
    if not can_mount():
        raise Skip("needs root and tmpfs to fill a disk")
    out = chaos("--kills", "0", "--disk-rounds", "2", "--disk-size", "32M")
    assert "disk full: 2 rounds" in out, out


class Tmpfs:
    def __init__(self, size):
        self.dir = tempfile.mkdtemp(prefix="parsa-full-")
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s" % size, "tmpfs", self.dir],
                       check=True)

    def fill(self, leave):
        """Leave `leave` bytes free (whole pages)."""
        st = os.statvfs(self.dir)
        want = st.f_bavail * st.f_frsize - leave
        fd = os.open(os.path.join(self.dir, "filler"), os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            while want > 0:
                want -= os.write(fd, b"\0" * min(want, 1 << 20))
        finally:
            os.close(fd)

    def free(self):
        os.unlink(os.path.join(self.dir, "filler"))

    def close(self):
        subprocess.run(["umount", "-l", self.dir])
        os.rmdir(self.dir)


def insufficient(s, method, path, body=None):
    st, hd, data = s.req(method, path, body)
    assert st == 507, (method, path, st, data)
    assert hd["content-type"].startswith("application/problem+json"), hd
    j = json.loads(data)
    assert j["status"] == 507 and "disk is full" in j["detail"], j
    assert ".tmp." not in j["detail"] and "/" not in j["detail"], j
    return j


@serving
def test_disk_full_answers():
    if not can_mount():
        raise Skip("needs root and tmpfs to fill a disk")
    fs = Tmpfs("4M")
    try:
        state = os.path.join(fs.dir, "state")
        s = Server(state)
        d1 = s.json("POST", "/v1/datasets", {"path": "a9a-sample.svm.gz"}, status=201)["id"]
        fs.fill(0)
        insufficient(s, "POST", "/v1/datasets?name=x.svm.gz",
                     open(os.path.join(DATA, "reuters-sample.svm.gz"), "rb").read())
        insufficient(s, "POST", "/v1/datasets", {"path": "reuters-sample.svm.gz"})
        insufficient(s, "POST", "/v1/jobs", {"dataset": d1, "k": 4})
        assert s.json("GET", "/v1/jobs")["jobs"] == [], "a refused job is listed"
        assert [d["id"] for d in s.json("GET", "/v1/datasets")["datasets"]] == [d1]
        # a deletion that cannot record the highest id given is refused:
        # a restart would give the id again
        insufficient(s, "DELETE", "/v1/datasets/" + d1)
        assert s.json("GET", "/v1/datasets/" + d1)["id"] == d1
        # one page free: the job is stored as queued, its start cannot be
        # (it stays queued), nor its cancellation
        fs.free()
        fs.fill(4096)
        st, hd, data = s.req("POST", "/v1/jobs", {"dataset": d1, "k": 4})
        assert st == 202, (st, data)
        jid = json.loads(data)["id"]
        time.sleep(0.5)
        assert s.json("GET", "/v1/jobs/" + jid)["state"] == "queued"
        insufficient(s, "DELETE", "/v1/jobs/" + jid)
        assert s.json("GET", "/v1/jobs/" + jid)["state"] == "queued"
        assert s.p.poll() is None and s.json("GET", "/healthz")["status"] == "ok"
        fs.free()
        assert s.wait_job(jid, timeout=SLOW)["state"] == "succeeded"
        fs.fill(0)
        insufficient(s, "DELETE", "/v1/jobs/%s?purge=true" % jid)
        assert s.json("GET", "/v1/jobs/" + jid)["state"] == "succeeded"
        fs.free()
        s.kill()
        s = Server(state)
        assert s.json("GET", "/v1/jobs/" + jid)["state"] == "succeeded"
        assert [j["id"] for j in s.json("GET", "/v1/jobs")["jobs"]] == [jid]
        # deleted with room: the ids are not given again after a restart
        s.json("DELETE", "/v1/jobs/%s?purge=true" % jid)
        s.json("DELETE", "/v1/datasets/" + d1)
        s.kill()
        s = Server(state)
        d2 = s.json("POST", "/v1/datasets", {"path": "a9a-sample.svm.gz"}, status=201)["id"]
        j2 = s.json("POST", "/v1/jobs", {"dataset": d2, "k": 2}, status=202)["id"]
        assert d2 != d1 and j2 != jid, (d1, d2, jid, j2)
        s.stop()
    finally:
        fs.close()


if __name__ == "__main__":
    finish()
