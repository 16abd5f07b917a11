#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs, from Debian 12's archive, everything rdmak needs to build and test. Idempotent.
# Used by the README's first command and by CI (.ci/run).
#
# Works as written for root (a minimal Debian image has no sudo) and for a user with sudo: the
# Debian packages need root, so a non-root caller gets them through `sudo`; the test suite's
# Node.js modules are installed as the caller, so that tests/js/node_modules is not root's.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
cd "$(dirname "$0")/.."
me=tools/install-deps.sh

if [ "${1:-}" = --system ]; then
	# the root half (run directly as root, or re-run through sudo)
	if [ "$(id -u)" -ne 0 ]; then echo "$me --system: must run as root" >&2; exit 1; fi
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends \
		build-essential clang clang-format clang-tidy bear groff-base libclang-rt-14-dev pkg-config \
		make python3 python3-jsonschema \
		libjansson-dev libcmocka-dev libgrpc-dev libprotobuf-c-dev protobuf-c-compiler \
		libnl-route-3-dev libibverbs-dev \
		iproute2 iputils-ping tar gzip procps time strace \
		libmicrohttpd-dev libgnutls28-dev libyaml-dev openssl curl \
		libfuse3-dev fuse3 \
		etcd-server etcd-client \
		golang-go golang-github-appc-cni-dev containernetworking-plugins \
		podman runc busybox-static \
		prometheus-node-exporter prometheus \
		qemu-system-x86 kmod cpio rdma-core ibverbs-utils perftest >/dev/null
	# podman builds the image (make image, tests/cmd/image.sh); runc runs it where crun cannot
	# (cgroup v1 + v2 "hybrid" hosts); busybox-static is the image's /bin/sh. node_exporter and
	# prometheus are the exporter's peers (tests/cmd/exporter.sh, tools/bench-exporter.sh).
	# The live-kernel tests (tests/vm) boot Debian's kernel under qemu-system-x86 with an
	# initramfs made with kmod's depmod/modprobe, cpio and busybox-static; in the guest,
	# rdma-core's rdma(8), ibverbs-utils' ibv_devinfo and perftest are the kernel's own tools
	# that rdmak is compared with. The kernel itself is not installed on this machine:
	# tests/vm/harness/boot.sh fetches linux-image-amd64's package with apt-get download into
	# the build folder.
	# Node.js runs the stand-in kubelet in the tests (an independent gRPC implementation);
	# keep the one that is there if any.
	command -v npm >/dev/null || apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
	exit 0
fi
[ $# -eq 0 ] || { echo "usage: $me   (installs the Debian packages, as root or through sudo, and tests/js's modules)" >&2; exit 2; }

if [ "$(id -u)" -eq 0 ]; then
	"$0" --system
elif command -v sudo >/dev/null; then
	echo "$me: installing Debian packages through sudo" >&2
	sudo -- "$0" --system
else
	echo "$me: installing Debian packages needs root, and sudo is not installed." >&2
	echo "$me: run it as root (su -c $me), or as root install sudo (apt-get install sudo), add yourself to the sudo group and run it again." >&2
	exit 1
fi
if [ -f tests/js/package.json ]; then (cd tests/js && npm ci --no-audit --no-fund --silent); fi
