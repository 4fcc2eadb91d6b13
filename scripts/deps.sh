#!/usr/bin/env bash
# Installs the system packages cordon builds and tests with, when missing.
# Debian/Ubuntu (apt-get); elsewhere it says what to install.
set -euo pipefail

need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
{ command -v pkg-config >/dev/null 2>&1 && pkg-config --exists libseccomp; } || need+=(libseccomp-dev pkg-config)
command -v gcc >/dev/null 2>&1 || need+=(gcc libc6-dev)
# bin/cordon links statically (Makefile, TAGS): libseccomp's archive, which
# Debian's libseccomp-dev carries (Fedora: libseccomp-static).
if command -v gcc >/dev/null 2>&1; then
	a=$(gcc -print-file-name=libseccomp.a)
	case "$a" in /*) [ -e "$a" ] || need+=(libseccomp-dev) ;; *) need+=(libseccomp-dev) ;; esac
fi
if [ "${1:-}" = "--test" ]; then
	# Tests assemble a 32-bit exec helper and run scripts through these.
	command -v as >/dev/null 2>&1 || need+=(binutils)
	command -v python3 >/dev/null 2>&1 || need+=(python3)
	command -v make >/dev/null 2>&1 || need+=(make)
	command -v curl >/dev/null 2>&1 || need+=(curl)
	# The daemon's README examples pipe through jq.
	command -v jq >/dev/null 2>&1 || need+=(jq)
	command -v setsid >/dev/null 2>&1 || need+=(util-linux)
	# Multi-call binaries: applets by argv[0], nesting, login-shell dashes.
	command -v busybox >/dev/null 2>&1 || need+=(busybox)
	# Filesystems on loop and zram devices (content identity on unstable devices).
	PATH="$PATH:/usr/sbin:/sbin" command -v mkfs.ext4 >/dev/null 2>&1 || need+=(e2fsprogs)
	PATH="$PATH:/usr/sbin:/sbin" command -v losetup >/dev/null 2>&1 || need+=(mount)
	command -v mkfs.erofs >/dev/null 2>&1 || need+=(erofs-utils)
fi
if [ "${1:-}" = "--bench" ]; then
	# make bench cross-checks start-up times with hyperfine.
	command -v hyperfine >/dev/null 2>&1 || need+=(hyperfine)
fi
[ ${#need[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
	echo "cordon: please install: ${need[*]} (bubblewrap and the libseccomp development files, with the static library: libseccomp-static on Fedora)" >&2
	exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null 2>&1 || { echo "cordon: need root or sudo to install: ${need[*]}" >&2; exit 1; }
	sudo="sudo"
fi
echo "installing: ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
