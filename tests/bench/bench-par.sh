#!/bin/sh
# bench-par.sh: the scaling of one trace's reconstruction over threads
# (oobprof fold --threads N, RECONSTRUCTION.md 16): M instructions/s per
# input format for 1, 2, 4 and 8 threads, the speedup of 2 threads over 1,
# and beside them `cat` and `lz4 -t` of the same file, measured in the same
# rounds. Usage: bench-par.sh CLI PROG INSNS TRACE... (run-bench.sh's
# inputs). Prints figures; never passes or fails on timing. The machine's
# load is printed with them: on a shared machine wall times follow the
# other jobs, so the CPU seconds (user + system, all threads) are printed
# too.
set -u
cli=$1 prog=$2 insns=$3
shift 3
REPS=${BENCH_REPS:-3}
THREADS=${BENCH_PAR_THREADS:-1 2 4 8}
runs=$(mktemp)
tf=$(mktemp)
timed() { # KEY CMD...: appends "KEY wall cpu" to the runs
	key=$1
	shift
	/usr/bin/time -f '%e %U %S' -o "$tf" "$@" >/dev/null 2>&1 ||
		echo "bench-par: failed: $*" >&2
	echo "$key $(awk '{ printf "%.3f %.3f", $1, $2 + $3 }' "$tf")" >>"$runs"
}
for _ in $(seq "$REPS"); do
	for t in "$@"; do
		f=$(basename "$t")
		timed "$f cat" cat "$t"
		case $t in *.lz4) timed "$f lz4" lz4 -t "$t" ;; esac
		for n in $THREADS; do
			timed "$f $n" "$cli" fold --threads "$n" --elf "$prog" "$t"
		done
	done
done
median() { # FILE KEY COLUMN(3 wall, 4 cpu): the median over the rounds
	awk -v f="$1" -v n="$2" -v c="$3" '$1 == f && $2 == n { print $c }' "$runs" | sort -n |
		awk '{ v[NR] = $1 } END { print (NR ? v[int((NR + 1) / 2)] : "-") }'
}
mips() { echo "$insns $1" | awk '{ if ($2 > 0) printf "%.1f", $1 / $2 / 1e6; else print "-" }'; }
echo "bench: one trace on N threads (--threads N), $insns instructions"
printf '%-16s' format
for n in $THREADS; do printf ' %12s' "$n thr M/s"; done
printf ' %9s %11s %11s\n' speedup "cat s" "lz4 -t s"
for t in "$@"; do
	f=$(basename "$t")
	printf '%-16s' "$f"
	for n in $THREADS; do
		printf ' %12s' "$(mips "$(median "$f" "$n" 3)") ($(median "$f" "$n" 4))"
	done
	printf ' %9s' "$(echo "$(median "$f" 1 3) $(median "$f" 2 3)" |
		awk '{ if ($2 > 0) printf "%.2fx@2", $1 / $2; else print "-" }')"
	printf ' %11s %11s\n' "$(median "$f" cat 3)" "$(median "$f" lz4 3)"
done
echo "(medians of $REPS rounds, wall times; in parentheses the CPU seconds of all"
echo " threads; oobprof fold --threads N --elf mixed TRACE; speedup: wall of 1 thread"
echo " over 2; cat s: cat TRACE > /dev/null, lz4 -t s: lz4 -t TRACE, same rounds;"
echo " load after: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores)"
rm -f "$runs" "$tf"
