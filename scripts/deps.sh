#!/usr/bin/env bash
# Install the Debian packages parsa needs, if any is missing.
set -eu
pkgs="build-essential pkg-config libmetis-dev zlib1g-dev libjansson-dev
libevent-dev libopenmpi-dev openmpi-bin clang libclang-rt-14-dev python3
liblinear-tools wrk python3-yaml nftables iproute2
chromium chromium-driver man-db python3-numpy python3-scipy
python3-pip python3-setuptools python3-pytest valgrind"
missing=""
for p in $pkgs; do
	dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps: installing$missing" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# shellcheck disable=SC2086
$sudo apt-get install -y -qq $missing >/dev/null
