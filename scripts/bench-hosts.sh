#!/usr/bin/env bash
# make bench-hosts: training across emulated hosts (bench/hosts.py): the
# datasets and placements first, then each timed group, then the tables
# (bench/results/hosts-*.json, hosts-*.md).
#
# Each timed group should own the machine: set BENCH_QUIET to a command
# prefix that takes an exclusive lock (on the development VM:
# BENCH_QUIET="/work/tools/cpu quiet"), and BENCH_RUN for the untimed
# preparation ("/work/tools/cpu run").  Needs root (network namespaces)
# and ../shared/data; skips with a message otherwise.
# Usage: scripts/bench-hosts.sh [BUILD] [GROUP...]   (default: all groups)
set -eu
build=${1:-build}
shift || true
groups=${*:-main4 hosts8 slow4 consist}
if ! bash scripts/netns-cluster.sh --name benchchk check; then
	echo "bench-hosts: skipped (no network namespaces here)"
	exit 0
fi
mkdir -p bench/results
# shellcheck disable=SC2086
${BENCH_RUN:-} python3 bench/hosts.py "$build" --group prep
for g in $groups; do
	# shellcheck disable=SC2086
	${BENCH_QUIET:-} python3 bench/hosts.py "$build" --group "$g" \
		${BENCH_HOSTS_ARGS:-}
done
out="bench/results/hosts-$(date +%Y%m%d-%H%M%S).md"
python3 bench/hosts.py "$build" --group report | tee "$out"
echo "tables saved to $out"
