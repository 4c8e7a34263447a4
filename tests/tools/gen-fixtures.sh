#!/bin/sh
# gen-fixtures.sh OUTDIR: runs every tests/tools/gen-*.sh generator with OUTDIR
# as its argument (`make check` runs this first, check_DATA in Makefile.am, with
# $OOB_BUILDDIR/tests/gen). Generators are idempotent and print their own
# PASS/FAIL/SKIP lines; the exit status is 1 if any of them failed.
set -u
[ $# -eq 1 ] || {
	echo "usage: $0 OUTDIR" >&2
	exit 2
}
mkdir -p "$1" || exit 1
status=0
for g in "$(dirname "$0")"/gen-*.sh; do
	[ "$(basename "$g")" = gen-fixtures.sh ] && continue
	sh "$g" "$1" || status=1
done
exit "$status"
