#!/usr/bin/env python3
"""Integration tests of the `parsa` command line (real binary, real files).

Run from the repository root with PARSA_BIN pointing at the binary (the
test runner sets it).  Datasets from ../shared/data are used when present;
those tests are skipped with a message otherwise.  Ends with the line
"N passed, N failed[, N skipped]".
"""
import json
import os
import shutil
import subprocess

from clitest import (BIN, Skip, check_placement, eval_agrees, finish,  # noqa: F401
                     read_lines, run, same_files, split_lines, test, tmp)

SHARED = os.environ.get("PARSA_SHARED_DATA", "../shared/data")


@test
def test_help():
    for cmd in ([], ["partition"], ["eval"], ["gen"]):
        p = run(*cmd, "--help")
        assert "usage: parsa" in p.stdout, p.stdout
    assert "--blocks" in run("help", "partition").stdout


@test
def test_partition_samples_all_formats():
    for f, extra in (("a9a-sample.svm.gz", []), ("reuters-sample.svm.gz", []),
                     ("facebook-sample.txt.gz", ["--graph", "adjacency"]),
                     ("facebook-sample.txt.gz", ["--graph", "edges"]),
                     ("movielens-sample.csv.gz", [])):
        prefix = tmp("s-" + f.split(".")[0] + (extra[1] if extra else ""))
        p = run("partition", "data/" + f, "-k", 4, "--out", prefix, "-q", *extra)
        rep = check_placement(prefix, 4)
        assert rep["method"] == "parsa" and rep["k"] == 4
        for key in ("load", "partition", "total"):
            assert key in rep["seconds"]
        assert rep["peak_rss_kb"] > 0
        # traffic must beat random even on these small samples; M_max of a
        # few hundred heavy-tailed users at k=4 is not a meaningful test
        assert rep["improvement"]["T_max"] > 20, rep["improvement"]
        assert rep["improvement"]["T_sum"] > 20, rep["improvement"]
        eval_agrees("data/" + f, prefix, rep, extra)


@test
def test_summary_printed():
    p = run("partition", "data/a9a-sample.svm.gz", "-k", 4, "--out", tmp("sum"))
    for word in ("M_max", "T_max", "T_sum", "improvement", "random", "imbalance"):
        assert word in p.stdout, p.stdout


@test
def test_memory_in_the_report():
    # memory.csr_bytes is the CSR (row offsets 8 bytes, column ids 4) and
    # the feature id map (8 bytes a feature); partition measures each
    # phase's peak, and the overall peak is the largest of them
    out = tmp("mem")
    run("partition", "data/reuters-sample.svm.gz", "-k", 8, "--out", out, "-q")
    rep = json.load(open(out + ".json"))
    d, mem = rep["dataset"], rep["memory"]
    assert mem["csr_bytes"] == (d["examples"] + 1) * 8 + d["nonzeros"] * 4 + d["features"] * 8, (mem, d)
    assert abs(mem["peak_per_csr"] - rep["peak_rss_kb"] * 1024 / mem["csr_bytes"]) < 1e-6
    ph = mem["phases_peak_rss_kb"]
    if ph is not None:  # where /proc/self/clear_refs can be written
        assert set(ph) == {"load", "partition_u", "refine", "partition_v", "metrics"}, ph
        assert rep["peak_rss_kb"] >= max(ph.values()), (rep["peak_rss_kb"], ph)
        assert all(v > 0 for v in ph.values()), ph
    p = run("partition", "data/reuters-sample.svm.gz", "-k", 8, "--out", out)
    assert "memory: the dataset" in p.stdout, p.stdout
    ev = json.loads(run("eval", "data/reuters-sample.svm.gz", "--placement", out, "--json").stdout)
    assert ev["memory"]["csr_bytes"] == mem["csr_bytes"] and ev["memory"]["phases_peak_rss_kb"] is None


@test
def test_methods():
    for m in ("random", "greedy", "metis", "parsa"):
        prefix = tmp("m-" + m)
        run("partition", "data/movielens-sample.csv.gz", "-k", 8, "--method", m,
            "--out", prefix, "-q")
        rep = check_placement(prefix, 8)
        assert rep["method"] == m
        eval_agrees("data/movielens-sample.csv.gz", prefix, rep)


@test
def test_deterministic_seed():
    outs = []
    for i, seed in enumerate((7, 7, 8)):
        prefix = tmp("det%d" % i)
        run("partition", "data/a9a-sample.svm.gz", "-k", 16, "--seed", seed,
            "--out", prefix, "-q")
        outs.append((open(prefix + ".examples").read(),
                     open(prefix + ".features").read()))
    assert outs[0] == outs[1], "same seed gave different placements"
    assert outs[0][0] != outs[2][0], "different seeds gave the same placement"


@test
def test_options_rules_blocks():
    for rule in ("min-s", "round-robin"):
        for b, a in ((1, 0), (4, 2), (16, 16)):
            prefix = tmp("r-%s-%d-%d" % (rule, b, a))
            run("partition", "data/reuters-sample.svm.gz", "-k", 5, "--rule", rule,
                "--blocks", b, "--init-blocks", a, "--out", prefix, "-q")
            rep = check_placement(prefix, 5)
            assert rep["params"]["blocks"] == b and rep["params"]["rule"] == rule


@test
def test_blocks_fit_to_data():
    # the automatic blocks are sized to the dataset (parsa_partu_fit_rows)
    # from 32 MiB of CSR: a block's k cost lists within 1/16 of
    # memory.csr_bytes, at least 4096 rows.  8M nonzeros (about 36 MB of
    # CSR) at k=64: floor(csr / (64 * 96)) rows a block; the report says
    # so, the run uses them (the placement of that --blocks), and the
    # lanes stay those of the default blocks (2 from 491,521 examples: 1
    # here).  A small set keeps the default blocks (6 at least).
    f = tmp("fit.svm")
    run("gen", "--examples", 400000, "--features", 100000, "--avg-nnz", 20,
        "--topics", 16, "--seed", 5, "--out", f, "-q")
    auto = tmp("fit-auto")
    run("partition", f, "-k", 64, "--out", auto, "-q")
    rep = check_placement(auto, 64, n_examples=400000)
    csr = rep["memory"]["csr_bytes"]
    assert csr >= 32 << 20, rep["memory"]
    rows = max(4096, csr // (64 * 96))
    blocks = (400000 + rows - 1) // rows
    assert rep["params"]["blocks"] == blocks and rep["params"]["lanes"] == 1, \
        (rep["params"], blocks)
    given = tmp("fit-given")
    # (an explicit count of 16 blocks or more would also bring lanes)
    run("partition", f, "-k", 64, "--blocks", blocks, "--lanes", 1, "--out", given, "-q")
    assert read_lines(auto + ".examples") == read_lines(given + ".examples")
    small = tmp("fit-small")
    run("partition", "data/a9a-sample.svm.gz", "-k", 64, "--out", small, "-q")
    assert json.load(open(small + ".json"))["params"]["blocks"] == 6


@test
def test_large_k():
    prefix = tmp("bigk")
    run("partition", "data/a9a-sample.svm.gz", "-k", 1024, "--out", prefix, "-q")
    check_placement(prefix, 1024)


@test
def test_levels():
    # above k=256 two levels by default (64 x 5 here), --levels 1 the
    # one-level run; both complete and balanced
    two, one = tmp("lv2"), tmp("lv1")
    run("partition", "data/a9a-sample.svm.gz", "-k", 320, "--out", two, "-q")
    assert check_placement(two, 320)["params"]["levels"] == 2
    run("partition", "data/a9a-sample.svm.gz", "-k", 320, "--levels", 1,
        "--out", one, "-q")
    assert check_placement(one, 320)["params"]["levels"] == 1
    run("partition", "data/a9a-sample.svm.gz", "-k", 16, "--out", one, "-q")
    assert check_placement(one, 16)["params"]["levels"] == 1
    p = run("partition", "data/a9a-sample.svm.gz", "-k", 320, "--levels", 2,
            "--workers", 2, "--out", tmp("lvw"), ok=False)
    assert p.returncode == 2 and "--levels 2" in p.stderr, p.stderr


@test
def test_shards():
    d = tmp("shards")
    prefix = tmp("sh")
    run("partition", "data/a9a-sample.svm.gz", "-k", 3, "--out", prefix,
        "--shards", d, "-q")
    parts = [int(x) for x in read_lines(prefix + ".examples")]
    lines = [l for l in read_lines("data/a9a-sample.svm.gz")
             if l.strip() and not l.startswith("#")]
    for i in range(3):
        got = read_lines(os.path.join(d, "part-%d.libsvm" % i))
        want = [l for l, p in zip(lines, parts) if p == i]
        assert got == want, "shard %d differs from the input lines" % i
    owners = dict(l.split() for l in read_lines(prefix + ".features"))
    for i in range(3):
        ids = read_lines(os.path.join(d, "features-%d.txt" % i))
        assert all(owners[x] == str(i) for x in ids)
    total = sum(len(read_lines(os.path.join(d, "features-%d.txt" % i))) for i in range(3))
    assert total == len(owners)


@test
def test_gen_then_partition():
    f = tmp("gen.svm.gz")
    run("gen", "--examples", 3000, "--features", 2000, "--avg-nnz", 12,
        "--topics", 8, "--seed", 3, "--out", f, "-q")
    rows = read_lines(f)
    assert len(rows) == 3000
    prefix = tmp("gen")
    run("partition", f, "-k", 8, "--out", prefix, "-q")
    rep = check_placement(prefix, 8, n_examples=3000)
    assert rep["improvement"]["T_max"] > 20, rep["improvement"]


@test
def test_incremental():
    old, new = split_lines("data/a9a-sample.svm.gz", 4000, tmp("old.svm"), tmp("new.svm"))
    run("partition", old, "-k", 4, "--out", tmp("old"), "-q")
    run("partition", new, "-k", 4, "--out", tmp("inc"), "--init-from",
        tmp("old"), "--init-data", old, "-q")
    rep = check_placement(tmp("inc"), 4)
    assert rep["params"]["incremental"] is True


@test
def test_usage_errors():
    cases = [
        (["partition", "data/a9a-sample.svm.gz"], "-k K is required"),
        (["partition", "data/a9a-sample.svm.gz", "-k", "0"], "-k must be"),
        (["partition", "data/a9a-sample.svm.gz", "-k", "x"], "-k must be"),
        (["partition", "data/a9a-sample.svm.gz", "-k", "2", "--method", "foo"], "unknown --method"),
        (["partition", "data/a9a-sample.svm.gz", "-k", "2", "--bogus"], "unknown option"),
        (["partition", "-k", "2"], "missing DATA"),
        (["partition", "data/a9a-sample.svm.gz", "-k", "2", "--blocks", "2", "--init-blocks", "3"], "--init-blocks"),
        (["eval", "data/a9a-sample.svm.gz"], "--placement"),
        (["gen", "--examples", "10"], "--out"),
        (["frobnicate"], "unknown command"),
    ]
    for args, msg in cases:
        p = run(*args, ok=False)
        assert p.returncode == 2, "%s: exit %d" % (args, p.returncode)
        assert msg in p.stderr, "%s: stderr %r" % (args, p.stderr)


@test
def test_runtime_errors():
    p = run("partition", tmp("does-not-exist.svm"), "-k", 2, ok=False)
    assert p.returncode == 1 and "does-not-exist.svm" in p.stderr, p.stderr
    empty = tmp("empty.svm")
    open(empty, "w").write("# only a comment\n\n")
    p = run("partition", empty, "-k", 2, ok=False)
    assert p.returncode == 1 and "empty dataset" in p.stderr, p.stderr
    bad = tmp("bad.svm")
    open(bad, "w").write("1 1:1 2:1\n-1 3:1 x:2\n")
    p = run("partition", bad, "-k", 2, ok=False)
    assert p.returncode == 1 and "bad.svm:2:" in p.stderr, p.stderr
    # eval with a placement of the wrong size
    run("partition", "data/a9a-sample.svm.gz", "-k", 2, "--out", tmp("ev"), "-q")
    p = run("eval", "data/reuters-sample.svm.gz", "--placement", tmp("ev"), ok=False)
    assert p.returncode == 1 and "ev.examples" in p.stderr, p.stderr


def shared(path):
    full = os.path.join(SHARED, path)
    if not os.path.exists(full):
        raise Skip("shared data not found at %s (set PARSA_SHARED_DATA)" % full)
    return full


@test
def test_shared_libsvm_k16():
    data = shared("libsvm/a9a.train.svm.gz")
    prefix = tmp("a9a")
    run("partition", data, "-k", 16, "--out", prefix, "-q")
    rep = check_placement(prefix, 16, n_examples=32561, n_features=123)
    assert rep["dataset"]["nonzeros"] == 451592
    assert rep["improvement"]["T_max"] > 0
    eval_agrees(data, prefix, rep)


@test
def test_shared_graph_edges():
    data = shared("graphs/wiki-Vote.txt.gz")
    prefix = tmp("wiki")
    run("partition", data, "-k", 16, "--graph", "edges", "--out", prefix, "-q")
    rep = check_placement(prefix, 16, n_examples=100762)
    assert rep["improvement"]["M_max"] > 50, rep["improvement"]
    eval_agrees(data, prefix, rep, ["--graph", "edges"])


@test
def test_shared_pairs():
    data = shared("bipartite/movielens-latest-small_ratings.csv.gz")
    prefix = tmp("ml")
    run("partition", data, "-k", 16, "--out", prefix, "-q")
    rep = check_placement(prefix, 16, n_examples=610, n_features=9724)
    assert rep["dataset"]["nonzeros"] == 100836
    eval_agrees(data, prefix, rep)



@test
def test_refinement_spill_same_placement():
    """Step 1's parts and parked owners go to an unlinked temporary file
    from 64 KiB (part_run.c, "narrow"): the placement is the one of a run
    whose TMPDIR cannot take a file (they stay on the heap), and under
    strace the spilling run opens an O_TMPFILE there."""
    data = tmp("spill-refine.svm")
    run("gen", "--examples", 90000, "--features", 20000, "--avg-nnz", 8,
        "--topics", 16, "--out", data)
    d = tmp("spill-dir")
    os.makedirs(d, exist_ok=True)
    a, b = tmp("spill-file"), tmp("spill-heap")
    env = dict(os.environ, TMPDIR=d)
    strace = shutil.which("strace")
    cmd = [BIN, "partition", data, "-k", "64", "--threads", "1", "-q",
           "--out", a]
    if strace:
        cmd = [strace, "-f", "-qq", "-e", "trace=openat", "-o",
               tmp("spill.trace")] + cmd
        # LeakSanitizer (make check) cannot run under a ptrace tracer
        asan = env.get("ASAN_OPTIONS", "")
        env["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "detect_leaks=0"
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                       env=env)
    assert p.returncode == 0, p.stderr[-2000:]
    if strace:
        trace = open(tmp("spill.trace")).read()
        assert trace.count('"%s", O_RDWR|O_CLOEXEC|O_TMPFILE' % d) >= 1, trace[-3000:]
    assert os.listdir(d) == [], os.listdir(d)
    run("partition", data, "-k", 64, "--threads", 1, "-q", "--out", b,
        env=dict(os.environ, TMPDIR=tmp("no/such/dir")))
    assert same_files(a, b)
    check_placement(a, 64)

finish()
