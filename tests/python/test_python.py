"""The Python package (python/parsa) over libparsa.so.

Same placement as `parsa partition` on every bundled sample (by path, and
from a scipy matrix built from the LIBSVM samples), the report and save()
equal to the CLI's, evaluate and assign, graph_partition, every error
path (TypeError / ValueError / OSError with a message), progress (never
going back, ending at 1), an exception in the progress callback and
Ctrl-C cancelling a running partition (a child process gets SIGINT and
raises KeyboardInterrupt within a checkpoint), threads (1 and 2 give the
same placement; two Python threads at once, the GIL released), repeated
calls without memory growth, and parsa.Client against a real `parsa
serve` on 127.0.0.1.  numpy and scipy are Debian's (python3-numpy,
python3-scipy): when the running python3 lacks them the test re-runs
itself under /usr/bin/python3.  The sanitizer builds make no shared
library: there it skips.
"""
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
try:
    import numpy as np
    import scipy.sparse as sp
except ImportError:
    if (os.path.exists("/usr/bin/python3") and not os.environ.get("PARSA_PY_REEXEC")
            and os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3")):
        os.environ["PARSA_PY_REEXEC"] = "1"
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    print("skip: numpy and scipy are missing (Debian: python3-numpy python3-scipy)")
    print("0 passed, 0 failed, 1 skipped")
    sys.exit(0)

import math  # noqa: E402
import re  # noqa: E402
import resource  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
from clitest import Skip, finish, test, tmp  # noqa: E402

BUILD = os.environ.get("PARSA_BUILD", "build")
BIN = os.path.join(ROOT, BUILD, "parsa") if not os.path.isabs(BUILD) else os.path.join(BUILD, "parsa")
SO = os.path.join(os.path.dirname(BIN), "libparsa.so.0")
SANITIZED = re.search(r"(^|/)(asan|tsan)(/|$)", BUILD) is not None
DATA = os.path.join(ROOT, "data")
SAMPLES = ["a9a-sample.svm.gz", "reuters-sample.svm.gz", "facebook-sample.txt.gz",
           "movielens-sample.csv.gz"]

parsa = None
if not SANITIZED and os.path.exists(SO):
    os.environ["PARSA_LIB"] = SO
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import parsa  # noqa: E402


def need():
    if parsa is None:
        raise Skip("no %s (the sanitizer builds make no shared library)" % SO)


def cli(data, k, seed, *extra):
    prefix = tmp("cli-%s-%d-%d" % (os.path.basename(data), k, seed))
    p = subprocess.run([BIN, "partition", data, "-k", str(k), "--seed", str(seed),
                        "--out", prefix, "-q"] + list(extra), capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    ex = np.loadtxt(prefix + ".examples", dtype=np.int64, ndmin=1)
    ft = np.loadtxt(prefix + ".features", dtype=np.uint64, ndmin=2)
    return prefix, ex, ft


@test
def test_same_as_cli_on_every_sample():
    need()
    for name in SAMPLES:
        path = os.path.join(DATA, name)
        _, ex, ft = cli(path, 4, 3)
        pl = parsa.partition(path, 4, seed=3)
        assert np.array_equal(pl.examples, ex), name
        assert np.array_equal(pl.feature_ids, ft[:, 0]), name
        assert np.array_equal(pl.features, ft[:, 1].astype(np.int32)), name


@test
def test_matrix_same_as_cli():
    need()
    for name in ("a9a-sample.svm.gz", "reuters-sample.svm.gz"):
        path = os.path.join(DATA, name)
        X = parsa.load_libsvm(path)
        for method, quality in (("parsa", "default"), ("parsa", "fast"), ("greedy", "default"),
                                ("random", "default"), ("metis", "default")):
            prefix, ex, ft = cli(path, 5, 2, "--method", method, "--quality", quality)
            pl = parsa.partition(X, 5, seed=2, method=method, quality=quality)
            assert np.array_equal(pl.examples, ex), (name, method)
            want = np.full(X.shape[1], -1, np.int32)
            want[ft[:, 0].astype(np.int64)] = ft[:, 1]
            assert np.array_equal(pl.features, want), (name, method)
            assert pl.convert_seconds >= 0


@test
def test_report_and_save():
    need()
    path = os.path.join(DATA, "a9a-sample.svm.gz")
    prefix, _, _ = cli(path, 4, 3)
    pl = parsa.partition(path, 4, seed=3)
    mine = tmp("py-save")
    pl.save(mine)
    for ext in (".examples", ".features"):
        assert open(mine + ext).read() == open(prefix + ext).read(), ext
    import json
    want = json.load(open(prefix + ".json"))
    for key in ("k", "method", "params", "dataset", "metrics", "random", "parts"):
        assert pl.report[key] == want[key], key
    for key, v in pl.metrics.items():
        assert abs(pl.report["metrics"][key] - v) <= 1e-9 * max(1, abs(v)), key
    assert pl.random_metrics["T_sum"] == pl.report["random"]["T_sum"]
    assert pl.metrics["T_sum"] < pl.random_metrics["T_sum"]


@test
def test_evaluate_and_assign():
    need()
    X = parsa.load_libsvm(os.path.join(DATA, "a9a-sample.svm.gz"))
    pl = parsa.partition(X, 4, seed=1)
    ev = parsa.evaluate(X, pl.examples, pl.features, seed=1)
    assert ev.metrics == pl.metrics, (ev.metrics, pl.metrics)
    assert ev.random_metrics == pl.random_metrics
    assert ev.report["method"] == "eval"
    # a row identical to example i: the assign rule's oracle, brute force
    rows = [list(X.indices[X.indptr[i]:X.indptr[i + 1]]) for i in range(0, 40, 7)] + [[10**12]]
    got = parsa.assign(pl, rows)
    got_sparse = parsa.assign(pl, X[list(range(0, 40, 7))])
    assert np.array_equal(got[:6], got_sparse)
    S = [set(X[pl.examples == i].indices) for i in range(4)]
    cnt = np.bincount(pl.examples, minlength=4).astype(np.int64)
    n_all = len(pl.examples) + len(rows)
    base = -(-n_all // 4)
    cap = max(base, min(math.floor(1.03 * base), math.ceil(1.03 * n_all / 4)))
    for r, part in zip(rows, got):
        cost = [len(set(r) - S[i]) if cnt[i] < cap else 10**18 for i in range(4)]
        best = min(range(4), key=lambda i: (cost[i], cnt[i], i))
        assert part == best, (r, part, best, cost)
        cnt[part] += 1
        S[part] |= set(r)


@test
def test_graph_partition():
    need()
    edges = np.array([[0, 1], [1, 2], [2, 0], [3, 4], [4, 5], [5, 3], [1, 0], [2, 2]])
    pl = parsa.graph_partition(edges, 2, seed=1)
    assert len(pl.examples) == 6 and len(pl.features) == 6
    assert len(set(pl.examples[:3])) == 1 and len(set(pl.examples[3:])) == 1
    assert pl.metrics["T_sum"] == 0
    pe = parsa.graph_partition(edges, 2, mode="edges")
    assert len(pe.examples) == 6          # 6 distinct edges, the loop dropped
    A = sp.coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(6, 6))
    pa = parsa.graph_partition(A, 2, seed=1)
    assert np.array_equal(pa.examples, pl.examples)


def raises(exc, fn, text=None):
    try:
        fn()
    except exc as e:
        if text:
            assert text in str(e), (str(e), text)
        return
    except Exception as e:  # noqa: BLE001
        raise AssertionError("raised %s (%s), not %s" % (type(e).__name__, e, exc.__name__))
    raise AssertionError("no %s" % exc.__name__)


@test
def test_errors():
    need()
    X = sp.csr_matrix(([1, 1, 1], [0, 1, 2], [0, 2, 3]), shape=(2, 3))
    raises(TypeError, lambda: parsa.partition([[1, 0]], 2), "scipy.sparse")
    raises(TypeError, lambda: parsa.partition(np.ones((3, 3)), 2), "scipy.sparse")
    raises(TypeError, lambda: parsa.partition(X, "2"), "integer")
    raises(TypeError, lambda: parsa.partition(X, 2.0), "integer")
    raises(ValueError, lambda: parsa.partition(X, 0), "k must be >= 1")
    raises(ValueError, lambda: parsa.partition(X, -3), "k must be >= 1")
    raises(ValueError, lambda: parsa.partition(X, 70000), "65536")
    raises(ValueError, lambda: parsa.partition(sp.csr_matrix((0, 4)), 2), "no rows")
    raises(ValueError, lambda: parsa.partition(X, 2, method="spectral"), "unknown --method")
    raises(ValueError, lambda: parsa.partition(X, 2, quality="ultra"), "--quality")
    raises(ValueError, lambda: parsa.partition(X, 2, imbalance=0.5), "--imbalance")
    raises(ValueError, lambda: parsa.partition(X, 2, time_limit=-1), "--time-limit")
    raises(ValueError, lambda: parsa.partition(X, 2, bogus=1), "not an option")
    raises(ValueError, lambda: parsa.partition(X, 2, workers=2), "not an option")
    raises(FileNotFoundError, lambda: parsa.partition("/nonexistent.svm", 2), "no such file")
    bad = tmp("bad.svm")
    with open(bad, "w") as f:
        f.write("1 1:1\n1 x:1\n")
    raises(ValueError, lambda: parsa.partition(bad, 2), "bad.svm:2:")
    pl = parsa.partition(X, 2)
    raises(ValueError, lambda: parsa.evaluate(X, [0], pl.features), "one entry per example")
    raises(ValueError, lambda: parsa.evaluate(X, pl.examples, [0, 1]), "one entry per column")
    raises(ValueError, lambda: parsa.evaluate(X, [0, -1], pl.features), "negative")
    raises(ValueError, lambda: parsa.evaluate(X, pl.examples, [0, -1, 0]), "no server")
    raises(ValueError, lambda: parsa.evaluate(X, [0, 5], pl.features, k=2), "not below k")
    raises(TypeError, lambda: parsa.assign(None, [[1]]), "Placement")
    raises(TypeError, lambda: parsa.assign(pl, "1 2 3"), "list of lists")
    raises(ValueError, lambda: parsa.assign(pl, [[1, -2]]), ">= 0")
    raises(ValueError, lambda: parsa.graph_partition(np.array([[0, 0]]), 2), "no edges")
    raises(ValueError, lambda: parsa.graph_partition(sp.csr_matrix((2, 3)), 2), "square")
    raises(ValueError, lambda: parsa.graph_partition(np.array([[0, 1]]), 2, mode="x"), "mode")
    raises(TypeError, lambda: parsa.graph_partition(np.ones((3, 3)), 2), "edges")


def big(n, m=20000, d=8, seed=0):
    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(n), d)
    return sp.csr_matrix((np.ones(n * d, np.int8), (rows, rng.integers(0, m, n * d))),
                         shape=(n, m))


@test
def test_progress_and_callback_exception():
    need()
    X = big(20000)
    seen = []
    pl = parsa.partition(X, 8, quality="best", progress=lambda f, p: seen.append((f, p)))
    fr = [f for f, _ in seen]
    assert fr == sorted(fr) and 0 <= fr[0] and fr[-1] == 1.0, fr
    assert seen[-1][1] == "done" and {"partition U", "refine"} <= {p for _, p in seen}
    assert pl.k == 8

    class Stop(Exception):
        pass

    def stop(f, p):
        if f > 0.1:
            raise Stop()
    raises(Stop, lambda: parsa.partition(X, 8, progress=stop))
    # and the next call is not cancelled
    assert parsa.partition(X, 8, quality="fast").k == 8


CHILD = r"""
import os, sys, time, signal
sys.path.insert(0, %(py)r)
import numpy as np, scipy.sparse as sp, parsa
rng = np.random.default_rng(0)
n, m, d = 60000, 20000, 8
X = sp.csr_matrix((np.ones(n * d, np.int8), (np.repeat(np.arange(n), d),
                   rng.integers(0, m, n * d))), shape=(n, m))
state = {"t": None}
def progress(f, p):
    if state["t"] is None and f > 0:
        print("started", flush=True)
        state["t"] = 1
t0 = time.monotonic()
try:
    parsa.partition(X, 16, quality="best", threads=1, progress=progress)
    print("finished", flush=True)
except KeyboardInterrupt:
    print("interrupted %%.3f" %% (time.monotonic() - float(os.environ.get("SIGNAL_AT", "0") or 0)), flush=True)
"""


@test
def test_ctrl_c_cancels():
    need()
    env = dict(os.environ, PARSA_LIB=SO)
    # SIGINT back to its default in the child: a shell that runs the tests
    # in the background (`cmd &` without job control) starts them with
    # SIGINT ignored, and a Python started so never raises KeyboardInterrupt
    p = subprocess.Popen([sys.executable, "-c", CHILD % {"py": os.path.join(ROOT, "python")}],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        line = p.stdout.readline().strip()
        assert line == "started", (line, p.stderr.read() if p.poll() is not None else "")
        t_sig = time.monotonic()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=120)
        took = time.monotonic() - t_sig
    finally:
        if p.poll() is None:
            p.kill()
    assert out.startswith("interrupted"), (out, err[-2000:])
    assert took < 10, "took %.1f s to stop after SIGINT" % took
    print("  Ctrl-C: stopped %.2f s after the signal" % took)


@test
def test_threads():
    need()
    X = big(30000)
    a = parsa.partition(X, 8, threads=1, quality="best")
    b = parsa.partition(X, 8, threads=2, quality="best")
    assert np.array_equal(a.examples, b.examples) and np.array_equal(a.features, b.features)
    out = [None, None]

    def run(i):
        out[i] = parsa.partition(X, 8, seed=5)
    ts = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    t0 = time.process_time()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert np.array_equal(out[0].examples, out[1].examples)
    assert time.process_time() - t0 >= 0


@test
def test_no_growth():
    need()
    X = big(5000, m=3000)
    for _ in range(5):
        parsa.partition(X, 4, progress=lambda f, p: None).report
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for _ in range(40):
        pl = parsa.partition(X, 4, progress=lambda f, p: None)
        pl.report
        parsa.assign(pl, [[1, 2, 3]])
        parsa.evaluate(X, pl.examples, pl.features)
    grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0
    assert grew < 20 * 1024, "peak RSS grew %d KiB over 40 calls" % grew


@test
def test_client_against_parsa_serve():
    need()
    state = tmp("state")
    srv = subprocess.Popen([BIN, "serve", "--listen", "127.0.0.1:0", "--state-dir", state,
                            "--data-dir", DATA], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        line = srv.stdout.readline()
        assert "listening on http://" in line, (line, srv.stderr.read())
        url = "http://" + line.strip().rsplit("http://", 1)[1]
        c = parsa.Client(url)
        assert c.health()["status"] == "ok"
        path = os.path.join(DATA, "a9a-sample.svm.gz")
        seen = []
        rp = c.partition(path, 4, seed=3, progress=lambda f, p: seen.append(f))
        local = parsa.partition(path, 4, seed=3)
        assert np.array_equal(rp.examples, local.examples)
        order = np.argsort(rp.feature_ids)
        lorder = np.argsort(local.feature_ids)
        assert np.array_equal(rp.feature_ids[order], local.feature_ids[lorder])
        assert np.array_equal(rp.features[order], local.features[lorder])
        assert seen and seen[-1] == 1.0 and seen == sorted(seen), seen
        assert rp.metrics["T_sum"] == local.metrics["T_sum"]
        ds = c.register(server_path="a9a-sample.svm.gz")
        job = c.start(ds["id"], 4, seed=3)
        c.wait(job["id"])
        rows = [[1, 2, 3], [5, 77, 80], [10**9]]
        assert np.array_equal(c.assign(job["id"], rows), parsa.assign(local, rows))
        raises(RuntimeError, lambda: c.start("nope", 4), "no dataset 'nope'")
        raises(RuntimeError, lambda: c.start(ds["id"], 0), "'k'")
    finally:
        srv.send_signal(signal.SIGTERM)
        try:
            srv.wait(timeout=30)
        except subprocess.TimeoutExpired:
            srv.kill()


@test
def test_tutorial_runs():
    need()
    p = subprocess.run([sys.executable, os.path.join(ROOT, "python", "examples", "tutorial.py"),
                        tmp("parts.png")], capture_output=True, text=True, cwd=tmp(""),
                       env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
    assert p.returncode == 0, p.stderr[-2000:]
    assert "T_sum" in p.stdout and "assign:" in p.stdout, p.stdout


@test
def test_pip_install_offline():
    """pip install ./python with no network (--no-index, Debian's
    setuptools), the library shipped inside as `make python` puts it."""
    need()
    import shutil
    if subprocess.run([sys.executable, "-m", "pip", "--version"],
                      capture_output=True).returncode != 0:
        raise Skip("no pip for %s (Debian: python3-pip)" % sys.executable)
    src, site = tmp("pysrc"), tmp("site")
    shutil.copytree(os.path.join(ROOT, "python"), src,
                    ignore=shutil.ignore_patterns("__pycache__", "*.so*", "build", "*.egg-info"))
    shutil.copy(SO, os.path.join(src, "parsa", "libparsa.so.0"))
    p = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation",
                        "--no-deps", "--no-index", "--target", site, src],
                       capture_output=True, text=True, cwd=tmp(""))
    assert p.returncode == 0, p.stderr[-2000:]
    env = {k: v for k, v in os.environ.items() if k != "PARSA_LIB"}
    env["PYTHONPATH"] = site
    p = subprocess.run([sys.executable, "-c", "import parsa, parsa._lib as L; "
                        "print(parsa.__file__); print(L.lib._name); "
                        "print(parsa.partition(%r, 2).k)" % os.path.join(DATA, "a9a-sample.svm.gz")],
                       capture_output=True, text=True, env=env, cwd=tmp(""))
    assert p.returncode == 0, p.stderr[-2000:]
    lines = p.stdout.split()
    assert lines[0].startswith(site) and lines[1].startswith(site) and lines[2] == "2", lines


finish()
