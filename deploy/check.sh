#!/bin/sh
# The whole test suite, exactly as CI runs it: dependencies, a build with
# AddressSanitizer and UndefinedBehaviorSanitizer, the style check, then every
# test tier (unit, integration, browser; a test per core at a time), then the
# load tier (make check-load, alone: its figures need the machine, counted
# with the others). The last line printed is
# "tests: N passed, N failed, N skipped"; the exit status is non-zero on any
# failure.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
sh "$top/deploy/install-deps.sh"

cd "$top"
echo "check: style (clang-format --dry-run -Werror)"
git ls-files '*.c' '*.h' | xargs clang-format --dry-run -Werror

[ -x "$top/configure" ] || autoreconf -fi
build="$top/build-check"
mkdir -p "$build"
cd "$build"
[ -f Makefile ] || "$top/configure" -q --enable-asan --enable-ubsan
make -j"$(nproc)"
make -s -j"$(nproc)" check
make -s check-load
