#!/bin/sh
# bench-pcs.sh: what per-pc counts cost (recon_opts.pcs: oobprof annotate,
# export --to pprof --pcs) beside the default fold, which only tests a
# pointer per matched block for them. CPU seconds (user) of each, the median
# of BENCH_REPS runs, and M instructions/s.
# Usage: bench-pcs.sh CLI PROG INSNS TRACE. Prints figures; never passes or
# fails on timing.
set -u
cli=$1 prog=$2 insns=$3 trace=$4
REPS=${BENCH_REPS:-5}
runs=$(mktemp)
for _ in $(seq "$REPS"); do
	/usr/bin/time -f "fold %U" "$cli" fold --elf "$prog" "$trace" >/dev/null 2>>"$runs"
	/usr/bin/time -f "annotate %U" "$cli" annotate main --elf "$prog" "$trace" >/dev/null 2>>"$runs"
done
echo "bench: per-pc counts, $insns instructions, user CPU seconds (median of $REPS)"
for k in fold annotate; do
	grep "^$k " "$runs" | awk '{ print $2 }' | sort -n |
		awk -v k="$k" -v n="$insns" '{ v[NR] = $1 } END {
			m = v[int((NR + 1) / 2)]
			printf "  %-9s %6.2f s  %7.1f M instructions/s\n", k, m, (m > 0 ? n / m / 1e6 : 0) }'
done
rm -f "$runs"
