#!/usr/bin/env python3
"""Community-aware coarsening against main (BENCHMARKS.md, "Community-aware
coarsening: `--ml-communities`").

Runs `parsa partition --quality best --objective tsum` with
`--ml-communities off` and `on`, each without and with `--flow-passes 2`,
on every shared set (LIBSVM and user-item at k=16 and k=64, graphs in
adjacency and edges mode at k=16), and prints a markdown table of T_sum /
T_max / M_max (seconds) beside Mt-KaHyPar `quality`'s (from
../shared/docs/anchors-mtkahypar.md), with the medians of the ratios.

usage: bench/communities.py [--bin build/parsa] [--data ../shared/data]
                            [--k 16,64] [--only NAME,...] [--variants V,...]
                            [--tsv OUT.tsv] [--from IN.tsv ...]
--from skips the runs and prints the table of earlier --tsv files (later
rows replace earlier ones for the same set and variant).
"""
import argparse
import os
import statistics
import tempfile

from tmax import anchor_cells, configs, run_row  # the 22 configurations

BASE = ["--quality", "best", "--objective", "tsum"]
VARIANTS = {"auto": [],  # the default (deep with --objective tsum)
            "auto-flow": ["--flow-passes", "2"],
            "off": ["--ml-communities", "off"],
            "on": ["--ml-communities", "on"],
            "off-flow": ["--ml-communities", "off", "--flow-passes", "2"],
            "on-flow": ["--ml-communities", "on", "--flow-passes", "2"]}


def run_all(binary, data, ks, only, variants, tsv):
    tmp = tempfile.mkdtemp(prefix="parsa-comm-")
    with open(tsv, "a") as out:
        for path, mode, k, extra in configs(data, ks):
            if only and not any(o in os.path.basename(path) for o in only):
                continue
            for variant in variants:
                out.write(run_row(binary, path, mode, k, extra + BASE + VARIANTS[variant],
                                  variant, tmp))
                out.flush()


def table(tsvs, an, variants):
    rows = {}
    for t in tsvs:
        for line in open(t):
            f = line.rstrip("\n").split("\t")
            if len(f) < 9:
                continue
            rows.setdefault((f[0], f[1], int(f[2])), {})[f[3]] = \
                [int(f[4]), int(f[5]), int(f[6]), float(f[8])]
    head = "| dataset | mode | k | Mt-KaHyPar quality | " + \
        " | ".join(variants) + " |"
    print(head)
    print("|" + "---|" * (4 + len(variants)))
    ratios = {v: [] for v in variants}
    for key in sorted(rows):
        a = an.get(key)
        cells = []
        for v in variants:
            x = rows[key].get(v)
            if not x:
                cells.append("")
                continue
            cells.append("{:,} / {:,} / {:,} ({:.2f})".format(*x))
            if a:
                ratios[v].append(x[0] / a[0])
        mk = "{:,.0f} / {:,.0f} / {:,.0f} ({:.2f})".format(*a) if a else ""
        print("| {} | {} | {} | {} | {} |".format(key[0], key[1], key[2], mk,
                                                 " | ".join(cells)))
    print()
    for v in variants:
        if ratios[v]:
            r = ratios[v]
            print("{}: median T_sum {:.3f}x Mt-KaHyPar quality over {}, at most 0.98x on {}, "
                  "at most 1.00x on {}".format(v, statistics.median(r), len(r),
                                               sum(x <= 0.98 for x in r),
                                               sum(x <= 1.0 for x in r)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/parsa")
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--k", default="16,64")
    ap.add_argument("--only", default="")
    ap.add_argument("--variants", default="off,on,off-flow,on-flow")
    ap.add_argument("--tsv", default="communities.tsv")
    ap.add_argument("--from", dest="frm", nargs="*")
    a = ap.parse_args()
    variants = a.variants.split(",")
    if not a.frm:
        run_all(a.bin, a.data, [int(x) for x in a.k.split(",")],
                [x for x in a.only.split(",") if x], variants, a.tsv)
    an = anchor_cells(os.path.join(a.data, "..", "docs", "anchors-mtkahypar.md"))
    table(a.frm or [a.tsv], an, variants)


if __name__ == "__main__":
    main()
