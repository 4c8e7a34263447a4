#!/bin/sh
# Runs every test tier and prints one line per test case:
#   PASS: <file>: <case>   FAIL: <file>: <case>: <why>   SKIP: <file>: <case>: <reason>
# then "tests: N passed, N failed, N skipped". Exit status 1 on any failure or
# when nothing passed. A skip is never a pass.
#
# Tiers: unit (C binaries given as arguments), integration (tests/integration/*.sh),
# browser (tests/browser/*.mjs). Each prints its own PASS/FAIL/SKIP lines; a
# program that dies without printing a FAIL gets one.
#
# With --load (make check-load) only the load tier runs (tests/load/*.sh).
# OOB_APPEND_RESULTS=1 adds its lines to the results of the run before (CI
# runs make check, then make check-load), so that the last line counts both.
set -u
load=0
[ "${1:-}" = --load ] && load=1 && shift
: "${OOB_SRCDIR:?}" "${OOB_BUILDDIR:?}"
export OOB_SRCDIR OOB_BUILDDIR
export OOB_SHARED="$OOB_SRCDIR/../shared"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
TEST_TIMEOUT="${TEST_TIMEOUT:-900}"
out="$OOB_BUILDDIR/tests/out"
mkdir -p "$out"
log="$out/results.txt"
[ "${OOB_APPEND_RESULTS:-0}" = 1 ] && [ -f "$log" ] || : >"$log"

# Real traces of real RISC-V programs, generated once per build tree (cached).
if [ -x "$OOB_SRCDIR/tests/tools/gen-fixtures.sh" ]; then
	"$OOB_SRCDIR/tests/tools/gen-fixtures.sh" "$OOB_BUILDDIR/tests/gen" >"$out/gen-fixtures.log" 2>&1 ||
		echo "FAIL: gen-fixtures: generating fixtures: see $out/gen-fixtures.log" >>"$log"
	grep -E '^(PASS|FAIL|SKIP): ' "$out/gen-fixtures.log" >>"$log" 2>/dev/null
	grep -E '^(PASS|FAIL|SKIP): ' "$out/gen-fixtures.log"
fi

run_one() { # name, command...
	name=$1
	shift
	tmp="$out/$(basename "$name").log"
	timeout "$TEST_TIMEOUT" "$@" >"$tmp" 2>&1
	rc=$?
	grep -E '^(PASS|FAIL|SKIP): ' "$tmp" | tee -a "$log"
	if [ $rc -ne 0 ] && [ $rc -ne 77 ] && ! grep -q '^FAIL: ' "$tmp"; then
		echo "FAIL: $name: exited with status $rc (see $tmp)" | tee -a "$log"
	fi
	if [ $rc -eq 77 ] && ! grep -qE '^(SKIP|PASS|FAIL): ' "$tmp"; then
		echo "SKIP: $name: $(tail -n 1 "$tmp")" | tee -a "$log"
	fi
	if [ $rc -eq 0 ] && ! grep -qE '^(SKIP|PASS|FAIL): ' "$tmp"; then
		echo "FAIL: $name: printed no test result (see $tmp)" | tee -a "$log"
	fi
}

if [ $load = 1 ]; then
	for t in "$OOB_SRCDIR"/tests/load/*.sh; do
		[ -e "$t" ] && run_one "load/$(basename "$t")" sh "$t"
	done
else
	for t in "$@"; do
		run_one "$t" $TEST_WRAPPER "$OOB_BUILDDIR/$t"
	done
	for t in "$OOB_SRCDIR"/tests/integration/*.sh; do
		[ -e "$t" ] && run_one "integration/$(basename "$t")" sh "$t"
	done
	for t in "$OOB_SRCDIR"/tests/browser/*.mjs; do
		[ -e "$t" ] && run_one "browser/$(basename "$t")" node "$t"
	done
fi

pass=$(grep -c '^PASS: ' "$log")
fail=$(grep -c '^FAIL: ' "$log")
skip=$(grep -c '^SKIP: ' "$log")
echo "tests: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
