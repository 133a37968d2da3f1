#!/usr/bin/env python3
"""make bench: Parsa vs random, greedy and METIS on ../shared/data.

Every method runs as its own `parsa partition` process on the same data, so
peak memory is per method.  Timing is the median of --reps runs (partition
time only, loading excluded).  Prints Markdown tables (pasted into
BENCHMARKS.md) and checks the floors of issue #2.

usage: bench.py BUILD_DIR [--quick] [--study] [--no-synthetic] [--reps N]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

SHARED = os.environ.get("PARSA_SHARED_DATA", "../shared/data")
LIBSVM = ["libsvm/a9a.train.svm.gz", "libsvm/a9a.test.svm.gz",
          "libsvm/ap_blei.svm.gz", "libsvm/reuters_lasvm.train.svm.gz",
          "libsvm/reuters_lasvm.test.svm.gz"]
PAIRS = ["bipartite/gowalla_lightgcn.tsv.gz",
         "bipartite/movielens-latest-small_ratings.csv.gz"]
GRAPHS = ["graphs/facebook_combined.txt.gz", "graphs/wiki-Vote.txt.gz",
          "graphs/email-Enron.txt.gz", "graphs/soc-Slashdot0902.txt.gz"]
METHODS = ["random", "greedy", "metis", "parsa"]


def short(path):
    return os.path.basename(path).split(".txt")[0].replace(".svm.gz", "").replace(".gz", "")


class Bench:
    def __init__(self, build, reps):
        self.bin = os.path.join(build, "parsa")
        self.reps = reps
        self.tmp = tempfile.mkdtemp(prefix="parsa-bench-")

    def run(self, data, k, method, extra=(), reps=None):
        reps = reps or self.reps
        out = os.path.join(self.tmp, "p")
        runs = []
        for _ in range(reps):
            cmd = [self.bin, "partition", data, "-k", str(k), "--method", method,
                   "--out", out, "--json", "-q", *map(str, extra)]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                sys.exit("bench: %s failed: %s" % (" ".join(cmd), p.stderr))
            runs.append(json.loads(p.stdout))
        rep = runs[0]
        rep["seconds"]["partition"] = statistics.median(r["seconds"]["partition"] for r in runs)
        rep["seconds"]["ns_per_nnz"] = statistics.median(r["seconds"]["ns_per_nnz"] for r in runs)
        rep["peak_rss_kb"] = max(r["peak_rss_kb"] for r in runs)
        return rep


def improvement(rep):
    return rep["improvement"]


def table_header():
    return ("| dataset | k | method | M_max | T_max | T_sum | RF | imbalance | "
            "impr. M/T/Tsum (%) | partition s | ns/nnz | peak MiB |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|---|")


def table_row(name, k, rep):
    m = rep["metrics"]
    i = improvement(rep)
    return ("| %s | %d | %s | %.0f | %.0f | %.0f | %.3f | %.3f | %+.0f / %+.0f / %+.0f | "
            "%.3f | %.0f | %.0f |" % (
                name, k, rep["method"], m["M_max"], m["T_max"], m["T_sum"], m["RF"],
                m["imbalance"], i["M_max"], i["T_max"], i["T_sum"],
                rep["seconds"]["partition"], rep["seconds"]["ns_per_nnz"],
                rep["peak_rss_kb"] / 1024.0))


def compare(b, datasets, ks, graph_mode=None, out=print):
    res = {}
    out(table_header())
    for path in datasets:
        full = os.path.join(SHARED, path)
        extra = ["--graph", graph_mode] if graph_mode else []
        for k in ks:
            for method in METHODS:
                rep = b.run(full, k, method, extra)
                res[(path, k, method)] = rep
                name = short(path) + (" (%s)" % graph_mode if graph_mode else "")
                out(table_row(name, k, rep))
                sys.stdout.flush()
    return res


def median_impr(res, datasets, k, key):
    return statistics.median(improvement(res[(d, k, "parsa")])[key] for d in datasets)


def check(label, ok, detail, failures):
    print("- %s %s: %s" % ("PASS" if ok else "**FAIL**", label, detail))
    if not ok:
        failures.append(label)


def floors(res, res_adj, res_edge, res_k, synth, failures):
    print("\n### Floors of issue #2\n")
    allres = list(res.values()) + list(res_adj.values()) + list(res_edge.values()) + list(res_k.values())
    if synth:
        allres += list(synth.values())
    worst = max(r["metrics"]["imbalance"] for r in allres if r["method"] == "parsa")
    check("imbalance <= 1.03 (every Parsa run)", worst <= 1.03 + 1e-9, "worst %.4f" % worst, failures)
    ds = LIBSVM + PAIRS
    for key, fl in (("M_max", 27), ("T_max", 51), ("T_sum", 43)):
        v = median_impr(res, ds, 16, key)
        check("median improvement %s LIBSVM+pairs k=16 >= %d%%" % (key, fl), v >= fl, "%+.1f%%" % v, failures)
    for name, rr, fls in (("adjacency", res_adj, (33, 121, 108)), ("edges", res_edge, (125, 281, 279))):
        for key, fl in zip(("M_max", "T_max", "T_sum"), fls):
            v = median_impr(rr, GRAPHS, 16, key)
            check("median improvement %s graphs %s k=16 >= %d%%" % (key, name, fl), v >= fl, "%+.1f%%" % v, failures)
    both = dict(res)
    both.update(res_k)
    for d in ds:
        for k in (16, 64):
            p, m = both[(d, k, "parsa")], both[(d, k, "metis")]
            check("M_max < METIS on %s k=%d" % (short(d), k), p["metrics"]["M_max"] < m["metrics"]["M_max"],
                  "%.0f vs %.0f" % (p["metrics"]["M_max"], m["metrics"]["M_max"]), failures)
    for rr in (res, res_adj, res_edge):
        for (d, k, meth), rep in rr.items():
            if meth != "parsa" or rep["dataset"]["nonzeros"] <= 300000:
                continue
            mt = rr[(d, k, "metis")]["seconds"]["partition"]
            pt = rep["seconds"]["partition"]
            gm = rep["params"].get("graph", "")
            check("5x faster than METIS on %s %s (%d nnz)" % (short(d), gm, rep["dataset"]["nonzeros"]),
                  mt >= 5 * pt, "%.3fs vs %.3fs = %.1fx" % (pt, mt, mt / max(pt, 1e-9)), failures)
    v = statistics.median(res[(d, 16, "parsa")]["seconds"]["ns_per_nnz"] for d in ds)
    check("median ns/nnz LIBSVM+pairs k=16 <= 80", v <= 80, "%.1f ns" % v, failures)
    if synth:
        p, m = synth["parsa"], synth["metis"]
        sp = m["seconds"]["partition"] / max(p["seconds"]["partition"], 1e-9)
        check("synthetic: 3x faster than METIS", sp >= 3, "%.1fx" % sp, failures)
        nnz = p["dataset"]["nonzeros"]
        rows = p["dataset"]["examples"]
        csr = (rows + 1) * 8 + nnz * 4
        check("synthetic: peak memory <= 2x loaded CSR", p["peak_rss_kb"] * 1024 <= 2 * csr,
              "%.0f MiB vs CSR %.0f MiB" % (p["peak_rss_kb"] / 1024, csr / 2**20), failures)


def study(b, out=print):
    """The measured choice of defaults: b, a/b, rule (k=16)."""
    ds = LIBSVM + PAIRS + GRAPHS
    out("\n### Parameter study (k=16; median over %d datasets, graphs in adjacency mode)\n" % len(ds))
    out("| rule | block cap | b | a | median impr. M_max | median impr. T_max | median impr. T_sum | median ns/nnz | worst imbalance |")
    out("|---|---|---|---|---|---|---|---|---|")
    rows = []
    for rule, cap in (("min-s", "1.03"), ("min-s", "off"), ("round-robin", "1.03")):
        for blocks in (1, 4, 16, 64):
            for a in sorted(set(int(blocks * f) for f in (0, 0.5, 1))):
                reps = [b.run(os.path.join(SHARED, d), 16, "parsa",
                              ["--rule", rule, "--block-imbalance", cap, "--blocks", blocks,
                               "--init-blocks", a] + (["--graph", "adjacency"] if d in GRAPHS else []),
                              reps=1)
                        for d in ds]
                med = lambda key: statistics.median(r["improvement"][key] for r in reps)
                ns = statistics.median(r["seconds"]["ns_per_nnz"] for r in reps)
                imb = max(r["metrics"]["imbalance"] for r in reps)
                rows.append((rule, cap, blocks, a, med("M_max"), med("T_max"), med("T_sum"), ns, imb))
                out("| %s | %s | %d | %d | %+.1f | %+.1f | %+.1f | %.0f | %.3f |" % rows[-1])
                sys.stdout.flush()
    return rows


def decide(b, out=print):
    """Group medians (the floors' groups) for the candidate defaults."""
    groups = (("LIBSVM+pairs", [(d, []) for d in LIBSVM + PAIRS]),
              ("graphs adjacency", [(d, ["--graph", "adjacency"]) for d in GRAPHS]),
              ("graphs edges", [(d, ["--graph", "edges"]) for d in GRAPHS]))
    configs = [["--rule", "min-s", "--blocks", "6"], ["--rule", "min-s", "--blocks", "6", "--refine", "0"],
               ["--rule", "min-s", "--blocks", "6", "--block-imbalance", "off"],
               ["--rule", "round-robin", "--blocks", "6"], ["--rule", "min-s", "--blocks", "4"],
               ["--rule", "min-s", "--blocks", "8"], ["--rule", "min-s", "--blocks", "8", "--init-blocks", "4"],
               ["--rule", "min-s", "--blocks", "16"], ["--rule", "round-robin", "--blocks", "16"],
               ["--rule", "round-robin", "--blocks", "4", "--init-blocks", "4"]]
    out("\n### Candidate defaults, k=16: median improvement M_max / T_max / T_sum (%) per group\n")
    out("| options | " + " | ".join(g for g, _ in groups) + " | median ns/nnz (LIBSVM+pairs) |")
    out("|---|" + "---|" * (len(groups) + 1))
    for cfg in configs:
        cells, ns = [], None
        for name, ds in groups:
            reps = [b.run(os.path.join(SHARED, d), 16, "parsa", cfg + x, reps=1) for d, x in ds]
            med = lambda key: statistics.median(r["improvement"][key] for r in reps)
            cells.append("%+.1f / %+.1f / %+.1f" % (med("M_max"), med("T_max"), med("T_sum")))
            if ns is None:
                ns = statistics.median(r["seconds"]["ns_per_nnz"] for r in reps)
        out("| `%s` | %s | %.0f |" % (" ".join(cfg), " | ".join(cells), ns))
        sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--study", action="store_true", help="also run the parameter study")
    ap.add_argument("--no-synthetic", action="store_true")
    ap.add_argument("--decide-only", action="store_true",
                    help="only the table of candidate defaults")
    args = ap.parse_args()
    if not os.path.isdir(SHARED):
        sys.exit("bench: shared data not found at %s (set PARSA_SHARED_DATA)" % SHARED)
    b = Bench(args.build, args.reps)
    if args.decide_only:
        decide(b)
        return
    print("## Run of %s on %s (%d cores)\n" % (time.strftime("%Y-%m-%d %H:%M"),
          os.uname().nodename, os.cpu_count()))
    print("### k=16, LIBSVM and user-item sets\n")
    res = compare(b, LIBSVM + PAIRS, [16])
    print("\n### k=16, graphs, adjacency mode\n")
    res_adj = compare(b, GRAPHS, [16], "adjacency")
    print("\n### k=16, graphs, edges mode\n")
    res_edge = compare(b, GRAPHS, [16], "edges")
    print("\n### k=4 and k=64, LIBSVM and user-item sets\n")
    res_k = compare(b, LIBSVM + PAIRS, [4, 64])
    synth = None
    if not args.no_synthetic:
        f = os.path.join(b.tmp, "synth.svm")
        t0 = time.time()
        subprocess.run([b.bin, "gen", "--examples", "1000000", "--features", "500000",
                        "--avg-nnz", "17", "--topics", "64", "--seed", "1", "--out", f, "-q"],
                       check=True)
        print("\n### Synthetic: parsa gen --examples 1000000 --features 500000 --avg-nnz 17 "
              "--topics 64 (%.1fs to generate), k=16\n" % (time.time() - t0))
        print(table_header())
        synth = {}
        for m in METHODS:
            synth[m] = b.run(f, 16, m, reps=1)
            print(table_row("synthetic-1M", 16, synth[m]))
            sys.stdout.flush()
    failures = []
    floors(res, res_adj, res_edge, res_k, synth, failures)
    if args.study:
        decide(b)
        study(b)
    print("\n%d floor(s) failed" % len(failures) if failures else "\nall floors met")


if __name__ == "__main__":
    main()
