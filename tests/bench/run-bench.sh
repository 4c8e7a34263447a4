#!/bin/sh
# run-bench.sh: throughput of `oobprof fold` on a real trace of >= 100 M
# instructions, per input format (LZ4 on 1 and 2 threads), beside the cost
# of just reading (cat) and of decompressing (lz4 -t) the same bytes.
# Run by `make bench` (OOB_SRCDIR, OOB_BUILDDIR set). Prints figures; never
# passes or fails on timing.
#
# The workload is tests/fixtures/progs/mixed.c (bytecode interpreter, hash
# table over malloc, merge sort and qsort, run-length coding: many calls of
# every kind) looping BENCH_ROUNDS times (300: 114 M instructions), traced
# under qemu-riscv64 with the tracing plugin. Everything is cached in $OOB_BUILDDIR/tests/gen/bench/ and redone
# only when the program, the plugin or BENCH_ROUNDS change. Disk: about 16
# bytes per instruction for the plain tracerv-bin copy (1.8 GB at the default
# size), a fraction of that for the others.
set -u
: "${OOB_SRCDIR:?}" "${OOB_BUILDDIR:?}"
ROUNDS=${BENCH_ROUNDS:-300}
gen=$OOB_BUILDDIR/tests/gen
dir=$gen/bench
cli=$OOB_BUILDDIR/oobprof
prog=$gen/progs/mixed
plugin=$gen/progs/oobtrace.so

sh "$OOB_SRCDIR/tests/tools/gen-programs.sh" "$gen" || exit 1
for f in "$cli" "$prog" "$plugin"; do
	if [ ! -e "$f" ]; then
		echo "bench: $f is missing; nothing to measure"
		exit 0
	fi
done
mkdir -p "$dir" || exit 1

. "$OOB_SRCDIR/tests/tools/newer.sh"

# setting NAME VALUE: $dir/NAME holds VALUE, rewritten (so newer than what
# was made with another) only when it changes.
setting() {
	echo "$2" >"$dir/$1.new"
	cmp -s "$dir/$1.new" "$dir/$1" || mv "$dir/$1.new" "$dir/$1"
	rm -f "$dir/$1.new"
}

# The trace, then its conversions; each step only when its input changed.
setting rounds "$ROUNDS"
if newer "$dir/mixed.oobt" "$prog" "$plugin" "$dir/rounds"; then
	echo "bench: tracing mixed $ROUNDS under qemu-riscv64 (plugin oobtrace)"
	rm -f "$dir/mixed.oobt" "$dir/mixed.trv" "$dir/mixed.trv.lz4"
	start=$(date +%s.%N)
	env -i qemu-riscv64 -plugin "$plugin,out=$dir/mixed.oobt" "$prog" "$ROUNDS" >"$dir/mixed.out" ||
		exit 1
	end=$(date +%s.%N)
	echo "bench: traced in $(echo "$start $end" | awk '{ printf "%.1f", $2 - $1 }') s"
fi
if newer "$dir/mixed.trv" "$dir/mixed.oobt"; then
	"$cli" convert --to tracerv-bin "$dir/mixed.oobt" -o "$dir/mixed.trv" || exit 1
fi
if newer "$dir/mixed.trv.lz4" "$dir/mixed.oobt" "$cli"; then
	# our writer: frames of independent 4 MiB that decompress in parallel
	"$cli" convert --to tracerv-bin --lz4 "$dir/mixed.oobt" -o "$dir/mixed.trv.lz4" || exit 1
fi

insns=$("$cli" stats "$dir/mixed.oobt" 2>/dev/null | awk -F': *' '$1 == "instructions" { print $2 }')
insns=${insns:-$((($(wc -c <"$dir/mixed.trv") - $(head -n 1 "$dir/mixed.trv" | wc -c)) / 16))}

# measure CMD...: prints "<wall seconds> <peak RSS kB>" of one run, output discarded.
if [ -x /usr/bin/time ]; then
	measure() {
		/usr/bin/time -f '%e %M' -o "$dir/time.txt" "$@" >/dev/null 2>"$dir/err.txt" ||
			echo "bench: failed: $* ($(head -c 200 "$dir/err.txt"))" >&2
		cat "$dir/time.txt"
	}
else
	measure() {
		start=$(date +%s.%N)
		"$@" >/dev/null 2>"$dir/err.txt" &
		pid=$!
		peak=0
		while kill -0 "$pid" 2>/dev/null; do
			v=$(awk '/^VmHWM/ { print $2 }' "/proc/$pid/status" 2>/dev/null)
			[ -n "$v" ] && peak=$v
			sleep 0.05
		done
		wait "$pid"
		end=$(date +%s.%N)
		echo "$(echo "$start $end" | awk '{ printf "%.2f", $2 - $1 }') $peak"
	}
fi

mips() { # SECONDS -> M instructions/s
	echo "$insns $1" | awk '{ if ($2 > 0) printf "%.1f", $1 / $2 / 1e6; else print "-" }'
}

size_mb() {
	echo "$(($(wc -c <"$1") / 1048576))"
}

echo
if nm "$cli" 2>/dev/null | grep -q '__asan_init'; then
	echo "bench: note: $cli is built with sanitizers; configure without them for real figures"
fi
echo "bench: workload mixed.c x $ROUNDS rounds, $insns instructions"
REPS=${BENCH_REPS:-3}
rows="mixed.trv:0:tracerv-bin mixed.trv.lz4:1:tracerv-bin.lz4 mixed.trv.lz4:2:tracerv-bin.lz4,2thr
mixed.oobt:1:oobt mixed.oobt:2:oobt,2thr"
# Every row's fold, cat and lz4 -t, REPS rounds interleaved (the machine
# is shared: its load varies), then the medians.
: >"$dir/runs.txt"
for _ in $(seq "$REPS"); do
	for row in $rows; do
		f=${row%%:*} rest=${row#*:}
		t=$dir/$f threads=${rest%%:*} name=${rest#*:}
		set -- $(measure "$cli" fold --threads 1 --lz4-threads "$threads" --elf "$prog" "$t")
		fold_s=$1 rss=$2
		cat_s=$(measure cat "$t" | cut -d' ' -f1)
		case $t in
		*.lz4) lz_s=$(measure lz4 -t "$t" | cut -d' ' -f1) ;;
		*) lz_s=- ;;
		esac
		echo "$name $fold_s $rss $lz_s $cat_s" >>"$dir/runs.txt"
	done
done
median() { # NAME COLUMN: the median of that row's column over the rounds
	awk -v n="$1" -v c="$2" '$1 == n { print $c }' "$dir/runs.txt" | sort -n |
		awk '{ v[NR] = $1 } END { print (NR ? v[int((NR + 1) / 2)] : "-") }'
}
printf '%-22s %8s %8s %9s %11s %9s %7s\n' format "size MB" "fold s" "fold M/s" "peak RSS" \
	"lz4 -t s" "cat s"
for row in $rows; do
	f=${row%%:*} name=${row##*:}
	fold_s=$(median "$name" 2)
	printf '%-22s %8s %8s %9s %8s kB %9s %7s\n' "$name" "$(size_mb "$dir/$f")" "$fold_s" \
		"$(mips "$fold_s")" "$(median "$name" 3)" "$(median "$name" 4)" "$(median "$name" 5)"
done
echo "(medians of $REPS interleaved rounds, wall times; fold: oobprof fold --threads 1"
echo " --lz4-threads N --elf mixed TRACE > /dev/null, N = 1 sequential, 2: LZ4 frames on 2 threads"
echo " (oobt's body is LZ4 too); lz4 -t s: lz4 -t TRACE; cat s: cat TRACE > /dev/null,"
echo " the file cache warm; load after: $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min),"
echo " $(nproc) cores)"
echo

# One trace on several threads (RECONSTRUCTION.md 16): the scaling table.
sh "$OOB_SRCDIR/tests/bench/bench-par.sh" "$cli" "$prog" "$insns" "$dir/mixed.oobt" \
	"$dir/mixed.trv" "$dir/mixed.trv.lz4"
echo
# The same, five times longer, oobt only (20 MB): at 114 M instructions a
# run's fixed costs (start, symbols, output) hide part of the scaling.
LR=${BENCH_PAR_LONG_ROUNDS:-1500}
setting longrounds "$LR"
if newer "$dir/mixed-long.oobt" "$prog" "$plugin" "$dir/longrounds"; then
	env -i qemu-riscv64 -plugin "$plugin,out=$dir/mixed-long.oobt" "$prog" "$LR" >/dev/null ||
		exit 1
fi
linsns=$("$cli" stats "$dir/mixed-long.oobt" 2>/dev/null |
	awk -F': *' '$1 == "instructions" { print $2 }')
sh "$OOB_SRCDIR/tests/bench/bench-par.sh" "$cli" "$prog" "$linsns" "$dir/mixed-long.oobt"
echo

# The register regime (RECONSTRUCTION.md 3.6): the plugin with and without
# sp=on on a shorter run of the same workload (time, size), and the fold of
# the sp=on trace with the x2 writes ignored (--nonlocal pc: before) and read
# (auto: after): the same trace, so the difference is the sp rule's cost.
SPR=${BENCH_SP_ROUNDS:-60}
setting sprounds "$SPR"
if newer "$dir/sp-times" "$prog" "$plugin" "$dir/sprounds"; then
	: >"$dir/sp-times.new"
	for sp in off on; do
		set -- $(measure env -i qemu-riscv64 -plugin "$plugin,out=$dir/mixed-sp$sp.oobt,sp=$sp" "$prog" "$SPR")
		echo "$sp $1" >>"$dir/sp-times.new"
	done
	set -- $(measure env -i qemu-riscv64 "$prog" "$SPR")
	echo "none $1" >>"$dir/sp-times.new"
	mv "$dir/sp-times.new" "$dir/sp-times"
fi
spinsns=$("$cli" stats "$dir/mixed-spon.oobt" 2>/dev/null | awk -F': *' '$1 == "instructions" { print $2 }')
echo
echo "bench: register regime: mixed.c x $SPR rounds, ${spinsns:-?} instructions"
printf '%-28s %9s %10s\n' "qemu-riscv64 run" "s" "oobt MB"
printf '%-28s %9s %10s\n' "no plugin" "$(awk '$1 == "none" { print $2 }' "$dir/sp-times")" -
for sp in off on; do
	printf '%-28s %9s %10s\n' "plugin sp=$sp" "$(awk -v s=$sp '$1 == s { print $2 }' "$dir/sp-times")" \
		"$(wc -c <"$dir/mixed-sp$sp.oobt" | awk '{ printf "%.2f", $1 / 1048576 }')"
done
printf '%-28s %9s %10s\n' "fold of the sp=on trace" "fold s" "fold M/s"
for nl in pc auto; do
	set -- $(measure "$cli" fold --nonlocal $nl --elf "$prog" "$dir/mixed-spon.oobt")
	printf '%-28s %9s %10s\n' "--nonlocal $nl" "$1" \
		"$(echo "${spinsns:-0} $1" | awk '{ if ($2 > 0) printf "%.1f", $1 / $2 / 1e6; else print "-" }')"
done

# The parts on their own: the readers' decode speed, the symbolizer's lookups.
echo
if [ -x "$OOB_BUILDDIR/tests/bench/bench_readers" ]; then
	"$OOB_BUILDDIR/tests/bench/bench_readers" 3 2>&1 || true
fi
if [ -x "$OOB_BUILDDIR/tests/bench/bench_sym" ] && [ -f "$gen/vmlinux" ]; then
	"$OOB_BUILDDIR/tests/bench/bench_sym" "$gen/vmlinux" 2>&1 || true
fi

# Per-pc counts (annotate, pprof --pcs) against the default fold.
echo
sh "$OOB_SRCDIR/tests/bench/bench-pcs.sh" "$cli" "$prog" "$insns" "$dir/mixed.oobt"

# The event index (core/recon/evidx.h): one job of the same trace on a
# private oobprofd, window views with the index and with the whole replay.
echo
sh "$OOB_SRCDIR/tests/bench/bench-index.sh" "$dir/mixed.oobt" "$prog"

# The out-of-band sampler (oobprof sample): guest slowdown and the time
# stopped per sample at 100 and 1000 Hz.
echo
sh "$OOB_SRCDIR/tests/bench/bench-sample.sh"

# Several nodes on PostgreSQL (deploy/README.md's sizing note): one
# worker's rate, the catalog's cost per job, storage per format.
echo
sh "$OOB_SRCDIR/tests/bench/bench-scaleout.sh" "$dir/mixed.oobt" "$prog" "$gen/progs/mixed.oobt"
