#!/usr/bin/env bash
# make bench: run bench/bench.py and keep its output in bench/results/.
set -eu
build=${1:-build}
mkdir -p bench/results
out="bench/results/bench-$(date +%Y%m%d-%H%M%S).md"
python3 bench/bench.py "$build" ${BENCH_ARGS:---study} | tee "$out"
python3 bench/parallel.py "$build" | tee -a "$out"
python3 bench/train.py "$build" | tee -a "$out"
echo "results saved to $out"
