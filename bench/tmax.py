#!/usr/bin/env python3
"""The T_max objective against the other tools (BENCHMARKS.md, "T_max
objective").

Runs `parsa partition --quality best`, `--quality best --objective tmax`
and `--method metis` on every shared set (LIBSVM and user-item at k=16 and
k=64, graphs in adjacency and edges mode at k=16), and prints a markdown
table of T_max beside Zoltan PHG's (from bench/issue6-results.json, the run
that measured it with the same Algorithm 11 owners) and Mt-KaHyPar
`quality`'s (from ../shared/docs/anchors-mtkahypar.md), with the medians.

usage: bench/tmax.py [--bin build/parsa] [--data ../shared/data]
                     [--k 16,64] [--tsv OUT.tsv] [--zoltan ISSUE6.json]
                     [--from IN.tsv ...]
--from skips the runs and prints the table of earlier --tsv files (later
rows replace earlier ones for the same set and variant).
"""
import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import tempfile

VARIANTS = (("best", ["--quality", "best"]),
            ("tmax", ["--quality", "best", "--objective", "tmax"]),
            ("metis", ["--method", "metis"]))
HERE = os.path.dirname(os.path.abspath(__file__))


def configs(data, ks):
    out = []
    for k in ks:
        for f in sorted(glob.glob(os.path.join(data, "libsvm", "*.gz"))):
            out.append((f, "libsvm", k, []))
        for f in sorted(glob.glob(os.path.join(data, "bipartite", "*.gz"))):
            out.append((f, "pairs", k, []))
        if k == 16:
            for f in sorted(glob.glob(os.path.join(data, "graphs", "*.gz"))):
                for mode in ("adjacency", "edges"):
                    out.append((f, mode, k, ["--graph", mode]))
    return out


def run_row(binary, path, mode, k, args, variant, tmp):
    """One `parsa partition` run (2 threads): its TSV line (name, mode, k,
    variant, T_sum, T_max, M_max, imbalance, partition seconds)."""
    prefix = os.path.join(tmp, "o")
    subprocess.run([binary, "partition", path, "-k", str(k), "--threads", "2",
                    "--out", prefix, "-q"] + args, check=True)
    r = json.load(open(prefix + ".json"))
    m = r["metrics"]
    return "\t".join(map(str, [os.path.basename(path)[:-3], mode, k, variant,
                               int(m["T_sum"]), int(m["T_max"]), int(m["M_max"]),
                               round(m["imbalance"], 4),
                               round(r["seconds"]["partition"], 2)])) + "\n"


def run_all(binary, data, ks, tsv):
    tmp = tempfile.mkdtemp(prefix="parsa-tmax-")
    with open(tsv, "a") as out:
        for path, mode, k, extra in configs(data, ks):
            for variant, args in VARIANTS:
                out.write(run_row(binary, path, mode, k, extra + args, variant, tmp))
                out.flush()


def anchor_cells(path, column=4):
    """Mt-KaHyPar quality's (column 4; default's: 3) (T_sum, T_max, M_max,
    seconds) per (dataset, mode, k) of the anchors file."""
    an = {}
    for line in open(path):
        if not line.startswith("| ") or line.startswith("| dataset"):
            continue
        c = [x.strip() for x in line.strip().strip("|").split("|")]
        q = [float(x.replace(",", "")) for x in re.findall(r"[\d,]+(?:\.\d+)?", c[column])]
        an[(c[0], c[1], int(c[2]))] = q
    return an


def anchors(path):
    return {key: {"tmax": q[1], "mmax": q[2]} for key, q in anchor_cells(path).items()}


def zoltan(path):
    zo = {}
    for x in json.load(open(path))["issue6"]:
        if x["method"] != "zoltan":
            continue
        g = x["group"]
        mode = ("edges" if "edges" in g else "adjacency" if "graphs" in g
                else "pairs" if g == "user-item" else "libsvm")
        name = os.path.basename(x["path"])[:-3]
        m = x["report"]["metrics"]
        zo[(name, mode, x["k"])] = {"tmax": m["T_max"], "mmax": m["M_max"]}
    return zo


def table(tsvs, an, zo):
    rows = {}
    for f in tsvs:
        for line in open(f):
            p = line.rstrip("\n").split("\t")
            if len(p) == 9:
                rows.setdefault((p[0], p[1], int(p[2])), {})[p[3]] = {
                    "tsum": int(p[4]), "tmax": int(p[5]), "mmax": int(p[6]), "s": float(p[8])}
    print("| dataset | mode | k | METIS | Zoltan | Mt-KaHyPar quality | best | tmax "
          "| tmax / min(others) | tmax / best | M_max tmax (best; min of others) "
          "| T_sum tmax / best | T_max / (T_sum/k) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    ratio, vs_best, flat, below_m = [], [], [], 0
    for key in sorted(rows, key=lambda t: (t[2], t[1] in ("adjacency", "edges"), t[0], t[1])):
        r = rows[key]
        if not all(v in r for v, _ in VARIANTS):
            continue
        others = [r["metis"]] + [d[key] for d in (zo, an) if key in d]
        mn = min(o["tmax"] for o in others)
        mm = min(o["mmax"] for o in others)
        t = r["tmax"]
        ratio.append(t["tmax"] / mn)
        vs_best.append(t["tmax"] / r["best"]["tmax"])
        flat.append(t["tmax"] / (t["tsum"] / key[2]))
        below_m += t["mmax"] < mm
        cell = lambda d: "%d" % d[key]["tmax"] if key in d else "–"  # noqa: E731
        print("| %s | %s | %d | %d | %s | %s | %d | %d | %.3f | %.3f | %d (%d; %d) | %.3f | %.3f |" % (
            key[0], key[1], key[2], r["metis"]["tmax"], cell(zo), cell(an), r["best"]["tmax"],
            t["tmax"], ratio[-1], vs_best[-1], t["mmax"], r["best"]["mmax"], mm,
            t["tsum"] / r["best"]["tsum"], flat[-1]))
    if ratio:
        print()
        print("%d configurations: T_max of tmax / min(METIS, Zoltan, Mt-KaHyPar) median %.3f "
              "(<= 0.90 on %d, < 1 on %d); / best median %.3f; M_max below every other "
              "tool's on %d; T_max / (T_sum/k) median %.3f" % (
                  len(ratio), statistics.median(ratio), sum(x <= 0.9 for x in ratio),
                  sum(x < 1 for x in ratio), statistics.median(vs_best), below_m,
                  statistics.median(flat)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/parsa")
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--k", default="16,64")
    ap.add_argument("--tsv", default="tmax-results.tsv")
    ap.add_argument("--zoltan", default=os.path.join(HERE, "issue6-results.json"),
                    help="an issue-6 JSON with Zoltan's reports")
    ap.add_argument("--from", dest="sources", nargs="*")
    a = ap.parse_args()
    if not a.sources:
        run_all(a.bin, a.data, [int(x) for x in a.k.split(",")], a.tsv)
    an = anchors(os.path.join(a.data, "..", "docs", "anchors-mtkahypar.md"))
    zo = zoltan(a.zoltan)
    table(a.sources or [a.tsv], an, zo)


if __name__ == "__main__":
    main()
