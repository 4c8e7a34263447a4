#!/bin/sh
# test_build_release.sh: the quick start's build (deploy/run.sh: -O2 -g, no
# sanitizers) compiles with -Werror. GCC warns at -O2 about things the test
# build (-O1 with sanitizers) does not see, such as a value "maybe used
# uninitialized"; once such a warning broke the README's first command.
set -u
T=test_build_release
dir=$(mktemp -d "${TMPDIR:-/tmp}/oob-release.XXXXXX")
trap 'rm -rf "$dir"' EXIT
if (cd "$dir" && "$OOB_SRCDIR/configure" -q CFLAGS="-O2 -g" >configure.log 2>&1 &&
	make -j2 -s >make.log 2>&1); then
	echo "PASS: $T: deploy/run.sh's -O2 build compiles every program with -Werror"
else
	echo "FAIL: $T: -O2 build: $(cat "$dir/configure.log" "$dir/make.log" | grep -m 3 "error" | tr "\n" " ")"
fi
