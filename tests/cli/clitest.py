"""Shared harness of the CLI tests (tests/cli/test_*.py).

Each test module runs its tests at import time through the @test
decorator, then calls finish(), which prints the closing line
"N passed, N failed[, N skipped]" and exits non-zero on a failure.
PARSA_BIN (set by scripts/run-tests.sh) names the binary under test.
"""
import gzip
import http.server
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

BIN = os.environ.get("PARSA_BIN", "build/parsa")
# How much slower the binary under test runs than the release build: the
# sanitizer builds (build/asan, build/tsan) get deadlines and time limits
# scaled by this, so a slower or busier machine does not fail a test that
# is about behaviour, not speed.
SLOWDOWN = 6 if re.search(r"(^|/)(asan|tsan)(/|$)", BIN) else 1
TMP = tempfile.mkdtemp(prefix="parsa-cli-")
results = {"passed": 0, "failed": 0, "skipped": 0}


# The bundled samples with the options that read them (data/).
SAMPLES = (("a9a-sample.svm.gz", []), ("reuters-sample.svm.gz", []),
           ("facebook-sample.txt.gz", ["--graph", "adjacency"]),
           ("facebook-sample.txt.gz", ["--graph", "edges"]),
           ("movielens-sample.csv.gz", []))


class Skip(Exception):
    pass


def run(*args, ok=True, env=None):
    p = subprocess.run([BIN, *map(str, args)], capture_output=True, text=True,
                       timeout=600, env=env)
    if ok and p.returncode != 0:
        raise AssertionError("parsa %s failed (%d): %s" %
                             (" ".join(map(str, args)), p.returncode, p.stderr))
    return p


# Under pytest (`python3 -m pytest tests/python/...`: scripts/run-tests.sh
# runs the package's tests so) @test only marks a function for collection,
# a Skip becomes pytest's skip, and finish() ends nothing.
UNDER_PYTEST = "pytest" in sys.modules


def _for_pytest(fn):
    import functools
    import pytest

    @functools.wraps(fn)
    def wrapper():
        try:
            fn()
        except Skip as e:
            pytest.skip(str(e))
    return wrapper


def test(fn):
    if UNDER_PYTEST:
        return _for_pytest(fn)
    name = fn.__name__
    try:
        fn()
    except Skip as e:
        results["skipped"] += 1
        print("skip: %s: %s" % (name, e))
    except Exception as e:  # noqa: BLE001 - report any failure
        results["failed"] += 1
        print("FAIL %s: %s" % (name, e))
    else:
        results["passed"] += 1
        print("ok   %s" % name)
    sys.stdout.flush()
    return fn


test.__test__ = False  # the decorator itself is not a test for pytest


def tmp(name):
    return os.path.join(TMP, name)


def read_lines(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        return f.read().splitlines()


def split_lines(path, n, first, second):
    """Write path's first n lines to first and the rest to second (the
    incremental tests' old and new data); returns (first, second)."""
    lines = read_lines(path)
    with open(first, "w") as f:
        f.write("\n".join(lines[:n]) + "\n")
    with open(second, "w") as f:
        f.write("\n".join(lines[n:]) + "\n")
    return first, second


def libsvm_rows(path):
    """The feature sets of a LIBSVM file's examples (sorted ids)."""
    rows = []
    for line in read_lines(path):
        t = line.split()
        if not t or t[0].startswith("#"):
            continue
        rows.append(sorted({int(x.split(":")[0]) for x in t[1:]}))
    return rows


class QuietHandler(http.server.BaseHTTPRequestHandler):
    """A test server's handler: no log lines, send() answers a body."""

    def send(self, body, status=200, length=None):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)) if length is None
                         else length)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def write_token(name, token):
    """A --token-file holding token; its path."""
    path = tmp(name)
    with open(path, "w") as f:
        f.write(token + "\n")
    return path


def check_placement(prefix, k, n_examples=None, n_features=None,
                    imbalance=1.03):
    """Complete (every example and feature once, ids < k) and balanced;
    returns the report."""
    rep = json.load(open(prefix + ".json"))
    parts = [int(x) for x in read_lines(prefix + ".examples")]
    feats = [l.split() for l in read_lines(prefix + ".features")]
    n = rep["dataset"]["examples"]
    assert len(parts) == n, "examples file has %d lines, report %d" % (len(parts), n)
    if n_examples is not None:
        assert n == n_examples, "expected %d examples, got %d" % (n_examples, n)
    assert len(feats) == rep["dataset"]["features"]
    if n_features is not None:
        assert len(feats) == n_features
    assert all(0 <= p < k for p in parts), "part id out of range"
    assert all(0 <= int(f[1]) < k for f in feats)
    assert len(set(f[0] for f in feats)) == len(feats), "duplicate feature"
    counts = [0] * k
    for p in parts:
        counts[p] += 1
    base = math.ceil(n / k)
    assert max(counts) <= math.ceil(imbalance * n / k), "cap exceeded: %s" % counts
    assert max(counts) / base <= imbalance + 1e-9, "imbalance %f" % (max(counts) / base)
    assert abs(rep["metrics"]["imbalance"] - max(counts) / base) < 1e-6
    return rep


def same_files(a, b):
    """True when placements a and b (prefixes) have the same .examples and
    .features files, byte for byte."""
    for ext in (".examples", ".features"):
        with open(a + ext, "rb") as fa, open(b + ext, "rb") as fb:
            if fa.read() != fb.read():
                return False
    return True


def eval_agrees(data, prefix, rep, extra=()):
    """`parsa eval` of the placement gives the report's metrics."""
    p = run("eval", data, "--placement", prefix, "--json", *extra)
    ev = json.loads(p.stdout)
    for key in ("M_max", "T_max", "T_sum", "RF", "imbalance", "local_fraction"):
        a, b = ev["metrics"][key], rep["metrics"][key]
        assert abs(a - b) <= 1e-9 * max(1.0, abs(b)), "%s: eval %s vs report %s" % (key, a, b)


# ---------------------------------------------------------------------- MPI

MPI_TIMEOUT = 120


def find_mpirun():
    for d in os.environ.get("PATH", "").split(os.pathsep):
        f = os.path.join(d, "mpirun")
        if os.access(f, os.X_OK):
            return f
    return None


MPIRUN = find_mpirun()
# The MPI transport's plugin, built beside the binary when OpenMPI's
# development files are installed (server/ps_mpi_plugin.h).
MPI_PLUGIN = os.path.join(os.path.dirname(os.path.abspath(BIN)), "parsa-mpi.so")


def mpi_env(extra=None):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    # OpenMPI's own allocations look like leaks to LeakSanitizer
    asan = env.get("ASAN_OPTIONS", "")
    env["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "detect_leaks=0"
    env.update(extra or {})
    return env


def mpirun(np, *args, env=None, opts=()):
    """Run BIN under mpirun -np np (opts: more mpirun options)."""
    if not MPIRUN:
        raise Skip("mpirun not found")
    cmd = ["timeout", "-k", "5", str(MPI_TIMEOUT), MPIRUN, "--oversubscribe",
           "-np", str(np), "--mca", "btl", "self,tcp", "--mca",
           "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo",
           *opts, BIN, *map(str, args)]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True,
                       timeout=MPI_TIMEOUT + 30, env=mpi_env(env))
    p.seconds = time.time() - t0
    skip_without_mpi(p)
    return p


def skip_without_mpi(p):
    """Skip when a run said the build has no MPI transport and indeed no
    plugin was built; with the plugin beside BIN the test goes on (and
    fails on the run)."""
    if "no MPI transport" in p.stdout + p.stderr and not os.path.exists(MPI_PLUGIN):
        raise Skip("this build has no MPI transport (no %s)" % MPI_PLUGIN)



def check_failed_everywhere(p, np, dead, needles):
    """Non-zero, in time, and the ranks said why they stopped: mpirun ends
    the job (SIGTERM, then SIGKILL soon after) once a rank fails, so not
    every survivor is sure to get its line out; at least one must."""
    out = p.stdout + p.stderr
    assert p.returncode not in (0, 124, 137), "exit %d: %s" % (p.returncode, out)
    assert p.seconds < MPI_TIMEOUT - 10, "took %.1f s" % p.seconds
    said = 0
    for r in range(np):
        if r == dead:
            continue
        lines = ["parsa: rank %d: " % r,
                 "parsa: terminated (another rank failed), rank %d" % r]
        said += any(s in out for s in lines)
    # or Open MPI's run-time ended the job itself (it may, when the dead
    # rank's sockets close) and said so: every rank still ended, in time
    ended_by_mpirun = ("exited with non-zero status" in out or
                       "has been aborted" in out or "MPI_ABORT" in out)
    assert said > 0 or ended_by_mpirun, \
        "no surviving rank said why it stopped: %s" % out
    for n in needles:
        assert n in out, "%r not in %s" % (n, out)
    assert "method parsa" not in p.stdout, "a summary was printed"


def part(data, k, prefix, *extra):
    """parsa partition DATA -k K --out PREFIX -q EXTRA...; its report."""
    run("partition", data, "-k", k, "--out", prefix, "-q", *extra)
    return json.load(open(prefix + ".json"))


def finish():
    if UNDER_PYTEST:
        import atexit
        atexit.register(shutil.rmtree, TMP, ignore_errors=True)
        return
    shutil.rmtree(TMP, ignore_errors=True)
    line = "%d passed, %d failed" % (results["passed"], results["failed"])
    if results["skipped"]:
        line += ", %d skipped" % results["skipped"]
    print(line)
    sys.exit(1 if results["failed"] else 0)
