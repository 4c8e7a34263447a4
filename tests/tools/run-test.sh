#!/bin/sh
# run-test.sh COMMAND... TEST: how `make check` runs every test (the
# LOG_COMPILERs of Makefile.am). Runs the test under `timeout`, its output
# going to the harness's .log as it comes, then gives the automake test
# driver the status it reads: 1 with any FAIL line, 0 when a case passed,
# 77 (skip) when every case skipped. A skip is never a pass.
#
# Lines added to the .log, so that tests/tools/summary.sh counts them: a
# test that exits non-zero (not 77) without a FAIL line, or exits 0 without
# printing any result, gets a FAIL line; one that exits 77 silently gets a
# SKIP line.
set -u
[ $# -ge 1 ] || {
	echo "usage: $0 [COMMAND...] TEST" >&2
	exit 99
}
for test; do :; done
# The harness runs "./tests/unit/test_x" or "$srcdir/tests/integration/test_x.sh".
name=${test#./}
name=${name#"${srcdir:-.}"/}
log=${name%.sh}
log=${log%.mjs}.log
timeout=${TEST_TIMEOUT:-900}

out=$(mktemp) && rcfile=$(mktemp) || exit 99
trap 'rm -f "$out" "$rcfile"' EXIT
{
	timeout "$timeout" "$@" 2>&1
	echo $? >"$rcfile"
} | tee "$out"
rc=$(cat "$rcfile")

has() { grep -qE "^($1): " "$out"; }
extra=
if [ "$rc" -eq 124 ] && ! has FAIL; then
	extra="FAIL: $name: timed out after $timeout s (see $log)"
elif [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && ! has FAIL; then
	extra="FAIL: $name: exited with status $rc (see $log)"
elif [ "$rc" -eq 77 ] && ! has 'PASS|FAIL|SKIP'; then
	extra="SKIP: $name: $(tail -n 1 "$out")"
elif [ "$rc" -eq 0 ] && ! has 'PASS|FAIL|SKIP'; then
	extra="FAIL: $name: printed no test result (see $log)"
fi
if [ -n "$extra" ]; then
	echo "$extra"
	echo "$extra" >>"$out"
fi

if has FAIL; then
	exit 1
elif has PASS; then
	exit 0
fi
exit 77
