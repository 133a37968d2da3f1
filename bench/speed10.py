#!/usr/bin/env python3
"""make bench: `default` against METIS's speed (issue 18).

Issue 18 asks `default` to be at least 10x faster than METIS (one thread,
as it runs) on every shared set over 300k nonzeros.  For each such
configuration of the issue (LIBSVM and user-item sets at k=16 and k=64,
graphs in both modes at k=16) this runs `parsa partition --method metis`
and `parsa partition` (the default, on --threads threads) in --rounds
interleaved rounds and prints the medians of the partition seconds (the
report's `seconds.partition`: everything after loading, before the
metrics) and their ratio; misses of 10x are in bold.

Each run's report is read after the run has ended: a reader started
beside it (a pipe into another process) takes a CPU from a 2-thread run
and hides what its second thread gains.

usage: speed10.py BUILD_DIR [--rounds N] [--threads T]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

SHARED = os.environ.get("PARSA_SHARED_DATA", "../shared/data")

# (path under SHARED, k, extra options): the configurations with
# more than 300k nonzeros
CONFIGS = [
    ("libsvm/a9a.train.svm.gz", 16, []),
    ("libsvm/ap_blei.svm.gz", 16, []),
    ("libsvm/reuters_lasvm.train.svm.gz", 16, []),
    ("bipartite/gowalla_lightgcn.tsv.gz", 16, []),
    ("graphs/email-Enron.txt.gz", 16, ["--graph", "adjacency"]),
    ("graphs/email-Enron.txt.gz", 16, ["--graph", "edges"]),
    ("graphs/soc-Slashdot0902.txt.gz", 16, ["--graph", "adjacency"]),
    ("graphs/soc-Slashdot0902.txt.gz", 16, ["--graph", "edges"]),
    ("libsvm/a9a.train.svm.gz", 64, []),
    ("libsvm/ap_blei.svm.gz", 64, []),
    ("libsvm/reuters_lasvm.train.svm.gz", 64, []),
    ("bipartite/gowalla_lightgcn.tsv.gz", 64, []),
]


def run(bin_, data, k, extra, method, threads, tmp):
    out = os.path.join(tmp, "p")
    cmd = [bin_, "partition", data, "-k", str(k), "--method", method,
           "--random-trials", "1", "--threads", str(threads), "--out", out,
           "-q", *extra]
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit("speed10: %s failed: %s" % (" ".join(cmd), p.stderr[-2000:]))
    with open(out + ".json") as f:
        return json.load(f)["seconds"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    bin_ = os.path.join(a.build, "parsa")
    if not os.path.isdir(SHARED):
        print("speed10: %s not found (set PARSA_SHARED_DATA); skipped" % SHARED)
        return
    res = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(a.rounds):
            for c in CONFIGS:
                data = os.path.join(SHARED, c[0])
                for m in ("metis", "parsa"):
                    res.setdefault((c[0], c[1], tuple(c[2]), m), []).append(
                        run(bin_, data, c[1], c[2], m, a.threads, tmp))
    print("## `default` against METIS's speed (issue 18): partition seconds")
    print()
    print("METIS one thread (as it runs), `default` on %d threads; medians "
          "of %d interleaved rounds; bold: under 10x." % (a.threads, a.rounds))
    print()
    print("| set | k | mode | METIS s | default s (U, refine) | METIS / default |")
    print("|---|---|---|---|---|---|")
    met = 0
    for c in CONFIGS:
        key = (c[0], c[1], tuple(c[2]))
        me = statistics.median(s["partition"] for s in res[key + ("metis",)])
        pr = res[key + ("parsa",)]
        p = statistics.median(s["partition"] for s in pr)
        u = statistics.median(s["partition_u"] for s in pr)
        rf = statistics.median(s["refine"] for s in pr)
        ratio = me / p
        met += ratio >= 10
        b = "" if ratio >= 10 else "**"
        print("| %s | %d | %s | %.3f | %.3f (%.3f, %.3f) | %s%.1fx%s |" % (
            os.path.basename(c[0]), c[1], c[2][1] if c[2] else "",
            me, p, u, rf, b, ratio, b))
    print()
    print("10x met on %d of %d." % (met, len(CONFIGS)))


if __name__ == "__main__":
    main()
