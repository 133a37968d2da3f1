#!/usr/bin/env python3
"""The Python package's cost against the CLI (BENCHMARKS.md, "Python").

Usage (from the repository's root, after make):
    /usr/bin/python3 bench/python_api.py [BUILD [REPS]]

For reuters_lasvm.train, gowalla_lightgcn and aclimdb_all (../shared/data)
at k=16, seed 1, quality default: `parsa partition` REPS times (its
partition time is the report's seconds.total - seconds.load: everything
after reading) and parsa.partition(X) on a scipy CSR matrix of the same
data REPS times, interleaved.  The Python figure is the call's wall time
less the conversion (numpy arrays to uint64, convert_seconds) and the
graph's build from them (the report's seconds.load), both reported on
their own, beside the CLI's time reading the file; the minimum over
the runs (the machine is shared: the minimum is the least disturbed run).  Checks that the placement equals the CLI's.
"""
import os
import sys

# bench/http.py would shadow the standard library's http package
sys.path = [p for p in sys.path
            if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]

import gzip  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
REPS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
os.environ.setdefault("PARSA_LIB", os.path.join(ROOT, BUILD, "libparsa.so.0"))
sys.path.insert(0, os.path.join(ROOT, "python"))
import parsa  # noqa: E402

SHARED = os.environ.get("PARSA_SHARED_DATA", os.path.join(ROOT, "..", "shared", "data"))
SETS = [("reuters_lasvm.train", "libsvm/reuters_lasvm.train.svm.gz"),
        ("gowalla_lightgcn", "bipartite/gowalla_lightgcn.tsv.gz"),
        ("aclimdb_all", "large/aclimdb_all.svm.gz")]
K, SEED = 16, 1


def load_pairs(path):
    """Users as rows in order of first appearance (the file is grouped by
    user), items as columns, entries in file order."""
    users, items = [], []
    with gzip.open(path, "rt") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            a = line.split()
            users.append(int(a[0]))
            items.append(int(a[1]))
    users, items = np.asarray(users), np.asarray(items)
    _, first, inv = np.unique(users, return_index=True, return_inverse=True)
    rank = np.empty(len(first), np.int64)
    rank[np.argsort(first)] = np.arange(len(first))
    rows = rank[inv]
    assert np.all(np.diff(rows) >= 0), "the file is not grouped by user"
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows))])
    return sp.csr_matrix((np.ones(len(items), np.int8), items, indptr),
                         shape=(len(first), int(items.max()) + 1))


def cli(path, out):
    subprocess.run([os.path.join(ROOT, BUILD, "parsa"), "partition", path, "-k", str(K),
                    "--seed", str(SEED), "--out", out, "-q"], check=True)
    s = json.load(open(out + ".json"))["seconds"]
    return s["total"] - s["load"], s["load"]


def main():
    tmp = tempfile.mkdtemp(prefix="parsa-bench-py-")
    print("| dataset | examples | nnz | CLI partition s | Python partition s | overhead | "
          "conversion s | graph build s | CLI file read s | same placement |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, rel in SETS:
        path = os.path.join(SHARED, rel)
        if not os.path.exists(path):
            print("| %s | (missing: %s) |" % (name, path))
            continue
        X = load_pairs(path) if rel.endswith(".tsv.gz") else parsa.load_libsvm(path)
        cl, py, conv, build, rd = [], [], [], [], []
        pl = None
        for _ in range(REPS):
            c, r = cli(path, os.path.join(tmp, name))
            cl.append(c)
            rd.append(r)
            del pl
            t0 = time.perf_counter()
            pl = parsa.partition(X, K, seed=SEED)
            wall = time.perf_counter() - t0
            load = pl.report["seconds"]["load"]
            conv.append(pl.convert_seconds)
            build.append(load)
            py.append(wall - pl.convert_seconds - load)
        ex = np.loadtxt(os.path.join(tmp, name + ".examples"), dtype=np.int64)
        ft = np.loadtxt(os.path.join(tmp, name + ".features"), dtype=np.int64, ndmin=2)
        want = np.full(X.shape[1], -1, np.int64)
        want[ft[:, 0]] = ft[:, 1]
        same = np.array_equal(pl.examples, ex) and np.array_equal(pl.features, want)
        c, p = min(cl), min(py)
        print("| %s | %d | %d | %.3f | %.3f | %+.1f%% | %.3f | %.3f | %.3f | %s |" %
              (name, X.shape[0], X.nnz, c, p, 100 * (p - c) / c,
               min(conv), min(build), min(rd),
               "yes" if same else "NO"))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
