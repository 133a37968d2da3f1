"""Shared harness of the CLI tests (tests/cli/test_*.py).

Each test module runs its tests at import time through the @test
decorator, then calls finish(), which prints the closing line
"N passed, N failed[, N skipped]" and exits non-zero on a failure.
PARSA_BIN (set by scripts/run-tests.sh) names the binary under test.
"""
import gzip
import os
import shutil
import subprocess
import sys
import tempfile

BIN = os.environ.get("PARSA_BIN", "build/parsa")
TMP = tempfile.mkdtemp(prefix="parsa-cli-")
results = {"passed": 0, "failed": 0, "skipped": 0}


class Skip(Exception):
    pass


def run(*args, ok=True, env=None):
    p = subprocess.run([BIN, *map(str, args)], capture_output=True, text=True,
                       timeout=600, env=env)
    if ok and p.returncode != 0:
        raise AssertionError("parsa %s failed (%d): %s" %
                             (" ".join(map(str, args)), p.returncode, p.stderr))
    return p


def test(fn):
    name = fn.__name__
    try:
        fn()
    except Skip as e:
        results["skipped"] += 1
        print("skip: %s: %s" % (name, e))
    except Exception as e:  # noqa: BLE001 - report any failure
        results["failed"] += 1
        print("FAIL %s: %s" % (name, e))
    else:
        results["passed"] += 1
        print("ok   %s" % name)
    sys.stdout.flush()
    return fn


def tmp(name):
    return os.path.join(TMP, name)


def read_lines(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        return f.read().splitlines()


def finish():
    shutil.rmtree(TMP, ignore_errors=True)
    line = "%d passed, %d failed" % (results["passed"], results["failed"])
    if results["skipped"]:
        line += ", %d skipped" % results["skipped"]
    print(line)
    sys.exit(1 if results["failed"] else 0)
