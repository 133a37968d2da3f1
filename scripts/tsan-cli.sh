#!/usr/bin/env bash
# The parsa binary built with ThreadSanitizer (make tsan) on the threaded
# runs: parallel Parsa and the streaming mode with several workers and
# servers, tau 0 and inf, mid-block syncs; best's refinement on threads.  Any data race fails the run (halt_on_error).
# Usage: scripts/tsan-cli.sh BUILD_DIR; ends "N passed, N failed".
set -u
bin=${1:-build/tsan}/parsa
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export TSAN_OPTIONS=halt_on_error=1
passed=0 failed=0
check() {
	local name=$1; shift
	if "$bin" partition "$@" --out "$out/p" -q >"$out/log" 2>&1; then
		passed=$((passed + 1)); echo "ok   $name"
	else
		failed=$((failed + 1)); echo "FAIL $name"; tail -n 30 "$out/log"
	fi
}
check stream-3w-inf data/a9a-sample.svm.gz -k 8 --stream --workers 3 --block-rows 300 --tau inf
check stream-2w-tau0 data/reuters-sample.svm.gz -k 16 --stream --workers 2 --servers 3 --block-rows 100
check parallel-2w-inf data/a9a-sample.svm.gz -k 8 --workers 2 --tau inf
check parallel-3w-tau1 data/facebook-sample.txt.gz -k 8 --workers 3 --tau 1
check parallel-2w-syncs5 data/reuters-sample.svm.gz -k 16 --workers 2 --servers 3 --syncs 5 --tau 0
# best: chains of V-cycles and the multilevel candidate on a thread pool
check best-threads3 data/reuters-sample.svm.gz -k 8 --quality best --threads 3 --ml-chains 4
check best-threads2-workers2 data/a9a-sample.svm.gz -k 8 --quality best --threads 2 --workers 2
# best --objective tsum: the communities (--ml-communities auto) and the
# multilevel candidate's deeper start beside the chains
check best-tsum-communities-threads3 data/facebook-sample.txt.gz --graph edges -k 16 --quality best --objective tsum --threads 3
# Algorithm 13 in rounds of lanes on threads (part_lanes)
check lanes3-threads3 data/a9a-sample.svm.gz -k 8 --blocks 11 --lanes 3 --threads 3
# Algorithm 11 in slices (part_run_v_slices), on the masks and on the
# users' lists above k=64
check vslices5-threads3 data/reuters-sample.svm.gz -k 16 --v-slices 5 --threads 3
check vslices4-k100-threads2 data/a9a-sample.svm.gz -k 100 --v-slices 4 --threads 2
# above a million nonzeros the default run's phases split the features
# into ranges of equal work (the used sets, the FM's counts), the reader
# pipelines its batches, the lanes scatter back to row order
"$bin" gen --examples 60000 --features 30000 --avg-nnz 20 --topics 32 \
	--out "$out/gen.svm" >/dev/null 2>&1
check default-1m-threads2 "$out/gen.svm" -k 16 --threads 2
check default-1m-threads3 "$out/gen.svm" -k 64 --threads 3
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
