#!/bin/sh
# gen-sym.sh OUTDIR: fixtures of tests/unit/test_rv.c and test_sym*.c.
#   OUTDIR/vmlinux         the Spike fixture's kernel, decompressed (37 MB)
#   OUTDIR/sym/cti         tests/fixtures/sym/cti.S linked at 0x10000, no build-id
#   OUTDIR/sym/recon       recon.S: the functions of tests/unit/test_recon.c's rows
#   OUTDIR/sym/recon-kernel  recon-kernel.S linked in the upper half (its __switch_to)
#   OUTDIR/sym/embed  embed.S: OUTDIR/sym/recon inside, between vdso_start and vdso_end
#   OUTDIR/sym/recon-go    recon-go.S: Go's stack switches for test_recon.c's Go rows
#   OUTDIR/sym/pie         pie.c, RISC-V, -g -O2 -fPIE -pie (dynamic)
#   OUTDIR/sym/pie-host    pie.c for the host (x86-64 here), -g -O2 -fPIE -pie
#   OUTDIR/sym/statics     statics_{a,b,main}.c: two static functions named helper
#   OUTDIR/sym/split       split.c with -freorder-blocks-and-partition (work.cold)
#   OUTDIR/sym/split-nodw  the same without DWARF
#   OUTDIR/sym/rvc-all     every 16-bit encoding (49152), as .insn, one after another
#   OUTDIR/sym/rv32-sample 100000 32-bit encodings taken from the bytes of vmlinux.xz
# Idempotent: a file is rebuilt only when missing or older than its sources.
# Prints "SKIP: gen-sym: ..." when a tool is missing, "FAIL: gen-sym: ..." when
# a step fails.
set -u
[ $# -eq 1 ] || {
	echo "usage: $0 OUTDIR" >&2
	exit 2
}
src=$(cd "$(dirname "$0")/../.." && pwd)
fix=$src/tests/fixtures/sym
shared=${OOB_SHARED:-$src/../shared}
out=$1/sym
CC=${CROSS:-riscv64-linux-gnu-}gcc
status=0

fail() {
	echo "FAIL: gen-sym: $*"
	status=1
}

# newer TARGET FILE...: true when TARGET is missing or older than any FILE.
newer() {
	t=$1
	shift
	[ -e "$t" ] || return 0
	for f in "$@"; do
		[ "$f" -nt "$t" ] && return 0
	done
	return 1
}

# build TARGET COMPILER FLAGS... -- SOURCES...
build() {
	t=$1 cc=$2
	shift 2
	flags=
	while [ "$1" != -- ]; do
		flags="$flags $1"
		shift
	done
	shift
	newer "$t" "$@" || return 0
	# shellcheck disable=SC2086
	$cc $flags -o "$t.tmp" "$@" && mv "$t.tmp" "$t" || fail "building $(basename "$t")"
}

mkdir -p "$out" || exit 1
vmlinux_xz=$shared/fixtures/spike/vmlinux.xz
if [ ! -e "$vmlinux_xz" ]; then
	echo "SKIP: gen-sym: $vmlinux_xz absent"
elif newer "$1/vmlinux" "$vmlinux_xz"; then
	xz -dc "$vmlinux_xz" >"$1/vmlinux.tmp" && mv "$1/vmlinux.tmp" "$1/vmlinux" ||
		fail "decompressing $vmlinux_xz"
fi

# encodings OUT.S: an assembly file of .insn lines read from stdin, decodable
# by objdump with every extension rv.c knows.
encodings() {
	{
		echo '	.attribute arch, "rv64i2p1_m2p0_a2p1_f2p2_d2p2_c2p0_zicsr2p0_zifencei2p0_zihintpause2p0_zba1p0_zbb1p0_zbs1p0_zicbom1p0_zicboz1p0"'
		printf '\t.text\n\t.globl _start\n_start:\n'
		cat
	} >"$1.tmp" && mv "$1.tmp" "$1"
}

if command -v "$CC" >/dev/null 2>&1; then
	if newer "$out/rvc-all.S" "$0"; then
		awk 'BEGIN { for (i = 0; i < 65536; i++) if (i % 4 != 3) printf "\t.insn 2, 0x%04x\n", i }' |
			encodings "$out/rvc-all.S"
	fi
	# 32-bit words with the low bits set to 11 (and not a 48-bit prefix).
	if [ -e "$vmlinux_xz" ] && newer "$out/rv32-sample.S" "$0" "$vmlinux_xz"; then
		head -c 800000 "$vmlinux_xz" | tail -c 500000 | od -An -tu4 -v |
			awk '{ for (i = 1; i <= NF; i++) {
				w = $i - $i % 4 + 3
				if (int(w / 4) % 8 == 7) continue
				if (n++ >= 100000) exit
				printf "\t.insn 4, 0x%08x\n", w } }' | encodings "$out/rv32-sample.S"
	fi
	build "$out/rvc-all" "$CC" -nostdlib -static -Wl,--build-id=none -- "$out/rvc-all.S"
	[ -e "$out/rv32-sample.S" ] &&
		build "$out/rv32-sample" "$CC" -nostdlib -static -Wl,--build-id=none -- \
			"$out/rv32-sample.S"
	build "$out/cti" "$CC" -nostdlib -static -Wl,--build-id=none -- "$fix/cti.S"
	build "$out/recon" "$CC" -nostdlib -static -Wl,--build-id=none -- "$fix/recon.S"
	[ "$out/embed" -ot "$out/recon" ] && rm -f "$out/embed"
	build "$out/embed" "$CC" -nostdlib -static -Wl,--build-id=none -Wa,-I"$out" -- "$fix/embed.S"
	build "$out/recon-kernel" "$CC" -nostdlib -static -Wl,--build-id=none \
		-Wl,-Ttext=0xffffffff80000000 -- "$fix/recon-kernel.S"
	build "$out/recon-go" "$CC" -nostdlib -static -Wl,--build-id=none -- "$fix/recon-go.S"
	build "$out/pie" "$CC" -g -O2 -fPIE -pie -- "$fix/pie.c"
	build "$out/statics" "$CC" -g -O2 -static -- "$fix/statics_a.c" "$fix/statics_b.c" \
		"$fix/statics_main.c"
	build "$out/split" "$CC" -g -O2 -freorder-blocks-and-partition -static -- "$fix/split.c"
	build "$out/split-nodw" "$CC" -O2 -freorder-blocks-and-partition -static -- "$fix/split.c"
else
	echo "SKIP: gen-sym: $CC not installed"
fi
if command -v gcc >/dev/null 2>&1; then
	build "$out/pie-host" gcc -g -O2 -fPIE -pie -- "$fix/pie.c"
fi
exit "$status"
