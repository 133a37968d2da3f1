#!/usr/bin/env bash
# netns-cluster.sh: N emulated hosts on this machine, and mpirun across them.
#
# Each host is a network namespace with one interface (eth0, 10.77.0.<i+1>)
# whose veth peer sits on a bridge inside a "switch" namespace: no address,
# link, bridge or qdisc of the cluster lives in the root namespace.  Links
# can be shaped (--link RATE[,DELAY[,LOSS]]); mpirun runs inside host 0 with
# the TCP transport only (no shared memory between hosts) and starts its
# daemons on the other hosts through a small rsh agent that does
# `ip netns exec` instead of ssh.
#
#   netns-cluster.sh check                      can namespaces be made here?
#   netns-cluster.sh up N [--link SPEC]         make N hosts (they stay up)
#   netns-cluster.sh run [--hosts N [--link SPEC]] [--timeout S] -- MPIRUN-ARGS
#   netns-cluster.sh exec I [--timeout S] -- CMD...   run CMD on host I
#   netns-cluster.sh status                     hosts, links, bytes per host
#   netns-cluster.sh info                       the cluster as key=value lines
#   netns-cluster.sh down                       remove everything of the cluster
#
# Common options (before or after the subcommand): --name NAME (default
# "default", or $PARSA_NETNS_NAME) picks the cluster, so several can exist
# at once; everything it makes is named pnc-NAME-*.  State (the list of
# namespaces made, hostfile, rsh agent) is kept in
# ${PARSA_NETNS_STATE:-/run/parsa-netns}/NAME.
#
# Link SPEC, one for every host's link to the switch:
#   RATE   e.g. 1gbit, 500mbit, 100mbit (tc units: bit kbit mbit gbit):
#          each host's upload and download (tbf on both ends of its veth).
#   DELAY  e.g. 0.2ms, 100us: one-way delay between two hosts (added where
#          a packet leaves a host).  Needs sch_netem in the kernel; where the
#          kernel lacks it (as on the development VM) the delay is recorded,
#          printed as "not applied", and exported to the command as
#          PARSA_NETNS_DELAY so that an application can add it itself
#          (scripts/train-hosts.sh does).
#   LOSS   e.g. 0.5%: share of packets leaving a host that are dropped (netem
#          where available, otherwise an nftables rule on the switch's
#          bridge; needs the nft command).
#
# `run` with --hosts makes a cluster for this run only and removes it on
# every exit path (success, failure, timeout, SIGINT/SIGTERM).  On a cluster
# made by `up`, a run leaves the cluster up but kills whatever the run left
# in its namespaces.  The script never touches a namespace it did not make:
# `up` refuses when any pnc-NAME-* namespace exists, `down` deletes only the
# namespaces recorded in the state directory.
#
# mpirun gets: --hostfile (one slot per host, rank i on host i), --mca
# plm_rsh_agent <agent>, --mca btl tcp,self, --mca btl_tcp_if_include and
# oob_tcp_if_include 10.77.0.0/24, and -np N unless the arguments name -np.
# As root it sets OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM); it exports
# OMPI_MCA_rtc=^hwloc unless the caller set OMPI_MCA_rtc.  Every run is under
# `timeout` (default 600 s; exit 124 when it fires).
#
# Exit codes: the command's own; 2 usage or set-up error; 77 namespaces
# cannot be made here (check, up, run --hosts).
set -euo pipefail

PREFIX=pnc
SUBNET=10.77.0
name=${PARSA_NETNS_NAME:-default}
state_root=${PARSA_NETNS_STATE:-/run/parsa-netns}
timeout_s=600

die() { echo "netns-cluster: $*" >&2; exit 2; }
note() { echo "netns-cluster: $*" >&2; }

usage() {
	sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'
	exit "${1:-2}"
}

# ---------------------------------------------------------------- parsing

# rate in bit/s (integer) from a tc-style rate: 1gbit, 500mbit, 64kbit, 1e9bit
rate_bits() {
	local v=$1 num unit
	[[ $v =~ ^([0-9]+(\.[0-9]+)?([eE][0-9]+)?)(bit|kbit|mbit|gbit)$ ]] ||
		return 1
	num=${BASH_REMATCH[1]} unit=${BASH_REMATCH[4]}
	awk -v n="$num" -v u="$unit" 'BEGIN {
		m = (u == "gbit") ? 1e9 : (u == "mbit") ? 1e6 : (u == "kbit") ? 1e3 : 1
		r = n * m; if (r < 8000) exit 1; printf "%.0f\n", r }'
}

# delay in microseconds from 0.2ms / 200us / 0.0002s / 0
delay_us() {
	local v=$1
	[[ $v =~ ^([0-9]+(\.[0-9]+)?)(us|ms|s)?$ ]] || return 1
	awk -v n="${BASH_REMATCH[1]}" -v u="${BASH_REMATCH[3]}" 'BEGIN {
		m = (u == "ms") ? 1e3 : (u == "us") ? 1 : 1e6
		if (u == "" && n != 0) exit 1
		printf "%.0f\n", n * m }'
}

# loss in parts per million from 0.5% / 0
loss_ppm() {
	local v=$1
	[[ $v =~ ^([0-9]+(\.[0-9]+)?)%?$ ]] || return 1
	awk -v n="${BASH_REMATCH[1]}" 'BEGIN { if (n > 50) exit 1; printf "%.0f\n", n * 1e4 }'
}

# parse_link SPEC: sets link_rate (bit/s, 0 = unshaped), link_delay_us,
# link_loss_ppm
parse_link() {
	local spec=$1 r d l extra
	IFS=, read -r r d l extra <<<"$spec"
	[ -z "${extra:-}" ] || die "--link $spec: at most RATE,DELAY,LOSS"
	link_rate=0 link_delay_us=0 link_loss_ppm=0
	if [ -n "$r" ] && [ "$r" != "0" ] && [ "$r" != "none" ]; then
		link_rate=$(rate_bits "$r") ||
			die "--link $spec: bad rate '$r' (e.g. 1gbit, 100mbit; at least 8kbit)"
	fi
	if [ -n "${d:-}" ]; then
		link_delay_us=$(delay_us "$d") ||
			die "--link $spec: bad delay '$d' (e.g. 0.2ms, 100us)"
	fi
	if [ -n "${l:-}" ]; then
		link_loss_ppm=$(loss_ppm "$l") ||
			die "--link $spec: bad loss '$l' (e.g. 0.5%, at most 50%)"
	fi
}

fmt_rate() { awk -v r="$1" 'BEGIN {
	if (r == 0) print "unshaped"; else if (r >= 1e9) printf "%ggbit\n", r / 1e9;
	else if (r >= 1e6) printf "%gmbit\n", r / 1e6; else printf "%gkbit\n", r / 1e3 }'; }

# ------------------------------------------------------------ environment

ns_sw() { echo "$PREFIX-$name-sw"; }
ns_host() { echo "$PREFIX-$name-h$1"; }
state_dir() { echo "$state_root/$name"; }

have_netem() {
	# The kernel knows netem iff tc can create one; probe in a scratch
	# namespace of our own.
	local probe="$PREFIX-$name-probe" ok=1
	ip netns add "$probe" 2>/dev/null || return 1
	ip -n "$probe" link add pncprobe0 type veth peer name pncprobe1 2>/dev/null &&
		tc -n "$probe" qdisc add dev pncprobe0 root netem delay 1ms \
			>/dev/null 2>&1 && ok=0
	ip netns del "$probe" 2>/dev/null || true
	return $ok
}

# check: 0 when namespaces, veth pairs, a bridge and tbf can be made here;
# 77 with the reason otherwise.
check_env() {
	local why="" probe="$PREFIX-$name-probe"
	if [ "$(id -u)" -ne 0 ]; then
		why="not root (network namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN)"
	elif ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
		why="ip or tc (iproute2) not installed"
	elif ip netns list 2>/dev/null | grep -q "^$probe\b"; then
		why="a namespace $probe exists (not ours): refusing to touch it"
	elif ! ip netns add "$probe" 2>/dev/null; then
		why="cannot create a network namespace (ip netns add failed)"
	else
		if ! ip -n "$probe" link add pncprobe0 type veth peer name pncprobe1 2>/dev/null; then
			why="cannot create a veth pair"
		elif ! ip -n "$probe" link add pncprobebr type bridge 2>/dev/null; then
			why="cannot create a bridge"
		elif ! tc -n "$probe" qdisc add dev pncprobe0 root tbf rate 1mbit \
			burst 16kb latency 50ms 2>/dev/null; then
			why="tc cannot add a tbf qdisc"
		fi
		ip netns del "$probe" 2>/dev/null || true
	fi
	if [ -n "$why" ]; then
		echo "netns-cluster: cannot make emulated hosts here: $why" >&2
		return 77
	fi
	return 0
}

our_namespaces() { ip netns list 2>/dev/null | awk '{print $1}' | grep "^$PREFIX-$name-" || true; }

# ---------------------------------------------------------------- tear-down

kill_ns_procs() {
	local ns=$1 pids
	pids=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ') || true
	[ -n "${pids// /}" ] || return 0
	# shellcheck disable=SC2086
	kill -TERM $pids 2>/dev/null || true
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		pids=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ') || true
		[ -n "${pids// /}" ] || return 0
		sleep 0.2
	done
	# shellcheck disable=SC2086
	kill -KILL $pids 2>/dev/null || true
}

# Remove what the state directory says we made (and only that).  Killing
# the namespaces' processes first: a namespace with live processes
# survives `ip netns del` (and its veth, bridge and qdiscs with it).
teardown() {
	local sd ns
	sd=$(state_dir)
	[ -f "$sd/namespaces" ] || { rm -rf "$sd"; return 0; }
	while read -r ns; do
		[ -n "$ns" ] || continue
		case $ns in "$PREFIX-$name-"*) ;; *) continue ;; esac
		ip netns list | awk '{print $1}' | grep -qx "$ns" || continue
		kill_ns_procs "$ns"
	done <"$sd/namespaces"
	while read -r ns; do
		case $ns in "$PREFIX-$name-"*) ;; *) continue ;; esac
		ip netns list | awk '{print $1}' | grep -qx "$ns" || continue
		ip netns del "$ns" 2>/dev/null || note "could not delete namespace $ns"
	done <"$sd/namespaces"
	rm -rf "$sd"
}

kill_leftovers() {
	local sd ns
	sd=$(state_dir)
	[ -f "$sd/namespaces" ] || return 0
	while read -r ns; do
		case $ns in "$PREFIX-$name-"*) kill_ns_procs "$ns" ;; esac
	done <"$sd/namespaces"
}

# ------------------------------------------------------------------- set-up

shape() {
	# shape NS DEV EGRESS(0|1): rate on every end; delay and loss where a
	# packet leaves a host (egress=1)
	local ns=$1 dev=$2 egress=$3 burst
	local netem_args=""
	if [ "$egress" = 1 ] && [ "$netem" = 1 ]; then
		[ "$link_delay_us" -gt 0 ] && netem_args+=" delay ${link_delay_us}us"
		[ "$link_loss_ppm" -gt 0 ] && netem_args+=" loss $(awk -v p="$link_loss_ppm" 'BEGIN{printf "%g%%", p/1e4}')"
	fi
	if [ "$link_rate" -gt 0 ]; then
		# burst: 1 ms at the rate, at least 10 full frames
		burst=$(awk -v r="$link_rate" 'BEGIN { b = r / 8 / 1000; if (b < 15140) b = 15140; printf "%.0f\n", b }')
	fi
	if [ -n "$netem_args" ]; then
		# shellcheck disable=SC2086
		tc -n "$ns" qdisc add dev "$dev" root handle 1: netem limit 100000 $netem_args
		[ "$link_rate" -gt 0 ] &&
			tc -n "$ns" qdisc add dev "$dev" parent 1:1 handle 10: tbf \
				rate "${link_rate}bit" burst "$burst" latency 50ms
	elif [ "$link_rate" -gt 0 ]; then
		tc -n "$ns" qdisc add dev "$dev" root handle 1: tbf \
			rate "${link_rate}bit" burst "$burst" latency 50ms
	fi
	return 0
}

do_up() {
	local n=$1 spec=$2 sd i ns sw
	if ! [[ $n =~ ^[0-9]+$ ]] || [ "$n" -lt 1 ] || [ "$n" -gt 250 ]; then
		die "up: the number of hosts must be 1..250, not '$n'"
	fi
	parse_link "$spec"
	check_env || exit 77
	sd=$(state_dir)
	[ ! -e "$sd" ] || die "cluster '$name' is up ($sd exists): run 'down' first"
	if [ -n "$(our_namespaces)" ]; then
		die "namespaces named $PREFIX-$name-* exist but were not made by this cluster: $(our_namespaces | tr '\n' ' ')(refusing to touch them; pick another --name)"
	fi
	netem=0
	if [ "$link_delay_us" -gt 0 ] || [ "$link_loss_ppm" -gt 0 ]; then
		have_netem && netem=1
	fi
	if [ "$link_loss_ppm" -gt 0 ] && [ "$netem" = 0 ] && ! command -v nft >/dev/null; then
		die "--link $spec: loss needs sch_netem (not in this kernel) or the nft command (Debian: nftables)"
	fi
	mkdir -p "$sd"
	: >"$sd/namespaces"
	# from here on, a failure removes what was made
	up_done=0
	trap '[ "$up_done" = 1 ] || teardown' EXIT
	sw=$(ns_sw)
	echo "$sw" >>"$sd/namespaces"
	ip netns add "$sw"
	ip -n "$sw" link set lo up
	ip -n "$sw" link add br0 type bridge
	ip -n "$sw" link set br0 up
	: >"$sd/hostfile"
	for ((i = 0; i < n; i++)); do
		ns=$(ns_host "$i")
		echo "$ns" >>"$sd/namespaces"
		ip netns add "$ns"
		ip -n "$ns" link set lo up
		ip -n "$sw" link add "p$i" type veth peer name eth0 netns "$ns"
		ip -n "$sw" link set "p$i" master br0
		ip -n "$sw" link set "p$i" up
		ip -n "$ns" addr add "$SUBNET.$((i + 1))/24" dev eth0
		ip -n "$ns" link set eth0 up
		shape "$ns" eth0 1
		shape "$sw" "p$i" 0
		echo "$SUBNET.$((i + 1)) slots=1" >>"$sd/hostfile"
	done
	if [ "$link_loss_ppm" -gt 0 ] && [ "$netem" = 0 ]; then
		# drop on the switch what enters it from a host's link
		{
			echo "table bridge pnc_link {"
			echo "  chain hostloss { type filter hook forward priority 0; policy accept;"
			for ((i = 0; i < n; i++)); do
				echo "    iifname \"p$i\" numgen random mod 1000000 < $link_loss_ppm counter drop"
			done
			echo "  }"
			echo "}"
		} | ip netns exec "$sw" nft -f -
	fi
	# the rsh agent: "agent HOST CMD..." runs CMD on HOST's namespace
	# shellcheck disable=SC2016
	{
		echo '#!/bin/sh'
		echo "# made by netns-cluster.sh for cluster $name"
		echo 'host=$1; shift'
		echo 'case $host in'
		for ((i = 0; i < n; i++)); do
			echo "$SUBNET.$((i + 1))) ns=$(ns_host "$i") ;;"
		done
		echo '*) echo "netns-cluster agent: unknown host $host" >&2; exit 255 ;;'
		echo 'esac'
		echo 'exec ip netns exec "$ns" /bin/sh -c "$*"'
	} >"$sd/agent"
	chmod +x "$sd/agent"
	local delay_note="none" loss_note="none"
	if [ "$link_delay_us" -gt 0 ]; then
		if [ "$netem" = 1 ]; then delay_note="${link_delay_us}us (netem)"
		else delay_note="${link_delay_us}us NOT APPLIED (no sch_netem in this kernel; exported as PARSA_NETNS_DELAY)"; fi
	fi
	if [ "$link_loss_ppm" -gt 0 ]; then
		if [ "$netem" = 1 ]; then loss_note="$(awk -v p="$link_loss_ppm" 'BEGIN{printf "%g%%", p/1e4}') (netem)"
		else loss_note="$(awk -v p="$link_loss_ppm" 'BEGIN{printf "%g%%", p/1e4}') (nftables on the switch)"; fi
	fi
	cat >"$sd/info" <<EOF
hosts=$n
rate_bits=$link_rate
delay_us=$link_delay_us
loss_ppm=$link_loss_ppm
netem=$netem
EOF
	up_done=1
	trap - EXIT
	echo "netns-cluster: cluster '$name' up: $n hosts $SUBNET.1-$SUBNET.$n; rate $(fmt_rate "$link_rate") per host each way; delay $delay_note; loss $loss_note" >&2
}

# sets hosts, rate_bits, delay_us, loss_ppm, netem
hosts=0 rate_bits=0 delay_us=0 loss_ppm=0 netem=0
load_info() {
	local sd
	sd=$(state_dir)
	[ -f "$sd/info" ] || die "cluster '$name' is not up (no $sd/info)"
	# shellcheck disable=SC1091
	. "$sd/info"
}

# --------------------------------------------------------------- commands

mpirun_cmd() {
	# mpirun_cmd ARGS...: prints nothing, fills the array cmd
	local sd has_np=0 a
	sd=$(state_dir)
	for a in "$@"; do
		case $a in -np | -n | --np | -c) has_np=1 ;; esac
	done
	# shellcheck disable=SC2054
	cmd=(ip netns exec "$(ns_host 0)" mpirun --hostfile "$sd/hostfile"
		--mca plm_rsh_agent "$sd/agent" --mca btl tcp,self
		--mca btl_tcp_if_include "$SUBNET.0/24"
		--mca oob_tcp_if_include "$SUBNET.0/24")
	[ "$has_np" = 1 ] || cmd+=(-np "$hosts")
	cmd+=("$@")
}

# Run "$@" under timeout, in the background so that a signal to this script
# interrupts the wait (the EXIT trap then cleans up).
child=""
run_timed() {
	set +e
	timeout -k 5 "$timeout_s" "$@" &
	child=$!
	wait "$child"
	local rc=$?
	child=""
	set -e
	return $rc
}

on_signal() {
	[ -n "$child" ] && kill -TERM "$child" 2>/dev/null
	exit "$1"
}

export_env() {
	export PARSA_NETNS_NAME=$name PARSA_NETNS_HOSTS=$hosts
	export PARSA_NETNS_RATE=$rate_bits PARSA_NETNS_DELAY="${delay_us}us"
	export PARSA_NETNS_NETEM=$netem
	# no hwloc binding in the emulated hosts: orted crashed in
	# hwloc_shmem_topology_write without it (an OMPI_MCA_rtc set by the
	# caller, even empty, wins)
	export OMPI_MCA_rtc="${OMPI_MCA_rtc-^hwloc}"
	if [ "$(id -u)" -eq 0 ]; then
		export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	fi
}

do_run() {
	local want_hosts=$1 spec=$2 rc ephemeral=0
	shift 2
	[ $# -gt 0 ] || die "run: nothing to run (run [--hosts N] -- MPIRUN-ARGS...)"
	if [ -n "$want_hosts" ]; then
		[ ! -e "$(state_dir)" ] || die "run --hosts: cluster '$name' is already up; drop --hosts to use it, or pick another --name"
		ephemeral=1
		trap 'teardown' EXIT
		trap 'on_signal 130' INT
		trap 'on_signal 143' TERM
		( do_up "$want_hosts" "$spec" ) || exit $?
	else
		trap 'kill_leftovers' EXIT
		trap 'on_signal 130' INT
		trap 'on_signal 143' TERM
	fi
	load_info
	export_env
	mpirun_cmd "$@"
	rc=0
	run_timed "${cmd[@]}" || rc=$?
	[ "$rc" -ne 124 ] || note "run: timed out after ${timeout_s}s"
	[ "$ephemeral" = 1 ] || kill_leftovers
	exit "$rc"
}

do_exec() {
	local i=$1 rc
	shift
	[ "${1:-}" = "--" ] && shift
	[ $# -gt 0 ] || die "exec: nothing to run (exec I -- CMD...)"
	load_info
	if ! [[ $i =~ ^[0-9]+$ ]] || [ "$i" -ge "$hosts" ]; then
		die "exec: no host $i (hosts 0..$((hosts - 1)))"
	fi
	export_env
	trap 'on_signal 130' INT
	trap 'on_signal 143' TERM
	rc=0
	run_timed ip netns exec "$(ns_host "$i")" "$@" || rc=$?
	exit "$rc"
}

do_status() {
	local sd i ns
	sd=$(state_dir)
	if [ ! -f "$sd/info" ]; then
		echo "cluster '$name': down"
		[ -z "$(our_namespaces)" ] ||
			echo "  (namespaces named $PREFIX-$name-* exist but are not this cluster's: $(our_namespaces | tr '\n' ' '))"
		return 0
	fi
	load_info
	echo "cluster '$name': $hosts hosts; rate $(fmt_rate "$rate_bits"); delay ${delay_us}us$([ "$netem" = 1 ] || [ "$delay_us" = 0 ] || echo ' (not applied: no netem)'); loss $(awk -v p="$loss_ppm" 'BEGIN{printf "%g%%", p/1e4}')"
	echo "state: $sd"
	for ((i = 0; i < hosts; i++)); do
		ns=$(ns_host "$i")
		# shellcheck disable=SC2046
		set -- $(ip -n "$ns" -s link show eth0 2>/dev/null |
			awk '/RX:/{getline; rx=$1} /TX:/{getline; tx=$1} END{print rx+0, tx+0}')
		echo "host $i: $ns $SUBNET.$((i + 1)) eth0 rx ${1:-?} B tx ${2:-?} B; qdisc: $(tc -n "$ns" qdisc show dev eth0 2>/dev/null | head -n 1)"
	done
	if [ "$loss_ppm" -gt 0 ] && [ "$netem" = 0 ]; then
		echo "dropped on the switch: $(ip netns exec "$(ns_sw)" nft list table bridge pnc_link 2>/dev/null |
			awk '/counter packets/{for (i = 1; i <= NF; i++) if ($i == "packets") s += $(i+1)} END{print s+0}') packets"
	fi
}

do_down() {
	local sd
	sd=$(state_dir)
	if [ ! -d "$sd" ]; then
		if [ -n "$(our_namespaces)" ]; then
			die "down: cluster '$name' has no state ($sd) but namespaces $(our_namespaces | tr '\n' ' ')exist: not made by this script, left alone"
		fi
		note "cluster '$name' is not up"
		return 0
	fi
	teardown
	note "cluster '$name' down"
}

# ------------------------------------------------------------------- main

cmdname="" args=() hosts_opt="" link_spec="" pos=()
while [ $# -gt 0 ]; do
	case $1 in
	--name) name=${2:?--name needs a value}; shift 2 ;;
	--name=*) name=${1#--name=}; shift ;;
	--link) link_spec=${2:?--link needs a value}; shift 2 ;;
	--link=*) link_spec=${1#--link=}; shift ;;
	--hosts) hosts_opt=${2:?--hosts needs a value}; shift 2 ;;
	--timeout) timeout_s=${2:?--timeout needs a value}; shift 2 ;;
	-h | --help) usage 0 ;;
	--) shift; args=("$@"); break ;;
	-*) die "unknown option $1 (see --help)" ;;
	*)
		if [ -z "$cmdname" ]; then cmdname=$1; else pos+=("$1"); fi
		shift ;;
	esac
done
[[ $name =~ ^[a-z0-9]{1,12}$ ]] || die "--name: 1-12 characters a-z 0-9, not '$name'"
if ! [[ $timeout_s =~ ^[0-9]+$ ]] || [ "$timeout_s" -eq 0 ]; then
	die "--timeout: whole seconds > 0, not '$timeout_s'"
fi
command -v ip >/dev/null || die "ip (iproute2) not found"

case $cmdname in
check) check_env; exit $? ;;
up)
	[ ${#pos[@]} -eq 1 ] || die "usage: up N [--link RATE[,DELAY[,LOSS]]]"
	do_up "${pos[0]}" "$link_spec" ;;
run)
	[ ${#pos[@]} -eq 0 ] || die "run: unexpected '${pos[0]}' (run [--hosts N] -- MPIRUN-ARGS)"
	[ -z "$link_spec" ] || [ -n "$hosts_opt" ] || die "run: --link only with --hosts (a cluster made by up keeps its links)"
	do_run "$hosts_opt" "$link_spec" ${args[@]+"${args[@]}"} ;;
exec)
	[ ${#pos[@]} -eq 1 ] || die "usage: exec I -- CMD..."
	do_exec "${pos[0]}" ${args[@]+"${args[@]}"} ;;
status) do_status ;;
info)
	load_info
	cat "$(state_dir)/info" ;;
down) do_down ;;
"") usage 2 ;;
*) die "unknown command '$cmdname' (check, up, run, exec, status, info, down)" ;;
esac
