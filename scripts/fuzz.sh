#!/usr/bin/env bash
# make fuzz: build each tests/fuzz_*.c as a real libFuzzer target with clang
# (ASan+UBSan) and run it for FUZZ_SECONDS (default 60) on its corpus.
set -eu
secs=${FUZZ_SECONDS:-60}
out=build/fuzz
mkdir -p "$out"
# the HTTP layer too (fuzz_http), with the web page's assets as C arrays
python3 scripts/embed-ui.py "$out/http_ui_assets.c" http/ui/*
srcs="$(ls base/*.c parsa/*.c server/*.c partitioner/*.c http/*.c) $out/http_ui_assets.c"
flags="-std=c11 -g -O1 -D_GNU_SOURCE -Ibase -Iparsa -Iserver -Ipartitioner -Ihttp $(pkg-config --cflags ompi-c libevent 2>/dev/null) -fsanitize=fuzzer,address,undefined"
for f in $(ls tests/fuzz_*.c | grep -v fuzz_main.c); do
	name=$(basename "$f" .c)
	echo "== $name"
	# shellcheck disable=SC2086
	clang $flags -o "$out/$name" "$f" $srcs -lmetis -ljansson -lz -levent_pthreads -levent $(pkg-config --libs ompi-c 2>/dev/null) -lm -pthread
	corpus="tests/corpus/${name#fuzz_}"
	work="$out/corpus-${name#fuzz_}"
	mkdir -p "$work"
	"$out/$name" -max_total_time="$secs" -timeout=10 "$work" "$corpus"
done
