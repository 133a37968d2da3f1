#!/usr/bin/env python3
"""Trainer benchmark: what a placement saves a training job.

For each dataset: partition with Parsa (k machines), evaluate the placement
(`parsa eval`: T_sum of Parsa's placement and of random), then train sparse
L1 logistic regression (`parsa train`) on Parsa's placement and on a random
one over an emulated link (default 1gbit,0.1ms between machines; every
timing is emulated on this one host), and compare: local share of the value
traffic, remote bytes, remote value bytes parsa/random against
T_sum(parsa)/T_sum(random), time to reach the same objective, and the final
objectives.  Also checks the identity remote value bytes per pass = 12 T_sum
(each remote (worker, key) pair moves 16 bytes of (g, u) and 8 of w; T_sum
counts every such pair twice).

Bipartite sets become LIBSVM (implicit feedback with sampled negatives):
every (user, item) pair is a positive example with the features
{user: 2u, item: 2i+1}; for each positive one negative (user, item') with
item' drawn uniformly (seeded) from the items the user never touched.
Gowalla's IsTest pairs (and every 10th MovieLens pair) form the test set,
with their own sampled negatives.

The correctness check: heart_scale with one worker and tau = 0 against
liblinear-train -s 6 -c 1.

Each training runs twice per repetition: link buckets per machine pair
(as specified) and per sending machine (",nic": a shared egress NIC).

Usage: python3 bench/train.py [BUILD] [--quick] [--runs N] [--passes P]
                              [--only NAME,...] [--link BW,LAT] [-k K]
Markdown on stdout; raw numbers in bench/results/train-*.json.
"""
import argparse
import gzip
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import time

LIBSVM = "/work/shared/data/libsvm"
BIPARTITE = "/work/shared/data/bipartite"
HEART = "/usr/share/doc/liblinear-tools/examples/heart_scale"
WORK = os.environ.get("PARSA_BENCH_TMP", "/tmp/parsa-bench-train")


def sh(cmd, **kw):
    t0 = time.time()
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                       **kw)
    if p.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(map(str, cmd)),
                                                   p.returncode, p.stderr))
    p.seconds = time.time() - t0
    return p


# ------------------------------------------------------------- datasets

def pairs_to_libsvm(pairs, test_pairs, out, test_out, seed=1):
    """Positive (u, i) + one sampled negative (u, j) per pair."""
    rng = random.Random(seed)
    items = sorted({i for _, i in pairs} | {i for _, i in test_pairs})
    seen = {}
    for u, i in pairs + test_pairs:
        seen.setdefault(u, set()).add(i)

    def write(path, ps):
        with open(path, "w") as f:
            for u, i in ps:
                f.write("+1 %d:1 %d:1\n" % (2 * u, 2 * i + 1))
                while True:
                    j = items[rng.randrange(len(items))]
                    if j not in seen[u]:
                        break
                f.write("-1 %d:1 %d:1\n" % (2 * u, 2 * j + 1))
    write(out, pairs)
    write(test_out, test_pairs)


def movielens(work):
    out, test = os.path.join(work, "movielens.svm"), os.path.join(work, "movielens.test.svm")
    if not os.path.exists(out):
        rows = []
        with gzip.open(os.path.join(BIPARTITE, "movielens-latest-small_ratings.csv.gz"), "rt") as f:
            next(f)
            for line in f:
                u, i = line.split(",")[:2]
                rows.append((int(u), int(i)))
        train = [p for n, p in enumerate(rows) if n % 10 != 9]
        held = [p for n, p in enumerate(rows) if n % 10 == 9]
        pairs_to_libsvm(train, held, out, test)
    return out, test


def gowalla(work):
    out, test = os.path.join(work, "gowalla.svm"), os.path.join(work, "gowalla.test.svm")
    if not os.path.exists(out):
        train, held = [], []
        with gzip.open(os.path.join(BIPARTITE, "gowalla_lightgcn.tsv.gz"), "rt") as f:
            for line in f:
                if line.startswith("#"):
                    continue
                u, i, t = line.split()[:3]
                (held if t == "1" else train).append((int(u), int(i)))
        pairs_to_libsvm(train, held, out, test)
    return out, test


def synthetic(work, build):
    out = os.path.join(work, "synth.svm")
    if not os.path.exists(out):
        sh([os.path.join(build, "parsa"), "gen", "--examples", 600000,
            "--features", 2000000, "--avg-nnz", 36, "--topics", 64,
            "--seed", 1, "--out", out])
    return out, None


def datasets(work, build, quick):
    sets = [
        ("reuters_lasvm", lambda: (os.path.join(LIBSVM, "reuters_lasvm.train.svm.gz"),
                                   os.path.join(LIBSVM, "reuters_lasvm.test.svm.gz"))),
        ("a9a", lambda: (os.path.join(LIBSVM, "a9a.train.svm.gz"),
                         os.path.join(LIBSVM, "a9a.test.svm.gz"))),
        ("ap_blei", lambda: (os.path.join(LIBSVM, "ap_blei.svm.gz"), None)),
        ("movielens", lambda: movielens(work)),
        ("gowalla", lambda: gowalla(work)),
    ]
    if not quick:
        sets.append(("synthetic-21.6M", lambda: synthetic(work, build)))
    return sets


# ------------------------------------------------------------------ runs

# passes per dataset where 30 do not bring parsa and random within 1%
PASSES = {"ap_blei": 60}


def train(parsa, data, placement, args, k, test=None, seed=1, link=None,
          name=None):
    cmd = [parsa, "train", data, "--placement", placement, "--passes",
           PASSES.get(name, args.passes), "--blocks", args.blocks,
           "--link", link or args.link,
           "-q", "--log", os.path.join(WORK, "log.jsonl")]
    if placement == "random":
        cmd += ["--workers", k, "--seed", seed]
    if test:
        cmd += ["--test", test]
    p = sh(cmd)
    passes = [json.loads(l) for l in open(os.path.join(WORK, "log.jsonl"))]
    final = json.loads(p.stdout.strip().splitlines()[-1])
    return {"passes": passes, "final": final, "wall": p.seconds}


def time_to(passes, target):
    for o in passes:
        if o["objective"] <= target:
            return o["total_seconds"]
    return float("nan")


def one_dataset(name, data, test, args):
    parsa = os.path.join(args.build, "parsa")
    prefix = os.path.join(WORK, "%s.k%d" % (name, args.k))
    part = sh([parsa, "partition", data, "-k", args.k, "--quality",
               args.quality, "--out", prefix, "-q"])
    ev = json.loads(sh([parsa, "eval", data, "--placement", prefix,
                        "--json"]).stdout)
    runs = {"parsa": [], "random": []}
    nic = {"parsa": [], "random": []}
    for r in range(args.runs):
        runs["parsa"].append(train(parsa, data, prefix, args, args.k, test,
                                   name=name))
        runs["random"].append(train(parsa, data, "random", args, args.k,
                                    test, seed=1, name=name))
        nic["parsa"].append(train(parsa, data, prefix, args, args.k, test,
                                  link=args.link + ",nic", name=name))
        nic["random"].append(train(parsa, data, "random", args, args.k,
                                   test, seed=1, link=args.link + ",nic",
                                   name=name))
    res = {"name": name, "partition_seconds": part.seconds,
           "dataset": ev["dataset"], "T_sum": ev["metrics"]["T_sum"],
           "T_sum_random": ev["random"]["T_sum"],
           "local_fraction_eval": ev["metrics"]["local_fraction"]}
    fin = {m: runs[m][0]["final"] for m in runs}
    target = max(fin["parsa"]["objective"], fin["random"]["objective"])
    for m in runs:
        p1 = runs[m][0]["passes"][0]
        loc, rem = p1["value_bytes_local"], p1["value_bytes_remote"]
        res[m] = {
            "final_objective": fin[m]["objective"],
            "auc": fin[m]["auc"],
            "nnz_w": fin[m]["nnz_w"],
            "local_share": loc / (loc + rem) if loc + rem else 1.0,
            "remote_bytes_per_pass": p1["bytes_remote"],
            "remote_value_bytes_per_pass": rem,
            "remote_messages_per_pass": p1["messages_remote"],
            "wire_remote_bytes_per_pass": p1["wire_bytes_remote"],
            "remote_bytes_total": sum(o["bytes_remote"] for o in runs[m][0]["passes"]),
            "seconds_to_target": statistics.median(
                time_to(r["passes"], target) for r in runs[m]),
            "seconds_to_target_nic": statistics.median(
                time_to(r["passes"], target) for r in nic[m]),
            "seconds_per_pass": statistics.median(
                o["seconds"] for r in runs[m] for o in r["passes"]),
            "seconds_per_pass_nic": statistics.median(
                o["seconds"] for r in nic[m] for o in r["passes"]),
            "passes": len(runs[m][0]["passes"]),
            "train_seconds": statistics.median(
                r["final"]["total_seconds"] for r in runs[m]),
            "wait_seconds": statistics.median(
                sum(o["wait_seconds"] for o in r["passes"]) for r in runs[m]),
        }
    res["parsa_remote_is_12_T_sum"] = (
        res["parsa"]["remote_value_bytes_per_pass"] == 12 * res["T_sum"])
    res["bytes_ratio"] = (res["parsa"]["remote_value_bytes_per_pass"] /
                          res["random"]["remote_value_bytes_per_pass"])
    res["T_sum_ratio"] = res["T_sum"] / res["T_sum_random"]
    res["objective_gap"] = abs(fin["parsa"]["objective"] - fin["random"]["objective"]) / fin["random"]["objective"]
    res["speedup"] = res["random"]["seconds_to_target"] / res["parsa"]["seconds_to_target"]
    res["speedup_nic"] = (res["random"]["seconds_to_target_nic"] /
                          res["parsa"]["seconds_to_target_nic"])
    return res


def heart_check(args):
    parsa = os.path.join(args.build, "parsa")
    if not os.path.exists(HEART) or not shutil.which("liblinear-train"):
        return None
    model = os.path.join(WORK, "heart.liblinear")
    out = sh(["liblinear-train", "-s", 6, "-c", 1, HEART, model]).stdout
    ref = float(re.findall(r"Objective value = ([0-9.]+)", out)[-1])
    wl = open(model).read().split("\nw\n")[1].split()
    ref_nz = sorted(i + 1 for i, v in enumerate(wl) if float(v) != 0)
    mine = os.path.join(WORK, "heart.model")
    p = sh([parsa, "train", HEART, "--placement", "random", "--workers", 1,
            "--tau", 0, "--lambda", 1, "--blocks", 13, "--passes", 60,
            "--model", mine, "-q"])
    obj = json.loads(p.stdout.strip().splitlines()[-1])["objective"]
    nz = sorted(int(l.split()[0]) for l in open(mine))
    return {"liblinear": ref, "parsa_train": obj,
            "rel_diff": (obj - ref) / ref, "same_nonzeros": nz == ref_nz,
            "nnz": len(nz)}


def fmt_bytes(b):
    for unit in ("B", "KB", "MB", "GB"):
        if b < 1000:
            return "%.3g %s" % (b, unit)
        b /= 1000.0
    return "%.3g TB" % b


def report(results, heart, args):
    print("## Trainer (bench/train.py)\n")
    print("k=%d machines (threads transport, one host, 2 cores), %d passes, "
          "%d blocks, tau=0, lambda=1, emulated link %s per machine pair "
          "(all times are emulated), median of %d run(s).\n"
          % (args.k, args.passes, args.blocks, args.link, args.runs))
    if heart:
        print("Correctness: heart_scale, one worker, tau=0, lambda=1: "
              "objective %.6f vs liblinear-train -s 6 -c 1 %.6f "
              "(%+.4f%%), same non-zero pattern: %s (%d non-zeros).\n"
              % (heart["parsa_train"], heart["liblinear"],
                 100 * heart["rel_diff"], "yes" if heart["same_nonzeros"]
                 else "NO", heart["nnz"]))
    print("| dataset | examples | nnz | local share parsa / random | "
          "remote bytes/pass parsa / random | remote value bytes ratio | "
          "T_sum ratio (eval) | = 12 T_sum | final objective parsa / random "
          "(gap) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        p, q = r["parsa"], r["random"]
        print("| %s | %d | %d | %.1f%% / %.1f%% | %s / %s | %.3f | %.3f | %s "
              "| %.6g / %.6g (%.2f%%) |" % (
                  r["name"], r["dataset"]["examples"],
                  r["dataset"]["nonzeros"], 100 * p["local_share"],
                  100 * q["local_share"], fmt_bytes(p["remote_bytes_per_pass"]),
                  fmt_bytes(q["remote_bytes_per_pass"]), r["bytes_ratio"],
                  r["T_sum_ratio"], "yes" if r["parsa_remote_is_12_T_sum"]
                  else "no", p["final_objective"], q["final_objective"],
                  100 * r["objective_gap"]))
    print()
    print("Time (emulated) to reach the same objective (the worse of the two "
          "final ones), seconds, parsa / random; link per machine pair "
          "(`%s`) and per sending machine (`%s,nic`):\n" % (args.link, args.link))
    print("| dataset | passes | per pair | speedup | per NIC | speedup | "
          "s/pass per pair | s/pass per NIC | wait/run parsa / random (pair) "
          "| partition (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        p, q = r["parsa"], r["random"]
        print("| %s | %d | %.2f / %.2f | %.2fx | %.2f / %.2f | %.2fx | "
              "%.3f / %.3f | %.3f / %.3f | %.2f / %.2f | %.2f |" % (
                  r["name"], p["passes"], p["seconds_to_target"],
                  q["seconds_to_target"], r["speedup"],
                  p["seconds_to_target_nic"], q["seconds_to_target_nic"],
                  r["speedup_nic"], p["seconds_per_pass"],
                  q["seconds_per_pass"], p["seconds_per_pass_nic"],
                  q["seconds_per_pass_nic"], p["wait_seconds"],
                  q["wait_seconds"], r["partition_seconds"]))
    print()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("--quick", action="store_true",
                    help="skip the 21.6M-nonzero synthetic set")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--passes", type=int, default=30)
    ap.add_argument("--blocks", type=int, default=8)
    ap.add_argument("-k", type=int, default=16)
    ap.add_argument("--link", default="1gbit,0.1ms")
    ap.add_argument("--only", default="")
    ap.add_argument("--quality", default="default",
                    help="parsa partition --quality of the placements")
    args = ap.parse_args()
    os.makedirs(WORK, exist_ok=True)
    only = set(filter(None, args.only.split(",")))
    results = []
    for name, get in datasets(WORK, args.build, args.quick):
        if only and name not in only:
            continue
        data, test = get()
        results.append(one_dataset(name, data, test, args))
        print("done %s" % name, file=sys.stderr)
    heart = heart_check(args)
    report(results, heart, args)
    os.makedirs("bench/results", exist_ok=True)
    path = "bench/results/train-%s.json" % time.strftime("%Y%m%d-%H%M%S")
    with open(path, "w") as f:
        json.dump({"args": vars(args), "heart": heart, "results": results},
                  f, indent=1)
    print("raw results: %s" % path)


if __name__ == "__main__":
    main()
