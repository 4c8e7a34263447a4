#!/bin/sh
# gen-programs.sh [--plugin] OUTDIR: builds the RISC-V test programs of
# tests/fixtures/progs and the QEMU tracing plugin (tests/tools/oobtrace.c,
# OUTDIR/progs/oobtrace.so), and traces each program under qemu-riscv64.
# With --plugin, only the plugin is built (gen-go.sh uses the same .so).
# For every program NAME, OUTDIR/progs/ gets:
#   NAME        the ELF (static: text at 0x10000; NAME-pie: PIE, dynamic)
#   NAME.oobt   its trace (pc + instruction bits), written by the plugin
#   NAME.hist   "0x<pc> <count>": executed instructions counted inside QEMU
#   NAME.out    its stdout, with its own "calls <function> <n>" lines
#   NAME.maps   PIE only: "<elf path> <load base>" for the program, ld.so, libc
# and for the small program recursion also recursion.txt (the plugin's
# "0x<pc> 0x<insn>" per instruction) and recursion.qemu.log (QEMU's own
# -singlestep -d nochain,exec,in_asm log of the same run).
# Idempotent: only what is missing or older than its inputs is redone.
# Prints "SKIP: gen-programs: <reason>" when the tools are missing,
# "FAIL: gen-programs: <what>" when a step fails.
set -u
only_plugin=
[ "${1:-}" = --plugin ] && only_plugin=1 && shift
[ $# -eq 1 ] || {
	echo "usage: $0 [--plugin] OUTDIR" >&2
	exit 2
}
src=$(cd "$(dirname "$0")/../.." && pwd)
progs=$src/tests/fixtures/progs
out=$1/progs
CROSS=${CROSS:-riscv64-linux-gnu-}
CC=${CROSS}gcc
SYSROOT=${SYSROOT:-/usr/riscv64-linux-gnu}
QEMU=${QEMU:-qemu-riscv64}
PLUGIN=$out/oobtrace.so
# What the plugin needs from core/ to write oobt (docs/formats/OOBT.md lists them).
WRITER_SRCS=${WRITER_SRCS:-"core/trace/trace_write.c core/trace/oobt.c core/util/oob_err.c core/util/oob_log.c core/util/oob_mem.c"}
status=0

fail() {
	echo "FAIL: gen-programs: $*"
	status=1
}

tools="$QEMU $CC python3 gcc"
[ -n "$only_plugin" ] && tools=gcc
for tool in $tools; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "SKIP: gen-programs: $tool not installed"
		exit 0
	fi
done
for f in $WRITER_SRCS; do
	if [ ! -e "$src/$f" ]; then
		echo "SKIP: gen-programs: $f does not exist yet (the plugin needs it)"
		exit 0
	fi
done
mkdir -p "$out" || exit 1

. "$src/tests/tools/newer.sh"

build_plugin() {
	srcs="$src/tests/tools/oobtrace.c $src/tests/tools/oobtrace_sp.c"
	for f in $WRITER_SRCS; do
		srcs="$srcs $src/$f"
	done
	newer "$PLUGIN" $srcs $src/tests/tools/oobtrace_sp.h $src/core/*/*.h || return 0
	# shellcheck disable=SC2086
	gcc -std=c11 -D_GNU_SOURCE -O2 -shared -fPIC -fvisibility=hidden -Wall -Wextra -Werror \
		-I"$src/core" ${OOB_BUILDDIR:+-I"$OOB_BUILDDIR"} -o "$PLUGIN.tmp" $srcs -llz4 -pthread &&
		mv "$PLUGIN.tmp" "$PLUGIN" || fail "building the plugin oobtrace.so"
}

# build NAME MODE SOURCE...: MODE is static or pie.
build() {
	name=$1 mode=$2
	shift 2
	srcs=
	for f in "$@"; do
		srcs="$srcs $progs/$f"
	done
	# shellcheck disable=SC2086
	newer "$out/$name" $srcs "$progs/calls.h" || return 0
	if [ "$mode" = pie ]; then
		flags="-fPIE -pie"
	else
		flags="-static"
	fi
	# shellcheck disable=SC2086
	$CC -g -O2 -Wall -Wextra -Werror $flags -o "$out/$name.tmp" $srcs &&
		mv "$out/$name.tmp" "$out/$name" || fail "building $name"
}

# trace NAME MODE [ARG...]: runs the program under the plugin.
trace() {
	name=$1 mode=$2
	shift 2
	p=$out/$name
	[ -x "$p" ] || return 0
	if ! newer "$p.hist" "$p" "$PLUGIN" && [ -e "$p.oobt" ] && [ -e "$p.out" ] &&
		{ [ "$mode" = static ] || [ -e "$p.maps" ]; }; then
		return 0
	fi
	rm -f "$p.oobt" "$p.hist" "$p.out" "$p.maps"
	set -- "$p" "$@"
	if [ "$mode" = pie ]; then
		# -strace and -d page name the libraries and their load bases.
		set -- -L "$SYSROOT" -strace -d page -D "$p.tmp.log" "$@"
	fi
	env -i "$QEMU" -plugin "$PLUGIN,out=$p.oobt,hist=$p.tmp.hist" "$@" >"$p.tmp.out" ||
		{
			fail "running $name under qemu"
			return
		}
	if [ "$mode" = pie ]; then
		python3 "$src/tests/tools/truth.py" maps --log "$p.tmp.log" --sysroot "$SYSROOT" \
			"$p" >"$p.tmp.maps" && [ "$(wc -l <"$p.tmp.maps")" -ge 3 ] &&
			mv "$p.tmp.maps" "$p.maps" || fail "$name: finding load bases in $p.tmp.log"
		rm -f "$p.tmp.log"
	fi
	mv "$p.tmp.out" "$p.out" && mv "$p.tmp.hist" "$p.hist"
}

# The small program also gets QEMU's own log and the plugin's text output, so
# the plugin can be checked against QEMU (same run conditions: env -i, stdout
# to a file).
trace_logs() {
	p=$out/$1
	[ -x "$p" ] || return 0
	newer "$p.qemu.log" "$p" "$PLUGIN" || return 0
	env -i "$QEMU" -plugin "$PLUGIN,text=$p.tmp.txt" "$p" >"$p.tmp.qout" 2>&1 &&
		env -i "$QEMU" -singlestep -d nochain,exec,in_asm -D "$p.tmp.qemu.log" "$p" \
			>"$p.tmp.qout" 2>&1 &&
		mv "$p.tmp.txt" "$p.txt" && mv "$p.tmp.qemu.log" "$p.qemu.log" ||
		fail "$1: writing the text and -d exec logs"
	rm -f "$p.tmp.qout"
}

# Same name, mode, sources as the tests expect (tests/integration/test_cli_programs.sh).
PROGRAMS="recursion:static:recursion.c
mutual:static:mutual.c
fnptr:static:fnptr.c
fnptr-pie:pie:fnptr.c
tailcall:static:tailcall.c
tailcall-pie:pie:tailcall.c
longjmp:static:longjmp.c
statics:static:statics_a.c,statics_b.c,statics_main.c
inline:static:inline.c
mixed:static:mixed.c
mixed-pie:pie:mixed.c"

build_plugin
[ -e "$PLUGIN" ] && [ -z "$only_plugin" ] || exit "$status"
for line in $PROGRAMS; do
	name=${line%%:*}
	rest=${line#*:}
	mode=${rest%%:*}
	files=$(echo "${rest#*:}" | tr , ' ')
	# shellcheck disable=SC2086
	build "$name" "$mode" $files
	trace "$name" "$mode"
done
trace_logs recursion
exit "$status"
