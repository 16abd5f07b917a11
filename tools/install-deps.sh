#!/usr/bin/env bash
# Installs, from Debian 12's archive, everything rdmak needs to build and test. Idempotent.
# Used by the README's first command and by CI (.ci/run).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
if [ "$(id -u)" -ne 0 ]; then echo "tools/install-deps.sh: run as root (sudo)" >&2; exit 1; fi
apt-get update -qq
apt-get install -y -qq --no-install-recommends \
	build-essential clang libclang-rt-14-dev pkg-config make python3 python3-jsonschema \
	libjansson-dev libcmocka-dev libgrpc-dev libprotobuf-c-dev protobuf-c-compiler \
	libnl-route-3-dev libmnl-dev libibverbs-dev \
	iproute2 iputils-ping tar gzip procps time \
	libmicrohttpd-dev libgnutls28-dev libyaml-dev openssl curl \
	etcd-server etcd-client \
	golang-go golang-github-appc-cni-dev containernetworking-plugins >/dev/null
# Node.js runs the stand-in kubelet in the tests (an independent gRPC implementation);
# keep the one that is there if any.
command -v npm >/dev/null || apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
if [ -f tests/js/package.json ]; then (cd tests/js && npm ci --no-audit --no-fund --silent); fi
