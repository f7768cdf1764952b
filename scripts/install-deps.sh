#!/bin/sh
# Installs the Debian packages agentjail's build, tests and demo need.
# Idempotent and quiet when everything is present.
#   install-deps.sh          what the build, tests and demo need
#   install-deps.sh bench    and the peers the benchmark measures beside us
set -eu
# python3-matplotlib, -numpy, -pandas: the host-copied test image and the
# process tier make charts in session tests with them. python3-cffi: the
# Python package's binding; python3-pytest its tests; python3-pip, -venv:
# the test that installs it with pip, offline (its build backend is in-tree
# and needs neither setuptools nor wheel).
# libmicrohttpd-dev, libhiredis-dev, libssl-dev: agentjail serve's HTTP
# server, its Redis client, and SHA-256 for the keys file; libssl-dev is
# also the library's: its egress proxy ends a program's TLS to a secret's
# hosts and verifies the upstream's (docs/secrets.md). redis-server:
# the scale-out tests start one on loopback. libcurl4-openssl-dev: serve's
# completion webhooks (the POST, and its URL parser for the allow-list).
# zlib1g-dev: gzip request bodies (the E2B API's files.write with gzip).
# curl: the serve tests check what it reads of a refusal sent while it
# uploads. python3-yaml: the test that parses deploy/'s Kubernetes
# manifests. runsc: gVisor, the gvisor tier. ca-certificates: the CA
# bundle --from-host images copy and the process tier shows
# (docs/egress.md, HTTPS); openssl: the tests make a CA and a server
# certificate with it.
# e2fsprogs: mke2fs and debugfs make the microvm tier's root disk from an
# image (images/build-vm.sh).
# clang, libclang-rt-14-dev: libFuzzer for `make fuzz`, which `make test`
# runs briefly.
# node-typescript: the TypeScript compiler the process tier's TypeScript
# runs strip their types with, and the host-copied test image carries
# (docs/javascript.md).
PKGS="build-essential pkg-config libseccomp-dev libjansson-dev libc-ares-dev libcmocka-dev python3 python3-matplotlib python3-numpy python3-pandas python3-cffi python3-pytest python3-pip python3-requests python3-venv python3-yaml libmicrohttpd-dev libhiredis-dev libssl-dev libcurl4-openssl-dev zlib1g-dev redis-server curl debootstrap qemu-system-x86 lz4 cpio e2fsprogs binutils docker.io runsc ca-certificates openssl clang libclang-rt-14-dev node-typescript chromium"
# node and npm for the MCP tests (the official SDK comes from npm); a
# machine that has them from elsewhere (nodesource) keeps its own.
command -v node >/dev/null && command -v npm >/dev/null || PKGS="$PKGS nodejs npm"
if [ "${1:-}" = bench ]; then
	PKGS="$PKGS bubblewrap"
fi
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "agentjail: missing Debian packages:$missing (run this as root to install them)" >&2
	exit 1
fi
echo "agentjail: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
