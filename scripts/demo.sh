#!/usr/bin/env bash
# make demo: partition the bundled samples (data/) at k=8 with Parsa and
# compare with random, greedy and METIS on the same data (and Parsa's
# --quality best, also with --guard-slack inf: memory traded for T_sum).
set -eu
build=${1:-build}
bin="$build/parsa"
out="$build/demo"
mkdir -p "$out"
echo "== parsa demo: k=8 on the bundled samples (outputs in $out) =="
for spec in "a9a-sample.svm.gz" "reuters-sample.svm.gz" \
	"facebook-sample.txt.gz --graph adjacency" "movielens-sample.csv.gz"; do
	set -- $spec
	f=$1; shift
	echo
	"$bin" partition "data/$f" -k 8 "$@" --out "$out/${f%%.*}"
	printf '  %-10s %10s %10s %10s %10s\n' method M_max T_max T_sum seconds
	for m in random greedy metis parsa best best-slack; do
		# best: Parsa with --quality best (the default preset is 'parsa');
		# best-slack: the same, M_max and T_max free (--guard-slack inf)
		case $m in
		best) how="--quality best" ;;
		best-slack) how="--quality best --guard-slack inf" ;;
		*) how="--method $m" ;;
		esac
		"$bin" partition "data/$f" -k 8 "$@" $how --out "$out/$m" --json -q >/dev/null
		awk -v m="$m" '
			/"metrics": \{/ { inm = 1; next }
			inm && /\}/ { inm = 0 }
			inm && /"(M_max|T_max|T_sum)"/ { gsub(/[",]/, ""); v[$1] = $2 }
			/"partition":/ && !sec { gsub(/[",]/, ""); sec = $2 }
			END { printf "  %-10s %10.0f %10.0f %10.0f %10.3f\n", m, v["M_max:"], v["T_max:"], v["T_sum:"], sec }
		' "$out/$m.json"
	done
done
echo
echo "== the same on the parameter server: 2 worker threads streaming a9a in"
echo "   blocks of 2000 examples (neighbor sets, partition V and metrics on"
echo "   the servers; see README 'Streaming') =="
"$bin" partition data/a9a-sample.svm.gz -k 8 --stream --workers 2 \
	--block-rows 2000 --out "$out/a9a-stream"
echo
echo "placements and reports: $out/<sample>.{examples,features,json}"
echo "(the 'random' row is one seeded random placement; the 'random' column of"
echo " each summary is the mean of 5, as in the reports)"
