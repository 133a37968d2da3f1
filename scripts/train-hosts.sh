#!/usr/bin/env bash
# train-hosts.sh: `parsa train --mpi` across N emulated hosts, one rank per
# host (rank i hosts worker i and server i), over real TCP through shaped
# links (scripts/netns-cluster.sh).
#
#   scripts/train-hosts.sh --hosts N [--link RATE[,DELAY[,LOSS]]]
#       [--no-scale] [--name NAME] [--timeout S] [--bin PARSA]
#       -- DATA --placement P [more parsa train options]
#
# The placement must have N parts (or give --workers N with random).
#
# Scaling: the N hosts share this machine's C cores, so each computes N/C
# times slower than a real machine would (when N > C).  So that the ratio
# of computing to communicating is that of N real machines with the named
# link, the link is slowed by the same factor F = N/C: the rate is divided
# by F and the delay multiplied by F (the issue asks for the rate; the
# delay is part of the communication time too).  --no-scale applies the
# link as given.  The script prints what it applies; the trainer's per-pass
# JSON says it in "link" (nominal link, scale, rate and delay applied), and
# every timing of such a run is emulated ("emulated": true).
#
# Delay: tc netem where the kernel has it; otherwise (as on the development
# VM, whose kernel lacks sch_netem) the trainer's transport adds it to
# every message between hosts (parsa train --link inf,DELAY), and "link"
# says "delay_via": "transport".
#
# OMPI_MCA_rtc=^hwloc is exported (orted crashed in libhwloc without
# it); set OMPI_MCA_rtc yourself to override.
#
# Everything the cluster made is removed on every exit path.  Exit status:
# the training run's; 2 usage; 77 namespaces cannot be made here.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cluster="$here/netns-cluster.sh"
hosts="" link="" scale=1 name="train$$" timeout_s=3600
bin="${PARSA_BIN:-$here/../build/parsa}"

die() { echo "train-hosts: $*" >&2; exit 2; }
usage() {
	sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'
	exit "${1:-2}"
}

while [ $# -gt 0 ]; do
	case $1 in
	--hosts) hosts=${2:?--hosts needs a value}; shift 2 ;;
	--link) link=${2:?--link needs a value}; shift 2 ;;
	--no-scale) scale=0; shift ;;
	--name) name=${2:?--name needs a value}; shift 2 ;;
	--timeout) timeout_s=${2:?--timeout needs a value}; shift 2 ;;
	--bin) bin=${2:?--bin needs a value}; shift 2 ;;
	-h | --help) usage 0 ;;
	--) shift; break ;;
	*) die "unknown option $1 (see --help)" ;;
	esac
done
[ $# -gt 0 ] || die "nothing to train: -- DATA --placement P [options]"
if ! [[ $hosts =~ ^[0-9]+$ ]] || [ "$hosts" -lt 1 ]; then
	die "--hosts N (N >= 1) is required"
fi
[ -x "$bin" ] || die "no parsa binary at $bin (make, or --bin PATH)"
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")

cores=$(nproc 2>/dev/null || echo 1)
factor=1
if [ "$scale" = 1 ] && [ "$hosts" -gt "$cores" ]; then
	factor=$(awk -v n="$hosts" -v c="$cores" 'BEGIN { printf "%g", n / c }')
fi

# RATE,DELAY,LOSS -> the applied spec (rate / factor, delay * factor)
rate="" delay="" loss=""
if [ -n "$link" ]; then
	IFS=, read -r rate delay loss _ <<<"$link"
fi
applied_rate="" applied_delay=""
if [ -n "$rate" ] && [ "$rate" != 0 ]; then
	[[ $rate =~ ^([0-9]+(\.[0-9]+)?)(bit|kbit|mbit|gbit)$ ]] ||
		die "--link $link: bad rate '$rate' (e.g. 1gbit, 100mbit)"
	applied_rate=$(awk -v n="${BASH_REMATCH[1]}" -v u="${BASH_REMATCH[3]}" \
		-v f="$factor" 'BEGIN {
		m = (u == "gbit") ? 1e9 : (u == "mbit") ? 1e6 : (u == "kbit") ? 1e3 : 1
		printf "%.0fbit", n * m / f }')
fi
if [ -n "$delay" ] && [ "$delay" != 0 ]; then
	[[ $delay =~ ^([0-9]+(\.[0-9]+)?)(us|ms|s)$ ]] ||
		die "--link $link: bad delay '$delay' (e.g. 0.2ms, 100us)"
	applied_delay=$(awk -v n="${BASH_REMATCH[1]}" -v u="${BASH_REMATCH[3]}" \
		-v f="$factor" 'BEGIN {
		m = (u == "ms") ? 1e3 : (u == "us") ? 1 : 1e6
		printf "%.0fus", n * m * f }')
fi
spec="${applied_rate:-0}"
[ -z "$applied_delay$loss" ] || spec="$spec,${applied_delay:-0}"
[ -z "$loss" ] || spec="$spec,$loss"

echo "train-hosts: $hosts hosts on $cores cores: scale $factor$(
	[ "$scale" = 1 ] || echo ' (--no-scale)'); link ${link:-unshaped} -> rate ${applied_rate:-unshaped} per host each way, delay ${applied_delay:-none}${loss:+, loss $loss} (timings emulated)" >&2

cleanup() { "$cluster" --name "$name" down >/dev/null 2>&1 || true; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
rc=0
"$cluster" --name "$name" up "$hosts" --link "$spec" || rc=$?
[ "$rc" = 0 ] || exit "$rc"
netem=$("$cluster" --name "$name" info | sed -n 's/^netem=//p')
extra=()
if [ -n "$applied_delay" ] && [ "$netem" != 1 ]; then
	extra=(--link "inf,$applied_delay")
	echo "train-hosts: no sch_netem in this kernel: the delay is added by the trainer's transport (--link inf,$applied_delay)" >&2
fi
export PARSA_HOSTS_LINK="${link:-}" PARSA_HOSTS_SCALE="$factor"
# OpenMPI's orted crashed in hwloc_shmem_topology_write (libhwloc) on this
# VM; the emulated hosts need no hwloc binding.  A caller's OMPI_MCA_rtc
# (even empty) wins.
export OMPI_MCA_rtc="${OMPI_MCA_rtc-^hwloc}"
"$cluster" --name "$name" --timeout "$timeout_s" run -- -np "$hosts" \
	"$bin" train "$@" --mpi "${extra[@]}" || rc=$?
exit "$rc"
