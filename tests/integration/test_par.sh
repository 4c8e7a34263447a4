#!/bin/sh
# test_par.sh: a trace reconstructed on several threads (--threads N,
# RECONSTRUCTION.md 16) gives byte for byte what the sequential run gives:
# folded stacks, the per-function JSON (top --json, with every counter of
# `stats` in it, but the wall time) and the pprof export (node and frame ids in order), for every
# generated fixture trace that `oobprof fold` reads (programs, non-local
# control flow, Go, Linux boots, every reader's fixtures), and for the
# programs' traces converted to TracerV binary, raw and LZ4, and to oobt
# with a sync point every batch (pieces read on their own). Tiny chunks
# (OOB_CHUNK_RECORDS) cut inside deep recursions and between setjmp and
# longjmp. Inputs that cannot be cut run sequentially: still compared.
# Prints PASS/FAIL/SKIP: test_par: <trace>[: why].
set -u
T=test_par
: "${OOB_SRCDIR:?}" "${OOB_BUILDDIR:?}"
gen=$OOB_BUILDDIR/tests/gen
CLI=$OOB_BUILDDIR/oobprof
w=$OOB_BUILDDIR/tests/out/par

pass() { echo "PASS: $T: $1"; }
fail() { echo "FAIL: $T: $1: $2"; }
skip() { echo "SKIP: $T: $1: $2"; }

if [ ! -x "$CLI" ] || [ ! -e "$gen/progs/mixed.oobt" ]; then
	skip all "no $CLI or no generated fixtures (see tests/out/gen-fixtures.log)"
	exit 0
fi
rm -rf "$w"
mkdir -p "$w" || exit 1

# elfs TRACE: the --elf arguments for a fixture trace: every ELF of its
# .maps at its base (PIE), else the program its name starts with, else the
# vmlinux beside it.
elfs() {
	d=$(dirname "$1") b=$(basename "$1")
	stem=${b%%.*}
	for m in "$d/${b%.oobt}.maps" "$d/$stem.maps"; do
		if [ -e "$m" ]; then
			awk '{ printf "--elf %s@%s ", $1, $2 }' "$m"
			return
		fi
	done
	if [ -f "$d/$stem" ]; then
		echo "--elf $d/$stem"
	elif [ -f "$d/vmlinux" ]; then
		echo "--elf $d/vmlinux"
	fi
}

# run DIR THREADS CHUNK TRACE ELFARGS...: every output of one run into DIR.
run() {
	dir=$1 thr=$2 ck=$3 tr=$4
	shift 4
	mkdir -p "$dir"
	export OOB_CHUNK_RECORDS=$ck
	"$CLI" fold --threads "$thr" "$@" "$tr" >"$dir/fold" 2>"$dir/err" || return 1
	[ -n "${BIG:-}" ] && return 0
	# top --json holds every counter `stats` prints, in its "stats"
	"$CLI" top --json --threads "$thr" "$@" "$tr" 2>>"$dir/err.more" |
		grep -v '"seconds":' >"$dir/top.json" || return 1
	"$CLI" export --to pprof --threads "$thr" "$@" "$tr" -o "$dir/pprof" 2>>"$dir/err.more"
}

# check NAME TRACE: the sequential run, then several cuts, compared.
check() {
	name=$1 tr=$2
	o=$w/$name
	# shellcheck disable=SC2046
	if ! run "$o/seq" 1 0 "$tr" $(elfs "$tr"); then
		skip "$name" "oobprof fold does not read it: $(head -c 200 "$o/seq/err")"
		return
	fi
	# tiny chunks where they cost little (a chunk's setup and join are
	# worth thousands of records under the sanitizers); the default chunk
	# (2 Mi records) would not cut a small trace at all
	if [ -n "${BIG:-}" ]; then
		cuts="3:0"
	elif [ "$(wc -c <"$tr")" -gt 1000000 ]; then
		cuts="3:200000"
	else
		cuts="2:1000 3:7919"
	fi
	bad=
	for c in $cuts; do
		# shellcheck disable=SC2046
		run "$o/$c" "${c%%:*}" "${c#*:}" "$tr" $(elfs "$tr") --log-level info ||
			bad="$bad $c(failed: $(cat "$o/$c/err" "$o/$c/err.more" 2>/dev/null |
				grep -v ' info: ' | head -c 200))"
		for f in fold top.json pprof; do
			[ -e "$o/seq/$f" ] || continue
			cmp -s "$o/seq/$f" "$o/$c/$f" || bad="$bad $c:$f"
		done
		# an input that is not cut (a kernel, Go, registers: RECONSTRUCTION.md
		# 16) runs the same sequential code at any cut: once is the check
		# (the fold's log: the pprof export wants stack events, which are
		# always sequential)
		grep -q 'threads: sequential:' "$o/$c/err" && break
	done
	how=$(grep -ho 'recon: [0-9]* threads.*' "$o/2:1000/err" "$o/3:200000/err" "$o/3:0/err" \
		2>/dev/null | head -n 1)
	if [ -z "$bad" ]; then
		pass "$name: ${how:-sequential}"
	else
		fail "$name" "differs from the sequential run:$bad (outputs in $o)"
	fi
}

# Every trace fixture, and the programs' traces as TracerV binary.
for tr in "$gen"/*/*.oobt "$gen"/*/*/*.oobt "$gen"/*/*.exec.log.lz4 "$gen"/readers/*.log \
	"$gen"/readers/*.log.lz4 "$gen"/readers/*.bin "$gen"/readers/*.bin.lz4; do
	[ -f "$tr" ] || continue
	case $tr in */bench/*) continue ;; esac # make bench's: bench-par.sh times those
	name=$(echo "${tr#"$gen"/}" | tr / _)
	BIG=
	[ "$(wc -c <"$tr")" -gt 10000000 ] && BIG=1
	check "$name" "$tr"
done
mkdir -p "$w/in" || exit 1
for p in mixed recursion longjmp mutual tailcall fnptr; do
	[ -e "$gen/progs/$p.oobt" ] || continue
	BIG=
	cp "$gen/progs/$p" "$w/in/$p" || continue
	"$CLI" convert --to tracerv-bin "$gen/progs/$p.oobt" -o "$w/in/$p.trv" 2>/dev/null &&
		check "$p.trv" "$w/in/$p.trv"
	"$CLI" convert --to tracerv-bin --lz4 "$gen/progs/$p.oobt" -o "$w/in/$p.trv.lz4" 2>/dev/null &&
		check "$p.trv.lz4" "$w/in/$p.trv.lz4"
	# oobt with a sync point every batch: pieces its threads read themselves
	"$CLI" convert --to oobt --sync-every 1 "$gen/progs/$p.oobt" -o "$w/in/$p.sync.oobt" \
		2>/dev/null && check "$p.sync.oobt" "$w/in/$p.sync.oobt"
done
