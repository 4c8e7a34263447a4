#!/bin/sh
# bench-par.sh: the scaling of one trace's reconstruction over threads
# (oobprof fold --threads N, RECONSTRUCTION.md 16): M instructions/s per
# input format for 1, 2, 4 and 8 threads, and the speedup over 1 thread.
# Usage: bench-par.sh CLI PROG INSNS TRACE... (run-bench.sh's inputs).
# Prints figures; never passes or fails on timing. The machine's load is
# printed with them: the other threads' work is real CPU time.
set -u
cli=$1 prog=$2 insns=$3
shift 3
REPS=${BENCH_REPS:-3}
THREADS=${BENCH_PAR_THREADS:-1 2 4 8}
runs=$(mktemp)
for _ in $(seq "$REPS"); do
	for t in "$@"; do
		for n in $THREADS; do
			start=$(date +%s.%N)
			"$cli" fold --threads "$n" --elf "$prog" "$t" >/dev/null 2>&1 ||
				echo "bench-par: failed: fold --threads $n $t" >&2
			end=$(date +%s.%N)
			echo "$(basename "$t") $n $(echo "$start $end" | awk '{ printf "%.3f", $2 - $1 }')" >>"$runs"
		done
	done
done
median() { # FILE THREADS: the median wall time
	awk -v f="$1" -v n="$2" '$1 == f && $2 == n { print $3 }' "$runs" | sort -n |
		awk '{ v[NR] = $1 } END { print (NR ? v[int((NR + 1) / 2)] : "-") }'
}
echo "bench: one trace on N threads (--threads N), $insns instructions"
printf '%-20s' format
for n in $THREADS; do printf ' %9s' "$n thr M/s"; done
printf ' %9s\n' speedup
for t in "$@"; do
	f=$(basename "$t")
	printf '%-20s' "$f"
	one=$(median "$f" 1)
	last=
	for n in $THREADS; do
		s=$(median "$f" "$n")
		last=$s
		printf ' %9s' "$(echo "$insns $s" | awk '{ if ($2 > 0) printf "%.1f", $1 / $2 / 1e6; else print "-" }')"
	done
	printf ' %9s\n' "$(echo "$one $(median "$f" 2)" | awk '{ if ($2 > 0) printf "%.2fx@2", $1 / $2; else print "-" }')"
	: "$last"
done
echo "(medians of $REPS rounds, wall times, oobprof fold --threads N --elf mixed TRACE;"
echo " speedup: 1 thread over 2; load after: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores)"
rm -f "$runs"
