#!/usr/bin/env python3
"""Run pytest on the given test files and end with the project's closing
line, "N passed, N failed[, N skipped]" (scripts/run-tests.sh reads it):
pytest's own summary ("13 passed, 1 skipped in 6.2s") converted, errors
counted as failures.  Exit status: 0 when nothing failed, else 1 (pytest's
"no tests collected" counts as a failure).

usage: PYTHON scripts/pytest-line.py FILE...   (PYTHON: the interpreter
whose pytest runs, e.g. /usr/bin/python3 with Debian's python3-pytest)
"""
import re
import subprocess
import sys

p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                    *sys.argv[1:]], capture_output=True, text=True)
sys.stdout.write(p.stdout)
sys.stderr.write(p.stderr)
counts = {"passed": 0, "failed": 0, "skipped": 0, "error": 0}
summary = [l for l in p.stdout.splitlines() if re.search(r"\d+ (passed|failed|skipped|errors?)\b", l)]
if summary:
    for n, kind in re.findall(r"(\d+) (passed|failed|skipped|errors?)\b", summary[-1]):
        counts["error" if kind.startswith("error") else kind] += int(n)
failed = counts["failed"] + counts["error"]
if p.returncode not in (0, 1) and failed == 0:
    failed = 1  # pytest itself failed (usage, collection, no tests)
line = "%d passed, %d failed" % (counts["passed"], failed)
if counts["skipped"]:
    line += ", %d skipped" % counts["skipped"]
print(line)
sys.exit(1 if failed else 0)
