#!/usr/bin/env python3
"""Integration tests of Algorithm 11 in slices on threads (`parsa
partition --v-slices S --threads T`, parsa/parsa_partv.h).

With S slices the placement is byte for byte the same for 1, 2 and 3
threads; the automatic S is 1 (the serial algorithm) on small data; the
sliced T_max stays close to the serial one; above k=64 (the users' lists)
the same holds.  Run from the repository root with PARSA_BIN pointing at
the binary.  Ends with the line "N passed, N failed".
"""
import json

from clitest import check_placement, eval_agrees, finish, run, same_files, test, tmp


def metric(rep, key):
    return rep["metrics"][key]


GEN = tmp("vslices-gen.svm")
run("gen", "--examples", 20000, "--features", 6000, "--avg-nnz", 12, "--topics", 16,
    "--seed", 5, "--out", GEN)


@test
def test_slices_same_placement_for_every_thread_count():
    for k, S in ((16, 8), (100, 3)):  # k=100: the users' lists
        first = None
        for t in (1, 2, 3):
            prefix = tmp("vs-k%d-t%d" % (k, t))
            run("partition", GEN, "-k", k, "--v-slices", S, "--threads", t,
                "--out", prefix, "-q")
            rep = check_placement(prefix, k, n_examples=20000)
            assert rep["params"]["v_slices"] == S, rep["params"]
            if first is None:
                first = prefix
                eval_agrees(GEN, prefix, rep)
            else:
                assert same_files(first, prefix), (k, S, t)


@test
def test_auto_is_serial_on_small_data_and_slices_stay_close():
    run("partition", GEN, "-k", 16, "--out", tmp("vs-auto"), "-q")
    run("partition", GEN, "-k", 16, "--v-slices", 1, "--out", tmp("vs-one"), "-q")
    run("partition", GEN, "-k", 16, "--v-slices", 8, "--out", tmp("vs-eight"), "-q")
    auto = json.load(open(tmp("vs-auto") + ".json"))
    one = json.load(open(tmp("vs-one") + ".json"))
    eight = json.load(open(tmp("vs-eight") + ".json"))
    assert auto["params"]["v_slices"] == 1, auto["params"]
    assert same_files(tmp("vs-auto"), tmp("vs-one"))
    # the examples' placement is the same: only V differs
    with open(tmp("vs-one") + ".examples", "rb") as a, \
            open(tmp("vs-eight") + ".examples", "rb") as b:
        assert a.read() == b.read()
    assert metric(eight, "M_max") == metric(one, "M_max")
    assert metric(eight, "T_max") <= 1.03 * metric(one, "T_max"), (
        metric(eight, "T_max"), metric(one, "T_max"))


@test
def test_bad_slices_refused():
    for bad in ("0", "-1", "4097", "x"):
        p = run("partition", GEN, "-k", 4, "--v-slices", bad, "--out", tmp("vs-bad"),
                ok=False)
        assert p.returncode == 2 and "v-slices" in p.stderr, p.stderr


finish()
