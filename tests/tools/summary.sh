#!/bin/sh
# summary.sh RESULTS LOG...: the last step of `make check` (check-local in
# Makefile.am), after automake's harness. Collects the per-case lines
# (PASS/FAIL/SKIP, and NOTE: what a test found worth reading with a known
# gap) of the fixture log and of every test's .log into RESULTS, prints the
# SKIP and NOTE lines (CI's log is all a later reader has of a run's known
# gaps), then the FAIL lines, then one line "tests: N passed, N failed, N skipped"
# (CI reads it: deploy/check.sh). Exit status 1 on any failure or when
# nothing passed.
#
# A test whose .log is missing, or whose .trs says the harness failed it
# while its .log has no FAIL line, counts as one failure: the harness's
# verdict is never lost, even if a test was run without tests/tools/run-test.sh.
set -u
[ $# -ge 1 ] || {
	echo "usage: $0 RESULTS [LOG...]" >&2
	exit 2
}
results=$1
shift
mkdir -p "$(dirname "$results")"
: >"$results"
for log; do
	if [ ! -r "$log" ]; then
		echo "FAIL: $log: no log: the test did not run" >>"$results"
		continue
	fi
	grep -E '^(PASS|FAIL|SKIP|NOTE): ' "$log" >>"$results"
	trs=${log%.log}.trs
	if [ -r "$trs" ] && grep -qE '^:global-test-result: (FAIL|ERROR|XPASS)' "$trs" &&
		! grep -q '^FAIL: ' "$log"; then
		echo "FAIL: $log: the harness failed it: $(sed -n 's/^:global-test-result: //p' "$trs")" >>"$results"
	fi
done

pass=$(grep -c '^PASS: ' "$results")
fail=$(grep -c '^FAIL: ' "$results")
skip=$(grep -c '^SKIP: ' "$results")
grep -E '^(SKIP|NOTE): ' "$results" | cut -c1-400
grep '^FAIL: ' "$results"
echo "tests: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
