#!/usr/bin/env python3
"""Integration tests of parallel Parsa (`parsa partition --workers/--tau/--mpi`).

Run from the repository root with PARSA_BIN pointing at the binary (the
test runner sets it).  The MPI tests launch the real `mpirun` (loopback TCP,
--oversubscribe, wrapped in `timeout`) and skip with a message when mpirun
is missing or the binary was built without the MPI transport.  Ends with
the line "N passed, N failed[, N skipped]".
"""
import json
import os
import shutil
import subprocess
import time

from clitest import (BIN, MPI_TIMEOUT, MPIRUN, Skip, check_failed_everywhere,  # noqa: F401
                     check_placement, eval_agrees, finish, mpi_env, mpirun,
                     run, same_files, split_lines, test, tmp)

SAMPLES = [("a9a-sample.svm.gz", []), ("reuters-sample.svm.gz", []),
           ("facebook-sample.txt.gz", ["--graph", "edges"]),
           ("facebook-sample.txt.gz", ["--graph", "adjacency"]),
           ("movielens-sample.csv.gz", [])]


def check_parallel_report(rep, transport, workers, ranks):
    par = rep["parallel"]
    assert par["transport"] == transport, par
    assert par["workers"] == workers and par["ranks"] == ranks, par
    for key in ("servers", "tau", "init", "traffic", "staleness",
                "tau_wait_seconds", "iterations"):
        assert key in par, key
    for key in ("bytes_local", "bytes_remote", "messages_local", "messages_remote"):
        assert par["traffic"][key] >= 0
    assert par["iterations"] == rep["params"]["blocks"], par
    assert sum(par["staleness"]) == par["iterations"], par


# ------------------------------------------------------------------ threads

@test
def test_one_worker_equals_sequential_every_tau():
    """--workers 1 writes the sequential placement byte for byte with τ = 1
    and ∞ too: the prefetching worker merges its own pushes into the early
    pull (part_parallel.h, "Prefetch")."""
    for f, extra in SAMPLES:
        for args in (["-k", 16], ["-k", 70, "--blocks", 9, "--seed", 5],
                     ["-k", 7, "--blocks", 6, "--init-blocks", 2]):
            data = "data/" + f
            seq = tmp("pf-seq")
            run("partition", data, *args, *extra, "--out", seq, "-q")
            for tau in ("1", "inf"):
                par = tmp("pf-par")
                run("partition", data, *args, *extra, "--workers", 1,
                    "--tau", tau, "--out", par, "-q")
                assert same_files(seq, par), "%s %s tau %s" % (f, args, tau)


@test
def test_one_worker_with_syncs_equals_sequential():
    """Mid-block syncs with one worker bring nothing in (the pulled masks
    and |S_i| are the worker's own), so --syncs N still writes the
    sequential placement byte for byte, for τ = 0, 1 and ∞: the pushes
    since the last sync, the pulled counters and the prefetch merge of
    every push of a block all add up."""
    for f, extra in SAMPLES:
        for args in (["-k", 16], ["-k", 70, "--blocks", 9, "--seed", 5]):
            data = "data/" + f
            seq = tmp("sy-seq")
            run("partition", data, *args, *extra, "--out", seq, "-q")
            for tau, syncs in (("0", 1), ("1", 3), ("inf", 7)):
                par = tmp("sy-par")
                run("partition", data, *args, *extra, "--workers", 1,
                    "--tau", tau, "--syncs", syncs, "--out", par, "-q")
                assert same_files(seq, par), "%s %s tau %s syncs %s" % (
                    f, args, tau, syncs)
                rep = json.load(open(par + ".json"))
                assert rep["parallel"]["syncs"] == syncs, rep["parallel"]


@test
def test_syncs_default_and_two_workers():
    """Default syncs: 0 with one worker; with W > 1 the least N with
    (W - 1) / (blocks (N + 1)) <= 1/20, at most 4 (part_parallel.h).  Workers
    with syncs keep the balance and agree with parsa eval."""
    data = "data/reuters-sample.svm.gz"
    for w, blocks, want in ((1, 0, 0), (2, 0, 3), (2, 10, 1), (2, 20, 0),
                            (3, 8, 4), (4, 80, 0)):
        prefix = tmp("syd")
        extra = ["--blocks", blocks] if blocks else []
        run("partition", data, "-k", 8, "--workers", w, *extra,
            "--out", prefix, "-q")
        rep = json.load(open(prefix + ".json"))
        assert rep["parallel"]["syncs"] == want, (w, blocks, rep["parallel"])
    for syncs in (1, 5):
        prefix = tmp("sy2")
        run("partition", data, "-k", 8, "--workers", 2, "--tau", "inf",
            "--syncs", syncs, "--out", prefix, "-q")
        rep = check_placement(prefix, 8)
        eval_agrees(data, prefix, rep)


@test
def test_time_limit_in_parallel_runs():
    """--time-limit counts from the start of the parallel partition too: a
    limit no refinement fits in leaves one worker's result at the step-1
    placement (fast's, which one worker gives byte for byte), reported as
    cut; with two workers the cut placement is valid and balanced."""
    data = "data/reuters-sample.svm.gz"
    fast = tmp("tlp-f")
    run("partition", data, "-k", 8, "--workers", 1, "--quality", "fast", "--out", fast, "-q")
    for w in (1, 2):
        prefix = tmp("tlp-%d" % w)
        run("partition", data, "-k", 8, "--workers", w, "--quality", "best",
            "--time-limit", "0.000001", "--out", prefix, "-q")
        rep = check_placement(prefix, 8)
        eval_agrees(data, prefix, rep)
        assert rep["refine"]["time_limited"] is True, rep["refine"]
        assert rep["metrics"]["imbalance"] <= 1.03 + 1e-9, rep["metrics"]
        if w == 1:
            f = json.load(open(fast + ".json"))["metrics"]
            m = rep["metrics"]
            assert m["T_max"] <= f["T_max"] and m["M_max"] <= f["M_max"], (m, f)


@test
def test_two_workers_share_blocks_evenly():
    """The automatic block count is rounded up to a multiple of W."""
    data = "data/a9a-sample.svm.gz"
    for w in (2, 3):
        prefix = tmp("even")
        run("partition", data, "-k", 4, "--workers", w, "--init-sample", 0,
            "--out", prefix, "-q")
        rep = json.load(open(prefix + ".json"))
        assert rep["parallel"]["iterations"] % w == 0, rep["parallel"]
        assert rep["parallel"]["iterations"] >= 6, rep["parallel"]


@test
def test_one_worker_tau0_equals_sequential():
    """--workers 1 --tau 0 writes the same placement, byte for byte."""
    cases = [["-k", 4], ["-k", 8, "--seed", 7], ["-k", 16, "--blocks", 3],
             ["-k", 5, "--blocks", 7, "--seed", 3, "--rule", "round-robin"],
             ["-k", 3, "--blocks", 6, "--init-blocks", 2],
             ["-k", 70, "--blocks", 12, "--init-blocks", 12, "--seed", 11],
             ["-k", 6, "--block-imbalance", "off", "--imbalance", 1.2]]
    n = 0
    for f, extra in SAMPLES:
        for args in cases:
            data = "data/" + f
            seq, par = tmp("eq-seq"), tmp("eq-par")
            run("partition", data, *args, *extra, "--out", seq, "-q")
            run("partition", data, *args, *extra, "--workers", 1, "--tau", 0,
                "--out", par, "-q")
            assert same_files(seq, par), "%s %s: placements differ" % (f, args)
            rep = json.load(open(par + ".json"))
            assert rep["parallel"]["workers"] == 1, rep["parallel"]
            assert rep["parallel"]["init"] in ("none", "warm-up"), rep["parallel"]
            n += 1
    assert n == len(SAMPLES) * len(cases)


@test
def test_one_worker_incremental_equals_sequential():
    old, new = split_lines("data/a9a-sample.svm.gz", 4000, tmp("old.svm"), tmp("new.svm"))
    run("partition", old, "-k", 4, "--out", tmp("old"), "-q")
    for name, extra in (("inc-seq", []), ("inc-par", ["--workers", 1, "--tau", 0])):
        run("partition", new, "-k", 4, "--out", tmp(name), "--init-from",
            tmp("old"), "--init-data", old, "-q", *extra)
    assert same_files(tmp("inc-seq"), tmp("inc-par"))


def quality(rep):
    return [rep["metrics"][key] for key in ("M_max", "T_max", "T_sum")]


@test
def test_two_workers_complete_balanced_close_to_sequential():
    data = "data/a9a-sample.svm.gz"
    run("partition", data, "-k", 8, "--out", tmp("q-seq"), "-q")
    seq = quality(json.load(open(tmp("q-seq") + ".json")))
    for tau in ("0", "inf"):
        prefix = tmp("q-par-" + tau)
        p = run("partition", data, "-k", 8, "--workers", 2, "--tau", tau,
                "--out", prefix)
        assert "parallel: threads, 2 workers" in p.stdout, p.stdout
        rep = check_placement(prefix, 8)
        check_parallel_report(rep, "threads", 2, 1)
        assert rep["parallel"]["tau"] == (0 if tau == "0" else "inf")
        assert rep["parallel"]["init"] == "sample", rep["parallel"]
        for name, a, b in zip(("M_max", "T_max", "T_sum"), quality(rep), seq):
            assert a <= 1.10 * b, "tau %s: %s %s vs sequential %s" % (tau, name, a, b)
        eval_agrees(data, prefix, rep)


@test
def test_kept_sample_and_caps():
    """The global-initialization sample keeps its parts and the workers
    place the rest under caps that leave room for it: with a tight balance
    (imbalance 1) and no refinement, every sample size from one example to
    all of them gives a complete placement within the cap; the report
    counts every example as placed once (the sample's and the blocks')."""
    data = "data/reuters-sample.svm.gz"
    for k, w, f in ((7, 2, 0.0005), (7, 2, 0.3), (16, 3, 0.9), (5, 2, 1),
                    (3, 4, 0.05)):
        prefix = tmp("keep")
        run("partition", data, "-k", k, "--workers", w, "--init-sample", f,
            "--imbalance", 1, "--refine", 0, "--refine-passes", 0,
            "--out", prefix, "-q")
        rep = check_placement(prefix, k, imbalance=1.0)
        n = rep["dataset"]["examples"]
        par = rep["parallel"]
        assert par["init"] == "sample" and par["init_rows"] == max(1, round(f * n)), par
        assert rep["partition_u"]["assigned"] == n, rep["partition_u"]
        eval_agrees(data, prefix, rep)


@test
def test_many_workers_and_options():
    data = "data/reuters-sample.svm.gz"
    for args in (["-k", 1, "--workers", 2], ["-k", 9, "--workers", 4, "--blocks", 3],
                 ["-k", 13, "--workers", 3, "--servers", 5, "--imbalance", 1,
                  "--blocks", 10, "--tau", 2],
                 ["-k", 65, "--workers", 2, "--blocks", 4, "--init-blocks", 2],
                 ["-k", 8, "--workers", 3, "--init-sample", 1],
                 ["-k", 300, "--workers", 2, "--rule", "round-robin"]):
        prefix = tmp("many")
        run("partition", data, *args, "--out", prefix, "-q")
        k = int(args[1])
        imb = 1.0 if "--imbalance" in args else 1.03
        rep = check_placement(prefix, k, imbalance=imb)
        eval_agrees(data, prefix, rep)


@test
def test_parallel_usage_errors():
    data = "data/a9a-sample.svm.gz"
    cases = [
        (["--workers", "0"], "--workers"),
        (["--workers", "x"], "--workers"),
        (["--tau", "-3"], "--tau"),
        (["--tau", "soon"], "--tau"),
        (["--init-sample", "2"], "--init-sample"),
        (["--syncs", "65"], "--syncs"),
        (["--syncs", "-1"], "--syncs"),
        (["--stream", "--syncs", "1"], "--syncs"),
        (["--workers", "2", "--method", "greedy"], "need --method parsa"),
        (["--workers", "2", "--init-blocks", "1", "--init-sample", "0.1"],
         "alternatives"),
    ]
    for extra, msg in cases:
        p = run("partition", data, "-k", 2, *extra, ok=False)
        assert p.returncode == 2, "%s: exit %d" % (extra, p.returncode)
        assert msg in p.stderr, "%s: stderr %r" % (extra, p.stderr)
    help_text = run("partition", "--help").stdout
    for word in ("--workers", "--tau", "--mpi", "--init-sample", "--servers",
                 "--syncs"):
        assert word in help_text, word


@test
def test_threads_malformed_message_fails_cleanly():
    env = dict(os.environ, PARSA_TEST_GARBAGE_RANK="0")
    p = run("partition", "data/a9a-sample.svm.gz", "-k", 4, "--workers", 2,
            "--out", tmp("garbage"), "-q", ok=False, env=env)
    assert p.returncode == 1, p.returncode
    assert "malformed message" in p.stderr, p.stderr
    assert not os.path.exists(tmp("garbage") + ".examples")


@test
def test_unwritable_output_fails_before_the_run():
    p = run("partition", "data/a9a-sample.svm.gz", "-k", 4, "--workers", 2,
            "--out", tmp("no/such/dir/x"), "-q", ok=False)
    # checked before the data is read (part_out_check), naming the directory
    assert p.returncode == 1 and "no/such/dir: No such file or directory" \
        in p.stderr, p.stderr


CPU_WARNING = "runs 2 workers on 1 CPU (its affinity mask)"


@test
def test_more_workers_than_cpus_warns():
    """A process bound to one CPU (taskset) running 2 workers says so on
    stderr and still completes; with one worker, or with room, it is
    silent."""
    if not shutil.which("taskset"):
        raise Skip("taskset not found")
    data = "data/a9a-sample.svm.gz"
    cpu = str(min(os.sched_getaffinity(0)))

    def bound(workers, out):
        return subprocess.run(["taskset", "-c", cpu, BIN, "partition", data,
                               "-k", "4", "--workers", str(workers), "-q",
                               "--out", tmp(out)],
                              capture_output=True, text=True, timeout=600)

    p = bound(2, "cpu-w2")
    assert p.returncode == 0, p.stderr
    assert "this process " + CPU_WARNING in p.stderr, p.stderr
    assert "--bind-to none" in p.stderr, p.stderr
    check_placement(tmp("cpu-w2"), 4)
    p = bound(1, "cpu-w1")
    assert p.returncode == 0 and "warning" not in p.stderr, p.stderr
    if len(os.sched_getaffinity(0)) >= 2:
        p = run("partition", data, "-k", 4, "--workers", 2, "-q",
                "--out", tmp("cpu-free"))
        assert "warning" not in p.stderr, p.stderr
    if len(os.sched_getaffinity(0)) == os.cpu_count():
        # not bound: more workers than cores is the user's choice
        p = run("partition", data, "-k", 4, "--workers", 2 * os.cpu_count(),
                "-q", "--out", tmp("cpu-over"))
        assert "warning" not in p.stderr, p.stderr


# ---------------------------------------------------------------------- MPI

def check_mpi_run(np):
    data = "data/a9a-sample.svm.gz"
    prefix = tmp("mpi%d" % np)
    p = mpirun(np, "partition", data, "-k", 8, "--mpi", "--out", prefix)
    assert p.returncode == 0, "exit %d: %s%s" % (p.returncode, p.stdout, p.stderr)
    assert p.stdout.count("method parsa, k=8") == 1, p.stdout  # rank 0 only
    assert "parallel: mpi, %d workers" % np in p.stdout, p.stdout
    rep = check_placement(prefix, 8)
    check_parallel_report(rep, "mpi", np, np)
    assert rep["parallel"]["traffic"]["bytes_remote"] > 0, rep["parallel"]
    eval_agrees(data, prefix, rep)
    run("partition", data, "-k", 8, "--out", tmp("mpi-seq"), "-q")
    seq = quality(json.load(open(tmp("mpi-seq") + ".json")))
    for name, a, b in zip(("M_max", "T_max", "T_sum"), quality(rep), seq):
        assert a <= 1.10 * b, "%s %s vs sequential %s" % (name, a, b)


@test
def test_mpi_2_ranks():
    check_mpi_run(2)


@test
def test_mpi_3_ranks_oversubscribed():
    check_mpi_run(3)


@test
def test_mpi_one_worker_tau0_equals_sequential():
    data = "data/movielens-sample.csv.gz"
    run("partition", data, "-k", 5, "--blocks", 4, "--out", tmp("m1-seq"), "-q")
    for tau, syncs in (("0", "0"), ("inf", "0"), ("1", "3")):
        p = mpirun(2, "partition", data, "-k", 5, "--blocks", 4, "--mpi",
                   "--workers", 1, "--tau", tau, "--syncs", syncs,
                   "--out", tmp("m1-par"), "-q")
        assert p.returncode == 0, p.stderr
        assert same_files(tmp("m1-seq"), tmp("m1-par")), "tau %s syncs %s" % (
            tau, syncs)


@test
def test_mpi_rank_bound_to_one_core_warns():
    """mpirun -np 1 --bind-to core with 2 workers: rank 0 warns that its
    workers share one core; --bind-to none (2+ CPUs here) does not."""
    data = "data/a9a-sample.svm.gz"
    p = mpirun(1, "partition", data, "-k", 4, "--workers", 2, "--mpi", "-q",
               "--out", tmp("mpi-bound"), opts=("--bind-to", "core"))
    assert p.returncode == 0, p.stderr
    assert "rank 0 " + CPU_WARNING in p.stderr, p.stderr
    check_placement(tmp("mpi-bound"), 4)
    if len(os.sched_getaffinity(0)) >= 2:
        p = mpirun(1, "partition", data, "-k", 4, "--workers", 2, "--mpi",
                   "-q", "--out", tmp("mpi-unbound"),
                   opts=("--bind-to", "none"))
        assert p.returncode == 0, p.stderr
        assert "warning" not in p.stderr, p.stderr


@test
def test_mpi_rank_dies():
    prefix = tmp("mpi-die")
    p = mpirun(3, "partition", "data/a9a-sample.svm.gz", "-k", 8, "--mpi",
               "--out", prefix, "-q", env={"PARSA_TEST_DIE_RANK": "1"})
    check_failed_everywhere(p, 3, 1, ["rank 1: dying on purpose"])
    assert not os.path.exists(prefix + ".examples")


@test
def test_mpi_malformed_message():
    prefix = tmp("mpi-garbage")
    p = mpirun(2, "partition", "data/a9a-sample.svm.gz", "-k", 8, "--mpi",
               "--out", prefix, "-q", env={"PARSA_TEST_GARBAGE_RANK": "1"})
    check_failed_everywhere(p, 2, -1, ["malformed message"])
    assert not os.path.exists(prefix + ".examples")


# ------------------------------------------- consistency models (ssp, bsp)

@test
def test_consistency_one_worker_equals_sequential():
    """With one worker bsp and ssp:S read exactly the server's state after
    every earlier push, as the sequential run does: same files."""
    for f, extra in SAMPLES[:3]:
        data = "data/" + f
        seq = tmp("cs-seq")
        run("partition", data, "-k", 16, *extra, "--out", seq, "-q")
        for cons in ("bsp", "ssp:1", "ssp:4", "tau:0"):
            par = tmp("cs-par")
            run("partition", data, "-k", 16, *extra, "--workers", 1,
                "--consistency", cons, "--out", par, "-q")
            assert same_files(seq, par), "%s %s" % (f, cons)
            rep = json.load(open(par + ".json"))
            assert rep["parallel"]["consistency"] == cons, rep["parallel"]


@test
def test_consistency_ssp_two_workers_and_errors():
    data = "data/reuters-sample.svm.gz"
    for cons, bound in (("bsp", 0), ("ssp:2", 2)):
        prefix = tmp("cs2")
        run("partition", data, "-k", 8, "--workers", 2, "--consistency",
            cons, "--out", prefix, "-q")
        rep = check_placement(prefix, 8)
        par = rep["parallel"]
        assert par["consistency"] == cons, par
        hist = par["read_staleness"]
        assert hist and len(hist) <= bound + 1, hist
        eval_agrees(data, prefix, rep)
    p = run("partition", data, "-k", 8, "--workers", 2, "--consistency",
            "essp:1", "--out", tmp("cs3"), ok=False)
    assert p.returncode != 0 and "essp" in p.stderr, p.stderr
    p = run("partition", data, "-k", 8, "--workers", 2, "--consistency",
            "ssp:1", "--stream", "--out", tmp("cs3"), ok=False)
    assert p.returncode != 0 and "stream" in p.stderr, p.stderr
    p = run("partition", data, "-k", 8, "--workers", 2, "--consistency",
            "fast", "--out", tmp("cs3"), ok=False)
    assert p.returncode != 0 and "consistency" in p.stderr, p.stderr
    # tau:T is --tau T
    run("partition", data, "-k", 8, "--workers", 2, "--consistency", "tau:0",
        "--out", tmp("cs4"), "-q")
    rep = json.load(open(tmp("cs4") + ".json"))
    assert rep["parallel"]["tau"] == 0 and rep["parallel"]["consistency"] == "tau:0"


@test
def test_mpi_consistency_ssp():
    data = "data/a9a-sample.svm.gz"
    prefix = tmp("mpi-ssp")
    p = mpirun(2, "partition", data, "-k", 8, "--mpi", "--consistency",
               "ssp:1", "--out", prefix, "-q")
    assert p.returncode == 0, "exit %d: %s" % (p.returncode, p.stderr)
    rep = check_placement(prefix, 8)
    assert rep["parallel"]["consistency"] == "ssp:1"
    assert len(rep["parallel"]["read_staleness"]) <= 2
    run("partition", data, "-k", 8, "--out", tmp("mpi-ssp-seq"), "-q")
    p = mpirun(2, "partition", data, "-k", 8, "--mpi", "--workers", 1,
               "--consistency", "bsp", "--out", tmp("mpi-bsp1"), "-q")
    assert p.returncode == 0, p.stderr
    assert same_files(tmp("mpi-ssp-seq"), tmp("mpi-bsp1"))


finish()
