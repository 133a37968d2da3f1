#!/usr/bin/env python3
"""`parsa convert` and the binary dataset cache (.pcsr) on the command line
and in `parsa serve`: the same placement and metrics from the cache as from
the text on every bundled sample (and gowalla from ../shared/data when
present), threads and MPI included; clear errors with exit 1 for truncated,
corrupt, wrong-version and mismatched caches; --help.  Ends with
"N passed, N failed[, N skipped]".
"""
import json
import os
import shutil
import struct
import sys

from clitest import (MPIRUN, Skip, check_placement, eval_agrees, finish,  # noqa: F401
                     mpirun, run, test, tmp)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "http"))
from httptest import Server, register_path, serving, submit  # noqa: E402

SHARED = os.environ.get("PARSA_SHARED_DATA", "../shared/data")
SAMPLES = (("a9a-sample.svm.gz", []), ("reuters-sample.svm.gz", []),
           ("facebook-sample.txt.gz", ["--graph", "adjacency"]),
           ("facebook-sample.txt.gz", ["--graph", "edges"]),
           ("movielens-sample.csv.gz", []))


def convert(data, out, *extra):
    p = run("convert", data, "--out", out, *extra)
    assert os.path.getsize(out) > 0
    assert not [f for f in os.listdir(os.path.dirname(out)) if f.endswith(".tmp")]
    return p


def same_files(a, b):
    for ext in ("examples", "features"):
        with open(a + "." + ext, "rb") as fa, open(b + "." + ext, "rb") as fb:
            assert fa.read() == fb.read(), "%s.%s differs from %s.%s" % (a, ext, b, ext)
    ra, rb = json.load(open(a + ".json")), json.load(open(b + ".json"))
    assert ra["metrics"] == rb["metrics"] and ra["random"] == rb["random"], (ra, rb)
    for key in ("examples", "features", "nonzeros", "empty_rows", "duplicates"):
        assert ra["dataset"][key] == rb["dataset"][key], (key, ra["dataset"], rb["dataset"])
    return rb


_caches = {}


def cache_of(f, extra):
    key = (f, tuple(extra))
    if key not in _caches:
        out = tmp("c-%s-%s.pcsr" % (f.split(".")[0], "-".join(extra[1:]) or "x"))
        convert("data/" + f, out, *extra, "-q")
        _caches[key] = out
    return _caches[key]


@test
def test_help():
    p = run("convert", "--help")
    assert p.stdout.startswith("usage: parsa convert DATA --out FILE.pcsr"), p.stdout
    for word in ("--format", "--graph", "--no-transpose", "--no-values", "--out"):
        assert word in p.stdout, word
    assert "usage: parsa convert" in run("help", "convert").stdout
    assert "convert DATA --out FILE.pcsr" in run("help").stdout


@test
def test_samples_same_placement():
    for f, extra in SAMPLES:
        c = cache_of(f, extra)
        name = f.split(".")[0] + "".join(extra[1:])
        a, b = tmp("t-" + name), tmp("c-" + name)
        run("partition", "data/" + f, "-k", 4, "--seed", 7, "--out", a, "-q", *extra)
        run("partition", c, "-k", 4, "--seed", 7, "--out", b, "-q", *extra)
        rep = same_files(a, b)
        assert rep["memory"]["id_maps"] == "cache", rep["memory"]
        check_placement(b, 4)
        eval_agrees(c, b, rep, extra)
        # the parameter server's thread mode too (one worker with tau 1 is
        # deterministic, test_parallel.py)
        for args in (["--workers", 1, "--tau", 1], ["--workers", 1, "--tau", 0, "--syncs", 2]):
            run("partition", "data/" + f, "-k", 4, *args, "--out", a, "-q", *extra)
            run("partition", c, "-k", 4, *args, "--out", b, "-q", *extra)
            same_files(a, b)


@test
def test_id_maps_spilled():
    """partition moves the id maps read from text to an unlinked file in
    $TMPDIR while it works (from 1 MiB; PARSA_ID_SPILL_MIN lowers that):
    the same files, and nothing left in the directory; a missing $TMPDIR
    keeps them on the heap, with the same result."""
    spill = tmp("spill-dir")
    os.makedirs(spill, exist_ok=True)
    for f, extra in SAMPLES:
        name = "sp-" + f.split(".")[0] + "".join(extra[1:])
        a, b, c = tmp(name + "-a"), tmp(name + "-b"), tmp(name + "-c")
        run("partition", "data/" + f, "-k", 4, "--out", a, "-q", *extra)
        env = dict(os.environ, PARSA_ID_SPILL_MIN="0", TMPDIR=spill)
        run("partition", "data/" + f, "-k", 4, "--out", b, "-q", *extra, env=env)
        same_files(a, b)
        env["TMPDIR"] = os.path.join(spill, "missing")
        run("partition", "data/" + f, "-k", 4, "--out", c, "-q", *extra, env=env)
        same_files(a, c)
        where = [json.load(open(x + ".json"))["memory"]["id_maps"] for x in (a, b, c)]
        assert where == ["heap", "file", "heap"], (f, where)
    assert os.listdir(spill) == [], os.listdir(spill)


@test
def test_id_maps_spilled_from_1mib():
    """By default id maps from 1 MiB of ids (128Ki features) go to the spill
    file: 139,470 features (1.1 MB) spill, as 10M's 200k do."""
    data = tmp("spill-1mib.svm")
    run("gen", "--examples", 20000, "--features", 140000, "--avg-nnz", 40, "--topics", 4,
        "--zipf", 0.1, "--topic-frac", 0.1, "--out", data)
    out = tmp("spill-1mib")
    run("partition", data, "-k", 4, "--out", out, "-q")
    rep = json.load(open(out + ".json"))
    assert rep["dataset"]["features"] >= 131072, rep["dataset"]
    assert rep["memory"]["id_maps"] == "file", rep["memory"]


@test
def test_summary_and_name_free():
    p = convert("data/movielens-sample.csv.gz", tmp("ml.pcsr"))
    assert "examples" in p.stdout and "nonzeros" in p.stdout and "pairs" in p.stdout, p.stdout
    assert "with labels and values" not in p.stdout, p.stdout
    p = convert("data/a9a-sample.svm.gz", tmp("a9a-sum.pcsr"))
    assert "(libsvm, with labels and values)" in p.stdout, p.stdout
    # recognised by content: any name, even a misleading one
    shutil.copy(tmp("ml.pcsr"), tmp("ml-cache.svm"))
    a, b = tmp("nm-a"), tmp("nm-b")
    run("partition", "data/movielens-sample.csv.gz", "-k", 3, "--out", a, "-q")
    run("partition", tmp("ml-cache.svm"), "-k", 3, "--out", b, "-q")
    same_files(a, b)
    # converting a cache again gives the same file
    convert(tmp("ml.pcsr"), tmp("ml2.pcsr"), "-q")
    assert open(tmp("ml.pcsr"), "rb").read() == open(tmp("ml2.pcsr"), "rb").read()
    # without the transpose: smaller, same placement
    convert("data/movielens-sample.csv.gz", tmp("ml-nt.pcsr"), "--no-transpose", "-q")
    assert os.path.getsize(tmp("ml-nt.pcsr")) < os.path.getsize(tmp("ml.pcsr"))
    run("partition", tmp("ml-nt.pcsr"), "-k", 3, "--out", b, "-q")
    same_files(a, b)


def cli_error(args, needles, code=1):
    p = run(*args, ok=False)
    assert p.returncode == code, (args, p.returncode, p.stderr)
    assert p.stderr.startswith("parsa: "), p.stderr
    for n in needles:
        assert n in p.stderr, (n, p.stderr)
    assert "Traceback" not in p.stderr and "Sanitizer" not in p.stderr, p.stderr


@test
def test_errors():
    good = cache_of("a9a-sample.svm.gz", [])
    raw = open(good, "rb").read()
    bad = tmp("bad.pcsr")
    cases = [
        (raw[:len(raw) // 2], "truncated pcsr file"),
        (raw[:100], "truncated pcsr file"),
        (raw + b"\0", "after its end"),
        (raw[:8] + struct.pack("<I", 9) + raw[12:], "pcsr format version 9"),
        (raw[:12] + raw[12:16][::-1] + raw[16:], "foreign endianness"),
    ]
    flipped = bytearray(raw)
    flipped[len(raw) - 100] ^= 4
    cases.append((bytes(flipped), "checksum mismatch"))
    placed = tmp("err-a9a-placed")
    run("partition", good, "-k", 2, "--out", placed, "-q")
    for data, needle in cases:
        open(bad, "wb").write(data)
        for cmd in (["partition", bad, "-k", 2, "--out", tmp("bad-out")],
                    ["eval", bad, "--placement", placed],
                    ["convert", bad, "--out", tmp("bad2.pcsr")]):
            cli_error(cmd, [bad + ": ", needle])
    assert not os.path.exists(tmp("bad2.pcsr"))
    assert not [f for f in os.listdir(os.path.dirname(tmp("bad-out")))
                if f.startswith("bad-out")]
    # format and graph mode: the cache's must be asked for
    fb = cache_of("facebook-sample.txt.gz", ["--graph", "edges"])
    cli_error(["partition", fb, "-k", 2, "-q", "--out", tmp("x")],
              ["edges mode, not adjacency", "--graph edges"])
    cli_error(["partition", fb, "-k", 2, "-q", "--format", "libsvm", "--out", tmp("x")],
              ["a cache of snap data, not libsvm"])
    # what a cache cannot do, said plainly
    prefix = tmp("err-a9a")
    run("partition", good, "-k", 2, "--out", prefix, "-q")
    nv = tmp("a9a-novalues.pcsr")
    convert("data/a9a-sample.svm.gz", nv, "--no-values", "-q")
    assert os.path.getsize(nv) < len(raw)
    cli_error(["train", nv, "--placement", prefix, "--passes", 1],
              [nv + ": ", "holds no labels or values", "without --no-values"])
    cli_error(["partition", good, "-k", 2, "--stream", "-q"], ["binary cache"], code=2)
    cli_error(["partition", good, "-k", 2, "-q", "--out", tmp("sh"), "--shards", tmp("shards")],
              ["binary cache", "give the text file"])
    # usage errors
    cli_error(["convert", "data/a9a-sample.svm.gz"], ["--out FILE is required"], code=2)
    cli_error(["convert", "--out", tmp("u.pcsr")], ["DATA is required"], code=2)
    cli_error(["convert", "data/a9a-sample.svm.gz", "--out", tmp("u.pcsr"), "--format", "xml"],
              ["--format 'xml'"], code=2)
    cli_error(["convert", tmp("missing.svm"), "--out", tmp("u.pcsr")], ["missing.svm"])
    os.makedirs(tmp("adir"), exist_ok=True)
    cli_error(["convert", "data/a9a-sample.svm.gz", "--out", tmp("adir")], ["adir"])
    cli_error(["convert", "data/a9a-sample.svm.gz", "--out", tmp("no/such/dir/x.pcsr")],
              ["x.pcsr"])
    assert not os.path.exists(tmp("u.pcsr"))


SECTION_NAMES = {1: "row_ptr", 2: "col", 3: "feat_id", 4: "t_row_ptr", 5: "t_col",
                 6: "y", 7: "line_col", 8: "val"}


@test
def test_every_section_checked():
    """A byte flipped in any section is refused by partition and eval,
    also in the sections a dataset does not use (the transpose, labels and
    values), whose checksums are computed while the command works: the
    command fails before it writes anything."""
    good = cache_of("a9a-sample.svm.gz", [])
    raw = open(good, "rb").read()
    n_sections = struct.unpack_from("<I", raw, 20)[0]
    assert n_sections == 8, n_sections
    bad = tmp("bad-sect.pcsr")
    placed = tmp("bs-a9a-placed")
    run("partition", good, "-k", 2, "--out", placed, "-q")
    for i in range(n_sections):
        sid, _, off, length, _ = struct.unpack_from("<IIQQQ", raw, 128 + 32 * i)
        flipped = bytearray(raw)
        flipped[off + length // 2] ^= 0x10
        open(bad, "wb").write(bytes(flipped))
        out = tmp("bs-out-%d" % i)
        for cmd in (["partition", bad, "-k", 2, "--out", out],
                    ["partition", bad, "-k", 2, "--out", out, "--threads", 2,
                     "--quality", "best"],
                    ["eval", bad, "--placement", placed]):
            cli_error(cmd, [bad + ": ", "checksum mismatch in section " + SECTION_NAMES[sid]])
        assert not [f for f in os.listdir(os.path.dirname(out)) if f.startswith("bs-out")], i


def _drop_cached(path):
    """Write path's pages out and drop them from the page cache."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _resident(path, lo, hi):
    """The fraction of the file's pages in [lo, hi) held in the page cache
    (mincore over a fresh mapping that touches nothing)."""
    import ctypes
    import mmap
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mincore.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p)
    pg = mmap.PAGESIZE
    lo = lo // pg * pg
    with open(path, "rb") as f:
        m = mmap.mmap(f.fileno(), hi - lo, access=mmap.ACCESS_COPY, offset=lo)
        try:
            buf = (ctypes.c_char * (hi - lo)).from_buffer(m)
            n = (hi - lo + pg - 1) // pg
            vec = ctypes.create_string_buffer(n)
            assert libc.mincore(ctypes.addressof(buf), hi - lo, vec) == 0, ctypes.get_errno()
            res = sum(b & 1 for b in vec.raw)
            del buf
        finally:
            m.close()
    return res / n


@test
def test_check_past_the_page_cache():
    """The sections a partition does not use (the transpose, labels,
    values: most of a cache) are checked on a thread without filling the
    page cache when the file is not cached: read with O_DIRECT, the values
    stay out of it after the run; a byte flipped there is still refused."""
    data, c = tmp("pc-gen.svm"), tmp("pc-gen.pcsr")
    # 4M nonzeros: the values (32 MB, the last section) start 50 MB into
    # the file, beyond the kernel's read-ahead of the sections before them
    # (up to 2 x 8 MiB here)
    run("gen", "--examples", 200000, "--features", 100000, "--avg-nnz", 20,
        "--topics", 16, "--seed", 3, "--out", data)
    convert(data, c, "-q")
    raw = open(c, "rb").read()
    sect = [struct.unpack_from("<IIQQQ", raw, 128 + 32 * i)
            for i in range(struct.unpack_from("<I", raw, 20)[0])]
    sid, _, lo, length, _ = sect[-1]
    assert SECTION_NAMES[sid] == "val", sid
    hi = lo + length
    try:
        fd = os.open(c, os.O_RDONLY | os.O_DIRECT)
        os.close(fd)
    except OSError as e:
        raise Skip("O_DIRECT not supported where the tests write (%s)" % e)
    _drop_cached(c)
    if _resident(c, lo, hi) > 0.05:
        raise Skip("the page cache cannot be dropped here")
    out = tmp("pc-out")
    run("partition", c, "-k", 4, "--out", out, "-q")
    check_placement(out, 4)
    frac = _resident(c, lo, hi)
    assert frac < 0.5, "%.0f%% of the values left in the page cache" % (100 * frac)
    flipped = bytearray(raw)
    flipped[lo + length // 2] ^= 0x10
    bad = tmp("pc-bad.pcsr")
    open(bad, "wb").write(bytes(flipped))
    _drop_cached(bad)
    cli_error(["partition", bad, "-k", 4, "--out", tmp("pc-bad-out")],
              [bad + ": ", "checksum mismatch in section val"])
    assert not [f for f in os.listdir(os.path.dirname(out)) if f.startswith("pc-bad-out")]


def last_json(p):
    return json.loads(p.stdout.strip().splitlines()[-1])


def close(a, b):
    return a == b or abs(a - b) <= 1e-9 * max(1.0, abs(a))


def models_agree(a, b):
    """Same features, weights equal to 1e-9 (the thread mode's sums are
    not bit-reproducible from run to run, text or cache alike)."""
    wa = dict(l.split() for l in open(a))
    wb = dict(l.split() for l in open(b))
    assert wa.keys() == wb.keys(), (len(wa), len(wb))
    for f in wa:
        x, y = float(wa[f]), float(wb[f])
        assert abs(x - y) <= 1e-9 * max(1.0, abs(x)), (f, x, y)


def train_both(name, launch, *args):
    """Train on a k=4 placement of a9a from the text and from the cache
    (launch: run, or mpirun on 2 ranks): [(final JSON, model path)] x 2."""
    c = cache_of("a9a-sample.svm.gz", [])
    prefix = tmp(name)
    run("partition", "data/a9a-sample.svm.gz", "-k", 4, "--out", prefix, "-q")
    res = []
    for data in ("data/a9a-sample.svm.gz", c):
        m = tmp("%s-%d.model" % (name, len(res)))
        p = launch("train", data, "--placement", prefix, "--passes", 3,
                   *[data if a is None else a for a in args], "--model", m, "-q")
        assert p.returncode == 0, p.stderr
        res.append((last_json(p), m))
    return res


@test
def test_train_from_the_cache():
    c = cache_of("a9a-sample.svm.gz", [])
    (ft, mt), (fc, mc) = train_both("tr", run, "--test", None)
    for key in ("objective", "logloss", "auc"):
        assert close(ft[key], fc[key]), (key, ft[key], fc[key])
    for key in ("examples", "features", "nonzeros", "bytes_remote", "messages_remote"):
        assert ft[key] == fc[key], (key, ft[key], fc[key])
    models_agree(mt, mc)
    # --placement random reads every row of the cache
    p = run("train", c, "--placement", "random", "--workers", 2, "--passes", 2, "-q")
    q = run("train", "data/a9a-sample.svm.gz", "--placement", "random", "--workers", 2,
            "--passes", 2, "-q")
    assert close(last_json(p)["objective"], last_json(q)["objective"])
    # a LIBSVM file whose labels the trainer refuses: a cache without values
    bad = tmp("labels.svm")
    open(bad, "w").write("yes 1:1 2:1\nno 2:1\n")
    p = run("convert", bad, "--out", tmp("labels.pcsr"))
    assert "label is not a number" in p.stderr and "no labels or values" in p.stderr, p.stderr
    run("partition", tmp("labels.pcsr"), "-k", 2, "-q", "--out", tmp("labels"))


@test
def test_train_mpi_from_the_cache():
    if not MPIRUN:
        raise Skip("mpirun not found")
    (ft, mt), (fc, mc) = train_both("trm", lambda *a: mpirun(2, *a), "--tau", 0,
                                    "--blocks", 4, "--mpi")
    assert ft["parsed_examples"] == fc["parsed_examples"], (ft["parsed_examples"], fc["parsed_examples"])
    for key in ("objective", "logloss"):
        assert close(ft[key], fc[key]), (key, ft[key], fc[key])
    assert ft["bytes_remote"] == fc["bytes_remote"]
    models_agree(mt, mc)


@test
def test_mpi_every_rank_reads_the_cache():
    if not MPIRUN:
        raise Skip("mpirun not found")
    c = cache_of("a9a-sample.svm.gz", [])
    a, b = tmp("mpi-t"), tmp("mpi-c")
    for data, prefix in (("data/a9a-sample.svm.gz", a), (c, b)):
        # one worker with tau 0 is deterministic (test_parallel.py); both
        # ranks read DATA
        p = mpirun(2, "partition", data, "-k", 4, "--blocks", 4, "--mpi",
                   "--workers", 1, "--tau", 0, "--syncs", 0, "--out", prefix, "-q")
        assert p.returncode == 0, p.stderr
    same_files(a, b)


@serving
def test_serve_registers_a_cache():
    d = tmp("serve-data")
    os.makedirs(d, exist_ok=True)
    shutil.copy(cache_of("a9a-sample.svm.gz", []), os.path.join(d, "a9a.pcsr"))
    s = Server(tmp("st-cache"), data_dir=d)
    ds = register_path(s, "a9a.pcsr")
    assert ds["examples"] == 8000 and ds["format"] == "libsvm", ds
    job = submit(s, {"dataset": ds["id"], "k": 4, "seed": 3})
    rep = s.wait_job(job["id"])["report"]
    prefix = tmp("serve-cli")
    run("partition", "data/a9a-sample.svm.gz", "-k", 4, "--seed", 3, "--out", prefix, "-q")
    assert json.load(open(prefix + ".json"))["metrics"] == rep["metrics"]
    st, _, body = s.req("GET", "/v1/jobs/%s/placement/examples" % job["id"])
    assert st == 200 and body == open(prefix + ".examples", "rb").read()
    # an upload of the cache's bytes
    raw = open(cache_of("movielens-sample.csv.gz", []), "rb").read()
    up = s.json("POST", "/v1/datasets?name=ml.pcsr", raw, status=201)
    assert up["format"] == "pairs" and up["examples"] > 0, up
    # a broken cache is refused with the reason
    with open(os.path.join(d, "bad.pcsr"), "wb") as f:
        f.write(open(os.path.join(d, "a9a.pcsr"), "rb").read()[:5000])
    j, _ = s.problem("POST", "/v1/datasets", {"path": "bad.pcsr"}, status=422)
    assert "truncated pcsr file" in j["detail"], j
    assert s.stop() == 0


@test
def test_gowalla_same_placement():
    src = os.path.join(SHARED, "bipartite", "gowalla_lightgcn.tsv.gz")
    if not os.path.exists(src):
        raise Skip("%s not present" % src)
    c = tmp("gowalla.pcsr")
    convert(src, c, "-q")
    a, b = tmp("gw-t"), tmp("gw-c")
    run("partition", src, "-k", 16, "--out", a, "-q")
    run("partition", c, "-k", 16, "--out", b, "-q")
    same_files(a, b)


if __name__ == "__main__":
    finish()
