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


if __name__ == "__main__":
    finish()
