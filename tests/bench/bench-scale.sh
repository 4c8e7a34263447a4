#!/bin/sh
# bench-scale.sh: oobprof on traces of 1 G and 10 G instructions made by
# looping the real trace of run-bench.sh (mixed.c under qemu) with
# tests/bench/bench_loop: per size, the oobt file (small on disk) and, for
# sizes up to BENCH_SCALE_LZ4_MAX instructions, TracerV binary in our LZ4
# frames; `oobprof fold` on 1 thread and by default (every core where the
# workers read their chunks) (throughput, peak RSS); then one server job of the largest oobt (bench-index.sh: job time,
# index size, a 1 %-window flame graph and the first timeline).
# Run by `make bench-scale` (OOB_SRCDIR, OOB_BUILDDIR set; minutes to hours:
# BENCH_SCALE_SIZES="1000000000" for 1 G only). Prints figures; never
# passes or fails on timing. Disk: the 1 G LZ4 file is a few GB.
set -u
: "${OOB_SRCDIR:?}" "${OOB_BUILDDIR:?}"
SIZES=${BENCH_SCALE_SIZES:-1000000000 10000000000}
LZ4_MAX=${BENCH_SCALE_LZ4_MAX:-1000000000}
gen=$OOB_BUILDDIR/tests/gen
dir=$gen/bench
cli=$OOB_BUILDDIR/oobprof
loop=$OOB_BUILDDIR/tests/bench/bench_loop
prog=$gen/progs/mixed
src=$dir/mixed.oobt

if [ ! -e "$src" ]; then
	BENCH_REPS=1 sh "$OOB_SRCDIR/tests/bench/run-bench.sh" >/dev/null 2>&1
fi
for f in "$cli" "$loop" "$prog" "$src"; do
	if [ ! -e "$f" ]; then
		echo "bench-scale: $f is missing; nothing to measure"
		exit 0
	fi
done
per=$("$cli" stats "$src" 2>/dev/null | awk -F': *' '$1 == "instructions" { print $2 }')
[ -n "$per" ] && [ "$per" -gt 0 ] || { echo "bench-scale: no instruction count of $src"; exit 0; }
cores=$(nproc)

# measure CMD...: "<wall s> <peak RSS kB>" of one run, output discarded.
measure() {
	/usr/bin/time -f '%e %M' -o "$dir/scale-time.txt" "$@" >/dev/null 2>"$dir/scale-err.txt" ||
		echo "bench-scale: failed: $* ($(head -c 200 "$dir/scale-err.txt"))" >&2
	cat "$dir/scale-time.txt"
}

echo "bench-scale: mixed.c looped, $per instructions a round, $cores cores," \
	"load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-24s %8s %8s %8s %9s %11s %8s %7s\n' trace "MB" threads "fold s" "M instr/s" \
	"peak RSS kB" "lz4 -t s" "cat s"
last=
for size in $SIZES; do
	rounds=$(((size + per - 1) / per))
	name=loop-$((size / 1000000))M
	last=$dir/$name.oobt
	fmts=oobt
	[ "$size" -le "$LZ4_MAX" ] && fmts="oobt trv.lz4"
	for fmt in $fmts; do
		f=$dir/$name.$fmt
		if [ ! -e "$f" ] || [ "$f" -ot "$src" ] || [ "$f" -ot "$loop" ]; then
			case $fmt in
			oobt) how=oobt ;;
			*) how=tracerv-lz4 ;;
			esac
			"$loop" "$src" "$f" "$rounds" "$how" || { rm -f "$f"; continue; }
		fi
		insns=$((rounds * per))
		lz=-
		[ "$fmt" = oobt ] || lz=$(measure lz4 -t "$f" | cut -d' ' -f1)
		ct=$(measure cat "$f" | cut -d' ' -f1)
		# 1 thread, then the default: every core where the workers read
		# their own chunks (TracerV binary), else 1 (oobt)
		for t in 1 auto; do
			thr="--threads $t"
			[ "$t" = auto ] && thr=
			# shellcheck disable=SC2086
			set -- $(measure "$cli" fold $thr --elf "$prog" "$f")
			printf '%-24s %8s %8s %8s %9s %11s %8s %7s\n' "$name.$fmt" \
				"$(($(wc -c <"$f") / 1048576))" "$t" "$1" \
				"$(echo "$insns $1" | awk '{ if ($2 > 0) printf "%.1f", $1 / $2 / 1e6; else print "-" }')" \
				"$2" "$lz" "$ct"
		done
	done
done
echo "(one run each, wall times; threads auto: oobprof's default, $cores cores for"
echo " TracerV binary, 1 for oobt, whose blocks depend on the ones before:"
echo " RECONSTRUCTION.md 16; lz4 -t s and cat s of the same file, same run)"
echo
[ -n "$last" ] && [ -e "$last" ] && sh "$OOB_SRCDIR/tests/bench/bench-index.sh" "$last" "$prog"
exit 0
