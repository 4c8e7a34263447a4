#!/bin/sh
# Installs every Debian package that oobprof's build, tests and benchmarks need,
# then the viewer's npm packages from the committed lock file. Idempotent: a
# second run installs nothing new. Needs root (or sudo) for apt-get.
# (linux-source-6.1 and the kernel build tools on the line after opensbi:
# tests/tools/gen-linux.sh builds a small kernel for full-system traces;
# tests/tools/gen-python.sh cross-builds CPython with python3, Debian 12's
# 3.11.2, as its build Python.)
set -eu

PKGS="build-essential autoconf automake libtool pkg-config clang lld
  libclang-rt-14-dev clang-format
  libmicrohttpd-dev libjansson-dev libelf-dev libdw-dev liblz4-dev lz4
  libsqlite3-dev sqlite3 libpq-dev postgresql zlib1g-dev nettle-dev
  gcc-riscv64-linux-gnu g++-riscv64-linux-gnu libc6-dev-riscv64-cross
  binutils-riscv64-linux-gnu
  qemu-user qemu-system-misc opensbi
  linux-source-6.1 bc flex bison libssl-dev cpio patch
  python3 python3-jsonschema curl xz-utils git gdb valgrind
  golang-go wrk chromium"
# Node.js may come from elsewhere on the image (its npm conflicts with Debian's).
command -v npm >/dev/null 2>&1 || PKGS="$PKGS nodejs npm"

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "install-deps: installing:$missing"
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q
	# shellcheck disable=SC2086
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
else
	echo "install-deps: Debian packages already installed"
fi

# The viewer's JavaScript comes from the npm registry, pinned by package-lock.json.
top=$(cd "$(dirname "$0")/.." && pwd)
if [ -f "$top/package-lock.json" ]; then
	if [ ! -d "$top/node_modules" ] || [ "$top/package-lock.json" -nt "$top/node_modules/.package-lock.json" ]; then
		(cd "$top" && npm ci --no-audit --no-fund)
	else
		echo "install-deps: node_modules up to date"
	fi
fi
