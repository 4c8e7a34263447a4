#!/bin/sh
# gen-nonlocal.sh OUTDIR: the programs of tests/fixtures/progs/nonlocal
# (longjmp, signals, C++ exceptions, pthread_exit, ucontext coroutines and
# generators; issue 15), built for RISC-V static and PIE, and traced under
# qemu-riscv64. For every program NAME (NAME-pie: PIE),
# OUTDIR/nonlocal/ gets:
#   NAME            the ELF
#   NAME.oobt       its trace by the plugin (OUTDIR/progs/oobtrace.so, built by
#                   gen-programs.sh --plugin), NAME.hist its executed-pc
#                   histogram, NAME.out its stdout (chains, maxdepth, calls:
#                   tests/fixtures/progs/nonlocal/nl.h), NAME.maps (PIE) the
#                   load bases
#   NAME.exec.log.lz4  QEMU's own -singlestep -d nochain,exec log of a second
#                   run (LZ4 frame: the reader takes it as is), NAME.exec.hist
#                   the pcs of its Trace lines counted, NAME.exec.out its stdout
#                   (signal timing differs between runs: each trace has the
#                   output of its own run). PIE: the run must load everything
#                   at the bases of NAME.maps (checked here).
#   NAME.regs.oobt  a third run traced with the plugin's sp=on (REG x2 extras:
#                   the register regime), with NAME.regs.hist, NAME.regs.out,
#                   NAME.regs.maps (PIE) as above; static: NAME.regs.cpu.log,
#                   qemu -d cpu of that same run at the entries of the counted
#                   functions (tests/tools/sp_truth.py: inferred sp = real sp)
#   NAME.sp.log     static only: -d cpu -singlestep with -dfilter on the entry
#                   pcs of the program's counted functions (probes, roots):
#                   the stack pointer at each; NAME.sp.out its stdout
# Each program's trace stays under ~5 M instructions. Idempotent (newer.sh).
# Prints "SKIP: gen-nonlocal: <reason>" when tools are missing, "FAIL:
# gen-nonlocal: <what>" when a step fails.
set -u
[ $# -eq 1 ] || {
	echo "usage: $0 OUTDIR" >&2
	exit 2
}
src=$(cd "$(dirname "$0")/../.." && pwd)
progs=$src/tests/fixtures/progs/nonlocal
out=$1/nonlocal
CROSS=${CROSS:-riscv64-linux-gnu-}
SYSROOT=${SYSROOT:-/usr/riscv64-linux-gnu}
QEMU=${QEMU:-qemu-riscv64}
PLUGIN=$1/progs/oobtrace.so
status=0

fail() {
	echo "FAIL: gen-nonlocal: $*"
	status=1
}

for tool in "$QEMU" "${CROSS}gcc" "${CROSS}readelf" python3 gcc lz4; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "SKIP: gen-nonlocal: $tool not installed"
		exit 0
	fi
done
. "$src/tests/tools/newer.sh"
mkdir -p "$out" || exit 1
sh "$src/tests/tools/gen-programs.sh" --plugin "$1" || status=1
[ -e "$PLUGIN" ] || exit "$status"

# build NAME MODE SOURCE
build() {
	name=$1 mode=$2 file=$progs/$3
	cc=${CROSS}gcc
	case $file in *.cc) cc=${CROSS}g++ ;; esac
	if ! command -v "$cc" >/dev/null 2>&1; then
		echo "SKIP: gen-nonlocal: $name: $cc not installed (g++-riscv64-linux-gnu)"
		return 0
	fi
	newer "$out/$name" "$file" "$progs/nl.h" "$progs/../calls.h" || return 0
	flags=-static
	[ "$mode" = pie ] && flags="-fPIE -pie"
	# shellcheck disable=SC2086
	$cc -g -O2 -Wall -Wextra -Werror -pthread $flags -o "$out/$name.tmp" "$file" &&
		mv "$out/$name.tmp" "$out/$name" || fail "building $name"
}

# run_qemu MODE STDOUT QEMU-ARGS...: a clean run (env -i, as gen-programs.sh);
# a PIE program gets its sysroot.
# qemu-user with a TCG plugin and two guest threads sometimes dies before
# the program ends (seen once in many CI runs on nl_thread-pie with sp=on:
# the plugin's file held only its header). That is the emulator failing,
# not the program or us: a run that exits non-zero is tried twice more,
# saying so; a program that really fails fails all three.
run_qemu() {
	mode=$1 stdout=$2
	shift 2
	[ "$mode" = pie ] && set -- -L "$SYSROOT" "$@"
	for try in 1 2 3; do
		env -i "$QEMU" "$@" >"$stdout" && return 0
		rc=$?
		echo "gen-nonlocal: qemu exited $rc (try $try of 3): $*" >&2
	done
	return "$rc"
}

# trace NAME MODE: the plugin run (as gen-programs.sh traces).
trace() {
	name=$1 mode=$2 p=$out/$1
	newer "$p.hist" "$p" "$PLUGIN" || return 0
	rm -f "$p.oobt" "$p.hist" "$p.out" "$p.maps"
	extra=
	[ "$mode" = pie ] && extra="-strace -d page -D $p.tmp.log"
	# shellcheck disable=SC2086
	run_qemu "$mode" "$p.tmp.out" $extra -plugin "$PLUGIN,out=$p.oobt,hist=$p.tmp.hist" "$p" ||
		{
			fail "running $name under qemu with the plugin"
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

# regs_trace NAME MODE: the plugin with sp=on; -d cpu of the same run at the
# counted functions' entries (static), or the load bases (PIE).
regs_trace() {
	name=$1 mode=$2 p=$out/$1
	[ -e "$p.out" ] || return 0
	newer "$p.regs.hist" "$p" "$PLUGIN" "$src/tests/tools/gen-nonlocal.sh" || return 0
	rm -f "$p.regs.oobt" "$p.regs.hist" "$p.regs.out" "$p.regs.maps" "$p.regs.cpu.log"
	if [ "$mode" = pie ]; then
		extra="-strace -d page -D $p.regs.tmp.log"
	else
		extra="-singlestep -d cpu,nochain -dfilter $(entries "$p") -D $p.regs.tmp.log"
	fi
	# shellcheck disable=SC2086
	run_qemu "$mode" "$p.regs.tmp.out" $extra \
		-plugin "$PLUGIN,out=$p.regs.oobt,hist=$p.regs.tmp.hist,sp=on" "$p" || {
		fail "running $name under qemu with the plugin's sp=on"
		return
	}
	if [ "$mode" = pie ]; then
		python3 "$src/tests/tools/truth.py" maps --log "$p.regs.tmp.log" --sysroot "$SYSROOT" \
			"$p" >"$p.regs.tmp.maps" && [ "$(wc -l <"$p.regs.tmp.maps")" -ge 3 ] &&
			mv "$p.regs.tmp.maps" "$p.regs.maps" || fail "$name: load bases of the sp=on run"
		rm -f "$p.regs.tmp.log"
	else
		mv "$p.regs.tmp.log" "$p.regs.cpu.log"
	fi
	mv "$p.regs.tmp.out" "$p.regs.out" && mv "$p.regs.tmp.hist" "$p.regs.hist"
}

# entries NAME: -dfilter ranges of the entries of the counted functions.
entries() {
	"${CROSS}readelf" -sW "$1" | awk -v names="$(awk '$1 == "calls" { print $2 }' "$1.out")" '
		BEGIN { n = split(names, a, "\n"); for (i = 1; i <= n; i++) want[a[i]] = 1 }
		$4 == "FUNC" && ($8 in want) && !seen[$2]++ { printf "%s0x%s+2", sep, $2; sep = "," }'
}

# exec_log NAME MODE: QEMU's -d exec log of a second run.
exec_log() {
	name=$1 mode=$2 p=$out/$1
	newer "$p.exec.hist" "$p" "$src/tests/tools/gen-nonlocal.sh" || return 0
	rm -f "$p.exec.log.lz4" "$p.exec.hist" "$p.exec.out"
	run_qemu "$mode" "$p.exec.tmp.out" -singlestep -d nochain,exec -D "$p.exec.tmp.log" "$p" ||
		{
			fail "running $name under qemu -d exec"
			return
		}
	# "Trace 0: 0x... [<cs base>/<pc>/<flags>/<cflags>] symbol"; a Trace
	# line followed by "Stopped execution of TB chain" or "cpu_io_recompile:
	# rewound" did not run (QEMU left the block before its first
	# instruction: a signal was pending; docs/formats/SPIKE_QEMU.md)
	python3 -c '
import collections, re, sys
c = collections.Counter()
last = None
for line in open(sys.argv[1]):
    if line.startswith("Trace "):
        last = int(re.search(r"\[[0-9a-f]+/([0-9a-f]+)/", line).group(1), 16)
        c[last] += 1
    elif line.startswith(("Stopped execution", "cpu_io_recompile")) and last is not None:
        c[last] -= 1
        last = None
for pc in sorted(pc for pc in c if c[pc] > 0):
    print("0x%x %d" % (pc, c[pc]))' "$p.exec.tmp.log" >"$p.exec.tmp.hist" || {
		fail "$name: counting the pcs of $p.exec.tmp.log"
		return
	}
	if [ "$mode" = pie ]; then
		# The same load bases as the plugin run: the program's and ld.so's
		# entry points ran (a library's e_entry never runs; the libraries
		# follow from ld.so's mmaps, in the same order in both runs).
		head -n 2 "$p.maps" | while read -r path base; do
			entry=$("${CROSS}readelf" -h "$path" | awk '/Entry point/ { print $4 }')
			want=$(printf '0x%x' $((base + entry)))
			grep -q "^$want " "$p.exec.tmp.hist" ||
				echo "FAIL: gen-nonlocal: $name: the -d exec run did not load $path at $base"
		done | grep . && {
			status=1
			return
		}
	fi
	lz4 -q -f "$p.exec.tmp.log" "$p.exec.log.lz4" && mv "$p.exec.tmp.hist" "$p.exec.hist" &&
		mv "$p.exec.tmp.out" "$p.exec.out" || fail "$name: compressing $p.exec.tmp.log"
	rm -f "$p.exec.tmp.log"
}

# sp_log NAME: -d cpu at the entries of the counted functions (static ELF).
sp_log() {
	name=$1 p=$out/$1
	[ -e "$p.out" ] || return 0
	newer "$p.sp.log" "$p" "$p.out" "$src/tests/tools/gen-nonlocal.sh" || return 0
	ranges=$("${CROSS}readelf" -sW "$p" | awk -v names="$(awk '$1 == "calls" { print $2 }' "$p.out")" '
		BEGIN { n = split(names, a, "\n"); for (i = 1; i <= n; i++) want[a[i]] = 1 }
		$4 == "FUNC" && ($8 in want) && !seen[$2]++ { printf "%s0x%s+2", sep, $2; sep = "," }')
	[ -n "$ranges" ] || {
		fail "$name: no entry points for -dfilter"
		return
	}
	run_qemu static "$p.sp.tmp.out" -singlestep -d cpu,nochain -dfilter "$ranges" \
		-D "$p.sp.tmp.log" "$p" && mv "$p.sp.tmp.out" "$p.sp.out" &&
		mv "$p.sp.tmp.log" "$p.sp.log" || fail "$name: qemu -d cpu run"
}

PROGRAMS="nl_longjmp:static:nl_longjmp.c
nl_longjmp-pie:pie:nl_longjmp.c
nl_signal:static:nl_signal.c
nl_signal-pie:pie:nl_signal.c
nl_except:static:nl_except.cc
nl_except-pie:pie:nl_except.cc
nl_thread:static:nl_thread.c
nl_thread-pie:pie:nl_thread.c
nl_ucontext:static:nl_ucontext.c
nl_ucontext-pie:pie:nl_ucontext.c
nl_coro:static:nl_coro.c
nl_coro-pie:pie:nl_coro.c"

for line in $PROGRAMS; do
	name=${line%%:*}
	rest=${line#*:}
	mode=${rest%%:*}
	build "$name" "$mode" "${rest#*:}"
	[ -x "$out/$name" ] || continue
	trace "$name" "$mode"
	[ -e "$out/$name.hist" ] || continue
	exec_log "$name" "$mode"
	[ "$mode" = static ] && sp_log "$name"
	regs_trace "$name" "$mode"
done
exit "$status"
