#!/usr/bin/env python3
"""The side-by-side tables of BENCHMARKS.md's issue-6 section (T_sum,
T_max, M_max, partition time; `best` under METIS's time) from the JSON of
`bench.py --issue6 --json FILE`.

usage: issue6_tables.py RESULTS.json

Columns: METIS, Zoltan PHG, parsa fast / default / best, and best with
--time-limit at METIS's time; bold = at least as good as the better of
METIS and Zoltan (for the time table: no slower than METIS).
"""
import json
import sys

GROUPS = ("LIBSVM", "user-item", "graphs adjacency", "graphs edges")
ORDER = ("a9a.train", "a9a.test", "ap_blei", "reuters_lasvm.train",
         "reuters_lasvm.test", "gowalla", "movielens", "facebook_combined",
         "wiki-Vote", "email-Enron", "soc-Slashdot0902")
METHODS = ("metis", "zoltan", "parsa-fast", "parsa", "parsa-best",
           "parsa-best-capped")
HEAD = ("METIS", "Zoltan", "fast", "default", "best", "best, METIS's time")


def name(path):
    base = path.rsplit("/", 1)[-1]
    for ext in (".svm.gz", ".txt.gz", ".tsv.gz", ".csv.gz"):
        base = base.replace(ext, "")
    return {"gowalla_lightgcn": "gowalla",
            "movielens-latest-small_ratings": "movielens"}.get(base, base)


def load(path):
    runs = {}
    for r in json.load(open(path))["issue6"]:
        runs[(r["group"], name(r["path"]), r["k"], r["method"])] = r["report"]
    return runs


def rows(runs):
    keys = sorted({(g, d, k) for g, d, k, _ in runs},
                  key=lambda x: (x[2], GROUPS.index(x[0]), ORDER.index(x[1])))
    return keys


def metric_table(runs, metric, out):
    out.append("| group | k | dataset | " + " | ".join(HEAD) + " |")
    out.append("|---|---|---|" + "---|" * len(HEAD))
    for g, d, k in rows(runs):
        vals = [runs.get((g, d, k, m), {}).get("metrics", {}).get(metric)
                for m in METHODS]
        ref = min(v for v in vals[:2] if v is not None)
        cells = [("%d" % v if v is not None else "-") for v in vals]
        for i in range(2, len(cells)):
            if vals[i] is not None and vals[i] <= ref:
                cells[i] = "**%s**" % cells[i]
        out.append("| %s | %d | %s | %s |" % (g, k, d, " | ".join(cells)))


def time_table(runs, out):
    out.append("| group | k | dataset | " + " | ".join(HEAD) + " |")
    out.append("|---|---|---|" + "---|" * len(HEAD))
    for g, d, k in rows(runs):
        secs = [runs.get((g, d, k, m), {}).get("seconds", {}).get("partition")
                for m in METHODS]
        cells = [("%.3f" % s if s is not None else "-") for s in secs]
        for i in range(2, len(cells)):
            if secs[i] is not None and secs[0] is not None and secs[i] <= secs[0]:
                cells[i] = "**%s**" % cells[i]
        out.append("| %s | %d | %s | %s |" % (g, k, d, " | ".join(cells)))


def pct(a, b):
    return 100.0 * (a - b) / b


def capped_table(runs, out):
    out.append("| group | k | dataset | METIS T_sum | METIS s | Zoltan T_sum | "
               "best T_sum | best s | capped T_sum | capped s | capped vs METIS "
               "| capped vs Zoltan |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for g, d, k in rows(runs):
        r = {m: runs.get((g, d, k, m)) for m in METHODS}
        if not all(r.values()):
            continue
        ts = {m: r[m]["metrics"]["T_sum"] for m in METHODS}
        sec = {m: r[m]["seconds"]["partition"] for m in METHODS}
        vm, vz = pct(ts["parsa-best-capped"], ts["metis"]), \
            pct(ts["parsa-best-capped"], ts["zoltan"])
        cap = "%d" % ts["parsa-best-capped"]
        out.append("| %s | %d | %s | %d | %.3f | %d | %d | %.3f | %s | %.3f | %s | %s |" % (
            g, k, d, ts["metis"], sec["metis"], ts["zoltan"], ts["parsa-best"],
            sec["parsa-best"], "**%s**" % cap if vm < 0 else cap,
            sec["parsa-best-capped"],
            ("**%+.1f%%**" if vm < 0 else "%+.1f%%") % vm,
            ("**%+.1f%%**" if vz <= 0 else "%+.1f%%") % vz))


def main():
    runs = load(sys.argv[1])
    out = []
    for title, metric in (("T_sum, k=16 and k=64", "T_sum"), ("T_max", "T_max"),
                          ("M_max", "M_max")):
        out += ["## " + title, ""]
        metric_table(runs, metric, out)
        out.append("")
    out += ["## Partition time, s", ""]
    time_table(runs, out)
    out += ["", "## best under METIS's time", ""]
    capped_table(runs, out)
    print("\n".join(out))


if __name__ == "__main__":
    main()
