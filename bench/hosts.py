#!/usr/bin/env python3
"""Training across emulated hosts (issue 21): what a placement saves in
time when the machines really talk over (shaped) TCP, and the consistency
models of the parameter server.

Every run is `scripts/train-hosts.sh --hosts N --link RATE,DELAY -- DATA
--placement P ...`: N network namespaces joined by veth pairs to a bridge,
one MPI rank per host (worker i and server i on host i), the link rate
divided and the delay multiplied by N/cores (the hosts share this
machine's cores, so each computes N/cores times slower than a real machine;
the ratio of computing to communicating is then that of N real machines
with the named link).  Every timing is emulated.

Groups (each timed group is meant to run under an exclusive lock:
scripts/bench-hosts.sh wraps them in $BENCH_QUIET):
  prep     datasets (aclimdb_all relabelled, a `parsa gen` set of 21.6M
           nonzeros), placements (parsa default and best, k = 4 and 8),
           `parsa eval` of each (T_sum, and random's)
  main4    4 hosts, 1gbit,0.2ms: a9a, reuters_lasvm, aclimdb_all, synth;
           random vs parsa default vs parsa best
  hosts8   the same on 8 hosts
  slow4    4 hosts, 100mbit,0.2ms
  consist  synth, 4 hosts, 1gbit,0.2ms, 16 blocks: tau:0, bsp, ssp:S and
           essp:S for S = 1, 3, 10 (parsa default placement)
  report   markdown tables from the groups' JSON (bench/results/hosts-*)

aclimdb_all: the shared file's label is the star rating (1-10, 0 for the
50,000 unlabelled reviews); here label > 5 is positive and everything
else (ratings 1-4, and 0) negative, so all 100,000 rows and 13.6M nonzeros
are trained on (the unlabelled half as negatives: the model is not a
sentiment model, the traffic and the work are the whole set's).

Usage: python3 bench/hosts.py BUILD --group G [--runs R]
"""
import argparse
import glob
import gzip
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("PARSA_SHARED_DATA",
                        os.path.join(ROOT, "..", "shared", "data"))
WORK = os.environ.get("PARSA_BENCH_TMP", "/tmp/parsa-bench-hosts")
RESULTS = os.path.join(ROOT, "bench", "results")
TRAIN_HOSTS = os.path.join(ROOT, "scripts", "train-hosts.sh")

# name -> passes (enough for the placements to agree within 0.1%)
DATASETS = [("a9a", 20), ("reuters_lasvm", 20), ("aclimdb_all", 10),
            ("synth21.6M", 8)]
LINK = "1gbit,0.2ms"
TOL = 1e-3  # "the same objective": within 0.1%


def sh(cmd, **kw):
    t0 = time.time()
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                       **kw)
    p.seconds = time.time() - t0
    if p.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (
            " ".join(map(str, cmd)), p.returncode, p.stderr[-3000:]))
    return p


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# ------------------------------------------------------------- datasets

def data_path(name):
    if name == "a9a":
        return os.path.join(SHARED, "libsvm", "a9a.train.svm.gz")
    if name == "reuters_lasvm":
        return os.path.join(SHARED, "libsvm", "reuters_lasvm.train.svm.gz")
    if name == "aclimdb_all":
        return os.path.join(WORK, "aclimdb_all.pm.svm")
    return os.path.join(WORK, "synth.svm")


def prep_data(build):
    os.makedirs(WORK, exist_ok=True)
    acl = data_path("aclimdb_all")
    if not os.path.exists(acl):
        src = os.path.join(SHARED, "large", "aclimdb_all.svm.gz")
        with gzip.open(src, "rt") as f, open(acl + ".tmp", "w") as g:
            for line in f:
                lab, _, rest = line.partition(" ")
                g.write(("+1 " if int(lab) > 5 else "-1 ") + rest)
        os.rename(acl + ".tmp", acl)
    syn = data_path("synth21.6M")
    if not os.path.exists(syn):
        sh([os.path.join(build, "parsa"), "gen", "--examples", 600000,
            "--features", 2000000, "--avg-nnz", 36, "--topics", 64,
            "--seed", 1, "--out", syn])


def prefix(name, k, quality):
    return os.path.join(WORK, "%s.k%d.%s" % (name, k, quality))


def prep(args):
    prep_data(args.build)
    parsa = os.path.join(args.build, "parsa")
    out = {}
    for name, _ in DATASETS:
        for k in (4, 8):
            for q in ("default", "best"):
                pre = prefix(name, k, q)
                if not os.path.exists(pre + ".json"):
                    p = sh([parsa, "partition", data_path(name), "-k", k,
                            "--quality", q, "--out", pre, "-q"])
                    log("partition %s k=%d %s: %.1f s" % (name, k, q,
                                                          p.seconds))
                ev = json.loads(sh([parsa, "eval", data_path(name),
                                    "--placement", pre, "--json"]).stdout)
                rep = json.load(open(pre + ".json"))
                out["%s/%d/%s" % (name, k, q)] = {
                    "T_sum": ev["metrics"]["T_sum"],
                    "T_sum_random": ev["random"]["T_sum"],
                    "dataset": ev["dataset"],
                    "partition_seconds": rep["seconds"]["total"]}
    return out


# ------------------------------------------------------------------ runs

def train(args, name, hosts, link, placement, extra=(), passes=None):
    """One training across hosts; every pass object and the final one."""
    data = data_path(name)
    pl = placement if placement == "random" else prefix(name, hosts,
                                                        placement)
    cmd = ["bash", TRAIN_HOSTS, "--hosts", hosts, "--link", link,
           "--bin", os.path.join(args.build, "parsa"), "--timeout", 1500,
           "--", data, "--placement", pl, "--passes",
           passes or dict(DATASETS)[name], "--blocks", args.blocks]
    if placement == "random":
        cmd += ["--workers", hosts, "--seed", 1]
    cmd += list(extra)
    p = sh(cmd, timeout=1600)
    objs = [json.loads(l) for l in p.stdout.strip().splitlines()]
    final = objs[-1]
    return {"dataset": name, "hosts": hosts, "link": link,
            "placement": placement, "extra": list(extra),
            "passes": objs[:-1], "final": final, "wall": p.seconds,
            "load_seconds": p.seconds - final["total_seconds"]}


def group_runs(args, hosts, link, names):
    runs = []
    for rep in range(args.runs):
        for name in names:
            for pl in ("random", "default", "best"):
                r = train(args, name, hosts, link, pl,
                          ("--consistency", args.consistency))
                r["rep"] = rep
                log("%s %d hosts %s %s: %.1f s/pass, final %.6g, wall %.0f s" %
                    (name, hosts, link, pl,
                     statistics.median(o["seconds"] for o in r["passes"]),
                     r["final"]["objective"], r["wall"]))
                runs.append(r)
    return runs


def consist_runs(args):
    models = ["tau:0", "bsp"] + ["%s:%d" % (m, s) for s in (1, 3, 10)
                                 for m in ("ssp", "essp")]
    runs = []
    for rep in range(args.runs):
        for m in models:
            r = train(args, "synth21.6M", 4, LINK, "default",
                      ("--consistency", m), passes=args.consist_passes)
            r["rep"] = rep
            r["consistency"] = m
            log("%s: %.2f s/pass, final %.6g, hist %s" % (
                m, statistics.median(o["seconds"] for o in r["passes"]),
                r["final"]["objective"], r["final"]["staleness_hist"]))
            runs.append(r)
    return runs


# ---------------------------------------------------------------- report

def latest(group):
    files = sorted(glob.glob(os.path.join(RESULTS, "hosts-%s-*.json" %
                                          group)))
    return json.load(open(files[-1])) if files else None


def time_to(r, target):
    for o in r["passes"]:
        if o["objective"] <= target:
            return o["total_seconds"]
    return float("nan")


def med(xs):
    xs = [x for x in xs if x == x]
    return statistics.median(xs) if xs else float("nan")


def fmt_b(b):
    for u, d in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if b >= d:
            return "%.3g %s" % (b / d, u)
    return "%d B" % b


def table_group(g, prep_res):
    """One markdown table per group: per dataset, the three placements."""
    lines = []
    runs = g["runs"]
    meta = g["meta"]
    lines.append("Run of %s (%s), %d hosts, link %s scaled to %s each way "
                 "per host, delay %s (%s); %d blocks, %s; median of %d "
                 "run(s); %s." % (
                     meta["date"], meta["group"], meta["hosts"], meta["link"],
                     meta.get("rate", "?"), meta.get("delay", "?"),
                     meta.get("delay_via", "?"), meta["blocks"],
                     meta.get("consistency", "tau:0"), meta["runs"],
                     meta["quiet"]))
    lines.append("")
    lines.append("| dataset | passes | placement | T_sum (eval) | remote bytes/pass | = 12 T_sum | s/pass | time to objective (s) | speedup vs random | final objective | load (s) |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, _ in DATASETS:
        rs = [r for r in runs if r["dataset"] == name]
        if not rs:
            continue
        target = (1 + TOL) * max(r["final"]["objective"] for r in rs)
        by = {}
        for r in rs:
            by.setdefault(r["placement"], []).append(r)
        t_rand = med(time_to(r, target) for r in by.get("random", []))
        for pl in ("random", "default", "best"):
            if pl not in by:
                continue
            x = by[pl]
            key = "%s/%d/%s" % (name, meta["hosts"], "default" if pl ==
                                "random" else pl)
            ev = prep_res.get(key, {})
            tsum = ev.get("T_sum_random" if pl == "random" else "T_sum")
            p1 = x[0]["passes"][0]
            vb = p1["value_bytes_remote"]
            exact = "" if pl == "random" else (
                "yes" if tsum is not None and vb == 12 * tsum else
                "no (%d vs %d)" % (vb, 12 * (tsum or 0)))
            tt = med(time_to(r, target) for r in x)
            lines.append("| %s | %d | %s | %s | %s | %s | %.3f | %.2f | %s | %.6g | %.1f |" % (
                name, len(p1 and x[0]["passes"]),
                pl if pl == "random" else "parsa " + pl,
                "%d%s" % (tsum, " (mean of 5 random)" if pl == "random" else "")
                if tsum is not None else "?",
                fmt_b(p1["bytes_remote"]), exact,
                med(o["seconds"] for r in x for o in r["passes"]), tt,
                "" if pl == "random" else "%.2fx" % (t_rand / tt),
                med(r["final"]["objective"] for r in x),
                med(r["load_seconds"] for r in x)))
    return "\n".join(lines)


def table_consist(g):
    lines = []
    meta = g["meta"]
    lines.append("Run of %s, synth21.6M, 4 hosts, link %s (scaled), parsa "
                 "default placement, %d blocks, %d passes; %s." % (
                     meta["date"], meta["link"], meta["blocks"],
                     meta["passes"], meta["quiet"]))
    lines.append("")
    lines.append("| model | s/pass (median) | wait s/pass | final objective | time to objective (s) | staleness histogram (keys read with 0, 1, ... clocks missing), all passes | mean staleness | eager bytes remote/pass | remote data bytes/pass |")
    lines.append("|---|---|---|---|---|---|---|---|---|")
    runs = g["runs"]
    target = (1 + TOL) * max(r["final"]["objective"] for r in runs)
    for m in dict.fromkeys(r["consistency"] for r in runs):
        x = [r for r in runs if r["consistency"] == m]
        hist = []
        for r in x[:1]:
            for o in r["passes"]:
                h = o["staleness_hist"]
                hist += [0] * (len(h) - len(hist))
                for i, v in enumerate(h):
                    hist[i] += v
        tot = sum(hist)
        mean = sum(i * v for i, v in enumerate(hist)) / tot if tot else 0
        lines.append("| %s | %.3f | %.3f | %.6g | %.2f | %s | %.2f | %s | %s |" % (
            m, med(o["seconds"] for r in x for o in r["passes"]),
            med(o["wait_seconds"] for r in x for o in r["passes"]),
            med(r["final"]["objective"] for r in x),
            med(time_to(r, target) for r in x),
            " / ".join("%.0f%%" % (100.0 * v / tot) for v in hist) if tot else "-",
            mean, fmt_b(med(o["bytes_remote_pushed_eagerly"] for r in x
                            for o in r["passes"])),
            fmt_b(med(o["bytes_remote"] for r in x for o in r["passes"]))))
    lines.append("")
    lines.append("Objective against time (s, objective after each pass; first run):")
    lines.append("")
    for m in dict.fromkeys(r["consistency"] for r in runs):
        r = [r for r in runs if r["consistency"] == m][0]
        lines.append("- %s: %s" % (m, ", ".join(
            "%.1f s %.6g" % (o["total_seconds"], o["objective"])
            for o in r["passes"])))
    return "\n".join(lines)


def report(args):
    prep_res = latest("prep") or {}
    prep_res = prep_res.get("placements", {})
    out = []
    for grp in ("main4", "hosts8", "slow4"):
        g = latest(grp)
        if g:
            out.append("### %s\n\n%s\n" % (g["meta"]["title"],
                                            table_group(g, prep_res)))
    g = latest("consist")
    if g:
        out.append("### Consistency models\n\n%s\n" % table_consist(g))
    print("\n".join(out))


# ------------------------------------------------------------------ main

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("--group", required=True,
                    choices=["prep", "main4", "hosts8", "slow4", "consist",
                             "report"])
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--blocks", type=int, default=8)
    ap.add_argument("--only", default="")
    ap.add_argument("--consist-passes", type=int, default=8)
    # main4, hosts8, slow4: the model of every run (bsp: the same model
    # to the bit as tau:0, in fewer round trips a block)
    ap.add_argument("--consistency", default="tau:0")
    ap.add_argument("--quiet-note", default=os.environ.get(
        "BENCH_QUIET_NOTE", "quiet: run under an exclusive lock"))
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    if args.group == "report":
        report(args)
        return
    for name, _ in DATASETS:
        if name in ("a9a", "reuters_lasvm") and not os.path.exists(
                data_path(name)):
            print("skip: %s absent (../shared/data)" % data_path(name))
            return
    os.makedirs(RESULTS, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    meta = {"date": time.strftime("%Y-%m-%d %H:%M"), "group": args.group,
            "runs": args.runs, "blocks": args.blocks,
            "consistency": args.consistency,
            "quiet": args.quiet_note, "load": os.getloadavg()}
    names = [n for n, _ in DATASETS
             if not args.only or n in args.only.split(",")]
    if args.group == "prep":
        res = {"meta": meta, "placements": prep(args)}
    elif args.group == "consist":
        args.blocks = 16
        meta.update(blocks=16, link=LINK, passes=args.consist_passes)
        res = {"meta": meta, "runs": consist_runs(args)}
    else:
        hosts, link, title = {
            "main4": (4, LINK, "4 emulated hosts, 1 Gbit/s, 0.2 ms"),
            "hosts8": (8, LINK, "8 emulated hosts, 1 Gbit/s, 0.2 ms"),
            "slow4": (4, "100mbit,0.2ms",
                      "4 emulated hosts, 100 Mbit/s, 0.2 ms")}[args.group]
        meta.update(hosts=hosts, link=link, title=title)
        runs = group_runs(args, hosts, link, names)
        if runs:
            lk = runs[0]["final"]["link"]
            meta.update(rate="%gmbit" % (lk["rate_bits_per_s"] / 1e6),
                        delay=lk["delay"], delay_via=lk["delay_via"])
        res = {"meta": meta, "runs": runs}
    path = os.path.join(RESULTS, "hosts-%s-%s.json" % (args.group, stamp))
    with open(path, "w") as f:
        json.dump(res, f)
    log("wrote %s" % path)


if __name__ == "__main__":
    main()
