#!/usr/bin/env bash
# make bench: run bench/bench.py and keep its output in bench/results/.
# The Zoltan PHG baseline (issue #6) needs libtrilinos-zoltan-dev; it is
# installed here (root or sudo), never by the product's build or tests.
set -eu
build=${1:-build}
mkdir -p bench/results
if [ ! -f /usr/include/trilinos/zoltan.h ]; then
	if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
	if command -v apt-get >/dev/null && { [ -z "$sudo" ] || command -v sudo >/dev/null; }; then
		DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends \
			libtrilinos-zoltan-dev || echo "bench: could not install Zoltan; no zoltan baseline"
	fi
fi
stamp=$(date +%Y%m%d-%H%M%S)
out="bench/results/bench-$stamp.md"
python3 bench/bench.py "$build" ${BENCH_ARGS:---study} | tee "$out"
python3 bench/bench.py "$build" --issue6 --tradeoff --json "bench/results/issue6-$stamp.json" | tee -a "$out"
python3 bench/plot_tradeoff.py "bench/results/issue6-$stamp.json" bench/tradeoff.svg
python3 bench/bench.py "$build" --slack | tee -a "$out"
python3 bench/tmax.py --bin "$build/parsa" --tsv "bench/results/tmax-$stamp.tsv" \
	--zoltan "bench/results/issue6-$stamp.json" | tee -a "$out"
python3 bench/parallel.py "$build" | tee -a "$out"
python3 bench/speed10.py "$build" | tee -a "$out"
python3 bench/http.py "$build" | tee -a "$out"
python3 bench/ui.py "$build" | tee -a "$out"
echo "results saved to $out"
