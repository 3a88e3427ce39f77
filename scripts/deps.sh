#!/usr/bin/env bash
# Install the Debian packages rv needs to build, test and run its main job,
# skipping those already present.  As root it runs apt-get; otherwise it
# names the missing packages and exits 1.
set -euo pipefail

pkgs=(
	build-essential
	libarchive-dev
	libarchive-tools
	libturbojpeg0-dev
	libjpeg62-turbo-dev
	libpng-dev
	libwebp-dev
	libgif-dev
	libtiff-dev
	libzstd-dev
	liblzma-dev
	libbz2-dev
	libxxhash-dev
	libopenblas-openmp-dev
	libdnnl-dev
	gnuplot-nox
	zlib1g-dev
	zstd
	time
	strace
	bats
	parallel
	parallel
	mandoc
	imagemagick
	python3
	python3-pil
	python3-numpy
	python3-zstandard
	python3-xxhash
	python3-pip
	python3-venv
	python3-torch
	shellcheck
	valgrind
	munge
	slurmctld
	slurmd
	slurm-client
	dataset-fashion-mnist
	clang
	libclang-rt-14-dev
)
missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
	    grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "rv: missing Debian packages: ${missing[*]}" >&2
	echo "rv: run as root, or: sudo apt-get install ${missing[*]}" >&2
	exit 1
fi
echo "rv: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
