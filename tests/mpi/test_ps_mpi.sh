#!/usr/bin/env bash
# tests/mpi/test_ps_mpi.sh: build tests/test_ps_mpi.c with the OpenMPI flags
# (independent of the Makefile) and run it.  It launches `timeout mpirun
# -np 2` and `-np 3 --oversubscribe` runs (loopback TCP only): pushes/pulls
# with known results, an idle cluster (no busy-spin), a rank that dies, and
# a malformed message.  Ends with "N passed, N failed[, N skipped]".
# Usage: tests/mpi/test_ps_mpi.sh [BUILD_DIR]
set -u
cd "$(dirname "$0")/../.."
out="${1:-${PARSA_BUILD:-build}}/mpi"
if ! command -v mpirun >/dev/null 2>&1 || ! pkg-config --exists ompi-c; then
	echo "skip: mpirun or the ompi-c pkg-config module is not installed"
	echo "0 passed, 0 failed, 1 skipped"
	exit 0
fi
mkdir -p "$out"
# shellcheck disable=SC2046
if ! gcc -std=c11 -O2 -g -Wall -Wextra -Wmissing-prototypes \
	-Wno-missing-field-initializers -D_GNU_SOURCE -pthread \
	-Ibase -Iserver -Itests $(pkg-config --cflags ompi-c) \
	-o "$out/test_ps_mpi" tests/test_ps_mpi.c server/*.c base/*.c \
	$(pkg-config --libs ompi-c) -lm -pthread; then
	echo "build of test_ps_mpi failed"
	echo "0 passed, 1 failed"
	exit 1
fi
exec "$out/test_ps_mpi"
