"""CLI tests of `parsa train` on user-item pairs and SNAP graphs (implicit
feedback, README "Trainer"): the positive + sampled-negative examples are
built in memory from the partitioner's dataset, a user's examples go to
the user's part, and the remote value bytes per pass are 12 T_sum of the
converted examples under the carried-over placement (the final object's
"implicit"), whose pairs part is `parsa eval`'s T_sum of the placement.

Uses the shared CLI harness (tests/cli/clitest.py); PARSA_BIN names the
binary.
"""
import gzip
import json
import math
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "cli"))
from clitest import finish, mpirun, run, test, tmp  # noqa: E402

PAIRS = "data/movielens-sample.csv.gz"
SNAP = "data/facebook-sample.txt.gz"
LIBSVM = "data/a9a-sample.svm.gz"


def partition(data, k, name, *extra):
    prefix = tmp(name)
    run("partition", data, "-k", k, "--out", prefix, "-q", *extra)
    return prefix


def objects(p):
    return [json.loads(x) for x in p.stdout.strip().splitlines()]


def eval_tsum(data, prefix):
    ev = json.loads(run("eval", data, "--placement", prefix,
                        "--json").stdout)
    return ev["metrics"]["T_sum"]


def check_run(data, prefix, passes=4, *extra, evaluated=None):
    """Trains; checks the objective and the bytes formula; the final.
    evaluated: the files of the placement (prefix unless random)."""
    objs = objects(run("train", data, "--placement", prefix, "--passes",
                       passes, *extra))
    fin = objs[-1]
    assert fin["final"] is True and len(objs) == passes + 1
    im = fin["implicit"]
    obj = [o["objective"] for o in objs[:-1]]
    assert all(math.isfinite(x) for x in obj), obj
    assert all(b <= a * (1 + 1e-12) for a, b in zip(obj, obj[1:])), obj
    assert obj[-1] < obj[0], obj
    # the placement's T_sum on the pairs is eval's; the negatives only add
    assert im["T_sum_pairs"] == eval_tsum(data, evaluated or prefix), im
    assert im["T_sum"] >= im["T_sum_pairs"], im
    # every remote key of a worker pushed (16 B) and pulled (8 B) once a
    # pass: 12 T_sum (T_sum counts both directions), user biases local
    for o in objs[:-1]:
        assert o["value_bytes_remote"] == 12 * im["T_sum"], \
            (o["value_bytes_remote"], im)
    assert fin["examples"] == im["positives"] + im["negatives"]
    assert fin["features"] == im["items"] + im["users"]
    return fin


@test
def test_pairs_with_partition_placement():
    prefix = partition(PAIRS, 4, "ml4")
    fin = check_run(PAIRS, prefix)
    im = fin["implicit"]
    rep = json.load(open(prefix + ".json"))
    users = len(open(prefix + ".examples").read().splitlines())
    items = len(open(prefix + ".features").read().splitlines())
    assert (im["users"], im["items"]) == (users, items), (im, users, items)
    # one positive per distinct (user, item) pair, one negative each
    pairs = set()
    with gzip.open(PAIRS, "rt") as f:
        next(f)
        for line in f:
            u, i = line.split(",")[:2]
            pairs.add((int(u), int(i)))
    assert im["positives"] == len(pairs) == im["negatives"], im
    assert im["users_without_negative"] == 0
    assert fin["k"] == 4 and fin["bytes_remote"] > 0
    assert rep["metrics"]["T_sum"] == im["T_sum_pairs"]


@test
def test_one_machine_sends_nothing():
    prefix = partition(PAIRS, 1, "ml1")
    fin = check_run(PAIRS, prefix, 2)
    assert fin["implicit"]["T_sum"] == 0 and fin["bytes_remote"] == 0


@test
def test_same_seed_same_model():
    # two workers: a double sum of two addends does not depend on the
    # order the pushes arrive in (three would), so the model is exact
    prefix = partition(PAIRS, 2, "ml2s")
    models = []
    for n, seed in enumerate((7, 7, 8)):
        m = tmp("seed%d.model" % n)
        run("train", PAIRS, "--placement", prefix, "--passes", 3, "--seed",
            seed, "--model", m, "-q")
        models.append(open(m).read())
    assert models[0] == models[1], "same seed, other model"
    assert models[0] != models[2], "another seed, same negatives"
    lines = models[0].splitlines()
    assert any(x.startswith("user:") for x in lines)
    assert any(not x.startswith("user:") for x in lines)


@test
def test_format_guessed_or_given():
    prefix = partition(PAIRS, 2, "ml2")
    noext = tmp("ratings")  # no name hint: the first data line decides
    shutil.copy(PAIRS, noext)
    models = []
    for data, extra in ((PAIRS, ()), (noext, ()),
                        (noext, ("--format", "pairs"))):
        m = tmp("fmt%d.model" % len(models))
        run("train", data, "--placement", prefix, "--passes", 2, "--model",
            m, "-q", *extra)
        models.append(open(m).read())
    assert models[0] == models[1] == models[2]


@test
def test_snap_adjacency():
    prefix = partition(SNAP, 3, "fb3")
    fin = check_run(SNAP, prefix, 3)
    assert fin["implicit"]["users"] == len(
        open(prefix + ".examples").read().splitlines())


@test
def test_random_placement():
    # the placement of partition --method random with the same seed
    same = partition(PAIRS, 3, "mlrnd", "--method", "random", "--seed", 1)
    fin = check_run(PAIRS, "random", 2, "--workers", 3, evaluated=same)
    assert fin["k"] == 3


@test
def test_mpi_two_ranks_same_as_threads():
    prefix = partition(PAIRS, 2, "mlmpi")
    m_thr, m_mpi = tmp("thr.model"), tmp("mpi.model")
    args = ("train", PAIRS, "--placement", prefix, "--passes", 3,
            "--blocks", 4)
    fin_t = objects(run(*args, "--model", m_thr, "-q"))[-1]
    p = mpirun(2, *args, "--mpi", "--model", m_mpi, "-q")
    assert p.returncode == 0, "exit %d: %s" % (p.returncode, p.stderr)
    fin_m = json.loads(p.stdout.strip().splitlines()[-1])
    assert fin_m["transport"] == "mpi" and fin_m["ranks"] == 2
    assert open(m_thr).read() == open(m_mpi).read(), "models differ"
    for key in ("objective", "bytes_remote", "value_bytes_remote",
                "implicit"):
        assert fin_t[key] == fin_m[key], (key, fin_t[key], fin_m[key])


def fails(needle, *args):
    p = run("train", *args, ok=False)
    assert p.returncode != 0, p.stdout
    assert needle in p.stderr, p.stderr
    return p


@test
def test_bad_combinations():
    prefix = partition(PAIRS, 2, "mlbad")
    fails("--graph edges makes every edge an example", SNAP, "--placement",
          "random", "--workers", 2, "--graph", "edges")
    fails("--graph applies to SNAP data only", LIBSVM, "--placement",
          "random", "--workers", 2, "--graph", "adjacency")
    fails("--test is not supported with pairs or SNAP", PAIRS,
          "--placement", prefix, "--test", PAIRS)
    # the pairs file read as LIBSVM: the reader's file:line:col
    fails(PAIRS + ":1:", PAIRS, "--placement", prefix, "--format", "libsvm")
    fails("--format must be", PAIRS, "--placement", prefix, "--format", "x")
    # a placement of other data
    fails("does not match", PAIRS, "--placement", partition(SNAP, 2, "fb2"))
    fails("does not match", SNAP, "--placement", prefix)


finish()
