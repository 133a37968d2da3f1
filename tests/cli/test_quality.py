#!/usr/bin/env python3
"""CLI tests of `parsa partition --quality fast|default|best` and the
refinement options (--refine-passes, --fm-passes, --flow-passes, --restream, --ml-levels,
--ml-cycles, --ml-chains, --multilevel, --ml-communities, --ml-rb-starts, --param-imbalance, --time-limit,
--guard-slack).  Ends with "N passed, N failed[, N skipped]"."""
import math
import os
import re

from clitest import (SAMPLES, SLOWDOWN, Skip, check_placement, eval_agrees, finish, part,  # noqa: F401
                     read_lines, run, test, tmp)

SHARED = os.environ.get("PARSA_SHARED_DATA", "../shared/data")


@test
def test_help_lists_quality():
    out = run("partition", "--help").stdout
    for opt in ("--quality", "--refine-passes", "--restream", "--ml-levels",
                "--multilevel", "--param-imbalance", "--fm-passes", "--ml-cycles",
                "--ml-chains", "--time-limit", "--threads", "--guard-slack",
                "--objective", "--max-memory", "--max-traffic", "--flow-passes"):
        assert opt in out, opt


@test
def test_presets_in_report():
    data = "data/a9a-sample.svm.gz"
    want = {"fast": 0, "default": None, "best": None}
    for q in want:
        rep = part(data, 4, tmp("p-" + q), "--quality", q)
        assert rep["params"]["quality"] == q, rep["params"]
        if q == "fast":
            assert rep["params"]["refine_passes"] == 0
            assert rep["params"]["multilevel"] is False
        else:
            assert rep["params"]["refine_passes"] > 0
        assert "refine" in rep and "tsum_moves" in rep["refine"]
    assert part(data, 4, tmp("p-d"))["params"]["quality"] == "default"


@test
def test_explicit_options_override_preset():
    data = "data/a9a-sample.svm.gz"
    for args in (["--quality", "best", "--refine-passes", "2"],
                 ["--refine-passes", "2", "--quality", "best"],
                 ["--quality=best", "--refine-passes=2"]):
        rep = part(data, 4, tmp("ov"), *args)
        assert rep["params"]["quality"] == "best"
        assert rep["params"]["refine_passes"] == 2, (args, rep["params"])
        assert rep["params"]["sweeps"] == 16  # from the preset
        assert rep["params"]["fm_passes"] == 2, rep["params"]  # preset too
    rep = part(data, 4, tmp("ov2"), "--quality", "best", "--fm-passes", "0",
               "--ml-chains", "1", "--ml-cycles", "2")
    assert [rep["params"][k] for k in ("fm_passes", "ml_chains", "ml_cycles")] \
        == [0, 1, 2], rep["params"]


@test
def test_bad_values_are_usage_errors():
    for args in (["--quality", "ultra"], ["--refine-passes", "-1"],
                 ["--multilevel", "maybe"], ["--param-imbalance", "0.5"],
                 ["--restream", "x"], ["--fm-passes", "x"], ["--ml-cycles", "-1"],
                 ["--fm-passes", "1001"], ["--ml-chains", "y"],
                 ["--time-limit", "0"], ["--time-limit", "-1"], ["--time-limit", "soon"],
                 ["--time-limit", "nan"], ["--stream", "--time-limit", "1"],
                 ["--threads", "0"], ["--threads", "257"], ["--threads", "two"],
                 ["--guard-slack", "0.9"], ["--guard-slack", "0"], ["--guard-slack", "-1"],
                 ["--guard-slack", "nan"], ["--guard-slack", "lots"],
                 ["--guard-slack", "1e7"], ["--stream", "--guard-slack", "2"]):
        p = run("partition", "data/a9a-sample.svm.gz", "-k", 4, *args, ok=False)
        assert p.returncode == 2, (args, p.returncode)
        assert "parsa:" in p.stderr


@test
def test_quality_never_worse_than_fast_on_samples():
    # the guard: T_max and M_max never above the greedy result's; the
    # refinement never raises T_sum; every placement valid and balanced
    for f, extra in SAMPLES:
        data = "data/" + f
        reps = {}
        for q in ("fast", "default", "best"):
            prefix = tmp("g-%s-%s" % (q, f.split(".")[0] + "".join(extra)))
            reps[q] = part(data, 4, prefix, "--quality", q, *extra)
            check_placement(prefix, 4)
            eval_agrees(data, prefix, reps[q], extra)
        fm = reps["fast"]["metrics"]
        for q in ("default", "best"):
            m = reps[q]["metrics"]
            assert m["T_max"] <= fm["T_max"] and m["M_max"] <= fm["M_max"], (f, q, m, fm)
        assert reps["default"]["metrics"]["T_sum"] <= fm["T_sum"], f


@test
def test_guard_slack_bounds_and_never_worse():
    # --guard-slack X: T_max and M_max at most floor(X times) Algorithm 13's
    # (after the M_max refinement: refine.step1_*), T_sum never above the
    # strict run's (the slack round starts from the strict result); on the
    # sets where the strict bound binds, T_sum strictly lower
    binds = ("reuters-sample.svm.gz", "movielens-sample.csv.gz")
    for f, extra in SAMPLES:
        data = "data/" + f
        tag = f.split(".")[0] + "".join(extra)
        for q in ("default", "best"):
            strict = part(data, 8, tmp("gs-1-%s-%s" % (q, tag)), "--quality", q, *extra)
            assert strict["params"]["guard_slack"] == 1.0, strict["params"]
            r1 = strict["refine"]
            assert strict["metrics"]["M_max"] <= r1["step1_M_max"]
            assert strict["metrics"]["T_max"] <= r1["step1_T_max"]
            for x in ("1.2", "inf"):
                prefix = tmp("gs-%s-%s-%s" % (x, q, tag))
                rep = part(data, 8, prefix, "--quality", q, "--guard-slack", x, *extra)
                check_placement(prefix, 8)
                eval_agrees(data, prefix, rep, extra)
                assert rep["params"]["guard_slack"] == (x if x == "inf" else float(x))
                m, r = rep["metrics"], rep["refine"]
                assert (r["step1_M_max"], r["step1_T_max"]) == \
                    (r1["step1_M_max"], r1["step1_T_max"]), (f, q, x)
                if x != "inf":
                    assert m["M_max"] <= math.floor(float(x) * r["step1_M_max"]), (f, q, x, m, r)
                    assert m["T_max"] <= math.floor(float(x) * r["step1_T_max"]), (f, q, x, m, r)
                assert m["imbalance"] <= 1.03 + 1e-9, (f, q, x, m)
                assert m["T_sum"] <= strict["metrics"]["T_sum"], (f, q, x, m, strict["metrics"])
                if f in binds and x == "inf":
                    assert m["T_sum"] < strict["metrics"]["T_sum"], (f, q, m)
    # the same seed, the same placement
    a = part("data/reuters-sample.svm.gz", 8, tmp("gs-det-a"), "--guard-slack", "1.5")
    b = part("data/reuters-sample.svm.gz", 8, tmp("gs-det-b"), "--guard-slack", "1.5")
    assert read_lines(tmp("gs-det-a") + ".examples") == read_lines(tmp("gs-det-b") + ".examples")
    assert a["metrics"] == b["metrics"]


@test
def test_objective_and_caps():
    # --objective tsum is the slack inf; caps Fx on both are --guard-slack F;
    # an absolute cap binds M_max; one below the step-1 result is held at
    # that (caps_met false); the report names what was asked and the
    # bounds the last round kept
    data = "data/reuters-sample.svm.gz"

    def run_(tag, *extra):
        prefix = tmp("obj-" + tag)
        rep = part(data, 8, prefix, "--quality", "best", *extra)
        check_placement(prefix, 8)
        eval_agrees(data, prefix, rep, [])
        return prefix, rep

    strict_p, strict = run_("strict")
    r1 = strict["refine"]
    assert strict["params"]["objective"] == "default" and strict["params"]["max_memory"] is None
    assert (r1["bound_M_max"], r1["bound_T_max"]) == (r1["step1_M_max"], r1["step1_T_max"])
    assert r1["caps_met"] is True
    inf_p, inf = run_("inf", "--guard-slack", "inf")
    tsum_p, tsum = run_("tsum", "--objective", "tsum")
    assert read_lines(inf_p + ".examples") == read_lines(tsum_p + ".examples")
    assert tsum["params"]["objective"] == "tsum"
    assert tsum["refine"]["bound_M_max"] is None and tsum["refine"]["bound_T_max"] is None
    assert tsum["metrics"]["T_sum"] < strict["metrics"]["T_sum"], (tsum["metrics"], strict["metrics"])
    sl_p, _ = run_("sl", "--guard-slack", "1.2")
    cap_p, cap = run_("cap", "--objective", "tsum", "--max-memory", "1.2x",
                      "--max-traffic", "1.2x")
    assert read_lines(sl_p + ".examples") == read_lines(cap_p + ".examples")
    assert cap["params"]["max_memory"] == "1.2x", cap["params"]
    m, r = cap["metrics"], cap["refine"]
    assert r["bound_M_max"] == math.floor(1.2 * r["step1_M_max"]), r
    assert m["M_max"] <= r["bound_M_max"] and m["T_max"] <= r["bound_T_max"], (m, r)
    assert m["T_sum"] <= strict["metrics"]["T_sum"]
    # an absolute cap between the step-1 M_max and tsum's unbounded one
    mid = (r1["step1_M_max"] + tsum["metrics"]["M_max"]) // 2
    assert r1["step1_M_max"] < mid < tsum["metrics"]["M_max"], (r1, tsum["metrics"])
    _, ab = run_("abs", "--objective", "tsum", "--max-memory", mid)
    assert ab["params"]["max_memory"] == mid, ab["params"]
    assert ab["metrics"]["M_max"] <= mid and ab["refine"]["bound_M_max"] == mid
    assert ab["refine"]["bound_T_max"] is None and ab["refine"]["caps_met"] is True
    # below the step-1 result: held there, and said
    _, lo = run_("lo", "--objective", "tsum", "--max-memory", 10, "--max-traffic", "inf")
    assert lo["refine"]["caps_met"] is False and lo["refine"]["bound_M_max"] == r1["step1_M_max"]
    assert lo["metrics"]["M_max"] <= r1["step1_M_max"]
    for args in (["--objective", "tmin"], ["--max-memory", "0.5x"], ["--max-memory", "0"],
                 ["--max-memory", "-3"], ["--max-memory", "1.2y"], ["--max-memory", ""],
                 ["--max-traffic", "x"], ["--max-traffic", "nanx"], ["--max-traffic", "1e30"],
                 ["--stream", "--objective", "tsum"], ["--stream", "--max-memory", "2x"]):
        p = run("partition", data, "-k", 4, *args, ok=False)
        assert p.returncode == 2 and "parsa:" in p.stderr, (args, p.returncode, p.stderr)


@test
def test_time_limit_keeps_the_guard_and_reports_the_cut():
    # a limit too short for any refinement: the step-1 result (fast's),
    # reported as cut; a long one: not reported, and best's guard holds
    data = "data/reuters-sample.svm.gz"
    fast = part(data, 8, tmp("tl-f"), "--quality", "fast")
    for limit, cut in (("0.000001", True), ("1000", False)):
        prefix = tmp("tl-" + limit)
        rep = part(data, 8, prefix, "--quality", "best", "--time-limit", limit)
        check_placement(prefix, 8)
        eval_agrees(data, prefix, rep, [])
        assert rep["params"]["time_limit"] == float(limit), rep["params"]
        assert rep["refine"]["time_limited"] is cut, rep["refine"]
        m, f = rep["metrics"], fast["metrics"]
        assert m["T_max"] <= f["T_max"] and m["M_max"] <= f["M_max"], (limit, m, f)
        assert m["T_sum"] <= f["T_sum"], (limit, m, f)
        assert m["imbalance"] <= 1.03 + 1e-9
    assert part(data, 8, tmp("tl-none"))["params"]["time_limit"] is None
    out = run("partition", data, "-k", 8, "--quality", "best", "--time-limit", "1e-6",
              "--out", tmp("tl-text")).stdout
    assert "refinement stopped at the time limit" in out, out


def bar_text(args):
    # the stderr of `parsa ARGS` on a terminal (a pty), and its status
    import pty
    import subprocess
    from clitest import BIN
    master, slave = pty.openpty()
    p = subprocess.run([BIN] + [str(a) for a in args], stdout=subprocess.DEVNULL,
                       stderr=slave, timeout=600)
    os.close(slave)
    text = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        text += chunk
    os.close(master)
    return p.returncode, text.decode("utf-8", "replace")


@test
def test_progress_bar_shows_the_refinement():
    # on a terminal the bar goes on through the refinement ("refining"),
    # not only through Algorithm 13; never on a pipe
    data = "data/reuters-sample.svm.gz"
    out = tmp("bar")
    rc, text = bar_text(["partition", data, "-k", "8", "--quality", "best", "--out", out])
    assert rc == 0
    assert "partitioning" in text and "refining" in text, text[-400:]
    p = run("partition", data, "-k", 8, "--quality", "best", "--out", out)
    assert "refining" not in p.stderr, p.stderr


@test
def test_progress_bar_moves_through_every_phase():
    # default on 300k examples (chunked sweeps): the refinement's bar moves
    # with the sweeps' chunks (intermediate percentages, not 0 then 100%),
    # Algorithm 11, the metrics and the writing of the files show their
    # names, and a bar shows an ETA once its phase has run long enough
    data = tmp("bar-gen.svm")
    run("gen", "--examples", 300000, "--features", 50000, "--avg-nnz", 12,
        "--topics", 16, "--seed", 3, "--out", data)
    rc, text = bar_text(["partition", data, "-k", 16, "--threads", 1,
                         "--random-trials", 1, "--out", tmp("bar-gen")])
    assert rc == 0, text[-400:]
    lines = [l.strip() for l in text.replace("\r", "\n").split("\n") if l.strip()]
    refining = [l for l in lines if l.startswith("refining")]
    pcts = set()
    for l in refining:
        m = re.search(r"\]\s+([0-9.]+)%", l)
        if m:
            pcts.add(float(m.group(1)))
    # (the bar redraws at most 10 times a second: one value between is
    # the sweeps' own progress; before, the step went from 0 to 100%)
    assert any(0 < x < 100 for x in pcts), refining[:20]
    for name in ("reading", "partitioning", "placing features", "measuring", "writing"):
        assert any(l.startswith(name) for l in lines), (name, lines[-30:])
    # the metrics' bar: a step as each of their tasks ends (the
    # placement's, the random trial's)
    assert any(l.startswith("measuring") and "50.0%" in l for l in lines), lines[-30:]
    # ETA: on a bar whose phase has run for a second with 2% to 98% done
    for l in lines:
        m = re.search(r"\]\s+([0-9.]+)%\s+([0-9.]+)s", l)
        if m and 2.0 <= float(m.group(1)) < 98.0 and float(m.group(2)) >= 1.0:
            assert "ETA" in l, l
    # never on a pipe
    p = run("partition", data, "-k", 16, "--random-trials", 1, "--out", tmp("bar-gen"))
    assert "refining" not in p.stderr and "ETA" not in p.stderr, p.stderr


@test
def test_time_limit_bounds_best_on_shared_data():
    # gowalla: best's refinement takes seconds; with --time-limit 1 the
    # whole partition ends close to 1 s (Algorithm 11 and one checkpoint's
    # work after it: slack for the sanitizer builds) and is still better
    # than default
    data = os.path.join(SHARED, "bipartite/gowalla_lightgcn.tsv.gz")
    if not os.path.exists(data):
        raise Skip("shared data not found")
    # the limit scales with the build's slowdown: under a sanitizer, or on
    # a loaded machine, 0.5 s may not even finish default's sweeps (best
    # takes about 2 s here in the release build, 6 s under ASan)
    limit = 1.0 if SLOWDOWN == 1 else 2.0
    d = part(data, 16, tmp("tl-gd"), "--random-trials", 1)
    rep = part(data, 16, tmp("tl-gb"), "--quality", "best", "--time-limit", limit,
               "--random-trials", 1)
    assert rep["refine"]["time_limited"] is True, rep["refine"]
    s = rep["seconds"]
    assert s["partition"] < limit + 0.25 * SLOWDOWN + 2 * s["partition_u"], s
    assert rep["metrics"]["T_sum"] < d["metrics"]["T_sum"], (rep["metrics"], d["metrics"])


@test
def test_best_deterministic():
    data = "data/reuters-sample.svm.gz"
    a, b = tmp("det-a"), tmp("det-b")
    part(data, 8, a, "--quality", "best", "--seed", 3)
    part(data, 8, b, "--quality", "best", "--seed", 3)
    for ext in (".examples", ".features"):
        assert read_lines(a + ext) == read_lines(b + ext), ext


@test
def test_best_same_for_every_thread_count():
    """best's chains of V-cycles and its multilevel candidate run on
    --threads threads: the placement and the report's refinement figures
    are the same for 1, 2 and 3 threads, with more chains than threads
    (rounds) too, and on a sample where the multilevel candidate wins."""
    cases = [("reuters-sample.svm.gz", 8, []),
             ("reuters-sample.svm.gz", 5, ["--ml-chains", 5, "--ml-cycles", 2]),
             ("a9a-sample.svm.gz", 4, ["--ml-chains", 1]),
             ("facebook-sample.txt.gz", 16, ["--graph", "edges"]),
             ("movielens-sample.csv.gz", 8, ["--seed", 5])]
    kept = 0
    for f, k, extra in cases:
        reps = []
        for t in (1, 2, 3):
            prefix = tmp("thr-%d" % t)
            reps.append(part("data/" + f, k, prefix, "--quality", "best",
                             "--threads", t, *extra))
            assert reps[-1]["params"]["threads"] == t, reps[-1]["params"]
            if t == 1:
                base = [read_lines(prefix + e) for e in (".examples", ".features")]
            else:
                assert [read_lines(prefix + e) for e in (".examples", ".features")] \
                    == base, (f, k, extra, t)
                assert reps[-1]["refine"] == reps[0]["refine"], (reps[-1]["refine"], reps[0]["refine"])
        kept += reps[0]["refine"]["multilevel_kept"]
        assert reps[0]["refine"]["conn_after"] * 2 == reps[0]["metrics"]["T_sum"], reps[0]
    assert kept >= 1, "no case keeps the multilevel candidate"


@test
def test_chunked_sweeps_same_for_every_thread_count():
    # from PARSA_FM_CHUNK_MIN_ROWS (262144) examples on, the T_sum sweeps
    # evaluate chunks of moves on --threads threads: the placement must be
    # the same for 1, 2 and 3 threads, valid and never worse than fast
    data = tmp("chunked.svm")
    run("gen", "--examples", 270000, "--features", 40000, "--avg-nnz", 4,
        "--topics", 16, "--out", data, "-q")
    fast = part(data, 8, tmp("ch-fast"), "--quality", "fast", "--random-trials", 1)
    seen = []
    for t in (1, 2, 3):
        prefix = tmp("ch-%d" % t)
        rep = part(data, 8, prefix, "--threads", t, "--random-trials", 1)
        seen.append(read_lines(prefix + ".examples"))
        assert rep["refine"]["tsum_moves"] > 0, rep["refine"]
        m, f = rep["metrics"], fast["metrics"]
        assert m["T_sum"] < f["T_sum"] and m["M_max"] <= f["M_max"], (m, f)
        assert m["T_max"] <= f["T_max"] and m["imbalance"] <= 1.03 + 1e-9, (m, f)
    check_placement(prefix, 8)
    assert seen[0] == seen[1] == seen[2]


@test
def test_param_imbalance_caps_features_per_server():
    data = "data/movielens-sample.csv.gz"
    k, x = 4, 1.05
    prefix = tmp("pcap")
    rep = part(data, k, prefix, "--param-imbalance", x)
    assert rep["params"]["param_imbalance"] == x
    feats = [int(l.split()[1]) for l in read_lines(prefix + ".features")]
    counts = [feats.count(i) for i in range(k)]
    cap = max(math.ceil(x * len(feats) / k), math.ceil(len(feats) / k))
    assert max(counts) <= cap, (counts, cap)
    eval_agrees(data, prefix, rep)


@test
def test_options_restream_and_levels_run():
    data = "data/facebook-sample.txt.gz"
    fast = part(data, 4, tmp("rs-f"), "--quality", "fast")
    rep = part(data, 4, tmp("rs"), "--restream", 2, "--ml-levels", 4,
               "--refine-passes", 8)
    check_placement(tmp("rs"), 4)
    assert rep["params"]["restream"] == 2 and rep["params"]["ml_levels"] == 4
    assert rep["metrics"]["T_max"] <= fast["metrics"]["T_max"]
    assert rep["metrics"]["M_max"] <= fast["metrics"]["M_max"]


@test
def test_fm_passes_keep_the_guard_and_lower_tsum():
    # k-way FM on top of the sweeps: T_sum no higher, T_max and M_max not
    # above fast's (the guard), a valid placement that eval agrees with
    for f, extra in SAMPLES:
        data = "data/" + f
        tag = f.split(".")[0] + "".join(extra)
        fast = part(data, 4, tmp("fm-f-" + tag), "--quality", "fast", *extra)
        d = part(data, 4, tmp("fm-d-" + tag), *extra)
        prefix = tmp("fm-" + tag)
        rep = part(data, 4, prefix, "--fm-passes", 3, *extra)
        check_placement(prefix, 4)
        eval_agrees(data, prefix, rep, extra)
        m = rep["metrics"]
        assert m["T_sum"] <= d["metrics"]["T_sum"], (f, m, d["metrics"])
        assert m["T_max"] <= fast["metrics"]["T_max"] and m["M_max"] <= fast["metrics"]["M_max"], f
        assert m["imbalance"] <= 1.03 + 1e-9


@test
def test_flow_passes_keep_the_guard_lower_tsum_and_repeat():
    # the flow refinement after the k-way FM: T_sum no higher than without
    # it, T_max and M_max not above fast's (the guard), a valid placement
    # eval agrees with, the same placement twice; with --objective tsum
    # too (no guard: only the balance cap)
    for f, extra in SAMPLES:
        data = "data/" + f
        tag = f.split(".")[0] + "".join(extra)
        fast = part(data, 4, tmp("fl-f-" + tag), "--quality", "fast", *extra)
        for obj in ("default", "tsum"):
            base = part(data, 4, tmp("fl-b-" + tag), "--fm-passes", 2,
                        "--objective", obj, *extra)
            prefix, again = tmp("fl-" + tag), tmp("fl-a-" + tag)
            args = ("--fm-passes", 2, "--flow-passes", 2, "--objective", obj)
            rep = part(data, 4, prefix, *args, *extra)
            part(data, 4, again, *args, *extra)
            assert rep["params"]["flow_passes"] == 2
            check_placement(prefix, 4)
            eval_agrees(data, prefix, rep, extra)
            assert read_lines(prefix + ".examples") == read_lines(again + ".examples"), f
            m = rep["metrics"]
            assert m["T_sum"] <= base["metrics"]["T_sum"], (f, obj, m, base["metrics"])
            if obj == "default":
                assert m["T_max"] <= fast["metrics"]["T_max"], f
                assert m["M_max"] <= fast["metrics"]["M_max"], f
            assert m["imbalance"] <= 1.03 + 1e-9


def same_on_1_to_3_threads(data, k, tag, extra, *args):
    """`--quality best --objective tsum` with args on 1, 2 and 3 threads:
    the same placement each time, valid, eval agrees, balanced.  Returns
    the first report."""
    base = first = None
    for t in (1, 2, 3):
        prefix = tmp("%s-%d" % (tag, t))
        rep = part(data, k, prefix, "--quality", "best", "--objective", "tsum", *args,
                   "--threads", t, *extra)
        got = [read_lines(prefix + e) for e in (".examples", ".features")]
        if base is None:
            base, first = got, rep
            check_placement(prefix, k)
            eval_agrees(data, prefix, rep, extra)
            assert rep["metrics"]["imbalance"] <= 1.03 + 1e-9
        else:
            assert got == base, (data, t)
    return first


@test
def test_ml_communities_same_for_every_thread_count_and_time_limit():
    # --ml-communities on (the multilevel candidate's deeper start, its
    # coarsening restricted to Louvain communities): a valid placement
    # eval agrees with, in the report's params, the same for 1, 2 and 3
    # threads; auto is on with --objective tsum and off without; under a
    # time limit too short for any refinement it is still valid, cut and
    # no worse than fast
    for f, k, extra in (("facebook-sample.txt.gz", 16, ["--graph", "edges"]),
                        ("reuters-sample.svm.gz", 8, [])):
        data = "data/" + f
        rep = same_on_1_to_3_threads(data, k, "cm", extra, "--ml-communities", "on")
        assert rep["params"]["ml_communities"] == "on", rep["params"]
        # auto (the default) is the deeper start without communities
        # (deep) with --objective tsum, off otherwise
        auto = part(data, k, tmp("cm-auto"), "--quality", "best", "--objective", "tsum",
                    *extra)
        deep = part(data, k, tmp("cm-deep"), "--quality", "best", "--objective", "tsum",
                    "--ml-communities", "deep", *extra)
        assert auto["params"]["ml_communities"] == "auto", auto["params"]
        assert deep["params"]["ml_communities"] == "deep", deep["params"]
        assert read_lines(tmp("cm-auto") + ".examples") == \
            read_lines(tmp("cm-deep") + ".examples"), f
        assert auto["metrics"] == deep["metrics"]
        plain = part(data, k, tmp("cm-plain"), "--quality", "best", *extra)
        off = part(data, k, tmp("cm-off"), "--quality", "best", "--ml-communities", "off",
                   *extra)
        assert read_lines(tmp("cm-plain") + ".examples") == \
            read_lines(tmp("cm-off") + ".examples"), f
        assert off["params"]["ml_communities"] == "off" and plain["metrics"] == off["metrics"]
        fast = part(data, k, tmp("cm-f"), "--quality", "fast", *extra)
        prefix = tmp("cm-tl")
        rep = part(data, k, prefix, "--quality", "best", "--ml-communities", "on",
                   "--time-limit", "0.000001", *extra)
        check_placement(prefix, k)
        assert rep["refine"]["time_limited"] is True, rep["refine"]
        assert rep["metrics"]["T_sum"] <= fast["metrics"]["T_sum"]


@test
def test_ml_rb_starts_same_for_every_thread_count_and_time_limit():
    # --ml-rb-starts N (the multilevel candidate's third start, recursive
    # bisection with N multilevel starts per bisection): in the report's
    # params, a valid placement eval agrees with, the same for 1, 2 and 3
    # threads; 0 (the default) is the placement without the option; under
    # a time limit too short for any refinement it is still valid, cut
    # and no worse than fast
    for f, k, extra in (("facebook-sample.txt.gz", 16, ["--graph", "edges"]),
                        ("reuters-sample.svm.gz", 8, [])):
        data = "data/" + f
        rep = same_on_1_to_3_threads(data, k, "rbs", extra, "--ml-rb-starts", 4)
        assert rep["params"]["ml_rb_starts"] == 4, rep["params"]
        plain = part(data, k, tmp("rbs-plain"), "--quality", "best", "--objective", "tsum",
                     *extra)
        zero = part(data, k, tmp("rbs-0"), "--quality", "best", "--objective", "tsum",
                    "--ml-rb-starts", 0, *extra)
        assert plain["params"]["ml_rb_starts"] == 0
        assert read_lines(tmp("rbs-plain") + ".examples") == \
            read_lines(tmp("rbs-0") + ".examples"), f
        assert plain["metrics"] == zero["metrics"]
        fast = part(data, k, tmp("rbs-f"), "--quality", "fast", *extra)
        prefix = tmp("rbs-tl")
        rep = part(data, k, prefix, "--quality", "best", "--objective", "tsum",
                   "--ml-rb-starts", 4, "--time-limit", "0.000001", *extra)
        check_placement(prefix, k)
        assert rep["refine"]["time_limited"] is True, rep["refine"]
        assert rep["metrics"]["T_sum"] <= fast["metrics"]["T_sum"]


@test
def test_ml_cycles_run_and_are_deterministic():
    data = "data/movielens-sample.csv.gz"
    a, b = tmp("mc-a"), tmp("mc-b")
    ra = part(data, 4, a, "--ml-levels", 4, "--ml-cycles", 3, "--fm-passes", 1,
              "--ml-chains", 2)
    part(data, 4, b, "--ml-levels", 4, "--ml-cycles", 3, "--fm-passes", 1,
         "--ml-chains", 2)
    assert read_lines(a + ".examples") == read_lines(b + ".examples")
    d = part(data, 4, tmp("mc-d"))
    assert ra["metrics"]["T_sum"] <= d["metrics"]["T_sum"]


@test
def test_shared_fm_beats_sweeps():
    data = os.path.join(SHARED, "libsvm/reuters_lasvm.test.svm.gz")
    if not os.path.exists(data):
        raise Skip("shared data not found")
    d = part(data, 16, tmp("sh-fd"))
    f = part(data, 16, tmp("sh-ff"), "--fm-passes", 2)
    assert f["metrics"]["T_sum"] < 0.98 * d["metrics"]["T_sum"], (f["metrics"], d["metrics"])
    assert f["metrics"]["M_max"] <= part(data, 16, tmp("sh-fq"), "--quality", "fast")["metrics"]["M_max"]


@test
def test_shared_best_ap_blei_target():
    # a regression guard: with the default seed best reaches 126,952 on
    # ap_blei at k=16 (Zoltan PHG 128,812; before the k-way FM 132,688;
    # BENCHMARKS.md, issue 6); 127,300 leaves room for small changes
    data = os.path.join(SHARED, "libsvm/ap_blei.svm.gz")
    if not os.path.exists(data):
        raise Skip("shared data not found")
    rep = part(data, 16, tmp("sh-ap"), "--quality", "best", "--random-trials", 1)
    assert rep["metrics"]["T_sum"] <= 127300, rep["metrics"]


@test
def test_shared_default_beats_fast_tsum():
    data = os.path.join(SHARED, "libsvm/reuters_lasvm.test.svm.gz")
    if not os.path.exists(data):
        raise Skip("shared data not found")
    f = part(data, 16, tmp("sh-f"), "--quality", "fast")
    d = part(data, 16, tmp("sh-d"))
    assert d["metrics"]["T_sum"] < 0.97 * f["metrics"]["T_sum"], (d["metrics"], f["metrics"])
    assert d["metrics"]["M_max"] <= f["metrics"]["M_max"]
    assert d["metrics"]["T_max"] <= f["metrics"]["T_max"]


finish()
