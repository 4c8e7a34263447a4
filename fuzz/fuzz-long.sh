#!/bin/sh
# fuzz-long.sh SRCDIR BUILDDIR SECONDS|runs=N TARGET...: runs each libFuzzer
# driver (BUILDDIR/fuzz/libfuzzer_TARGET) for SECONDS, or until it has
# executed N inputs (a goal in executions means the same work on a busy or an
# idle machine), one after another (-jobs=1),
# from the seed corpus of the repository (read only) plus a working corpus in
# BUILDDIR/fuzz-long/TARGET that keeps what the run found, with the
# dictionary fuzz/dict/TARGET.dict when there is one. Prints one line per
# target (executions, cov, ft, crashes) and fails if any target crashed,
# leaked, timed out or ran out of memory; the inputs that did are left in
# BUILDDIR/fuzz-long/TARGET/ (crash-*, leak-*, timeout-*, oom-*).
set -u
src=$1 build=$2 secs=$3
shift 3
failed=0
printf '%-10s %12s %8s %8s %8s\n' target execs cov ft crashes
for t in "$@"; do
	bin=$build/fuzz/libfuzzer_$t work=$build/fuzz-long/$t
	mkdir -p "$work/corpus"
	case $secs in
	runs=*) limit=-runs=${secs#runs=} ;;
	*) limit=-max_total_time=$secs ;;
	esac
	set -- "$limit" -jobs=1 -timeout=30 -rss_limit_mb=4096 \
		-print_final_stats=1 -artifact_prefix="$work/"
	[ -f "$src/fuzz/dict/$t.dict" ] && set -- "$@" -dict="$src/fuzz/dict/$t.dict"
	rm -f "$work"/fuzz-0.log
	(cd "$work" && OOB_SRCDIR=$src "$bin" "$@" corpus "$src/fuzz/corpus/$t" >/dev/null 2>&1)
	log=$work/fuzz-0.log
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
	cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
	ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
	crashes=$(find "$work" -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
		-o -name 'oom-*' \) | wc -l)
	if [ -z "$execs" ] && [ "$crashes" -eq 0 ]; then
		crashes=1 # the run died without its final stats
	fi
	printf '%-10s %12s %8s %8s %8s\n' "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$crashes"
	[ "$crashes" -eq 0 ] || failed=1
done
exit $failed
