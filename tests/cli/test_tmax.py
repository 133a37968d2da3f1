#!/usr/bin/env python3
"""CLI tests of `parsa partition --objective tmax` (parsa/parsa_tmax.h): on
the bundled samples a valid placement that `parsa eval` agrees with, a T_max
no higher than the default objective's, M_max within its bound, the report's
params and refine.tmax; --max-memory bounds it; a time limit and --help.
Ends with "N passed, N failed[, N skipped]"."""
from clitest import SAMPLES, check_placement, eval_agrees, finish, part, run, test, tmp


@test
def test_tmax_on_samples():
    for name, mode in SAMPLES:
        data = "data/" + name
        for quality in ("default", "best"):
            tag = "%s-%s-%s" % (name, "".join(mode), quality)
            base = part(data, 8, tmp("d-" + tag), "--quality", quality, *mode)
            prefix = tmp("t-" + tag)
            rep = part(data, 8, prefix, "--quality", quality, "--objective", "tmax", *mode)
            check_placement(prefix, 8)
            eval_agrees(data, prefix, rep, mode)
            m, r = rep["metrics"], rep["refine"]
            assert rep["params"]["objective"] == "tmax", rep["params"]
            assert rep["params"]["max_memory"] is None
            assert m["T_max"] <= base["metrics"]["T_max"], (tag, m, base["metrics"])
            assert m["imbalance"] <= 1.03 + 1e-9, m
            assert m["M_max"] <= r["bound_M_max"], (m, r)
            assert r["bound_M_max"] <= int(2.0 * r["step1_M_max"]), r
            t = r["tmax"]
            assert t["T_max_after"] == m["T_max"] and t["T_max_after"] <= t["T_max_before"], t
            assert t["T_sum_after"] == m["T_sum"], (t, m)
            assert "tmax" not in base["refine"]


@test
def test_tmax_memory_cap_and_determinism():
    data = "data/reuters-sample.svm.gz"
    a = part(data, 8, tmp("cap-a"), "--quality", "best", "--objective", "tmax",
             "--max-memory", "1x")
    b = part(data, 8, tmp("cap-b"), "--quality", "best", "--objective", "tmax",
             "--max-memory", "1x")
    r = a["refine"]
    assert a["params"]["max_memory"] == "1x"
    assert r["bound_M_max"] == r["step1_M_max"] and a["metrics"]["M_max"] <= r["step1_M_max"], r
    assert open(tmp("cap-a") + ".examples").read() == open(tmp("cap-b") + ".examples").read()
    assert open(tmp("cap-a") + ".features").read() == open(tmp("cap-b") + ".features").read()


@test
def test_tmax_time_limit_and_help():
    data = "data/facebook-sample.txt.gz"
    prefix = tmp("tl")
    rep = part(data, 8, prefix, "--quality", "best", "--objective", "tmax",
               "--time-limit", "0.001")
    check_placement(prefix, 8)
    eval_agrees(data, prefix, rep, [])
    assert rep["refine"]["time_limited"] is True
    assert rep["refine"]["tmax"]["stopped"] is True
    assert "tmax" in run("partition", "--help").stdout
    p = run("partition", data, "-k", 4, "--objective", "tmaxx", ok=False)
    assert p.returncode == 2 and "parsa:" in p.stderr


finish()
