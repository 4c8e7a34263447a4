#!/bin/sh
# bench-sample.sh: the cost of `oobprof sample` (issue 17) on the workload of
# test_sample_rsp.sh (tests/fixtures/sample/sampled.c) under qemu-riscv64:
# the guest's run time and guest instructions per second unsampled, and
# sampled at 100 and 1000 Hz, by frame pointers and by CFI; the overhead (run time over the
# unsampled one) and the time the target spends stopped per sample. The
# instructions per round come from the traces of 20 and 40 rounds (oobprof
# stats), so the figures are guest instructions, not host time. Prints
# figures; never passes or fails on timing. Called by run-bench.sh
# (OOB_SRCDIR, OOB_BUILDDIR set); SAMPLE_ROUNDS sets the run's length.
set -u
: "${OOB_SRCDIR:?}" "${OOB_BUILDDIR:?}"
cli=$OOB_BUILDDIR/oobprof
plugin=$OOB_BUILDDIR/tests/gen/progs/oobtrace.so
rounds=${SAMPLE_ROUNDS:-20000}
for t in qemu-riscv64 riscv64-linux-gnu-gcc; do
	command -v $t >/dev/null 2>&1 || {
		echo "bench-sample: $t is missing; nothing to measure"
		exit 0
	}
done
[ -e "$plugin" ] || {
	echo "bench-sample: $plugin is missing; nothing to measure"
	exit 0
}
dir=$(mktemp -d "${TMPDIR:-/tmp}/oobprof-bench-sample.XXXXXX") || exit 1
qpid=
trap '[ -n "$qpid" ] && kill "$qpid" 2>/dev/null; rm -rf "$dir"' EXIT
src=$OOB_SRCDIR/tests/fixtures/sample/sampled.c
flags="-g -O2 -static -fno-optimize-sibling-calls"
riscv64-linux-gnu-gcc $flags -fno-omit-frame-pointer -fno-shrink-wrap -o "$dir/fp" "$src" &&
	riscv64-linux-gnu-gcc $flags -fomit-frame-pointer -o "$dir/cfi" "$src" || exit 0

insns() {
	env -i qemu-riscv64 -plugin "$plugin,out=$dir/t.oobt" "$dir/cfi" "$1" >/dev/null &&
		"$cli" stats "$dir/t.oobt" 2>/dev/null | awk -F': *' '$1 == "instructions" { print $2 }'
}
i20=$(insns 20)
i40=$(insns 40)
total=$(echo "$i20 $i40 $rounds" | awk '{ printf "%.0f", $1 + ($2 - $1) / 20 * ($3 - 20) }')
echo "bench-sample: $rounds rounds, $total guest instructions"

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# run PROG [HZ]: the guest's wall time in seconds (sampled at HZ, if given).
run() {
	prog=$1 hz=${2:-}
	start=$(date +%s.%N)
	if [ -z "$hz" ]; then
		qemu-riscv64 "$dir/$prog" "$rounds" >/dev/null
	else
		port=$(free_port)
		qemu-riscv64 -g "$port" "$dir/$prog" "$rounds" >/dev/null &
		qpid=$!
		sleep 0.2 # the stub listens (a probe would take its one connection)
		start=$(date +%s.%N)
		"$cli" sample --hz "$hz" --pid "$qpid" --unwind "$prog" --elf "$dir/$prog" \
			"127.0.0.1:$port" -o "$dir/s.txt" 2>"$dir/s.err"
		wait "$qpid"
		qpid=
	fi
	end=$(date +%s.%N)
	echo "$start $end" | awk '{ printf "%.3f", $2 - $1 }'
}

for prog in fp cfi; do
	base=$(run "$prog")
	printf 'bench-sample: %-3s unsampled   %7.3f s  %6.1f M guest insns/s\n' "$prog" "$base" \
		"$(echo "$total $base" | awk '{ print $1 / $2 / 1e6 }')"
	for hz in 100 1000; do
		t=$(run "$prog" "$hz")
		per=$(sed -n 's/.* s, \([0-9.]*\) ms stopped per sample.*/\1/p' "$dir/s.err")
		n=$(sed -n 's/^oobprof sample: \([0-9]*\) samples.*/\1/p' "$dir/s.err")
		printf 'bench-sample: %-3s %4d Hz     %7.3f s  %6.1f M guest insns/s  overhead %5.1f %%  %s samples, %s ms stopped per sample\n' \
			"$prog" "$hz" "$t" "$(echo "$total $t" | awk '{ print $1 / $2 / 1e6 }')" \
			"$(echo "$t $base" | awk '{ print 100 * ($1 / $2 - 1) }')" "$n" "$per"
	done
done
