#!/usr/bin/env python3
"""Load time from text against the binary cache (`parsa convert`, .pcsr).

    python3 bench/cache.py [BUILD]      (BUILD defaults to build)

For each dataset: convert once (timed), then 3 runs each of `parsa partition
DATA -k 16 --method random` from the text and from the cache, printing the
medians of the report's seconds.load, the whole command's wall time and the
peak RSS; for LIBSVM sets also `parsa train DATA --placement random
--workers 2 --passes 1` (wall time, median of 3), whose reader copies the
cache's rows into its own arrays.  The cache is read right after it was
written, so its pages are in the page cache (as are the text's after the
first run): warm-cache figures.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
BIN = os.path.join(BUILD, "parsa")
SHARED = os.environ.get("PARSA_SHARED_DATA", "../shared/data")
SETS = ["large/aclimdb_all.svm.gz", "bipartite/gowalla_lightgcn.tsv.gz"]


def one(data, out):
    t0 = time.time()
    subprocess.run([BIN, "partition", data, "-k", "16", "--method", "random",
                    "--out", out, "-q"], check=True, capture_output=True)
    wall = time.time() - t0
    rep = json.load(open(out + ".json"))
    return rep["seconds"]["load"], wall, rep["peak_rss_kb"]


def train_wall(data):
    t0 = time.time()
    subprocess.run([BIN, "train", data, "--placement", "random", "--workers", "2",
                    "--passes", "1", "-q"], check=True, capture_output=True)
    return time.time() - t0


def main():
    tmp = tempfile.mkdtemp(prefix="parsa-bench-cache-")
    train_lines = []
    print("| dataset | nonzeros | text MB (gz) | cache MB | convert s | load text s | load cache s | speed-up | whole command text / cache s | peak RSS text / cache MiB |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for rel in SETS:
        src = os.path.join(SHARED, rel)
        if not os.path.exists(src):
            print("| %s | (absent) |" % rel)
            continue
        cache = os.path.join(tmp, os.path.basename(rel) + ".pcsr")
        t0 = time.time()
        subprocess.run([BIN, "convert", src, "--out", cache, "-q"], check=True)
        conv = time.time() - t0
        res = {}
        for kind, data in (("text", src), ("cache", cache)):
            runs = [one(data, os.path.join(tmp, "out")) for _ in range(3)]
            res[kind] = [statistics.median(x) for x in zip(*runs)]
        nnz = json.load(open(os.path.join(tmp, "out.json")))["dataset"]["nonzeros"]
        print("| %s | %d | %.1f | %.1f | %.2f | %.3f | %.3f | %.1fx | %.2f / %.2f | %.0f / %.0f |" % (
            os.path.basename(rel), nnz, os.path.getsize(src) / 1e6,
            os.path.getsize(cache) / 1e6, conv, res["text"][0], res["cache"][0],
            res["text"][0] / max(res["cache"][0], 1e-9), res["text"][1], res["cache"][1],
            res["text"][2] / 1024, res["cache"][2] / 1024))
        if rel.endswith(".svm.gz"):
            tt = statistics.median(train_wall(src) for _ in range(3))
            tc = statistics.median(train_wall(cache) for _ in range(3))
            train_lines.append("| %s | %.2f | %.2f |" % (os.path.basename(rel), tt, tc))
        os.unlink(cache)
    if train_lines:
        print()
        print("| dataset | train 1 pass from text s | from cache s |")
        print("|---|---|---|")
        print("\n".join(train_lines))
    subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
