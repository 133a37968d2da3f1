#!/usr/bin/env python3
"""The Python package under valgrind: partition (default and best),
evaluate, assign and the error paths on a small scipy matrix, in a child
/usr/bin/python3 run by `valgrind --leak-check=full`; no memory error and
no block definitely lost (issue 16: "nothing leaks, checked under
valgrind or ASan").  Python's own possibly-lost blocks are not counted.
Skips with a message without valgrind, numpy/scipy or the shared library
(the sanitizer builds make none).  Ends with "N passed, N failed".
"""
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
from clitest import Skip, finish, test, tmp  # noqa: E402

BUILD = os.environ.get("PARSA_BUILD", "build")
SO = os.path.join(ROOT, BUILD, "libparsa.so.0") if not os.path.isabs(BUILD) \
    else os.path.join(BUILD, "libparsa.so.0")
PY = "/usr/bin/python3"

SCRIPT = r'''
import os, sys
sys.path.insert(0, os.path.join(%(root)r, "python"))
os.environ["PARSA_LIB"] = %(so)r
import numpy as np, scipy.sparse as sp
import parsa
X = sp.random(300, 120, density=0.05, format="csr", random_state=1)
p = parsa.partition(X, 4)
ev = parsa.evaluate(X, p.examples, p.features)
assert ev.metrics["T_sum"] == p.metrics["T_sum"]
a = parsa.assign(p, [[1, 5, 9], [4, 7]])
p.save(%(prefix)r)
for bad in (lambda: parsa.partition(X, 0), lambda: parsa.partition("/no/such.svm", 2),
            lambda: parsa.partition(X, 4, quality="x"), lambda: parsa.partition([1, 2], 2)):
    try:
        bad()
    except (ValueError, TypeError, OSError, parsa.ParsaError):
        pass
    else:
        raise SystemExit("no error raised")
parsa.partition(X, 4, quality="best", threads=2)
print("script done")
'''


@test
def test_python_api_under_valgrind():
    if not shutil.which("valgrind"):
        raise Skip("valgrind not installed")
    if not os.path.exists(SO):
        raise Skip("no shared library at %s (sanitizer builds make none)" % SO)
    if subprocess.run([PY, "-c", "import numpy, scipy.sparse"], capture_output=True).returncode:
        raise Skip("numpy and scipy are missing for %s" % PY)
    script = tmp("vg.py")
    with open(script, "w") as f:
        f.write(SCRIPT % {"root": ROOT, "so": SO, "prefix": tmp("vg-out")})
    p = subprocess.run(["valgrind", "--leak-check=full", "--show-leak-kinds=definite",
                        "--errors-for-leak-kinds=definite", "--error-exitcode=9", PY, script],
                       capture_output=True, text=True, timeout=900)
    assert "script done" in p.stdout, p.stdout + p.stderr[-3000:]
    m = re.search(r"ERROR SUMMARY: (\d+) errors", p.stderr)
    assert m and m.group(1) == "0", p.stderr[-4000:]
    assert p.returncode == 0, p.stderr[-4000:]
    lost = re.search(r"definitely lost: ([\d,]+) bytes", p.stderr)
    assert lost is None or lost.group(1) == "0", lost.group(0)


finish()
