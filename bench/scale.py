#!/usr/bin/env python3
"""make bench-scale: parsa at 10M, 100M and 1B nonzeros, every phase with 1
and 2 threads, beside METIS; the real large sets; streaming; MPI over
emulated hosts (issue 17).

Each run is one `parsa partition` process (its whole wall time is measured
here; the report gives the phases and the peak RSS).  METIS runs through
`parsa partition --method metis` and is stopped at --metis-seconds (30 min)
or when its resident memory passes --metis-gib (20 GiB), whichever comes
first; the table says which.  Data is generated with `parsa gen` into
$PARSA_BENCH_TMP (default /tmp/parsa-bench-scale) and kept there between
runs (1B nonzeros is about 10 GB of text; --clean removes it).

usage: scale.py BUILD [--sizes 10M,100M,1B] [--ks 64,1024] [--threads 1,2]
                [--reps N] [--rounds N] [--no-metis] [--no-synthetic] [--no-real] [--no-stream]
                [--no-hosts] [--json FILE]

Groups (all by default): synthetic sizes x ks x threads (+ METIS, + the
binary cache where `parsa convert` exists; then --rounds interleaved
rounds for the floors that compare two runs), real sets of ../shared/data/large
at k=16 and 64 (+ METIS), streaming at the largest size (`--stream
--workers 2 --mem-limit 1G`, every rank's peak), and `mpirun` over 4
emulated hosts (scripts/netns-cluster.sh; skipped where namespaces cannot
be made) on the 100M set.  The floors of the issue are checked at the end,
beside what a second thread gave the memory system at the start and at
the end of the run (bench/machine.c: on a shared VM that changes with the
other tenants, and it bounds the 2-thread floor).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("PARSA_SHARED_DATA", os.path.join(ROOT, "..", "shared", "data"))
WORK = os.environ.get("PARSA_BENCH_TMP", "/tmp/parsa-bench-scale")
RESULTS = os.path.join(ROOT, "bench", "results")

# name -> parsa gen arguments (the sets; 10M scaled down from them)
SIZES = {
    "1M": ["--examples", 50000, "--features", 20000, "--avg-nnz", 20, "--topics", 16],  # smoke
    "10M": ["--examples", 500000, "--features", 200000, "--avg-nnz", 20, "--topics", 64],
    "100M": ["--examples", 5000000, "--features", 2000000, "--avg-nnz", 20, "--topics", 256],
    "1B": ["--examples", 50000000, "--features", 20000000, "--avg-nnz", 20, "--topics", 1024],
}
REAL = [("aclimdb_all", "large/aclimdb_all.svm.gz", []),
        ("cnr-2000 adjacency", "large/cnr-2000.txt.gz", ["--graph", "adjacency"]),
        ("cnr-2000 edges", "large/cnr-2000.txt.gz", ["--graph", "edges"]),
        ("jester", "large/jester1_part1.tsv.gz", [])]


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def watch_rss(pid, limit_kb, state):
    """Poll the process's VmRSS; kill it past limit_kb (state['killed'])."""
    path = "/proc/%d/status" % pid
    while state.get("running"):
        try:
            with open(path) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        kb = int(line.split()[1])
                        state["max_kb"] = max(state.get("max_kb", 0), kb)
                        if limit_kb and kb > limit_kb:
                            state["killed"] = "memory"
                            os.kill(pid, 9)
                            return
        except (OSError, ValueError):
            return
        time.sleep(0.5)


def run(cmd, timeout=None, mem_kb=None):
    """(returncode, stdout, stderr, wall seconds, stopped: None|'time'|'memory',
    max VmRSS KiB seen)."""
    t0 = time.time()
    p = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    state = {"running": True}
    th = threading.Thread(target=watch_rss, args=(p.pid, mem_kb, state), daemon=True)
    th.start()
    stopped = None
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        stopped = "time"
    # the wall time ends here, not after the watcher's last sleep (up to
    # 0.5 s: the figures were rounded up to the next half second)
    wall = time.time() - t0
    state["running"] = False
    th.join(2)
    if state.get("killed"):
        stopped = "memory"
    return p.returncode, out, err, wall, stopped, state.get("max_kb", 0)


def ensure_data(build, name):
    os.makedirs(WORK, exist_ok=True)
    path = os.path.join(WORK, "gen-%s.svm" % name)
    if not os.path.exists(path):
        log("generating %s nonzeros -> %s" % (name, path))
        rc, _, err, secs, _, _ = run([os.path.join(build, "parsa"), "gen", *SIZES[name],
                                      "--seed", 1, "--out", path + ".tmp", "-q"])
        if rc != 0:
            raise RuntimeError("gen %s failed: %s" % (name, err[-2000:]))
        os.rename(path + ".tmp", path)
        log("  %.0f s" % secs)
    return path


def has_convert(build):
    p = subprocess.run([os.path.join(build, "parsa"), "help"], capture_output=True, text=True)
    return "convert" in p.stdout


def ensure_cache(build, data):
    pcsr = data + ".pcsr"
    if not os.path.exists(pcsr):
        rc, _, err, secs, _, _ = run([os.path.join(build, "parsa"), "convert", data,
                                      "--out", pcsr, "-q"])
        if rc != 0:
            log("convert failed: %s" % err[-500:])
            return None
        log("converted %s in %.0f s" % (data, secs))
    return pcsr


def partition(build, data, k, extra, reps=1, timeout=None, mem_kb=None):
    """Median-of-reps figures of `parsa partition`, or a stopped record."""
    out = os.path.join(WORK, "out")
    cmd = [os.path.join(build, "parsa"), "partition", data, "-k", k, "--out", out,
           "--json", "--random-trials", 1, *extra]
    recs = []
    for _ in range(reps):
        rc, so, se, wall, stopped, max_kb = run(cmd, timeout, mem_kb)
        if stopped:
            return {"stopped": stopped, "wall": wall, "max_rss_kb": max_kb}
        if rc != 0:
            return {"error": se.strip()[-500:], "wall": wall}
        rep = json.loads(so)
        recs.append({"wall": wall, "seconds": rep["seconds"], "metrics": rep["metrics"],
                     "peak_rss_kb": rep.get("peak_rss_kb"), "dataset": rep["dataset"],
                     "stream": rep.get("stream")})
    recs.sort(key=lambda r: r["wall"])
    med = recs[len(recs) // 2]
    med["walls"] = [r["wall"] for r in recs]
    return med


def nnz_of(rec):
    return rec["dataset"]["nonzeros"]


def row(label, rec):
    if "stopped" in rec:
        return "| %s | stopped at %s (%.0f s, %.1f GiB) | | | | | | | |" % (
            label, "30 min" if rec["stopped"] == "time" else "20 GiB", rec["wall"],
            rec["max_rss_kb"] / 2**20)
    if "error" in rec:
        return "| %s | failed: %s | | | | | | | |" % (label, rec["error"].splitlines()[-1][:80])
    s, m = rec["seconds"], rec["metrics"]
    rss = "%.2f" % ((rec["peak_rss_kb"] or 0) / 2**20)
    if rec.get("stream"):
        rss += " (workers %.2f)" % (rec["stream"].get("worker_peak_rss_kb", 0) / 2**20)
    return "| %s | %.1f | %s | %s | %.0f | %.0f | %s | %s | %s |" % (
        label, rec["wall"], " / ".join("%.1f" % s.get(x, 0) for x in
                                      ("load", "partition_u", "refine", "partition_v", "metrics")),
        rss, rec["wall"] * 1e9 / nnz_of(rec),
        s.get("ns_per_nnz", 0), "{:,}".format(int(m["M_max"])), "{:,}".format(int(m["T_max"])),
        "{:,}".format(int(m["T_sum"])))


HEADER = ("| run | whole command (s) | load / U / refine / V / metrics (s) | peak RSS (GiB) "
          "| ns/nnz (whole) | ns/nnz (partition) | M_max | T_max | T_sum |\n"
          "|---|---|---|---|---|---|---|---|---|")


def synthetic(args, res):
    for name in args.sizes:
        data = ensure_data(args.build, name)
        cache = ensure_cache(args.build, data) if has_convert(args.build) else None
        for k in args.ks:
            for t in args.threads:
                key = "%s/k%d/t%d" % (name, k, t)
                log("parsa %s" % key)
                res[key] = partition(args.build, data, k, ["--threads", t], args.reps)
                if cache and k == args.ks[0]:
                    log("parsa %s from the cache" % key)
                    res[key + "/cache"] = partition(args.build, cache, k, ["--threads", t],
                                                    args.reps)
            if not args.no_metis:
                key = "%s/k%d/metis" % (name, k)
                log("metis %s" % key)
                res[key] = partition(args.build, data, k, ["--method", "metis"], 1,
                                     args.metis_seconds, int(args.metis_gib * 2**20))


def rounds(args, res):
    """The two speed floors that compare runs, measured in turn so that both
    sides see the same machine: 100M (k=64, from text) on 2 and 1 threads in
    --rounds interleaved rounds (the order swapped every round), the ratio
    per round and its median; and with 1B in --sizes, 10M runs before and
    after each 1B run (k=64, 2 threads), 1B's ns/nnz against their median.
    On a shared VM whole runs move by a third within minutes (BENCHMARKS.md),
    so one pair of runs does not settle either floor."""
    if args.rounds <= 0:
        return
    if "100M" in args.sizes:
        data = ensure_data(args.build, "100M")
        per = []
        for i in range(args.rounds):
            order = (2, 1) if i % 2 == 0 else (1, 2)
            got = {}
            for t in order:
                log("rounds: 100M, %d thread(s), round %d of %d" % (t, i + 1, args.rounds))
                got[t] = partition(args.build, data, 64, ["--threads", t])
            if all("seconds" in got[t] for t in (1, 2)):
                per.append({"t1": got[1]["wall"], "t2": got[2]["wall"],
                            "ratio": got[1]["wall"] / got[2]["wall"]})
        res["rounds/100M"] = per
    if "1B" in args.sizes and "10M" in args.sizes:
        big, small = ensure_data(args.build, "1B"), ensure_data(args.build, "10M")
        small_walls, big_walls = [], []

        def ns(data, into, times):
            for _ in range(times):
                r = partition(args.build, data, 64, ["--threads", 2])
                if "seconds" in r:
                    into.append(r["wall"] / nnz_of(r))

        n = max(1, args.rounds // 3)
        for i in range(n):
            ns(small, small_walls, 3)
            log("rounds: 1B, 2 threads, %d of %d" % (i + 1, n))
            ns(big, big_walls, 1)
        ns(small, small_walls, 3)
        res["rounds/1B-10M"] = {"ns_1B": [x * 1e9 for x in big_walls],
                                "ns_10M": [x * 1e9 for x in small_walls]}


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return (xs[n // 2] + xs[(n - 1) // 2]) / 2 if n else None


def real(args, res):
    for label, rel, extra in REAL:
        data = os.path.join(SHARED, rel)
        if not os.path.exists(data):
            log("skip %s: %s not found" % (label, data))
            continue
        for k in (16, 64):
            for t in args.threads:
                key = "%s/k%d/t%d" % (label, k, t)
                log("parsa %s" % key)
                res[key] = partition(args.build, data, k, ["--threads", t, *extra], args.reps)
            if not args.no_metis:
                key = "%s/k%d/metis" % (label, k)
                log("metis %s" % key)
                res[key] = partition(args.build, data, k, ["--method", "metis", *extra], 1,
                                     args.metis_seconds, int(args.metis_gib * 2**20))


def stream(args, res):
    name = args.sizes[-1]
    data = ensure_data(args.build, name)
    key = "%s/k64/stream" % name
    log("stream %s" % key)
    res[key] = partition(args.build, data, 64, ["--stream", "--workers", 2,
                                                "--mem-limit", "1G"], 1)


def hosts(args, res):
    cluster = os.path.join(ROOT, "scripts", "netns-cluster.sh")
    if subprocess.run(["bash", cluster, "--name", "scalechk", "check"],
                      capture_output=True).returncode != 0:
        log("skip hosts: no network namespaces here")
        return
    name = "100M" if "100M" in args.sizes else args.sizes[0]
    data = ensure_data(args.build, name)
    parsa = os.path.abspath(os.path.join(args.build, "parsa"))
    for layout in (["--workers", 1, "--servers", 4], ["--workers", 4]):
        tag = "w%d" % layout[1]
        out = os.path.join(WORK, "hosts-" + tag)
        cmd = ["bash", cluster, "--name", "scale", "run", "--hosts", 4, "--link", "1gbit",
               "--timeout", 3600, "--", parsa, "partition", data, "-k", 64, "--mpi",
               *layout, "--random-trials", 1, "--out", out, "-q"]
        log("mpirun over 4 hosts, %s" % tag)
        rc, so, se, wall, _, _ = run(cmd)
        if rc != 0:
            res["%s/hosts/%s" % (name, tag)] = {"error": se.strip()[-500:], "wall": wall}
            continue
        rep = json.load(open(out + ".json"))
        rec = {"wall": wall, "seconds": rep["seconds"], "metrics": rep["metrics"],
               "peak_rss_kb": rep.get("peak_rss_kb"), "dataset": rep["dataset"],
               "traffic": rep.get("parallel", {}).get("traffic")}
        if layout[1] == 1:
            thr = os.path.join(WORK, "threads-" + tag)
            subprocess.run([parsa, "partition", data, "-k", "64", *map(str, layout),
                            "--random-trials", "1", "--out", thr, "-q"], check=True)
            rec["same_as_threads"] = all(
                open(out + ext, "rb").read() == open(thr + ext, "rb").read()
                for ext in (".examples", ".features"))
        res["%s/hosts/%s" % (name, tag)] = rec


def machine(build):
    """What a second thread gives on this machine now (bench/machine.c):
    its JSON figures, or None where the probe is not built."""
    exe = os.path.join(build, "bench", "machine")
    if not os.path.exists(exe):
        return None
    p = subprocess.run([exe, "--json"], capture_output=True, text=True)
    try:
        return json.loads(p.stdout)
    except ValueError:
        return None


def machine_line(m):
    return ("random reads %.2fx, a stream %.2fx on 2 threads against 1"
            % (m["random_2v1"], m["stream_2v1"]) if m else "not measured")


def report(args, res):
    print("\n## Scale (issue 17): `python3 bench/scale.py %s --sizes %s --ks %s --threads %s`"
          % (args.build, ",".join(args.sizes), ",".join(map(str, args.ks)),
             ",".join(map(str, args.threads))))
    print("\n%s; load average at the end: %s\n" % (time.strftime("%Y-%m-%d %H:%M"),
                                                    os.getloadavg()))
    mach = res.get("machine", {})
    print("What a second thread gave the memory system (`bench/machine`, "
          "2.00x = two cores' worth): at the start %s; at the end %s.\n"
          % (machine_line(mach.get("start")), machine_line(mach.get("end"))))
    print(HEADER)
    for key, rec in res.items():
        if key == "machine" or key.startswith("rounds/"):
            continue
        if "/hosts/" in key:
            continue
        print(row(key, rec))
    per = res.get("rounds/100M")
    if per:
        print("\n| 100M, k=64, from text: round | 2 threads (s) | 1 thread (s) | ratio |\n"
              "|---|---|---|---|")
        for i, x in enumerate(per):
            print("| %d | %.1f | %.1f | %.2fx |" % (i + 1, x["t2"], x["t1"], x["ratio"]))
    hosts_rows = [(k, r) for k, r in res.items() if "/hosts/" in k]
    if hosts_rows:
        print("\n| mpirun over 4 emulated hosts (1 Gbit/s) | whole (s) | T_sum | bytes between "
              "workers and servers, remote | same as threads |\n|---|---|---|---|---|")
        for key, rec in hosts_rows:
            if "error" in rec:
                print("| %s | failed: %s | | | |" % (key, rec["error"][-80:]))
                continue
            tr = rec.get("traffic") or {}
            print("| %s | %.1f | %s | %s | %s |" % (
                key, rec["wall"], "{:,}".format(int(rec["metrics"]["T_sum"])),
                "{:,}".format(tr.get("bytes_remote", 0)), rec.get("same_as_threads", "–")))
    floors(args, res)


def floors(args, res):
    print("\nFloors:")

    def ok(label, cond, detail):
        print("- %s: %s (%s)" % (label, "met" if cond else "NOT met", detail))

    r1 = res.get("1B/k64/t2")
    if r1 and "seconds" in r1:
        ok("1B, k=64, 2 threads, from text: whole within 6 min", r1["wall"] <= 360,
           "%.0f s" % r1["wall"])
        ok("1B peak RSS <= 12 GiB", (r1["peak_rss_kb"] or 0) <= 12 * 2**20,
           "%.2f GiB" % ((r1["peak_rss_kb"] or 0) / 2**20))
        c = res.get("1B/k64/t2/cache")
        if c and "seconds" in c:
            ok("1B from the binary cache within 4 min", c["wall"] <= 240, "%.0f s" % c["wall"])
        s = res.get("10M/k64/t2")
        if s and "seconds" in s:
            a, b = r1["wall"] / nnz_of(r1), s["wall"] / nnz_of(s)
            ok("ns/nnz at 1B within 1.5x of 10M (k=64), one run each", a <= 1.5 * b,
               "%.0f vs %.0f ns/nnz" % (a * 1e9, b * 1e9))
    lin = res.get("rounds/1B-10M")
    if lin and lin["ns_1B"] and lin["ns_10M"]:
        a, b = median(lin["ns_1B"]), median(lin["ns_10M"])
        ok("ns/nnz at 1B within 1.5x of 10M (k=64), 10M runs around each 1B run",
           a <= 1.5 * b, "%.0f vs %.0f ns/nnz, %.2fx; 1B %s, 10M %s" % (
               a, b, a / b, " ".join("%.0f" % x for x in lin["ns_1B"]),
               " ".join("%.0f" % x for x in lin["ns_10M"])))
    one, two = res.get("100M/k64/t1"), res.get("100M/k64/t2")
    if one and two and "seconds" in one and "seconds" in two:
        sp = one["wall"] / two["wall"]
        dq = max(abs(two["metrics"][x] / one["metrics"][x] - 1) for x in ("M_max", "T_max", "T_sum"))
        ok("100M: 2 threads >= 1.75x faster than 1", sp >= 1.75,
           "%.2fx; the machine's own: %s" % (
               sp, machine_line(res.get("machine", {}).get("start"))))
        ok("100M: quality of 2 threads within 1% of 1", dq <= 0.01, "%.2f%%" % (dq * 100))
    per = res.get("rounds/100M")
    if per:
        m = median([x["ratio"] for x in per])
        ok("100M: 2 threads >= 1.75x faster than 1, median of %d interleaved rounds" % len(per),
           m >= 1.75, "%.2fx; rounds %s" % (m, ", ".join("%.2f" % x["ratio"] for x in per)))
    for name in ("100M", "1B"):
        p, m = res.get("%s/k64/t2" % name), res.get("%s/k64/metis" % name)
        if p and m and "seconds" in p:
            if "seconds" in m:
                ok("%s: >= 20x faster than METIS with at most its T_max and M_max" % name,
                   m["wall"] >= 20 * p["wall"] and p["metrics"]["T_max"] <= m["metrics"]["T_max"]
                   and p["metrics"]["M_max"] <= m["metrics"]["M_max"],
                   "%.1fx" % (m["wall"] / p["wall"]))
            elif "stopped" in m:
                ok("%s: >= 20x faster than METIS" % name, m["wall"] >= 20 * p["wall"],
                   "METIS stopped (%s) at %.0f s, %.0fx parsa's whole time" % (
                       m["stopped"], m["wall"], m["wall"] / p["wall"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--sizes", default="10M,100M")
    ap.add_argument("--ks", default="64,1024")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5,
                    help="interleaved rounds for the floors that compare runs "
                         "(100M 2 vs 1 thread; 1B vs 10M every 3 rounds); 0: none")
    ap.add_argument("--metis-seconds", type=float, default=1800)
    ap.add_argument("--metis-gib", type=float, default=20)
    ap.add_argument("--no-metis", action="store_true")
    ap.add_argument("--no-real", action="store_true")
    ap.add_argument("--no-stream", action="store_true")
    ap.add_argument("--no-hosts", action="store_true")
    ap.add_argument("--no-synthetic", action="store_true",
                    help="skip the synthetic sizes (run only the other groups)")
    ap.add_argument("--clean", action="store_true", help="remove the generated data and exit")
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.clean:
        shutil.rmtree(WORK, ignore_errors=True)
        return
    args.sizes = [s for s in args.sizes.split(",") if s]
    bad = [s for s in args.sizes if s not in SIZES]
    if bad:
        ap.error("unknown size(s) %s; choose from %s" % (bad, ", ".join(SIZES)))
    args.ks = [int(x) for x in args.ks.split(",")]
    args.threads = [int(x) for x in args.threads.split(",")]
    res = {"machine": {"start": machine(args.build)}}
    try:
        if not args.no_synthetic:
            synthetic(args, res)
            rounds(args, res)
        if not args.no_real:
            real(args, res)
        if not args.no_stream:
            stream(args, res)
        if not args.no_hosts:
            hosts(args, res)
        res["machine"]["end"] = machine(args.build)
    finally:
        os.makedirs(RESULTS, exist_ok=True)
        path = args.json or os.path.join(RESULTS, "scale-%s.json" % time.strftime("%Y%m%d-%H%M%S"))
        with open(path, "w") as f:
            json.dump(res, f, indent=1)
        log("results in %s" % path)
    report(args, res)


if __name__ == "__main__":
    main()
