#!/bin/sh
# Quick start: installs dependencies, builds, and runs oobprofd with its
# embedded defaults (data folder ./oobprof-data with the SQLite catalog inside,
# http://127.0.0.1:8080). On the first start it also loads one sample job: a
# small real RISC-V program traced under qemu-riscv64, so the first page shows
# a flame graph. Stop with Ctrl-C. Extra arguments go to oobprofd.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
sh "$top/deploy/install-deps.sh"

[ -x "$top/configure" ] || (cd "$top" && autoreconf -fi)
build="$top/build"
mkdir -p "$build"
(cd "$build" && { [ -f Makefile ] || "$top/configure" -q CFLAGS="-O2 -g"; } && make -j"$(nproc)" -s)

"$build/oobprofd" "$@" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; exit 0' INT TERM
sh "$top/deploy/load-sample.sh" "$build" "http://127.0.0.1:8080" || echo "run: sample job not loaded (see above); the server runs anyway"
echo "oobprofd is serving http://127.0.0.1:8080/ (Ctrl-C stops it)"
wait $pid
