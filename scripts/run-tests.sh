#!/usr/bin/env bash
# Run every test program and script; sum their "N passed, N failed" lines.
# The last line is exactly "N passed, N failed" (the totals); skipped
# tests, if any, are counted on the line before it ("N skipped").
# Usage: scripts/run-tests.sh BUILD_DIR [PROGRAM...]
# With PROGRAMs (names under BUILD_DIR/tests, e.g. test_cache fuzz_pcsr):
# only those, each fuzz target replaying its corpus, and no scripts.
set -u
build=${1:-build}
shift $(( $# > 0 ? 1 : 0 ))
only="$*"
export PARSA_BIN="$build/parsa"
export PARSA_BUILD="$build"
passed=0 failed=0 skipped=0 broken=""
run_one() {
	local name=$1; shift
	local out
	out=$("$@" 2>&1)
	local rc=$?
	printf '%s\n' "$out" | sed "s|^|[$name] |"
	local line
	line=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -n 1)
	if [ -z "$line" ]; then
		echo "[$name] no result line (exit $rc): counted as 1 failure"
		failed=$((failed + 1)); broken="$broken $name"; return
	fi
	local p f s
	p=$(echo "$line" | sed -E 's/^([0-9]+) passed.*/\1/')
	f=$(echo "$line" | sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/')
	s=$(echo "$line" | sed -nE 's/.* ([0-9]+) skipped.*/\1/p')
	passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + ${s:-0}))
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "[$name] exit $rc with no failed test: counted as 1 failure"
		failed=$((failed + 1)); broken="$broken $name"
	fi
	[ "$f" -gt 0 ] && broken="$broken $name"
}
wanted() { [ -z "$only" ] || case " $only " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
for t in "$build"/tests/test_*; do
	[ -x "$t" ] && wanted "$(basename "$t")" || continue
	run_one "$(basename "$t")" "$t"
done
for t in "$build"/tests/fuzz_*; do
	[ -x "$t" ] && wanted "$(basename "$t")" || continue
	name=$(basename "$t"); corpus="tests/corpus/${name#fuzz_}"
	run_one "$name" "$t" "$corpus"
done
if [ -n "$only" ]; then
	[ -n "$broken" ] && echo "failing:$broken"
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
	exit
fi
# The Python package's tests run under pytest (Debian's python3-pytest with
# the system interpreter, which has numpy and scipy) when it is there; the
# others, and those without pytest, as plain scripts.
pytest_py=""
if /usr/bin/python3 -c "import pytest" 2>/dev/null; then
	pytest_py=/usr/bin/python3
fi
for t in tests/*/test_*.py; do
	[ -f "$t" ] || continue
	case $t in
	tests/python/*)
		if [ -n "$pytest_py" ]; then
			run_one "$(basename "$t")" "$pytest_py" scripts/pytest-line.py "$t"
			continue
		fi ;;
	esac
	run_one "$(basename "$t")" python3 "$t"
done
[ -n "$broken" ] && echo "failing:$broken"
[ "$skipped" -gt 0 ] && echo "$skipped skipped"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
