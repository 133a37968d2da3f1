#!/usr/bin/env python3
"""Integration tests of Algorithm 13 in rounds of lanes on threads
(`parsa partition --lanes L --threads T`, partitioner/part_lanes.h).

With L lanes the placement is byte for byte the same for 1, 2 and 3
threads; the automatic L is 1 (the sequential placement) on small data;
lanes combine with an incremental start and refuse warm-up blocks.  Run
from the repository root with PARSA_BIN pointing at the binary.  Ends with
the line "N passed, N failed".
"""
import json

from clitest import check_placement, eval_agrees, finish, run, same_files, split_lines, test, tmp


def quality(rep):
    return [rep["metrics"][key] for key in ("M_max", "T_max", "T_sum")]


GEN = tmp("lanes-gen.svm")
run("gen", "--examples", 20000, "--features", 6000, "--avg-nnz", 12, "--topics", 16,
    "--seed", 3, "--out", GEN)


@test
def test_lanes_same_placement_for_every_thread_count():
    # 21 blocks in rounds of 4 lanes: the lead block, then 5 rounds, the
    # last one short
    for args in (["-k", 16, "--blocks", 21, "--lanes", 4],
                 ["-k", 70, "--blocks", 12, "--lanes", 3, "--imbalance", 1.0,
                  "--rule", "round-robin"]):
        first = None
        for t in (1, 2, 3):
            prefix = tmp("lanes-t%d" % t)
            run("partition", GEN, *args, "--threads", t, "--out", prefix, "-q")
            k = args[1]
            rep = check_placement(prefix, k, n_examples=20000,
                                  imbalance=1.0 if "1.0" in map(str, args) else 1.03)
            assert rep["params"]["lanes"] == args[args.index("--lanes") + 1], rep["params"]
            assert rep["params"]["threads"] == t, rep["params"]
            if first is None:
                first = prefix
                eval_agrees(GEN, prefix, rep)
            else:
                assert same_files(first, prefix), (args, t)
                first_rep = json.load(open(first + ".json"))
                assert quality(rep) == quality(first_rep)
                for key in ("assigned", "new_bits", "decrements"):
                    assert rep["partition_u"][key] == first_rep["partition_u"][key]
            lanes = args[args.index("--lanes") + 1]
            ls = rep["partition_u"]["lanes"]
            blocks = args[args.index("--blocks") + 1]
            assert ls["lanes"] == lanes and ls["threads"] == min(t, lanes), ls
            assert ls["rounds"] == 1 + (blocks - 1 + lanes - 1) // lanes, ls
            assert 0 <= ls["cpu_span_seconds"] <= ls["cpu_work_seconds"] + 1e-6, ls


@test
def test_lanes_close_to_one_lane():
    run("partition", GEN, "-k", 16, "--blocks", 40, "--lanes", 1, "--out", tmp("l1"), "-q")
    run("partition", GEN, "-k", 16, "--blocks", 40, "--out", tmp("lauto"), "-q")
    one = json.load(open(tmp("l1") + ".json"))
    auto = json.load(open(tmp("lauto") + ".json"))
    # 40 blocks: auto = 4 lanes (8 blocks per lane at least)
    assert auto["params"]["lanes"] == 4, auto["params"]
    assert one["params"]["lanes"] == 1
    for name, a, b in zip(("M_max", "T_max", "T_sum"), quality(auto), quality(one)):
        assert a <= 1.10 * b, "%s: %s with lanes vs %s with one" % (name, a, b)


@test
def test_auto_is_sequential_on_small_data():
    # a small set has fewer than 16 blocks: one lane, the placement of
    # --lanes 1 (the sequential Algorithm 13), whatever the threads
    data = "data/a9a-sample.svm.gz"
    run("partition", data, "-k", 8, "--out", tmp("small-auto"), "--threads", 2, "-q")
    run("partition", data, "-k", 8, "--out", tmp("small-one"), "--lanes", 1, "-q")
    rep = json.load(open(tmp("small-auto") + ".json"))
    assert rep["params"]["lanes"] == 1, rep["params"]
    assert same_files(tmp("small-auto"), tmp("small-one"))
    assert "lanes" not in rep["partition_u"], rep["partition_u"]


@test
def test_lanes_incremental_and_warm_up():
    old, new = split_lines("data/a9a-sample.svm.gz", 4000, tmp("lold.svm"), tmp("lnew.svm"))
    run("partition", old, "-k", 4, "--out", tmp("lold"), "-q")
    for t in (1, 2):
        run("partition", new, "-k", 4, "--blocks", 9, "--lanes", 3, "--threads", t,
            "--out", tmp("linc%d" % t), "--init-from", tmp("lold"), "--init-data", old,
            "-q")
        check_placement(tmp("linc%d" % t), 4)
    assert same_files(tmp("linc1"), tmp("linc2"))
    p = run("partition", new, "-k", 4, "--blocks", 9, "--lanes", 3, "--init-blocks", 2,
            "--out", tmp("lwarm"), "-q", ok=False)
    assert p.returncode != 0 and "sequential" in p.stderr, p.stderr
    # warm-up with auto lanes: one lane
    run("partition", new, "-k", 4, "--blocks", 40, "--init-blocks", 2,
        "--out", tmp("lwarm"), "-q")
    assert json.load(open(tmp("lwarm") + ".json"))["params"]["lanes"] == 1
    p = run("partition", new, "-k", 4, "--lanes", 0, "--out", tmp("l0"), "-q", ok=False)
    assert p.returncode == 2 and "lanes" in p.stderr, p.stderr


finish()
