#!/usr/bin/env python3
"""The report's per-part figures ("parts", "random_parts") and
`parsa eval --per-part`, against a brute-force recomputation in Python from
the placement files and the data (real binary, bundled samples).  Ends
with the line "N passed, N failed[, N skipped]".
"""
import json

from clitest import finish, libsvm_rows, read_lines, run, test, tmp

KEYS = ("U", "nnz", "M", "V", "T", "in", "out")


def pairs_rows(path):
    """User-item pairs: users in order of first appearance, items as
    features (the reader's rules; the samples have a header line)."""
    order, items = [], {}
    for i, line in enumerate(read_lines(path)):
        t = line.replace(",", " ").split()
        if not t or t[0].startswith("#"):
            continue
        if i == 0 and not (t[0].isdigit() and t[1].isdigit()):
            continue
        u, v = int(t[0]), int(t[1])
        if u not in items:
            items[u] = set()
            order.append(u)
        items[u].add(v)
    return [sorted(items[u]) for u in order]


def brute(rows, parts, owner, k):
    """Every figure of every part from the definitions, with sets."""
    used = [set() for _ in range(k)]
    f = {key: [0] * k for key in KEYS}
    for r, p in zip(rows, parts):
        f["U"][p] += 1
        f["nnz"][p] += len(r)
        used[p].update(r)
    for v, o in owner.items():
        f["V"][o] += 1
    for i in range(k):
        f["M"][i] = len(used[i])
        f["in"][i] = sum(1 for v in used[i] if owner[v] != i)
        f["out"][i] = sum(1 for j in range(k) if j != i
                          for v in used[j] if owner[v] == i)
        f["T"][i] = f["in"][i] + f["out"][i]
    return f


def placement(prefix):
    parts = [int(x) for x in read_lines(prefix + ".examples")]
    owner = {int(a): int(b) for a, b in (l.split() for l in read_lines(prefix + ".features"))}
    return parts, owner


def check_parts(rep, rows, prefix, k):
    parts, owner = placement(prefix)
    want = brute(rows, parts, owner, k)
    got = rep["parts"]
    assert sorted(got) == sorted(KEYS), sorted(got)
    for key in KEYS:
        assert got[key] == want[key], (key, got[key], want[key])
    # the summary metrics are the parts' maxima and sums
    assert rep["metrics"]["M_max"] == max(got["M"])
    assert rep["metrics"]["T_max"] == max(got["T"])
    assert rep["metrics"]["T_sum"] == sum(got["T"])
    assert rep["metrics"]["U_max"] == max(got["U"])
    loc = sum(m - i for m, i in zip(got["M"], got["in"]))
    assert abs(rep["metrics"]["local_fraction"] - loc / sum(got["M"])) < 1e-9


@test
def test_partition_parts_equal_brute_force():
    for name, reader, k, extra in (("a9a-sample.svm.gz", libsvm_rows, 4, []),
                                   ("reuters-sample.svm.gz", libsvm_rows, 7, []),
                                   ("movielens-sample.csv.gz", pairs_rows, 5,
                                    ["--method", "metis"])):
        prefix = tmp("pp-" + name.split(".")[0])
        run("partition", "data/" + name, "-k", k, "--out", prefix, "-q", *extra)
        rep = json.load(open(prefix + ".json"))
        rows = reader("data/" + name)
        assert len(rows) == rep["dataset"]["examples"]
        check_parts(rep, rows, prefix, k)


@test
def test_random_parts_are_the_first_seed():
    # with one trial the random baseline is exactly its first seed's
    # placement, so its per-part maxima and sums are the baseline's metrics
    prefix = tmp("pp-rnd")
    run("partition", "data/a9a-sample.svm.gz", "-k", 6, "--out", prefix, "-q",
        "--random-trials", 1, "--seed", 3)
    rep = json.load(open(prefix + ".json"))
    rp, rnd = rep["random_parts"], rep["random"]
    assert sorted(rp) == sorted(KEYS)
    assert max(rp["M"]) == rnd["M_max"] and max(rp["T"]) == rnd["T_max"]
    assert sum(rp["T"]) == rnd["T_sum"] and max(rp["U"]) == rnd["U_max"]
    n = rep["dataset"]
    assert sum(rp["U"]) == n["examples"] and sum(rp["nnz"]) == n["nonzeros"]
    assert sum(rp["V"]) == n["features"]
    assert all(i + o == t for i, o, t in zip(rp["in"], rp["out"], rp["T"]))
    # a random placement's own (method random, same seed) is the same one
    prefix2 = tmp("pp-rnd2")
    run("partition", "data/a9a-sample.svm.gz", "-k", 6, "--out", prefix2, "-q",
        "--random-trials", 1, "--seed", 3, "--method", "random")
    rep2 = json.load(open(prefix2 + ".json"))
    assert rep2["random_parts"] == rp and rep2["parts"] == rp


@test
def test_eval_reports_the_same_parts():
    prefix = tmp("pp-eval")
    run("partition", "data/a9a-sample.svm.gz", "-k", 4, "--out", prefix, "-q")
    rep = json.load(open(prefix + ".json"))
    p = run("eval", "data/a9a-sample.svm.gz", "--placement", prefix, "--json")
    ev = json.loads(p.stdout)
    assert ev["parts"] == rep["parts"] and ev["random_parts"] == rep["random_parts"]


@test
def test_metrics_same_for_every_thread_count():
    # the placement's metrics and the random trials run as tasks on
    # --threads threads: the numbers must not depend on how many
    prefix = tmp("pp-threads")
    run("partition", "data/movielens-sample.csv.gz", "-k", 6, "--out", prefix, "-q")
    seen = []
    for t in (1, 2, 3, 7):
        ev = json.loads(run("eval", "data/movielens-sample.csv.gz", "--placement", prefix,
                            "--random-trials", 5, "--threads", t, "--json").stdout)
        seen.append((ev["metrics"], ev["random"], ev["parts"], ev["random_parts"],
                     ev["improvement"]))
    assert all(x == seen[0] for x in seen), seen
    p = run("eval", "data/movielens-sample.csv.gz", "--placement", prefix, "--threads", 0,
            ok=False)
    assert p.returncode == 2 and "threads" in p.stderr, p.stderr


@test
def test_eval_per_part_table():
    prefix = tmp("pp-table")
    run("partition", "data/reuters-sample.svm.gz", "-k", 5, "--out", prefix, "-q")
    rep = json.load(open(prefix + ".json"))
    out = run("eval", "data/reuters-sample.svm.gz", "--placement", prefix, "--per-part").stdout
    lines = out.splitlines()
    i = next(n for n, l in enumerate(lines) if l.split()[:1] == ["part"])
    assert lines[i].split() == ["part"] + list(KEYS), lines[i]
    for p in range(5):
        row = lines[i + 1 + p].split()
        assert int(row[0]) == p and [int(x) for x in row[1:]] == [rep["parts"][k][p] for k in KEYS], row
    mx = lines[i + 6].split()
    assert mx[:2] == ["all", "parts"] and mx[-1] == "max", mx
    assert [int(x) for x in mx[2:-1]] == [max(rep["parts"][k]) for k in KEYS], mx
    rnd = lines[i + 8].split()
    assert rnd[0] == "random" and [int(x) for x in rnd[1:-1]] == [max(rep["random_parts"][k]) for k in KEYS], rnd
    # without --per-part: no table; partition --per-part prints it too
    assert "per part:" not in run("eval", "data/reuters-sample.svm.gz", "--placement", prefix).stdout
    out = run("partition", "data/reuters-sample.svm.gz", "-k", 5, "--out", prefix, "--per-part").stdout
    assert "per part:" in out and "all parts" in out


finish()
