#!/usr/bin/env python3
"""make bench (part 2): parallel Parsa on the parameter server.

1 worker (sequential) vs 2 worker threads vs `mpirun -np 2 --mpi`, on the
largest shared dataset and a synthetic set of ~20M nonzeros, k=16: median
wall time of partition U over --reps runs, and quality.  Then tau in
0, 1, 4, inf (time, quality, staleness histogram), mid-block syncs off and
automatic on gowalla (seeds 1-5), and the bytes moved
between workers and servers for W in 1, 2, 4 and k in 16, 64.

Then the streaming mode (--stream: whole-command wall time, reading
included, 1 vs 2 workers vs mpirun -np 2) and its memory bound: peak
memory per rank under --mem-limit on two synthetic sets of 5M and 20M
nonzeros, against the sequential run that loads the dataset.

usage: parallel.py BUILD_DIR [--reps N] [--speedup-reps N]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

SHARED = os.environ.get("PARSA_SHARED_DATA", "../shared/data")
# Ranks on this one host talk through shared memory (vader, what mpirun picks
# by default on one machine); TCP, for ranks on other hosts, stays on lo.
MPIRUN = ["mpirun", "--oversubscribe", "--mca", "btl", "self,vader,tcp",
          "--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo"]
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def run(bin_, data, k, extra, mpi=0):
    out = os.path.join(TMP, "p")
    cmd = [bin_, "partition", data, "-k", str(k), "--out", out, "--json", "-q",
           "--random-trials", "1", *map(str, extra)]
    if mpi:
        cmd = ["timeout", "600", *MPIRUN, "-np", str(mpi), *cmd, "--mpi"]
    p = subprocess.run(cmd, capture_output=True, text=True, env=ENV)
    if p.returncode != 0:
        sys.exit("parallel bench: %s failed: %s" % (" ".join(cmd), p.stderr[-2000:]))
    return json.loads(p.stdout)


def median_run(bin_, data, k, extra, reps, mpi=0):
    runs = [run(bin_, data, k, extra, mpi) for _ in range(reps)]
    runs.sort(key=lambda r: r["seconds"]["partition_u"])
    r = runs[len(runs) // 2]
    return r


def row(name, r, base=None):
    m = r["metrics"]
    u = r["seconds"]["partition_u"]
    sp = "%.2fx" % (base["seconds"]["partition_u"] / u) if base else "1.00x"
    q = ""
    if base:
        q = " / ".join("%+.1f%%" % ((m[key] / base["metrics"][key] - 1) * 100)
                       for key in ("M_max", "T_max", "T_sum"))
    return "| %s | %.3f | %s | %.0f | %.0f | %.0f | %s |" % (
        name, u, sp, m["M_max"], m["T_max"], m["T_sum"], q)


def speedup(bin_, data, name, reps):
    """1 worker, 2 threads and mpirun -np 2, interleaved (one of each per
    round) so that the machine's drift hits all three alike."""
    print("\n### %s, k=16: partition U, median of %d interleaved runs\n"
          % (name, reps))
    print("| run | U seconds | speedup | M_max | T_max | T_sum | quality vs 1 worker (M/T/Tsum) |")
    print("|---|---|---|---|---|---|---|")
    par = ["--workers", 2, "--tau", "inf"]
    kinds = [("1 worker (sequential)", [], 0), ("2 worker threads, tau=inf", par, 0)]
    if shutil.which("mpirun"):
        kinds.append(("mpirun -np 2, tau=inf", par, 2))
    runs = [[] for _ in kinds]
    for _ in range(reps):
        for i, (_, extra, mpi) in enumerate(kinds):
            runs[i].append(run(bin_, data, 16, extra, mpi))
    meds = []
    for rs in runs:
        rs.sort(key=lambda r: r["seconds"]["partition_u"])
        meds.append(rs[len(rs) // 2])
    for i, (label, _, _) in enumerate(kinds):
        print(row(label, meds[i], meds[0] if i else None))
    sys.stdout.flush()


def syncs_table(bin_, data, name, seeds):
    """2 worker threads without and with the automatic mid-block syncs:
    median partition-U time over seeds 1..N and the mean quality relative to
    the sequential run with the same seed."""
    print("\n### Mid-block syncs, %s, 2 worker threads, k=16: seeds 1-%d\n"
          % (name, seeds))
    print("| syncs | U seconds (median) | speedup | M_max / T_max / T_sum vs sequential (mean) |")
    print("|---|---|---|---|")
    seq = [run(bin_, data, 16, ["--seed", s]) for s in range(1, seeds + 1)]
    t_seq = statistics.median(r["seconds"]["partition_u"] for r in seq)
    for extra in (["--syncs", 0], []):
        rs = [run(bin_, data, 16, ["--workers", 2, "--tau", "inf", "--seed", s, *extra])
              for s in range(1, seeds + 1)]
        t = statistics.median(r["seconds"]["partition_u"] for r in rs)
        q = " / ".join("%+.1f%%" % (100 * statistics.mean(
            r["metrics"][key] / b["metrics"][key] - 1 for r, b in zip(rs, seq)))
            for key in ("M_max", "T_max", "T_sum"))
        label = "%d%s" % (rs[0]["parallel"]["syncs"], "" if extra else " (auto)")
        print("| %s | %.3f | %.2fx | %s |" % (label, t, t_seq / t, q))
        sys.stdout.flush()
    print("\n(sequential: %.3f s, median)" % t_seq)


def taus(bin_, data, reps):
    print("\n### Bounded delay, 2 worker threads, k=16 (%s)\n" % os.path.basename(data))
    print("| tau | U seconds | M_max | T_max | T_sum | staleness histogram | tau wait s |")
    print("|---|---|---|---|---|---|---|")
    for tau in ("0", "1", "4", "inf"):
        r = median_run(bin_, data, 16, ["--workers", 2, "--tau", tau], reps)
        p, m = r["parallel"], r["metrics"]
        print("| %s | %.3f | %.0f | %.0f | %.0f | %s | %.3f |" % (
            tau, r["seconds"]["partition_u"], m["M_max"], m["T_max"], m["T_sum"],
            p["staleness"], p["tau_wait_seconds"]))
        sys.stdout.flush()


def traffic(bin_, data):
    print("\n### Bytes between workers and servers (%s, threads)\n" % os.path.basename(data))
    print("| W | k | MiB local | MiB remote | messages |")
    print("|---|---|---|---|---|")
    for k in (16, 64):
        for w in (1, 2, 4):
            r = run(bin_, data, k, ["--workers", w, "--servers", w, "--tau", "inf"])
            t = r["parallel"]["traffic"]
            print("| %d | %d | %.1f | %.1f | %d |" % (
                w, k, t["bytes_local"] / 2**20, t["bytes_remote"] / 2**20,
                t["messages_local"] + t["messages_remote"]))
            sys.stdout.flush()


def timed(bin_, data, k, extra, mpi=0):
    t0 = time.time()
    r = run(bin_, data, k, extra, mpi)
    r["wall"] = time.time() - t0
    return r


def median_wall(bin_, data, k, extra, reps, mpi=0):
    runs = sorted((timed(bin_, data, k, extra, mpi) for _ in range(reps)),
                  key=lambda r: r["wall"])
    return runs[len(runs) // 2]


def streaming(bin_, data, name, reps):
    """Whole command (read + partition U and V + metrics + write)."""
    print("\n### Streaming, %s, k=16: whole command, median of %d runs\n" % (name, reps))
    print("| run | wall seconds | speedup vs 1 stream worker | M_max | T_max | T_sum | "
          "quality vs 1 stream worker (M/T/Tsum) | peak MiB (rank max) |")
    print("|---|---|---|---|---|---|---|---|")
    seq = median_wall(bin_, data, 16, [], reps)
    one = median_wall(bin_, data, 16, ["--stream", "--workers", 1], reps)
    rows = [("sequential, loads the dataset (default quality)", seq),
            ("--stream, 1 worker", one)]
    rows.append(("--stream, 2 worker threads",
                 median_wall(bin_, data, 16, ["--stream", "--workers", 2], reps)))
    if shutil.which("mpirun"):
        rows.append(("mpirun -np 2 --stream",
                     median_wall(bin_, data, 16, ["--stream"], reps, mpi=2)))
    for label, r in rows:
        m = r["metrics"]
        q = " / ".join("%+.1f%%" % ((m[key] / one["metrics"][key] - 1) * 100)
                       for key in ("M_max", "T_max", "T_sum"))
        peak = r.get("stream", {}).get("worker_peak_rss_kb", r["peak_rss_kb"])
        print("| %s | %.2f | %.2fx | %.0f | %.0f | %.0f | %s | %.0f |" % (
            label, r["wall"], one["wall"] / r["wall"], m["M_max"], m["T_max"],
            m["T_sum"], q, peak / 1024))
        sys.stdout.flush()


def memory(bin_, sets):
    """Peak memory per rank under --mem-limit vs the dataset's size."""
    print("\n### Memory bound: mpirun -np 2 --stream --mem-limit 16M, k=16\n")
    print("| dataset | nonzeros | file MiB | sequential peak MiB | stream rank peak MiB "
          "| blocks x rows | T_sum stream / sequential |")
    print("|---|---|---|---|---|---|---|")
    for name, path in sets:
        seq = run(bin_, path, 16, [])
        if shutil.which("mpirun"):
            st = run(bin_, path, 16, ["--stream", "--mem-limit", "16M"], mpi=2)
            how = "mpirun -np 2"
        else:
            st = run(bin_, path, 16, ["--stream", "--mem-limit", "16M", "--workers", 1])
            how = "1 thread (no mpirun)"
        s = st["stream"]
        print("| %s | %d | %.0f | %.0f | %.0f (%s) | %d x %d | %.3f |" % (
            name, st["dataset"]["nonzeros"], os.path.getsize(path) / 2**20,
            seq["peak_rss_kb"] / 1024, s["worker_peak_rss_kb"] / 1024, how,
            s["blocks"], s["block_rows"],
            st["metrics"]["T_sum"] / seq["metrics"]["T_sum"]))
        sys.stdout.flush()


def main():
    global TMP
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--speedup-reps", type=int, default=9,
                    help="interleaved rounds of the speedup tables")
    args = ap.parse_args()
    bin_ = os.path.join(args.build, "parsa")
    TMP = tempfile.mkdtemp(prefix="parsa-par-")
    synth = os.path.join(TMP, "synth20m.svm")
    subprocess.run([bin_, "gen", "--examples", "1200000", "--features", "600000",
                    "--avg-nnz", "17", "--topics", "64", "--seed", "2", "--out", synth,
                    "-q"], check=True)
    gowalla = os.path.join(SHARED, "bipartite/gowalla_lightgcn.tsv.gz")
    print("## Parallel Parsa (threads and OpenMPI), 2-core machine\n")
    if os.path.exists(gowalla):
        speedup(bin_, gowalla, "gowalla (largest shared set, 1.03M nnz)",
                args.speedup_reps)
    if os.path.exists(gowalla):
        syncs_table(bin_, gowalla, "gowalla", 5)
    speedup(bin_, synth, "synthetic 1.2M x 600k, ~20.4M nnz", args.speedup_reps)
    streaming(bin_, synth, "synthetic 1.2M x 600k, ~20.4M nnz", args.reps)
    small = os.path.join(TMP, "synth5m.svm")
    subprocess.run([bin_, "gen", "--examples", "300000", "--features", "600000",
                    "--avg-nnz", "17", "--topics", "64", "--seed", "2", "--out", small,
                    "-q"], check=True)
    memory(bin_, [("synthetic 300k x 600k", small), ("synthetic 1.2M x 600k", synth)])
    taus(bin_, synth, 3)
    traffic(bin_, gowalla if os.path.exists(gowalla) else synth)
    shutil.rmtree(TMP, ignore_errors=True)


if __name__ == "__main__":
    main()
