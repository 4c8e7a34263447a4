#!/bin/sh
# gen-readers.sh OUTDIR: real traces and their ground truth for the trace
# reader tests (tests/unit/test_trace.c, test_in.c), in OUTDIR/readers/:
#   spike.log, spike.log.lz4       the Spike fixture, decompressed (+ LZ4 copy)
#   spike-2core.log, spike-l.log   two-hart and "-l only" variants of it
#   rdprog.qemu.log (+ .lz4)       qemu-riscv64 -singlestep -d nochain,exec,in_asm
#                                  of tests/fixtures/readers/rdprog.c (2 threads)
#   bare.qemu.log                  qemu-system-riscv64 ... -d nochain,exec,in_asm,int
#                                  of tests/fixtures/readers/bare.S (M/S/U, traps)
#   tv-*.bin, tv-text.txt (+ .lz4) TracerV files in every layout, written by
#                                  gen-readers.py from the QEMU and Spike pcs
#   fireperf.txt                   a FirePerf log of rdprog
#   NAME.truth                     counts and hashes computed by gen-readers.py
# Idempotent (outputs that exist are kept), prints SKIP lines for missing tools.
set -u
[ $# -eq 1 ] || {
	echo "usage: $0 OUTDIR" >&2
	exit 2
}
src=$(cd "$(dirname "$0")/../.." && pwd)
shared=${OOB_SHARED:-$src/../shared}
out=$1/readers
py="python3 $src/tests/tools/gen-readers.py"
fx=$src/tests/fixtures/readers
CROSS=${CROSS:-riscv64-linux-gnu-}
mkdir -p "$out" || exit 1
status=0

have() {
	command -v "$1" >/dev/null 2>&1
}
fail() {
	echo "FAIL: gen-readers: $*"
	status=1
}
lz4copy() { # file
	[ -s "$1.lz4" ] || { lz4 -q -f "$1" "$1.lz4.tmp" && mv "$1.lz4.tmp" "$1.lz4"; } || fail "lz4 $1"
}

if ! have python3; then
	echo "SKIP: gen-readers: python3 not installed (no ground truth)"
	exit 0
fi
have lz4 || echo "SKIP: gen-readers: lz4 not installed (no LZ4 copies)"

# Spike: the real full-system commit log.
if [ -s "$out/spike.truth" ]; then
	:
elif [ -r "$shared/fixtures/spike/linux-init.commits.log.xz" ] && have xz; then
	xz -dc "$shared/fixtures/spike/linux-init.commits.log.xz" >"$out/spike.log.tmp" &&
		mv "$out/spike.log.tmp" "$out/spike.log" &&
		$py spike "$out/spike.log" "$out" || fail "spike truth"
else
	echo "SKIP: gen-readers: spike: no fixture or no xz"
fi
[ -s "$out/spike.log" ] && have lz4 && lz4copy "$out/spike.log"

# qemu-user: a two-thread program, single-stepped with instruction bits.
if [ ! -s "$out/rdprog.truth" ]; then
	if have "${CROSS}gcc" && have qemu-riscv64; then
		"${CROSS}gcc" -g -O2 -static -pthread -o "$out/rdprog" "$fx/rdprog.c" &&
			(cd "$out" && env -i qemu-riscv64 -singlestep -d nochain,exec,in_asm \
				-D rdprog.qemu.log.tmp ./rdprog >rdprog.out) &&
			mv "$out/rdprog.qemu.log.tmp" "$out/rdprog.qemu.log" &&
			"${CROSS}nm" "$out/rdprog" >"$out/rdprog.nm" &&
			$py qemu "$out/rdprog.qemu.log" rdprog "$out" || fail "qemu-user log"
	else
		echo "SKIP: gen-readers: qemu-user: ${CROSS}gcc or qemu-riscv64 missing"
	fi
fi
[ -s "$out/rdprog.qemu.log" ] && have lz4 && lz4copy "$out/rdprog.qemu.log"

# qemu-system: bare-metal M -> S -> U with traps; deterministic with -icount.
if [ ! -s "$out/bare.truth" ]; then
	if have "${CROSS}gcc" && have qemu-system-riscv64; then
		"${CROSS}gcc" -nostdlib -static -march=rv64gc -mabi=lp64d -Wl,--build-id=none \
			-Wl,--no-warn-rwx-segments -Wl,-T,"$fx/bare.ld" -o "$out/bare.elf" "$fx/bare.S" &&
			timeout 20 qemu-system-riscv64 -M virt -m 64M -nographic -bios none \
				-kernel "$out/bare.elf" -singlestep -d nochain,exec,in_asm,int \
				-D "$out/bare.qemu.log.tmp" -icount shift=0,sleep=off,align=off </dev/null &&
			mv "$out/bare.qemu.log.tmp" "$out/bare.qemu.log" &&
			$py qemu "$out/bare.qemu.log" bare "$out" || fail "qemu-system log"
	else
		echo "SKIP: gen-readers: qemu-system: ${CROSS}gcc or qemu-system-riscv64 missing"
	fi
fi

# TracerV, every layout, from the real pcs above.
if [ ! -s "$out/tv-text.truth" ] && [ -s "$out/rdprog.qemu.log" ] && [ -s "$out/spike.log" ]; then
	$py tracerv "$out" "$out/rdprog.qemu.log" "$out/spike.log" || fail "tracerv files"
fi
[ -s "$out/tv-c-v63-w2.bin" ] && have lz4 && lz4copy "$out/tv-c-v63-w2.bin"
[ -s "$out/tv-text.txt" ] && have lz4 && lz4copy "$out/tv-text.txt"

if [ ! -s "$out/fireperf.truth" ] && [ -s "$out/rdprog.nm" ]; then
	$py fireperf "$out/rdprog.qemu.log" "$out/rdprog.nm" "$out" || fail "fireperf log"
fi
exit $status
