#!/usr/bin/env python3
"""CLI tests of `parsa partition --objective tmax` (parsa/parsa_tmax.h): on
the bundled samples a valid placement that `parsa eval` agrees with, a T_max
no higher than the default objective's, M_max within its bound, the report's
params and refine.tmax; --max-memory bounds it, --max-tsum its T_sum; a
time limit and --help.
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
def test_tmax_tsum_cap():
    # --max-tsum: the search never ends above the bound the report gives
    # (a factor of its start: the best candidate's), valid and
    # deterministic; without it no bound; it asks for objective tmax
    data = "data/reuters-sample.svm.gz"
    free = part(data, 8, tmp("ts-free"), "--quality", "best", "--objective", "tmax")
    assert free["refine"]["bound_T_sum"] is None and free["params"]["max_tsum"] is None
    for cap in ("1x", "1.02x"):
        a = part(data, 8, tmp("ts-a" + cap), "--quality", "best", "--objective", "tmax",
                 "--max-tsum", cap)
        b = part(data, 8, tmp("ts-b" + cap), "--quality", "best", "--objective", "tmax",
                 "--max-tsum", cap)
        check_placement(tmp("ts-a" + cap), 8)
        eval_agrees(data, tmp("ts-a" + cap), a, [])
        m, r = a["metrics"], a["refine"]
        assert a["params"]["max_tsum"] == cap, a["params"]
        assert r["bound_T_sum"] is not None and m["T_sum"] <= r["bound_T_sum"], (m, r)
        assert r["caps_met"] is True
        assert m["T_max"] <= r["tmax"]["T_max_before"]
        assert open(tmp("ts-a" + cap) + ".examples").read() == \
            open(tmp("ts-b" + cap) + ".examples").read()
    # an absolute bound below any start: held at each start, and said
    lo = part(data, 8, tmp("ts-lo"), "--quality", "best", "--objective", "tmax",
              "--max-tsum", 1)
    assert lo["refine"]["caps_met"] is False, lo["refine"]
    assert lo["metrics"]["T_sum"] <= lo["refine"]["bound_T_sum"], lo
    for args in (["--max-tsum", "1.1x"], ["--objective", "tsum", "--max-tsum", "1.1x"],
                 ["--objective", "tmax", "--max-tsum", "0.5x"],
                 ["--objective", "tmax", "--max-tsum", "x"],
                 ["--stream", "--max-tsum", "1.1x"]):
        p = run("partition", data, "-k", 4, *args, ok=False)
        assert p.returncode == 2 and "parsa:" in p.stderr, (args, p.returncode, p.stderr)


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
