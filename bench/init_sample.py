#!/usr/bin/env python3
"""The global-initialization sample: quality against its size (README,
"Initialization").

For each dataset and sample fraction F, 2 worker threads at k=16 with
--init-sample F, against the sequential run with the same seed: M_max and
T_max relative to the sequential ones, mean over seeds 1..--seeds.  Quality
only (parallel runs vary a little with the interleaving); no timing.

usage: init_sample.py BUILD_DIR [--seeds N] [--big FILE]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

SHARED = os.environ.get("PARSA_SHARED_DATA", "../shared/data")
FRACTIONS = ["0", "0.02", "0.05", "0.1", "0.2"]
SETS = [("gowalla", "bipartite/gowalla_lightgcn.tsv.gz"),
        ("soc-Slashdot0902", "graphs/soc-Slashdot0902.txt.gz"),
        ("reuters_lasvm", "libsvm/reuters_lasvm.train.svm.gz"),
        ("a9a", "libsvm/a9a.train.svm.gz"),
        ("movielens", "bipartite/movielens-latest-small_ratings.csv.gz")]


def metrics(bin_, data, seed, extra, out):
    cmd = [bin_, "partition", data, "-k", "16", "--seed", str(seed), "--out", out,
           "--json", "-q", "--random-trials", "1", *extra]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        sys.exit("init_sample: %s failed: %s" % (" ".join(cmd), p.stderr[-2000:]))
    return json.loads(p.stdout)["metrics"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--big", help="an extra LIBSVM file (e.g. from parsa gen)")
    a = ap.parse_args()
    bin_ = os.path.join(a.build, "parsa")
    sets = [(n, os.path.join(SHARED, p)) for n, p in SETS
            if os.path.exists(os.path.join(SHARED, p))]
    if a.big:
        sets.append(("big", a.big))
    if not sets:
        print("init_sample: no dataset under %s, skipped" % SHARED)
        return
    out = os.path.join(tempfile.mkdtemp(prefix="parsa-init-"), "p")
    cells = {}
    for name, data in sets:
        seq = [metrics(bin_, data, s, [], out) for s in range(1, a.seeds + 1)]
        for f in FRACTIONS:
            dm, dt = [], []
            for s in range(1, a.seeds + 1):
                m = metrics(bin_, data, s, ["--workers", "2", "--init-sample", f], out)
                dm.append(m["M_max"] / seq[s - 1]["M_max"] - 1)
                dt.append(m["T_max"] / seq[s - 1]["T_max"] - 1)
            cells[name, f] = "%+.1f / %+.1f%%" % (100 * statistics.mean(dm),
                                                  100 * statistics.mean(dt))
            print("%s F=%s %s" % (name, f, cells[name, f]), file=sys.stderr, flush=True)
    names = [n for n, _ in sets]
    print("| sample F | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 1) + "|")
    for f in FRACTIONS:
        print("| %s | " % f + " | ".join(cells[n, f] for n in names) + " |")


if __name__ == "__main__":
    main()
